"""Ragas evaluation datasets: ``citemark check --from ragas DATASET``.

Ragas keeps a RAG run as a ``SingleTurnSample``, and an ``EvaluationDataset`` of
them writes itself as JSONL (``to_jsonl``: one sample per line, unset fields
left out) or as CSV (``to_csv``: one sample per record, list fields written as
Python ``repr`` lists such as ``['first', 'second']``). Both are read, told apart by
content: a file whose first non-blank line starts with ``{`` is JSONL, any other
is CSV. A sample becomes a row:

* ``question`` ← ``user_input``; ``answer`` ← ``response``.
* ``sources[i].text`` ← ``retrieved_contexts[i]``, in list order.
* ``sources[i].doc_id`` ← ``retrieved_context_ids[i]`` (a string, or an integer
  written as a string) when the sample has ids; else the source's 1-based
  position in the list (``"1"``, ``"2"``, ...), as ``--map`` names a source
  without one.
* ``id``: none. Ragas records no row id, so a row is known by its line (JSONL) or
  by its 1-based position among the CSV's records (the header is not counted).
* ``index_base`` ← ``--index-base`` when given, else citemark's default.

Ragas records no numbering: the order of ``retrieved_contexts`` is taken as the
order the model saw them, numbered from ``--index-base``. That is an assumption
the dataset cannot confirm (see ``KNOWN_LIMITATIONS.md``). A sample without
``retrieved_contexts`` is un-assessed (``no_retrieval_recorded``). The ground-truth
fields (``reference``, ``reference_contexts``) are not what the model saw and are
not read.

CSV list cells are parsed as Python literals only after their syntax tree is
checked to be one list of string (or integer) constants: nothing is evaluated. A
reason for a malformed line names the Ragas field at fault, never a value.
"""

from __future__ import annotations

import ast
import csv
from typing import TYPE_CHECKING, Final

from citemark._formats._base import Recorded
from citemark._strictjson import StrictJSONError, loads_strict

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping, Sequence
    from typing import BinaryIO

    from citemark._formats._base import ReadOptions

__all__ = ["read"]

# The malformed-line reason for each StrictJSONError kind, as the native reader words it.
_STRICT_JSON_REASONS: Final = {
    "duplicate key": "not strict JSON: an object gives a key twice",
    "non-finite number": "not strict JSON: it holds NaN or Infinity",
    "nesting too deep": "not valid JSON: nested too deep",
}
_CSV_FIELD_LIMIT: Final = 2**31 - 1


def read(handle: BinaryIO, options: ReadOptions) -> Iterator[Recorded]:
    """Read a Ragas dataset (JSONL or CSV), one `Recorded` per sample, streaming.

    Args:
        handle: The file, opened in binary mode.
        options: ``index_base`` is the number of the first source, or None for
            citemark's default.

    Yields:
        One `Recorded` per sample, in file order; blank JSONL lines are skipped.
    """
    lines = text_lines(handle)
    first = next(lines, None)
    if first is None:
        return
    lines = _chain(first, lines)
    if first[1] is not None and first[1].lstrip().startswith("{"):
        for number, value in json_lines(lines):
            yield _recorded(number, value, options)
        return
    for number, record in csv_records(text for _, text in lines):
        yield _recorded(number, record, options, from_csv=True)


# --- Line and record helpers (the DeepEval reader uses them too) ---------------------


def text_lines(handle: BinaryIO) -> Iterator[tuple[int, str | None]]:
    """The file's lines from its first non-blank one, as ``(1-based number, text)``.

    Each line is decoded as UTF-8 (a byte-order mark on the first line is dropped)
    and keeps its line break; a line that is not UTF-8 is given as None.
    """
    started = False
    for number, raw in enumerate(handle, start=1):
        try:
            text: str | None = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError:
            text = None
        if not started and text is not None and not text.strip():
            continue
        started = True
        yield number, text


def json_lines(
    lines: Iterable[tuple[int, str | None]],
) -> Iterator[tuple[int, Mapping[str, object] | str]]:
    """Each non-blank line parsed as a strict JSON object, or the reason it is not one."""
    for number, text in lines:
        if text is None:
            yield number, "not UTF-8 text"
            continue
        if not text.strip():
            continue
        try:
            value = loads_strict(text, max_bytes=None)
        except StrictJSONError as exc:
            yield number, _STRICT_JSON_REASONS.get(exc.kind, "not valid JSON")
            continue
        yield number, value if isinstance(value, dict) else "not a JSON object"


