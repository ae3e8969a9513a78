"""``rows.jsonl``: the record of every checked row, and the sink that streams it.

`row_record` is the record every consumer of ``rows.jsonl`` reads, `row_line` the
same record as one ASCII JSON line and `line_end` what closes it (the run id as its
last key). `JsonlSink` writes ``rows.jsonl``, which, with ``report.html``
(``citemark._pipelines.check.page.HtmlSink``), a check always writes; the optional
formats are registered in ``citemark._pipelines.check.formats``. The sink protocol
they all follow is ``citemark._pipelines.check.protocol``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from pydantic_core import PydanticSerializationError

from citemark._contract.artifacts import AtomicFile
from citemark._judging.assertions import citation_outcome
from citemark._judging.scorer.findings import ScoreFindings
from citemark._pipelines.check.names import ROWS_NAME
from citemark._pipelines.diff.digests import row_digests
from citemark._pipelines.eval_report import MalformedLine

if TYPE_CHECKING:
    from citemark._pipelines.check.protocol import CheckedRow, RunFacts, SinkOptions

__all__ = ["JsonlSink", "line_end", "row_line", "row_record"]

_FINDINGS_JSON: Final = ScoreFindings.__pydantic_serializer__


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
