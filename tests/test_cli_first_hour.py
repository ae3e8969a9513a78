"""The command line's first hour (issue 23, item 5): --version, ``-`` for standard input,
hints in the command line's own words, and counts with the right plural.

The real entry point runs in a subprocess where standard input or the installed
version matters; the hints are checked through `citemark._pipelines.cli.main.main` in this
process, against the closed port 9 or a loopback `FakeOpenAI`, with every
``CITEMARK_*`` variable removed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI

from citemark import (
    Completion,
    LabelledItem,
    LabelSet,
    Source,
    dataset_sha256,
)
from citemark._pipelines.cli.main import main
from citemark.providers import UnsentDocumentError

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_RUNS = ROOT / "examples" / "data" / "example-runs.jsonl"
LICENSES = ROOT / "examples" / "data" / "licenses"
QUESTION = "What happens to the patent license if you sue claiming the Work infringes a patent?"
CLOSED = "http://127.0.0.1:9/v1"
# A Python argument name where a command-line user needs an option: what no CLI
# message may hold (OpenAIChat's arguments, the scorer's and diff's keywords).
PYTHON_NAMES = re.compile(
    r"(?<![\w-])(base_url|api_key|max_tokens|index_base|allow_different_inputs|model=|"
    r"timeout must|deadline|temperature must|the sampling seed)"
)


def citemark(*args: str, stdin: bytes | None = None, cwd: Path | None = None):
    """The real ``citemark`` entry point in a subprocess, with no CITEMARK_* variable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITEMARK_")}
    return subprocess.run(
        [sys.executable, "-m", "citemark", *args],
        input=stdin,
        capture_output=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )


@pytest.fixture
def no_endpoint(monkeypatch):
    """No CITEMARK_* variable in this process's environment."""
    for name in list(os.environ):
        if name.startswith("CITEMARK_"):
            monkeypatch.delenv(name)
    return monkeypatch


def error_line(capsys, argv: list[str]) -> tuple[int, str]:
    """Run ``main(argv)`` in this process: its exit code and its one line on standard error."""
    code = main(argv)
    err = capsys.readouterr().err
    assert 1 == len(err.splitlines()), err
    return code, err.removeprefix("citemark: error: ").rstrip("\n")


class TestVersion:
    def test_version_prints_the_installed_version_and_exits_0(self):
        """citemark --version prints 'citemark X.Y.Z', the distribution's version, on stdout."""
        done = citemark("--version")
        assert (0, b"") == (done.returncode, done.stderr)
        assert f"citemark {metadata.version('citemark')}\n" == done.stdout.decode()


