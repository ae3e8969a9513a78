"""Reading recorded runs for ``citemark check``: one JSONL line in, one row (or a reason) out.

A row is a JSON object with ``answer`` (a string), either ``sources`` (a list of
`citemark.Source` objects) or ``context`` (a labelled context string), and optionally
``question`` (a string), ``id`` (a string or an integer) and ``index_base`` (0 or 1:
the number of the row's first source, which wins over ``check --index-base``); other
keys are ignored,
so a pipeline's own fields can stay in its export. A row may instead carry a
provider's raw response (``provider``, ``provider_response``, ``documents``; see
``citemark._provider_rows``), whose text is then its answer. A line that is not such a row is
*malformed*, and `parse_row` says why in structural terms: ``not valid JSON``,
``answer must be a string``, ``source 2 does not fit the Source schema: end
(int_type)``. The reason never quotes the line, one of its values, or a key that is
not a `Source` field: recorded outputs are untrusted text.

JSON is parsed strictly, by `citemark._strictjson.loads_strict` as everywhere in
citemark: a key given twice, ``NaN`` and ``Infinity`` make a line malformed instead of
being silently accepted. There is no size cap on a line.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from pydantic import ValidationError

from citemark._models import Source
from citemark._provider_rows import ProviderRow, ProviderRowError, read_provider_row
from citemark._reports import MalformedLine
from citemark._strictjson import StrictJSONError, loads_strict
from citemark._validation import describe_validation_error

__all__ = ["CheckRow", "parse_row"]

_KNOWN_SOURCE_FIELDS: Final = frozenset(Source.model_fields)
_NOT_A_FIELD: Final = "a field Source does not define (put extra fields in metadata)"
# The malformed-line reason for each StrictJSONError kind; anything else is "not valid JSON".
_STRICT_JSON_REASONS: Final = {
    "duplicate key": "not strict JSON: an object gives a key twice",
    "non-finite number": "not strict JSON: it holds NaN or Infinity",
    "nesting too deep": "not valid JSON: nested too deep",
}


class CheckRow(NamedTuple):
    """One readable input row."""

    line: int
    """The row's 1-based line number in the input."""
    id: str | None
    """The row's own ``id`` as a string, or ``None`` when it has none."""
    question: str
    """The question; empty when the row has none."""
    answer: str
    """The answer as the pipeline wrote it."""
    sources: tuple[Source, ...] | str
    """The sources the answer cites as ``[n]``, or a labelled context string."""
    index_base: int | None = None
    """The row's own numbering base (0 or 1), or None to use the check's."""
    provider: ProviderRow | None = None
    """For a row with ``provider_response``: the provider, the documents sent and each
    provider citation verified (see ``citemark._provider_rows``); else None."""

    group: object = None
    """With ``group_by``, the value of that field of the row (any JSON value, or None
    when it is missing); what it means is the check's to decide."""


def parse_row(
    line: int, raw: bytes, group_by: str | None = None
) -> CheckRow | MalformedLine | None:
    """Read one input line as a row.

    Args:
        line: The line's 1-based number.
        raw: The line's bytes, with or without its line break.
        group_by: A field whose value the row keeps as `CheckRow.group`.

    Returns:
        The row; a `MalformedLine` with a structural reason when the line is not a
        row; ``None`` for a blank line, which is skipped.
    """
    try:
        text = raw.decode("utf-8-sig" if line == 1 else "utf-8")
    except UnicodeDecodeError:
        return MalformedLine(line=line, reason="not UTF-8 text")
    if not text.strip():
        return None
    try:
        value = _loads(text)
    except _MalformedError as exc:
        return MalformedLine(line=line, reason=str(exc))
    try:
        row = _row(line, value)
    except _MalformedError as exc:
        return MalformedLine(line=line, reason=str(exc))
    if group_by is not None and isinstance(value, dict):
        row = row._replace(group=value.get(group_by))
    return row


class _MalformedError(ValueError):
    """A line is not a row; the message is a structural reason written here."""


def _row(line: int, value: object) -> CheckRow:
    if isinstance(value, dict) and "provider_response" in value:
        try:
            value, provider = read_provider_row(value)
        except ProviderRowError as exc:
            raise _MalformedError(str(exc)) from None
        return _marker_row(line, value)._replace(provider=provider)
    return _marker_row(line, value)


def _marker_row(line: int, value: object) -> CheckRow:
    if not isinstance(value, dict):
        msg = "not a JSON object"
        raise _MalformedError(msg)
    answer = value.get("answer")
    if answer is None:
        msg = "answer is missing"
        raise _MalformedError(msg)
    if not isinstance(answer, str):
        msg = "answer must be a string"
        raise _MalformedError(msg)
    question = value.get("question")
    if question is None:
        question = ""
    elif not isinstance(question, str):
        msg = "question must be a string"
        raise _MalformedError(msg)
    row_id = value.get("id")
    if row_id is not None:
        if isinstance(row_id, bool) or not isinstance(row_id, str | int):
            msg = "id must be a string or an integer"
            raise _MalformedError(msg)
        row_id = str(row_id)
    index_base = value.get("index_base")
    if index_base is not None and (
        isinstance(index_base, bool) or not isinstance(index_base, int) or index_base not in (0, 1)
    ):
        msg = "index_base must be 0 or 1"
        raise _MalformedError(msg)
    has_sources, has_context = "sources" in value, "context" in value
    if has_sources and has_context:
        msg = "both sources and context are given; a row has one of them"
        raise _MalformedError(msg)
    if has_context:
        context = value["context"]
        if not isinstance(context, str):
            msg = "context must be a string"
            raise _MalformedError(msg)
        return CheckRow(line, row_id, question, answer, context, index_base)
    if not has_sources:
        msg = "neither sources nor context is given"
        raise _MalformedError(msg)
    return CheckRow(line, row_id, question, answer, _sources(value["sources"]), index_base)


def _sources(value: object) -> tuple[Source, ...]:
    if not isinstance(value, list):
        msg = "sources must be a list"
        raise _MalformedError(msg)
    sources: list[Source] = []
    for number, item in enumerate(value, start=1):
        if not isinstance(item, dict):
            msg = f"source {number} is not a JSON object"
            raise _MalformedError(msg)
        try:
            sources.append(Source.model_validate(item))
        except ValidationError as exc:
            reason = describe_validation_error(exc, _KNOWN_SOURCE_FIELDS, unknown=_NOT_A_FIELD)
            msg = f"source {number} does not fit the Source schema: {reason}"
            raise _MalformedError(msg) from None
    return tuple(sources)


def _loads(text: str) -> object:
    """Parse one line as strict JSON: no duplicate keys, no NaN or Infinity, no size cap."""
    try:
        return loads_strict(text, max_bytes=None)
    except StrictJSONError as exc:
        reason = _STRICT_JSON_REASONS.get(exc.kind, "not valid JSON")
    # Raised outside the handler; a StrictJSONError carries no part of the line anyway.
    raise _MalformedError(reason)
