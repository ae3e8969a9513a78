r"""Citation-like text that is not a marker: found, reported, never cited, never dropped.

Pipelines that were not written for citemark cite in many ways the marker grammar
(SPEC §3.2) does not read: ranges ``[1-3]``, semicolon lists ``[1; 2]``, spaced or
word-prefixed forms ``[ 1 ]``, ``[Source 1]``, prose references ``(Passage 3)``,
footnotes ``[^1]`` (also ``[^1^]``), fullwidth and CJK brackets (U+FF3B ... U+FF3D,
``【1】``), non-ASCII or superscript digits, text that only displays as ``[9]``
(``&#91;9&#93;``, ``\[9\]``, ``[*9*]``), autolink URLs holding ``[9]``, and markers
that providers use inside their own systems and leak into answers: OpenAI's
private-use-area sequences (``\ue200cite\ue202turn0search0\ue201``), ``【4:0†source】``,
``:contentReference[oaicite:0]{index=0}``, and Gemini's ``[cite: 1]`` and
``[cite_start]``. None of them is a citation, and none is stripped from the answer:
`find_unrecognized` reports each one with its offsets and a kind, so that an answer
full of them can no longer pass for an abstention.

Prose references written without brackets or parentheses, ``Passage 3``, ``Passage
ID 3``, ``Source 2``, ``Document 1`` (the word capitalized or not, then spaces, ``:``
or ``#``), are reported only when the caller gives the source count, and only when
the number names a source under the numbering base (``1..N``, or ``0..N-1``): with
three sources, "Document 1990" is a year, and "Source 2" is a reference.

What is skipped: text inside code (`citemark.masked_spans` of kind ``code``), and
text the grammar already reads as a marker group (`citemark.parse_markers`), so a
group is never both a citation and unrecognized. Other masked spans (link
destinations, raw HTML) are skipped too, except for autolinks, which are reported
whether or not the masking hides them, and footnotes that the masking reads as a
reference link's label (``[^2]`` in ``[^1][^2]``) or as a link reference
definition's (``[^1]: https://...``), which are reported as the footnotes they are.

Linear in the text: one pass of one regular expression whose every alternative
opens with a fixed character and whose inner runs are bounded and stop at the next
opener, then a merge against the sorted masked spans and marker groups.
"""

from __future__ import annotations

import bisect
import re
from typing import TYPE_CHECKING, Final

from citemark._contract.models import UnrecognizedToken
from citemark._contract.syntax import GROUP_PATTERN
from citemark._markers.grammar import masked_spans, parse_markers

if TYPE_CHECKING:
    from collections.abc import Iterable

    from citemark._contract.models import UnrecognizedKind
    from citemark._markers.grammar import MaskedSpan

__all__ = [
    "find_unrecognized",
    "may_hold_unrecognized",
    "may_hold_unrecognized_beyond",
    "parse_range",
    "unrecognized_in",
]

_WORDS: Final = (
    r"(?:sources?|src|docs?|documents?|passages?|refs?|references?|citations?|contexts?"
    r"|chunks?|snippets?|results?|evidence|excerpts?|articles?|papers?|paragraphs?)"
)
# One pass per opener, each starting with a literal so the engine skips ahead in C;
# every inner run is bounded and stops at the next opener of its own kind. The
# bracket pass leaves valid marker groups out by a lookahead, so an answer holding
# only markers costs one C-speed scan and no Python call.
# A bracket candidate is one only if its inside holds a digit (ASCII or not), opens
# with "^" (a footnote) or with "cite" (Gemini): the bounded lookahead keeps the
# others, such as every "[a]" of a link-heavy text, from reaching Python at all.
_BRACKETS: Final = re.compile(
    r"\[(?![0-9]++(?:, *+[0-9]++)*+\])"
    r"(?=[^\[\]\n]{0,64}?[0-9\x80-\U0010ffff]|\^|(?i:cite))"
    r"([^\[\]\n]{1,64}+)\]"
)
_PARENS: Final = re.compile(
    rf"\([ \t]*+(?:(?:see|cf\.)[ \t]*+)?{_WORDS}\.?[ \t]*+(?:id[ \t]*+)?[:#]?[ \t]*+"
    r"[0-9][^()\[\]\n]{0,60}+\)",
    re.IGNORECASE,
)
_ESCAPED: Final = re.compile(r"\\\[([^\[\]\n\\]{1,64}+)\\?\]")
_ENTITY: Final = re.compile(
    r"&(?:\#91|\#x5[bB]|lsqb|lbrack);([^&\n\[\]]{1,64}+)(?:&(?:\#93|\#x5[dD]|rsqb|rbrack);|\])"
)
_AUTOLINK: Final = re.compile(r"<(?:https?|ftp)://[^\s<>]{1,2048}+>")
_CONTENT_REFERENCE: Final = re.compile(
    r":?contentReference\[oaicite:[0-9]{1,9}+\](?:\{index=[0-9]{1,9}+\})?"
)
_BRACKETED_DIGIT: Final = re.compile(r"\[[^\[\]0-9]{0,64}+[0-9]")
_SUP_TAG: Final = re.compile(r"<sup>[0-9, ]{1,32}+</sup>", re.IGNORECASE)
_NON_ASCII: Final = re.compile(
    r"(?P<pua>\ue200[^\ue200\ue201\n]{0,256}+\ue201?|[\ue201\ue202])"
    r"|(?P<cjk>[\uff3b\u3010\u3014\u3016\u3018\u301a][^\uff3b\uff3d\u3010\u3011\u3014\u3015"
    r"\u3016\u3017\u3018\u3019\u301a\u301b\n]{1,64}+[\uff3d\u3011\u3015\u3017\u3019\u301b])"
    r"|(?P<sup>[\u00b9\u00b2\u00b3\u2070\u2074-\u2079]++)"
)