class TestStandardInput:
    def test_dash_reads_the_rows_from_standard_input(self, tmp_path):
        """check - grades what arrives on stdin exactly as the file, named - in the reports."""
        done = citemark(
            "check", "-", "--out", "out", "--json", stdin=EXAMPLE_RUNS.read_bytes(), cwd=tmp_path
        )
        assert (0, b"") == (done.returncode, done.stderr)
        printed = json.loads(done.stdout)
        from_file = citemark("check", str(EXAMPLE_RUNS), "--out", str(tmp_path / "f"), "--json")
        expected = json.loads(from_file.stdout)
        assert ("-", dataset_sha256(EXAMPLE_RUNS)) == (printed["input"], printed["input_sha256"])
        # The same counts; only the output files' hashes differ (each run has its own id).
        assert {**expected["check"], "files": None} == {**printed["check"], "files": None}
        # --out is the caller's relative folder, not one under the spool's temporary folder.
        report = json.loads((tmp_path / "out" / "report.json").read_bytes())
        assert ("-", dataset_sha256(EXAMPLE_RUNS)) == (
            report["config"]["input"],
            report["input_sha256"],
        )
        assert report["config"]["out"] == "out"

    def test_the_summary_names_standard_input_as_dash(self, tmp_path):
        """The terminal summary says which input it read: '-'."""
        done = citemark(
            "check", "-", "--out", str(tmp_path), stdin=EXAMPLE_RUNS.read_bytes(), cwd=tmp_path
        )
        assert 0 == done.returncode, done.stderr
        assert done.stdout.decode().startswith("citemark check: 16 rows of -\n")

    def test_empty_standard_input_holds_no_row(self, tmp_path):
        """Nothing on stdin is an input without a readable row: exit 2, no file written."""
        done = citemark("check", "-", "--out", str(tmp_path / "out"), stdin=b"")
        assert (2, b"citemark: error: the input holds no readable row\n") == (
            done.returncode,
            done.stderr,
        )
        assert [] == list((tmp_path / "out").glob("*"))

    def test_ray_refuses_standard_input_before_starting(self, tmp_path, capsys, no_endpoint):
        """--engine ray reads a file: - is a usage error, and no cluster is started."""
        code, line = error_line(capsys, ["check", "-", "--engine", "ray", "--out", str(tmp_path)])
        assert (2, "--engine ray reads a file: give RUNS.jsonl a path, not - (standard input)") == (
            code,
            line,
        )

    def test_a_missing_file_names_the_dash_too(self, tmp_path, capsys, no_endpoint):
        """The missing-file error says that - is the way to read standard input."""
        code, line = error_line(capsys, ["check", str(tmp_path / "missing.jsonl")])
        assert (2, "RUNS.jsonl must name an existing file (or - for standard input)") == (
            code,
            line,
        )


class TestHintsInOptionNames:
    @pytest.mark.parametrize(
        ("argv", "env", "expected"),
        [
            (
                ["check", str(EXAMPLE_RUNS), "--judge-model", "m"],
                {},
                "--judge-base-url is required: pass --judge-base-url or set CITEMARK_BASE_URL",
            ),
            (
                ["echo"],
                {},
                "--base-url is required: pass --base-url or set CITEMARK_BASE_URL",
            ),
            (
                ["echo"],
                {"CITEMARK_BASE_URL": CLOSED},
                "--model is required: pass --model or set CITEMARK_MODEL",
            ),
            (
                ["answer", "Q?", "--docs", str(LICENSES), "--base-url", "ftp://h/v1"],
                {"CITEMARK_MODEL": "m"},
                "--base-url must be an http:// or https:// URL with a host",
            ),
            (
                [
                    "check",
                    str(EXAMPLE_RUNS),
                    "--judge-model",
                    "m",
                    "--judge-base-url",
                    "http://h:0",
                ],
                {},
                "--judge-base-url's port must lie in 1..65535",
            ),
            (
                ["check", str(EXAMPLE_RUNS), "--judge-model", "m", "--judge-api-key", "a b"],
                {"CITEMARK_BASE_URL": CLOSED},
                "--judge-api-key must be visible ASCII characters, without spaces or line breaks",
            ),
            (
                ["echo", "--temperature", "nan"],
                {"CITEMARK_BASE_URL": CLOSED, "CITEMARK_MODEL": "m"},
                "--temperature must be a finite number",
            ),
            (
                ["echo"],
                {"CITEMARK_BASE_URL": CLOSED, "CITEMARK_MODEL": "m", "CITEMARK_SEED": "x"},
                "CITEMARK_SEED must be a number for --model-seed",
            ),
            (
                ["check", str(EXAMPLE_RUNS), "--judge-model", "m"],
                {"CITEMARK_BASE_URL": CLOSED, "CITEMARK_SEED": "x"},
                "CITEMARK_SEED must be a number for --seed",
            ),
        ],
        ids=[
            "judge-url",
            "echo-url",
            "echo-model",
            "answer-scheme",
            "judge-port",
            "judge-key",
            "temperature",
            "echo-seed",
            "check-seed",
        ],
    )
    def test_a_refused_configuration_names_the_option(
        self, capsys, no_endpoint, argv, env, expected
    ):
        """Each refusal names the command's own option, never OpenAIChat's argument."""
        for name, value in env.items():
            no_endpoint.setenv(name, value)
        code, line = error_line(capsys, argv)
        assert (2, expected) == (code, line)
        assert PYTHON_NAMES.search(line) is None

    def test_a_negative_timeout_names_timeout(self, capsys, no_endpoint):
        """--timeout -1 is refused as --timeout (it sets the read timeout and the deadline)."""
        no_endpoint.setenv("CITEMARK_BASE_URL", CLOSED)
        no_endpoint.setenv("CITEMARK_MODEL", "m")
        code, line = error_line(capsys, ["echo", "--timeout", "-1"])
        assert 2 == code
        assert line.startswith("--timeout must ")
        assert PYTHON_NAMES.search(line) is None

    def test_the_naive_wording_is_what_the_check_catches(self):
        """The messages as OpenAIChat writes them hold the Python names the check looks for."""
        for message in (
            "base_url is required: pass base_url= or set CITEMARK_BASE_URL",
            "model is required: pass model= or set CITEMARK_MODEL",
            "timeout must bound every phase with a positive number: read is -1.0",
        ):
            assert PYTHON_NAMES.search(message) is not None

    def test_a_truncated_answer_says_which_option_raises_the_limit(self, capsys, no_endpoint):
        """answer's truncation error ends with what to do on the command line: --max-tokens."""
        reply = Completion("The patent licenses terminate [1", finish_reason="length")
        with FakeOpenAI(lambda prompt: reply) as server:
            no_endpoint.setenv("CITEMARK_BASE_URL", server.base_url)
            no_endpoint.setenv("CITEMARK_MODEL", "m")
            code, line = error_line(
                capsys, ["answer", QUESTION, "--docs", str(LICENSES), "--pattern", "*"]
            )
        assert 1 == code
        assert line.startswith("answer rejected: the answer was cut off")
        assert line.endswith("; raise --max-tokens (0 sends no limit)")


