"""Phoenix span tables saved as Parquet: ``citemark check --from openinference SPANS.parquet``.

Phoenix turns OpenInference spans into a dataframe, one span per row: ``name``,
``span_kind``, ``parent_id``, ``start_time``, ``end_time``, ``context.trace_id``,
``context.span_id`` and the span's attributes under ``attributes.*`` columns. Its
offline path (``TraceDataset.from_spans(...).dataframe``) nests them one level deep
(``attributes.retrieval`` holds ``{"documents": [{"document": {"content", ...}}]}``);
its server's ``get_spans_dataframe`` keeps dotted columns
(``attributes.retrieval.documents`` holds ``[{"document.content": ...}]``). Both
are read: each row's attributes are flattened back into the OpenInference keys the
spans carried (``retrieval.documents.0.document.content``), and each trace is then
read exactly as ``citemark._pipelines.readers.openinference`` reads the same spans as JSON:
the same question, answer, sources, ``index_base`` and un-assessed reasons.

Two things the table loses are handled here:

* Phoenix re-nests ``retrieval.documents.{i}`` into a list, so when the SDK's
  attribute limit evicted the first documents the survivors are renumbered from 0
  and the gap is gone. The limit evicts a span's oldest attributes first, and the
  instrumentors record the retriever's ``input.value`` before its documents, so a
  RETRIEVER span with documents but no ``input.value`` is read as having dropped
  attributes: its row is un-assessed as ``sources_truncated`` unless the span's own
  ``output.value`` listing shows every document whole.
* A Parquet struct column gives every row every key of every row, filling the
  missing ones with null, so a null value is read as absent (a document's metadata
  key that was null is dropped).

The file is read twice, by row group batches (pyarrow's ``iter_batches``), never
whole: first only the trace id column, to learn the row of each trace's last span
(one id per trace is kept), then all the columns the reader uses, and a trace is
emitted when its last span is read, whatever order its spans are in. pyarrow is an
optional dependency, imported only when a Parquet file is read. The footer is
capped before pyarrow parses it (`citemark._pipelines.readers._parquet.parquet_file`).
"""

from __future__ import annotations

import datetime as dt
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, BinaryIO, Final

from citemark._contract.errors import CitemarkError
from citemark._pipelines.readers._base import Recorded
from citemark._pipelines.readers._parquet import parquet_file
from citemark._pipelines.readers.openinference import (
    MAX_OPEN_SPANS,
    Bad,
    Span,
    TraceRow,
    as_recorded,
    assess_trace,
    bare_row,
)

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

    from citemark._pipelines.readers._base import ReadOptions

__all__ = ["read"]

_TRACE_ID: Final = "context.trace_id"
_SPAN_ID: Final = "context.span_id"
_PARENT_ID: Final = "parent_id"
_SPAN_KIND: Final = "span_kind"
_END_TIME: Final = "end_time"
_ATTRIBUTES: Final = "attributes."
_KIND_KEY: Final = "openinference.span.kind"
# Attributes OpenInference records as JSON text and Phoenix loads into objects: kept
# whole as values (the OpenInference reader takes them either way), never flattened.
_OBJECT_KEYS: Final = ("metadata", "llm.prompt_template.variables", "tool.parameters")
_RETRIEVED: Final = "retrieval.documents."
_BATCH_ROWS: Final = 1_024
_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def read(handle: BinaryIO, options: ReadOptions) -> Iterator[Recorded]:
    """Read a Phoenix span table saved as Parquet, one `Recorded` per trace.

    Args:
        handle: The Parquet file, opened in binary mode; it must be seekable.
        options: ``index_base`` is the number of the first source, or None to take
            it from the recorded prompt where that is unambiguous.

    Yields:
        One `Recorded` per trace that holds an answer or a retrieval (or per
        malformed span row), in the order the traces' last spans appear.

    Raises:
        CitemarkError: pyarrow is not installed, or the file's footer is over
            `citemark._pipelines.readers._parquet.MAX_FOOTER_BYTES` (very many row groups).
    """
    try:
        import pyarrow.parquet as pq  # noqa: PLC0415 - optional, only for Parquet input
    except ImportError:
        msg = "reading a Phoenix Parquet span table needs pyarrow: pip install pyarrow"
        raise CitemarkError(msg) from None
    try:
        table = parquet_file(pq, handle)
        names = set(table.schema_arrow.names)
    except CitemarkError:
        raise
    except Exception:  # noqa: BLE001 - any pyarrow failure means the same thing here
        yield Recorded(line=1, row=None, malformed="not a readable Parquet file")
        return
    missing = [name for name in (_TRACE_ID, _SPAN_ID) if name not in names]
    if missing:
        reason = f"the Parquet file has no {missing[0]} column, so it is not a Phoenix span table"
        yield Recorded(line=1, row=None, malformed=reason)
        return
    columns = [name for name in sorted(names) if _used(name)]
    last_rows = _last_rows(table)
    yield from _Traces(options, last_rows).read(_rows(table, columns))


