"""`citemark._pipelines.readers._records`: one JSON file cut into its records, whatever shape it has.

The same records written as JSONL, as a JSON array (one line, or pretty-printed) and as
pretty-printed objects one after another give the same records, each with where it is
(its first line; its position in an array), at every read size; an endless array
gives its first records at once; and the splitter's search is linear in the file.
"""

from __future__ import annotations

import io
import itertools
import json
from typing import Any

import pytest

from citemark._pipelines.readers import ReadOptions, _common, _records, reader_for
from citemark._pipelines.readers._records import json_records, json_values

RECORDS = [
    {"id": "a", "text": 'quote " and \\ backslash, {[not structure]}'},
    {"id": "b", "nested": [{"deep": [1, 2, {"x": None}]}], "n": -1.5e3},
    {"id": "c", "unicode": "é 中 \u2028"},
]


def shapes() -> dict[str, tuple[bytes, list[int]]]:
    """Each shape's bytes, and the ``where`` of each record in it."""
    pretty = [json.dumps(r, indent=2) for r in RECORDS]
    starts = list(itertools.accumulate([2] + [p.count("\n") + 2 for p in pretty[:-1]]))
    return {
        "jsonl": (b"".join(json.dumps(r).encode() + b"\n" for r in RECORDS), [1, 2, 3]),
        "jsonl-blank-lines": (
            b"\n" + b"\n\n".join(json.dumps(r).encode() for r in RECORDS) + b"\n",
            [2, 4, 6],
        ),
        "array": (json.dumps(RECORDS).encode(), [1, 2, 3]),
        "array-pretty": (json.dumps(RECORDS, indent=2).encode(), [1, 2, 3]),
        "pretty-values": (("\n" + "\n\n".join(pretty) + "\n").encode(), starts),
        "byte-order-mark": (b"\xef\xbb\xbf" + json.dumps(RECORDS).encode(), [1, 2, 3]),
    }


class Trickle(io.RawIOBase):
    """A handle that gives at most ``size`` bytes a read, however many are asked for."""

    def __init__(self, data: bytes, size: int) -> None:
        self._data = io.BytesIO(data)
        self._size = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        chunk = self._data.read(min(len(buffer), self._size))
        buffer[: len(chunk)] = chunk
        return len(chunk)


def values(handle: Any) -> list[tuple[int, object]]:
    return list(json_values(json_records(handle)))


@pytest.mark.parametrize("shape", list(shapes()))
@pytest.mark.parametrize("size", [1, 3, 7, 1 << 16])
def test_every_shape_gives_the_records_and_where_they_are(shape, size):
    """The records parse to the originals; ``where`` is the line, or the array position."""
    data, where = shapes()[shape]
    assert list(zip(where, RECORDS, strict=True)) == values(Trickle(data, size))


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b'[{"a": 1}, {"a": 2', [(1, {"a": 1}), (2, "the file ends inside a record")]),
        (b'[{"a": 1}\n', [(1, {"a": 1}), (2, "the file ends inside the JSON array")]),
        (b'[{"a": 1}, {"b"', [(1, {"a": 1}), (2, "the file ends inside a record")]),
        (b'[{"a": 1}] {"b": 2}', [(1, {"a": 1}), (2, "text follows the end of the JSON array")]),
        (b'[{"a": 1}] x', [(1, {"a": 1}), (2, "text follows the end of the JSON array")]),
        (b'[{"a": 1},, {"b": 2}]', [(1, {"a": 1}), (2, "the JSON array has an empty element")]),
        (b'[{"a": 1}]]', [(1, {"a": 1}), (2, "text follows the end of the JSON array")]),
        (b'[{"a": 1}}, 2]', [(1, "the JSON array's brackets do not match")]),
        (
            b'[7, {"a": 1}, "s"]',
            [(1, "not a JSON object"), (2, {"a": 1}), (3, "not a JSON object")],
        ),
        (
            b'[{"a": NaN}, {"a": 1}]',
            [(1, "not strict JSON: it holds NaN or Infinity"), (2, {"a": 1})],
        ),
        (b"[]", []),
        (
            b'{\n "a": 1\n}\n7\n{\n "b": 2\n}',
            [(1, {"a": 1}), (4, "a record must be a JSON object")],
        ),
        (b'{\n "a": 1\n}\n{\n "b": ', [(1, {"a": 1}), (4, "the file ends inside a record")]),
        (b'{"a": 1}\nnot json\n{"b": 2}\n', [(1, {"a": 1}), (2, "not valid JSON"), (3, {"b": 2})]),
    ],
    ids=lambda value: "" if isinstance(value, list) else value.decode(errors="replace")[:24],
)
def test_a_break_is_reported_structurally(data, expected):
    """A bad element is one record and the next is read; a broken structure ends the file."""
    assert expected == values(io.BytesIO(data))


def test_an_endless_array_gives_its_first_records_at_once():
    """The array is streamed element by element: three records of an endless one come back."""

    class Endless(io.RawIOBase):
        def __init__(self) -> None:
            self.pending = b""
            self.parts = itertools.chain(
                [b"[\n"], (json.dumps({"n": n}).encode() + b",\n" for n in itertools.count())
            )

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: Any) -> int:
            self.pending = self.pending or next(self.parts)
            count = min(len(buffer), len(self.pending))
            buffer[:count], self.pending = self.pending[:count], self.pending[count:]
            return count

    records = itertools.islice(json_values(json_records(io.BufferedReader(Endless()))), 3)
    assert [(1, {"n": 0}), (2, {"n": 1}), (3, {"n": 2})] == list(records)


