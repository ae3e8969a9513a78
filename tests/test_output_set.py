"""A check's files are one set of one run, published together; temporaries never stay.

Issue 17, item 4. Every run names one run id in every file; the files appear only
once all are complete, ``report.json`` last; `check_output_set` tells a whole set
from a mixed one; a temporary file a dead writer left is removed by the next writer
of the same file in any command, while a live writer's (another process holding its
lock) is kept; and no error path (a sink failing mid-run or while finishing,
KeyboardInterrupt, a failed rename) leaves a temporary file. Writers, killed
writers and commands are real subprocesses; files are real files.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from fake_openai import FakeOpenAI, run_cli

from citemark import CitationScorer, LabelledItem, LabelSet, Source
from citemark._contract.artifacts import AtomicFile, publishing_together, remove_stale_temporaries
from citemark._pipelines.check import run as check_run
from citemark._pipelines.check.formats import FORMATS
from citemark._pipelines.check.protocol import SinkOptions
from citemark._pipelines.check.run import run_check
from citemark._pipelines.check.sinks import JsonlSink
from citemark.reports import ArtifactProblem, OutputSetCheck, check_output_set

if TYPE_CHECKING:
    from collections.abc import Iterator

    from citemark._pipelines.check.protocol import CheckedRow, CheckSink, RunFacts

CANARY = "CANARY-7d1f"
ROW = {
    "answer": f"The late fee is five percent [1]. {CANARY}",
    "sources": [{"text": "The late fee is five percent of the balance.", "doc_id": "fees"}],
}
# Every file a check may write; this run writes neither junit nor judge calls.
NAMES = ("report.json", "rows.jsonl", "report.html", "report.junit.xml", "judge-calls.jsonl")
# A writer in its own process: opens an AtomicFile, writes, says where, waits.
WRITER = """
import sys, time
from pathlib import Path
from citemark._contract.artifacts import AtomicFile
file = AtomicFile(Path(sys.argv[1]))
file.write(b"half of a report" * 1000)
file._handle.flush()
print(file.temporary, flush=True)
time.sleep(120)
"""


def write_runs(path: Path, rows: int = 5) -> Path:
    path.write_text((json.dumps(ROW) + "\n") * rows, encoding="utf-8")
    return path


def temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def visible(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if not p.name.startswith(".")}


def check(runs: Path, out: Path, *formats: str):
    return run_check(runs, out, CitationScorer(), formats=formats)


@contextlib.contextmanager
def writer(path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """A real process holding an open AtomicFile for ``path``; killed at the end."""
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        temporary = Path(process.stdout.readline().strip())
        assert temporary.exists()
        yield process, temporary
    finally:
        process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()


def killed_writer(path: Path) -> Path:
    """The temporary file a writer killed with SIGKILL mid-write left for ``path``."""
    with writer(path) as (process, temporary):
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert temporary.exists()
    return temporary


def naive_remove(folder: Path, name: str) -> int:
    """The remover without the lock check: every file of AtomicFile's naming goes."""
    removed = 0
    for entry in folder.iterdir():
        if re.fullmatch(rf"\.{re.escape(name)}\.[a-z0-9_]{{8}}\.tmp", entry.name):
            entry.unlink()
            removed += 1
    return removed


def naive_whole(folder: Path) -> bool:
    """A set check that only asks whether report.json names files that exist."""
    report = json.loads((folder / "report.json").read_bytes())
    return all((folder / name).exists() for name in report["check"]["files"])


class TestRunId:
    def test_every_artifact_names_the_run(self, tmp_path):
        """report.json, each rows.jsonl line, the page's meta and a JUnit property: one id."""
        result = check(write_runs(tmp_path / "runs.jsonl"), tmp_path / "out", "junit")
        out = tmp_path / "out"
        run_id = json.loads((out / "report.json").read_bytes())["run_id"]
        assert re.fullmatch(r"[0-9a-f]{32}", run_id)
        assert run_id == result.report.run_id
        lines = (out / "rows.jsonl").read_text().splitlines()
        assert 5 == len(lines)
        assert [run_id] * 5 == [json.loads(line)["run_id"] for line in lines]
        # The existing fields keep their order; run_id comes last.
        assert ["line", "id", "outcome"] == list(json.loads(lines[0]))[:3]
        assert "run_id" == list(json.loads(lines[0]))[-1]
        html = (out / "report.html").read_text()
        assert f'<meta name="citemark-run-id" content="{run_id}">' in html
        junit = (out / "report.junit.xml").read_text()
        assert f'<property name="run_id" value="{run_id}"/>' in junit

    def test_two_runs_have_two_ids(self, tmp_path):
        runs = write_runs(tmp_path / "runs.jsonl")
        first = check(runs, tmp_path / "a").report.run_id
        second = check(runs, tmp_path / "b").report.run_id
        assert first != second