_DIGITS_LIST: Final = re.compile(r"[0-9]++(?:[ \t]*+[,;][ \t]*+[0-9]++)*+")
_RANGE: Final = re.compile(
    r"[ \t]*+[0-9]{1,9}+[ \t]*+[-\u2013\u2014][ \t]*+[0-9]++[ \t]*+"
    r"(?:[,;][ \t]*+[0-9]++(?:[ \t]*+[-\u2013\u2014][ \t]*+[0-9]++)?+[ \t]*+)*+"
)
_SEMICOLONS: Final = re.compile(r"[ \t]*+[0-9]++(?:[ \t]*+[;,][ \t]*+[0-9]++)*+[ \t]*+")
_SPACED: Final = re.compile(r"[ \t]*+[0-9]++(?:[ \t]*+,[ \t]*+[0-9]++)*+[ \t]*+")
_PREFIXED: Final = re.compile(
    rf"[ \t]*+(?:see[ \t]++|cf\.[ \t]*+)?{_WORDS}\.?[ \t]*+(?:id[ \t]*+)?[:#]?[ \t]*+[0-9]",
    re.IGNORECASE,
)
_GEMINI: Final = re.compile(r"cite(?:_start|_end|:[ \t]*+[0-9][0-9, \t]*+)", re.IGNORECASE)
# A footnote: "[^1]", also as Pandoc's superscript inside the brackets, "[^1^]".
_FOOTNOTE: Final = re.compile(r"\^[A-Za-z0-9_-]{1,32}+\^?+")
# A bare prose reference: the word (capitalized or lower case, not inside a longer
# word or a hyphenated one), an optional "ID", then spaces, ":" or "#", then an
# integer that is not the start of a decimal or a longer word ("Source 2.5", "2nd").
_PROSE: Final = re.compile(
    r"(?<![\w-])(?:[Pp]assage|[Ss]ource|[Dd]ocument)(?:[ \t]++(?:ID|[Ii]d))?"
    r"(?:[ \t]*+[:#][ \t]*+|[ \t]++)([0-9]{1,9}+)(?![\w]|[.,][0-9])"
)
# What every _PROSE match holds: three substring searches, far cheaper than the pass.
_PROSE_STEMS: Final = ("ource", "assage", "ocument")
_EMPHASIS: Final = re.compile(r"([*_]{1,3}+)[0-9]++(?:, *+[0-9]++)*+\1")


def find_unrecognized(
    text: str,
    exclude: Iterable[tuple[int, int]] | None = None,
    *,
    count: int | None = None,
    index_base: int = 1,
) -> tuple[UnrecognizedToken, ...]:
    r"""Return every citation-like token of ``text`` that is not a marker, in order.

    Args:
        text: The answer.
        exclude: Ranges ``(start, end)`` already read as citations; a token that
            overlaps one is not reported. By default, the groups
            `citemark.parse_markers` finds.
        count: How many sources the answer was given. With it, bare prose
            references (``Source 2``, ``Passage ID 3``) whose number names one of
            them are reported too; without it, only the bracketed and
            parenthesised forms are.
        index_base: The number of the first source (1, or 0), for ``count``.

    Returns:
        The tokens, each with its kind, offsets and text. Never raises on any string.

    Example:
        ```python
        from citemark import find_unrecognized

        found = find_unrecognized("Both hold [1-3], see [^2] and \u30104:0\u2020source\u3011 [1].")
        print([(t.kind, t.text) for t in found])
        #> [('range', '[1-3]'), ('footnote', '[^2]'), ('openai_file_citation', '【4:0†source】')]
        ```
    """
    return _find(text, exclude, None, None, _numbers(count, index_base))


