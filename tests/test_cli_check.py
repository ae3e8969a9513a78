"""`citemark check` through the real entry point (SPEC §6, §7 and §8)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import ClassVar

import pytest
from fake_openai import FakeOpenAI, run_cli, run_cli_on_a_terminal

from citemark import dataset_sha256
from citemark.reports import EvalReport

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_RUNS = ROOT / "examples" / "data" / "example-runs.jsonl"
CANARY = "CANARY-7f3a9c"
CONTEXT = "[doc-1] The late fee is 5% of the unpaid balance.\n[doc-2] Members pay no late fee.\n"
SOURCES = [
    {"text": "The late fee is 5%.", "doc_id": "fees", "start": 0, "end": 19},
    {"text": "Members pay no late fee.", "doc_id": "members"},
]
REPORT_FILES = ("report.json", "report.html", "rows.jsonl")


def write_lines(path: Path, lines: list[object]) -> Path:
    """Write rows (dicts, as JSON) and raw lines (str or bytes) to a JSONL file."""
    with path.open("wb") as out:
        for line in lines:
            if isinstance(line, dict):
                out.write(json.dumps(line).encode() + b"\n")
            elif isinstance(line, str):
                out.write(line.encode() + b"\n")
            else:
                out.write(line + b"\n")
    return path


def good_row(answer: str = "The late fee is 5% [1].", **extra: object) -> dict[str, object]:
    return {"question": "What is the fee?", "answer": answer, "sources": SOURCES, **extra}


def context_row(answer: str = "The fee is 5% [doc-1].", **extra: object) -> dict[str, object]:
    return {"question": "What is the fee?", "answer": answer, "context": CONTEXT, **extra}


class TestSummary:
    def test_example_runs_print_a_summary_and_write_three_files(self, tmp_path):
        """The bundled runs exit 0, print the summary table and write every report file."""
        done = run_cli("check", str(EXAMPLE_RUNS), "--out", str(tmp_path))
        assert (0, "") == (done.returncode, done.stderr)
        assert done.stdout.startswith(f"citemark check: 16 rows of {EXAMPLE_RUNS}\n")
        # Each violation code in words, its code beside them.
        assert "cite a source they were not given (fabricated_citation) │    3" in done.stdout
        assert re.search(r"of which cite nothing +│ +2 │", done.stdout)
        assert sorted(REPORT_FILES) == sorted(p.name for p in tmp_path.iterdir())

    def test_report_json_is_an_eval_report_saying_what_produced_it(self, tmp_path):
        """report.json is an EvalReport with the input hash, config and the files' hashes."""
        run_cli("check", str(EXAMPLE_RUNS), "--out", str(tmp_path))
        report = EvalReport.model_validate_json((tmp_path / "report.json").read_bytes())
        check = report.check
        assert dataset_sha256(EXAMPLE_RUNS) == report.input_sha256
        assert (16, 0, 3, 13, 3, 0) == (
            check.rows,
            check.passed,
            check.failed,
            check.unassessed,
            check.deterministic_failures,
            check.malformed,
        )
        assert {"no_judge": 11, "no_resolved_citations": 2} == check.reasons
        assert {"resolved": 17, "fabricated": 3, "ambiguous": 0, "ignored": 1} == check.citations
        assert {
            name: hashlib.sha256((tmp_path / name).read_bytes()).hexdigest()
            for name in ("rows.jsonl", "report.html")
        } == check.files
        assert ("check", None, False, 500) == (
            report.config["command"],
            report.config["judge_model"],
            report.config["fail_on_violation"],
            report.config["html_rows"],
        )

    def test_json_prints_one_object(self, tmp_path):
        """--json prints exactly one JSON object: exit code, input hash, counts and file paths."""
        done = run_cli("check", str(EXAMPLE_RUNS), "--out", str(tmp_path), "--json")
        assert 0 == done.returncode
        assert 1 == len(done.stdout.splitlines())
        output = json.loads(done.stdout)
        assert ["check", "exit_code", "files", "input", "input_sha256", "run_id"] == sorted(output)
        report = json.loads((tmp_path / "report.json").read_text())
        assert report["run_id"] == output["run_id"]
        assert (0, 16, 3) == (
            output["exit_code"],
            output["check"]["rows"],
            output["check"]["deterministic_failures"],
        )
        assert {
            "report": str(tmp_path / "report.json"),
            "html": str(tmp_path / "report.html"),
            "rows": str(tmp_path / "rows.jsonl"),
        } == output["files"]

    def test_rows_file_holds_every_row_in_input_order(self, tmp_path):
        """rows.jsonl has one record per non-blank line, in order, with the scorer's details."""
        runs = write_lines(
            tmp_path / "runs.jsonl",
            [good_row(id="a"), "", good_row("Fees [7]."), "oops", context_row(id=7)],
        )
        run_cli("check", str(runs), "--out", str(tmp_path / "out"))
        records = [
            json.loads(line)
            for line in (tmp_path / "out" / "rows.jsonl").read_text(encoding="utf-8").splitlines()
        ]
        assert [
            (1, "a", "unassessed"),
            (3, None, "failed"),
            (4, None, "malformed"),
            (5, "7", "unassessed"),
        ] == [(r["line"], r.get("id"), r["outcome"]) for r in records]
        assert ["fabricated_citation"] == records[1]["details"]["deterministic_failures"]
        assert "not valid JSON" == records[2]["error"]

    def test_default_out_is_the_results_folder(self, tmp_path):
        """Without --out the reports go to results/ under the working directory."""
        runs = write_lines(tmp_path / "runs.jsonl", [good_row()])
        done = run_cli("check", "runs.jsonl", cwd=tmp_path)
        assert 0 == done.returncode
        assert sorted(REPORT_FILES) == sorted(p.name for p in (tmp_path / "results").iterdir())
        assert runs.exists()

    def test_no_progress_bar_when_stderr_is_not_a_terminal(self, tmp_path):
        """Captured standard error stays empty: the progress bar is for terminals only."""
        done = run_cli("check", str(EXAMPLE_RUNS), "--out", str(tmp_path))
        assert "" == done.stderr

    def test_progress_bar_on_a_terminal(self, tmp_path):
        """With standard error on a terminal, a rich progress bar is drawn there."""
        runs = write_lines(tmp_path / "runs.jsonl", [good_row()] * 3000)
        done, drawn = run_cli_on_a_terminal("check", str(runs), "--out", str(tmp_path / "o"))
        assert 0 == done.returncode
        assert b"checking" in drawn
        assert b"rows" in drawn
        assert b"citemark check: 3000 rows" in done.stdout


