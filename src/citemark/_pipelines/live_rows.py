r"""Recording ``citemark check`` rows from a live pipeline, one whole line per run.

`RowRecorder` appends one native ``citemark check`` row per call (``id``,
``question``, ``answer``, ``sources`` and optional fields such as ``index_base``) to a
JSONL file or to any object with ``write(str)``. The adapters' recording handlers
(LangChain's ``CitationCallbackHandler(record_to=...)``, LlamaIndex's
``CitationRecordingHandler``) call it once per top-level run, so recording can be
turned on today and the file checked tomorrow with ``citemark check FILE``.

**Why a line is appended whole.** A row is encoded in full first, as strict ASCII
JSON (``allow_nan=False``; a lone surrogate a model sent is escaped as ``\udXXX``, as
``rows.jsonl`` escapes it), then handed to the operating system in a single
``os.write`` on a descriptor opened with ``O_APPEND``, under a lock:

- nothing of a line is ever held in a user-space buffer, so a process killed at any
  moment has either handed the whole line to the kernel or none of it (a buffered
  file loses what is still in its buffer, and a writer that writes a line in pieces,
  as ``json.dump(row, handle)`` does, leaves the pieces written so far);
- with ``O_APPEND`` the kernel moves to the end of the file and writes as one step,
  so lines from other processes appending to the same local file land before or after
  this one, never inside it;
- the lock makes concurrent calls in one process write one after another.

What this does not cover: a write the kernel itself cuts short. POSIX lets a write to
a regular file be partial (a full disk, a file size limit, and on Linux a fatal
signal such as ``SIGKILL`` arriving while the kernel is between two pages of a
write); a pipe or FIFO keeps writes of at most ``PIPE_BUF`` bytes (4096 on Linux)
whole, and a longer line may interleave with another writer's; NFS and other network
file systems do not make ``O_APPEND`` atomic across machines; and nothing here calls
``fsync``, so a power cut may lose lines the kernel had not written out. A short
write is continued with the rest of the line (so one process's line stays whole in
its own file); if the rest fails, the next line starts with a line break, so the cut
line is read as one malformed line and every later row stays readable. A file whose
last line a killed process left cut is detected the same way when a recorder opens
it. A writer object gets one ``write`` call per line under the same lock (and a
``flush`` when it has one); whether that reaches its destination whole is the
writer's business.

**A deleted file is noticed, not written into.** A regular file deleted while the
recorder holds it open would take every later line into a file no one can reach,
each counted as recorded. Before each write the recorder checks the descriptor's link
count (one ``fstat``); at zero the file was deleted, and the recorder opens the path
again, creating the file afresh in its folder, so the line and the later ones land
where a reader looks. When that open fails (the folder was deleted too), the row is a
counted failure, and the next row tries again. A second ``fstat`` after the write
catches a file deleted while the line was written: that line is a counted failure
too. A file with another link left (a hard link elsewhere) is not deleted: its lines
stay reachable there. Renaming the file away is not deleting it: the lines follow it.
A file system that reports no link for a file just opened by its path is not watched.

**Opening never waits.** The path is opened with ``O_NONBLOCK``, then the descriptor
is made blocking again: a FIFO no process reads (or a socket) refuses the open at
once with ``OSError`` ``ENXIO`` and a one-line message, where a blocking open would
wait for a reader forever. A FIFO that has a reader is written to as a pipe: once it
is open, a reader that stops reading without closing it blocks the writes, as it
would for any writer.

**Never raising into the pipeline.** `RowRecorder.record` returns whether the row
was written. A row that is not strict JSON (metadata holding ``NaN`` or an object
JSON cannot represent), one nested deeper than the encoder can follow (metadata
nested a thousand levels deep raises ``RecursionError`` in any recursive encoder),
one whose values raise while they are encoded, a failed write, a deleted file that
cannot be opened again, or a closed recorder counts in `RowRecorder.failures`, its
structural sentence is kept in `RowRecorder.last_failure`, and a `RecordingWarning`
with that sentence is issued; no part of the row reaches either. Only opening the
file can raise, at construction, before any run, and only a mistake in the calling
code (a `ValueError` for an unknown reason code, say) raises from `record`.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import threading
import warnings
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, Self

from pydantic_core import PydanticSerializationError, to_jsonable_python

from citemark._contract.reasons import REASONS
from citemark._contract.syntax import check_index_base

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from types import TracebackType

    from citemark._contract.models import Source

__all__ = ["RecordingWarning", "RowRecorder", "TextWriter"]

# The keys a row is made of; `RowRecorder.record`'s ``extra`` may not reuse them.
_ROW_KEYS: Final = frozenset(
    {"id", "question", "answer", "sources", "index_base", "unassessed", "id_scope"}
)
# The values of a row's ``id_scope``: "run" marks an id that names one run only (a
# LangChain run id, a LlamaIndex query span id), so ``citemark diff`` never matches
# two runs' rows on it. Absent, the id names the question across runs.
_ID_SCOPES: Final = frozenset({"run"})
_PREFIX: Final = "citemark could not record a row: "
_NOT_JSON: Final = _PREFIX + "it is not strict JSON (NaN, Infinity or a value JSON cannot hold)"
_TOO_DEEP: Final = _PREFIX + "it is nested deeper than JSON encoding can follow (RecursionError)"
_CLOSED: Final = _PREFIX + "the recorder is closed"
_DELETED_DURING: Final = _PREFIX + "its file was deleted while the line was written"
_NO_READER: Final = "nothing reads this FIFO (or it is a socket): a recorder cannot append to it"
# How a recording file is opened: appended to, created when missing, never inherited by
# a child process. O_NONBLOCK only for the open itself (see `_open_for_append`).
_FLAGS: Final = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC


class TextWriter(Protocol):
    """Anything a line of text can be written to: an open text file, ``sys.stdout``."""

    def write(self, text: str, /) -> object:
        """Write ``text``."""


class RecordingWarning(UserWarning):
    """A row could not be recorded; the message says why in structural terms only."""


class RowRecorder:
    r"""Append one native ``citemark check`` row per call, each line whole.

    Args:
        target: A path (the file is created if missing and always appended to, never
            truncated) or an object with ``write(str)``, which the recorder does not
            close.

    Raises:
        OSError: the file cannot be opened for appending (at construction only);
            ``errno.ENXIO`` for a FIFO that no process reads, or a socket, refused at
            once rather than waited on.

    Example:
        ```python
        import io

        from citemark import Source
        from citemark.reports import RowRecorder

        out = io.StringIO()
        recorder = RowRecorder(out)
        recorder.record(
            id="q1",
            question="What must be kept?",
            answer="Keep the notices [1].",
            sources=[Source(text="Keep the notices.", doc_id="BSD")],
        )
        print(out.getvalue().endswith("}\n"), recorder.recorded, recorder.failures)
        #> True 1 0
        ```
    """

    def __init__(self, target: str | os.PathLike[str] | TextWriter) -> None:
        """Open ``target`` for appending (see the class docstring)."""
        self._lock = threading.Lock()
        self._writer: TextWriter | None = None
        self._fd: int | None = None
        # The path to open again when the file is deleted, and whether its link count is
        # watched: a regular file's only (a FIFO's reader keeps the lines written to it).
        self._path = ""
        self._watch_links = False
        # Whether the target may end inside a line: the next line then starts with "\n".
        self._cut = False
        self._closed = False
        self._recorded = 0
        self._failures = 0
        self._last_failure: str | None = None
        if isinstance(target, str | os.PathLike):
            self._path = _absolute(os.fspath(target))
            fd, self._watch_links = _open_for_append(self._path)
            self._fd = fd
            # A recorder dropped without close() still releases its descriptor.
            self._release = weakref.finalize(self, os.close, fd)
            self._cut = _ends_inside_a_line(fd, self._path)
        else:
            self._writer = target

    @property
    def recorded(self) -> int:
        """How many rows were written."""
        return self._recorded

    @property
    def failures(self) -> int:
        """How many rows could not be written (each also issued a `RecordingWarning`)."""
        return self._failures

    @property
    def last_failure(self) -> str | None:
        """The structural sentence of the latest failure, or None when there was none."""
        return self._last_failure

    def record(  # noqa: PLR0913 - one keyword per field of a native row
        self,
        *,
        answer: str | Mapping[str, Any],
        sources: Sequence[Source],
        question: str = "",
        id: str | int | None = None,  # noqa: A002 - the row's own field name
        index_base: int | None = None,
        unassessed: str | None = None,
        extra: Mapping[str, Any] | None = None,
        id_scope: str | None = None,
    ) -> bool:
        """Append one row; never raise for what the row holds or for the write.

        Args:
            answer: The answer as the pipeline produced it: its text, or a structured
                answer as a JSON object.
            sources: The sources in the order the model saw them, so that ``[n]``
                names ``sources[n - 1]`` (``sources[n]`` with ``index_base=0``).
            question: The question; empty when the run had none.
            id: The row's id (a run id, a query's span id).
            index_base: The number the model saw on the first source, 0 or 1; left out
                of the row when None (``citemark check`` then uses its own).
            unassessed: A reason code of `citemark.evaluation.REASONS` for a run that
                cannot be checked (``numbering_unknown``, ``chain_error``,
                ``no_answer``); written as the row's ``unassessed`` field.
            extra: More fields for the row (how its numbering was recovered, say);
                ``citemark check`` ignores fields it does not read.
            id_scope: ``"run"`` when ``id`` names this one run only (a run id, a
                span or trace id: a new one every run), written as the row's
                ``"id_scope": "run"`` so that ``citemark diff`` matches two days' rows
                by question instead; None (the default) leaves the field out, for an
                id that names the question across runs.

        Returns:
            True when the whole line was written; False when it was not (see
            `failures` and `last_failure`).

        Raises:
            ValueError: ``index_base`` is not 0 or 1, ``unassessed`` is not a known
                code, ``id_scope`` is neither ``"run"`` nor None, or ``extra`` reuses
                a field of the row: mistakes in the calling code, not in the run. What
                the row holds never raises: values JSON cannot hold, values nested
                too deep to encode and values whose own serializer raises are counted
                failures.
        """
        _check_arguments(
            index_base=index_base, unassessed=unassessed, extra=extra, id_scope=id_scope
        )
        try:
            row = _row(
                answer=answer,
                sources=sources,
                question=question,
                row_id=id,
                index_base=index_base,
                unassessed=unassessed,
                extra=extra,
                id_scope=id_scope,
            )
            text = json.dumps(row, ensure_ascii=True, allow_nan=False, default=_jsonable)
        except RecursionError:
            # Before ValueError and the rest: a recursive encoder's depth limit, which
            # metadata nested a thousand deep reaches (the stack is unwound by now).
            return self._fail(_TOO_DEEP)
        except (ValueError, TypeError, PydanticSerializationError):
            return self._fail(_NOT_JSON)
        except Exception as exc:  # noqa: BLE001 - a value's own serializer may raise anything
            return self._fail(f"{_PREFIX}encoding it raised {type(exc).__name__}")
        return self._append(text.encode("ascii") + b"\n")

    def close(self) -> None:
        """Close the file (a writer object is left open); later rows are failures."""
        with self._lock:
            self._closed = True
            if self._fd is not None:
                self._fd = None
                self._release()

    def __enter__(self) -> Self:
        """Use the recorder as a context manager that closes it."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Close the recorder."""
        self.close()

    # --- writing -------------------------------------------------------------------

    def _append(self, line: bytes) -> bool:
        with self._lock:
            failure = _CLOSED if self._closed else self._write(line)
            if failure is None:
                self._recorded += 1
                return True
        return self._fail(failure)

    def _write(self, line: bytes) -> str | None:
        """Write ``line`` whole, holding the lock; return a failure sentence or None."""
        try:
            if self._fd is not None:
                failure = self._write_file(self._fd, line)
                if failure is not None:
                    return failure
            elif self._writer is not None:
                self._writer.write((b"\n" + line if self._cut else line).decode("ascii"))
                flush = getattr(self._writer, "flush", None)
                if callable(flush):
                    flush()
        except OSError as exc:
            return f"{_PREFIX}the write failed ({_code(exc)})"
        except Exception as exc:  # noqa: BLE001 - a writer object may raise anything
            return f"{_PREFIX}the writer raised {type(exc).__name__}"
        self._cut = False
        return None

    def _write_file(self, fd: int, line: bytes) -> str | None:
        """Append ``line`` to the file, or say why it is not in the file.

        A regular file with no link left was deleted: it is opened again by its path
        first, and a line written while it was being deleted is a failure, since no
        reader can reach it. One ``fstat`` before and one after the write.
        """
        if self._watch_links and os.fstat(fd).st_nlink == 0:
            reopened = self._reopen()
            if isinstance(reopened, str):
                return reopened
            fd = reopened
        self._write_fd(fd, b"\n" + line if self._cut else line)
        if self._watch_links and os.fstat(fd).st_nlink == 0:
            return _DELETED_DURING
        return None

    def _reopen(self) -> int | str:
        """Open the deleted file's path again, holding the lock: its descriptor, or why not."""
        try:
            fd, watch_links = _open_for_append(self._path)
        except OSError as exc:
            return f"{_PREFIX}its file was deleted and cannot be opened again ({_code(exc)})"
        try:
            cut = _ends_inside_a_line(fd, self._path)
        except OSError as exc:
            os.close(fd)
            return f"{_PREFIX}its file was deleted and cannot be opened again ({_code(exc)})"
        self._release()  # the deleted file's descriptor
        self._fd, self._watch_links, self._cut = fd, watch_links, cut
        self._release = weakref.finalize(self, os.close, fd)
        return fd

    def _write_fd(self, fd: int, data: bytes) -> None:
        view = memoryview(data)
        # One os.write normally takes the whole line; a short write (POSIX allows it)
        # is continued, and the file counts as cut until the line is complete.
        while view:
            written = os.write(fd, view)
            view = view[written:]
            self._cut = bool(view)

    def _fail(self, sentence: str) -> bool:
        with self._lock:
            self._failures += 1
            self._last_failure = sentence
        warnings.warn(sentence, RecordingWarning, stacklevel=2)
        return False


