"""`citemark answer` through the real entry point, against a real local server."""

from __future__ import annotations

import json
from pathlib import Path

from fake_openai import FakeOpenAI, run_cli

LICENSES = Path(__file__).resolve().parent.parent / "examples" / "data" / "licenses"
QUESTION = "What happens to the patent license if you sue claiming the Work infringes a patent?"


def cited_answer(prompt: str) -> str:
    """Cite whichever numbered source holds the Apache patent clause."""
    for line in prompt.splitlines():
        if line.startswith("[") and "Grant of Patent License" in line:
            number = line[1 : line.index("]")]
            return f"The patent licenses terminate when litigation is filed [{number}]."
    return "The sources do not say."


class TestAnswer:
    def test_prints_answer_and_verified_citations(self):
        """The answer is printed, then each citation with document, offsets and a check."""
        with FakeOpenAI(cited_answer) as server:
            done = run_cli(
                "answer",
                QUESTION,
                "--docs",
                str(LICENSES),
                "--pattern",
                "*",
                base_url=server.base_url,
            )
        assert 0 == done.returncode, done.stderr
        lines = done.stdout.splitlines()
        assert lines[0].startswith("The patent licenses terminate")
        assert lines[-1].startswith("[")
        assert lines[-1].endswith(" verified")
        assert "Apache-2.0" in lines[-1]
        assert 1 == len(server.prompts)

    def test_json_output(self):
        """--json prints one object with the answer, the checked citations and identities."""
        with FakeOpenAI(cited_answer) as server:
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
        assert 0 == done.returncode, done.stderr
        report = json.loads(done.stdout)
        assert ["verified"] == [c["outcome"] for c in report["citations"]]
        assert {"provider": "openai-compatible", "name": "fake-model"} == report["model"]
        assert 64 == len(report["prompt_sha256"])

    def test_out_of_range_answer_exits_1(self):
        """An answer citing [9] of 4 is rejected with exit code 1 and a one-line error."""
        with FakeOpenAI(["It terminates [9]."]) as server:
            done = run_cli(
                "answer",
                QUESTION,
                "--docs",
                str(LICENSES),
                "--pattern",
                "*",
                base_url=server.base_url,
            )
        assert 1 == done.returncode
        assert (
            "citemark: error: answer rejected: marker [9] is out of range: the answer was "
            "given 4 sources, so markers must lie in 1..4\n"
        ) == done.stderr

    def test_abstention_exits_0(self):
        """An answer without markers is an abstention, not an error."""
        with FakeOpenAI(["The sources do not say."]) as server:
            done = run_cli(
                "answer",
                QUESTION,
                "--docs",
                str(LICENSES),
                "--pattern",
                "*",
                base_url=server.base_url,
            )
        assert 0 == done.returncode
        assert "No citations: the model abstained." in done.stdout

    def test_unreachable_endpoint_is_one_line(self, free_port):
        """No server listening: one clear line on stderr, exit code 3, no traceback."""
        done = run_cli(
            "answer",
            QUESTION,
            "--docs",
            str(LICENSES),
            "--pattern",
            "*",
            base_url=f"http://127.0.0.1:{free_port}/v1",
        )
        assert 3 == done.returncode
        assert 1 == len(done.stderr.splitlines())
        assert "could not connect" in done.stderr
        assert "Traceback" not in done.stderr

    def test_missing_configuration_is_a_usage_error(self):
        """Without a base URL the command explains what to set and exits 2."""
        done = run_cli("answer", QUESTION, "--docs", str(LICENSES))
        assert 2 == done.returncode
        assert "CITEMARK_BASE_URL" in done.stderr
        assert 1 == len(done.stderr.splitlines())

    def test_missing_folder_is_a_usage_error(self, tmp_path):
        """A --docs folder that does not exist exits 2."""
        done = run_cli(
            "answer", QUESTION, "--docs", str(tmp_path / "nope"), base_url="http://127.0.0.1:9/v1"
        )
        assert (2, "citemark: error: --docs must name an existing folder\n") == (
            done.returncode,
            done.stderr,
        )

    def test_nothing_retrieved_is_a_usage_error(self, tmp_path):
        """A question sharing no word with the documents exits 2 before any model call."""
        (tmp_path / "a.txt").write_text("alpha beta", encoding="utf-8")
        with FakeOpenAI([]) as server:
            done = run_cli("answer", "zeta", "--docs", str(tmp_path), base_url=server.base_url)
        assert 2 == done.returncode
        assert [] == server.prompts
