"""The command line against real endpoints (issue 13): limits, reasons, progress in rows.

Each test runs the real ``citemark`` entry point in a subprocess against
`fake_openai.FakeOpenAI` on 127.0.0.1 (or a closed port), and asserts what a person
or a machine reads afterwards: the request bodies, ``report.json``, ``rows.jsonl``,
``echo-latest.json`` and the one-line errors.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, run_cli, run_cli_on_a_terminal

from citemark import CitationScorer, Completion
from citemark._pipelines.check.run import run_check

ROOT = Path(__file__).resolve().parent.parent
LICENSES = ROOT / "examples" / "data" / "licenses"
QUESTION = "What happens to the patent license if you sue claiming the Work infringes a patent?"
CONTEXT = "[doc-1] The late fee is 5% of the unpaid balance.\n[doc-2] Members pay no late fee.\n"
PASSING = json.dumps(
    {
        "score": 3,
        "explanation": "ok",
        "verdicts": [{"occurrence": 1, "outcome": "supported", "context_span": "late fee is 5%"}],
    }
)
CLEAN = {"question": "Fee?", "answer": "The late fee is 5% [doc-1].", "context": CONTEXT}
FABRICATED = {
    "question": "Fee?",
    "answer": "The late fee is 5% [doc-1] [doc-7].",
    "context": CONTEXT,
}


def write_rows(path: Path, rows: list[object]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


class TestGenerationOptions:
    def test_defaults_bound_every_call(self, tmp_path):
        """Without options, answer sends max_tokens 1024 and the judge 512; nothing else."""
        with FakeOpenAI(lambda p: "The sources do not say.") as server:
            run_cli(
                "answer",
                QUESTION,
                "--docs",
                str(LICENSES),
                "--pattern",
                "*",
                base_url=server.base_url,
            )
            assert 1024 == server.bodies[0]["max_tokens"]
            assert "temperature" not in server.bodies[0]
            assert "seed" not in server.bodies[0]
        runs = write_rows(tmp_path / "runs.jsonl", [CLEAN])
        with FakeOpenAI(lambda p: PASSING) as server:
            done = run_cli(
                "check",
                str(runs),
                "--out",
                str(tmp_path / "o"),
                "--judge-model",
                "j",
                base_url=server.base_url,
            )
            assert 0 == done.returncode, done.stderr
            assert 512 == server.bodies[0]["max_tokens"]

    def test_options_are_sent(self, tmp_path):
        """--max-tokens, --temperature and --seed reach the request body."""
        with FakeOpenAI(lambda p: "The sources do not say.") as server:
            run_cli(
                "answer",
                QUESTION,
                "--docs",
                str(LICENSES),
                "--pattern",
                "*",
                "--max-tokens",
                "64",
                "--temperature",
                "0",
                "--seed",
                "11",
                base_url=server.base_url,
            )
            body = server.bodies[0]
        assert (64, 0.0, 11) == (body["max_tokens"], body["temperature"], body["seed"])

    def test_environment_equivalents_and_precedence(self, tmp_path):
        """CITEMARK_MAX_TOKENS/TEMPERATURE/SEED apply; an option wins over its variable."""
        env = {"CITEMARK_MAX_TOKENS": "32", "CITEMARK_TEMPERATURE": "0.5", "CITEMARK_SEED": "3"}
        with FakeOpenAI(lambda p: "The sources do not say.") as server:
            run_cli(
                "echo",
                "--cases",
                "1",
                "--out",
                str(tmp_path),
                base_url=server.base_url,
                extra_env=env,
            )
            run_cli(
                "echo",
                "--cases",
                "1",
                "--out",
                str(tmp_path),
                "--max-tokens",
                "8",
                "--model-seed",
                "4",
                base_url=server.base_url,
                extra_env=env,
            )
            first, second = server.bodies
        assert (32, 0.5, 3) == (first["max_tokens"], first["temperature"], first["seed"])
        assert (8, 0.5, 4) == (second["max_tokens"], second["temperature"], second["seed"])

    def test_zero_sends_no_limit(self, tmp_path):
        """--max-tokens 0 is for endpoints that refuse the field (some reasoning models)."""
        with FakeOpenAI(lambda p: "The sources do not say.") as server:
            run_cli(
                "echo",
                "--cases",
                "1",
                "--out",
                str(tmp_path),
                "--max-tokens",
                "0",
                base_url=server.base_url,
            )
            assert "max_tokens" not in server.bodies[0]

    @pytest.mark.parametrize(
        ("args", "env", "message"),
        [
            (["--max-tokens", "-1"], {}, "--max-tokens must be 0 (no limit) or more"),
            (
                [],
                {"CITEMARK_MAX_TOKENS": "many"},
                "CITEMARK_MAX_TOKENS must be a number for --max-tokens",
            ),
            (
                [],
                {"CITEMARK_TEMPERATURE": "hot"},
                "CITEMARK_TEMPERATURE must be a number for --temperature",
            ),
        ],
    )
    def test_bad_values_are_usage_errors(self, tmp_path, args, env, message):
        done = run_cli(
            "echo", "--out", str(tmp_path), *args, base_url="http://127.0.0.1:9/v1", extra_env=env
        )
        assert (2, f"citemark: error: {message}\n") == (done.returncode, done.stderr)


class TestTruncation:
    def test_answer_cut_off_is_rejected_as_truncated(self):
        """A length finish exits 1 with reason truncated, after one request."""
        reply = Completion("The patent licenses terminate [1", finish_reason="length")
        with FakeOpenAI(lambda p: reply) as server:
            done = run_cli(
                "answer",
                QUESTION,
                "--docs",
                str(LICENSES),
                "--pattern",
                "*",
                "--json",
                base_url=server.base_url,
            )
            assert 1 == len(server.prompts)
        out = json.loads(done.stdout)
        assert (1, 1, "truncated") == (done.returncode, out["exit_code"], out["reason"])

    def test_echo_records_the_reason_per_case_and_counts(self, tmp_path):
        """echo-latest.json names why each case was rejected, and counts per reason."""
        with FakeOpenAI(lambda p: Completion("cut [1", finish_reason="length")) as server:
            done = run_cli("echo", "--cases", "2", "--out", str(tmp_path), base_url=server.base_url)
        assert 0 == done.returncode, done.stderr
        report = json.loads((tmp_path / "echo-latest.json").read_text())
        assert [("rejected", "truncated")] * 2 == [
            (c["outcome"], c["reason"]) for c in report["cases"]
        ]
        assert {"truncated": 2} == report["failure_reasons"]
        assert "failure reasons: 2 truncated" in done.stdout

    def test_check_counts_truncated_judge_replies(self, tmp_path):
        runs = write_rows(tmp_path / "runs.jsonl", [CLEAN, CLEAN])
        with FakeOpenAI(lambda p: Completion(PASSING[:30], finish_reason="length")) as server:
            run_cli(
                "check",
                str(runs),
                "--out",
                str(tmp_path / "o"),
                "--judge-model",
                "j",
                base_url=server.base_url,
            )
        report = json.loads((tmp_path / "o" / "report.json").read_text())["check"]
        rows = [
            json.loads(line) for line in (tmp_path / "o" / "rows.jsonl").read_text().splitlines()
        ]
        assert ({"judge_reply_truncated": 2}, 2) == (
            report["reasons"],
            report["judge_replies_truncated"],
        )
        assert [PASSING[:30]] * 2 == [row["details"]["judge_raw_reply"] for row in rows]


class TestFailureReasons:
    def test_echo_against_a_closed_port_says_it_could_not_connect(self, tmp_path, free_port):
        """The reason per case is connect, with no status; the one line says so."""
        done = run_cli(
            "echo",
            "--cases",
            "2",
            "--out",
            str(tmp_path),
            base_url=f"http://127.0.0.1:{free_port}/v1",
        )
        report = json.loads((tmp_path / "echo-latest.json").read_text())
        assert [("call_failed", "connect", None)] * 2 == [
            (c["outcome"], c["reason"], c["status"]) for c in report["cases"]
        ]
        assert 3 == done.returncode
        assert "the model could not be reached" in done.stderr

    def test_a_reached_model_that_times_out_is_not_called_unreachable(self, tmp_path):
        """The model was reached and ran past --timeout: the line says deadline, not 'could not reach'."""
        with FakeOpenAI(lambda p: "late", latency=1.5) as server:
            done = run_cli(
                "echo",
                "--cases",
                "1",
                "--timeout",
                "0.3",
                "--out",
                str(tmp_path),
                base_url=server.base_url,
            )
        assert (3, "citemark: error: every echo call failed (1 call: 1 deadline)\n") == (
            done.returncode,
            done.stderr,
        )
        report = json.loads((tmp_path / "echo-latest.json").read_text())
        assert {"deadline": 1} == report["failure_reasons"]

    def test_check_counts_failed_judge_calls_per_reason(self, tmp_path, free_port):
        runs = write_rows(tmp_path / "runs.jsonl", [CLEAN, CLEAN, CLEAN])
        done = run_cli(
            "check",
            str(runs),
            "--out",
            str(tmp_path / "o"),
            "--judge-model",
            "j",
            "--judge-base-url",
            f"http://127.0.0.1:{free_port}/v1",
        )
        assert 0 == done.returncode
        report = json.loads((tmp_path / "o" / "report.json").read_text())["check"]
        assert ({"connect": 3}, 3) == (report["judge_failures"], report["judge_calls"])
        assert "judge calls: 3 made; failed: 3 connect" in done.stdout
        html = (tmp_path / "o" / "report.html").read_text()
        assert "judge call: connect" in html

    def test_answer_json_carries_the_reason_and_the_404_hint(self, tmp_path):
        """A base URL without /v1 on a server that serves /v1: exit 3, http_status, the hint."""
        with FakeOpenAI(lambda p: "x") as server:
            base = server.base_url.removesuffix("/v1")
            done = run_cli(
                "answer",
                QUESTION,
                "--docs",
                str(LICENSES),
                "--pattern",
                "*",
                "--json",
                base_url=base,
            )
        out = json.loads(done.stdout)
        assert (3, "http_status", 404) == (done.returncode, out["reason"], out["status"])
        assert "try adding /v1 to the base URL" in out["error"]


class TestJudgeViolations:
    def test_rows_failed_in_code_are_not_judged_by_default(self, tmp_path):
        """The default saves the call and counts it; --judge-violations makes it."""
        runs = write_rows(tmp_path / "runs.jsonl", [CLEAN, FABRICATED, FABRICATED])
        with FakeOpenAI(lambda p: PASSING) as server:
            done = run_cli(
                "check",
                str(runs),
                "--out",
                str(tmp_path / "a"),
                "--judge-model",
                "j",
                base_url=server.base_url,
            )
            assert 1 == len(server.prompts)
            run_cli(
                "check",
                str(runs),
                "--out",
                str(tmp_path / "b"),
                "--judge-model",
                "j",
                "--judge-violations",
                base_url=server.base_url,
            )
            assert 4 == len(server.prompts)
        saved = json.loads((tmp_path / "a" / "report.json").read_text())["check"]
        called = json.loads((tmp_path / "b" / "report.json").read_text())["check"]
        assert (1, 2) == (saved["judge_calls"], saved["judge_calls_saved"])
        assert (3, 0) == (called["judge_calls"], called["judge_calls_saved"])
        # The outcome of every row is the same either way.
        assert (saved["passed"], saved["failed"]) == (called["passed"], called["failed"]) == (1, 2)
        assert "2 saved on rows already failed in code" in done.stdout


class TestProgressInRows:
    def test_the_callback_counts_rows_against_the_line_count(self, tmp_path):
        """One call per scored row or malformed line, against the line count; it ends full."""
        runs = write_rows(tmp_path / "runs.jsonl", [CLEAN, "not json", "", FABRICATED])
        seen: list[tuple[int, int]] = []
        run_check(
            runs,
            tmp_path / "o",
            CitationScorer(),
            progress=lambda done, total: seen.append((done, total)),
        )
        assert [(1, 4), (2, 4), (3, 4), (3, 3)] == seen

    def test_the_bar_moves_while_the_judge_works(self, tmp_path):
        """On a terminal the bar shows rows done of the total, with a rate, before the end."""
        runs = write_rows(tmp_path / "runs.jsonl", [CLEAN] * 30)
        command = ["check", str(runs), "--out", str(tmp_path / "o"), "--judge-model", "j"]
        with FakeOpenAI(lambda p: PASSING, latency=0.05) as server:
            done, drawn = run_cli_on_a_terminal(
                *command, "--concurrency", "1", base_url=server.base_url
            )
            # --quiet on a terminal too: nothing is drawn there.
            quiet, quiet_drawn = run_cli_on_a_terminal(
                *command, "--quiet", base_url=server.base_url
            )
        assert 0 == done.returncode
        partial = {int(m) for m in re.findall(rb"\b(\d+)/30\b", drawn)}
        # Counts strictly between 0 and 30 were drawn: the bar moved during judging.
        assert any(0 < n < 30 for n in partial), partial
        assert b"rows/s" in drawn
        assert (0, b"") == (quiet.returncode, quiet_drawn)


class TestDocsWithoutFiles:
    def test_no_matching_file_names_the_patterns(self, tmp_path):
        (tmp_path / "notes.rst").write_text("The patent license terminates.")
        done = run_cli("answer", "When?", "--docs", str(tmp_path), base_url="http://127.0.0.1:9/v1")
        assert (
            2,
            (
                "citemark: error: no readable text file under --docs matches *.txt, *.md: "
                "there is nothing to retrieve (name other files with --pattern)\n"
            ),
        ) == (done.returncode, done.stderr)