class TestMalformedLines:
    LINES: ClassVar[list[object]] = [
        good_row(id="first"),
        f'{{"answer": "{CANARY} [1]", "sources": [',
        "",
        f'["{CANARY}"]',
        {"question": CANARY, "sources": SOURCES},
        {"answer": 5, "sources": SOURCES},
        {"answer": CANARY, "sources": SOURCES, "context": CONTEXT},
        {"answer": CANARY},
        {"answer": CANARY, "sources": [{"text": CANARY, "doc_id": "d", "start": 0, "end": 3}]},
        {"answer": CANARY, "sources": [{"text": CANARY, "doc_id": "d", CANARY: 1}]},
        {"answer": CANARY, "sources": {"text": CANARY}},
        {"answer": CANARY, "context": ["[doc-1]"]},
        {"answer": CANARY, "context": CONTEXT, "id": [CANARY]},
        {"answer": CANARY, "context": CONTEXT, "question": 3},
        f'{{"answer": "{CANARY}", "answer": "x", "context": "c"}}',
        f'{{"answer": "{CANARY}", "context": "c", "id": NaN}}',
        b'{"answer": "\xff\xfe", "context": "c"}',
        context_row("Fees [doc-9].", id="last"),
    ]
    EXPECTED: ClassVar[list[tuple[int, str]]] = [
        (2, "not valid JSON"),
        (4, "not a JSON object"),
        (5, "answer is missing"),
        (6, "answer must be a string or a structured answer object"),
        (7, "both sources and context are given; a row has one of them"),
        (8, "neither sources nor context is given"),
        (
            9,
            (
                "source 1 does not fit the Source schema: end - start must equal len(text) "
                "(got 3, expected 13)"
            ),
        ),
        (
            10,
            (
                "source 1 does not fit the Source schema: a field Source does not define "
                "(put extra fields in metadata)"
            ),
        ),
        (11, "sources must be a list"),
        (12, "context must be a string"),
        (13, "id must be a string or an integer"),
        (14, "question must be a string"),
        (15, "not strict JSON: an object gives a key twice"),
        (16, "not strict JSON: it holds NaN or Infinity"),
        (17, "not UTF-8 text"),
    ]

    def test_bad_lines_are_named_by_number_and_the_rest_are_scored(self, tmp_path):
        """Each malformed line gets one warning with its number; the good rows are still scored."""
        runs = write_lines(tmp_path / "runs.jsonl", self.LINES)
        done = run_cli("check", str(runs), "--out", str(tmp_path / "out"))
        assert 0 == done.returncode
        assert [
            f"citemark: warning: line {line}: {reason}" for line, reason in self.EXPECTED
        ] == done.stderr.splitlines()
        assert "citemark check: 2 rows of" in done.stdout
        summary = json.loads((tmp_path / "out" / "report.json").read_bytes())["check"]
        assert (2, 1, 15) == (summary["rows"], summary["failed"], summary["malformed"])
        assert [{"line": line, "reason": reason} for line, reason in self.EXPECTED] == summary[
            "malformed_lines"
        ]

    def test_json_lists_the_malformed_lines(self, tmp_path):
        """With --json the malformed lines are in the object, and nothing goes to stderr."""
        runs = write_lines(tmp_path / "runs.jsonl", self.LINES)
        done = run_cli("check", str(runs), "--out", str(tmp_path / "out"), "--json")
        assert (0, "") == (done.returncode, done.stderr)
        listed = json.loads(done.stdout)["check"]["malformed_lines"]
        assert self.EXPECTED == [(m["line"], m["reason"]) for m in listed]

    def test_no_message_or_report_quotes_a_line(self, tmp_path):
        """The canary inside the bad lines appears in no output and in no summary."""
        runs = write_lines(tmp_path / "runs.jsonl", self.LINES)
        text = run_cli("check", str(runs), "--out", str(tmp_path / "out"))
        data = run_cli("check", str(runs), "--out", str(tmp_path / "out"), "--json")
        summary = (tmp_path / "out" / "report.json").read_text(encoding="utf-8")
        for shown in (text.stdout, text.stderr, data.stdout, data.stderr, summary):
            assert CANARY not in shown

    def test_only_malformed_lines_is_a_usage_error_and_writes_nothing(self, tmp_path):
        """An input without one readable row exits 2 with one line naming the first reasons,
        and writes no report (a file in another tool's format is exactly this case)."""
        runs = write_lines(
            tmp_path / "runs.jsonl",
            ["{", "[]", '{"user_input": "q", "response": "a"}', '{"answer": 1}'],
        )
        done = run_cli("check", str(runs), "--out", str(tmp_path / "out"))
        expected = (
            "citemark: error: no line of the input is a readable row: 4 malformed lines: "
            "line 1: not valid JSON (the line opens a JSON object spread over lines, "
            "pretty-printed: citemark reads one object a line (write it with jq -c); "
            "--from langsmith, --from openinference, --from mlflow, --from ragas and --map "
            "read pretty-printed files); "
            "line 2: not a JSON object; line 3: answer is missing "
            "(the line looks like a ragas record: read it with --from ragas); "
            "line 4: answer must be a string or a structured answer object\n"
        )
        assert (2, expected) == (done.returncode, done.stderr)
        assert [] == list((tmp_path / "out").iterdir())

    def test_empty_file_is_a_usage_error(self, tmp_path):
        """An empty input exits 2: there is nothing to check."""
        runs = write_lines(tmp_path / "runs.jsonl", ["", "  "])
        done = run_cli("check", str(runs), "--out", str(tmp_path / "out"))
        assert (2, "citemark: error: the input holds no readable row\n") == (
            done.returncode,
            done.stderr,
        )