class TestPlurals:
    def test_one_echo_call_is_one_call(self, tmp_path, capsys, no_endpoint):
        """Every call of a one-case echo failed: '(1 call)', not '(1 calls)'."""
        no_endpoint.setenv("CITEMARK_BASE_URL", CLOSED)
        no_endpoint.setenv("CITEMARK_MODEL", "m")
        assert 3 == main(["echo", "--cases", "1", "--out", str(tmp_path)])
        err = capsys.readouterr().err
        assert (
            "citemark: error: every echo case failed: the model could not be reached (1 call)\n"
            == err
        )

    def test_a_one_item_label_set_registers_one_item(self, tmp_path, capsys, no_endpoint):
        """calibrate register over a single labelled item says '(1 item)'."""
        item = LabelledItem(
            id="item-1",
            question="When do fees rise?",
            answer="Fees rise in May [1].",
            sources=[Source(text="Fees rise in May.", doc_id="fees")],
            faithful=True,
            labeller="ana",
            rubric_version="2026-01",
        )
        labels = LabelSet(items=[item]).write(tmp_path / "labels.json")
        argv = ["calibrate", "register", str(labels), "--out", str(tmp_path / "reg.json")]
        assert 0 == main([*argv, "--threshold", "kappa=0.5"])
        out = capsys.readouterr().out
        assert "(1 item) in " in out

    @pytest.mark.parametrize(
        ("unsent", "words"), [(1, "1 citation names"), (2, "2 citations name")]
    )
    def test_an_unsent_document_error_counts_its_citations(self, unsent, words):
        """UnsentDocumentError's message agrees in number with its count."""
        error = UnsentDocumentError("cohere", citation_index=0, unsent_count=unsent, sent_count=1)
        assert f"cohere answer rejected: {words} a document that was not sent" in str(error)
        assert "(s)" not in str(error)
