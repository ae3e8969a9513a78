"""RowRecorder: native ``citemark check`` rows, each line appended whole."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from citemark import Source
from citemark._model.strictjson import loads_strict
from citemark.reports import RecordingWarning, RowRecorder

CANARY = "CANARY-7f3a9c-recording"
SOURCES = [
    Source(text="Patent licenses terminate as of the date such litigation is filed.", doc_id="A"),
    Source(text="Redistributions must retain the above copyright notice.", doc_id="B"),
]

# A child process that records rows in a loop until it is killed, in one of three ways:
# "recorder" (RowRecorder), "pieces" (json.dump into a buffered text file, the naive
# way: a line is written in many pieces) and "buffered" (one write of the whole line
# to a buffered text file). After ``ready`` rows it prints "ready" on stdout, once.
CHILD = r"""
import json, sys, time

path, mode, ready, stop = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
texts = ["Keep the notices. " * (1 + k % 5) for k in range(6)]
if mode == "recorder":
    from citemark import Source
    from citemark.reports import RowRecorder

    recorder = RowRecorder(path)
    sources = [Source(text=text, doc_id=f"d{k}") for k, text in enumerate(texts)]
    write = lambda n: recorder.record(id=n, question="q", answer="Kept [1].", sources=sources)
else:  # the naive variants never import citemark
    handle = open(path, "a", encoding="ascii")
    sources = [{"text": text, "doc_id": f"d{k}"} for k, text in enumerate(texts)]
    row = {"question": "q", "answer": "Kept [1].", "sources": sources}

    def write(n):
        if mode == "pieces":
            json.dump({"id": n, **row}, handle)
            handle.write("\n")
        else:
            handle.write(json.dumps({"id": n, **row}) + "\n")
n = 0
while stop == 0 or n < stop:
    write(n)
    n += 1
    if n == ready:
        print("ready", flush=True)
print("stopped", flush=True)
time.sleep(60)
"""


def child(path: Path, mode: str, *, ready: int, stop: int = 0) -> subprocess.Popen[str]:
    """Start a child that records into ``path`` and wait until it says ready."""
    process = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path), mode, str(ready), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert "ready\n" == process.stdout.readline()
    return process


def kill(process: subprocess.Popen[str]) -> None:
    """SIGKILL the child and reap it."""
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert process.stdout is not None
    process.stdout.close()


def whole_rows(path: Path) -> tuple[int, int]:
    """(whole rows, torn lines): a torn line is not a JSON object or lacks its line break."""
    whole = torn = 0
    for raw in path.read_bytes().splitlines(keepends=True):
        try:
            value = loads_strict(raw.decode("ascii"), max_bytes=None)
        except (ValueError, UnicodeDecodeError):
            torn += 1
            continue
        if raw.endswith(b"\n") and isinstance(value, dict) and "sources" in value:
            whole += 1
        else:
            torn += 1
    return whole, torn


class TestRow:
    def test_the_row_is_native_and_strict(self):
        """A row holds id, question, answer, sources and the optional fields, as strict JSON."""
        out = io.StringIO()
        recorder = RowRecorder(out)
        assert recorder.record(
            id="q1",
            question="When?",
            answer="Filed [1].",
            sources=SOURCES,
            index_base=1,
            extra={"numbered_by": "prompt"},
        )
        line = out.getvalue()
        assert line.endswith("}\n")
        assert 1 == line.count("\n")
        assert {
            "id": "q1",
            "question": "When?",
            "answer": "Filed [1].",
            "sources": [s.model_dump() for s in SOURCES],
            "index_base": 1,
            "numbered_by": "prompt",
        } == json.loads(line)

    def test_a_structured_answer_is_a_json_object(self):
        """A structured answer is recorded as the JSON object it is, not as a string."""
        out = io.StringIO()
        RowRecorder(out).record(answer={"text": "Filed.", "cited": [1]}, sources=SOURCES)
        assert {"text": "Filed.", "cited": [1]} == json.loads(out.getvalue())["answer"]

    def test_a_lone_surrogate_is_escaped(self):
        """A lone surrogate a model sent is escaped, so the line stays ASCII and reads back."""
        out = io.StringIO()
        assert RowRecorder(out).record(answer="bad \udc80 [1]", sources=SOURCES)
        assert out.getvalue().isascii()
        assert "bad \udc80 [1]" == json.loads(out.getvalue())["answer"]

    def test_unassessed_takes_a_known_code_only(self):
        """An unknown reason code or an extra field that reuses a row field is the caller's bug."""
        recorder = RowRecorder(io.StringIO())
        with pytest.raises(ValueError, match="REASONS"):
            recorder.record(answer="", sources=[], unassessed="made_up")
        with pytest.raises(ValueError, match="sources"):
            recorder.record(answer="", sources=[], extra={"sources": []})

    def test_a_per_run_id_is_marked_with_its_scope(self):
        """id_scope="run" writes ``"id_scope": "run"``; left out, the row has no such field."""
        out = io.StringIO()
        recorder = RowRecorder(out)
        assert recorder.record(id="run-1", answer="Filed [1].", sources=SOURCES, id_scope="run")
        assert recorder.record(id="q1", answer="Filed [1].", sources=SOURCES)
        marked, plain = (json.loads(line) for line in out.getvalue().splitlines())
        assert ("run-1", "run") == (marked["id"], marked["id_scope"])
        assert "id_scope" not in plain

    @pytest.mark.parametrize("scope", ["row", "RUN", "", True])
    def test_id_scope_takes_run_only(self, scope):
        """Any other id_scope is the caller's bug, refused before a line is written, as
        is an extra field that would set the scope behind the keyword's back."""
        out = io.StringIO()
        recorder = RowRecorder(out)
        with pytest.raises(ValueError, match="id_scope"):
            recorder.record(id="r", answer="", sources=[], id_scope=scope)
        with pytest.raises(ValueError, match="id_scope"):
            recorder.record(id="r", answer="", sources=[], extra={"id_scope": "run"})
        assert ("", 0) == (out.getvalue(), recorder.recorded)