class TestExitCodes:
    def test_violation_without_the_flag_exits_0(self, tmp_path):
        """A fabricated marker is reported, and without --fail-on-violation the exit code is 0."""
        runs = write_lines(tmp_path / "runs.jsonl", [good_row("Fees [9].")])
        assert 0 == run_cli("check", str(runs), "--out", str(tmp_path / "o")).returncode

    @pytest.mark.parametrize(
        "row",
        [
            good_row("Fees [9]."),
            good_row("Fees [0]."),
            good_row("Fees [1, 3]."),
            context_row("Fees [doc-9]."),
        ],
        ids=["out-of-range", "zero", "in-a-list", "unknown-label"],
    )
    def test_fail_on_violation_exits_1_on_a_fabricated_citation(self, tmp_path, row):
        """A citation naming nothing it was given exits 1 under --fail-on-violation."""
        runs = write_lines(tmp_path / "runs.jsonl", [good_row(), row])
        done = run_cli(
            "check", str(runs), "--out", str(tmp_path / "o"), "--fail-on-violation", "--json"
        )
        assert (1, 1, 1) == (
            done.returncode,
            json.loads(done.stdout)["exit_code"],
            json.loads(done.stdout)["check"]["deterministic_failures"],
        )

    @pytest.mark.parametrize(
        "row",
        [
            good_row(),
            good_row("No markers at all."),
            good_row("Blank source [2].", sources=[SOURCES[0], {"text": " ", "doc_id": "x"}]),
            context_row("Ignored tokens like [TODO] and `arr[9]` [doc-1]."),
            good_row("Code is not cited: `x[9]` [1]."),
        ],
        ids=["resolved", "abstention", "ambiguous", "ignored", "in-code"],
    )
    def test_fail_on_violation_exits_0_without_a_deterministic_violation(self, tmp_path, row):
        """Resolved, absent, ambiguous, ignored and code markers are not violations."""
        runs = write_lines(tmp_path / "runs.jsonl", [row])
        done = run_cli("check", str(runs), "--out", str(tmp_path / "o"), "--fail-on-violation")
        assert 0 == done.returncode

    def test_fail_on_violation_exits_1_on_a_malformed_line(self, tmp_path):
        """A gate must not pass what it could not read: a malformed line exits 1 under the flag."""
        runs = write_lines(tmp_path / "runs.jsonl", [good_row(), "not json"])
        done = run_cli("check", str(runs), "--out", str(tmp_path / "o"), "--fail-on-violation")
        assert 1 == done.returncode
        assert 0 == run_cli("check", str(runs), "--out", str(tmp_path / "o")).returncode

    def test_sentence_coverage_minimum_is_a_deterministic_violation(self, tmp_path):
        """With --min-sentence-coverage, a row below it fails in code and exits 1 under the flag."""
        runs = write_lines(
            tmp_path / "runs.jsonl", [good_row("Fees are 5% [1]. Members pay none.")]
        )
        gated = run_cli(
            "check",
            str(runs),
            "--out",
            str(tmp_path / "o"),
            "--fail-on-violation",
            "--min-sentence-coverage",
            "1",
        )
        assert 1 == gated.returncode
        ungated = run_cli("check", str(runs), "--out", str(tmp_path / "o"), "--fail-on-violation")
        assert 0 == ungated.returncode

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (
                ["missing.jsonl"],
                "citemark: error: RUNS.jsonl must name an existing file (or - for standard input)\n",
            ),
            (["RUNS", "--concurrency", "0"], "citemark: error: --concurrency must be at least 1\n"),
            (["RUNS", "--html-rows", "-1"], "citemark: error: --html-rows must be 0 or more\n"),
            (
                ["RUNS", "--min-sentence-coverage", "1.5"],
                "citemark: error: --min-sentence-coverage must be a number in 0..1\n",
            ),
            (
                ["RUNS", "--judge-base-url", "http://127.0.0.1:9/v1"],
                "citemark: error: --judge-base-url and --judge-api-key need --judge-model\n",
            ),
            (
                ["RUNS", "--judge-model", "m"],
                (
                    "citemark: error: --judge-base-url is required: pass --judge-base-url or "
                    "set CITEMARK_BASE_URL\n"
                ),
            ),
            (
                ["RUNS", "--concurrency", "many"],
                (
                    "citemark check: error: argument --concurrency: invalid int value: 'many' "
                    "(see --help)\n"
                ),
            ),
        ],
        ids=["missing", "concurrency", "html-rows", "coverage", "url-alone", "no-url", "argparse"],
    )
    def test_usage_errors_exit_2_with_one_line(self, tmp_path, args, message):
        """A bad option or a missing file exits 2 with one line on stderr, before any scoring."""
        runs = write_lines(tmp_path / "runs.jsonl", [good_row()])
        paths = {"RUNS": str(runs), "missing.jsonl": str(tmp_path / "missing.jsonl")}
        argv = [paths.get(arg, arg) for arg in args]
        done = run_cli("check", *argv, "--out", str(tmp_path / "o"))
        assert (2, message) == (done.returncode, done.stderr)
        assert not (tmp_path / "o" / "report.json").exists()

    def test_usage_error_with_json_is_one_object(self, tmp_path):
        """With --json a usage error is one JSON object on stdout with the exit code."""
        done = run_cli("check", str(tmp_path / "missing.jsonl"), "--json")
        assert 2 == done.returncode
        assert {
            "error": "RUNS.jsonl must name an existing file (or - for standard input)",
            "exit_code": 2,
        } == json.loads(done.stdout)


