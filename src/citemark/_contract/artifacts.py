"""What every artifact needs: who produced it, what it read, and a write that cannot tear.

SPEC §1, contract 4: every artifact says what produced it. `ModelIdentity` is the
record of one model behind one prompt (provider, model name, SHA-256 of the prompt
template); the echo check, the calibration and the evaluation report all use it, so
two runs can be compared field by field. `dataset_sha256` hashes the bytes an
evaluation read.

`AtomicFile` is the only way citemark writes an artifact, whole with
`write_report_atomically` or streamed piece by piece: the bytes go to a temporary
file in the destination's own folder, are flushed and fsynced, and the file is
renamed over the destination with `os.replace`, which is atomic on POSIX and
Windows. A process killed at any moment leaves the old report or none,
never half of one (SPEC §8). It sits in the lowest layer so that the echo check and
the calibration, below the reports layer, can use it too.

Two more guarantees live here, in the mechanism, so that every command has them:

- *Stale temporaries go.* A killed writer leaves its hidden temporary file. While an
  `AtomicFile` is open it holds an exclusive ``flock`` on its temporary; opening one
  for ``name`` first removes every ``.<name>.<8 characters>.tmp`` beside it whose lock can
  be taken (its writer is dead), so a live writer's file is never touched.
- *A set appears together.* Inside `publishing_together`, a `AtomicFile.commit`
  seals the file (flushed, fsynced, still hidden and locked) and the renames all
  happen when the block ends, in commit order; an error before then removes every
  sealed temporary and publishes none. A name the set does not write but owns (a
  format an earlier run wrote, `remove_on_publish`) is removed in the same publish.

Reading an artifact back is bounded too: `open_regular` refuses what is not a
regular file (``/dev/zero``, a FIFO, a folder) without blocking, and `bounded_lines`
reads a JSONL artifact one line at a time, refusing a line past a cap before it is
held whole.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import os
import re
import stat
import tempfile
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated, Final

from pydantic import BaseModel, ConfigDict, StringConstraints
from pydantic_core import PydanticSerializationError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows has no flock
    _flock = None
else:
    _flock = fcntl.flock

if TYPE_CHECKING:
    import io
    from collections.abc import Iterable, Iterator
    from types import TracebackType
    from typing import BinaryIO, Self

__all__ = [
    "DEFAULT_RESULTS_DIR",
    "AtomicFile",
    "LineTooLongError",
    "ModelIdentity",
    "NotRegularFileError",
    "Sha256",
    "bounded_lines",
    "citemark_version",
    "dataset_sha256",
    "identity_of",
    "open_regular",
    "publishing_together",
    "remove_on_publish",
    "remove_stale_temporaries",
    "utc_now",
    "write_report_atomically",
]

DEFAULT_RESULTS_DIR: Final = Path("results")
"""Where citemark's reports go unless told otherwise: ``results/``, relative to the
working directory. The repository git-ignores it, and a test checks that it does:
new report fields may be added with defaults only while no report outlives the code
that reads it."""

Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
"""A SHA-256 hex digest, lowercase."""

# Large reports are written in slices, so a multi-gigabyte bytes object is not
# copied again by the file layer.
_CHUNK: Final = 1 << 20
# The mode a fresh report gets; mkstemp's own 0o600 would hide it from other users.
_REPORT_MODE: Final = 0o644
# A temporary file's name as tempfile.mkstemp makes it: ".<name>.<8 characters>.tmp".
_RANDOM_PART: Final = r"\.[a-z0-9_]{8}\.tmp"
# The files sealed inside the innermost `publishing_together` block, if any.
_PENDING: contextvars.ContextVar[list[AtomicFile] | None] = contextvars.ContextVar(
    "citemark_pending_publish", default=None
)
# The names the innermost `publishing_together` block removes when it publishes.
_REMOVALS: contextvars.ContextVar[list[Path] | None] = contextvars.ContextVar(
    "citemark_pending_removals", default=None
)


class ModelIdentity(BaseModel):
    """Which model, behind which prompt, produced a result.

    Two results are comparable only when their identities are equal: another
    provider, another model or another prompt is another instrument.

    Example:
        ```python
        from citemark import FaithfulnessJudge, ModelIdentity
        from citemark.testing import ScriptedChat

        judge = FaithfulnessJudge(ScriptedChat([], provider="ollama", model_name="llama3.1"))
        identity = ModelIdentity.of(judge)
        print(identity.provider, identity.model, len(identity.prompt_sha256))
        #> ollama llama3.1 64
        ```
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    provider: str
    """Who serves the model, as its chat reports it."""

    model: str
    """The model's name, as its chat reports it."""

    prompt_sha256: Sha256
    """The SHA-256 of the prompt template the model was given."""

    @classmethod
    def of(cls, component: object) -> ModelIdentity:
        """Read the identity of a `Synthesizer`, a `FaithfulnessJudge` or a look-alike.

        Raises:
            TypeError: ``component`` exposes no identity (see `identity_of`).
        """
        identity = identity_of(component)
        if identity is None:
            msg = f"a {type(component).__name__} exposes no provider, model and prompt hash"
            raise TypeError(msg)
        return identity


