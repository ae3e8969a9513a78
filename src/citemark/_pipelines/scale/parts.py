"""The Ray engine's parts: the hidden folder workers write to, and the actor that joins them.

Each run's workers write their parts to ``.citemark-parts.<run id>`` inside the
output folder (`parts_folder`); the driver holds a lock on it for the whole run, so a
later run, local or Ray, can tell a dead run's folder (whose lock it can take, and
then removes: `remove_dead_parts`) from a live one's, and
``citemark.reports.check_output_set`` can report one (`leftover_parts`).
`Assembler`, a Ray actor placed on the driver's node, appends each
shard's parts to the outputs in input order as they arrive, by byte copy: it hashes
every byte it copies, once for the whole file (the SHA-256 ``report.json`` records)
and once for the part (checked against what the worker reported), and removes the
part. The driver itself never reads a part.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Final, NamedTuple

from citemark._contract.errors import PartMismatchError

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from typing import BinaryIO

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: folders are left to the user
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "PARTS_PREFIX",
    "Assembler",
    "PartFacts",
    "PartMismatchError",
    "leftover_parts",
    "parts_folder",
    "remove_dead_parts",
]

PARTS_PREFIX: Final = ".citemark-parts."
_MAKING_PREFIX: Final = ".citemark-making-parts."
"""A parts folder's name until its lock is held (no scan for ``PARTS_PREFIX`` matches it)."""
_GONE_SUFFIX: Final = ".gone"
_LOCK: Final = ".lock"
_NEW_LOCK: Final = ".lock.new"
"""The lock file's name until it is locked (a folder being made holds only this one)."""
_REMOVE_TRIES: Final = 3
_BLOCK: Final = 1 << 20


class PartFacts(NamedTuple):
    """One part file a worker wrote: its path, byte count and SHA-256."""

    path: str
    size: int
    sha256: str


@contextlib.contextmanager
def parts_folder(out: Path, run_id: str) -> Iterator[Path]:
    """The run's parts folder, locked while the run lasts and removed at its end.

    First, every parts folder a dead run left in ``out`` is removed
    (`remove_dead_parts`). The folder is made under another name, and its lock file
    too, locked before it is named ``.lock``: a scan meets a ``.lock`` only once a
    run has locked it, so a live run's folder is never taken for a dead one. Then the
    folder is renamed into place. At the end it is renamed away before it is
    removed: a worker still writing (one the driver has just killed) cannot put a
    new part into it.
    """
    remove_dead_parts(out)
    folder = out / f"{PARTS_PREFIX}{run_id}"
    making = out / f"{_MAKING_PREFIX}{run_id}"
    making.mkdir()
    lock = (making / _NEW_LOCK).open("wb")
    try:
        if fcntl is not None:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        (making / _NEW_LOCK).rename(making / _LOCK)  # a lock file is seen locked only
        making.rename(folder)
        yield folder
    finally:
        gone = folder.with_name(f"{folder.name}{_GONE_SUFFIX}")
        for held in (making, folder):
            with contextlib.suppress(OSError):
                held.rename(gone)
        _remove_tree(gone)
        lock.close()


def remove_dead_parts(out: Path) -> int:
    """Remove every parts folder a dead run left in ``out``; return how many.

    A folder is a dead run's when no process holds its lock (a live run holds it
    from before its folder has its name to the end), or when it has no lock file at
    all (a removal cut short; but a folder still being made, which has no ``.lock``
    until its run holds it, is left). Symbolic links and files of that naming are not
    touched. Any local or Ray run calls this when it opens its output folder.
    """
    removed = 0
    for stale in _parts_entries(out):
        removed += _remove_if_dead(stale)
    return removed


def leftover_parts(out: Path) -> list[str]:
    """The names of the parts folders in ``out`` that no live run holds: a dead run's.

    Only a lock's state is read (a shared lock is tried and given back at once); nothing
    is removed.
    """
    return sorted(entry.name for entry in _parts_entries(out) if _is_dead(entry))


def _parts_entries(out: Path) -> list[Path]:
    """The real folders (no symbolic link) of the parts folders' naming in ``out``.

    A folder still being made (``_MAKING_PREFIX``) is among them: one whose lock no
    process holds was left by a run killed as it made it.
    """
    try:
        entries = list(os.scandir(out))
    except OSError:  # no folder yet, or not one
        return []
    return sorted(
        Path(entry.path)
        for entry in entries
        if entry.name.startswith((PARTS_PREFIX, _MAKING_PREFIX))
        and entry.is_dir(follow_symlinks=False)
    )


def _is_dead(folder: Path) -> bool:
    """Whether no live run holds ``folder``'s lock (without taking it for long)."""
    if fcntl is None:
        return False
    descriptor = _open_lock(folder)
    if descriptor is None:
        return not _being_made(folder)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return False  # a live run holds it
    finally:
        os.close(descriptor)
    return True


def _open_lock(folder: Path) -> int | None:
    """The folder's lock file, opened for reading; None where it has none."""
    try:
        return os.open(folder / _LOCK, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None


def _being_made(folder: Path) -> bool:
    return folder.name.startswith(_MAKING_PREFIX)


def _remove_if_dead(folder: Path) -> int:
    if fcntl is None:
        return 0
    descriptor = _open_lock(folder)
    if descriptor is None:
        if _being_made(folder):
            return 0  # its run may not have opened its lock yet
        _remove_tree(folder)
        return 1
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return 0  # a live run holds it
        _remove_tree(folder)
        return 1
    finally:
        os.close(descriptor)


def _remove_tree(folder: Path) -> None:
    """Remove a parts folder and what it holds; a folder already gone is no error."""
    for _ in range(_REMOVE_TRIES):  # a part created while the folder was emptied
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            return


class Assembler:
    """Joins parts into outputs in input order (a Ray actor on the driver's node).

    Args:
        targets: For each output's name, the file the parts are appended to (an
            output's hidden temporary file, which the driver commits).
    """

    def __init__(self, targets: Mapping[str, str]) -> None:
        self._files: dict[str, BinaryIO] = {}
        for name, path in targets.items():
            self._files[name] = Path(path).open("ab")  # noqa: SIM115 - closed in finish
        self._digests = {name: hashlib.sha256() for name in targets}
        self._sizes = dict.fromkeys(targets, 0)

    def append(self, index: int, parts: Mapping[str, PartFacts]) -> None:
        """Append shard ``index``'s parts to their outputs and remove them.

        Raises:
            PartMismatchError: a part's size or SHA-256 is not what its worker reported.
        """
        for name, facts in parts.items():
            out, whole, own = self._files[name], self._digests[name], hashlib.sha256()
            size = 0
            with Path(facts.path).open("rb") as part:
                while block := part.read(_BLOCK):
                    own.update(block)
                    whole.update(block)
                    out.write(block)
                    size += len(block)
            if size != facts.size or own.hexdigest() != facts.sha256:
                msg = f"part {index} of {name} is not the {facts.size} bytes its worker wrote"
                raise PartMismatchError(msg)
            self._sizes[name] += size
            os.unlink(facts.path)  # noqa: PTH108 - a str path

    def finish(self) -> dict[str, tuple[int, str]]:
        """Flush and close the outputs; return each one's byte count and SHA-256."""
        for handle in self._files.values():
            handle.flush()
            os.fsync(handle.fileno())
            handle.close()
        return {name: (self._sizes[name], self._digests[name].hexdigest()) for name in self._files}
