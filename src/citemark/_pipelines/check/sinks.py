"""Where a check's results go: the sink protocol, the JSONL sink, and the format registry.

``citemark check`` scores rows one chunk at a time and hands each checked row to every
sink in turn (one row in), then, once the input is read, asks each to finish (a
summary at the end). A sink writes one file, atomically (see
`citemark._contract.artifacts.AtomicFile`), and returns the SHA-256 of its bytes, which
``report.json`` records; ``report.json`` itself is written last, by the check, so it
appears only once every other file is in place. A sink whose run fails before it
finishes is closed, and leaves nothing behind.

``rows.jsonl`` (`JsonlSink`) and ``report.html`` (``citemark._pipelines.check.page.HtmlSink``)
are always written. `FORMATS` registers the optional ones by the name
``--format NAME`` takes; adding a format is one new module with a sink class and one
line here.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Protocol, TypeVar

from pydantic_core import PydanticSerializationError

from citemark._contract.artifacts import AtomicFile
from citemark._judging.assertions import citation_outcome
from citemark._judging.scorer.findings import ScoreFindings
from citemark._pipelines.check.names import OUTPUT_FORMATS, ROWS_NAME
from citemark._pipelines.diff.digests import row_digests
from citemark._pipelines.eval_report import MalformedLine

if TYPE_CHECKING:
    import contextlib
    import re
    from collections.abc import Callable
    from datetime import datetime
    from pathlib import Path

    from citemark._judging.scorer.result import CitationScore
    from citemark._pipelines.eval_report import CheckSummary
    from citemark._pipelines.readers.citemark_rows import CheckRow

__all__ = [
    "FORMATS",
    "ROWS_NAME",
    "CheckSink",
    "CheckedRow",
    "JsonlSink",
    "RunFacts",
    "SinkOptions",
    "line_end",
    "opened",
    "row_line",
    "row_record",
]

_S = TypeVar("_S", bound="CheckSink")
_FINDINGS_JSON: Final = ScoreFindings.__pydantic_serializer__


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


def row_record(row: CheckedRow, *, details: bool = True) -> dict[str, Any]:
    """The ``rows.jsonl`` record of a checked row: the same record every consumer reads.

    With ``details=False`` the record stops before its last key, ``details``.
    """
    item, score = row
    if score is None or isinstance(item, MalformedLine):
        return {"line": item.line, "outcome": "malformed", "error": getattr(item, "reason", "")}
    record: dict[str, Any] = {
        "line": item.line,
        "id": item.id,
        "outcome": score.outcome,
        "assessed": score.assessed,
        "passed": score.passed,
        "score": score.score,
        "reason": score.reason,
        "explanation": score.explanation,
        "unrecognized": [token.model_dump(mode="json") for token in score.findings.unrecognized],
        # Added in 0.2, after the fields before them: what the headline counts the row
        # as, and the digests `citemark diff` compares.
        "citation_outcome": citation_outcome(score.findings),
        "digests": row_digests(item.question, item.answer, item.sources),
    }
    if item.id_scope is not None:
        # Added after them, only when set: the id names one run, and `citemark diff` never
        # matches rows by it.
        record["id_scope"] = item.id_scope
    if details:
        record["details"] = score.details
    return record


def row_line(row: CheckedRow, end: bytes = b"}\n") -> bytes:
    """`row_record` as one ASCII JSON line, the findings serialized by pydantic directly.

    Serializing the typed findings straight to JSON (in pydantic-core) instead of
    through `CitationScore.details` and `json.dumps` is what keeps ``check`` as fast
    as it was with a plain dict (``bench/check.py``). A string pydantic cannot encode
    (a lone surrogate a model sent) takes the `json.dumps` path, which escapes it;
    both give the same JSON value. ``end`` closes the object: `line_end` adds the
    run id as its last key.
    """
    score = row.score
    if score is None:
        return json.dumps(row_record(row), allow_nan=False).encode("ascii")[:-1] + end
    head = row_record(row, details=False)
    try:
        details = _FINDINGS_JSON.to_json(score.findings, exclude_unset=True, ensure_ascii=True)
    except PydanticSerializationError:
        details = json.dumps(score.details, allow_nan=False).encode("ascii")
    return json.dumps(head, allow_nan=False).encode("ascii")[:-1] + b', "details": ' + details + end


def line_end(run_id: str) -> bytes:
    """What closes a record line: ``"run_id"`` as its last key, then ``}`` and a newline.

    Without a run id, only ``}`` and the newline.
    """
    if not run_id:
        return b"}\n"
    return b', "run_id": ' + json.dumps(run_id).encode("ascii") + b"}\n"


class JsonlSink:
    """``rows.jsonl``: every row's full record, streamed as it is scored."""

    name = ROWS_NAME

    def __init__(self, options: SinkOptions) -> None:
        self._file = AtomicFile(options.out_dir / ROWS_NAME)
        self._end = line_end(options.run_id)

    def add(self, row: CheckedRow) -> None:
        """Append the row's record, with the run id, as one ASCII JSON line."""
        self._file.write(row_line(row, self._end))

    def finish(self, facts: RunFacts) -> str:  # noqa: ARG002 - rows.jsonl needs no summary
        """Publish the file."""
        return self._file.commit()

    def close(self) -> None:
        """Remove the temporary file if the run did not finish."""
        self._file.__exit__(None, None, None)


def _junit(options: SinkOptions) -> CheckSink:
    from citemark._pipelines.check.junit import JUnitSink  # noqa: PLC0415 - built only when asked for

    return JUnitSink(options)


FORMATS: Final[dict[str, Callable[[SinkOptions], CheckSink]]] = dict(
    zip(OUTPUT_FORMATS, (_junit,), strict=True)
)
"""The optional output formats, by the name ``--format`` takes."""
