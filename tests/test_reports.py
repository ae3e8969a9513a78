"""Evaluation reports and atomic writes, SPEC §3.12 and §8."""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import ValidationError

import citemark
from citemark import (
    DEFAULT_RESULTS_DIR,
    ChatError,
    CheckSummary,
    FaithfulnessJudge,
    ModelIdentity,
    RedactingChat,
    Source,
    Synthesizer,
    VerdictCounts,
    dataset_sha256,
    run_synthesis,
    run_synthesis_sync,
    write_report_atomically,
)
from citemark._judging.echo.run import ECHO_REPORT_NAME
from citemark.reports import EvalReport, SynthesisReport
from citemark.testing import ScriptedChat, ScriptExhaustedError

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [Source(text="Fees rise in May.", doc_id="fees")]
FAITHFUL = '{"faithful": true, "unsupported_claims": [], "reasoning": "Stated."}'
UNFAITHFUL = '{"faithful": false, "unsupported_claims": ["in May"], "reasoning": "No."}'
DIGEST = hashlib.sha256(b"rows").hexdigest()


def identity(chat: ScriptedChat, prompt_sha256: str) -> ModelIdentity:
    return ModelIdentity(provider=chat.provider, model=chat.model_name, prompt_sha256=prompt_sha256)


class TestEvalReport:
    def test_defaults_say_what_produced_it(self):
        """A new report has schema_version 2, this citemark's version and an aware UTC time."""
        report = EvalReport(input_sha256=DIGEST)
        assert (2, citemark.__version__, UTC) == (
            report.schema_version,
            report.citemark_version,
            report.created_at.tzinfo,
        )
        assert (None, None, {}) == (report.synthesis, report.check, report.config)

    def test_round_trips_through_json(self):
        """A report with every section reads back equal from its JSON."""
        chat = ScriptedChat([])
        synthesis = SynthesisReport(
            input_stage="bm25",
            synthesis=identity(chat, "a" * 64),
            judge=identity(chat, "b" * 64),
            redaction_applied=True,
            answered=3,
            abstained=1,
            rejected=2,
            verdicts=VerdictCounts(faithful=2, unfaithful=1, unusable=1),
        )
        check = CheckSummary(rows=4, passed=1, failed=1, unassessed=2, reasons={"no_judge": 2})
        report = EvalReport(
            config={"top_k": 5, "judge": None, "paths": ["a.jsonl"]},
            input_sha256=DIGEST,
            synthesis=synthesis,
            check=check,
        )
        assert report == EvalReport.model_validate_json(report.model_dump_json())

    def test_an_earlier_report_without_new_sections_still_reads(self):
        """A report written before optional sections existed reads with their defaults."""
        data = {
            "schema_version": 1,
            "citemark_version": "0.1.0",
            "created_at": "2026-08-15T10:00:00Z",
            "input_sha256": DIGEST,
        }
        report = EvalReport.model_validate(data)
        assert (None, None, {}) == (report.synthesis, report.check, report.config)

    @pytest.mark.parametrize(
        ("change", "why"),
        [
            ({"schema_version": 3}, "another version"),
            ({"score": 0.8}, "an unknown field"),
            ({"input_sha256": "ABC"}, "not a hex digest"),
            ({"created_at": datetime(2026, 8, 15)}, "a naive time"),  # noqa: DTZ001
        ],
    )
    def test_refuses_what_it_does_not_define(self, change, why):
        """Another schema_version, unknown fields, a bad hash or a naive time are refused."""
        with pytest.raises(ValidationError):
            EvalReport.model_validate({"input_sha256": DIGEST, **change})

    def test_is_frozen(self):
        """A report cannot be changed after it is made."""
        report = EvalReport(input_sha256=DIGEST)
        with pytest.raises(ValidationError):
            report.input_sha256 = "0" * 64  # type: ignore[misc]

    def test_dataset_hash_of_bytes_and_of_a_file_agree(self, tmp_path):
        """dataset_sha256 of a file equals the SHA-256 of its bytes."""
        data = b"".join(b'{"row": %d}\n' % i for i in range(100_000))
        path = tmp_path / "rows.jsonl"
        path.write_bytes(data)
        expected = hashlib.sha256(data).hexdigest()
        assert (expected, expected) == (dataset_sha256(data), dataset_sha256(path))


