"""OpenInference spans (Phoenix, Arize) as recorded JSON: ``citemark check --from openinference``.

OpenInference instruments LangChain and LlamaIndex with OpenTelemetry spans. This
reader takes them in the three forms they are written down in:

* **OTLP JSON**: one ``ExportTraceServiceRequest`` per line, as collectors' file
  exporters write it (``resourceSpans[].scopeSpans[].spans[]``), with ids in
  lowercase hex or in base64 (protobuf's JSON mapping), enums as names or integers,
  and field names in camelCase or snake_case.
* **SDK JSON**: the ``ReadableSpan.to_json()`` objects ``ConsoleSpanExporter``
  prints, pretty-printed one after another or one per line (``0x`` hex ids, flat
  attributes, ``parent_id``).
* **A JSON array** of either (``json.dump([json.loads(s.to_json()) for s in spans],
  f)``): it is streamed element by element (`citemark._pipelines.readers._records`), never
  loaded whole, and a reason names a bad element by its position in the array.
* **Phoenix Parquet**: a file that starts with ``PAR1`` is handed to
  ``citemark._pipelines.readers.phoenix``.

One trace is one row, emitted when its root span (the span with no parent) arrives;
spans of a trace may arrive over many lines, children before their root. The row is
built from the spans' attributes:

* ``id``: the trace id in lowercase hex, whatever encoding the file used; the row's
  ``id_scope`` is ``"run"``, since a trace id names one run, not the question.
* ``question``: the root span's ``input.value``. When ``input.mime_type`` says it is
  JSON (LangChain's raw chain input), the ``question``, ``input`` or ``query`` key
  (first found, a string), else the only value of a one-key object when it is a
  string, else the text as recorded.
* ``answer``: from the trace's last LLM call to end (an LLM span nested in another
  LLM span, as LlamaIndex's ``predict`` wraps ``complete``, is part of that call):
  ``llm.output_messages.0.message.content`` (chat); else the tool call arguments
  ``llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments`` as a
  JSON object (structured output); else ``output.value`` (completion; LangChain's
  ``LLMResult`` JSON gives its first generation's text).
* ``sources``: the RETRIEVER span's ``retrieval.documents.{i}.document.*`` (or a
  RERANKER span's ``reranker.output_documents``) in index order. ``doc_id`` is the
  ``document.id``; else the ``id`` LangChain keeps in the span's ``output.value``
  document list when that document's ``page_content`` equals the content; else the
  ``doc_id`` key of the ``document.metadata`` JSON; else ``retrieval.documents.{i}``.
  ``chunk_id`` and ``uri`` are the metadata's ``chunk_id`` and ``source`` keys, and
  the whole metadata object is kept as the source's ``metadata``.
* ``index_base``: ``--index-base`` when given; else, when the recorded prompt of the
  answering call (``llm.input_messages.*``, ``llm.prompts``) numbers every document
  under line-start headers (``Source 0:``, ``Source ID: 0``, ``[0]``) whose text
  holds that document, from exactly one base, that base (the row says it was read
  off the prompt); else none (citemark's default).

A row is un-assessed, never resolved against a guess, when the trace holds no
retrieved documents (``no_retrieval_recorded``); more than one distinct document
list, unless the answering prompt holds every document of exactly one of them
(``several_retrievals``); a list with a gap in its ``{i}`` indexes or a key under its
prefix whose ``{i}`` is not a canonical ASCII index (``0`` or ``[1-9][0-9]*``, at most
nine digits: not ``01``, not a Unicode digit), documents whose
leading attributes were evicted (the SDK's 128-attribute limit drops the oldest
first), dropped attributes it cannot rule out, or a ``document.content`` shorter
than the same document in ``output.value`` or as long as a value-length limit the
trace shows (``sources_truncated``); a prompt that numbers the documents in another
order, numbers some of them and omits others, or numbers more sources than the
list holds (``source_order_not_recorded``);
tool call arguments that are not a JSON object (``structured_output_not_parsed``);
or a trace whose root span never arrives (``trace_incomplete``, at the end of the
file or when the buffer below overflows). A trace with neither an LLM answer nor a
retrieval (index building, embedding batches) is not a row.

A trace whose spans are not one tree is ``trace_incomplete`` too, whatever it holds:
two different spans under one span id before its root arrives (an exact copy of a
span, as an exporter's retry sends, is read once), or spans whose parent ids form a
cycle (`citemark._pipelines.readers._tree.has_cycle`). Its row keeps the root's question.

A span whose ``endTimeUnixNano`` (uint64) or ``droppedAttributesCount`` (uint32) is
a number outside its range (``-1``, a decimal string of thousands of digits), or
whose ``intValue`` attribute is outside int64, is a malformed row that names the
field; the rest of the file is read on (its trace, missing that span, may read as
``trace_incomplete``).

Rows are numbered (`Recorded.line`) by their 1-based position among the rows this
reader emits, malformed records included. At most `MAX_OPEN_TRACES` traces and
`MAX_OPEN_SPANS` spans wait for their roots; past either, the trace seen first is
emitted as ``trace_incomplete``, and later spans of an emitted trace (up to
`MAX_CLOSED_TRACES` remembered ids) are ignored.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import importlib
import io
import re
from collections import OrderedDict
from typing import TYPE_CHECKING, BinaryIO, Final, NamedTuple

from citemark._model.strictjson import StrictJSONError, loads_strict
from citemark._pipelines.readers._base import ReadOptions, Recorded
from citemark._pipelines.readers._common import INT64, UINT64, bounded_int
from citemark._pipelines.readers._records import JsonRecord, first_byte, json_records, peek
from citemark._pipelines.readers._tree import has_cycle

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping, Sequence

    from citemark._pipelines.readers._base import Reader

__all__ = [
    "MAX_CLOSED_TRACES",
    "MAX_OPEN_SPANS",
    "MAX_OPEN_TRACES",
    "Bad",
    "Span",
    "TraceRow",
    "as_recorded",
    "assess_trace",
    "bare_row",
    "read",
]

MAX_OPEN_TRACES: Final = 1_000
"""The most traces held open (waiting for their root span) at once."""

MAX_OPEN_SPANS: Final = 50_000
"""The most spans held, over all open traces, at once."""

MAX_CLOSED_TRACES: Final = 10_000
"""How many emitted trace ids are remembered, so that a late span is not a new trace."""

_UINT32: Final = (0, 2**32 - 1)
"""The range of OTLP's ``droppedAttributesCount``."""
_PARQUET_MAGIC: Final = b"PAR1"
_PHOENIX_MODULE: Final = "citemark._pipelines.readers.phoenix"
_JSON_MIME: Final = "application/json"
_KIND: Final = "openinference.span.kind"
_DOCUMENT_PREFIXES: Final = {
    "RETRIEVER": "retrieval.documents.",
    "RERANKER": "reranker.output_documents.",
}
# A document's index: canonical ASCII decimal (no sign, no leading zero, no Unicode
# digit), at most 9 digits; then its field. A key under the prefix whose index is not
# one (``01``, an Arabic-Indic digit, twenty digits) leaves the list un-assessed, never dropped.
_DOCUMENT_INDEX: Final = re.compile(r"(0|[1-9][0-9]{0,8})\.", re.ASCII)
_DOCUMENT_FIELDS: Final = frozenset({"content", "id", "score", "metadata"})
_DOCUMENT_FIELD_PREFIX: Final = "document."
_QUESTION_KEYS: Final = ("question", "input", "query")
_OUTPUT_CONTENT: Final = "llm.output_messages.0.message.content"
_OUTPUT_PARTS: Final = re.compile(
    r"llm\.output_messages\.0\.message\.contents\.(\d{1,9})\.message_content\.text"
)
_TOOL_ARGUMENTS: Final = "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments"
_PROMPT_KEY: Final = re.compile(
    r"llm\.input_messages\.(\d{1,9})\.message\.(?:content|contents\.(\d{1,9})\.message_content\.text)"
)
_HEADER: Final = re.compile(
    r"^[ \t]*(?:Source(?:[ \t]+ID)?[ \t]*:?[ \t]*(\d{1,6})\b[ \t]*:?|\[(\d{1,6})\])", re.MULTILINE
)
_NEEDLE_CHARS: Final = 200
_TRACE_BYTES: Final = 16
_SPAN_BYTES: Final = 8
_STRUCTURAL: Final = re.compile(r'[{}\[\]"]')
_IN_STRING: Final = re.compile(r'\\.|"', re.DOTALL)
_NON_BLANK: Final = re.compile(r"\S")
_HEX: Final = re.compile(r"[0-9a-fA-F]+")
_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def read(handle: BinaryIO, options: ReadOptions) -> Iterator[Recorded]:
    """Read OpenInference spans, one `Recorded` per trace, streaming.

    Args:
        handle: The file, opened in binary mode.
        options: ``index_base`` is the number of the first source, or None to take
            it from the recorded prompt where that is unambiguous.

    Yields:
        One `Recorded` per trace (or per malformed record), in the order the rows
        are complete: a trace when its root span arrives, incomplete ones last.
    """
    head, handle = peek(handle, len(_PARQUET_MAGIC))
    if head == _PARQUET_MAGIC:
        yield from _read_parquet(handle, options)
        return
    first, handle = first_byte(handle)
    if first == b"[":
        yield from _TraceReader(options).read(_array_values(json_records(handle, "span")))
        return
    yield from _TraceReader(options).read(_json_values(handle))