class TestCheckOutputSet:
    def test_a_finished_run_is_whole(self, tmp_path):
        out = tmp_path / "out"
        result = check(write_runs(tmp_path / "runs.jsonl"), out, "junit")
        found = check_output_set(out)
        assert found.whole
        assert ("ok", result.report.run_id, ()) == (found.report, found.run_id, found.problems)
        assert {"rows.jsonl", "report.html", "report.junit.xml"} == set(found.files)

    def test_a_file_from_another_run_is_told_and_the_naive_check_misses_it(self, tmp_path):
        """Renames interrupted after rows.jsonl: new rows beside the old report is mixed."""
        runs = write_runs(tmp_path / "runs.jsonl")
        out, other = tmp_path / "out", tmp_path / "other"
        check(runs, out)
        check(runs, other)
        (other / "rows.jsonl").replace(out / "rows.jsonl")  # what the first rename did
        found = check_output_set(out)
        assert not found.whole
        assert [
            ArtifactProblem(name="rows.jsonl", reason="sha256_mismatch"),
            ArtifactProblem(name="rows.jsonl", reason="run_id_mismatch"),
        ] == list(found.problems)
        assert naive_whole(out)  # the naive check calls the mixed set whole

    def test_one_line_of_another_run_is_told(self, tmp_path):
        """A rows.jsonl whose hash was forged still names another run on one line."""
        out = tmp_path / "out"
        result = check(write_runs(tmp_path / "runs.jsonl"), out)
        lines = (out / "rows.jsonl").read_bytes().splitlines(keepends=True)
        lines[2] = lines[2].replace(str(result.report.run_id).encode(), b"0" * 32)
        data = b"".join(lines)
        (out / "rows.jsonl").write_bytes(data)
        report = json.loads((out / "report.json").read_bytes())
        report["check"]["files"]["rows.jsonl"] = hashlib.sha256(data).hexdigest()
        (out / "report.json").write_text(json.dumps(report))
        assert ("run_id_mismatch",) == tuple(p.reason for p in check_output_set(out).problems)

    def test_missing_stray_and_unsafe_names(self, tmp_path):
        out = tmp_path / "out"
        check(write_runs(tmp_path / "runs.jsonl"), out)
        (out / "report.html").unlink()
        (out / "report.junit.xml").write_text("<testsuites/>")  # an older run's format
        report = json.loads((out / "report.json").read_bytes())
        report["check"]["files"]["../outside"] = "0" * 64
        (out / "report.json").write_text(json.dumps(report))
        found = check_output_set(out)
        assert {
            ("report.html", "missing"),
            ("../outside", "bad_name"),
            ("report.junit.xml", "not_named"),
        } == {(p.name, p.reason) for p in found.problems}

    def test_report_states(self, tmp_path):
        out = tmp_path / "out"
        check(write_runs(tmp_path / "runs.jsonl"), out)
        report = json.loads((out / "report.json").read_bytes())
        del report["run_id"]
        (out / "report.json").write_text(json.dumps(report))
        old = check_output_set(out)
        assert ("no_run_id", False) == (old.report, old.whole)
        (out / "report.json").write_bytes(b"{not json")
        assert OutputSetCheck(report="unreadable") == check_output_set(out)
        (out / "report.json").unlink()
        missing = check_output_set(out)
        assert ("missing", {"rows.jsonl", "report.html"}) == (
            missing.report,
            {p.name for p in missing.problems},
        )

    def test_the_result_carries_no_file_content(self, tmp_path):
        out = tmp_path / "out"
        check(write_runs(tmp_path / "runs.jsonl"), out)
        (out / "rows.jsonl").write_text(json.dumps({"run_id": CANARY}) + "\n")
        found = check_output_set(out)
        assert not found.whole
        assert CANARY not in repr(found)
        assert CANARY not in found.model_dump_json()