class TestRunSynthesis:
    def test_counts_answered_abstained_and_rejected(self):
        """Cited, uncited and out-of-range answers count as answered, abstained, rejected."""
        chat = ScriptedChat(["Fees rise [1].", "I cannot tell.", "Fees rise [4]."])
        synthesizer = Synthesizer(chat)
        report = run_synthesis_sync(synthesizer, [("When?", SOURCES)] * 3, input_stage="recorded")
        assert (
            SynthesisReport(
                input_stage="recorded",
                synthesis=identity(chat, synthesizer.prompt_sha256),
                judge=None,
                redaction_applied=False,
                answered=1,
                abstained=1,
                rejected=1,
                failed=0,
                verdicts=None,
            )
            == report
        )

    def test_a_rejected_row_does_not_stop_the_run(self):
        """Rejections (no sources, blank answer, bad marker) are counted and later rows still run."""
        chat = ScriptedChat(["  ", "Fees rise [9].", "Fees rise [1]."])
        rows = [("When?", []), ("When?", SOURCES), ("When?", SOURCES), ("When?", SOURCES)]
        report = run_synthesis_sync(Synthesizer(chat), rows, input_stage="recorded")
        assert (1, 0, 3) == (report.answered, report.abstained, report.rejected)
        assert 0 == chat.remaining

    def test_a_failed_call_is_counted_apart(self):
        """A synthesis ChatError counts as failed, neither answered nor rejected."""
        chat = ScriptedChat([ChatError("timed out", provider="p", model="m"), "Fees rise [1]."])
        report = run_synthesis_sync(
            Synthesizer(chat), [("When?", SOURCES)] * 2, input_stage="recorded"
        )
        assert (1, 0, 1) == (report.answered, report.rejected, report.failed)

    def test_counts_verdicts_without_averaging(self):
        """Judge verdicts are counted as faithful, unfaithful and unusable; rejected rows are not judged."""
        synthesis_chat = ScriptedChat(
            ["Fees rise in May [1].", "Fees rise in May [1].", "No idea.", "[5]", "Fees rise [1]."]
        )
        judge_chat = ScriptedChat(
            [FAITHFUL, UNFAITHFUL, "not json", ChatError("down", provider="p", model="m")],
            provider="judge-provider",
            model_name="judge-model",
        )
        judge = FaithfulnessJudge(judge_chat)
        report = run_synthesis_sync(
            Synthesizer(synthesis_chat),
            [("When?", SOURCES)] * 5,
            input_stage="bm25",
            judge=judge,
        )
        assert VerdictCounts(faithful=1, unfaithful=1, unusable=2) == report.verdicts
        assert identity(judge_chat, judge.prompt_sha256) == report.judge
        assert 4 == len(judge_chat.prompts)

    def test_redaction_is_read_from_the_chat(self):
        """A synthesizer whose chat is a RedactingChat records redaction as applied."""
        chat = RedactingChat(ScriptedChat(["Fees rise [1]."]))
        report = run_synthesis_sync(Synthesizer(chat), [("When?", SOURCES)], input_stage="bm25")
        assert report.redaction_applied

    def test_redaction_can_be_stated(self):
        """redaction_applied= overrides the inference, for redaction done upstream."""
        report = run_synthesis_sync(
            Synthesizer(ScriptedChat([])), [], input_stage="bm25", redaction_applied=True
        )
        assert (True, 0) == (report.redaction_applied, report.answered)

    def test_other_errors_are_raised(self):
        """An exhausted script is a bug in the test, not a rejection: it propagates."""
        with pytest.raises(ScriptExhaustedError):
            run_synthesis_sync(
                Synthesizer(ScriptedChat([])), [("When?", SOURCES)], input_stage="bm25"
            )

    def test_rows_may_be_a_generator(self):
        """Rows are read once, lazily, from any iterable."""
        chat = ScriptedChat(["Fees rise [1]."] * 3)
        rows = (("When?", SOURCES) for _ in range(3))
        report = run_synthesis_sync(Synthesizer(chat), rows, input_stage="bm25")
        assert 3 == report.answered

    def test_the_async_entry_point_runs_in_a_loop(self):
        """run_synthesis is a coroutine usable from async code."""
        chat = ScriptedChat(["Fees rise [1]."])
        report = asyncio.run(
            run_synthesis(Synthesizer(chat), [("When?", SOURCES)], input_stage="bm25")
        )
        assert 1 == report.answered


