"""Cutting a JSON file into its records, whatever shape its producer wrote it in.

Producers write the same records three ways: one JSON object a line (JSONL), one
JSON array of them (``json.dump(list_of_records, f)``, pretty-printed or not), or
pretty-printed objects one after another (the OpenTelemetry SDK's
``ConsoleSpanExporter``, ``json.dump(record, f, indent=2)`` per record). `json_records`
tells them apart by the file's first non-blank byte and streams the records of any
of them, in memory bounded by the largest record, in time linear in the file:

* ``[`` opens an **array**: each element is cut out as it is read
  (`citemark._pipelines.readers._common.JsonTokens` finds its end), and a record's ``where`` is
  its 1-based position in the array. Elements are parsed one at a time; a broken one
  is one malformed record and the next is still read; a break in the array itself
  (unmatched brackets, the file cut short, text after the closing ``]``) ends the
  file with one malformed record.
* ``{`` with nothing else on its line opens **pretty-printed values** one after
  another: each is cut out the same way, and ``where`` is the 1-based line it starts
  on. A break between values ends the file with one malformed record, since what
  follows cannot be told apart.
* Anything else is **JSONL**: ``where`` is the 1-based line, and a bad line is one
  malformed record while reading goes on at the next.

`json_values` parses each record strictly into an object, or the structural reason
it is not one; `first_content` lets a reader look at the first byte itself first.
"""

from __future__ import annotations

import io
import re
from typing import TYPE_CHECKING, BinaryIO, Final, NamedTuple

from citemark._model.strictjson import StrictJSONError, line_reason, loads_strict
from citemark._pipelines.readers._common import JsonTokens

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

__all__ = ["JsonRecord", "first_byte", "first_content", "json_records", "json_values", "peek"]

_BLOCK: Final = 1 << 16
_HEAD: Final = 1 << 12
"""How much of a file's start `first_byte` looks at."""
_BOM: Final = b"\xef\xbb\xbf"
_NON_BLANK: Final = re.compile(rb"[^ \t\r\n]")
_LINE_BLANK: Final = re.compile(rb"[^ \t\r]")
_OPEN_OBJECT: Final = ord("{")
_OPEN_ARRAY: Final = ord("[")
_CLOSE_ARRAY: Final = ord("]")
_COMMA: Final = ord(",")
_NEWLINE: Final = ord("\n")
_OPENERS: Final = frozenset(b"{[")
_CLOSERS: Final = frozenset(b"}]")


class JsonRecord(NamedTuple):
    """One record of a JSON file, as bytes, or why the file stops being readable there."""

    where: int
    """The 1-based line the record starts on (JSONL, pretty-printed values), or its
    1-based position among the elements (a JSON array)."""
    raw: bytes | None
    """The record's bytes; None when ``reason`` says what is wrong."""
    reason: str | None = None
    """A structural sentence (never a quote of the file) when ``raw`` is None."""


def first_content(handle: BinaryIO) -> tuple[bytes, int]:
    """Read up to the file's first non-blank byte: the bytes read from it on, and the lines before.

    A UTF-8 byte-order mark is dropped. Blank blocks are counted and let go, so a file
    of blanks is read in constant memory. ``(b"", n)`` for a file with nothing in it.
    """
    lines = 0
    first = True
    while block := handle.read(_BLOCK):
        if first:
            while len(block) < len(_BOM) and _BOM.startswith(block) and (more := handle.read(1)):
                block += more  # a handle that gives a few bytes a read: the whole mark first
            block = block.removeprefix(_BOM)
            first = False
        match = _NON_BLANK.search(block)
        if match is not None:
            return block[match.start() :], lines + block.count(b"\n", 0, match.start())
        lines += block.count(b"\n")
    return b"", lines


def peek(handle: BinaryIO, size: int) -> tuple[bytes, BinaryIO]:
    """The first ``size`` bytes of ``handle``, and a handle that still starts with them.

    A buffered or seekable handle is peeked at, or read and rewound; any other has
    the bytes read from it put back in front.
    """
    if isinstance(handle, io.BufferedReader):
        return handle.peek(size)[:size], handle
    if handle.seekable():
        position = handle.tell()
        head = handle.read(size)
        handle.seek(position)
        return head, handle
    head = handle.read(size)
    return head, io.BufferedReader(_Prefixed(head, handle))


def first_byte(handle: BinaryIO) -> tuple[bytes, BinaryIO]:
    """The file's first non-blank byte (after a byte-order mark), and a handle still at its start.

    Only the first 4 KiB are looked at: ``b""`` when they are blank.
    """
    head, handle = peek(handle, _HEAD)
    match = _NON_BLANK.search(head.removeprefix(_BOM))
    return (b"" if match is None else match.group()), handle


