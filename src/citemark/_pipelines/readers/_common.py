"""What several ``--from`` readers share: strict loads, line and record splitting, documents.

* `loads` parses one record strictly (`citemark._model.strictjson.loads_strict`) and turns a
  failure into a `MalformedError` whose message is a structural reason
  (`citemark._model.strictjson.line_reason`), never a character of the input.
* `text_lines`, `json_lines` and `csv_records` stream a line-per-record file (Ragas,
  DeepEval); `JsonTokens` streams the strings and structural bytes of a JSON file
  that is not one value a line (a DeepEval array, MLflow traces pretty-printed), so
  a reader can cut it into its values without parsing it twice.
* `source_from_document` turns a LangChain ``Document`` dict into a citemark source;
  `question_from`, `answer_from_output`, `message_texts`, `prompt_index_base` and
  `prompt_order_differs` read what the trace formats (MLflow, LangSmith) record of a
  chain's input, output and prompt; a header number too long to number any source
  is no source's, never handed to ``int()``.
* `bounded_int` reads a trace's 64-bit number (a JSON number or decimal string)
  inside its range, or None, so a field of thousands of digits (which ``int()``
  refuses) or a non-ASCII digit costs its record, not the file.
"""

from __future__ import annotations

import csv
import re
from typing import TYPE_CHECKING, Final

from citemark._contract.syntax import BRACKET_HEADER_PATTERN
from citemark._model.strictjson import StrictJSONError, line_reason, loads_strict
from citemark._pipelines.readers._base import Recorded

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
    from typing import BinaryIO

    from citemark._pipelines.readers._base import ReadOptions

__all__ = [
    "INT64",
    "UINT64",
    "JsonTokens",
    "MalformedError",
    "answer_from_output",
    "bounded_int",
    "csv_records",
    "json_lines",
    "loads",
    "message_texts",
    "prompt_index_base",
    "prompt_order_differs",
    "question_from",
    "recorded_row",
    "retrieved_row",
    "source_from_document",
    "text_field",
    "text_lines",
]


_CSV_FIELD_LIMIT: Final = 2**31 - 1
_QUESTION_KEYS: Final = ("question", "query", "input")
# Source headers a prompt may number its sources with, at the start of a line.
_HEADERS: Final = (
    BRACKET_HEADER_PATTERN,
    re.compile(r"^Source ID: ?([0-9]+)", re.MULTILINE),
    re.compile(r"^Source ([0-9]+):", re.MULTILINE),
)


_INT_DIGITS: Final = 20
"""Digits of the longest number a trace field holds (uint64: 18446744073709551615)."""
_HEADER_DIGITS: Final = 18
"""Digits past which a prompt header's number is no source's (no prompt holds 10**18)."""
UINT64: Final = (0, 2**64 - 1)
"""The range of an OTLP/MLflow time or count in nanoseconds (``fixed64``, ``uint64``)."""
INT64: Final = (-(2**63), 2**63 - 1)
"""The range of an OTLP ``intValue``."""


class MalformedError(ValueError):
    """A record is not readable; the message is a structural reason written by citemark."""


def loads(raw: bytes | str, *, first: bool = False) -> object:
    """Parse one record's JSON strictly (no duplicate keys, NaN or Infinity).

    Args:
        raw: The record's text, or its UTF-8 bytes.
        first: The record starts the file: a UTF-8 byte-order mark is dropped.

    Raises:
        MalformedError: with a structural reason (not UTF-8, or `STRICT_JSON_REASONS`).
    """
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8-sig" if first else "utf-8")
        except UnicodeDecodeError:
            msg = "not UTF-8 text"
            raise MalformedError(msg) from None
    try:
        return loads_strict(raw, max_bytes=None)
    except StrictJSONError as exc:
        reason = line_reason(exc)
    raise MalformedError(reason)


# --- Line-per-record files ---------------------------------------------------------


def text_lines(handle: Iterable[bytes]) -> Iterator[tuple[int, str | None]]:
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
            yield number, line_reason(exc)
            continue
        yield number, value if isinstance(value, dict) else "not a JSON object"


class _NotUTF8Error(ValueError):
    """A CSV line is not UTF-8."""