class TestNeverRaises:
    def test_nan_metadata_is_a_counted_failure(self):
        """A row that is not strict JSON is not written, counted, and warned about structurally."""
        out = io.StringIO()
        recorder = RowRecorder(out)
        bad = Source(text=CANARY, doc_id=CANARY, metadata={CANARY: float("nan")})
        with pytest.warns(RecordingWarning) as caught:
            assert not recorder.record(question=CANARY, answer=CANARY, sources=[bad])
        assert "" == out.getvalue()
        assert (0, 1) == (recorder.recorded, recorder.failures)
        assert recorder.last_failure is not None
        assert CANARY not in recorder.last_failure
        assert all(CANARY not in str(w.message) for w in caught)

    def test_a_failing_writer_is_a_counted_failure(self):
        """A writer that raises is reported by type name only; the next row still goes through."""

        class Flaky(io.StringIO):
            calls = 0

            def write(self, text: str) -> int:
                self.calls += 1
                if self.calls == 1:
                    raise OSError(28, CANARY)
                return super().write(text)

        out = Flaky()
        recorder = RowRecorder(out)
        with pytest.warns(RecordingWarning, match=r"the write failed \(OSError, ENOSPC\)"):
            assert not recorder.record(answer=CANARY, sources=SOURCES)
        assert recorder.record(answer="Filed [1].", sources=SOURCES)
        assert (1, 1) == (recorder.recorded, recorder.failures)
        assert CANARY not in (recorder.last_failure or "")

    def test_a_closed_recorder_counts_failures(self, tmp_path):
        """After close, a row is a failure, not an exception."""
        with RowRecorder(tmp_path / "runs.jsonl") as recorder:
            assert recorder.record(answer="a", sources=SOURCES)
        with pytest.warns(RecordingWarning, match="closed"):
            assert not recorder.record(answer="a", sources=SOURCES)
        assert 1 == len((tmp_path / "runs.jsonl").read_bytes().splitlines())


