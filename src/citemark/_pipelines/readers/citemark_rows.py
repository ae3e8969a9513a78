"""Reading recorded runs for ``citemark check``: one JSONL line in, one row (or a reason) out.

A row is a JSON object with ``answer`` (a string, or a structured answer object: see
``citemark._pipelines.readers.structured_rows``), either ``sources`` (a list of `citemark.Source`
objects) or ``context`` (a labelled context string), and optionally ``question`` (a
string), ``id`` (a string or an integer), ``index_base`` (0 or 1: the number of the
row's first source, which wins over ``check --index-base``) and ``unassessed`` (a
reason code: the recorder that wrote the row knew it cannot be checked); other keys
are ignored, so a pipeline's own fields can stay in its export. A row may instead
carry a provider's raw response (``provider``, ``provider_response``, ``documents``;
see ``citemark._pipelines.readers.provider_rows``), whose text is then its answer.
A line that is not
such a row is *malformed*, and `parse_row` says why in structural terms: ``not valid
JSON``, ``answer is missing``, ``source 2 does not fit the Source schema: end
(int_type)``. The reason never quotes the line, one of its values, or a key that is
not a `Source` field: recorded outputs are untrusted text. A line that looks like
another tool's record says which ``--from`` reads it. Rows a ``--from`` reader made
from another tool's file are read by `parse_recorded`, the same way.

JSON is parsed strictly, by `citemark._model.strictjson.loads_strict` as everywhere in
citemark: a key given twice, ``NaN`` and ``Infinity`` make a line malformed instead of
being silently accepted. There is no size cap on a line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, NamedTuple

from pydantic import ValidationError

from citemark._contract.errors import NoSourcesError, StructuredAnswerError
from citemark._contract.models import Source
from citemark._contract.reasons import ADAPTER_REASONS, RECORDED_REASONS
from citemark._contract.validation import describe_validation_error
from citemark._model.strictjson import StrictJSONError, line_reason, loads_strict
from citemark._pipelines.eval_report import MalformedLine
from citemark._pipelines.readers import sniff
from citemark._pipelines.readers._common import MalformedError, source_from_document
from citemark._pipelines.readers.provider_rows import (
    ProviderRow,
    ProviderRowError,
    read_provider_row,
)
from citemark._pipelines.readers.structured_rows import NOT_PARSED, parsed_object
from citemark._sources.structured import StructuredCitedAnswer, check_structured

if TYPE_CHECKING:
    from collections.abc import Sequence

    from citemark._pipelines.readers import Recorded

__all__ = ["CheckRow", "RowOptions", "describe_unreadable", "parse_recorded", "parse_row"]

_KNOWN_SOURCE_FIELDS: Final = frozenset(Source.model_fields)
# The readers of a file that is one JSON array of records.
_ARRAY_READERS: Final = ("ragas", "deepeval", "langsmith", "openinference", "mlflow")
_ARRAYS_READ: Final = (
    "citemark reads one JSON object a line; every --from reader (and --map) reads "
    "a JSON array of its records"
)
# Where LangChain chains put their answer, question and Documents (RetrievalQA:
# result, query, source_documents; create_retrieval_chain: answer, input, context).
_DOCUMENT_LISTS: Final = ("source_documents", "context", "documents")
_ANSWER_KEYS: Final = ("answer", "result", "output")
_QUESTION_KEYS: Final = ("question", "input", "query")
# How many distinct reasons an input with no readable row names in its error.
_REASONS_NAMED: Final = 8
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
    provider citation verified (see ``citemark._pipelines.readers.provider_rows``); else None."""

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
    sources (see ``citemark._pipelines.readers.structured_rows``); ``answer`` is then its text."""

    id_scope: str | None = None
    """``"run"`` when the row's ``id`` names one run only (a run, trace or span id:
    the row's ``id_scope`` field, written by a recorder or a ``--from`` reader), so
    ``citemark diff`` never matches rows by it; None when the id identifies the
    question across runs (``id_scope`` absent or ``"row"``) or the row has no id."""


def parse_row(
    line: int,
    raw: bytes,
    group_by: str | None = None,
    options: RowOptions = _DEFAULT_OPTIONS,
    *,
    file_hint: str | None = None,
) -> CheckRow | MalformedLine | None:
    """Read one input line as a row.

    Args:
        line: The line's 1-based number.
        raw: The line's bytes, with or without its line break.
        group_by: A field whose value the row keeps as `CheckRow.group`.
        options: The check's base and a structured answer's field pointers.
        file_hint: What the whole file was found to be (`citemark._pipelines.readers._hints`):
            a malformed line's reason gives it instead of the line's own hint.

    Returns:
        The row; a `MalformedLine` with a structural reason when the line is not a
        row; ``None`` for a blank line, which is skipped.
    """
    try:
        text = raw.decode("utf-8-sig" if line == 1 else "utf-8")
    except UnicodeDecodeError:
        return MalformedLine(line=line, reason=_hinted("not UTF-8 text", file_hint))
    if not text.strip():
        return None
    try:
        value = _loads(text)
    except _MalformedError as exc:
        reason = _hinted(str(exc), file_hint) if file_hint else _with_shape_hint(str(exc), text)
        return MalformedLine(line=line, reason=reason)
    try:
        row = _row(line, value, options)
    except _MalformedError as exc:
        reason = _hinted(str(exc), file_hint) if file_hint else _with_hint(str(exc), value)
        return MalformedLine(line=line, reason=reason)
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


def _hinted(reason: str, hint: str | None) -> str:
    return reason if hint is None else f"{reason} ({hint})"


def _with_hint(reason: str, value: object) -> str:
    """A malformed line's reason, naming the ``--from`` format it seems to be written in.

    Only the line's structure and keys are looked at, and only citemark's own words
    are written: a key is named only when it is one of the fixed names below.
    """
    hint = _hint(value)
    return reason if hint is None else f"{reason} ({hint})"


def _hint(value: object) -> str | None:
    name = sniff(value)
    if name is not None:
        article = "an" if name[0] in "aeiou" else "a"
        return f"the line looks like {article} {name} record: read it with --from {name}"
    if isinstance(value, list) and value and isinstance(value[0], dict):
        name = sniff(value[0])
        if name in _ARRAY_READERS:
            return f"the line is a JSON array of {name} records: read the file with --from {name}"
        return f"the line is a JSON array of objects, not one object: {_ARRAYS_READ}"
    if isinstance(value, dict):
        return _langchain_hint(value)
    return None


def _langchain_hint(value: dict[str, object]) -> str | None:
    """For a LangChain Document, or a chain's output holding Documents, what reads it."""
    if "page_content" in value:
        return (
            "the line looks like a LangChain Document, not a row: a row holds an answer "
            "and the Documents it cites as its sources"
        )
    for key in _DOCUMENT_LISTS:
        documents = value.get(key)
        if not (isinstance(documents, list) and documents and _is_document(documents[0])):
            continue
        pointers = [f"--map sources=/{key}"]
        pointers += [f"--map answer=/{k}" for k in _ANSWER_KEYS if k in value][:1]
        pointers += [f"--map question=/{k}" for k in _QUESTION_KEYS if k in value][:1]
        return (
            f"the line looks like a LangChain chain's output, its Documents under {key}: "
            f"read it with {' '.join(pointers)}"
        )
    return None


