"""Reading recorded runs for ``citemark check``: one JSONL line in, one row (or a reason) out.

A row is a JSON object with ``answer`` (a string, or a structured answer object: see
``citemark._structured_rows``), either ``sources`` (a list of `citemark.Source`
objects) or ``context`` (a labelled context string), and optionally ``question`` (a
string), ``id`` (a string or an integer), ``index_base`` (0 or 1: the number of the
row's first source, which wins over ``check --index-base``) and ``unassessed`` (a
reason code: the recorder that wrote the row knew it cannot be checked); other keys
are ignored, so a pipeline's own fields can stay in its export. A row may instead
carry a provider's raw response (``provider``, ``provider_response``, ``documents``;
see ``citemark._provider_rows``), whose text is then its answer. A line that is not
such a row is *malformed*, and `parse_row` says why in structural terms: ``not valid
JSON``, ``answer is missing``, ``source 2 does not fit the Source schema: end
(int_type)``. The reason never quotes the line, one of its values, or a key that is
not a `Source` field: recorded outputs are untrusted text. A line that looks like
another tool's record says which ``--from`` reads it. Rows a ``--from`` reader made
from another tool's file are read by `parse_recorded`, the same way.

JSON is parsed strictly, by `citemark._strictjson.loads_strict` as everywhere in
citemark: a key given twice, ``NaN`` and ``Infinity`` make a line malformed instead of
being silently accepted. There is no size cap on a line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, NamedTuple

from pydantic import ValidationError

from citemark._errors import NoSourcesError, StructuredAnswerError
from citemark._formats import sniff
from citemark._formats._common import MalformedError, source_from_document
from citemark._models import Source
from citemark._provider_rows import ProviderRow, ProviderRowError, read_provider_row
from citemark._reasons import ADAPTER_REASONS, RECORDED_REASONS
from citemark._reports import MalformedLine
from citemark._strictjson import StrictJSONError, line_reason, loads_strict
from citemark._structured import StructuredCitedAnswer, check_structured
from citemark._structured_rows import NOT_PARSED, parsed_object
from citemark._validation import describe_validation_error

if TYPE_CHECKING:
    from citemark._formats import Recorded

__all__ = ["CheckRow", "RowOptions", "parse_recorded", "parse_row"]

_KNOWN_SOURCE_FIELDS: Final = frozenset(Source.model_fields)
_NOT_A_FIELD: Final = "a field Source does not define (put extra fields in metadata)"


class RowOptions(NamedTuple):
    """What the check tells the row reader beyond the line itself."""

    index_base: int = 1
    """The check's numbering base, for a structured answer's ids (a row's own wins)."""
    text_field: str | None = None
    """``--answer-field``: JSON pointer of a structured answer's text (default ``/answer``)."""
    citations_field: str | None = None
    """``--citations-field``: JSON pointer of its citations (default ``/citations``)."""


_DEFAULT_OPTIONS: Final = RowOptions()
# The un-assessed codes a native row may declare (the ``unassessed`` field).
_DECLARABLE: Final = (frozenset(ADAPTER_REASONS) | frozenset(RECORDED_REASONS)) - {
    "provider_citations_not_graded",
    "structured_citations_not_graded",
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

    unassessed: str | None = None
    """A reason code of `citemark.evaluation.REASONS` when the row cannot be checked
    honestly and says so: a ``--from`` reader's (the record cannot say how the model
    numbered its sources) or a recorder's (``numbering_unknown``, ``chain_error``,
    given as the row's ``unassessed`` field). The row is reported un-assessed with it
    and never resolved. None otherwise."""

    index_base_from_prompt: bool = False
    """Whether the row's ``index_base`` was read off the numbering its recorded prompt
    shows (``--from`` readers only); its findings say so."""

    structured: StructuredCitedAnswer | None = None
    """For a row whose ``answer`` is an object: its citations checked against the
    sources (see ``citemark._structured_rows``); ``answer`` is then its text."""


def parse_row(
    line: int,
    raw: bytes,
    group_by: str | None = None,
    options: RowOptions = _DEFAULT_OPTIONS,
) -> CheckRow | MalformedLine | None:
    """Read one input line as a row.

    Args:
        line: The line's 1-based number.
        raw: The line's bytes, with or without its line break.
        group_by: A field whose value the row keeps as `CheckRow.group`.
        options: The check's base and a structured answer's field pointers.

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
        row = _row(line, value, options)
    except _MalformedError as exc:
        return MalformedLine(line=line, reason=_with_hint(str(exc), value))
    if group_by is not None and isinstance(value, dict):
        row = row._replace(group=value.get(group_by))
    return row


def parse_recorded(
    record: Recorded, group_by: str | None = None, options: RowOptions = _DEFAULT_OPTIONS
) -> CheckRow | MalformedLine:
    """Read one row that a ``--from`` reader produced from another tool's file.

    The reader's row is read exactly as a native line's JSON object would be, so the
    same rows give the same results whichever file they came from. A record the
    reader marked un-assessed keeps only its id, question and answer text.
    """
    if record.row is None:
        return MalformedLine(line=record.line, reason=record.malformed or "not a row")
    value = record.row if isinstance(record.row, dict) else dict(record.row)
    try:
        if record.unassessed is not None:
            row = _unassessed_row(record.line, value, record.unassessed)
        else:
            row = _row(record.line, value, options)
    except _MalformedError as exc:
        return MalformedLine(line=record.line, reason=str(exc))
    if record.index_base_from_prompt:
        row = row._replace(index_base_from_prompt=True)
    if group_by is not None:
        row = row._replace(group=value.get(group_by))
    return row


def _with_hint(reason: str, value: object) -> str:
    """A malformed line's reason, naming the ``--from`` format it seems to be written in."""
    name = sniff(value)
    if name is None:
        return reason
    return f"{reason} (the line looks like a {name} record: read it with --from {name})"


def _unassessed_row(line: int, value: dict[str, object], code: str) -> CheckRow:
    """A row that says it cannot be checked: its id, question and any answer text only."""
    answer = value.get("answer")
    question, row_id = _question_and_id(value)
    return CheckRow(
        line, row_id, question, answer if isinstance(answer, str) else "", (), unassessed=code
    )


def _question_and_id(value: dict[str, object]) -> tuple[str, str | None]:
    """A row's question ("" when it has none) and its id as a string (None when none)."""
    question = value.get("question")
    if question is None:
        question = ""
    elif not isinstance(question, str):
        msg = "question must be a string"
        raise _MalformedError(msg)
    row_id = value.get("id")
    if row_id is None:
        return question, None
    if isinstance(row_id, bool) or not isinstance(row_id, str | int):
        msg = "id must be a string or an integer"
        raise _MalformedError(msg)
    return question, str(row_id)


class _MalformedError(ValueError):
    """A line is not a row; the message is a structural reason written here."""


def _row(line: int, value: object, options: RowOptions) -> CheckRow:
    if isinstance(value, dict) and "unassessed" in value:
        # Only the codes a recorder or a reader meets before any check: a row cannot
        # declare itself past a check it never had (no_judge, ...).
        code = value["unassessed"]
        if not isinstance(code, str) or code not in _DECLARABLE:
            msg = "unassessed must be a reason code a recorder writes"
            raise _MalformedError(msg)
        return _unassessed_row(line, value, code)
    if isinstance(value, dict) and "provider_response" in value:
        try:
            value, provider = read_provider_row(value)
        except ProviderRowError as exc:
            raise _MalformedError(str(exc)) from None
        return _marker_row(line, value)._replace(provider=provider)
    if isinstance(value, dict) and isinstance(value.get("answer"), dict):
        return _structured_row(line, value, options)
    return _marker_row(line, value)


def _structured_row(line: int, value: dict[str, object], options: RowOptions) -> CheckRow:
    """A row whose answer is an object: its text scored, its citations checked here."""
    answer = value["answer"]
    assert isinstance(answer, dict)  # noqa: S101 - the caller's test
    parsed = parsed_object(answer)
    row = _marker_row(line, {**value, "answer": ""})
    if parsed is None:
        return row._replace(unassessed=NOT_PARSED, sources=())
    if isinstance(row.sources, str):
        msg = "a structured answer cites numbered sources: give sources, not a context"
        raise _MalformedError(msg)
    base = options.index_base if row.index_base is None else row.index_base
    try:
        checked = check_structured(
            parsed,
            row.sources,
            index_base=base,
            text_field=options.text_field,
            citations_field=options.citations_field,
            include_text=False,
        )
    except StructuredAnswerError as exc:
        msg = f"answer is not a structured answer whose citations can be read: {exc}"
        raise _MalformedError(msg) from None
    except NoSourcesError:
        msg = "a structured answer's sources must not be empty"
        raise _MalformedError(msg) from None
    return row._replace(answer=checked.text, structured=checked)


def _marker_row(line: int, value: object) -> CheckRow:
    if not isinstance(value, dict):
        msg = "not a JSON object"
        raise _MalformedError(msg)
    answer = value.get("answer")
    if answer is None:
        msg = "answer is missing"
        raise _MalformedError(msg)
    if not isinstance(answer, str):
        msg = "answer must be a string or a structured answer object"
        raise _MalformedError(msg)
    question, row_id = _question_and_id(value)
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
    for number, given in enumerate(value, start=1):
        if not isinstance(given, dict):
            msg = f"source {number} is not a JSON object"
            raise _MalformedError(msg)
        item = given
        if "page_content" in given and "text" not in given:
            # A LangChain Document as a chain returns it (Document.model_dump / dict()).
            try:
                item = source_from_document(number, given)
            except MalformedError as exc:
                msg = f"source {number} is a LangChain Document that cannot be read: {exc}"
                raise _MalformedError(msg) from None
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
        reason = line_reason(exc)
    # Raised outside the handler; a StrictJSONError carries no part of the line anyway.
    raise _MalformedError(reason)