class FailingSink:
    """A format that fails where told: in ``add`` at a row, or in ``finish``."""

    name = "report.junit.xml"

    def __init__(self, options: SinkOptions, *, at_row: int | None, error: BaseException) -> None:
        self._file = AtomicFile(options.out_dir / self.name)
        self._rows = 0
        self._at_row = at_row
        self._error = error

    def add(self, row: CheckedRow) -> None:
        del row
        self._rows += 1
        self._file.write(b"<testcase/>\n")
        if self._rows == self._at_row:
            raise self._error

    def finish(self, facts: RunFacts) -> str:
        del facts
        if self._at_row is None:
            raise self._error
        return self._file.commit()

    def close(self) -> None:
        self._file.__exit__(None, None, None)


class TestNoTemporaryOnAnyErrorPath:
    @pytest.fixture
    def before(self, tmp_path) -> tuple[Path, Path, dict[str, bytes]]:
        """An output folder holding a whole earlier run, and a bigger input."""
        out = tmp_path / "out"
        check(write_runs(tmp_path / "first.jsonl", 3), out)
        return write_runs(tmp_path / "runs.jsonl", 1200), out, visible(out)

    @pytest.mark.parametrize(
        ("at_row", "error"),
        [
            (700, OSError(28, "No space left on device")),
            (700, KeyboardInterrupt()),
            (None, OSError(28, "No space left on device")),
            (None, KeyboardInterrupt()),
        ],
        ids=["add-oserror", "add-interrupt", "finish-oserror", "finish-interrupt"],
    )
    def test_a_failing_sink_publishes_nothing_and_leaves_no_temporary(
        self, before, monkeypatch, at_row, error
    ):
        """rows.jsonl and report.html were sealed already; none of them appears."""
        runs, out, old = before
        monkeypatch.setitem(
            FORMATS, "failing", lambda options: FailingSink(options, at_row=at_row, error=error)
        )
        with pytest.raises(type(error)):
            run_check(runs, out, CitationScorer(), formats=("failing",), concurrency=1)
        assert [] == temporaries(out)
        assert old == visible(out)
        assert check_output_set(out).whole

    def test_the_naive_per_sink_commit_leaves_a_mixed_set(self, before, monkeypatch):
        """Without publishing together, a failing last sink leaves new files beside old."""
        runs, out, _ = before
        monkeypatch.setitem(
            FORMATS, "failing", lambda o: FailingSink(o, at_row=None, error=OSError(28, "full"))
        )
        monkeypatch.setattr(check_run, "publishing_together", contextlib.nullcontext)
        with pytest.raises(OSError, match="full"):
            run_check(runs, out, CitationScorer(), formats=("failing",))
        found = check_output_set(out)
        assert not found.whole
        assert {"rows.jsonl", "report.html"} <= {p.name for p in found.problems}

    def test_a_sink_that_fails_to_open_leaves_no_temporary(self, before, monkeypatch):
        """rows.jsonl's temporary is open when the next sink fails to build; it goes too."""
        runs, out, old = before

        def refuse(options: SinkOptions) -> CheckSink:
            raise OSError(24, "Too many open files")

        monkeypatch.setitem(FORMATS, "refusing", refuse)
        with pytest.raises(OSError, match="Too many"):
            run_check(runs, out, CitationScorer(), formats=("refusing",))
        assert ([], old) == (temporaries(out), visible(out))
        # The naive order (close callbacks registered once every sink is built) leaks it.
        options = SinkOptions(out, 10, re.compile("x"), re.compile("x"))
        built: list[CheckSink] = []
        with contextlib.ExitStack() as stack, contextlib.suppress(OSError):
            built.append(JsonlSink(options))
            built.append(refuse(options))
            for sink in built:
                stack.callback(sink.close)
        assert 1 == len(temporaries(out))
        built[0].close()  # what the naive run never does
        assert [] == temporaries(out)

    def test_an_interrupt_from_the_progress_callback_leaves_nothing(self, before):
        """Ctrl-C in the row loop: the previous set stays, no temporary is left."""
        runs, out, old = before

        def progress(done: int, total: int) -> None:
            del total
            if done == 600:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            run_check(runs, out, CitationScorer(), progress=progress, concurrency=1)
        assert ([], old) == (temporaries(out), visible(out))

    def test_a_failed_rename_removes_the_rest(self, before):
        """report.html cannot be replaced (a folder is in its way): report.json never appears."""
        runs, out, _ = before
        (out / "report.html").unlink()
        (out / "report.html").mkdir()
        (out / "report.html" / "keep").write_text("x")
        (out / "report.json").unlink()
        with pytest.raises(OSError):
            run_check(runs, out, CitationScorer())
        assert [] == temporaries(out)
        assert not (out / "report.json").exists()
        assert "missing" == check_output_set(out).report

    def test_no_readable_row_writes_nothing(self, tmp_path):
        runs = tmp_path / "runs.jsonl"
        runs.write_text("{oops\n[1]\n", encoding="utf-8")
        out = tmp_path / "out"
        with pytest.raises(check_run.NoRowsError):
            run_check(runs, out, CitationScorer())
        assert [] == list(out.iterdir())

    def test_publishing_together_discards_on_error(self, tmp_path):
        """The mechanism itself: sealed files go when the block fails, KeyboardInterrupt too."""
        for error in (ValueError("x"), KeyboardInterrupt()):
            with pytest.raises(type(error)), publishing_together():
                for name in ("a", "b"):
                    with AtomicFile(tmp_path / name) as file:
                        file.write(b"data")
                        file.commit()
                raise error
            assert [] == list(tmp_path.iterdir())


