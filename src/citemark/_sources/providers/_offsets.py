"""Exact offset conversion between UTF-8 bytes, UTF-16 code units and code points.

Providers count offsets in different units: Gemini in UTF-8 bytes, JavaScript-built
tools in UTF-16 code units, Python-built ones in code points (Python ``str``
indices). Converting between them is exact or it fails: an offset that falls inside
a UTF-8 sequence or between the halves of a surrogate pair names no character
boundary, and raises `OffsetUnitError` instead of being rounded to a neighbour.
"""

from __future__ import annotations

from typing import Literal

from citemark._contract.errors import OffsetUnitError

__all__ = ["Unit", "convert_offset", "length_in", "to_code_points"]

Unit = Literal["code_point", "utf16", "utf8"]
"""A unit text offsets are counted in: ``code_point`` (a Python ``str`` index),
``utf16`` (UTF-16 code units, as JavaScript and Java count) or ``utf8`` (bytes)."""

_UNITS = ("code_point", "utf16", "utf8")
_CONTINUATION_MASK = 0xC0
_CONTINUATION = 0x80
_LOW_SURROGATE = range(0xDC00, 0xE000)
_HIGH_SURROGATE = range(0xD800, 0xDC00)


def _encode(text: str, unit: Unit) -> bytes:
    # surrogatepass: a Python str may hold a lone surrogate, which still counts as one
    # code point and one UTF-16 unit (and three UTF-8 bytes, as CESU would write it).
    if unit == "utf8":
        return text.encode("utf-8", "surrogatepass")
    return text.encode("utf-16-le", "surrogatepass")


def length_in(text: str, unit: Unit) -> int:
    """Return the length of ``text`` counted in ``unit``."""
    _check_unit(unit)
    if unit == "code_point":
        return len(text)
    data = _encode(text, unit)
    return len(data) if unit == "utf8" else len(data) // 2


def to_code_points(text: str, offset: int, unit: Unit) -> int:
    """Convert ``offset``, counted in ``unit`` into ``text``, to a code-point offset.

    Raises:
        OffsetUnitError: the offset is negative, past the end of ``text``, inside a
            UTF-8 sequence (``utf8``) or between the halves of a surrogate pair
            (``utf16``).

    Example:
        ```python
        from citemark.providers import OffsetUnitError, to_code_points

        text = "é is 2 bytes"
        print(to_code_points(text, 2, "utf8"), to_code_points(text, 1, "code_point"))
        #> 1 1
        try:
            to_code_points(text, 1, "utf8")
        except OffsetUnitError as exc:
            print(exc.reason)
        #> inside_utf8_sequence
        ```
    """
    _check_unit(unit)
    if offset < 0:
        raise OffsetUnitError(offset, unit=unit, reason="negative", length=length_in(text, unit))
    if unit == "code_point":
        if offset > len(text):
            raise OffsetUnitError(offset, unit=unit, reason="past_end", length=len(text))
        return offset
    data = _encode(text, unit)
    if unit == "utf8":
        if offset > len(data):
            raise OffsetUnitError(offset, unit=unit, reason="past_end", length=len(data))
        if offset < len(data) and data[offset] & _CONTINUATION_MASK == _CONTINUATION:
            raise OffsetUnitError(
                offset, unit=unit, reason="inside_utf8_sequence", length=len(data)
            )
        return len(data[:offset].decode("utf-8", "surrogatepass"))
    units = len(data) // 2
    if offset > units:
        raise OffsetUnitError(offset, unit=unit, reason="past_end", length=units)
    if 0 < offset < units:
        here = int.from_bytes(data[2 * offset : 2 * offset + 2], "little")
        before = int.from_bytes(data[2 * offset - 2 : 2 * offset], "little")
        if here in _LOW_SURROGATE and before in _HIGH_SURROGATE:
            raise OffsetUnitError(offset, unit=unit, reason="inside_surrogate_pair", length=units)
    return len(data[: 2 * offset].decode("utf-16-le", "surrogatepass"))


def convert_offset(text: str, offset: int, *, from_unit: Unit, to_unit: Unit) -> int:
    """Convert ``offset`` into ``text`` from one unit to another, exactly.

    Raises:
        OffsetUnitError: ``offset`` is not a character boundary of ``text`` in
            ``from_unit`` (see `to_code_points`).

    Example:
        ```python
        from citemark.providers import convert_offset

        text = "👍 ok"  # one code point, two UTF-16 units, four UTF-8 bytes
        print(convert_offset(text, 4, from_unit="utf8", to_unit="utf16"))
        #> 2
        print(convert_offset(text, 1, from_unit="code_point", to_unit="utf8"))
        #> 4
        ```
    """
    _check_unit(to_unit)
    index = to_code_points(text, offset, from_unit)
    if to_unit == "code_point":
        return index
    return length_in(text[:index], to_unit)


def _check_unit(unit: str) -> None:
    if unit not in _UNITS:
        msg = f"unknown offset unit: expected one of {', '.join(_UNITS)}"
        raise ValueError(msg)
