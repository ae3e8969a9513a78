"""Hostile rows and targets for RowRecorder: no run is lost silently (issue 38, item 3).

Real files, folders and FIFOs in ``tmp_path``. A row nested 2,000 deep made the old
``record`` raise ``RecursionError`` although it promises never to raise for what a
row holds; rows recorded after their file or folder was deleted were lost and still
counted as recorded; and a FIFO with no reader blocked the recorder's construction
forever. Each is now a counted failure with a structural warning, a file opened
again, or a one-line ``OSError`` at once. The FIFO tests open the recorder in a
thread under a bounded wait, so a regression fails instead of hanging the suite.
"""

from __future__ import annotations

import errno
import io
import json
import os
import shutil
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from citemark import Source
from citemark.reports import RecordingWarning, RowRecorder

CANARY = "CANARY-38c3-recording-faults"
SOURCES = [Source(text="Redistributions must retain the notice.", doc_id="BSD")]
DEPTH = 2_000


def nested(depth: int) -> dict[str, Any]:
    """A dict nested ``depth`` levels deep, each key the canary, built without recursion."""
    top: dict[str, Any] = {}
    level = top
    for _ in range(depth):
        level[CANARY] = {}
        level = level[CANARY]
    return top


def lines(path: Path) -> list[dict[str, Any]]:
    """The JSON rows of ``path``."""
    return [json.loads(line) for line in path.read_text(encoding="ascii").splitlines()]


def within(seconds: float, make: Callable[[], object], release: Path) -> object:
    """``make()``'s result or exception, or fail if it is still blocked after ``seconds``.

    A construction blocked on a FIFO is released by opening the FIFO's read end, so
    that the thread ends and the suite goes on.
    """
    done: list[object] = []

    def run() -> None:
        try:
            done.append(make())
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            done.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        reader = os.open(release, os.O_RDONLY | os.O_NONBLOCK)
        thread.join(10)
        os.close(reader)
        pytest.fail(f"opening a FIFO with no reader was still blocked after {seconds} s")
    return done[0]


class TestDeepRows:
    def test_metadata_nested_2000_deep_is_a_counted_failure(self):
        """The old record raised RecursionError; now False, counted, warned structurally."""
        out = io.StringIO()
        recorder = RowRecorder(out)
        deep = Source(text=CANARY, doc_id=CANARY, metadata=nested(DEPTH))
        with pytest.warns(RecordingWarning) as caught:
            assert not recorder.record(question=CANARY, answer=CANARY, sources=[deep])
        assert (0, 1, "") == (recorder.recorded, recorder.failures, out.getvalue())
        assert "nested deeper than JSON encoding can follow" in (recorder.last_failure or "")
        assert all(CANARY not in str(w.message) for w in caught)
        assert CANARY not in (recorder.last_failure or "")
        assert recorder.record(answer="Kept [1].", sources=SOURCES)  # the next row goes on
        assert (1, 1) == (recorder.recorded, recorder.failures)

    def test_naive_encoding_of_that_row_raises(self):
        """The naive variant: the old encoding step, json.dumps of the row, raises."""
        deep = Source(text="t", doc_id="d", metadata=nested(DEPTH))
        with pytest.raises(RecursionError):
            json.dumps({"sources": [deep.model_dump()]}, allow_nan=False)

    def test_a_deep_structured_answer_is_a_counted_failure(self):
        """The same for a structured answer nested deep: never an exception."""
        recorder = RowRecorder(io.StringIO())
        with pytest.warns(RecordingWarning, match="nested deeper"):
            assert not recorder.record(answer=nested(DEPTH), sources=SOURCES)
        assert 1 == recorder.failures

    def test_an_answer_that_raises_while_read_is_a_counted_failure(self):
        """A mapping that raises any exception while it is read: counted, by class name."""

        class Hostile(Mapping[str, Any]):
            def __getitem__(self, key: str) -> Any:
                raise LookupError(CANARY)

            def __iter__(self) -> Iterator[str]:
                raise RuntimeError(CANARY)

            def __len__(self) -> int:
                return 1

        recorder = RowRecorder(io.StringIO())
        with pytest.warns(RecordingWarning, match="encoding it raised RuntimeError") as caught:
            assert not recorder.record(answer=Hostile(), sources=SOURCES)
        assert all(CANARY not in str(w.message) for w in caught)
        assert 1 == recorder.failures

    def test_the_callers_mistakes_still_raise(self):
        """A bad reason code is the calling code's bug, refused before any encoding."""
        recorder = RowRecorder(io.StringIO())
        with pytest.raises(ValueError, match="REASONS"):
            recorder.record(answer=nested(DEPTH), sources=SOURCES, unassessed="made_up")
        assert 0 == recorder.failures