class TestStaleTemporaries:
    def test_a_killed_writers_temporary_goes_and_a_live_writers_stays(self, tmp_path):
        """The lock tells them apart; the naive remover deletes the live writer's file."""
        with writer(tmp_path / "report.json") as (_, live):
            # The killed writer's own AtomicFile, opening, kept the live one.
            dead = killed_writer(tmp_path / "report.json")
            assert (True, True) == (dead.exists(), live.exists())
            assert 1 == remove_stale_temporaries(tmp_path, ["report.json"])
            assert (False, True) == (dead.exists(), live.exists())
            assert 1 == naive_remove(tmp_path, "report.json")
            assert not live.exists()

    def test_opening_a_writer_removes_a_dead_writers_temporary(self, tmp_path):
        """The mechanism is in AtomicFile itself, so it holds for every writer."""
        dead = killed_writer(tmp_path / "rows.jsonl")
        other = killed_writer(tmp_path / "other.json")
        with AtomicFile(tmp_path / "rows.jsonl") as file:
            assert (False, True) == (dead.exists(), other.exists())
            file.commit()
        assert [other.name] == temporaries(tmp_path)

    def test_the_next_echo_removes_a_killed_writers_temporary(self, tmp_path):
        """A real `citemark echo` run removes what a killed writer left for echo-latest.json."""
        out = tmp_path / "out"
        out.mkdir()
        dead = killed_writer(out / "echo-latest.json")
        with (
            writer(out / "echo-latest.json") as (_, live),
            FakeOpenAI(lambda prompt: "The sources do not say.") as server,
        ):
            done = run_cli(
                "echo", "--seed", "11", "--cases", "2", "--out", str(out), base_url=server.base_url
            )
            assert 0 == done.returncode, done.stderr
            assert (False, True) == (dead.exists(), live.exists())
        assert (out / "echo-latest.json").exists()

    def test_the_next_calibrate_removes_a_killed_writers_temporary(self, tmp_path):
        """A real `citemark calibrate register` removes a killed writer's leftover, not a live one."""
        source = Source(text="Fees rise in May.", doc_id="fees")
        items = [
            LabelledItem(
                id=f"item-{n}",
                question="When do fees rise?",
                answer="Fees rise in May [1].",
                sources=[source],
                faithful=n % 2 == 0,
                labeller="ana",
                rubric_version="2026-01",
            )
            for n in range(4)
        ]
        labels = LabelSet(items=items).write(tmp_path / "labels.json")
        dead = killed_writer(tmp_path / "reg.json")
        with writer(tmp_path / "reg.json") as (_, live):
            done = run_cli(
                "calibrate",
                "register",
                str(labels),
                "--out",
                str(tmp_path / "reg.json"),
                "--threshold",
                "kappa=0.6",
            )
            assert (0, "") == (done.returncode, done.stderr)
            assert (False, True) == (dead.exists(), live.exists())

    def test_the_next_check_removes_a_killed_writers_temporaries_of_every_output(self, tmp_path):
        out = tmp_path / "out"
        out.mkdir()
        dead = [killed_writer(out / name) for name in NAMES]
        done = run_cli("check", str(write_runs(tmp_path / "runs.jsonl")), "--out", str(out))
        assert 0 == done.returncode, done.stderr
        assert not any(path.exists() for path in dead)
        assert [] == temporaries(out)