class TestAppendWhole:
    def test_a_file_is_appended_to_never_truncated(self, tmp_path):
        """Two recorders on one path append; neither truncates the other's lines."""
        path = tmp_path / "runs.jsonl"
        for n in range(2):
            with RowRecorder(path) as recorder:
                recorder.record(id=n, answer="a", sources=SOURCES)
        assert (2, 0) == whole_rows(path)

    def test_a_cut_last_line_is_isolated(self, tmp_path):
        """A file left ending mid-line gets a line break first: only the cut line is malformed."""
        path = tmp_path / "runs.jsonl"
        path.write_bytes(b'{"id": 1, "answer": "cut')
        with RowRecorder(path) as recorder:
            recorder.record(id=2, answer="a", sources=SOURCES)
        assert (1, 1) == whole_rows(path)

    def test_threads_never_interleave_where_pieces_do(self, tmp_path):
        """Eight threads sharing one recorder give whole lines; json.dump into one handle tears.

        The naive variant, ``json.dump(row, handle)`` then ``handle.write("\\n")`` from
        several threads on one text file, writes a line in many pieces; with a short
        thread switch interval other threads' pieces land inside it, every time.
        """
        path, naive = tmp_path / "runs.jsonl", tmp_path / "naive.jsonl"
        sources = [
            Source(text="Keep notices.", doc_id=f"d{k}", metadata={"k": k}) for k in range(8)
        ]
        row = {"question": "q", "answer": "a", "sources": [s.model_dump() for s in sources]}
        interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)
        try:
            with RowRecorder(path) as recorder, naive.open("w", encoding="ascii") as handle:

                def work(k: int) -> None:
                    for n in range(150):
                        recorder.record(id=f"{k}-{n}", answer="a", question="q", sources=sources)
                        json.dump({"id": f"{k}-{n}", **row}, handle)
                        handle.write("\n")

                threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
        finally:
            sys.setswitchinterval(interval)
        assert (1200, 0) == whole_rows(path)
        ids = {json.loads(line)["id"] for line in path.read_bytes().splitlines()}
        assert 1200 == len(ids)
        assert 0 < whole_rows(naive)[1]

    def test_processes_never_interleave(self, tmp_path):
        """Three processes appending 15 KB lines to one file with O_APPEND give whole lines."""
        path = tmp_path / "runs.jsonl"
        script = (
            "import sys\nfrom citemark import Source\nfrom citemark.reports import RowRecorder\n"
            "r = RowRecorder(sys.argv[1])\n"
            "s = [Source(text='x' * 5000, doc_id=f'd{k}') for k in range(3)]\n"
            "for n in range(100): r.record(id=f'{sys.argv[2]}-{n}', answer='a [1]', sources=s)\n"
        )
        processes = [
            subprocess.Popen([sys.executable, "-c", script, str(path), str(k)]) for k in range(3)
        ]
        assert [0, 0, 0] == [p.wait(timeout=120) for p in processes]
        assert (300, 0) == whole_rows(path)


class TestKilled:
    def test_a_recorded_row_survives_a_kill_where_a_buffered_one_is_lost(self, tmp_path):
        """Every row recorded before SIGKILL is in the file; a buffered text file loses them."""
        ours, naive = tmp_path / "runs.jsonl", tmp_path / "naive.jsonl"
        for path, mode in ((ours, "recorder"), (naive, "buffered")):
            process = child(path, mode, ready=5, stop=5)
            assert process.stdout is not None
            assert "stopped\n" == process.stdout.readline()
            kill(process)
        assert (5, 0) == whole_rows(ours)
        assert (0, 0) == whole_rows(naive)  # five rows still in the dead process's buffer

    def test_a_kill_mid_loop_leaves_only_whole_lines(self, tmp_path):
        """SIGKILL while recording in a loop, twice over: every line in the file is whole.

        The naive variant (``json.dump`` into a buffered text file) is killed the same
        way until its file ends in a torn line, which it does at almost every kill: its
        buffer reaches the disk in 8 KiB blocks that end inside a line.
        """
        ours, naive = tmp_path / "runs.jsonl", tmp_path / "naive.jsonl"
        for _ in range(2):
            process = child(ours, "recorder", ready=200)
            time.sleep(0.05)
            kill(process)
        whole, torn = whole_rows(ours)
        assert 400 <= whole
        assert 0 == torn
        naive_torn = 0
        for _ in range(5):
            naive.unlink(missing_ok=True)
            process = child(naive, "pieces", ready=200)
            time.sleep(0.05)
            kill(process)
            naive_torn = whole_rows(naive)[1]
            if naive_torn:
                break
        assert 0 < naive_torn
        assert naive.stat().st_size > 0