def test_the_token_search_is_linear(monkeypatch):
    """A long stretch without a token (blanks) is searched once, not again at every block.

    Every search the splitter makes is counted by how much of its buffer it may scan;
    the sum stays within a small multiple of the file, where searching the stretch
    again from its start at each 64 KiB block would be quadratic (about 80 times the
    file here).
    """
    scanned = []

    class Counting:
        def __init__(self, pattern: Any) -> None:
            self._pattern = pattern

        def search(self, buffer: Any, position: int = 0) -> Any:
            scanned.append(len(buffer) - position)
            return self._pattern.search(buffer, position)

    monkeypatch.setattr(_common, "_TOKEN", Counting(_common._TOKEN))
    data = b'[{"a": 1},' + b" " * (10 << 20) + b'{"b": 2}]'
    assert [(1, {"a": 1}), (2, {"b": 2})] == values(io.BytesIO(data))
    assert sum(scanned) < 3 * len(data)


ENDLESS_RECORDS = {
    "langsmith": lambda n: {"id": f"e{n}", "inputs": {"question": "q"}, "outputs": {"answer": "a"}},
    "mlflow": lambda n: {"info": {"trace_id": f"tr-{n}"}, "data": {"spans": []}},
    "openinference": lambda n: {
        "context": {"trace_id": f"0x{n + 1:032x}", "span_id": f"0x{n + 1:016x}"},
        "parent_id": None,
        "attributes": {
            "openinference.span.kind": "LLM",
            "llm.output_messages.0.message.content": "a",
        },
    },
    "ragas": lambda n: {"user_input": f"q{n}", "response": "a"},
    "map": lambda n: {"a": f"a{n}", "s": []},
}


@pytest.mark.parametrize("name", list(ENDLESS_RECORDS))
def test_every_reader_streams_an_endless_array(name):
    """Each reader gives its first rows from an endless JSON array: it is never loaded whole."""
    make = ENDLESS_RECORDS[name]

    class Endless(io.RawIOBase):
        def __init__(self) -> None:
            self.pending = b""
            self.parts = itertools.chain(
                [b"["], (json.dumps(make(n)).encode() + b",\n" for n in itertools.count())
            )

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: Any) -> int:
            self.pending = self.pending or next(self.parts)
            count = min(len(buffer), len(self.pending))
            buffer[:count], self.pending = self.pending[:count], self.pending[count:]
            return count

    mapping = {"answer": "/a", "sources": "/s"} if name == "map" else None
    reader = reader_for(name)(io.BufferedReader(Endless()), ReadOptions(mapping=mapping))
    records = list(itertools.islice(reader, 3))
    assert 3 == len(records)
    assert all(r.malformed is None for r in records), [r.malformed for r in records]


class Copying(io.BytesIO):
    """A file whose reads give `Counted` bytes: each ``bytes + block`` copy made of them is counted."""

    copied = 0

    def read(self, size: int | None = -1) -> bytes:
        return Counted(super().read(size))


class Counted(bytes):
    """A block read from `Copying`; ``head + block`` (and ``head += block``) counts its copy."""

    def __radd__(self, other: object) -> bytes:
        if not isinstance(other, bytes):
            return NotImplemented  # a bytearray grows in place: nothing is copied again
        Copying.copied += len(other) + len(self)
        return bytes(other) + bytes(self)

    def __add__(self, other: bytes) -> bytes:
        Copying.copied += len(self) + len(other)
        return bytes(self) + bytes(other)


LONG_TRACE = json.dumps({"info": {"trace_id": "tr-1"}, "data": {"spans": []}})[1:]
LONG_LINES = {
    # One trace on one 8 MiB line: the old MLflow reader looked for the line's end
    # again from its start after every 64 KiB read (25 MB 7.8 s, 100 MB 102 s).
    "jsonl": b'{"note": "' + b"x" * (8 << 20) + b'", ' + LONG_TRACE.encode() + b"\n",
    # Blanks after the opening brace: the check whether it is alone on its line
    # appended each block to an immutable head (100 MiB: 53 s).
    "blanks-after-the-brace": b"{" + b" " * (8 << 20) + LONG_TRACE.encode() + b"\n",
    "one-line-array": b'[{"note": "' + b"x" * (8 << 20) + b'", ' + LONG_TRACE.encode() + b"]",
}


@pytest.mark.parametrize("data", LONG_LINES.values(), ids=LONG_LINES.keys())
def test_mlflow_reads_a_long_line_in_linear_work(monkeypatch, data):
    """``--from mlflow`` on one long line (issue 38, item 5): searched and copied a few times over.

    Every search the splitter makes is counted by how much it may scan, and every
    ``bytes + block`` copy of what was read by its size; both stay within a small
    multiple of the file, where the quadratic paths were tens to hundreds of times it.
    """
    scanned: list[int] = []

    class Counting:
        def __init__(self, pattern: Any) -> None:
            self._pattern = pattern

        def search(self, buffer: Any, position: int = 0, *end: int) -> Any:
            scanned.append((end[0] if end else len(buffer)) - position)
            return self._pattern.search(buffer, position, *end)

    for module, name in [
        (_common, "_TOKEN"),
        (_common, "_NON_BLANK"),
        (_records, "_LINE_BLANK"),
        (_records, "_NON_BLANK"),
    ]:
        monkeypatch.setattr(module, name, Counting(getattr(module, name)))
    monkeypatch.setattr(Copying, "copied", 0)
    (record,) = reader_for("mlflow")(Copying(data), ReadOptions())
    assert record.malformed is None
    assert "tr-1" == record.row["id"]  # type: ignore[index]
    # A string split over blocks is searched again from its start at each doubling
    # read: at most twice the file, plus the last pass.
    assert sum(scanned) < 4 * len(data)
    assert Copying.copied < 3 * len(data)
