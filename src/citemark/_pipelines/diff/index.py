"""The on-disk index a comparison keeps the old run's rows and the changes in.

A comparison of two runs holds neither run in memory: the old run's rows go into a
SQLite database in a private temporary folder, under the two keys they may be matched
by (`citemark._pipelines.diff.matching.RowKeys`: with the runs' ids compared, and without);
whether the new run shares an id with them is asked of the index (`has`); the new
run is then streamed against it, each match taken out of the index as it is
found, so what remains at the end is the removed rows, in the old run's order. The
changed rows are appended to a second table as they are found, and the rows whose
advisory support verdicts changed to a third, each read back in order by whatever
renders them. SQLite's page cache is capped, so the memory a comparison
uses does not grow with the number of rows; the disk it uses does (about the size of
the two runs' row states).
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from citemark._contract.errors import RunDiffError
from citemark._pipelines.diff.digests import RowDigests
from citemark._pipelines.diff.runs import RowFacts

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from types import TracebackType
    from typing import Self

    from citemark._pipelines.diff.matching import RowKeys

__all__ = ["RowIndex"]

_CACHE_KIB: Final = 8 * 1024
_BATCH: Final = 2000
# A row's key with the runs' ids compared (``match``) and without (``alt``); NULL for
# a row that has none under the rule, which nothing matches.
_SCHEMA: Final = (
    "CREATE TABLE old (seq INTEGER PRIMARY KEY, match TEXT, alt TEXT, facts TEXT NOT NULL)",
    "CREATE TABLE changes (seq INTEGER PRIMARY KEY, change TEXT NOT NULL)",
    "CREATE TABLE support (seq INTEGER PRIMARY KEY, change TEXT NOT NULL)",
    # Built as the rows go in, not sorted at the end: a sort's memory grows with the rows.
    "CREATE INDEX by_match ON old (match, seq)",
)
_ALT_INDEX: Final = "CREATE INDEX by_alt ON old (alt, seq)"
_COLUMNS: Final = {False: "match", True: "alt"}
_TABLES: Final = {"changes": "changes", "support": "support"}


# A row's support verdicts are indexed in short (``support``, with the record's offset
# to read them again), never whole (``marks``): the index grows by a constant per row.
_DIGESTS: Final = RowFacts._fields.index("digests")
_VERDICTS: Final = RowFacts._fields.index("verdicts")
_MARKS: Final = RowFacts._fields.index("marks")


def _pack(facts: RowFacts) -> str:
    values: list[Any] = list(facts[:_MARKS])
    if facts.digests is not None:
        values[_DIGESTS] = facts.digests.model_dump()
    return json.dumps(values, ensure_ascii=True, separators=(",", ":"))


def _unpack(text: str) -> RowFacts:
    values: list[Any] = json.loads(text)
    digests = values[_DIGESTS]
    values[_DIGESTS] = None if digests is None else RowDigests(**digests)
    values[_VERDICTS] = tuple(values[_VERDICTS])
    return RowFacts(*values)


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
        self._pending: dict[str, list[tuple[str]]] = {"changes": [], "support": []}

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

    def load(self, rows: Iterable[tuple[RowFacts, RowKeys]]) -> None:
        """Put the old run's rows in, in order, each under its two keys."""
        insert = "INSERT INTO old (match, alt, facts) VALUES (?, ?, ?)"
        try:
            batch: list[tuple[str | None, str | None, str]] = []
            for facts, keys in rows:
                batch.append((keys.with_ids, keys.without_ids, _pack(facts)))
                if len(batch) >= _BATCH:
                    self._db.executemany(insert, batch)
                    batch.clear()
            self._db.executemany(insert, batch)
        except sqlite3.Error:
            raise _failed() from None

    def index_without_ids(self) -> None:
        """Index the old rows' keys without the ids, for `take` with ``without_ids``.

        Built once the rows are in, and only when a comparison needs it (the old run
        has ids the new run does not share): SQLite sorts the keys in bounded memory,
        spilling to its temporary files, and the other comparisons do not pay for a
        second index as rows go in.
        """
        try:
            self._db.execute(_ALT_INDEX)
        except sqlite3.Error:
            raise _failed() from None

    def has(self, key: str) -> bool:
        """Whether an old row has ``key`` as its key with the ids compared."""
        try:
            found = self._db.execute("SELECT 1 FROM old WHERE match = ? LIMIT 1", (key,))
            return found.fetchone() is not None
        except sqlite3.Error:
            raise _failed() from None

    def take(self, key: str, *, without_ids: bool = False) -> RowFacts | None:
        """The old row a new row keyed ``key`` matches, taken out of the index; or None.

        Rows sharing a key are matched occurrence by occurrence: the earliest old row
        left with that key. ``without_ids`` looks ``key`` up among the old rows' keys
        without the ids (after `index_without_ids`).
        """
        column = _COLUMNS[without_ids]
        try:
            found = self._db.execute(
                f"DELETE FROM old WHERE seq = (SELECT seq FROM old WHERE {column} = ? "  # noqa: S608 - a fixed column name
                "ORDER BY seq LIMIT 1) RETURNING facts",
                (key,),
            ).fetchone()
        except sqlite3.Error:
            raise _failed() from None
        return None if found is None else _unpack(found[0])

    def left(self) -> Iterator[RowFacts]:
        """The old rows no new row matched, in the old run's order."""
        return (_unpack(text) for text in self._pages("SELECT seq, facts FROM old"))

    def record(self, change: str, *, table: str = "changes") -> None:
        """Append one change (its JSON text) to ``changes``, or a support change to ``support``."""
        pending = self._pending[table]
        pending.append((change,))
        if len(pending) >= _BATCH:
            self._flush(table)

    def changes(self, table: str = "changes") -> Iterator[str]:
        """Every change recorded in ``table``, in the order recorded, as JSON text."""
        self._flush(table)
        yield from self._pages(f"SELECT seq, change FROM {_TABLES[table]}")  # noqa: S608 - a fixed name

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

    def _flush(self, table: str) -> None:
        pending = self._pending[table]
        try:
            self._db.executemany(
                f"INSERT INTO {_TABLES[table]} (change) VALUES (?)",  # noqa: S608 - a fixed name
                pending,
            )
        except sqlite3.Error:
            raise _failed() from None
        pending.clear()


def _failed() -> RunDiffError:
    return RunDiffError(
        "the comparison's temporary index could not be written (is the temporary folder full?)"
    )