class _Judge:
    """A judge that finds every citation supported."""

    provider = "openai-compatible"
    model_name = "judge-1"

    async def complete(self, prompt: str) -> str:
        del prompt
        return json.dumps({"score": 3, "explanation": "Judged.", "verdicts": []})


class TestARunOwnsEveryNameItCanWrite:
    """Issue 26, item 4: a run into a folder another run filled leaves one whole set."""

    @pytest.fixture
    def fuller(self, tmp_path) -> tuple[Path, Path]:
        """A folder holding a judged ``--format junit`` run: every name a check writes."""
        runs, out = write_runs(tmp_path / "runs.jsonl", 3), tmp_path / "out"
        run_check(runs, out, CitationScorer(_Judge()), formats=("junit",))
        assert set(NAMES) == set(visible(out))
        assert check_output_set(out).whole
        return runs, out

    def test_a_plain_run_removes_the_names_it_does_not_write(self, fuller):
        """judge-calls.jsonl and report.junit.xml of the earlier run go with the publish."""
        runs, out = fuller
        check(runs, out)
        assert {"report.json", "rows.jsonl", "report.html"} == set(visible(out))
        found = check_output_set(out)
        assert (True, ()) == (found.whole, found.problems)
        assert [] == temporaries(out)

    def test_the_naive_run_keeps_them_and_the_set_is_not_whole(self, fuller, monkeypatch):
        """Without the removal (today's publish), the old files stay as strays."""
        runs, out = fuller
        monkeypatch.setattr(check_run, "_OUTPUT_NAMES", ("report.json", "rows.jsonl"))
        check(runs, out)
        found = check_output_set(out)
        assert not found.whole
        assert {("report.junit.xml", "not_named"), ("judge-calls.jsonl", "not_named")} == {
            (p.name, p.reason) for p in found.problems
        }

    def test_a_failed_run_removes_nothing(self, fuller, monkeypatch):
        """The removal is part of the publish: a run that fails leaves the old set whole."""
        runs, out = fuller
        old = visible(out)
        monkeypatch.setitem(
            FORMATS, "failing", lambda o: FailingSink(o, at_row=None, error=OSError(28, "full"))
        )
        monkeypatch.setitem(FORMATS, "junit", FORMATS["failing"])
        with pytest.raises(OSError, match="full"):
            run_check(runs, out, CitationScorer(), formats=("junit",))
        assert old == visible(out)
        assert check_output_set(out).whole
        assert [] == temporaries(out)

    def test_a_planted_symlink_at_an_unwritten_name_is_removed_not_followed(self, tmp_path):
        """A link at judge-calls.jsonl goes; the file it points at is untouched."""
        runs, out = write_runs(tmp_path / "runs.jsonl", 3), tmp_path / "out"
        check(runs, out)
        target = tmp_path / "precious.txt"
        target.write_text("keep me", encoding="utf-8")
        (out / "judge-calls.jsonl").symlink_to(target)
        assert not check_output_set(out).whole
        check(runs, out)
        assert check_output_set(out).whole
        assert not (out / "judge-calls.jsonl").is_symlink()
        assert "keep me" == target.read_text(encoding="utf-8")

    def test_a_deeply_nested_report_or_line_is_unreadable_not_a_crash(self, fuller):
        """100,000 nested arrays in report.json or after a line's run_id key: no RecursionError."""
        _, out = fuller
        deep = "[" * 100_000 + "]" * 100_000
        rows = (out / "rows.jsonl").read_bytes()
        (out / "rows.jsonl").write_bytes(rows + b'{"line": 9, "run_id": ' + deep.encode() + b"}\n")
        found = check_output_set(out)
        assert {("rows.jsonl", "sha256_mismatch"), ("rows.jsonl", "no_run_id")} == {
            (p.name, p.reason) for p in found.problems
        }
        (out / "report.json").write_text(deep, encoding="ascii")
        assert "unreadable" == check_output_set(out).report
