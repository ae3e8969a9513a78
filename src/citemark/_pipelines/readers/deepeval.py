"""DeepEval test cases: ``citemark check --from deepeval DATASET``.

DeepEval keeps a RAG run as an ``LLMTestCase``, and an ``EvaluationDataset`` writes
its test cases with ``save_as(file_type, directory, include_test_cases=True)`` as
JSON (one array of objects), JSONL (one object per line) or CSV. All three are
read, told apart by content: a file whose first non-blank character is ``[`` is
JSON, ``{`` is JSONL, anything else CSV. A test case becomes a row:

* ``id`` ← ``name`` when the test case has one; ``question`` ← ``input``;
  ``answer`` ← ``actual_output``.
* ``sources`` ← ``retrieval_context``, in list order, each source named by its
  1-based position (``"1"``, ``"2"``, ...: DeepEval records no per-context id).
  A ``RetrievedContextData(context, source)``, which ``save_as`` writes as the
  string ``deepeval_source=SOURCE,deepeval_context=TEXT``, becomes a source with
  ``doc_id`` SOURCE and text TEXT; the string is split at its first
  ``,deepeval_context=`` as DeepEval's own loader splits it (a plain context that
  happens to start with ``deepeval_source=`` is read the same way).
* ``index_base`` ← ``--index-base`` when given, else citemark's default.

In CSV and JSONL ``save_as`` joins ``retrieval_context`` into one string with
``|``, which a context may itself hold: such a row is un-assessed
(``contexts_joined``) and never split. A joined string with no ``|`` at all can only
be one context, and is read as one source. A test case with no
``retrieval_context`` is un-assessed (``no_retrieval_recorded``). ``context`` is
DeepEval's ground truth, not what the model saw, and is not read.

DeepEval records no numbering: the list order is taken as the order the model saw
(see ``KNOWN_LIMITATIONS.md``). Rows are numbered (`Recorded.line`) by line in
JSONL, and by 1-based position among the test cases in JSON and CSV. The JSON array
is split into its elements as the file is read, a block at a time, and each element
is parsed on its own by citemark's strict JSON parser: the file is never held whole.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from citemark._model.strictjson import StrictJSONError, line_reason, loads_strict
from citemark._pipelines.readers._base import Recorded
from citemark._pipelines.readers._common import (
    JsonTokens,
    MalformedError,
    csv_records,
    json_lines,
    recorded_row,
    text_field,
    text_lines,
)

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from typing import BinaryIO

    from citemark._pipelines.readers._base import ReadOptions

__all__ = ["read"]

_DELIMITER: Final = "|"
_RETRIEVED_CONTEXT: Final = re.compile(
    r"deepeval_source=(?P<source>.*?),deepeval_context=(?P<context>.*)", re.DOTALL
)
_BLOCK: Final = 1 << 16
_NON_BLANK: Final = re.compile(rb"[^ \t\r\n]")
_OPEN_ARRAY: Final = ord("[")
_CLOSE_ARRAY: Final = ord("]")
_ELEMENT_ENDS: Final = frozenset(b",]")
_OPENERS: Final = frozenset(b"[{")
_CLOSERS: Final = frozenset(b"]}")


def read(handle: BinaryIO, options: ReadOptions) -> Iterator[Recorded]:
    """Read DeepEval test cases (JSON, JSONL or CSV), one `Recorded` per test case.

    Args:
        handle: The file, opened in binary mode.
        options: ``index_base`` is the number of the first source, or None for
            citemark's default.

    Yields:
        One `Recorded` per test case, in file order.
    """
    head = _first_byte(handle)
    if head == b"[":
        for position, element in enumerate(_array_elements(handle), start=1):
            yield _recorded(position, _element_value(element), options, joined=False)
        return
    lines = text_lines(handle)
    if head == b"{":
        for number, value in json_lines(lines):
            yield _recorded(number, value, options, joined=True)
        return
    for position, record in csv_records(text for _, text in lines):
        yield _recorded(position, record, options, joined=True)


def _first_byte(handle: BinaryIO) -> bytes:
    """The file's first non-blank byte (after any byte-order mark), leaving the handle at 0."""
    start = handle.tell()
    found = b""
    first = True
    while block := handle.read(_BLOCK):
        if first:
            block = block.removeprefix(b"\xef\xbb\xbf")
            first = False
        match = _NON_BLANK.search(block)
        if match:
            found = match.group()
            break
    handle.seek(start)
    return found


