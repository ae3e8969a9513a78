"""Ragas evaluation datasets: ``citemark check --from ragas DATASET``.

Ragas keeps a RAG run as a ``SingleTurnSample``, and an ``EvaluationDataset`` of
them writes itself as JSONL (``to_jsonl``: one sample per line, unset fields
left out) or as CSV (``to_csv``: one sample per record, list fields written as
Python ``repr`` lists such as ``['first', 'second']``); a user dumping
``dataset.to_list()`` writes one JSON array of the samples, and
``dataset.to_pandas().to_parquet(...)`` a Parquet table. All four are read, told apart
by content: a file that starts with ``PAR1`` is Parquet (read a row group batch at a
time with pyarrow, imported only then; list columns are real lists), one whose first
non-blank byte is ``[`` a JSON array (streamed element by element,
`citemark._pipelines.readers._records`), ``{`` JSONL (or samples pretty-printed one after
another), anything else CSV. A sample becomes a row:

* ``question`` ← ``user_input``; ``answer`` ← ``response``.
* ``sources[i].text`` ← ``retrieved_contexts[i]``, in list order.
* ``sources[i].doc_id`` ← ``retrieved_context_ids[i]`` (a string, or an integer
  written as a string) when the sample has ids; else the source's 1-based
  position in the list (``"1"``, ``"2"``, ...), as ``--map`` names a source
  without one.
* ``id``: none. Ragas records no row id, so a row is known by its line (JSONL, the
  line a pretty-printed sample starts on), by its 1-based position in a JSON array or
  a Parquet table, or by its 1-based position among the CSV's records (the header is
  not counted).
* ``index_base`` ← ``--index-base`` when given, else citemark's default.

Ragas records no numbering: the order of ``retrieved_contexts`` is taken as the
order the model saw them, numbered from ``--index-base``. That is an assumption
the dataset cannot confirm (see ``KNOWN_LIMITATIONS.md``). A sample without
``retrieved_contexts`` is un-assessed (``no_retrieval_recorded``). The ground-truth
fields (``reference``, ``reference_contexts``) are not what the model saw and are
not read.

CSV list cells are parsed as Python literals only after their syntax tree is
checked to be one list of string (or integer) constants: nothing is evaluated. A
reason for a malformed line names the Ragas field at fault, never a value. CSV
quoting is read strictly (`citemark._pipelines.readers._common.csv_records`): a quoted cell
with text after its closing quote is one malformed record, and a quoted cell that is
never closed ends the file with a malformed record that says how many lines it
swallowed, instead of reading them as one cell.
"""

from __future__ import annotations

import ast
import io
from typing import TYPE_CHECKING, Final

from citemark._contract.errors import CitemarkError
from citemark._pipelines.readers._base import Recorded
from citemark._pipelines.readers._common import (
    MalformedError,
    csv_records,
    recorded_row,
    text_field,
    text_lines,
)
from citemark._pipelines.readers._parquet import parquet_file
from citemark._pipelines.readers._records import first_byte, json_records, json_values, peek

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from typing import BinaryIO

    from citemark._pipelines.readers._base import ReadOptions

__all__ = ["read"]

_PARQUET_MAGIC: Final = b"PAR1"
_BATCH_ROWS: Final = 1_024


def read(handle: BinaryIO, options: ReadOptions) -> Iterator[Recorded]:
    """Read a Ragas dataset (JSONL, JSON, CSV or Parquet), one `Recorded` per sample, streaming.

    Args:
        handle: The file, opened in binary mode.
        options: ``index_base`` is the number of the first source, or None for
            citemark's default.

    Yields:
        One `Recorded` per sample, in file order; blank JSONL lines are skipped.

    Raises:
        CitemarkError: the file is Parquet and pyarrow is not installed, or its footer
            is over `citemark._pipelines.readers._parquet.MAX_FOOTER_BYTES` (very many row groups).
    """
    head, handle = peek(handle, len(_PARQUET_MAGIC))
    if head == _PARQUET_MAGIC:
        yield from _parquet(handle, options)
        return
    first, handle = first_byte(handle)
    if first in {b"{", b"["}:
        for where, value in json_values(json_records(handle, "sample")):
            yield _recorded(where, value, options)
        return
    for number, record in csv_records(text for _, text in text_lines(handle)):
        yield _recorded(number, record, options, from_csv=True)


