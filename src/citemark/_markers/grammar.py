"""The marker grammar: which ``[n]`` in an answer cite, and where they are.

A marker group is ``[`` INT (``,`` spaces INT)* ``]`` with INT made of ASCII digits
only (SPEC §3.2). A group cites if and only if a reader of the rendered answer sees
it as text outside code: CommonMark 0.31.2 plus GFM tables decide (see
`citemark._markers.blocks` and `citemark._markers.inlines`). Fenced and indented code, code
spans, link destinations and titles, link reference definitions and the labels of
reference links, raw HTML, autolinks, image alt text and table cells past the
header's count are masked; link text, HTML blocks' character data, tables, block
quotes and list items are not.

Everything here runs in time linear in the input. The common case, an answer with
none of the characters that can start a masked construct, is one regular-expression
pass.
"""

from __future__ import annotations

import re
from functools import partial
from typing import NamedTuple

from citemark._contract.syntax import GROUP_PATTERN, INT_PATTERN
from citemark._markers.blocks import block_spans
from citemark._markers.fast import (
    INDENTED,
    INDENTED_AFTER_CR,
    INDENTED_LINE,
    fast_spans,
    quick_spans,
)

__all__ = ["OPENERS", "MarkerOccurrence", "MaskedSpan", "masked_spans", "parse_markers", "unmask"]


class MarkerOccurrence(NamedTuple):
    """One cited integer in an answer.

    ``text[start:end]`` is the integer's ASCII digits; ``text[group_start:group_end]``
    is the whole bracket group it belongs to (``[1, 2]`` yields two occurrences
    sharing one group).
    """

    number: int
    """The integer, e.g. ``7`` for ``[7]`` and for ``[007]``."""
    start: int
    """Offset of the integer's first digit."""
    end: int
    """Offset one past the integer's last digit."""
    group_start: int
    """Offset of the group's ``[``."""
    group_end: int
    """Offset one past the group's ``]``."""


class MaskedSpan(NamedTuple):
    """A range of an answer in which bracket groups do not cite."""

    start: int
    """Offset of the range's first character."""
    end: int
    """Offset one past the range's last character."""
    kind: str
    """What hides it: ``"code"`` (fenced or indented code, a code span),
    ``"link_destination"`` (an inline link's ``(destination "title")``),
    ``"link_label"`` (a full reference link's ``[label]``), ``"definition"`` (a link
    reference definition), ``"image"`` (a whole image, alt text included),
    ``"autolink"``, ``"html"`` (a tag, comment or other raw HTML) or
    ``"table_overflow"`` (a table cell past the header's count, not rendered)."""


# The grammar itself (ASCII digits only, possessive, linear) is citemark._contract.syntax's.
_INT = INT_PATTERN
_BODY = GROUP_PATTERN.pattern.removeprefix(r"\[").removesuffix(r"\]")
OPENERS = re.compile(rf"\[(?:{_BODY}\])?")
"""Every ``[``: a group's yields its body (``"1, 2"``), any other ``[`` an empty string.

Over `unmask`'s result, one pass that gives `citemark.resolve` both the citing
groups and whether any visible ``[`` opens something else (a near-miss may start there).
"""

# Integers longer than this are not converted exactly: CPython refuses (and would
# take quadratic time on) longer digit strings. Such a marker is out of range for any
# source list, so it is recorded as this value, which is larger than any real count.
_MAX_DIGITS = 4000
OVERSIZED_MARKER: int = 10**_MAX_DIGITS


def parse_markers(text: str) -> tuple[MarkerOccurrence, ...]:
    """Return every cited integer in ``text``, in order, with its offsets.

    Never raises on any string. Bracket groups a reader does not see as text are
    left out (see the module docstring); ``[1, 2]`` yields two occurrences.

    Example:
        ```python
        from citemark import parse_markers

        occ = parse_markers("Patents end on filing [3], see `arr[1]` [1, 2].")
        print([o.number for o in occ])
        #> [3, 1, 2]
        ```
    """
    out: list[MarkerOccurrence] = []
    for group in _groups(text):
        group_start, group_end = group.span()
        for digits in _INT.finditer(text, group_start + 1, group_end - 1):
            out.append(  # noqa: PERF401 - two loops, one append
                MarkerOccurrence(
                    marker_number(digits.group()),
                    digits.start(),
                    digits.end(),
                    group_start,
                    group_end,
                )
            )
    return tuple(out)


def group_bodies(text: str) -> list[str]:
    """Return the inside of every citing group (``"1"``, ``"1, 2"``), in order.

    The fast path `citemark.resolve` uses: no offsets, no per-occurrence objects.
    """
    return GROUP_PATTERN.findall(unmask(text)[0])