class _Prefixed(io.RawIOBase):
    """A non-seekable handle with the bytes already read from it put back in front."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self._head:
            count = min(len(buffer), len(self._head))
            buffer[:count] = self._head[:count]
            self._head = self._head[count:]
            return count
        chunk = self._rest.read(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)


def json_records(
    handle: BinaryIO, noun: str = "record", *, start: tuple[bytes, int] | None = None
) -> Iterator[JsonRecord]:
    """The records of a JSONL file, a JSON array or pretty-printed values, streamed.

    Args:
        handle: The file, opened in binary mode.
        noun: What a record is (``trace``, ``run``), named in reasons.
        start: What `first_content` already read from ``handle``, if it was called.

    Yields:
        Each record with where it is, in file order; a break in an array or a run of
        pretty-printed values is a last record with a reason.
    """
    head, skipped = first_content(handle) if start is None else start
    if not head:
        return
    if head[0] == _OPEN_ARRAY:
        yield from _array(JsonTokens(handle, head), noun)
        return
    if head[0] == _OPEN_OBJECT:
        head, pretty = _opens_pretty(handle, head)
        if pretty:
            yield from _values(JsonTokens(handle, head), noun, skipped + 1)
            return
    yield from _lines(handle, head, skipped)


def json_values(records: Iterator[JsonRecord]) -> Iterator[tuple[int, Mapping[str, object] | str]]:
    """Each record parsed strictly as a JSON object, or the reason it is not one.

    Gives what `citemark._pipelines.readers._common.json_lines` gives for a JSONL file (the same
    reasons), for a file of any shape `json_records` reads.
    """
    for record in records:
        if record.raw is None:
            yield record.where, record.reason or "not a JSON record"
            continue
        try:
            text = record.raw.decode("utf-8")
        except UnicodeDecodeError:
            yield record.where, "not UTF-8 text"
            continue
        try:
            value = loads_strict(text, max_bytes=None)
        except StrictJSONError as exc:
            yield record.where, line_reason(exc)
            continue
        yield record.where, value if isinstance(value, dict) else "not a JSON object"


def _opens_pretty(handle: BinaryIO, head: bytes) -> tuple[bytes, bool]:
    """Whether the ``{`` that starts ``head`` is alone on its line (blanks aside).

    Blanks after the ``{`` are read on a block at a time; each block is searched once
    and appended in place, so a long run of them costs time linear in its length.
    """
    match = _LINE_BLANK.search(head, 1)
    if match is not None:
        return head, head[match.start()] == _NEWLINE
    buffer = bytearray(head)
    while True:
        searched = len(buffer)
        more = handle.read(_BLOCK)
        if not more:
            return bytes(buffer), False
        buffer += more
        match = _LINE_BLANK.search(buffer, searched)
        if match is not None:
            return bytes(buffer), buffer[match.start()] == _NEWLINE


def _lines(handle: BinaryIO, head: bytes, skipped: int) -> Iterator[JsonRecord]:
    """JSONL: each non-blank line, numbered from the line ``head`` starts on."""
    number = skipped
    lines = head.split(b"\n")
    tail = lines.pop()
    for raw in lines:
        number += 1
        if raw.strip():
            yield JsonRecord(number, raw)
    rest = tail + handle.readline()
    while rest:
        number += 1
        if rest.strip():
            yield JsonRecord(number, rest)
        rest = handle.readline()


def _array(tokens: JsonTokens, noun: str) -> Iterator[JsonRecord]:
    """The elements of the one JSON array the file holds, each cut out as it ends."""
    depth = 0
    start: int | None = None  # where the open element starts, once the array is open
    position = 0
    previous = 0
    closed = False
    for byte, begin, end in tokens:
        if closed:
            yield JsonRecord(position + 1, None, "text follows the end of the JSON array")
            return
        if start is None:  # the opening bracket: `json_records` saw it first
            start = end
        elif depth == 0 and byte in b",]":
            element = tokens.take(start, begin)
            start = end
            tokens.keep(start)
            closed = byte == _CLOSE_ARRAY
            if not element.strip():
                if not closed or position:
                    yield JsonRecord(position + 1, None, "the JSON array has an empty element")
                    return
            else:
                position += 1
                yield JsonRecord(position, element)
        elif byte in _OPENERS:
            depth += 1
        elif byte in _CLOSERS:
            depth -= 1
            if depth < 0:
                yield JsonRecord(position + 1, None, "the JSON array's brackets do not match")
                return
        previous = end
    if closed:
        if tokens.non_blank(previous, tokens.end):
            yield JsonRecord(position + 1, None, "text follows the end of the JSON array")
        return
    if depth == 0 and start is not None and tokens.non_blank(start, tokens.end):
        # The last element is whole, only the array around it is cut: it is still a record.
        position += 1
        yield JsonRecord(position, tokens.take(start, tokens.end))
    inside = f"a {noun}" if depth > 0 else "the JSON array"
    yield JsonRecord(position + 1, None, f"the file ends inside {inside}")


def _values(tokens: JsonTokens, noun: str, line: int) -> Iterator[JsonRecord]:
    """JSON objects one after another (pretty-printed), each with the line it starts on.

    ``line`` is the line the stream's first byte is on; a comma between two objects
    is let pass.
    """
    depth = start = previous = counted = 0
    for byte, begin, end in tokens:
        if depth > 0:
            if byte in _OPENERS:
                depth += 1
            elif byte in _CLOSERS:
                depth -= 1
                if depth == 0:
                    raw = tokens.take(start, end)
                    yield JsonRecord(line, raw)
                    line += raw.count(b"\n")
                    counted = end
                    tokens.keep(end)
            previous = end
            continue
        stray = tokens.first_non_blank(previous, begin)
        line += tokens.newlines(counted, begin if stray is None else stray)
        counted = begin if stray is None else stray
        if stray is not None or byte not in (_OPEN_OBJECT, _COMMA):
            yield JsonRecord(line, None, f"a {noun} must be a JSON object")
            return
        if byte == _OPEN_OBJECT:
            depth, start = 1, begin
        previous = end
        tokens.keep(begin)
    if depth > 0:
        yield JsonRecord(line, None, f"the file ends inside a {noun}")
        return
    stray = tokens.first_non_blank(previous, tokens.end)
    if stray is not None:
        line += tokens.newlines(counted, stray)
        yield JsonRecord(line, None, f"a {noun} must be a JSON object")