def identity_of(component: object) -> ModelIdentity | None:
    """Return the identity ``component`` exposes, or ``None`` when it exposes none.

    A judge exposes ``provider``, ``model_name`` and ``prompt_sha256`` itself; a
    synthesizer exposes ``prompt_sha256`` and a ``chat`` with ``provider`` and
    ``model_name``. A bound method (``synthesizer.synthesize``) is read through the
    object it is bound to. Anything else, such as a plain function, has no identity.
    """
    component = getattr(component, "__self__", component)
    prompt_hash = getattr(component, "prompt_sha256", None)
    if not isinstance(prompt_hash, str):
        return None
    for holder in (component, getattr(component, "chat", None)):
        provider = getattr(holder, "provider", None)
        model = getattr(holder, "model_name", None)
        if isinstance(provider, str) and isinstance(model, str):
            return ModelIdentity(provider=provider, model=model, prompt_sha256=prompt_hash)
    return None


def citemark_version() -> str:
    """The installed citemark's version, as its distribution metadata gives it."""
    try:
        return metadata.version("citemark")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def utc_now() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)


def dataset_sha256(data: bytes | str | os.PathLike[str]) -> str:
    """Return the SHA-256 hex digest of an input: ``bytes`` as given, else a file's bytes.

    A file is read in 1 MiB pieces, so hashing a large dataset costs constant memory.

    Example:
        ```python
        import hashlib

        from citemark import dataset_sha256

        rows = b'{"question": "q", "answer": "a [1]"}'
        print(dataset_sha256(rows) == hashlib.sha256(rows).hexdigest())
        #> True
        ```
    """
    digest = hashlib.sha256()
    if isinstance(data, bytes):
        digest.update(data)
        return digest.hexdigest()
    with open(data, "rb") as handle:  # noqa: PTH123 - str and PathLike alike
        while piece := handle.read(_CHUNK):
            digest.update(piece)
    return digest.hexdigest()


def write_report_atomically(path: str | os.PathLike[str], content: BaseModel | bytes | str) -> Path:
    """Write a report so that readers only ever see the old file or the whole new one.

    The content goes to a temporary file in the destination's folder (created if
    missing), is flushed and fsynced, and replaces the destination with
    `os.replace`; the folder is then fsynced where the platform allows, so the
    rename itself survives a crash. If writing fails, the temporary file is removed
    and the error is raised. If the process is killed, the destination still holds
    its previous content (or does not exist), and a hidden ``.<name>.*.tmp`` file
    may be left behind; the next write to the same destination removes it (see
    `remove_stale_temporaries`). Inside `publishing_together` the rename waits for
    the end of the block.

    Args:
        path: The report's destination.

        content: A pydantic model (written as indented JSON with a final newline),
            ``bytes`` (written as is) or ``str`` (written as UTF-8).

    Returns:
        The destination path.

    Example:
        ```python
        import json
        import tempfile
        from pathlib import Path

        from citemark import write_report_atomically

        with tempfile.TemporaryDirectory() as folder:
            path = write_report_atomically(Path(folder) / "report.json", b'{"rows": 3}')
            print(json.loads(path.read_bytes()), sorted(p.name for p in Path(folder).iterdir()))
        #> {'rows': 3} ['report.json']
        ```
    """
    if isinstance(content, BaseModel):
        data = _model_json(content)
    elif isinstance(content, str):
        # A lone surrogate (a model's JSON "\ud800", a non-UTF-8 file name decoded
        # with surrogateescape) is written as its \uXXXX escape: in JSON text that
        # is the very escape that reads back as the same string.
        data = content.encode("utf-8", "backslashreplace")
    else:
        data = content
    destination = Path(path)
    destination.parent.mkdir(parents=True, exist_ok=True)
    with AtomicFile(destination) as file:
        view = memoryview(data)
        for start in range(0, len(view), _CHUNK):
            file.write(view[start : start + _CHUNK])
        file.commit()
    return destination