def unrecognized_in(
    text: str,
    unmasked: str,
    spans: list[MaskedSpan] | None,
    *,
    count: int | None = None,
    index_base: int = 1,
) -> tuple[UnrecognizedToken, ...]:
    """`find_unrecognized` with the parse `citemark.resolve` already made.

    Args:
        text: The answer.
        unmasked: ``text`` with its masked spans overwritten (``_markers.unmask``).
        spans: ``text``'s masked spans, or None where they were not computed.
        count: How many sources the answer was given (see `find_unrecognized`).
        index_base: The number of the first source, for ``count``.
    """
    return _find(text, None, unmasked, spans, _numbers(count, index_base))


def _numbers(count: int | None, base: int) -> range | None:
    """The numbers that name a source, or None when the count is not known."""
    return None if count is None else range(base, count + base)


def _find(
    text: str,
    exclude: Iterable[tuple[int, int]] | None,
    unmasked: str | None,
    spans: list[MaskedSpan] | None,
    numbers: range | None,
) -> tuple[UnrecognizedToken, ...]:
    candidates = _candidates(text, numbers)
    if not candidates:
        return ()
    if exclude is None:
        if unmasked is None:
            exclude = {(o.group_start, o.group_end) for o in parse_markers(text)}
        else:
            exclude = [m.span() for m in GROUP_PATTERN.finditer(unmasked)]
    taken = sorted(exclude)
    if spans is None:
        spans = masked_spans(text)
    span_starts = [s.start for s in spans]
    taken_starts = [s for s, _ in taken]
    out: list[UnrecognizedToken] = []
    for start, end, kind in candidates:
        if _overlaps(taken, taken_starts, start, end):
            continue
        i = bisect.bisect_right(span_starts, start) - 1
        if i >= 0 and spans[i].end > start and _hides(spans[i], start, end, kind):
            continue
        out.append(UnrecognizedToken(kind=kind, start=start, end=end, text=text[start:end]))
    return tuple(out)


def _hides(span: MaskedSpan, start: int, end: int, kind: UnrecognizedKind) -> bool:
    """Whether the masked ``span``, which holds ``start``, keeps a candidate unreported.

    Code always does. An autolink is reported whatever hides it, and so is a footnote
    that is itself the label the masking read: a reference link's ``[^2]``, or the
    ``[^1]`` that opens a link reference definition ``[^1]: https://...``.
    """
    if span.kind == "code":
        return True
    if kind == "autolink":
        return False
    if kind != "footnote" or span.start != start:
        return True
    return not (span.kind == "definition" or (span.kind == "link_label" and span.end == end))


def may_hold_unrecognized(text: str, groups: int, *, count: int | None = None) -> bool:
    """Whether `find_unrecognized` could find anything, given the count of citing groups.

    The fast path of `citemark.resolve`: when every ``[`` of an ASCII text opens one of
    its ``groups`` citing marker groups and no other opener occurs, there is nothing
    to find. False only when that is certain. ``count`` is the source count given to
    `find_unrecognized`, if any.
    """
    if not text.isascii() or text.count("[") != groups:
        return True
    if "&" in text or "<" in text or "\\" in text:
        return True
    if count and _may_hold_prose(text):
        return True
    return "(" in text and _PARENS.search(text) is not None


def may_hold_unrecognized_beyond(
    text: str, *, lone_bracket: bool, unmasked: str | None = None, count: int | None = None
) -> bool:
    """`may_hold_unrecognized` given whether a visible ``[`` opens no citing group.

    A candidate that starts inside a masked span is never reported unless it is an
    autolink (which needs a ``<``) or a footnote read as a link label (which needs
    ``[^``), so only the ``[`` a reader sees count: with every one of them opening a
    citing group, no other bracket candidate can be found. For the same reason,
    given ``unmasked`` (``text`` with its masked spans overwritten, see
    ``_markers.unmask``), the characters other candidates open with are looked for
    there: a ``(`` that only code holds opens nothing reported. Given ``count`` (the
    bare prose references are then looked for), a visible word stem of one counts.
    """
    visible = text if unmasked is None else unmasked
    if lone_bracket or not visible.isascii():
        return True
    if "&" in visible or "<" in text or "\\" in visible or ("^" in text and "[^" in text):
        return True
    if count and _may_hold_prose(visible):
        return True
    return "(" in visible and _PARENS.search(text) is not None


def _may_hold_prose(text: str) -> bool:
    """Whether ``text`` holds a word stem every bare prose reference holds."""
    return any(stem in text for stem in _PROSE_STEMS)