def csv_records(lines: Iterable[str | None]) -> Iterator[tuple[int, Mapping[str, object] | str]]:
    """Each CSV record after the header as ``(1-based position, {column: cell})``, or a reason.

    An empty cell is left out of its record (CSV cannot tell it from a missing
    value). A record with another number of cells than the header has columns is
    given as a reason. Quoting is read strictly: a quoted cell with text after its
    closing quote is a malformed record and reading goes on at the next line; a
    quoted cell that is never closed would swallow every later record, so it ends the
    file with a reason that says how many lines could not be read. A line that is not
    UTF-8 ends the file with a reason, since the records after it cannot be found.
    """
    if csv.field_size_limit() < _CSV_FIELD_LIMIT:
        # A retrieved context is often longer than the csv module's default 128 KiB cap.
        csv.field_size_limit(_CSV_FIELD_LIMIT)
    source = _LineFeed(lines)
    header: Sequence[str] | None = None
    position = 0
    while True:
        reader = csv.reader(source, strict=True)
        while True:
            before = source.count
            try:
                cells = next(reader, None)
            except _NotUTF8Error:
                yield position + 1, "not UTF-8 text"
                return
            except csv.Error:
                reason = _csv_failure(source, source.count - before)
                if header is None:
                    yield position + 1, reason
                    return
                position += 1
                yield position, reason
                if source.ended:
                    return
                break  # a fresh reader goes on at the next line
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
                yield (
                    position,
                    {name: cell for name, cell in zip(header, cells, strict=True) if cell},
                )


def _csv_failure(source: _LineFeed, lines: int) -> str:
    if source.ended:
        return (
            f"not valid CSV: a quoted cell is never closed, so the {lines} lines from "
            "this record to the end of the file could not be read"
        )
    return "not valid CSV: a quoted cell has text after its closing quote"


class _LineFeed:
    """The lines the csv module reads, counted; one that is not UTF-8 raises."""

    def __init__(self, lines: Iterable[str | None]) -> None:
        self._lines = iter(lines)
        self.count = 0
        self.ended = False

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        try:
            text = next(self._lines)
        except StopIteration:
            self.ended = True
            raise
        if text is None:
            raise _NotUTF8Error
        self.count += 1
        return text


# --- A JSON file that is not one value a line --------------------------------------

_BLOCK: Final = 1 << 16
# A whole string (escapes consumed whole), else a string not closed in the buffer yet,
# else one structural byte. Possessive, so a long string is matched without backtracking.
_TOKEN: Final = re.compile(rb'"(?:[^"\\]++|\\.)*+"|["\[\]{},]', re.DOTALL)
_NON_BLANK: Final = re.compile(rb"[^ \t\r\n]")
_QUOTE: Final = ord('"')


class JsonTokens:
    """The strings and structural bytes of a JSON byte stream, read a block at a time.

    Iterating gives ``(byte, start, end)`` for each string (``byte`` is ``"``, the
    token runs from its opening quote to one past its closing one) and each of
    ``[ ] { } ,`` outside strings; ``start`` and ``end`` are offsets in the whole
    stream (after a byte-order mark). Nothing else is looked at: what lies between two
    tokens (numbers, literals, colons, blanks) is left to the strict parser, and can
    be looked at with `non_blank` or cut out with `take`. A string not closed by the
    end of the file is given as a last token that runs to the end. The bytes from
    `keep` on are held (call it as values end, so memory is bounded by the largest
    value); a string split over blocks is read on with doubling reads, so a long one is
    scanned in linear time.
    """

    def __init__(self, handle: BinaryIO, head: bytes = b"") -> None:
        """Read ``handle``, after ``head`` (bytes already read from it, if any)."""
        self._handle = handle
        self._buffer = bytearray(head.removeprefix(b"\xef\xbb\xbf"))
        self._base = 0
        """The stream offset of ``_buffer[0]``."""
        self._keep = 0
        self._first = not head
        self.end = len(self._buffer)
        """The stream offset one past the last byte read so far."""

    def keep(self, offset: int) -> None:
        """Let the bytes before stream offset ``offset`` go: they are not asked for again."""
        self._keep = max(self._keep, offset)

    def take(self, start: int, end: int) -> bytes:
        """The bytes from ``start`` to ``end`` (stream offsets, at or after `keep`)."""
        return bytes(self._buffer[start - self._base : end - self._base])

    def newlines(self, start: int, end: int) -> int:
        """How many line feeds lie between ``start`` and ``end`` (at or after `keep`)."""
        return self._buffer.count(b"\n", start - self._base, end - self._base)

    def non_blank(self, start: int, end: int) -> bool:
        """Whether anything but JSON whitespace lies between ``start`` and ``end``."""
        return self.first_non_blank(start, end) is not None

    def first_non_blank(self, start: int, end: int) -> int | None:
        """The stream offset of the first byte that is not JSON whitespace in the range, or None."""
        match = _NON_BLANK.search(self._buffer, start - self._base, end - self._base)
        return None if match is None else match.start() + self._base

    def __iter__(self) -> Iterator[tuple[int, int, int]]:
        buffer = self._buffer
        position = 0  # the stream offset to search from
        while True:
            match = _TOKEN.search(buffer, position - self._base)
            if match is not None and not (
                match.end() - match.start() == 1 and buffer[match.start()] == _QUOTE
            ):
                start = match.start() + self._base
                position = match.end() + self._base
                yield buffer[match.start()], start, position
                continue
            # No token, or a string not closed yet: read on. With no token at all, no
            # token starts before the end either, so the search goes on from there and a
            # long stretch without one (blanks, a number) is searched once, not per block.
            resume = self.end if match is None else match.start() + self._base
            wanted = _BLOCK if match is None else max(_BLOCK, self.end - resume)
            if not self._read(wanted, resume):
                if match is not None:
                    yield _QUOTE, resume, self.end
                return
            position = resume

    def _read(self, size: int, resume: int) -> bool:
        """Read up to ``size`` more bytes, dropping what is before `keep` and ``resume``."""
        block = self._handle.read(size)
        if not block:
            return False
        if self._first:
            block = block.removeprefix(b"\xef\xbb\xbf")
            self._first = False
        drop = min(self._keep, resume) - self._base
        if drop > 0:
            del self._buffer[:drop]
            self._base += drop
        self._buffer += block
        self.end += len(block)
        return True


