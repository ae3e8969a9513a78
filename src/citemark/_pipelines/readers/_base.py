"""The types every recorded-format reader shares."""

from __future__ import annotations

from typing import TYPE_CHECKING, BinaryIO, NamedTuple, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

__all__ = ["ReadOptions", "Reader", "Recorded"]


class ReadOptions(NamedTuple):
    """What ``citemark check`` tells a reader."""

    index_base: int | None = None
    """``--index-base``: the number of the first source (0 or 1), or None when not given."""
    mapping: Mapping[str, str] | None = None
    """``--map``: a citemark field name to a path in the input's records (see ``mapped``)."""


class Recorded(NamedTuple):
    """One row read from another tool's file, in citemark's own row shape."""

    line: int
    """Where the row is: the 1-based line of a line-per-row file, else the row's
    1-based position among the rows the file holds (a trace, a test case)."""
    row: Mapping[str, object] | None
    """The row as ``citemark check`` reads a native JSONL line (``id``, ``question``,
    ``answer``, ``sources``, ``index_base``), or None when the record is malformed."""
    malformed: str | None = None
    """Why the record is not a row: a structural sentence that never quotes it."""
    unassessed: str | None = None
    """A reason code when the row is read but cannot be checked honestly: one of
    `citemark._contract.reasons.RECORDED_REASONS` (order not recorded, contexts joined, cut
    short, ...) or ``no_answer``. The row is reported un-assessed with it and never
    resolved."""
    index_base_from_prompt: bool = False
    """True when the reader took ``index_base`` from the numbering the recorded prompt
    shows (``Source 0:``, ``[0]`` headers) rather than from an option or a field;
    the row's findings say so."""


class Reader(Protocol):
    """Reads one file of a format, streaming: one `Recorded` per row, in file order."""

    def __call__(self, handle: BinaryIO, options: ReadOptions) -> Iterator[Recorded]: ...
