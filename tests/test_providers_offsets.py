"""Exact offset conversion between UTF-8 bytes, UTF-16 code units and code points.

The contract: every character boundary converts to the same boundary in every
unit and back, and an offset that is not a boundary (inside a UTF-8 sequence,
between the halves of a surrogate pair, negative, past the end) raises
`OffsetUnitError`. The naive conversions users write (decoding a byte prefix with
``errors="ignore"``, or using a byte offset as a ``str`` index) are shown to shift
silently on the same inputs.
"""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from citemark import CitemarkError
from citemark.providers import OffsetUnitError, convert_offset, length_in, to_code_points

# Letters of each UTF-8 width, both UTF-16 widths, and a combining mark.
TEXTS = st.text(alphabet="aZ é€☕東京👍🏽🍣\u0301\n", max_size=30)
UNITS = ("code_point", "utf16", "utf8")


def boundaries(text: str, unit: str) -> list[int]:
    """Every character boundary of ``text`` counted in ``unit``, computed by encoding."""
    if unit == "code_point":
        return list(range(len(text) + 1))
    if unit == "utf8":
        return [len(text[:i].encode()) for i in range(len(text) + 1)]
    return [len(text[:i].encode("utf-16-le")) // 2 for i in range(len(text) + 1)]


@given(TEXTS)
def test_every_boundary_round_trips_in_every_unit(text):
    for index in range(len(text) + 1):
        for unit in UNITS:
            there = convert_offset(text, index, from_unit="code_point", to_unit=unit)
            assert boundaries(text, unit)[index] == there
            assert index == to_code_points(text, there, unit)


@given(TEXTS)
def test_every_offset_that_is_not_a_boundary_raises(text):
    for unit in ("utf8", "utf16"):
        good = set(boundaries(text, unit))
        for offset in range(length_in(text, unit) + 1):
            if offset in good:
                continue
            with pytest.raises(OffsetUnitError) as info:
                to_code_points(text, offset, unit)
            expected = "inside_utf8_sequence" if unit == "utf8" else "inside_surrogate_pair"
            assert expected == info.value.reason


def naive_bytes_to_code_points(text: str, offset: int) -> int:
    """What much public code does: decode the byte prefix, dropping a split character."""
    return len(text.encode()[:offset].decode("utf-8", errors="ignore"))


def test_the_naive_byte_conversion_shifts_silently_where_citemark_raises():
    text = "3€ ok"
    inside = 2  # the second byte of €
    assert 1 == naive_bytes_to_code_points(text, inside)  # silently rounded down
    with pytest.raises(OffsetUnitError):
        to_code_points(text, inside, "utf8")


def test_a_byte_offset_used_as_a_str_index_gives_other_text():
    text = "東京 is the capital"
    start = len("東京 ".encode())
    assert "is" != text[start : start + 2]
    assert "is" == text[to_code_points(text, start, "utf8") :][:2]


@pytest.mark.parametrize(
    ("text", "offset", "unit", "reason"),
    [
        ("abc", -1, "code_point", "negative"),
        ("abc", 4, "code_point", "past_end"),
        ("é", 3, "utf8", "past_end"),
        ("é", 1, "utf8", "inside_utf8_sequence"),
        ("👍", 1, "utf16", "inside_surrogate_pair"),
        ("👍", 3, "utf16", "past_end"),
        ("👍", 2, "utf8", "inside_utf8_sequence"),
    ],
)
def test_the_reasons(text, offset, unit, reason):
    with pytest.raises(OffsetUnitError) as info:
        to_code_points(text, offset, unit)
    assert (offset, unit, reason) == (info.value.offset, info.value.unit, info.value.reason)
    assert isinstance(info.value, CitemarkError)


def test_a_lone_surrogate_is_one_unit_and_not_an_error():
    text = "a\ud800b"  # a Python str may hold one
    assert [0, 1, 2, 3] == [to_code_points(text, i, "utf16") for i in range(4)]


def test_a_combining_mark_is_its_own_code_point():
    text = "cafe\u0301!"
    assert 5 == to_code_points(text, 5, "utf16")
    assert 5 == to_code_points(text, len("cafe\u0301".encode()), "utf8")


def test_the_error_pickles_and_carries_no_text():
    exc = OffsetUnitError(5, unit="utf8", reason="inside_utf8_sequence", length=9)
    copy = pickle.loads(pickle.dumps(exc))  # noqa: S301 - our own bytes
    assert (5, "utf8", "inside_utf8_sequence", 9) == (
        copy.offset,
        copy.unit,
        copy.reason,
        copy.length,
    )
    assert str(exc) == str(copy)


def test_an_unknown_unit_is_refused():
    with pytest.raises(ValueError, match="unknown offset unit"):
        to_code_points("a", 0, "bytes")
