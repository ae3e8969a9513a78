"""A ``citemark check`` input line is parsed by the one strict JSON parser, without a size cap."""

from __future__ import annotations

import json

import pytest

from citemark._model.strictjson import MAX_TEXT_BYTES, StrictJSONError, loads_strict
from citemark._pipelines.eval_report import MalformedLine
from citemark._pipelines.readers.citemark_rows import CheckRow, parse_row

ROW = '{"answer": "a [1]", "sources": [{"text": "t", "doc_id": "d"}], "x": %s}'


def reason(line: str) -> str | None:
    parsed = parse_row(1, line.encode())
    return parsed.reason if isinstance(parsed, MalformedLine) else None


def reason_with_the_reply_cap(line: str) -> str | None:
    """What the naive variant, loads_strict with its default reply cap, says of ``line``."""
    try:
        loads_strict(line)
    except StrictJSONError as exc:
        return exc.kind
    return None


class TestStrictLines:
    @pytest.mark.parametrize(
        ("value", "expected"),
        [
            ("NaN", "not strict JSON: it holds NaN or Infinity"),
            ("-Infinity", "not strict JSON: it holds NaN or Infinity"),
            ("1e999", "not strict JSON: it holds NaN or Infinity"),
            ('{"k": 1, "k": 2}', "not strict JSON: an object gives a key twice"),
            ("[" * 100_000 + "]" * 100_000, "not valid JSON: nested too deep"),
            ("tru", "not valid JSON"),
        ],
        ids=["nan", "infinity", "overflow", "duplicate", "deep", "broken"],
    )
    def test_lenient_lines_are_malformed(self, value, expected):
        """Each line plain json would read (or crash on) is malformed, with its fixed reason."""
        assert expected == reason(ROW % value)

    @pytest.mark.parametrize("value", ["NaN", "-Infinity", "1e999", '{"k": 1, "k": 2}'])
    def test_plain_json_accepts_what_is_refused(self, value):
        """The naive parser, json.loads, reads each of these lines as a row."""
        assert "a [1]" == json.loads(ROW % value)["answer"]

    def test_a_line_over_the_reply_cap_is_a_row(self):
        """A check line has no size cap: a line longer than a model reply may be is still read."""
        line = ROW % json.dumps("a" * MAX_TEXT_BYTES)
        parsed = parse_row(1, line.encode())
        assert isinstance(parsed, CheckRow)
        assert "a [1]" == parsed.answer
        assert "too large" == reason_with_the_reply_cap(line)