def _used(name: str) -> bool:
    return name in (_TRACE_ID, _SPAN_ID, _PARENT_ID, _SPAN_KIND, _END_TIME) or name.startswith(
        _ATTRIBUTES
    )


def _rows(table: Any, columns: Sequence[str]) -> Iterator[dict[str, Any]]:  # noqa: ANN401
    """The table's rows as dicts of the named columns, one batch at a time."""
    for batch in table.iter_batches(batch_size=_BATCH_ROWS, columns=list(columns)):
        yield from batch.to_pylist()


def _last_rows(table: Any) -> dict[str, int]:  # noqa: ANN401
    """For each trace id, the 0-based row of its last span (the trace id column alone)."""
    last: dict[str, int] = {}
    row = 0
    for batch in table.iter_batches(batch_size=_BATCH_ROWS * 64, columns=[_TRACE_ID]):
        for trace_id in batch.column(0).to_pylist():
            if isinstance(trace_id, str) and trace_id:
                last[trace_id] = row
            row += 1
    return last


class _Traces:
    """Collects each trace's spans and emits its row once its last span is read."""

    def __init__(self, options: ReadOptions, last_rows: Mapping[str, int]) -> None:
        self._options = options
        self._last_rows = last_rows
        self._open: OrderedDict[str, dict[str, Span]] = OrderedDict()
        self._held = 0
        self._emitted = 0

    def read(self, rows: Iterator[dict[str, Any]]) -> Iterator[Recorded]:
        for number, row in enumerate(rows):
            span = _span(number + 1, row)
            if isinstance(span, Bad):
                yield self._emit(span)
                continue
            spans = self._open.setdefault(span.trace_id, {})
            if span.span_id not in spans:
                spans[span.span_id] = span
                self._held += 1
            if self._last_rows.get(span.trace_id) == number:
                yield from self._close(span.trace_id)
            while self._held > MAX_OPEN_SPANS and self._open:
                yield from self._close(next(iter(self._open)), incomplete=True)
        while self._open:
            yield from self._close(next(iter(self._open)))

    def _close(self, trace_id: str, *, incomplete: bool = False) -> Iterator[Recorded]:
        spans = self._open.pop(trace_id)
        self._held -= len(spans)
        roots = [span for span in spans.values() if span.parent_id is None]
        if incomplete or len(roots) != 1:
            yield self._emit(TraceRow(bare_row(trace_id, "", ""), "trace_incomplete"))
            return
        row = assess_trace(trace_id, roots[0], spans, self._options)
        if row is not None:
            yield self._emit(row)

    def _emit(self, row: TraceRow | Bad) -> Recorded:
        self._emitted += 1
        return as_recorded(self._emitted, row)


def _span(number: int, row: Mapping[str, Any]) -> Span | Bad:
    """One table row as the OpenInference span it was, attributes flattened back."""
    trace_id, span_id = row.get(_TRACE_ID), row.get(_SPAN_ID)
    if not isinstance(trace_id, str) or not trace_id:
        return Bad(0, f"span row {number} of the table has no trace id")
    if not isinstance(span_id, str) or not span_id:
        return Bad(0, f"span row {number} of the table has no span id")
    parent = row.get(_PARENT_ID)
    attributes: dict[str, object] = {}
    for column, value in row.items():
        if column.startswith(_ATTRIBUTES):
            _flatten(column[len(_ATTRIBUTES) :], value, attributes)
    kind = row.get(_SPAN_KIND)
    if _KIND_KEY not in attributes and isinstance(kind, str):
        attributes[_KIND_KEY] = kind
    return Span(
        trace_id.lower(),
        span_id.lower(),
        parent.lower() if isinstance(parent, str) and parent else None,
        attributes,
        _nanos(row.get(_END_TIME)),
        int(_evicted(attributes)),
    )


def _flatten(key: str, value: object, into: dict[str, object]) -> None:
    """Put ``value`` under ``key`` as OpenInference's flat attribute keys, nulls left out."""
    if value is None:
        return
    if key.endswith(_OBJECT_KEYS):
        into[key] = _without_nulls(value)
    elif isinstance(value, dict):
        for name, item in value.items():
            _flatten(f"{key}.{name}", item, into)
    elif isinstance(value, list) and any(isinstance(item, dict) for item in value):
        for index, item in enumerate(value):
            _flatten(f"{key}.{index}", item, into)
    else:
        into[key] = value


def _without_nulls(value: object) -> object:
    if isinstance(value, dict):
        return {name: _without_nulls(item) for name, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_without_nulls(item) for item in value]
    return value


def _evicted(attributes: Mapping[str, object]) -> bool:
    """Whether a span with documents lost its first attributes to the attribute limit."""
    has_documents = any(key.startswith(_RETRIEVED) for key in attributes)
    return has_documents and "input.value" not in attributes


def _nanos(value: object) -> int:
    if not isinstance(value, dt.datetime):
        return 0
    moment = value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
    return (moment - _EPOCH) // dt.timedelta(microseconds=1) * 1000