def marker_number(digits: str) -> int:
    """Convert a marker's ASCII digits to its integer, bounded (see OVERSIZED_MARKER)."""
    if len(digits) > _MAX_DIGITS:
        digits = digits.lstrip("0") or "0"
        if len(digits) > _MAX_DIGITS:
            return OVERSIZED_MARKER
    return int(digits)


def masked_spans(text: str) -> list[MaskedSpan]:
    """Return the sorted, disjoint ranges of ``text`` in which brackets do not cite."""
    if not _may_mask(text):
        return []
    return _spans(text)


def _spans(text: str) -> list[MaskedSpan]:
    """`masked_spans` without the quick check, remembering the last text's answer.

    Callers ask about one answer several times in a row (``masked_spans``, then
    ``parse_markers`` or ``resolve``, as the scorer and the check loop do), so the
    last result is kept, keyed by the text object itself (held, so its identity
    cannot be reused) and handed out as a fresh list each time.
    """
    last = _LAST
    if last is not None and last[0] is text:
        return list(last[1])
    found = _parse(text)
    globals()["_LAST"] = (text, tuple(found))
    return found


_LAST: tuple[str, tuple[MaskedSpan, ...]] | None = None


def _parse(text: str) -> list[MaskedSpan]:
    found = quick_spans(text)
    if found is not None:  # sorted and disjoint by construction
        return list(map(_as_masked, found))
    out: list[MaskedSpan] = []
    found = fast_spans(text)
    if found is None:
        found = block_spans(text)
    last_end = -1
    for span in found:
        if span[0] < last_end:  # never expected; keep the result disjoint anyway
            if span[1] > last_end:
                last_end = span[1]
                out[-1] = MaskedSpan(out[-1].start, last_end, out[-1].kind)
            continue
        last_end = span[1]
        out.append(_as_masked(span))
    return out


# A scanner's (start, end, kind) as a MaskedSpan, without the named tuple's Python-level
# constructor: the fields are the same three, in the same order.
_as_masked = partial(tuple.__new__, MaskedSpan)


def _may_mask(text: str) -> bool:
    """Whether ``text`` holds a character that can start a masked construct.

    Code needs a backtick, a tilde fence or indentation (four spaces or a tab);
    links, images and definitions need ``](`` or ``]:``; raw HTML and autolinks need
    ``<``; a hidden table cell needs ``|``. Only one-character searches run over the
    whole text (they are a C ``memchr``; a longer needle is scanned character by
    character): ``](`` and ``]:`` are looked for at each ``(`` and ``:``, ``~~~`` only
    if a ``~`` is there, and four spaces only where indentation can be, at the start
    of a line (after a line feed or a lone carriage return) after nothing but
    spaces and container markers (`_INDENTED`).
    """
    if "`" in text or "<" in text or "|" in text or "\t" in text:
        return True
    if "~" in text and "~~~" in text:
        return True
    for char in "(:":
        at = text.find(char, 1)
        while at >= 0:
            if text[at - 1] == "]":
                return True
            at = text.find(char, at + 1)
    return (
        _INDENTED.match(text) is not None
        or _INDENTED_LINE.search(text) is not None
        or ("\r" in text and INDENTED_AFTER_CR.search(text) is not None)
    )


# Four spaces after nothing but spaces, block quote and list markers at a line start:
# the only place indented code can begin (a tab is looked for on its own).
_INDENTED = INDENTED
_INDENTED_LINE = INDENTED_LINE


def _groups(text: str) -> list[re.Match[str]]:
    return list(GROUP_PATTERN.finditer(_unmasked(text)))


def _unmasked(text: str) -> str:
    return unmask(text)[0]


def unmask(text: str) -> tuple[str, list[MaskedSpan] | None]:
    """``text`` with every masked span overwritten by backticks, offsets unchanged.

    A group never straddles a span boundary, and a backtick can be part of no group,
    so the groups of the result are exactly the citing groups of ``text``, found by
    one C-speed pass instead of a Python loop over every candidate.

    Returns:
        The overwritten text and `masked_spans` of ``text``, or None in place of
        the spans where they were not needed (no group at all), so that a caller
        needing them too (`citemark.resolve`, for the near-miss scan) parses once.
    """
    if not _may_mask(text):
        return text, []
    if GROUP_PATTERN.search(text) is None:
        return text, None
    spans = _spans(text)
    if not spans:
        return text, spans
    pieces = []
    pos = 0
    for start, end, _ in spans:
        pieces.append(text[pos:start])
        pieces.append("`" * (end - start))
        pos = end
    pieces.append(text[pos:])
    return "".join(pieces), spans