def judge_reply(prompt: str) -> str:
    """A valid scorer reply grading the single occurrence unsupported, band 0."""
    del prompt
    return json.dumps(
        {
            "score": 0,
            "explanation": "The cited block does not say this.",
            "verdicts": [{"occurrence": 1, "outcome": "unsupported"}],
        }
    )


class TestJudgeNeverGates:
    def test_a_judge_failing_every_row_still_exits_0(self, tmp_path):
        """Every judge reply unusable: rows are un-assessed, and the flag still exits 0."""
        runs = write_lines(tmp_path / "runs.jsonl", [context_row(), good_row(), context_row()])
        with FakeOpenAI(lambda prompt: "I think it is fine.") as server:
            done = run_cli(
                "check",
                str(runs),
                "--out",
                str(tmp_path / "o"),
                "--judge-model",
                "judge-1",
                "--judge-base-url",
                server.base_url,
                "--fail-on-violation",
                "--json",
            )
        output = json.loads(done.stdout)
        assert (0, 0) == (done.returncode, output["exit_code"])
        assert {"invalid_judge_output": 3} == output["check"]["reasons"]
        assert 3 == len(server.prompts)
        judge = output["check"]["judge"]
        assert ("openai-compatible", "judge-1", 64) == (
            judge["provider"],
            judge["model"],
            len(judge["prompt_sha256"]),
        )

    def test_an_unfavourable_verdict_fails_the_row_but_not_the_run(self, tmp_path):
        """A valid band-0 verdict fails the row; it is not a violation, so the exit code is 0."""
        runs = write_lines(tmp_path / "runs.jsonl", [context_row()])
        with FakeOpenAI(judge_reply) as server:
            done = run_cli(
                "check",
                str(runs),
                "--out",
                str(tmp_path / "o"),
                "--judge-model",
                "judge-1",
                "--judge-base-url",
                server.base_url,
                "--fail-on-violation",
                "--json",
            )
        check = json.loads(done.stdout)["check"]
        assert (0, 1, 0) == (done.returncode, check["failed"], check["deterministic_failures"])

    def test_an_unreachable_judge_leaves_rows_unassessed_and_exits_0(self, tmp_path, free_port):
        """No judge listening: every row is judge_call_failed, and check still exits 0, not 3."""
        runs = write_lines(tmp_path / "runs.jsonl", [context_row(), context_row()])
        done = run_cli(
            "check",
            str(runs),
            "--out",
            str(tmp_path / "o"),
            "--judge-model",
            "judge-1",
            "--judge-base-url",
            f"http://127.0.0.1:{free_port}/v1",
            "--json",
        )
        assert (0, {"judge_call_failed": 2}) == (
            done.returncode,
            json.loads(done.stdout)["check"]["reasons"],
        )

    def test_judged_rows_are_counted_across_chunks(self, tmp_path):
        """600 rows (more than one chunk) each get one judge call, and a supported row passes."""
        reply = json.dumps(
            {
                "score": 3,
                "explanation": "doc-1 states the fee.",
                "verdicts": [
                    {"occurrence": 1, "outcome": "supported", "context_span": "late fee is 5%"}
                ],
            }
        )
        runs = write_lines(tmp_path / "runs.jsonl", [context_row()] * 600)
        with FakeOpenAI(lambda prompt: reply) as server:
            done = run_cli(
                "check",
                str(runs),
                "--out",
                str(tmp_path / "o"),
                "--judge-model",
                "judge-1",
                "--judge-base-url",
                server.base_url,
                "--json",
            )
        check = json.loads(done.stdout)["check"]
        assert (0, 600, 600, {}) == (
            done.returncode,
            len(server.prompts),
            check["passed"],
            check["reasons"],
        )

    def test_a_fabrication_fails_whatever_the_judge_says(self, tmp_path):
        """A fabricated label fails the row with a deterministic violation even under a judge."""
        runs = write_lines(tmp_path / "runs.jsonl", [context_row("Fees [doc-1] and [doc-9].")])
        with FakeOpenAI(lambda prompt: "not json") as server:
            done = run_cli(
                "check",
                str(runs),
                "--out",
                str(tmp_path / "o"),
                "--judge-model",
                "judge-1",
                "--judge-base-url",
                server.base_url,
                "--fail-on-violation",
            )
        assert 1 == done.returncode

    def test_the_base_url_is_recorded_without_credentials(self, tmp_path):
        """The report's config keeps the judge's base URL but drops a user:password part."""
        runs = write_lines(tmp_path / "runs.jsonl", [context_row()])
        with FakeOpenAI(judge_reply) as server:
            url = server.base_url.replace("http://", "http://user:secret@")
            run_cli(
                "check",
                str(runs),
                "--out",
                str(tmp_path / "o"),
                "--judge-model",
                "judge-1",
                "--judge-base-url",
                url,
            )
        config = json.loads((tmp_path / "o" / "report.json").read_bytes())["config"]
        assert server.base_url == config["judge_base_url"]