def parse_range(token: str) -> tuple[int, int] | None:
    """``(low, high)`` of a simple range token such as ``[1-3]`` or ``[2\u20134]``, else None.

    Only a single range of ASCII integers is read; the high end is not converted when
    it has more than 9 digits (it is then returned as a number above any real count).
    """
    inner = token[1:-1].strip(" \t")
    for dash in "-\u2013\u2014":
        low, sep, high = inner.partition(dash)
        if sep:
            low, high = low.strip(" \t"), high.strip(" \t")
            if low.isascii() and low.isdigit() and high.isascii() and high.isdigit():
                high_value = int(high) if len(high) <= 9 else 10**10  # noqa: PLR2004 - bound
                return int(low), high_value
            return None
    return None


def _candidates(text: str, numbers: range | None) -> list[tuple[int, int, UnrecognizedKind]]:
    """Every candidate token, sorted, none inside another.

    ``numbers`` are the numbers that name a source; given them, a bare prose
    reference naming one of them is a candidate.
    """
    found: list[tuple[int, int, UnrecognizedKind]] = []
    if numbers and _may_hold_prose(text):
        found.extend(
            (m.start(), m.end(), "prose_reference")
            for m in _PROSE.finditer(text)
            if int(m.group(1)) in numbers
        )
    if "[" in text:
        for m in _BRACKETS.finditer(text):
            kind = _bracket_kind(m.group(1))
            if kind is not None:
                found.append((m.start(), m.end(), kind))
        if "\\[" in text:
            found.extend(
                (m.start(), m.end(), "displays_as_marker")
                for m in _ESCAPED.finditer(text)
                if _DIGITS_LIST.fullmatch(m.group(1).strip(" "))
            )
        if "contentReference" in text:
            found.extend(
                (m.start(), m.end(), "openai_content_reference")
                for m in _CONTENT_REFERENCE.finditer(text)
            )
    if "(" in text:
        found.extend((m.start(), m.end(), "prose_reference") for m in _PARENS.finditer(text))
    if "&" in text:
        found.extend(
            (m.start(), m.end(), "displays_as_marker")
            for m in _ENTITY.finditer(text)
            if _DIGITS_LIST.fullmatch(m.group(1).strip(" "))
        )
    if "<" in text:
        found.extend(
            (m.start(), m.end(), "autolink")
            for m in _AUTOLINK.finditer(text)
            if _BRACKETED_DIGIT.search(m.group())
        )
        found.extend((m.start(), m.end(), "superscript") for m in _SUP_TAG.finditer(text))
    if not text.isascii():
        for m in _NON_ASCII.finditer(text):
            kind = _non_ascii_kind(m)
            if kind is not None:
                found.append((m.start(), m.end(), kind))
    if len(found) < 2:  # noqa: PLR2004 - nothing to sort or nest
        return found
    found.sort(key=lambda c: (c[0], -c[1]))
    kept: list[tuple[int, int, UnrecognizedKind]] = []
    for candidate in found:
        if kept and candidate[0] < kept[-1][1]:
            continue  # inside a token already kept (a range inside an autolink, say)
        kept.append(candidate)
    return kept


def _overlaps(taken: list[tuple[int, int]], starts: list[int], start: int, end: int) -> bool:
    i = bisect.bisect_left(starts, end) - 1
    return i >= 0 and taken[i][1] > start


def _non_ascii_kind(m: re.Match[str]) -> UnrecognizedKind | None:
    group = m.lastgroup
    if group == "pua":
        return "openai_private_use"
    if group == "cjk":
        inner = m.group("cjk")[1:-1]
        if "\u2020" in inner:
            return "openai_file_citation"
        return "fullwidth_bracket" if any(c.isdigit() for c in inner) else None
    return "superscript"


def _bracket_kind(inner: str) -> UnrecognizedKind | None:
    if inner[0] == "^":
        return "footnote" if _FOOTNOTE.fullmatch(inner) else None
    if inner.startswith(("cite", "Cite", "CITE")) and _GEMINI.fullmatch(inner.strip(" \t")):
        return "gemini_cite"
    if GROUP_PATTERN.fullmatch(f"[{inner}]"):
        return None  # a marker group; the caller decides whether it cites
    if _RANGE.fullmatch(inner):
        return "range"
    if ";" in inner and _SEMICOLONS.fullmatch(inner):
        return "semicolon_list"
    if _SPACED.fullmatch(inner):
        return "spaced"
    if _EMPHASIS.fullmatch(inner.strip(" ")):
        return "displays_as_marker"
    if _PREFIXED.match(inner):
        return "word_prefixed"
    if not inner.isascii() and _only_digits_and_separators(inner):
        return "non_ascii_digits"
    return None


def _only_digits_and_separators(inner: str) -> bool:
    return any(c.isdigit() for c in inner) and all(
        c.isdigit() or c in " ,;-\u2013\u3001\uff0c" for c in inner
    )