def _check_arguments(
    *,
    index_base: int | None,
    unassessed: str | None,
    extra: Mapping[str, Any] | None,
    id_scope: str | None,
) -> None:
    """Refuse the calling code's mistakes, before anything of the row is encoded.

    Raises:
        ValueError: see `RowRecorder.record`.
    """
    if id_scope is not None and id_scope not in _ID_SCOPES:
        msg = "id_scope must be 'run' or None"
        raise ValueError(msg)
    if index_base is not None:
        check_index_base(index_base)
    for key in extra or {}:
        if key in _ROW_KEYS:
            msg = f"extra may not set the row's own field {key}"
            raise ValueError(msg)
    if unassessed is not None and unassessed not in REASONS:
        msg = "unassessed must be a code of citemark.evaluation.REASONS"
        raise ValueError(msg)


def _row(  # noqa: PLR0913 - the fields of `RowRecorder.record`
    *,
    answer: str | Mapping[str, Any],
    sources: Sequence[Source],
    question: str,
    row_id: str | int | None,
    index_base: int | None,
    unassessed: str | None,
    extra: Mapping[str, Any] | None,
    id_scope: str | None,
) -> dict[str, Any]:
    """The row as a dict, its arguments checked by `_check_arguments` already."""
    row: dict[str, Any] = {}
    if row_id is not None:
        row["id"] = row_id
    if id_scope is not None:
        row["id_scope"] = id_scope
    row["question"] = question
    row["answer"] = answer if isinstance(answer, str) else dict(answer)
    row["sources"] = [source.model_dump() for source in sources]
    if index_base is not None:
        row["index_base"] = index_base
    row.update(extra or {})
    if unassessed is not None:
        row["unassessed"] = unassessed
    return row