def csv_records(lines: Iterable[str | None]) -> Iterator[tuple[int, Mapping[str, object] | str]]:
    """Each CSV record after the header as ``(1-based position, {column: cell})``, or a reason.

    An empty cell is left out of its record (CSV cannot tell it from a missing
    value). A record with another number of cells than the header has columns is
    given as a reason; a line that is not UTF-8, or quoting the csv module cannot
    split, ends the file with a reason, since the records after it cannot be found.
    """
    if csv.field_size_limit() < _CSV_FIELD_LIMIT:
        # A retrieved context is often longer than the csv module's default 128 KiB cap.
        csv.field_size_limit(_CSV_FIELD_LIMIT)
    reader = csv.reader(_utf8_only(lines))
    header: Sequence[str] | None = None
    position = 0
    while True:
        try:
            cells = next(reader, None)
        except (csv.Error, _NotUTF8Error) as exc:
            reason = "not UTF-8 text" if isinstance(exc, _NotUTF8Error) else "not valid CSV"
            yield position + 1, reason
            return
        if cells is None:
            return
        if header is None:
            header = cells
            continue
        if not cells:
            continue
        position += 1
        if len(cells) != len(header):
            yield position, f"CSV record has {len(cells)} fields for {len(header)} columns"
        else:
            yield position, {name: cell for name, cell in zip(header, cells, strict=True) if cell}


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


class _NotUTF8Error(ValueError):
    """A CSV line is not UTF-8."""


def _utf8_only(lines: Iterable[str | None]) -> Iterator[str]:
    for text in lines:
        if text is None:
            raise _NotUTF8Error
        yield text


def _chain(
    first: tuple[int, str | None], rest: Iterator[tuple[int, str | None]]
) -> Iterator[tuple[int, str | None]]:
    yield first
    yield from rest


# --- One sample to one row -------------------------------------------------------


class _MalformedError(ValueError):
    """A sample is not a row; the message is a structural reason written here."""


def _recorded(
    line: int, value: Mapping[str, object] | str, options: ReadOptions, *, from_csv: bool = False
) -> Recorded:
    if isinstance(value, str):
        return Recorded(line=line, row=None, malformed=value)
    try:
        return _sample(line, value, options, from_csv=from_csv)
    except _MalformedError as exc:
        return Recorded(line=line, row=None, malformed=str(exc))


def _sample(
    line: int, value: Mapping[str, object], options: ReadOptions, *, from_csv: bool
) -> Recorded:
    answer = value.get("response")
    if answer is None:
        msg = "response is missing"
        raise _MalformedError(msg)
    if not isinstance(answer, str):
        msg = "response must be a string"
        raise _MalformedError(msg)
    question = value.get("user_input")
    if question is not None and not isinstance(question, str):
        msg = "user_input must be a string (a multi-turn sample is not read)"
        raise _MalformedError(msg)
    row: dict[str, object] = {"question": question or "", "answer": answer}
    if options.index_base is not None:
        row["index_base"] = options.index_base
    contexts = _list_field(value, "retrieved_contexts", from_csv=from_csv)
    if contexts is None:
        row["sources"] = []
        return Recorded(line=line, row=row, unassessed="no_retrieval_recorded")
    if not all(isinstance(text, str) for text in contexts):
        msg = "retrieved_contexts must be a list of strings"
        raise _MalformedError(msg)
    ids = _list_field(value, "retrieved_context_ids", from_csv=from_csv)
    if ids is None:
        ids = [str(number) for number in range(1, len(contexts) + 1)]
    elif not all(isinstance(item, str) or _is_int(item) for item in ids):
        msg = "retrieved_context_ids must be a list of strings or integers"
        raise _MalformedError(msg)
    elif len(ids) != len(contexts):
        msg = f"retrieved_context_ids has {len(ids)} entries for {len(contexts)} retrieved_contexts"
        raise _MalformedError(msg)
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
            raise _MalformedError(msg)
        return list(parsed)
    if not isinstance(field, list):
        msg = f"{name} must be a list"
        raise _MalformedError(msg)
    return field


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