def big_runs(path: Path, rows: int) -> Path:
    line = json.dumps(context_row("Fees are 5% [doc-1]. Members pay none [doc-2].")) + "\n"
    path.write_text(line * rows, encoding="utf-8")
    return path


def kill_mid_run(runs: Path, out: Path) -> None:
    """Start check, wait until rows are being streamed, and SIGKILL it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITEMARK_")}
    child = subprocess.Popen(
        [sys.executable, "-m", "citemark", "check", str(runs), "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            streamed = [p for p in out.glob(".rows.jsonl.*.tmp") if p.stat().st_size > 0]
            if streamed:
                break
            assert child.poll() is None, "check finished before it could be killed"
            time.sleep(0.01)
        else:
            pytest.fail("check never started streaming rows")
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert -signal.SIGKILL == child.returncode


class TestCrashLeavesNoHalfReport:
    def test_a_killed_first_run_leaves_no_report(self, tmp_path):
        """SIGKILL in the middle of a run leaves no report.json, report.html or rows.jsonl."""
        runs = big_runs(tmp_path / "runs.jsonl", 100_000)
        out = tmp_path / "out"
        kill_mid_run(runs, out)
        assert [] == [p.name for p in out.iterdir() if not p.name.startswith(".")]

    def test_a_killed_rerun_leaves_the_previous_complete_report(self, tmp_path):
        """SIGKILL during a rerun leaves the previous run's three files exactly as they were."""
        out = tmp_path / "out"
        small = write_lines(tmp_path / "small.jsonl", [good_row(), good_row("Fees [9].")])
        assert 0 == run_cli("check", str(small), "--out", str(out)).returncode
        before = {name: (out / name).read_bytes() for name in REPORT_FILES}
        kill_mid_run(big_runs(tmp_path / "runs.jsonl", 100_000), out)
        assert before == {name: (out / name).read_bytes() for name in REPORT_FILES}
        report = EvalReport.model_validate_json(before["report.json"])
        assert 2 == report.check.rows

    def test_an_interrupt_exits_130_and_cleans_up(self, tmp_path):
        """Ctrl-C mid-run exits 130 with one line, and leaves no report and no temporary file."""
        runs = big_runs(tmp_path / "runs.jsonl", 100_000)
        out = tmp_path / "out"
        env = {k: v for k, v in os.environ.items() if not k.startswith("CITEMARK_")}
        child = subprocess.Popen(
            [sys.executable, "-m", "citemark", "check", str(runs), "--out", str(out)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        deadline = time.monotonic() + 60
        while not any(p.stat().st_size > 0 for p in out.glob(".rows.jsonl.*.tmp")):
            assert child.poll() is None
            assert time.monotonic() < deadline
            time.sleep(0.01)
        child.send_signal(signal.SIGINT)
        stdout, stderr = child.communicate(timeout=60)
        assert (130, "", "citemark: error: interrupted\n") == (child.returncode, stdout, stderr)
        assert [] == list(out.iterdir())


class TestLabelSyntaxOptions:
    """--label-pattern and --citation-pattern: the scorer's pluggable syntax from the CLI."""

    ANGLE_CONTEXT = "<<fees-1>> The late fee is 5%.\n<<fees-2>> Members pay none.\n"

    def check(self, tmp_path, *options):
        runs = write_lines(
            tmp_path / "runs.jsonl",
            [
                {"answer": "The fee is 5% <<fees-1>>.", "context": self.ANGLE_CONTEXT},
                {"answer": "The fee is 5% <<fees-9>>.", "context": self.ANGLE_CONTEXT},
            ],
        )
        return run_cli("check", str(runs), "--out", str(tmp_path / "o"), "--json", *options)

    def test_a_custom_label_syntax_resolves_and_accuses(self, tmp_path):
        """With the row's own syntax, one citation resolves and one names no block."""
        done = self.check(
            tmp_path,
            "--label-pattern",
            r"^<<([a-z0-9-]+)>>",
            "--citation-pattern",
            r"<<([a-z0-9-]+)>>",
        )
        summary = json.loads(done.stdout)["check"]
        assert (0, 1, 1) == (
            done.returncode,
            summary["deterministic_failures"],
            summary["citations"]["resolved"],
        )
        report = json.loads((tmp_path / "o" / "report.json").read_text())
        assert r"^<<([a-z0-9-]+)>>" == report["config"]["label_pattern"]

    def test_the_default_syntax_sees_no_labels_in_that_context(self, tmp_path):
        """The same rows under the default [label] syntax resolve nothing (naive variant)."""
        summary = json.loads(self.check(tmp_path).stdout)["check"]
        assert (0, 0) == (summary["deterministic_failures"], summary["citations"]["resolved"])

    @pytest.mark.parametrize("pattern", ["(unclosed", "no-group"])
    def test_a_bad_pattern_is_a_usage_error(self, tmp_path, pattern):
        """A pattern that does not compile, or has no group, exits 2 naming only the option."""
        done = self.check(tmp_path, "--label-pattern", pattern)
        assert 2 == done.returncode
        assert "--label-pattern" in done.stderr + done.stdout
        assert pattern not in done.stderr.replace("--label-pattern", "")


class TestJUnitFormat:
    """--format junit: failed rows show as failed test cases in a CI system."""

    def test_rows_become_test_cases_with_their_outcome(self, tmp_path):
        """A violation fails, a row citing correctly passes, a malformed line errors; ids escaped.

        The outcome is the headline's: an abstention passes (it cites nothing wrongly),
        and a row that only lacks a judge is no longer skipped.
        """
        import xml.etree.ElementTree as ET

        hostile = f'<x id="{CANARY}">&'
        runs = write_lines(
            tmp_path / "runs.jsonl",
            [good_row(id="ok"), good_row("Fees [9].", id=hostile), good_row("No citation."), "{"],
        )
        out = tmp_path / "o"
        done = run_cli("check", str(runs), "--out", str(out), "--format", "junit", "--json")
        assert 0 == done.returncode
        tree = ET.parse(out / "report.junit.xml")  # noqa: S314 - our own output
        suite = tree.getroot().find("testsuite")
        assert ("4", "1", "1", "0") == tuple(
            suite.get(key) for key in ("tests", "failures", "errors", "skipped")
        )
        suite_facts = {p.get("name"): p.get("value") for p in suite.find("properties")}
        assert ("2", "1", "1", "0", "1", "not_asked") == tuple(
            suite_facts[name]
            for name in (
                "cite_only_given_sources",
                "cite_nothing",
                "violations",
                "unchecked",
                "unreadable_lines",
                "judge",
            )
        )
        cases = {case.get("name"): case for case in suite.iter("testcase")}
        # A row without an id is named by its line and its question (issue 35).
        assert ["ok", hostile, "line 3: What is the fee?", "line 4"] == list(cases)
        failure = cases[hostile].find("failure")
        assert ("deterministic_violation", "fabricated_citation") == (
            failure.get("type"),
            failure.get("message"),
        )
        facts = {
            name: {p.get("name"): p.get("value") for p in case.iter("property")}
            for name, case in cases.items()
        }
        assert cases["ok"].find("skipped") is None
        assert {"citations": "cited", "judge": "not_asked"} == facts["ok"]
        assert {"citations": "cites_nothing", "judge": "not_asked"} == facts[
            "line 3: What is the fee?"
        ]
        assert "violation" == facts[hostile]["citations"]
        assert cases["line 4"].find("error") is not None
        files = json.loads((out / "report.json").read_text())["check"]["files"]
        digest = hashlib.sha256((out / "report.junit.xml").read_bytes()).hexdigest()
        assert digest == files["report.junit.xml"]

    def test_without_the_flag_no_junit_file_is_written(self, tmp_path):
        """The default outputs are unchanged: JSON, JSONL and HTML only."""
        runs = write_lines(tmp_path / "runs.jsonl", [good_row()])
        run_cli("check", str(runs), "--out", str(tmp_path / "o"))
        assert sorted(REPORT_FILES) == sorted(p.name for p in (tmp_path / "o").iterdir())


class TestRowsJsonlEncoding:
    """rows.jsonl lines are ASCII JSON whose value is the score's own details."""

    def test_each_line_parses_to_the_records_the_scorer_made(self, tmp_path):
        """The fast serialization gives the same JSON value as details, non-ASCII and surrogates included."""
        from citemark import CitationScorer, Source
        from citemark._pipelines.check.protocol import CheckedRow
        from citemark._pipelines.check.sinks import row_line, row_record
        from citemark._pipelines.readers.citemark_rows import CheckRow

        scorer = CitationScorer()
        for answer in ("Caf\u00e9 fees [1] \U0001f600.", "Lone \ud800 surrogate [9].", "No cite."):
            sources = [Source(text="caf\u00e9 \ud800 fees", doc_id="d\u00e9")]
            score = scorer.score_sync(answer, sources)
            row = CheckedRow(
                CheckRow(line=1, id="r\u00e9", question="", answer=answer, sources=sources), score
            )
            line = row_line(row)
            assert line.isascii()
            assert line.endswith(b"\n")
            assert row_record(row) == json.loads(line)