class TestDeletedTarget:
    def test_a_deleted_file_is_created_again(self, tmp_path):
        """A row after the file was deleted lands in a new file at the same path.

        The old recorder wrote it into the deleted file, out of every reader's reach,
        and counted it as recorded.
        """
        path = tmp_path / "runs.jsonl"
        with RowRecorder(path) as recorder:
            assert recorder.record(id="before", answer="a", sources=SOURCES)
            path.unlink()
            assert recorder.record(id="after", answer="b", sources=SOURCES)
            assert recorder.record(id="later", answer="c", sources=SOURCES)
            assert (3, 0) == (recorder.recorded, recorder.failures)
        assert ["after", "later"] == [row["id"] for row in lines(path)]

    def test_a_deleted_folder_is_a_counted_failure_until_it_is_back(self, tmp_path):
        """With its folder gone the row cannot be written: counted and warned, every row."""
        folder = tmp_path / "recorded"
        folder.mkdir()
        path = folder / "runs.jsonl"
        recorder = RowRecorder(path)
        assert recorder.record(id="kept", answer="a", sources=SOURCES)
        shutil.rmtree(folder)
        for _ in range(2):
            with pytest.warns(RecordingWarning, match=r"deleted .*\(FileNotFoundError, ENOENT\)"):
                assert not recorder.record(question=CANARY, answer=CANARY, sources=SOURCES)
        assert (1, 2) == (recorder.recorded, recorder.failures)
        assert CANARY not in (recorder.last_failure or "")
        folder.mkdir()  # the folder back: recording resumes there
        assert recorder.record(id="resumed", answer="b", sources=SOURCES)
        assert ["resumed"] == [row["id"] for row in lines(path)]
        recorder.close()

    def test_a_file_deleted_while_the_line_is_written_is_a_counted_failure(self, tmp_path):
        """The file deleted between the check and the write: the line is not counted."""
        path = tmp_path / "runs.jsonl"

        class DeletedMidWrite(RowRecorder):
            def _write_fd(self, fd: int, data: bytes) -> None:
                path.unlink(missing_ok=True)  # deleted just before the line reaches it
                super()._write_fd(fd, data)

        recorder = DeletedMidWrite(path)
        with pytest.warns(RecordingWarning, match="deleted while the line was written"):
            assert not recorder.record(answer="a", sources=SOURCES)
        assert (0, 1) == (recorder.recorded, recorder.failures)
        recorder.close()

    def test_a_file_with_another_link_is_not_deleted(self, tmp_path):
        """Removing one of two hard links loses nothing: the lines go on to the other."""
        path, other = tmp_path / "runs.jsonl", tmp_path / "kept.jsonl"
        with RowRecorder(path) as recorder:
            assert recorder.record(id="1", answer="a", sources=SOURCES)
            other.hardlink_to(path)
            path.unlink()
            assert recorder.record(id="2", answer="b", sources=SOURCES)
        assert not path.exists()
        assert ["1", "2"] == [row["id"] for row in lines(other)]


class TestFifo:
    def test_a_fifo_with_no_reader_is_refused_at_once(self, tmp_path):
        """ENXIO in one line instead of an open that waits for a reader forever."""
        fifo = tmp_path / "runs.fifo"
        os.mkfifo(fifo)
        error = within(10, lambda: RowRecorder(fifo), release=fifo)
        assert isinstance(error, OSError), error
        assert errno.ENXIO == error.errno
        assert "nothing reads this FIFO" in str(error)
        assert 1 == len(str(error).splitlines())

    def test_a_fifo_with_a_reader_is_written_to(self, tmp_path):
        """A FIFO that a process reads is still a target: the line reaches the reader."""
        fifo = tmp_path / "runs.fifo"
        os.mkfifo(fifo)
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        try:
            with RowRecorder(fifo) as recorder:
                assert recorder.record(id="piped", answer="a", sources=SOURCES)
            assert "piped" == json.loads(os.read(reader, 65536))["id"]
        finally:
            os.close(reader)