# --- Documents, questions and answers as chains record them ------------------------


def source_from_document(number: int, document: object) -> dict[str, object]:
    """One LangChain ``Document`` dict (``page_content``, ``id``, ``metadata``) as a source.

    ``text`` is ``page_content``; ``doc_id`` the document's ``id``, else
    ``metadata["doc_id"]``, else its 1-based position ``number``; ``chunk_id`` is
    ``metadata["chunk_id"]`` and ``uri`` ``metadata["source"]`` when they are strings;
    ``metadata`` is kept whole.

    Args:
        number: The document's 1-based position in its list (named in a reason).
        document: The document as JSON gives it (``Document.model_dump()``).

    Returns:
        A citemark source dict (``text``, ``doc_id``, ``metadata``, maybe ``chunk_id``
        and ``uri``).

    Raises:
        MalformedError: the document is not an object, has no ``page_content`` string,
            or its ``metadata`` is not an object.
    """
    if not isinstance(document, dict):
        msg = f"document {number} is not a JSON object"
        raise MalformedError(msg)
    text = document.get("page_content")
    if not isinstance(text, str):
        msg = f"document {number} has no page_content string"
        raise MalformedError(msg)
    metadata = document.get("metadata")
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        msg = f"document {number} metadata is not a JSON object"
        raise MalformedError(msg)
    doc_id = document.get("id")
    if not isinstance(doc_id, str) or not doc_id:
        doc_id = metadata.get("doc_id")
    if not isinstance(doc_id, str) or not doc_id:
        doc_id = str(number)
    source: dict[str, object] = {"text": text, "doc_id": doc_id, "metadata": metadata}
    chunk_id = metadata.get("chunk_id")
    if isinstance(chunk_id, str):
        source["chunk_id"] = chunk_id
    uri = metadata.get("source")
    if isinstance(uri, str):
        source["uri"] = uri
    return source


def question_from(inputs: object) -> str:
    """The question in a chain's inputs: a string, or an object's question, query or input.

    An object with none of those keys but exactly one value, a string, gives that
    value (a traced function's only argument); anything else gives "".
    """
    if isinstance(inputs, str):
        return inputs
    if not isinstance(inputs, dict):
        return ""
    for key in _QUESTION_KEYS:
        value = inputs.get(key)
        if isinstance(value, str):
            return value
    if len(inputs) == 1:
        (only,) = inputs.values()
        if isinstance(only, str):
            return only
    return ""


def answer_from_output(output: object) -> str | dict[str, object] | None:
    """The answer in a chain's output: a string, or an object's ``answer`` string or object."""
    if isinstance(output, str):
        return output
    if isinstance(output, dict):
        answer = output.get("answer")
        if isinstance(answer, str | dict):
            return answer
    return None


def message_texts(messages: object) -> list[str]:
    """The text of each chat message: a ``content`` string, or its text parts."""
    if not isinstance(messages, list):
        return []
    texts: list[str] = []
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(
                part["text"]
                for part in content
                if isinstance(part, dict) and isinstance(part.get("text"), str)
            )
    return texts


def prompt_index_base(prompt: str, count: int) -> int | None:
    """0 when the prompt numbers ``count`` sources from 0, once each, in order; else None.

    A header is ``[n]``, ``Source ID: n`` or ``Source n:`` at the start of a line.
    The prompt shows 0-based numbering unambiguously when one header style reads
    exactly ``0, 1, ..., count-1`` and none reads ``1, ..., count``.
    """
    if count == 0:
        return None
    zero, one = list(range(count)), list(range(1, count + 1))
    seen = [[_header_number(number) for number in pattern.findall(prompt)] for pattern in _HEADERS]
    if zero in seen and one not in seen:
        return 0
    return None


