"""What every sink of a check shares: the sink protocol and what a sink is handed.

``citemark check`` scores rows one chunk at a time and hands each checked row
(`CheckedRow`) to every sink in turn (one row in), then, once the input is read,
asks each to finish with the run's facts (`RunFacts`, a summary at the end). A sink
is built from `SinkOptions`, writes one file, atomically (see
`citemark._contract.artifacts.AtomicFile`), and returns the SHA-256 of its bytes,
which ``report.json`` records. A sink whose run fails before it finishes is closed,
and leaves nothing behind.

This module imports no sink: each sink module, the registry of formats
(``citemark._pipelines.check.formats``) and both engines import it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Protocol, TypeVar

if TYPE_CHECKING:
    import contextlib
    import re
    from datetime import datetime
    from pathlib import Path

    from citemark._judging.scorer.result import CitationScore
    from citemark._pipelines.eval_report import CheckSummary, MalformedLine
    from citemark._pipelines.readers.citemark_rows import CheckRow

__all__ = ["CheckSink", "CheckedRow", "RunFacts", "SinkOptions", "opened"]

_S = TypeVar("_S", bound="CheckSink")


class CheckedRow(NamedTuple):
    """One input line as checked: a row and its score, or a malformed line."""

    item: CheckRow | MalformedLine
    """The row as read, or the malformed line's number and reason."""
    score: CitationScore | None
    """The row's score; None for a malformed line."""


class RunFacts(NamedTuple):
    """What a sink may say about the whole run once every row is in."""

    summary: CheckSummary
    """The run's counts."""
    input_name: str
    """The input file's name, as given."""
    input_sha256: str
    """The SHA-256 of the input bytes."""
    created_at: datetime
    """When the run started."""
    version: str
    """The citemark version."""
    run_id: str = ""
    """The run's id, which every artifact of the run names."""


class SinkOptions(NamedTuple):
    """What a sink is built from: where to write, and how the scorer reads rows."""

    out_dir: Path
    """The output folder (it exists)."""
    html_rows: int
    """How many rows a page shows at most."""
    label_pattern: re.Pattern[str]
    """The scorer's label pattern."""
    citation_pattern: re.Pattern[str]
    """The scorer's citation pattern."""
    group_by: str | None = None
    """The row field counts are broken down by (``--group-by``), or None."""
    run_id: str = ""
    """The run's id, which every artifact of the run names (see `line_end`)."""


class CheckSink(Protocol):
    """One output of a check: rows in one at a time, one file at the end."""

    name: str
    """The file name the sink writes in the output folder."""

    def add(self, row: CheckedRow) -> None:
        """Take one checked row, in input order."""

    def finish(self, facts: RunFacts) -> str:
        """Write the file atomically; return the SHA-256 of its bytes."""

    def close(self) -> None:
        """Release what the sink holds; without `finish`, leave no file behind."""


def opened(stack: contextlib.ExitStack, sink: _S) -> _S:
    """Register ``sink.close`` on ``stack`` as soon as the sink exists; return the sink.

    A run builds its sinks one after another; closing each from the moment it is
    built means a later sink failing to build still leaves no earlier temporary file.
    """
    stack.callback(sink.close)
    return sink