def _parquet(handle: BinaryIO, options: ReadOptions) -> Iterator[Recorded]:
    """The samples of ``dataset.to_pandas().to_parquet(...)``, a row group batch at a time."""
    try:
        import pyarrow.parquet as pq  # noqa: PLC0415 - optional, only for Parquet input
    except ImportError:
        msg = "reading a Ragas dataset saved as Parquet needs pyarrow: pip install pyarrow"
        raise CitemarkError(msg) from None
    if not handle.seekable():
        handle = io.BytesIO(handle.read())
    position = 0
    try:
        batches = parquet_file(pq, handle).iter_batches(batch_size=_BATCH_ROWS)
    except CitemarkError:
        raise
    except Exception:  # noqa: BLE001 - any pyarrow failure means the same thing here
        batches = None
    while batches is not None:
        try:
            batch = next(batches, None)
        except Exception:  # noqa: BLE001 - as above
            batch = None
            position += 1
            yield Recorded(position, None, malformed="the Parquet file cannot be read from here")
        if batch is None:
            return
        for row in batch.to_pylist():
            position += 1
            sample = {name: value for name, value in row.items() if value is not None}
            yield _recorded(position, sample, options)
    yield Recorded(line=1, row=None, malformed="not a readable Parquet file")


# --- CSV list cells ---------------------------------------------------------------


def repr_list(text: str) -> list[str | int] | None:
    """A Python ``repr`` list of strings or integers, parsed without evaluating anything.

    The text's syntax tree must be exactly one list whose items are string or
    integer constants (not booleans); the items are then read off the tree, as
    ``ast.literal_eval`` would read them. Anything else is None.
    """
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if not isinstance(node, ast.List):
        return None
    items: list[str | int] = []
    for item in node.elts:
        if not isinstance(item, ast.Constant) or isinstance(item.value, bool):
            return None
        if not isinstance(item.value, str | int):
            return None
        items.append(item.value)
    return items


# --- One sample to one row -------------------------------------------------------


def _recorded(
    line: int, value: Mapping[str, object] | str, options: ReadOptions, *, from_csv: bool = False
) -> Recorded:
    return recorded_row(line, value, lambda v: _sample(line, v, options, from_csv=from_csv))


def _sample(
    line: int, value: Mapping[str, object], options: ReadOptions, *, from_csv: bool
) -> Recorded:
    answer = text_field(value, "response", required=True)
    question = text_field(value, "user_input", note=" (a multi-turn sample is not read)")
    row: dict[str, object] = {"question": question or "", "answer": answer}
    if options.index_base is not None:
        row["index_base"] = options.index_base
    contexts = _list_field(value, "retrieved_contexts", from_csv=from_csv)
    if contexts is None:
        row["sources"] = []
        return Recorded(line=line, row=row, unassessed="no_retrieval_recorded")
    if not all(isinstance(text, str) for text in contexts):
        msg = "retrieved_contexts must be a list of strings"
        raise MalformedError(msg)
    ids = _list_field(value, "retrieved_context_ids", from_csv=from_csv)
    if ids is None:
        ids = [str(number) for number in range(1, len(contexts) + 1)]
    elif not all(isinstance(item, str) or _is_int(item) for item in ids):
        msg = "retrieved_context_ids must be a list of strings or integers"
        raise MalformedError(msg)
    elif len(ids) != len(contexts):
        msg = f"retrieved_context_ids has {len(ids)} entries for {len(contexts)} retrieved_contexts"
        raise MalformedError(msg)
    row["sources"] = [
        {"text": text, "doc_id": str(doc_id)} for text, doc_id in zip(contexts, ids, strict=True)
    ]
    return Recorded(line=line, row=row)


def _list_field(value: Mapping[str, object], name: str, *, from_csv: bool) -> list[object] | None:
    """A list field of the sample, or None when it is not recorded."""
    field = value.get(name)
    if field is None:
        return None
    if from_csv:
        parsed = repr_list(field) if isinstance(field, str) else None
        if parsed is None:
            msg = f"{name} is not a list as Ragas writes it in CSV"
            raise MalformedError(msg)
        return list(parsed)
    if not isinstance(field, list):
        msg = f"{name} must be a list"
        raise MalformedError(msg)
    return field


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