def _jsonable(value: object) -> object:
    """What JSON cannot hold natively (a datetime, a UUID), as pydantic writes it."""
    return to_jsonable_python(value)


def _code(exc: OSError) -> str:
    """An OS error's symbolic code (``ENOENT``): a structural fact, never its text."""
    return f"{type(exc).__name__}, {errno.errorcode.get(exc.errno or 0, 'no errno')}"


def _absolute(path: str) -> str:
    """``path`` made absolute against today's working folder, to open it again later.

    Joined, not normalized, so that ``..`` after a symbolic link means what the kernel
    makes it mean; left relative when the working folder itself is gone.
    """
    if Path(path).is_absolute():
        return path
    try:
        return str(Path.cwd() / path)
    except OSError:
        return path


def _open_for_append(path: str) -> tuple[int, bool]:
    """Open ``path`` to append to without ever waiting; (descriptor, watch its links?).

    ``O_NONBLOCK`` makes the open of a FIFO no process reads fail at once with
    ``ENXIO`` (a blocking open waits for a reader forever); the descriptor is made
    blocking again for the writes. The link count is worth watching for a regular
    file that shows one now, just opened by its path: a file system that reports no
    links for a file it holds (some network and FUSE ones) would otherwise make
    every row look deleted.

    Raises:
        OSError: the open failed; ``ENXIO`` with a one-line message for a FIFO no
            process reads, or a socket.
    """
    try:
        fd = os.open(path, _FLAGS | os.O_NONBLOCK, 0o666)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise OSError(errno.ENXIO, _NO_READER, path) from None
        raise
    try:
        os.set_blocking(fd, True)
        info = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    return fd, stat.S_ISREG(info.st_mode) and info.st_nlink > 0


def _ends_inside_a_line(fd: int, path: str) -> bool:
    """Whether a regular file's last byte is not a line break (a cut last line).

    The last byte is read through a second, non-blocking descriptor on the path; if
    the path names another file by then, the answer is yes: a line break first costs
    at most one blank line, which ``citemark check`` skips.
    """
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
        return False
    reader = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        seen = os.fstat(reader)
        if (seen.st_dev, seen.st_ino) != (info.st_dev, info.st_ino):
            return True
        return os.pread(reader, 1, info.st_size - 1) != b"\n"
    finally:
        os.close(reader)