def _read_parquet(handle: BinaryIO, options: ReadOptions) -> Iterator[Recorded]:
    """Hand a Parquet file (a Phoenix span dataframe) to the Phoenix reader."""
    if not handle.seekable():
        handle = io.BytesIO(handle.read())
    try:
        module = importlib.import_module(_PHOENIX_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name != _PHOENIX_MODULE:
            raise
        reason = "the file is Parquet (a Phoenix span dataframe), which this version cannot read"
        yield Recorded(line=1, row=None, malformed=reason)
        return
    reader: Reader = module.read
    yield from reader(handle, options)


# --- JSON values, one per line or pretty-printed one after another ----------------


class _Value(NamedTuple):
    line: int
    """The 1-based line of the file the value starts on, or its position in a JSON array."""
    value: object
    in_array: bool = False
    """Whether the value is an element of the JSON array the file holds."""

    @property
    def place(self) -> str:
        """Where the value is, as a reason names it."""
        if self.in_array:
            return f"element {self.line} of the JSON array"
        return f"line {self.line}"


class Bad(NamedTuple):
    """A record or span that is not readable (the Phoenix reader makes them too)."""

    line: int
    """The 1-based line the record starts on (0 when it is not a line's)."""
    reason: str
    """A structural sentence that quotes nothing of the input."""


def _array_values(records: Iterable[JsonRecord]) -> Iterator[_Value | Bad]:
    """The elements of a JSON array of spans or OTLP requests, parsed one at a time."""
    for record in records:
        if record.raw is None:
            yield Bad(record.where, record.reason or "not a JSON array")
            continue
        try:
            text = record.raw.decode("utf-8")
        except UnicodeDecodeError:
            yield Bad(record.where, f"element {record.where} of the JSON array is not UTF-8")
            continue
        value = _parse(text)
        if isinstance(value, _ParseError):
            reason = f"element {record.where} of the JSON array is {value.reason}"
            yield Bad(record.where, reason)
        else:
            yield _Value(record.where, value, in_array=True)


def _json_values(handle: BinaryIO) -> Iterator[_Value | Bad]:
    """Every top-level JSON value in the file, whether one per line or spread over lines."""
    scanner = _Scanner()
    number = 0
    for number, raw in enumerate(handle, start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            scanner.lose()
            yield Bad(number, f"line {number} is not UTF-8")
            continue
        yield from scanner.feed(number, text)
    if scanner.open_since is not None:
        yield Bad(
            scanner.open_since, f"the record starting at line {scanner.open_since} is cut off"
        )


class _Scanner:
    """Finds where top-level JSON objects end, line by line, without parsing them.

    After a line that breaks the record it is in, the rest of that record is
    skipped: reading picks up again at the next line that starts (in its first
    column) with ``{``, so one broken record is one malformed row, not one per line.
    """

    def __init__(self) -> None:
        self.open_since: int | None = None
        self._parts: list[str] = []
        self._depth = 0
        self._resync = False

    def reset(self) -> None:
        self.open_since, self._parts, self._depth = None, [], 0

    def lose(self) -> None:
        """Drop the open record and skip to the next line that starts a new one."""
        self.reset()
        self._resync = True

    def feed(self, number: int, text: str) -> Iterator[_Value | Bad]:
        if self._resync:
            if not text.startswith(("{", "[")):
                return
            self._resync = False
        if self.open_since is None and _whole_line_object(text):
            value = _parse(text)
            if not isinstance(value, _ParseError):
                yield _Value(number, value)
                return
        position = 0
        while position < len(text):
            if self.open_since is None:
                start = _NON_BLANK.search(text, position)
                if start is None:
                    return
                if text[start.start()] not in "{[":
                    yield Bad(number, f"line {number} is not a JSON object")
                    self.lose()
                    return
                self.open_since, position = number, start.start()
                self._parts = []
            end = self._scan(text, position)
            if end is None:
                if self.open_since is not None and self._depth < 0:
                    yield Bad(number, f"the record starting at line {self.open_since} is not JSON")
                    self.lose()
                    return
                self._parts.append(text[position:])
                return
            self._parts.append(text[position:end])
            since = self.open_since
            record = "".join(self._parts)
            self.reset()
            value = _parse(record)
            if isinstance(value, _ParseError):
                yield Bad(since, f"the record starting at line {since} is {value.reason}")
            else:
                yield _Value(since, value)
            position = end

    def _scan(self, text: str, position: int) -> int | None:
        """Where the open value ends in ``text`` (one past it), or None if it goes on.

        A line that ends inside a string sets the depth below zero: JSON strings
        hold no raw line breaks, so the record is not JSON.
        """
        while True:
            match = _STRUCTURAL.search(text, position)
            if match is None:
                return None
            char, position = match.group(), match.end()
            if char == '"':
                closing = _string_end(text, position)
                if closing is None:
                    self._depth = -1
                    return None
                position = closing
            elif char in "{[":
                self._depth += 1
            else:
                self._depth -= 1
                if self._depth == 0:
                    return position


def _string_end(text: str, position: int) -> int | None:
    """One past the quote that closes the string opened before ``position``, if on this line."""
    while True:
        match = _IN_STRING.search(text, position)
        if match is None:
            return None
        if match.group() == '"':
            return match.end()
        position = match.end()


def _whole_line_object(text: str) -> bool:
    stripped = text.strip()
    return stripped.startswith("{") and stripped.endswith("}")


class _ParseError(NamedTuple):
    reason: str


def _parse(text: str) -> object:
    try:
        return loads_strict(text, max_bytes=None)
    except StrictJSONError as exc:
        kind = exc.kind
    if kind == "duplicate key":
        return _ParseError("not strict JSON: an object gives a key twice")
    if kind == "non-finite number":
        return _ParseError("not strict JSON: it holds NaN or Infinity")
    return _ParseError("not valid JSON")


# --- Spans --------------------------------------------------------------------


class Span(NamedTuple):
    """One OpenInference span, however it was written down (OTLP, SDK JSON, Phoenix)."""

    trace_id: str
    span_id: str
    parent_id: str | None
    attributes: Mapping[str, object]
    end: int
    """The end time in nanoseconds since the epoch, or 0 when not recorded."""
    dropped_attributes: int
    """How many attributes the SDK dropped, as OTLP records it (0 when not recorded)."""


def _spans_of(item: _Value) -> Iterator[Span | Bad]:
    """The spans a top-level JSON value holds: an OTLP request's, or one SDK span."""
    value = item.value
    if isinstance(value, dict):
        resource_spans = _field(value, "resourceSpans", "resource_spans")
        if resource_spans is not None:
            yield from _otlp_spans(item, resource_spans)
            return
        if "context" in value and "attributes" in value:
            yield _sdk_span(item, value)
            return
    yield Bad(item.line, f"the record at {item.place} is neither an OTLP request nor a span")


def _field(value: Mapping[str, object], camel: str, snake: str) -> object:
    found = value.get(camel)
    return value.get(snake) if found is None else found


def _otlp_spans(item: _Value, resource_spans: object) -> Iterator[Span | Bad]:
    line, where = item.line, f"the OTLP request at {item.place}"
    if not isinstance(resource_spans, list):
        yield Bad(line, f"{where} has resourceSpans that is not a list")
        return
    number = 0
    for resource in resource_spans:
        scopes = (
            _field(resource, "scopeSpans", "scope_spans") if isinstance(resource, dict) else None
        )
        if not isinstance(scopes, list):
            yield Bad(line, f"{where} has a resourceSpans entry without a scopeSpans list")
            continue
        for scope in scopes:
            spans = scope.get("spans") if isinstance(scope, dict) else None
            if not isinstance(spans, list):
                yield Bad(line, f"{where} has a scopeSpans entry without a spans list")
                continue
            for span in spans:
                number += 1
                yield _otlp_span(item, number, span)


def _otlp_span(item: _Value, number: int, value: object) -> Span | Bad:
    line, where = item.line, f"span {number} of the OTLP request at {item.place}"
    if not isinstance(value, dict):
        return Bad(line, f"{where} is not a JSON object")
    trace_id = _otlp_id(_field(value, "traceId", "trace_id"), _TRACE_BYTES)
    span_id = _otlp_id(_field(value, "spanId", "span_id"), _SPAN_BYTES)
    parent = _field(value, "parentSpanId", "parent_span_id")
    parent_id = None if parent in (None, "") else _otlp_id(parent, _SPAN_BYTES)
    if not trace_id:
        return Bad(line, f"{where} has no valid trace id")
    if not span_id:
        return Bad(line, f"{where} has no valid span id")
    if parent_id == "":
        return Bad(line, f"{where} has a parent span id that is not a span id")
    try:
        attributes = _otlp_attributes(_field(value, "attributes", "attributes"))
    except _OutOfRangeError:
        return Bad(line, f"{where} has an intValue attribute that is not an int64")
    if attributes is None:
        return Bad(line, f"{where} has attributes that are not a list of key-value pairs")
    dropped = _integer(_field(value, "droppedAttributesCount", "dropped_attributes_count"), _UINT32)
    end = _integer(_field(value, "endTimeUnixNano", "end_time_unix_nano"), UINT64)
    if dropped is None:
        return Bad(line, f"{where} has a droppedAttributesCount that is not a uint32")
    if end is None:
        return Bad(line, f"{where} has an endTimeUnixNano that is not a uint64")
    return Span(trace_id, span_id, parent_id or None, attributes, end, dropped)


def _otlp_id(value: object, size: int) -> str | None:
    """An OTLP id as lowercase hex, from hex or base64; "" for a malformed parent id.

    Returns None for a missing or all-zero id (no parent), and "" for a present one
    that is neither encoding.
    """
    if not isinstance(value, str):
        return None if value is None else ""
    hexed = _hex_id(value, size)
    if hexed is None:
        try:
            decoded = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return ""
        if len(decoded) != size:
            return ""
        hexed = decoded.hex()
    return None if hexed == "0" * (2 * size) else hexed


def _hex_id(value: str, size: int) -> str | None:
    text = value[2:] if value[:2] in ("0x", "0X") else value
    if len(text) != 2 * size or _HEX.fullmatch(text) is None:
        return None
    return text.lower()


def _integer(value: object, bounds: tuple[int, int]) -> int | None:
    """A count or a time as OTLP JSON writes it (an int, or a decimal string).

    0 when it is not recorded or is not a number at all (a bool, a float, a string of
    other characters); None for a number outside ``bounds`` (``-1``, a string of
    thousands of digits): the span is malformed.
    """
    if isinstance(value, bool) or not isinstance(value, int | str):
        return 0
    if isinstance(value, str) and not _is_int(value):
        return 0
    return bounded_int(value, bounds)


class _OutOfRangeError(ValueError):
    """An ``intValue`` outside int64 (a string of thousands of digits, say)."""


def _otlp_attributes(value: object) -> dict[str, object] | None:
    """A span's OTLP attribute list as a dict; None when it is not a list of key-value pairs.

    Raises:
        _OutOfRangeError: an ``intValue`` is outside int64.
    """
    if value is None:
        return {}
    if not isinstance(value, list):
        return None
    attributes: dict[str, object] = {}
    for pair in value:
        if not isinstance(pair, dict) or not isinstance(pair.get("key"), str):
            return None
        attributes[pair["key"]] = _any_value(pair.get("value"))
    return attributes


def _any_value(value: object) -> object:
    """An OTLP ``AnyValue`` as a plain value (None for one this reader has no use for)."""
    if not isinstance(value, dict):
        return None
    for name in (
        "stringValue",
        "string_value",
        "boolValue",
        "bool_value",
        "doubleValue",
        "double_value",
    ):
        if name in value:
            return value[name]
    for name in ("intValue", "int_value"):
        if name in value:
            number = value[name]
            if not isinstance(number, str | int) or isinstance(number, bool):
                return number
            if isinstance(number, str) and not _is_int(number):
                return number
            checked = bounded_int(number, INT64)
            if checked is None:
                raise _OutOfRangeError
            return checked
    array = _field(value, "arrayValue", "array_value")
    if isinstance(array, dict):
        values = array.get("values")
        return [_any_value(item) for item in values] if isinstance(values, list) else []
    return None


def _is_int(text: str) -> bool:
    digits = text[1:] if text[:1] == "-" else text
    return digits.isascii() and digits.isdigit()


def _sdk_span(item: _Value, value: Mapping[str, object]) -> Span | Bad:
    line, where = item.line, f"the span at {item.place}"
    context = value.get("context")
    if not isinstance(context, dict):
        return Bad(line, f"{where} has no context object")
    trace_id = _sdk_id(context.get("trace_id"), _TRACE_BYTES)
    span_id = _sdk_id(context.get("span_id"), _SPAN_BYTES)
    if not trace_id:
        return Bad(line, f"{where} has no valid trace id")
    if not span_id:
        return Bad(line, f"{where} has no valid span id")
    parent = value.get("parent_id")
    parent_id = None if parent is None else _sdk_id(parent, _SPAN_BYTES)
    if parent_id == "":
        return Bad(line, f"{where} has a parent_id that is not a span id")
    attributes = value.get("attributes")
    if attributes is None:
        attributes = {}
    if not isinstance(attributes, dict):
        return Bad(line, f"{where} has attributes that are not an object")
    return Span(trace_id, span_id, parent_id, attributes, _iso_nanos(value.get("end_time")), 0)


def _sdk_id(value: object, size: int) -> str | None:
    """A ``0x`` hex id as lowercase hex; None when all zeros, "" when not an id."""
    if not isinstance(value, str):
        return ""
    hexed = _hex_id(value, size)
    if hexed is None:
        return ""
    return None if hexed == "0" * (2 * size) else hexed


def _iso_nanos(value: object) -> int:
    if not isinstance(value, str):
        return 0
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        return 0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return (moment - _EPOCH) // dt.timedelta(microseconds=1) * 1000


# --- Traces: buffered until the root arrives -----------------------------------


class _Trace:
    def __init__(self) -> None:
        self.spans: dict[str, Span] = {}
        self.conflicting = False
        """Whether two different spans came with one span id (an exact copy is not)."""


class _TraceReader:
    """Groups spans into traces and turns each complete trace into a row."""

    def __init__(self, options: ReadOptions) -> None:
        self._options = options
        self._open: OrderedDict[str, _Trace] = OrderedDict()
        self._closed: OrderedDict[str, None] = OrderedDict()
        self._held = 0
        self._emitted = 0

    def read(self, values: Iterable[_Value | Bad]) -> Iterator[Recorded]:
        for item in values:
            if isinstance(item, Bad):
                yield self._malformed(item.reason)
                continue
            for span in _spans_of(item):
                if isinstance(span, Bad):
                    yield self._malformed(span.reason)
                else:
                    yield from self._add(span)
        while self._open:
            yield from self._incomplete_oldest()

    def _add(self, span: Span) -> Iterator[Recorded]:
        if span.trace_id in self._closed:
            return
        trace = self._open.get(span.trace_id)
        if trace is None:
            while len(self._open) >= MAX_OPEN_TRACES:
                yield from self._incomplete_oldest()
            trace = self._open[span.trace_id] = _Trace()
        held = trace.spans.get(span.span_id)
        if held is None:
            trace.spans[span.span_id] = span
            self._held += 1
        elif held != span:
            trace.conflicting = True
        if span.parent_id is None:
            self._close(span.trace_id)
            row = (
                _tangled(span.trace_id, span)
                if trace.conflicting
                else assess_trace(span.trace_id, span, trace.spans, self._options)
            )
            if row is not None:
                yield self._emit(row)
            return
        while self._held > MAX_OPEN_SPANS and self._open:
            yield from self._incomplete_oldest()

    def _incomplete_oldest(self) -> Iterator[Recorded]:
        trace_id = next(iter(self._open))
        self._close(trace_id)
        yield self._emit(TraceRow(bare_row(trace_id, "", ""), "trace_incomplete"))

    def _close(self, trace_id: str) -> None:
        trace = self._open.pop(trace_id, None)
        if trace is not None:
            self._held -= len(trace.spans)
        self._closed[trace_id] = None
        while len(self._closed) > MAX_CLOSED_TRACES:
            self._closed.popitem(last=False)

    def _emit(self, row: TraceRow | Bad) -> Recorded:
        self._emitted += 1
        return as_recorded(self._emitted, row)

    def _malformed(self, reason: str) -> Recorded:
        return self._emit(Bad(0, reason))


# --- One trace to one row ------------------------------------------------------


class TraceRow(NamedTuple):
    """The row a complete trace reads as, and why it is un-assessed if it is."""

    row: dict[str, object]
    unassessed: str | None = None
    from_prompt: bool = False


class _Doc(NamedTuple):
    content: str
    doc_id: str | None
    metadata: Mapping[str, object] | None
    fields: tuple[str, ...]
    """The document's attribute fields, in the order the span recorded them."""


class _DocList(NamedTuple):
    docs: tuple[_Doc, ...]
    truncated: bool


class _Answer(NamedTuple):
    value: str | dict[str, object] | None
    """The answer text or structured object; None when the call records no usable answer."""
    unparsed: bool = False
    """True when the answer is a tool call whose arguments are not a JSON object."""


def assess_trace(
    trace_id: str, root: Span, spans: Mapping[str, Span], options: ReadOptions
) -> TraceRow | Bad | None:
    """The row of a complete trace, or None when the trace is not a RAG run at all.

    Spans whose parent ids form a cycle make it ``trace_incomplete``: they are below
    no root, so which call or retrieval they belong to is not known.
    """
    if has_cycle({span.span_id: span.parent_id for span in spans.values()}):
        return _tangled(trace_id, root)
    question = _question(root)
    call = _answering_call(spans)
    answer = _Answer(None) if call is None else _answer_of(call)
    lists = _document_lists(spans.values())
    if answer.value is None and not answer.unparsed:
        if not lists:
            return None
        return Bad(0, f"trace {trace_id} has no LLM span that records an answer")
    text = answer.value if answer.value is not None else ""
    if answer.unparsed:
        return TraceRow(bare_row(trace_id, question, text), "structured_output_not_parsed")
    prompt = _prompt_text(call or ())
    chosen = _choose_list(lists, prompt)
    if isinstance(chosen, str):
        return TraceRow(bare_row(trace_id, question, text), chosen)
    if chosen.truncated or _cut_by_value_limit(chosen, spans.values()):
        return TraceRow(bare_row(trace_id, question, text), "sources_truncated")
    evidence = _PromptEvidence(prompt, chosen.docs)
    if evidence.contradicted:
        return TraceRow(bare_row(trace_id, question, text), "source_order_not_recorded")
    row = bare_row(trace_id, question, text)
    row["sources"] = [_source(index, doc) for index, doc in enumerate(chosen.docs)]
    if options.index_base is not None:
        row["index_base"] = options.index_base
        return TraceRow(row)
    if evidence.base is not None:
        row["index_base"] = evidence.base
        return TraceRow(row, from_prompt=True)
    return TraceRow(row)


def _tangled(trace_id: str, root: Span) -> TraceRow:
    """The row of a trace whose spans are not one tree: its question, ``trace_incomplete``."""
    return TraceRow(bare_row(trace_id, _question(root), ""), "trace_incomplete")


def bare_row(trace_id: str, question: str, answer: str | dict[str, object]) -> dict[str, object]:
    """A trace's row without sources, as an un-assessed row carries it.

    Its ``id`` is the trace id, which names one run of the pipeline: ``id_scope`` says
    so, and ``citemark diff`` never matches rows by it.
    """
    return {
        "id": trace_id,
        "id_scope": "run",
        "question": question,
        "answer": answer,
        "sources": [],
    }


def _question(root: Span) -> str:
    value = root.attributes.get("input.value")
    if not isinstance(value, str):
        return ""
    if root.attributes.get("input.mime_type") != _JSON_MIME:
        return value
    parsed = _parse(value)
    if not isinstance(parsed, dict):
        return value
    for key in _QUESTION_KEYS:
        if isinstance(parsed.get(key), str):
            found: str = parsed[key]
            return found
    if len(parsed) == 1:
        (only,) = parsed.values()
        if isinstance(only, str):
            return only
    return value


def _kind(span: Span) -> str:
    kind = span.attributes.get(_KIND)
    return kind.upper() if isinstance(kind, str) else ""


def _answering_call(spans: Mapping[str, Span]) -> tuple[Span, ...] | None:
    """The spans of the last LLM call to end that records an answer: the outermost first."""
    calls: dict[str, list[Span]] = {}
    for span in spans.values():
        if _kind(span) == "LLM":
            calls.setdefault(_outermost_llm(span, spans).span_id, []).append(span)
    answering: list[tuple[int, int, tuple[Span, ...]]] = []
    for order, (outer_id, members) in enumerate(calls.items()):
        outer = spans[outer_id]
        ordered = (outer, *(span for span in members if span is not outer))
        if any(_answer_of_span(span) is not None for span in ordered):
            answering.append((outer.end, order, ordered))
    if not answering:
        return None
    return max(answering)[2]


def _outermost_llm(span: Span, spans: Mapping[str, Span]) -> Span:
    outer, seen = span, {span.span_id}
    current = span
    while current.parent_id is not None and current.parent_id not in seen:
        parent = spans.get(current.parent_id)
        if parent is None:
            break
        seen.add(parent.span_id)
        if _kind(parent) == "LLM":
            outer = parent
        current = parent
    return outer


def _answer_of(call: Sequence[Span]) -> _Answer:
    for span in call:
        answer = _answer_of_span(span)
        if answer is not None:
            return answer
    return _Answer(None)


def _answer_of_span(span: Span) -> _Answer | None:
    attributes = span.attributes
    content = attributes.get(_OUTPUT_CONTENT)
    if isinstance(content, str) and content:
        return _Answer(content)
    parts = _indexed_texts(attributes, _OUTPUT_PARTS)
    if parts:
        return _Answer("".join(parts))
    arguments = attributes.get(_TOOL_ARGUMENTS)
    if isinstance(arguments, str):
        parsed = _parse(arguments)
        return _Answer(parsed) if isinstance(parsed, dict) else _Answer(None, unparsed=True)
    if any(key.startswith("llm.output_messages.") for key in attributes):
        return None
    return _completion(attributes)


def _completion(attributes: Mapping[str, object]) -> _Answer | None:
    output = attributes.get("output.value")
    if not isinstance(output, str) or not output:
        return None
    if attributes.get("output.mime_type") != _JSON_MIME:
        return _Answer(output)
    parsed = _parse(output)
    generations = parsed.get("generations") if isinstance(parsed, dict) else None
    if isinstance(generations, list) and generations and isinstance(generations[0], list):
        first = generations[0][0] if generations[0] else None
        text = first.get("text") if isinstance(first, dict) else None
        if isinstance(text, str) and text:
            return _Answer(text)
    return None


def _indexed_texts(attributes: Mapping[str, object], pattern: re.Pattern[str]) -> list[str]:
    found: list[tuple[tuple[int, ...], str]] = []
    for key, value in attributes.items():
        match = pattern.fullmatch(key)
        if match and isinstance(value, str):
            found.append((tuple(int(group or -1) for group in match.groups()), value))
    return [text for _, text in sorted(found)]


def _prompt_text(call: Sequence[Span]) -> str:
    """Everything the answering call recorded as its prompt, joined by line breaks."""
    texts: list[str] = []
    for span in call:
        texts.extend(_indexed_texts(span.attributes, _PROMPT_KEY))
        prompts = span.attributes.get("llm.prompts")
        if isinstance(prompts, str):
            parsed = _parse(prompts)
            prompts = parsed if isinstance(parsed, list) else [prompts]
        if isinstance(prompts, list):
            texts.extend(item for item in prompts if isinstance(item, str))
    return "\n".join(texts)


# --- Documents -----------------------------------------------------------------


def _document_lists(spans: Iterable[Span]) -> list[_DocList]:
    """The distinct document lists of the trace's RETRIEVER and RERANKER spans, in span order."""
    lists: list[_DocList] = []
    for span in spans:
        prefix = _DOCUMENT_PREFIXES.get(_kind(span))
        if prefix is None:
            continue
        found = _documents(span, prefix)
        if found is not None and found not in lists:
            lists.append(found)
    return lists


def _documents(span: Span, prefix: str) -> _DocList | None:
    """The span's documents in index order; None when it records none."""
    by_index: dict[int, dict[str, object]] = {}
    unplaced = False
    for key, value in span.attributes.items():
        if not key.startswith(prefix):
            continue
        match = _DOCUMENT_INDEX.match(key, len(prefix))
        if match is None:
            unplaced = True
            continue
        field = key[match.end() :]
        if field.startswith(_DOCUMENT_FIELD_PREFIX):
            name = field[len(_DOCUMENT_FIELD_PREFIX) :]
            if name in _DOCUMENT_FIELDS:
                by_index.setdefault(int(match.group(1)), {})[name] = value
    if not by_index:
        return _DocList((), truncated=True) if unplaced else None
    indexes = sorted(by_index)
    truncated = unplaced or indexes != list(range(len(indexes)))
    docs: list[_Doc] = []
    for index in indexes:
        doc = _document(by_index[index])
        if doc is None:
            truncated = True
        else:
            docs.append(doc)
    truncated = truncated or _front_evicted(docs)
    listing = _listing(span) if prefix == _DOCUMENT_PREFIXES["RETRIEVER"] else None
    if listing is not None:
        docs, listed_truncated, verified = _match_listing(docs, listing)
        truncated = truncated or listed_truncated
    else:
        verified = False
    truncated = truncated or (span.dropped_attributes > 0 and not verified)
    return _DocList(tuple(docs), truncated)


def _document(fields: Mapping[str, object]) -> _Doc | None:
    content = fields.get("content")
    if not isinstance(content, str):
        return None
    raw_id = fields.get("id")
    doc_id = _text_id(raw_id)
    metadata = fields.get("metadata")
    parsed = _parse(metadata) if isinstance(metadata, str) else metadata
    return _Doc(content, doc_id, parsed if isinstance(parsed, dict) else None, tuple(fields))


def _text_id(value: object) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    return value if isinstance(value, str) and value else None


def _front_evicted(docs: Sequence[_Doc]) -> bool:
    """Whether the first document lost attributes the others record before their content.

    The SDK evicts a span's oldest attributes first, so a document cut by the
    attribute limit is the first surviving one, missing its leading fields.
    """
    if not docs[1:]:
        return False
    first, pattern = docs[0].fields, max((doc.fields for doc in docs[1:]), key=len)
    leading = pattern[: pattern.index("content")] if "content" in pattern else ()
    return any(field not in first for field in leading)


def _listing(span: Span) -> list[Mapping[str, object]] | None:
    """LangChain's copy of the documents in the retriever's ``output.value``, when it has one."""
    output = span.attributes.get("output.value")
    if not isinstance(output, str) or span.attributes.get("output.mime_type") != _JSON_MIME:
        return None
    parsed = _parse(output)
    documents = parsed.get("documents") if isinstance(parsed, dict) else None
    if not isinstance(documents, list):
        return None
    if not all(
        isinstance(item, dict) and isinstance(item.get("page_content"), str) for item in documents
    ):
        return None
    return documents


def _match_listing(
    docs: list[_Doc], listing: Sequence[Mapping[str, object]]
) -> tuple[list[_Doc], bool, bool]:
    """The documents with the listing's ids; whether it shows them cut; whether it matches all."""
    if len(listing) > len(docs):
        return docs, True, False
    if len(listing) < len(docs):
        return docs, False, False
    matched: list[_Doc] = []
    verified, truncated = True, False
    for doc, item in zip(docs, listing, strict=True):
        full = str(item["page_content"])  # a string: checked by _listing
        if full == doc.content:
            listed_id = _text_id(item.get("id"))
            matched.append(
                doc if doc.doc_id or listed_id is None else doc._replace(doc_id=listed_id)
            )
            continue
        verified = False
        truncated = truncated or (len(doc.content) < len(full) and full.startswith(doc.content))
        matched.append(doc)
    return (matched if verified else docs), truncated, verified


def _cut_by_value_limit(chosen: _DocList, spans: Iterable[Span]) -> bool:
    """Whether a value-length limit the trace shows could have cut a document.

    A JSON value cut by ``max_attribute_length`` no longer parses, and its length is
    the limit; a document content that long may have been cut the same way.
    """
    limit = None
    for span in spans:
        for key in ("input", "output"):
            value = span.attributes.get(f"{key}.value")
            if (
                isinstance(value, str)
                and span.attributes.get(f"{key}.mime_type") == _JSON_MIME
                and (limit is None or len(value) < limit)
                and isinstance(_parse(value), _ParseError)
            ):
                limit = len(value)
    return limit is not None and any(len(doc.content) >= limit for doc in chosen.docs)


def _choose_list(lists: Sequence[_DocList], prompt: str) -> _DocList | str:
    """The one document list the answer was given, or the reason code when there is none."""
    if not lists:
        return "no_retrieval_recorded"
    if len(lists) == 1:
        return lists[0]
    shown = [found for found in lists if _all_in_prompt(found, prompt)]
    return shown[0] if len(shown) == 1 else "several_retrievals"


def _all_in_prompt(found: _DocList, prompt: str) -> bool:
    return bool(prompt) and all(_needle(doc) and _needle(doc) in prompt for doc in found.docs)


def _needle(doc: _Doc) -> str:
    return doc.content.strip()[:_NEEDLE_CHARS]


def _source(index: int, doc: _Doc) -> dict[str, object]:
    metadata = dict(doc.metadata) if doc.metadata is not None else {}
    doc_id = doc.doc_id or _text_id(metadata.get("doc_id")) or f"retrieval.documents.{index}"
    source: dict[str, object] = {"text": doc.content, "doc_id": doc_id}
    chunk_id = _text_id(metadata.get("chunk_id"))
    if chunk_id is not None:
        source["chunk_id"] = chunk_id
    uri = metadata.get("source")
    if isinstance(uri, str) and uri:
        source["uri"] = uri
    if metadata:
        source["metadata"] = metadata
    return source


# --- The numbering the prompt shows --------------------------------------------


class _PromptEvidence:
    """What the answering call's prompt says about how the documents were numbered.

    Each document is looked for (its first 200 characters, stripped) in the text
    that follows each numbered header at a line start, up to the next header. The
    prompt contradicts the list when a document it shows under a header sits under
    a number its position does not give it under either base, when it numbers some
    documents and leaves others out, or when a header of the same kind numbers a
    source past the list's end (LlamaIndex's citation chunks of a split node).
    """

    def __init__(self, prompt: str, docs: Sequence[_Doc]) -> None:
        segments = _segments(prompt)
        numbered: list[set[int]] = []
        matched: list[_Segment] = []
        for doc in docs:
            needle = _needle(doc)
            found = [segment for segment in segments if needle and needle in segment.text]
            numbered.append({segment.number for segment in found})
            matched.extend(found)
        self.base: int | None = None
        self.contradicted = False
        if not any(numbered):
            return
        if any(not (_needle(doc) and _needle(doc) in prompt) for doc in docs):
            self.contradicted = True
            return
        highest = _highest_number(segments, matched)
        fitting = [
            base
            for base in (0, 1)
            if highest < len(docs) + base
            and all(
                not numbers or index + base in numbers for index, numbers in enumerate(numbered)
            )
        ]
        if not fitting:
            self.contradicted = True
            return
        full = [base for base in fitting if all(numbered)]
        if len(full) == 1:
            self.base = full[0]


class _Segment(NamedTuple):
    position: int
    """Where the header starts in the prompt."""
    number: int
    style: str
    """``source`` (``Source 1:``, ``Source ID: 1``) or ``bracket`` (``[1]``)."""
    text: str
    """What follows the header, up to the next one."""


def _segments(prompt: str) -> list[_Segment]:
    headers = list(_HEADER.finditer(prompt))
    segments: list[_Segment] = []
    for position, header in enumerate(headers):
        end = headers[position + 1].start() if position + 1 < len(headers) else len(prompt)
        style = "source" if header.group(1) is not None else "bracket"
        number = int(header.group(1) or header.group(2))
        segments.append(_Segment(header.start(), number, style, prompt[header.end() : end]))
    return segments


def _highest_number(segments: Sequence[_Segment], matched: Sequence[_Segment]) -> int:
    """The highest number a header of the documents' kind gives, from the first that holds one.

    Headers before the first document's (a prompt's worked example) are not counted.
    """
    first = min(segment.position for segment in matched)
    styles = {segment.style for segment in matched}
    return max(s.number for s in segments if s.position >= first and s.style in styles)


def as_recorded(position: int, row: TraceRow | Bad) -> Recorded:
    """A trace's row (or why it is not one) as the `Recorded` at ``position``."""
    if isinstance(row, Bad):
        return Recorded(line=position, row=None, malformed=row.reason)
    return Recorded(
        line=position,
        row=row.row,
        unassessed=row.unassessed,
        index_base_from_prompt=row.from_prompt,
    )