def _header_number(digits: str) -> int:
    """A header's ASCII digits as a number; -1 (no source's) when there are too many.

    ``int()`` refuses more than 4,300 digits, and a number that long numbers no source.
    """
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= _HEADER_DIGITS else -1


def bounded_int(value: object, bounds: tuple[int, int]) -> int | None:
    """A JSON integer, or a string of ASCII decimal digits, inside ``bounds``; else None.

    A trace writes a 64-bit number as a JSON number or as a decimal string. Anything
    else (a bool, a float, a string with a digit that is not ASCII such as ``"²"``, a
    number outside ``bounds``, however many digits it has) is None; a string is never
    handed to ``int()`` when it is longer than any number in ``bounds`` could be
    (``int()`` refuses more than 4,300 digits with a ``ValueError``).

    Args:
        value: The field as JSON gives it.
        bounds: The lowest and highest value the field may hold (`UINT64`, `INT64`).
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        digits = value[1:] if value[:1] == "-" else value
        if not (digits.isascii() and digits.isdigit()):
            return None
        digits = digits.lstrip("0") or "0"
        if len(digits) > _INT_DIGITS:
            return None
        value = -int(digits) if value[:1] == "-" else int(digits)
    if not isinstance(value, int):
        return None
    low, high = bounds
    return value if low <= value <= high else None


def prompt_order_differs(prompt: str, texts: list[str]) -> bool:
    """Whether the prompt shows the texts, each found exactly once, in another order.

    False when any text is empty, missing from the prompt or found in it more than
    once: then the prompt settles nothing.
    """
    if len(texts) < 2:  # noqa: PLR2004 - one text has no order
        return False
    positions: list[int] = []
    for text in texts:
        found = prompt.find(text) if text else -1
        if found < 0 or prompt.find(text, found + 1) >= 0:
            return False
        positions.append(found)
    return positions != sorted(positions)


def recorded_row(
    line: int,
    value: Mapping[str, object] | str,
    build: Callable[[Mapping[str, object]], Recorded],
) -> Recorded:
    """The row ``build`` makes of a parsed record, or a malformed one for a reason.

    ``value`` is a record or the reason it could not be read (as `json_lines` and
    `csv_records` give them); a `MalformedError` from ``build`` is the record's reason.
    """
    if isinstance(value, str):
        return Recorded(line=line, row=None, malformed=value)
    try:
        return build(value)
    except MalformedError as exc:
        return Recorded(line=line, row=None, malformed=str(exc))


def text_field(
    value: Mapping[str, object], key: str, *, required: bool = False, note: str = ""
) -> str | None:
    """A record's string field: None when absent (refused when ``required``).

    Raises:
        MalformedError: the field is missing though required, or is not a string;
            the reason names the field (and ``note``), never its value.
    """
    found = value.get(key)
    if found is None and required:
        msg = f"{key} is missing"
        raise MalformedError(msg)
    if found is not None and not isinstance(found, str):
        msg = f"{key} must be a string{note}"
        raise MalformedError(msg)
    return found


def retrieved_row(  # noqa: PLR0913 - a trace's parts, as each trace reader found them
    line: int,
    row: dict[str, object],
    retrievals: Sequence[Sequence[object]],
    prompt: str,
    options: ReadOptions,
    *,
    answered: bool,
) -> Recorded:
    """A trace's row once its answer is known: its one retrieval as the sources, checked.

    The row is un-assessed when the trace holds no retrieval, several, a prompt that
    shows the documents in another order, or no answer (``answered`` False); the
    base is read off the prompt when no ``--index-base`` was given and the prompt
    numbers the documents from 0.
    """
    if not retrievals:
        return Recorded(line, row, unassessed="no_retrieval_recorded")
    if len(retrievals) > 1:
        return Recorded(line, row, unassessed="several_retrievals")
    sources = [source_from_document(n, d) for n, d in enumerate(retrievals[0], start=1)]
    row["sources"] = sources
    if prompt_order_differs(prompt, [str(source["text"]) for source in sources]):
        return Recorded(line, row, unassessed="source_order_not_recorded")
    if not answered:
        return Recorded(line, row, unassessed="no_answer")
    if options.index_base is None and prompt_index_base(prompt, len(sources)) == 0:
        row["index_base"] = 0
        return Recorded(line, row, index_base_from_prompt=True)
    return Recorded(line, row)