def _model_json(model: BaseModel) -> bytes:
    r"""A model as indented JSON in UTF-8, even when it holds a lone surrogate.

    pydantic refuses to serialize a ``str`` holding a lone surrogate, which a model
    reply may (JSON ``"\ud800"``) and a file name does on Linux (bytes that are not
    UTF-8, decoded with ``surrogateescape``). Such a model is dumped to plain data
    and written with each lone surrogate as its ``\uXXXX`` escape: valid UTF-8 and
    valid JSON that reads back as the same string.
    """
    try:
        return (model.model_dump_json(indent=2) + "\n").encode("utf-8")
    except PydanticSerializationError:
        plain = model.model_dump(mode="json")
    text = json.dumps(plain, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    return text.encode("utf-8", "backslashreplace")


class AtomicFile:
    r"""A file written in pieces that appears whole at its destination, or not at all.

    The mechanism behind `write_report_atomically`, for an artifact streamed as it is
    produced (``citemark check``'s ``rows.jsonl``). The bytes go to a hidden
    ``.<name>.*.tmp`` file beside the destination, whose folder must exist; `commit`
    flushes and fsyncs it, gives it the destination's mode (``0o644`` for a new
    file), renames it over the destination with `os.replace` and fsyncs the folder.
    Leaving the ``with`` block without a commit, or a commit that fails, removes the
    temporary file and leaves the destination untouched; a killed process leaves the
    hidden file behind and the destination untouched, and the next `AtomicFile` for
    the same destination removes it (see `remove_stale_temporaries`).

    While it is open, the temporary file is held under an exclusive ``flock`` (POSIX),
    which is how a later writer tells a dead writer's leftover from a live writer's
    file. Inside `publishing_together`, `commit` seals the file and the rename waits
    for the end of the block.

    Example:
        ```python
        import tempfile
        from pathlib import Path

        from citemark._contract.artifacts import AtomicFile

        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "rows.jsonl"
            with AtomicFile(path) as rows:
                rows.write(b'{"row": 1}\n')
                print(path.exists())
                digest = rows.commit()
            print(path.read_bytes(), len(digest))
        #> False
        #> b'{"row": 1}\n' 64
        ```
    """

    def __init__(self, path: Path) -> None:
        """Remove what dead writers left for ``path``; open a locked temporary file beside it.

        Raises:
            OSError: the folder does not exist or cannot be written.
        """
        self.path = path
        self._digest = hashlib.sha256()
        remove_stale_temporaries(path.parent, (path.name,))
        self._temporary, self._handle = _locked_temporary(path)
        self._committed = False
        self._published = False

    @property
    def temporary(self) -> Path:
        """The hidden file the bytes go to until the commit renames it."""
        return self._temporary

    def write(self, data: bytes | memoryview) -> None:
        """Append ``data`` to the file (and to the SHA-256 `commit` returns)."""
        self._digest.update(data)
        self._handle.write(data)

    def commit(self) -> str:
        """Make the file appear at its destination; return the SHA-256 of its bytes.

        Inside `publishing_together` the file is only sealed here (flushed, fsynced,
        its mode set, still hidden and locked); the block's end renames it.
        """
        try:
            mode = self.path.stat().st_mode & 0o777
        except FileNotFoundError:
            mode = _REPORT_MODE
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self._temporary.chmod(mode)
        pending = _PENDING.get()
        if pending is None:
            self._publish()
        else:
            pending.append(self)
        self._committed = True
        return self._digest.hexdigest()

    def _publish(self) -> None:
        """Rename the sealed file into place, then release its lock."""
        self._temporary.replace(self.path)
        self._published = True
        self._handle.close()
        _fsync_folder(self.path.parent)

    def _discard(self) -> None:
        """Close and remove the temporary file; the destination is untouched."""
        try:
            self._handle.close()
        finally:
            with contextlib.suppress(FileNotFoundError):
                self._temporary.unlink()

    def __enter__(self) -> Self:
        """Return the file itself."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Remove the temporary file unless `commit` succeeded.

        The removal runs even when closing fails: on a full disk the close flushes
        what the failed write left buffered and raises again, and a temporary file
        left behind would keep the disk full. A file sealed inside
        `publishing_together` is left to the block, which publishes or removes it.
        """
        if not self._committed:
            try:
                self._discard()
            except OSError:
                if exc is None:
                    raise


@contextlib.contextmanager
def publishing_together() -> Iterator[None]:
    """Publish every `AtomicFile` committed inside the block together, at its end.

    Each commit inside the block only seals its file (hidden, fsynced, locked). When
    the block ends normally, the files are renamed into place in commit order, so
    the file committed last (a run's ``report.json``, which names the others)
    appears last. When the block ends with an exception, KeyboardInterrupt
    included, or a rename fails, every file not yet renamed is removed and the
    error propagates: no temporary file is left, and nothing new appears beyond
    what was already renamed. POSIX has no rename of several files at once, so a
    process killed between two renames still leaves some new files beside old
    ones; the last file (``report.json``) says which set it belongs to.

    Example:
        ```python
        import tempfile
        from pathlib import Path

        from citemark._contract.artifacts import AtomicFile, publishing_together

        with tempfile.TemporaryDirectory() as folder:
            with publishing_together():
                for name in ("a.txt", "b.txt"):
                    with AtomicFile(Path(folder) / name) as file:
                        file.write(b"x")
                        file.commit()
                print(sorted(p.name for p in Path(folder).iterdir() if not p.name.startswith(".")))
            print(sorted(p.name for p in Path(folder).iterdir()))
        #> []
        #> ['a.txt', 'b.txt']
        ```
    """
    pending: list[AtomicFile] = []
    removals: list[Path] = []
    token = _PENDING.set(pending)
    removals_token = _REMOVALS.set(removals)
    try:
        yield
    except BaseException:
        _PENDING.reset(token)
        _REMOVALS.reset(removals_token)
        _discard_all(pending)
        raise
    _PENDING.reset(token)
    _REMOVALS.reset(removals_token)
    try:
        # The names the set owns but does not write go first: a removal that fails
        # publishes nothing, and the last file renamed still says which set is there.
        _remove_names(removals)
        while pending:
            pending[0]._publish()  # noqa: SLF001 - the same module's mechanism
            pending.pop(0)
    except BaseException:
        _discard_all(pending)
        raise


def remove_on_publish(paths: Iterable[Path]) -> None:
    """Remove ``paths`` when the enclosing `publishing_together` block publishes its set.

    A run owns every name a run of its kind can write; the ones it does not write
    this time (a format an earlier run wrote) are removed in its publish, before its
    files are renamed into place, so the folder then holds its set and nothing of
    another run's. A block that fails removes nothing. A symlink at a name is removed,
    never followed; a name that is absent is skipped. Outside a block, the paths are
    removed at once.

    Raises:
        OSError: a name cannot be removed (e.g. a folder stands there); inside a
            block, nothing of the set is then published.
    """
    removals = _REMOVALS.get()
    if removals is None:
        _remove_names(list(paths))
    else:
        removals.extend(paths)


def _remove_names(paths: list[Path]) -> None:
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    if paths:
        _fsync_folder(paths[0].parent)


def _discard_all(files: list[AtomicFile]) -> None:
    """Remove every sealed, unpublished temporary file; the first error is raised after."""
    errors: list[OSError] = []
    for file in files:
        if not file._published:  # noqa: SLF001 - the same module's mechanism
            try:
                file._discard()  # noqa: SLF001
            except OSError as error:
                errors.append(error)
    files.clear()
    if errors:
        raise errors[0]


def _locked_temporary(path: Path) -> tuple[Path, IO[bytes]]:
    """Create the hidden temporary file for ``path`` and hold an exclusive lock on it.

    A cleaner may take the lock of a just-created file before its writer does and
    remove it; the writer then finds its name gone (or another file under it) once
    it holds the lock, and makes a new one. On a file system that refuses ``flock``
    the file is written unlocked, as on Windows. Whatever interrupts this (even
    KeyboardInterrupt) leaves no file behind.
    """
    while True:
        descriptor, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            handle = os.fdopen(descriptor, "wb")
        except BaseException:
            os.close(descriptor)
            _unlink_quietly(name)
            raise
        try:
            if _flock is None or not _locked(descriptor):
                return Path(name), handle
            if os.stat(name).st_ino == os.fstat(descriptor).st_ino:  # noqa: PTH116 - a str name
                return Path(name), handle
        except FileNotFoundError:
            pass  # a cleaner removed it before the lock was ours: make another
        except BaseException:
            handle.close()
            _unlink_quietly(name)
            raise
        handle.close()


def _locked(descriptor: int) -> bool:
    """Take an exclusive ``flock`` on ``descriptor``, waiting; False where flock is refused."""
    assert _flock is not None  # noqa: S101 - checked by the caller
    try:
        _flock(descriptor, fcntl.LOCK_EX)
    except OSError:  # e.g. ENOLCK on a network file system
        return False
    return True


def _unlink_quietly(name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name)  # noqa: PTH108 - a str name


def remove_stale_temporaries(folder: Path, names: Iterable[str]) -> int:
    """Remove the hidden temporary files dead writers left for ``names`` in ``folder``.

    Only files of `AtomicFile`'s own naming are touched (``.<name>.<8 characters>.tmp``,
    as `tempfile.mkstemp` makes them), and only those no live writer holds: each is
    opened and its exclusive ``flock`` tried without waiting; a file whose lock is
    held belongs to a running `AtomicFile` (in this process or another) and is kept.
    Where ``flock`` does not exist (Windows), a file still open elsewhere cannot be
    removed there anyway, and the removal is skipped. Every `AtomicFile` calls this
    for its own destination when it opens. Returns how many were removed.
    """
    patterns = [re.compile(rf"\.{re.escape(name)}{_RANDOM_PART}") for name in names]
    removed = 0
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        for entry in os.scandir(folder):
            if entry.is_file(follow_symlinks=False) and any(
                pattern.fullmatch(entry.name) for pattern in patterns
            ):
                removed += _remove_if_unlocked(entry.path)
    return removed


def _remove_if_unlocked(name: str) -> bool:
    """Remove ``name`` if no process holds its lock; whether it was removed."""
    if _flock is None:
        try:
            os.unlink(name)  # noqa: PTH108 - a str name
        except OSError:  # gone, or open in another process (Windows refuses)
            return False
        return True
    try:
        descriptor = os.open(name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        try:
            _flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: a live writer's file
            return False
        try:
            if Path(name).lstat().st_ino != os.fstat(descriptor).st_ino:
                return False
            os.unlink(name)  # noqa: PTH108 - a str name
        except OSError:
            return False
        return True
    finally:
        os.close(descriptor)


def _fsync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable; a no-op where folders cannot be opened."""
    if os.name != "posix":  # Windows cannot open a folder for fsync
        return
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):  # some file systems refuse fsync on a folder
            os.fsync(descriptor)
    finally:
        os.close(descriptor)


class NotRegularFileError(OSError):
    """An artifact to read is not a regular file (a device, a FIFO, a folder, a socket)."""


class LineTooLongError(ValueError):
    """A line of a JSONL artifact is longer than its reader's cap.

    Args:
        number: The line's number, from 1.
    """

    def __init__(self, number: int) -> None:
        super().__init__(f"line {number} is too long")
        self.number = number


def open_regular(path: Path) -> io.BufferedReader:
    """Open ``path`` for reading in binary, refusing what is not a regular file.

    The file is opened without blocking (a FIFO would wait for a writer) and then
    looked at through its descriptor, so what is checked is what is read. A symlink
    is followed: one to a regular file is read, one to ``/dev/zero`` is refused.

    Raises:
        NotRegularFileError: it is not a regular file.
        OSError: it cannot be opened (absent, not permitted).
    """
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise NotRegularFileError(path.name)  # noqa: TRY301 - closed just below
        if hasattr(os, "set_blocking"):
            os.set_blocking(descriptor, True)
        return open(descriptor, "rb")  # noqa: PTH123 - a descriptor; the caller closes it
    except BaseException:
        os.close(descriptor)
        raise


def bounded_lines(handle: BinaryIO, max_bytes: int) -> Iterator[tuple[int, bytes]]:
    """The lines of ``handle`` with their numbers (from 1), each at most ``max_bytes``.

    A line is read at most ``max_bytes`` plus one bytes at a time, so memory stays
    bounded whatever the file holds (one line of a gigabyte, or no newline at all).

    Raises:
        LineTooLongError: a line, its newline not counted, is longer than ``max_bytes``.
    """
    number = 0
    while line := handle.readline(max_bytes + 1):
        number += 1
        if len(line) > max_bytes and not (len(line) == max_bytes + 1 and line.endswith(b"\n")):
            raise LineTooLongError(number)
        yield number, line
