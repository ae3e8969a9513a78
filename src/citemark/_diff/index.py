"""The on-disk index a comparison keeps the old run's rows and the changes in.

A comparison of two runs holds neither run in memory: the old run's rows go into a
SQLite database in a private temporary folder, keyed by what they are matched by;
the new run is streamed against it, each match taken out of the index as it is
found, so what remains at the end is the removed rows, in the old run's order. The
changed rows are appended to a second table as they are found and read back in order
by whatever renders them. SQLite's page cache is capped, so the memory a comparison
uses does not grow with the number of rows; the disk it uses does (about the size of
the two runs' row states).
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from citemark._diff.digests import RowDigests
from citemark._diff.runs import RowFacts
from citemark._errors import RunDiffError

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from types import TracebackType
    from typing import Self

__all__ = ["RowIndex"]

_CACHE_KIB: Final = 8 * 1024
_BATCH: Final = 2000
_SCHEMA: Final = (
    "CREATE TABLE old (seq INTEGER PRIMARY KEY, match TEXT NOT NULL, facts TEXT NOT NULL)",
    "CREATE TABLE changes (seq INTEGER PRIMARY KEY, change TEXT NOT NULL)",
    # Built as the rows go in, not sorted at the end: a sort's memory grows with the rows.
    "CREATE INDEX by_match ON old (match, seq)",
)


def _pack(facts: RowFacts) -> str:
    digests = None if facts.digests is None else facts.digests.model_dump()
    return json.dumps([*facts[:-1], digests], ensure_ascii=True, separators=(",", ":"))


def _unpack(text: str) -> RowFacts:
    values: list[Any] = json.loads(text)
    digests = values[-1]
    values[-1] = None if digests is None else RowDigests(**digests)
    values[-2] = tuple(values[-2])
    return RowFacts(*values)


def _match(facts: RowFacts) -> str:
    # ASCII JSON: an id holding a lone surrogate is still a key SQLite can store.
    return f"{facts.kind[0]}:{json.dumps(facts.key)}"


class RowIndex:
    """The old run's rows, looked up by match key, and the changes found so far.

    Use it as a context manager: leaving the block closes the database and removes
    its folder. A SQLite failure (a full disk) is a `RunDiffError`.
    """

    def __init__(self) -> None:
        """Create the database in a new private temporary folder."""
        try:
            self._folder = tempfile.TemporaryDirectory(prefix="citemark-diff-")
        except OSError:
            raise _failed() from None
        try:
            self._db = sqlite3.connect(Path(self._folder.name) / "diff.sqlite3")
            for pragma in ("journal_mode=OFF", "synchronous=OFF", f"cache_size=-{_CACHE_KIB}"):
                self._db.execute(f"PRAGMA {pragma}")
            for statement in _SCHEMA:
                self._db.execute(statement)
        except sqlite3.Error:
            self._folder.cleanup()
            raise _failed() from None
        self._pending: list[tuple[str]] = []

    def __enter__(self) -> Self:
        """Return the index itself."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the database and remove its folder."""
        self._db.close()
        self._folder.cleanup()

    def load(self, rows: Iterable[RowFacts]) -> None:
        """Put the old run's rows in, in order, indexed by match key."""
        try:
            batch: list[tuple[str, str]] = []
            for facts in rows:
                batch.append((_match(facts), _pack(facts)))
                if len(batch) >= _BATCH:
                    self._db.executemany("INSERT INTO old (match, facts) VALUES (?, ?)", batch)
                    batch.clear()
            self._db.executemany("INSERT INTO old (match, facts) VALUES (?, ?)", batch)
        except sqlite3.Error:
            raise _failed() from None

    def take(self, facts: RowFacts) -> RowFacts | None:
        """The old row the new row ``facts`` matches, taken out of the index; or None.

        Rows sharing a key are matched occurrence by occurrence: the earliest old row
        left with that key.
        """
        try:
            found = self._db.execute(
                "DELETE FROM old WHERE seq = (SELECT seq FROM old WHERE match = ? "
                "ORDER BY seq LIMIT 1) RETURNING facts",
                (_match(facts),),
            ).fetchone()
        except sqlite3.Error:
            raise _failed() from None
        return None if found is None else _unpack(found[0])

    def left(self) -> Iterator[RowFacts]:
        """The old rows no new row matched, in the old run's order."""
        return (_unpack(text) for text in self._pages("SELECT seq, facts FROM old"))

    def record(self, change: str) -> None:
        """Append one change (its JSON text)."""
        self._pending.append((change,))
        if len(self._pending) >= _BATCH:
            self._flush()

    def changes(self) -> Iterator[str]:
        """Every change recorded, in the order recorded, as JSON text."""
        self._flush()
        yield from self._pages("SELECT seq, change FROM changes")

    def _pages(self, select: str) -> Iterator[str]:
        """The text column of ``select`` (``seq`` and one text), in seq order, a batch at a time."""
        last = 0
        while True:
            try:
                batch = self._db.execute(
                    f"{select} WHERE seq > ? ORDER BY seq LIMIT ?",
                    (last, _BATCH),
                ).fetchall()
            except sqlite3.Error:
                raise _failed() from None
            if not batch:
                return
            last = batch[-1][0]
            yield from (text for _, text in batch)

    def _flush(self) -> None:
        try:
            self._db.executemany("INSERT INTO changes (change) VALUES (?)", self._pending)
        except sqlite3.Error:
            raise _failed() from None
        self._pending.clear()


def _failed() -> RunDiffError:
    return RunDiffError(
        "the comparison's temporary index could not be written (is the temporary folder full?)"
    )