class TestWriteReportAtomically:
    def test_writes_a_model_as_indented_json(self, tmp_path):
        """A pydantic model is written as its JSON, readable back, with a final newline."""
        report = EvalReport(input_sha256=DIGEST)
        path = write_report_atomically(tmp_path / "report.json", report)
        assert report == EvalReport.model_validate_json(path.read_bytes())
        assert path.read_bytes().endswith(b"}\n")

    def test_writes_bytes_and_text_as_given(self, tmp_path):
        """Bytes are written as is and text as UTF-8."""
        write_report_atomically(tmp_path / "a", b"\x00raw")
        write_report_atomically(tmp_path / "b", "café")
        assert (b"\x00raw", "café".encode()) == (
            (tmp_path / "a").read_bytes(),
            (tmp_path / "b").read_bytes(),
        )

    def test_creates_the_folder_and_leaves_no_temporary_file(self, tmp_path):
        """A missing folder is created; afterwards only the report is in it."""
        path = write_report_atomically(tmp_path / "results" / "deep" / "r.json", b"{}")
        assert ["r.json"] == [p.name for p in path.parent.iterdir()]

    def test_replaces_an_existing_report_and_keeps_its_mode(self, tmp_path):
        """An existing report is replaced whole, and keeps its permission bits."""
        path = tmp_path / "r.json"
        path.write_bytes(b"old")
        path.chmod(0o640)
        write_report_atomically(path, b"new")
        assert (b"new", 0o640) == (path.read_bytes(), stat.S_IMODE(path.stat().st_mode))

    def test_a_new_report_is_readable_by_others(self, tmp_path):
        """A fresh report gets mode 0o644, not the temporary file's 0o600."""
        path = write_report_atomically(tmp_path / "r.json", b"{}")
        if os.name == "posix":
            assert 0o644 == stat.S_IMODE(path.stat().st_mode)

    def test_a_failed_write_removes_its_temporary_file(self, tmp_path):
        """When the rename fails (the destination is a folder), the error is raised and no temporary file stays."""
        (tmp_path / "r.json").mkdir()
        with pytest.raises(OSError):
            write_report_atomically(tmp_path / "r.json", b"{}")
        assert ["r.json"] == [p.name for p in tmp_path.iterdir()]


# The child builds a large report, says it is ready, and writes it with the writer
# named in argv[3]: citemark's, or a naive one that writes the destination in place.
CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    from citemark import write_report_atomically

    path, size, writer = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    payload = b'{"schema_version": 1, "padding": "' + b"x" * size + b'"}\\n'
    print("ready", flush=True)
    if writer == "atomic":
        write_report_atomically(path, payload)
    else:
        Path(path).write_bytes(payload)
    print("done", flush=True)
    """
)
# Kill once the file being written holds this much: well inside the write.
KILL_AT = 1 << 20


def kill_while_writing(path: Path, size: int, writer: str) -> bool:
    """Start a child writing a ``size``-byte report to ``path``; SIGKILL it mid-write.

    Returns whether the kill landed while the file being written (the temporary
    file, or the destination for the naive writer) was still incomplete.
    """
    watched = f".{path.name}.*.tmp" if writer == "atomic" else path.name
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), str(size), writer], stdout=subprocess.PIPE
    )
    assert child.stdout is not None
    assert b"ready\n" == child.stdout.readline()
    deadline = time.monotonic() + 60
    written = None
    try:
        while written is None and time.monotonic() < deadline and child.poll() is None:
            for candidate in path.parent.glob(watched):
                try:
                    if candidate.stat().st_size > KILL_AT:
                        os.kill(child.pid, signal.SIGKILL)
                        child.wait()
                        written = candidate.stat().st_size
                        break
                except FileNotFoundError:
                    continue
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()
        child.stdout.close()
    return child.returncode == -signal.SIGKILL and written is not None and written < size


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL is POSIX")
class TestKilledWriter:
    @pytest.mark.parametrize(
        "old", [b'{"schema_version": 1, "rows": 3}\n', None], ids=["old-report", "no-report"]
    )
    def test_a_killed_writer_leaves_the_old_report_or_none(self, tmp_path, old):
        """SIGKILL mid-write leaves the old report (or none); a naive in-place writer is caught tearing it."""
        for writer, keeps_it_whole in (("atomic", True), ("naive", False)):
            folder = tmp_path / writer
            folder.mkdir()
            path = folder / "report.json"
            for size in (64 << 20, 128 << 20, 256 << 20, 512 << 20):
                for leftover in folder.iterdir():
                    leftover.unlink()
                if old is not None:
                    path.write_bytes(old)
                if kill_while_writing(path, size, writer):
                    break
            else:
                pytest.fail(f"the {writer} writer finished before it could be killed")
            whole = (old == path.read_bytes()) if old is not None else not path.exists()
            assert keeps_it_whole == whole, writer


class TestResultsFolder:
    def run_check_ignore(self, relative: str) -> int:
        completed = subprocess.run(
            ["git", "check-ignore", "--no-index", "-q", relative], cwd=ROOT, check=False
        )
        return completed.returncode

    def test_reports_under_the_default_results_folder_are_ignored(self):
        """Every report citemark writes by default lands in a git-ignored folder (additive fields rely on it)."""
        for name in (ECHO_REPORT_NAME, "report.json", "report.html"):
            relative = (DEFAULT_RESULTS_DIR / name).as_posix()
            assert 0 == self.run_check_ignore(relative), relative

    def test_the_ignore_check_can_fail(self):
        """The same check on a path outside results/ reports it as not ignored, so it is not vacuous."""
        assert 1 == self.run_check_ignore(f"src/{ECHO_REPORT_NAME}")

    def test_the_default_folder_is_relative(self):
        """DEFAULT_RESULTS_DIR is results/, relative to where the command runs."""
        assert (Path("results"), False) == (DEFAULT_RESULTS_DIR, DEFAULT_RESULTS_DIR.is_absolute())