# --- A streaming splitter of one top-level JSON array ----------------------------


class _ArrayError(ValueError):
    """The file is not one JSON array; the message says where it stops being one."""


def _array_elements(handle: BinaryIO) -> Iterator[bytes | _ArrayError]:
    """The raw bytes of each element of the file's top-level JSON array, in order.

    Only strings, brackets, braces and commas are tracked (`JsonTokens`); each
    element's own syntax is left to the strict parser. When the file stops being an
    array (it is cut short, or something follows the closing bracket) the last item
    is an `_ArrayError`.
    """
    tokens = JsonTokens(handle)
    depth = 0
    start: int | None = None  # where the open element starts, once the array is open
    previous = 0
    closed = False
    for byte, begin, end in tokens:
        if closed:
            yield _ArrayError("something follows the JSON array")
            return
        if start is None:
            if byte != _OPEN_ARRAY or tokens.non_blank(previous, begin):
                yield _ArrayError("the file does not start with a JSON array")
                return
            start = end
        elif depth == 0 and byte in _ELEMENT_ENDS:
            element = tokens.take(start, begin)
            start = end
            tokens.keep(start)
            closed = byte == _CLOSE_ARRAY
            if not closed or element.strip():
                yield element
        elif byte in _OPENERS:
            depth += 1
        elif byte in _CLOSERS:
            depth -= 1
            if depth < 0:
                yield _ArrayError("the JSON array's brackets do not match")
                return
        previous = end
    if closed:
        if tokens.non_blank(previous, tokens.end):
            yield _ArrayError("something follows the JSON array")
        return
    if start is None and tokens.non_blank(previous, tokens.end):
        yield _ArrayError("the file does not start with a JSON array")
        return
    yield _ArrayError("the JSON array is not closed: the file is cut short")


def _element_value(element: bytes | _ArrayError) -> Mapping[str, object] | str:
    """One array element parsed strictly as an object, or the reason it is not one."""
    if isinstance(element, _ArrayError):
        return str(element)
    try:
        text = element.decode("utf-8")
    except UnicodeDecodeError:
        return "the test case is not UTF-8 text"
    if not text.strip():
        return "the JSON array has an empty element"
    try:
        value = loads_strict(text, max_bytes=None)
    except StrictJSONError as exc:
        return line_reason(exc)
    return value if isinstance(value, dict) else "the test case is not a JSON object"


# --- One test case to one row ------------------------------------------------------


def _recorded(
    line: int, value: Mapping[str, object] | str, options: ReadOptions, *, joined: bool
) -> Recorded:
    return recorded_row(line, value, lambda v: _test_case(line, v, options, joined=joined))


def _test_case(
    line: int, value: Mapping[str, object], options: ReadOptions, *, joined: bool
) -> Recorded:
    answer = text_field(value, "actual_output", required=True)
    question = text_field(value, "input")
    row: dict[str, object] = {}
    name = text_field(value, "name")
    if name is not None:
        row["id"] = name
    row |= {"question": question or "", "answer": answer}
    if options.index_base is not None:
        row["index_base"] = options.index_base
    contexts = value.get("retrieval_context")
    if contexts is None or contexts == "":
        row["sources"] = []
        return Recorded(line=line, row=row, unassessed="no_retrieval_recorded")
    if isinstance(contexts, str) and joined:
        if _DELIMITER in contexts:
            row["sources"] = []
            return Recorded(line=line, row=row, unassessed="contexts_joined")
        contexts = [contexts]
    if not isinstance(contexts, list) or not all(isinstance(text, str) for text in contexts):
        msg = "retrieval_context must be a list of strings"
        raise MalformedError(msg)
    row["sources"] = [_source(number, text) for number, text in enumerate(contexts, start=1)]
    return Recorded(line=line, row=row)


def _source(number: int, text: str) -> dict[str, object]:
    match = _RETRIEVED_CONTEXT.fullmatch(text)
    if match is None:
        return {"text": text, "doc_id": str(number)}
    return {"text": match.group("context"), "doc_id": match.group("source")}
