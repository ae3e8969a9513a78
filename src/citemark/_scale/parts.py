"""The Ray engine's parts: the hidden folder workers write to, and the actor that joins them.

Each run's workers write their parts to ``.citemark-parts.<run id>`` inside the
output folder (`parts_folder`); the driver holds a lock on it for the whole run, so a
later run can tell a dead run's folder (whose lock it can take, and then removes)
from a live one's. `Assembler`, a Ray actor placed on the driver's node, appends each
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
from typing import TYPE_CHECKING, Final

from citemark._errors import PartMismatchError

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from typing import BinaryIO

    from citemark._scale.shards import PartFacts

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: folders are left to the user
    fcntl = None  # type: ignore[assignment]

__all__ = ["PARTS_PREFIX", "Assembler", "PartMismatchError", "parts_folder"]

PARTS_PREFIX: Final = ".citemark-parts."
_LOCK: Final = ".lock"
_BLOCK: Final = 1 << 20


@contextlib.contextmanager
def parts_folder(out: Path, run_id: str) -> Iterator[Path]:
    """The run's parts folder, locked while the run lasts and removed at its end.

    First, every parts folder a dead run left in ``out`` (one whose lock can be
    taken) is removed.
    """
    for stale in out.glob(PARTS_PREFIX + "*"):
        _remove_if_dead(stale)
    folder = out / f"{PARTS_PREFIX}{run_id}"
    folder.mkdir()
    lock = (folder / _LOCK).open("wb")
    try:
        if fcntl is not None:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        yield folder
    finally:
        lock.close()
        shutil.rmtree(folder, ignore_errors=True)


def _remove_if_dead(folder: Path) -> None:
    if fcntl is None or not folder.is_dir():
        return
    try:
        lock = (folder / _LOCK).open("rb")
    except FileNotFoundError:
        shutil.rmtree(folder, ignore_errors=True)
        return
    with lock:
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return  # a live run holds it
        shutil.rmtree(folder, ignore_errors=True)


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