def _is_document(value: object) -> bool:
    return isinstance(value, dict) and "page_content" in value


def _with_shape_hint(reason: str, text: str) -> str:
    """A line that is not JSON, with a hint when its shape tells what the file is.

    A line that is one bracket opens a value spread over several lines: a
    pretty-printed object, or a JSON array.
    """
    shape = text.strip()
    if shape == "[":
        return f"{reason} (the line opens a JSON array spread over lines: {_ARRAYS_READ})"
    if shape == "{":
        return (
            f"{reason} (the line opens a JSON object spread over lines, pretty-printed: "
            "citemark reads one object a line (write it with jq -c); --from langsmith, "
            "--from openinference, --from mlflow, --from ragas and --map read "
            "pretty-printed files)"
        )
    return reason


def _unassessed_row(line: int, value: dict[str, object], code: str) -> CheckRow:
    """A row that says it cannot be checked: its id, question and any answer text only."""
    answer = value.get("answer")
    question, row_id = _question_and_id(value)
    return CheckRow(
        line,
        row_id,
        question,
        answer if isinstance(answer, str) else "",
        (),
        unassessed=code,
        id_scope=_id_scope(value, row_id),
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


_ID_SCOPES: Final = ("run", "row")


def _id_scope(value: dict[str, object], row_id: str | None) -> str | None:
    """The row's ``id_scope``: ``"run"`` for an id that names one run only, else None."""
    scope = value.get("id_scope")
    if scope is None:
        return None
    if not isinstance(scope, str) or scope not in _ID_SCOPES:
        msg = 'id_scope must be "run" or "row"'
        raise _MalformedError(msg)
    return "run" if scope == "run" and row_id is not None else None


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
    id_scope = _id_scope(value, row_id)
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
        return CheckRow(line, row_id, question, answer, context, index_base, id_scope=id_scope)
    if not has_sources:
        msg = "neither sources nor context is given"
        raise _MalformedError(msg)
    sources = _sources(value["sources"])
    return CheckRow(line, row_id, question, answer, sources, index_base, id_scope=id_scope)


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


def describe_unreadable(malformed: int, lines: Sequence[MalformedLine]) -> str:
    """Why no line of an input is a row: the count, then every listed line's reason.

    Lines with the same reason are named together (``lines 2-7, 9``), reasons in the
    order they first came; the message holds only line numbers and the structural
    reasons (with any hint of the ``--from`` that reads the file).

    Example:
        ```python
        from citemark._pipelines.eval_report import MalformedLine
        from citemark._pipelines.readers.citemark_rows import describe_unreadable

        bad = [MalformedLine(line=n, reason="not valid JSON") for n in (2, 3, 4, 7)]
        print(describe_unreadable(5, [MalformedLine(line=1, reason="not UTF-8 text"), *bad]))
        #> 5 malformed lines: line 1: not UTF-8 text; lines 2-4, 7: not valid JSON
        ```
    """
    by_reason: dict[str, list[int]] = {}
    for item in lines:
        by_reason.setdefault(item.reason, []).append(item.line)
    parts = []
    for reason, numbers in list(by_reason.items())[:_REASONS_NAMED]:
        noun = "line" if len(numbers) == 1 else "lines"
        parts.append(f"{noun} {_ranges(numbers)}: {reason}")
    if len(by_reason) > _REASONS_NAMED:
        parts.append(f"and {len(by_reason) - _REASONS_NAMED} other reasons")
    listed = sum(len(numbers) for numbers in by_reason.values())
    if malformed > listed:
        parts.append(f"and {malformed - listed} more lines")
    noun = "malformed line" if malformed == 1 else "malformed lines"
    return f"{malformed} {noun}: " + "; ".join(parts)


def _ranges(numbers: Sequence[int]) -> str:
    """Line numbers as ranges: ``1-3, 5``."""
    spans: list[list[int]] = []
    for number in numbers:
        if spans and number == spans[-1][1] + 1:
            spans[-1][1] = number
        else:
            spans.append([number, number])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
