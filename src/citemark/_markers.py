"""The marker grammar: which ``[n]`` in an answer cite, and where they are.

A marker group is ``[`` INT (``,`` spaces INT)* ``]`` with INT made of ASCII digits
only (SPEC §3.2). A group cites unless it lies inside code or inside a Markdown link
destination. Code follows CommonMark: fenced blocks of three or more backticks or
tildes, closed by a run of the same character at least as long as the opener (an
unclosed fence runs to the end of its container), and inline code spans, closed by
the next backtick run of exactly the opener's length, which may cross lines but not
paragraphs. The text of a link ``[3](https://...)`` cites; its destination does not.

Autolinks and inline raw HTML take precedence over code spans and links, as in
CommonMark, so a backtick inside ``<a title="`">`` opens nothing; their own text is
not masked. Masking errs towards citing. Where this module cannot tell whether a
bracket is code (link reference definitions, say), the bracket cites: a marker
read as a citation by mistake costs a rejection someone can see, while a marker
hidden by mistake would let a fabricated citation through unseen.

Everything here runs in time linear in the input. The common case, an answer with
no backtick, tilde or ``](``, is one regular-expression pass.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from citemark._syntax import GROUP_PATTERN, INT_PATTERN

__all__ = ["MarkerOccurrence", "MaskedSpan", "masked_spans", "parse_markers"]


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
    """``"code"`` (a fenced block or an inline code span) or ``"link_destination"``."""


# The grammar itself (ASCII digits only, possessive, linear) is citemark._syntax's.
_INT = INT_PATTERN

# Integers longer than this are not converted exactly: CPython refuses (and would
# take quadratic time on) longer digit strings. Such a marker is out of range for any
# source list, so it is recorded as this value, which is larger than any real count.
_MAX_DIGITS = 4000
OVERSIZED_MARKER: int = 10**_MAX_DIGITS


def parse_markers(text: str) -> tuple[MarkerOccurrence, ...]:
    """Return every cited integer in ``text``, in order, with its offsets.

    Never raises on any string. Bracket groups inside code or link destinations are
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
    return GROUP_PATTERN.findall(_unmasked(text))


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
    spans: list[MaskedSpan] = []
    _BlockScanner(text, spans).run()
    return spans


def _may_mask(text: str) -> bool:
    # Code needs a backtick or a tilde; a link destination needs "](". Searching
    # for "](" directly is slow in text full of markers (every "]" is a false
    # start), so look at each "(" instead: answers have few.
    if "`" in text or "~" in text:
        return True
    paren = text.find("(", 1)
    while paren >= 0:
        if text[paren - 1] == "]":
            return True
        paren = text.find("(", paren + 1)
    return False


def _groups(text: str) -> list[re.Match[str]]:
    return list(GROUP_PATTERN.finditer(_unmasked(text)))


def _unmasked(text: str) -> str:
    """``text`` with every masked span overwritten by backticks, offsets unchanged.

    A group never straddles a span boundary, and a backtick can be part of no group,
    so the groups of the result are exactly the citing groups of ``text``, found by
    one C-speed pass instead of a Python loop over every candidate.
    """
    if not _may_mask(text) or GROUP_PATTERN.search(text) is None:
        return text
    spans = masked_spans(text)
    if not spans:
        return text
    pieces = []
    pos = 0
    for start, end, _ in spans:
        pieces.append(text[pos:start])
        pieces.append("`" * (end - start))
        pos = end
    pieces.append(text[pos:])
    return "".join(pieces)


# --- block structure --------------------------------------------------------------
#
# A simplified CommonMark block parser: just enough structure to know where fenced
# code starts and ends and which lines form one paragraph (inline code spans and
# links never cross a paragraph). Containers (block quotes, list items) are tracked
# so that a fence inside a list item closes with its item, as CommonMark says.

_EOL = re.compile(r"\r\n|\r|\n")
_BLANK = re.compile(r"[ \t]*+$")
_QUOTE = re.compile(r" {0,3}>")
# A list item marker: a bullet, or 1-9 digits and "." or ")", then whitespace or the
# end of the line.
_ITEM = re.compile(r" {0,3}([-+*]|([0-9]{1,9})[.)])(?=[ \t]|$)")
# An opening fence: up to 3 spaces, then 3+ backticks or 3+ tildes, then the info
# string. A backtick fence's info string may not contain a backtick (then it is an
# inline code span instead); the caller checks that.
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}+|~{3,}+)(.*+)")
_CLOSE_BACKTICKS = re.compile(r" {0,3}(`{3,}+)[ \t]*+$")
_CLOSE_TILDES = re.compile(r" {0,3}(~{3,}+)[ \t]*+$")
# Leaf blocks that are one line long and end any open paragraph: ATX headings and
# thematic breaks ("***", "- - -", "___").
_ATX = re.compile(r" {0,3}#{1,6}+(?:[ \t]|$)")
_THEMATIC = re.compile(r" {0,3}(?:(?:\*[ \t]*+){3,}+|(?:-[ \t]*+){3,}+|(?:_[ \t]*+){3,}+)$")
_SETEXT = re.compile(r" {0,3}(?:=++|-++)[ \t]*+$")
# HTML blocks of CommonMark's types 1-6, which may interrupt a paragraph; their
# lines are raw HTML, never inline-parsed. Each maps to its end condition.
_HTML_BLOCK_TAGS = (
    "address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|"
    "dd|details|dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|"
    "frameset|h1|h2|h3|h4|h5|h6|head|header|hr|html|iframe|legend|li|link|main|menu|"
    "menuitem|nav|noframes|ol|optgroup|option|p|param|search|section|summary|table|"
    "tbody|td|tfoot|th|thead|title|tr|track|ul"
)
_HTML_START = re.compile(
    r" {0,3}(?:"
    r"(?P<t1><(?:script|pre|style|textarea)(?:[ \t>]|$))"
    r"|(?P<t2><!--)"
    r"|(?P<t3><\?)"
    r"|(?P<t5><!\[CDATA\[)"
    r"|(?P<t4><![A-Za-z])"
    rf"|(?P<t6></?(?:{_HTML_BLOCK_TAGS})(?:[ \t>]|/>|$))"
    r")",
    re.IGNORECASE,
)
# Attributes of an HTML tag, shared by type-7 blocks and inline raw HTML. Possessive
# throughout: a tag that never closes fails without backtracking.
_ATTRIBUTES = (
    r"(?:\s++[A-Za-z_:][A-Za-z0-9_.:-]*+"
    r"(?:\s*+=\s*+(?:[^\s\"'=<>`]++|'[^']*+'|\"[^\"]*+\"))?+)*+"
)
_OPEN_TAG = rf"<[A-Za-z][A-Za-z0-9-]*+{_ATTRIBUTES}\s*+/?>"
_CLOSE_TAG = r"</[A-Za-z][A-Za-z0-9-]*+\s*+>"
# CommonMark's HTML block type 7: a line holding only a complete open or closing tag
# (not one of type 1's names). It cannot interrupt a paragraph; a blank line ends it.
_HTML_TYPE7 = re.compile(
    rf"(?!<(?:script|pre|style|textarea)\b)(?P<t7>{_OPEN_TAG}|{_CLOSE_TAG})\s*+$",
    re.IGNORECASE,
)
_HTML_END = {
    "t1": re.compile(r"</(?:script|pre|style|textarea)>", re.IGNORECASE),
    "t2": re.compile(r"-->"),
    "t3": re.compile(r"\?>"),
    "t4": re.compile(r">"),
    "t5": re.compile(r"\]\]>"),
}


class _Container(NamedTuple):
    quote: bool
    indent: int  # content column of a list item; unused for quotes


class _BlockScanner:
    """Walks the lines of a text once, emitting fenced blocks and paragraph chunks.

    Indentation is measured in columns with tab stops every 4, as CommonMark does,
    and a tab only partly used by a container leaves its remaining columns as
    indentation of what follows (``extra``).
    """

    def __init__(self, text: str, spans: list[MaskedSpan]) -> None:
        self.text = text
        self.spans = spans
        self.containers: list[_Container] = []
        self.para_start: int | None = None  # start of the open paragraph's chunk
        self.para_end = 0
        self.fence: tuple[re.Pattern[str], int, int] | None = None  # closer, len, start
        self.html_end: re.Pattern[str] | None = None  # None with html_open: blank ends
        self.html_open = False
        # The cursor within the current line.
        self.pos = self.col = self.extra = self.end = 0

    def run(self) -> None:
        text = self.text
        pos = 0
        n = len(text)
        if "\r" not in text:  # the common case: str.find is far faster than re
            while pos < n:
                line_end = text.find("\n", pos)
                if line_end < 0:
                    line_end = n
                self._line(pos, line_end)
                pos = line_end + 1
        else:
            while pos < n:
                eol = _EOL.search(text, pos)
                line_end = eol.start() if eol else n
                self._line(pos, line_end)
                pos = eol.end() if eol else n
        self._close_leaf(n)

    # --- the cursor ----------------------------------------------------------------

    def _indent(self) -> int:
        """Columns of whitespace at the cursor, counting a split tab's remainder."""
        return self.extra + _columns(self.text, self.pos, self.end, self.col)[0]

    def _first_text(self) -> int:
        """Position of the first non-whitespace character at or after the cursor."""
        return _columns(self.text, self.pos, self.end, self.col)[1]

    def _consume(self, n: int) -> None:
        """Move past ``n`` columns of indentation; a straddled tab leaves ``extra``."""
        if self.extra >= n:
            self.extra -= n
            return
        target = self.col + n - self.extra
        text, pos, col = self.text, self.pos, self.col
        while col < target and pos < self.end and text[pos] in " \t":
            col += 1 if text[pos] == " " else 4 - col % 4
            pos += 1
        self.pos, self.col, self.extra = pos, col, max(0, col - target)

    def _take_quote(self) -> bool:
        """Consume a block quote marker (and one optional space) if one is here."""
        if self._indent() > 3:  # noqa: PLR2004 - CommonMark's indentation limit
            return False
        first = self._first_text()
        if first >= self.end or self.text[first] != ">":
            return False
        self.col += _columns(self.text, self.pos, first, self.col)[0] + 1
        self.pos, self.extra = first + 1, 0
        if self.pos < self.end and self.text[self.pos] in " \t":
            width = 1 if self.text[self.pos] == " " else 4 - self.col % 4
            self.pos += 1
            self.col += width
            self.extra = width - 1
        return True

    def _rest_blank(self) -> bool:
        return self._first_text() >= self.end

    # --- lines -----------------------------------------------------------------------

    def _line(self, start: int, end: int) -> None:
        """One line: match open containers, open new ones, then the leaf block."""
        text = self.text
        if not self.containers:
            # Fast paths for the two commonest lines outside containers.
            if self.fence is not None:
                closer, length, _ = self.fence
                m = closer.match(text, start, end)
                if m is not None and len(m.group(1)) >= length:
                    self._close_leaf(end)
                return
            if not self.html_open and start < end and text[start].isalpha():
                # Prose: a line that starts with a letter opens no block.
                if self.para_start is None:
                    self.para_start = start
                self.para_end = end
                return
        self.pos, self.col, self.extra, self.end = start, 0, 0, end
        matched = 0
        for container in self.containers:
            if container.quote:
                if not self._take_quote():
                    break
            elif self._rest_blank():
                self.pos = end
            elif self._indent() >= container.indent:
                self._consume(container.indent)
            else:
                break
            matched += 1

        if matched < len(self.containers):
            if self._is_lazy_continuation():
                self.para_end = end
                return
            self._close_leaf(start)
            del self.containers[matched:]

        if self.fence is not None:
            closer, length, _ = self.fence
            m = closer.match(self.text, self._first_text(), end)
            if self._indent() <= 3 and m is not None and len(m.group(1)) >= length:  # noqa: PLR2004
                self._close_leaf(end)
            return
        if self.html_open:
            self._html_line()
            return

        self._open_containers()
        self._leaf()

    def _is_lazy_continuation(self) -> bool:
        # A paragraph continues across a line that lost its containers when that
        # line would otherwise be ordinary paragraph text.
        if self.para_start is None or self._rest_blank():
            return False
        return not self._starts_block()

    def _starts_block(self) -> bool:
        if self._indent() > 3:  # noqa: PLR2004 - indented text starts nothing
            return False
        text, first, end = self.text, self._first_text(), self.end
        if text[first] == ">" or _ATX.match(text, first, end):
            return True
        if _THEMATIC.match(text, first, end) or _HTML_START.match(text, first, end):
            return True
        fence = _FENCE_OPEN.match(text, first, end)
        if fence is not None and _is_fence(fence):
            return True
        # A list item always starts a block here: the line lost its containers, so
        # the open paragraph is not the innermost block it would interrupt.
        return _ITEM.match(text, first, end) is not None

    def _open_containers(self) -> None:
        text, end = self.text, self.end
        while self._indent() <= 3:  # noqa: PLR2004 - CommonMark's indentation limit
            first = self._first_text()
            if first < end and text[first] == ">":
                self._close_leaf(first)
                self._take_quote()
                self.containers.append(_Container(quote=True, indent=0))
                continue
            m = _ITEM.match(text, first, end)
            if m is None or _THEMATIC.match(text, first, end):
                return
            if self.para_start is not None and not _can_interrupt(text, m, end):
                return
            self._close_leaf(first)
            # The item's content column, relative to where this container begins.
            start_col = self.col - self.extra
            content_col = self.col + _columns(text, self.pos, first, self.col)[0]
            content_col += m.end() - first
            spaces, _ = _columns(text, m.end(), end, content_col)
            if _BLANK.match(text, m.end(), end) or spaces > 4:  # noqa: PLR2004 - CommonMark
                spaces = 1
            self.pos, self.col, self.extra = m.end(), content_col, 0
            self._consume(spaces)
            self.containers.append(_Container(quote=False, indent=content_col + spaces - start_col))

    def _leaf(self) -> None:
        text, end = self.text, self.end
        width, first = _columns(text, self.pos, end, self.col)
        if first >= end:
            self._close_leaf(self.pos)
            return
        if self.extra + width >= 4:  # noqa: PLR2004 - continuation, or indented code (raw: cites)
            if self.para_start is not None:
                self.para_end = end
            return
        fence = _FENCE_OPEN.match(text, first, end)
        if fence is not None and _is_fence(fence):
            self._close_leaf(first)
            run = fence.group(1)
            closer = _CLOSE_BACKTICKS if run[0] == "`" else _CLOSE_TILDES
            self.fence = (closer, len(run), first)
            return
        if _ATX.match(text, first, end) or _THEMATIC.match(text, first, end):
            self._close_leaf(first)
            self._inline(first, end)
            return
        if self.para_start is not None and _SETEXT.match(text, first, end):
            self.para_end = end
            self._close_leaf(end)
            return
        html = _HTML_START.match(text, first, end)
        if html is None and self.para_start is None:
            html = _HTML_TYPE7.match(text, first, end)  # cannot interrupt a paragraph
        if html is not None:
            self._close_leaf(first)
            self.html_open = True
            self.html_end = _HTML_END.get(html.lastgroup or "")
            self.pos = first
            self._html_line()
            return
        if self.para_start is None:
            self.para_start = first
        self.para_end = end

    def _html_line(self) -> None:
        if self.html_end is None:
            if self._rest_blank():
                self.html_open = False
        elif self.html_end.search(self.text, self.pos, self.end):
            self.html_open = False

    def _close_leaf(self, at: int) -> None:
        """End whatever leaf block is open; ``at`` is where a fence would end."""
        if self.fence is not None:
            self.spans.append(MaskedSpan(self.fence[2], at, "code"))
            self.fence = None
        if self.para_start is not None:
            self._inline(self.para_start, self.para_end)
            self.para_start = None
        self.html_open = False
        self.html_end = None

    def _inline(self, start: int, end: int) -> None:
        text = self.text
        if text.find("`", start, end) < 0 and text.find("](", start, end) < 0:
            return
        if text.startswith("[", start):
            start = _after_definitions(text, start, end)
        _InlineScanner(text, start, end, self.spans).run()


def _after_definitions(text: str, start: int, end: int) -> int:
    """Skip the link reference definitions a paragraph starts with (CommonMark 4.7).

    Their lines are not inline content, so a backtick in a definition's destination
    opens no code span. Their brackets are not masked: a marker in one still cites.
    """
    while start < end:
        m = _DEFINITION.match(text, start, end)
        if m is None or m.end("dest") == m.start("dest"):
            return start
        start = m.end()
    return start


def _is_fence(m: re.Match[str]) -> bool:
    return m.group(1)[0] == "~" or "`" not in m.group(2)


def _can_interrupt(text: str, item: re.Match[str], end: int) -> bool:
    # A list item may interrupt a paragraph only if it has content and, when
    # ordered, starts at 1 (CommonMark 5.2).
    if _BLANK.match(text, item.end(), end):
        return False
    number = item.group(2)
    return number is None or number == "1"


def _columns(text: str, pos: int, end: int, col: int) -> tuple[int, int]:
    """Width in columns, and end, of the whitespace run at ``pos`` (at column ``col``)."""
    start_col = col
    while pos < end:
        ch = text[pos]
        if ch == " ":
            col += 1
        elif ch == "\t":
            col += 4 - col % 4
        else:
            break
        pos += 1
    return col - start_col, pos


# --- inline structure ----------------------------------------------------------------
#
# One left-to-right pass over a paragraph, as CommonMark's inline parser does it:
# whichever construct starts first wins. A backtick run opens a code span if a run of
# exactly the same length follows; a "]" closes the most recent "[" and forms a link
# if an inline destination follows.

_TOKEN = re.compile(r"[`\[\]<]")
# What may follow "<" and win over a code span or a link that starts later:
# autolinks and inline raw HTML (CommonMark 6.5, 6.6). Comments, processing
# instructions, declarations and CDATA are found by their closers (see _raw_html).
_AUTOLINK_OR_TAG = re.compile(
    r"<[A-Za-z][A-Za-z0-9+.-]{1,31}:[^\x00-\x20<>]*+>"  # URI autolink
    r"|<[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]++@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*+>"  # e-mail autolink
    rf"|{_OPEN_TAG}|{_CLOSE_TAG}"
)
_HTML_CLOSERS = (("<!--", "-->"), ("<?", "?>"), ("<![CDATA[", "]]>"))
_SIMPLE_PAIR = re.compile(r"\[[^\[\]`\\]*+\]")
_BACKTICKS = re.compile(r"`++")

_MAX_PAREN_DEPTH = 16  # deeper nesting is no link here: its markers cite (safe)


def _nested_destination(depth: int) -> re.Pattern[str]:
    """A raw destination with balanced parentheses nested at most ``depth`` deep.

    Runs of ordinary characters, backslash escapes of ASCII punctuation (never a
    parenthesis), lone backslashes, and balanced ``(...)``. The match stops at
    whitespace, a control character, or a parenthesis that does not balance; the
    caller then sees whether a ``)`` closes the link. One regex, so a text of many
    unfinished ``](`` costs C-speed scanning, not a Python loop per character.
    """
    atom = r"[^\x00-\x20\x7f()\\]++|\\[!-/:-@\[-`{-~]|\\"
    inner = f"(?:{atom})*+"
    for _ in range(depth):
        inner = f"(?:{atom}|\\({inner}\\))*+"
    return re.compile(inner)


_RAW_DEST = _nested_destination(_MAX_PAREN_DEPTH)
# A whole inline link tail in one match (CommonMark 6.3): "(", optional whitespace
# with at most one line ending, a destination, optionally whitespace and a title,
# optional whitespace, ")". Possessive, so a failed tail costs one scan.
_WS = r"[ \t]*+(?:(?:\r\n|\r|\n)[ \t]*+)?"
_LINK_TAIL = re.compile(
    rf"\({_WS}(?P<dest><(?:[^<>\r\n\\]|\\.)*+>|(?!<){_RAW_DEST.pattern})"
    rf"(?:(?=[ \t\r\n]){_WS}(?P<title>"
    r'"(?:[^"\\]|\\.)*+"'
    r"|'(?:[^'\\]|\\.)*+'"
    r"|\((?:[^()\\]|\\.)*+\))"
    rf")?+{_WS}\)",
    re.DOTALL,
)


# A link reference definition: a label, a colon, a destination and an optional
# title, alone on their lines; tried with a title first, then without one.
_DEFINITION = re.compile(
    r"\[(?![ \t\r\n]*+\])(?:[^\[\]\\]|\\.){1,999}+\]:"
    rf"{_WS}(?P<dest><(?:[^<>\r\n\\]|\\.)*+>|(?!<){_RAW_DEST.pattern})"
    rf"(?:(?=[ \t\r\n]){_WS}"
    r"(?:\"(?:[^\"\\]|\\.)*+\"|'(?:[^'\\]|\\.)*+'|\((?:[^()\\]|\\.)*+\))"
    r"[ \t]*+(?:\r\n|\r|\n|\Z)"
    r"|[ \t]*+(?:\r\n|\r|\n|\Z))",
    re.DOTALL,
)


class _InlineScanner:
    def __init__(self, text: str, start: int, end: int, spans: list[MaskedSpan]) -> None:
        self.text = text
        self.start = start
        self.end = end
        self.spans = spans
        # Backtick runs in order, and by length with a cursor per length that only
        # moves forward: finding "the next run of exactly n backticks" stays linear.
        self.ordered: list[tuple[int, int]] = []
        self.runs: dict[int, list[int]] = {}
        # str.find, then an anchored match: Python's re scans for a repeated
        # character about 25 times slower than for a single literal.
        if text.count("`", start, end) * 64 > end - start:  # dense: finditer is cheaper
            self.ordered = [m.span() for m in _BACKTICKS.finditer(text, start, end)]
        else:
            pos = text.find("`", start, end)
            while pos >= 0:
                run_end = _BACKTICKS.match(text, pos, end).end()  # type: ignore[union-attr]
                self.ordered.append((pos, run_end))
                pos = text.find("`", run_end, end)
        for run_start, run_end in self.ordered:
            self.runs.setdefault(run_end - run_start, []).append(run_start)
        self.cursor: dict[int, int] = dict.fromkeys(self.runs, 0)
        self.missing: set[str] = set()  # raw-HTML closers known to be absent

    def run(self) -> None:
        text, start, end = self.text, self.start, self.end
        if text.find("](", start, end) < 0 and text.find("<", start, end) < 0:
            self._code_spans_only()
        else:
            self._code_spans_and_links()

    def _code_spans_only(self) -> None:
        # Without "](" or "<" there is no link or raw HTML, so only backtick runs
        # matter. This loop is _code_span inlined: it runs once per run of backticks.
        text, start, spans = self.text, self.start, self.spans
        runs, cursor = self.runs, self.cursor
        skip_to = start
        for run_start, run_end in self.ordered:
            if run_start < skip_to:
                continue
            pos, length = run_start, run_end - run_start
            if pos > start and text[pos - 1] == "\\" and _escaped(text, pos, start):
                pos += 1  # the escaped backtick is literal; the rest of the run may open
                length -= 1
                if length == 0:
                    continue
            positions = runs.get(length)
            if positions is None:
                continue
            i = cursor[length]
            while i < len(positions) and positions[i] < run_end:
                i += 1
            cursor[length] = i
            if i < len(positions):
                skip_to = positions[i] + length
                spans.append(MaskedSpan(pos, skip_to, "code"))

    def _code_span(self, pos: int, run_end: int) -> int:
        """Open a code span at the run ``pos:run_end`` if it closes; return its end."""
        length = run_end - pos
        if _escaped(self.text, pos, self.start):
            pos += 1  # the escaped backtick is literal; the rest of the run may open
            length -= 1
            if length == 0:
                return run_end
        closer = self._closing_run(length, run_end)
        if closer < 0:
            return run_end
        span_end = closer + length
        self.spans.append(MaskedSpan(pos, span_end, "code"))
        return span_end

    def _code_spans_and_links(self) -> None:
        # CommonMark's order: whichever construct starts first wins. A character class
        # scans several times faster than an alternation in Python's re.
        text = self.text
        openers: list[bool] = []  # one entry per open "[": whether it is an image
        floor = 0  # openers below this index were deactivated by a link
        skip_to = self.start
        for m in _TOKEN.finditer(text, self.start, self.end):
            pos = m.start()
            if pos < skip_to:
                continue
            char = text[pos]
            if char == "`":
                run_end = _BACKTICKS.match(text, pos, self.end).end()  # type: ignore[union-attr]
                skip_to = self._code_span(pos, run_end)
            elif char == "<":
                if not _escaped(text, pos, self.start):
                    skip_to = self._raw_html(pos)
            elif char == "[":
                if _escaped(text, pos, self.start):
                    continue
                # An opener whose pair has no bracket, backtick or backslash inside and
                # no "(" after it is pushed and popped again without forming a link:
                # skip the pair whole. Most such pairs are the answer's own markers.
                simple = _SIMPLE_PAIR.match(text, pos, self.end)
                if simple is not None and text[simple.end() : simple.end() + 1] != "(":
                    skip_to = simple.end()
                    continue
                image = pos > self.start and text[pos - 1] == "!"
                openers.append(image and not _escaped(text, pos - 1, self.start))
            elif not _escaped(text, pos, self.start) and openers:
                image = openers.pop()
                active = image or len(openers) >= floor
                floor = min(floor, len(openers))
                if not active:
                    continue
                tail = self._link_tail(pos + 1)
                if tail is None:
                    continue
                dest_end, skip_to = tail
                self.spans.append(MaskedSpan(pos + 1, dest_end, "link_destination"))
                if not image:
                    floor = len(openers)  # no links inside links

    def _closing_run(self, length: int, after: int) -> int:
        positions = self.runs.get(length)
        if positions is None:
            return -1
        i = self.cursor[length]
        while i < len(positions) and positions[i] < after:
            i += 1
        self.cursor[length] = i
        return positions[i] if i < len(positions) else -1

    def _raw_html(self, pos: int) -> int:
        """Skip an autolink or inline raw HTML starting at ``pos``; return where to resume.

        Returns ``pos + 1`` when nothing starts here. Comments and the other forms
        that end in a fixed closer are found with ``str.find``, and a closer missing
        once is missing for every later start, which keeps this linear.
        """
        text, end = self.text, self.end
        m = _AUTOLINK_OR_TAG.match(text, pos, end)
        if m is not None:
            return m.end()
        for opener, closer in _HTML_CLOSERS:
            if text.startswith(opener, pos, end) and closer not in self.missing:
                if opener == "<!--" and text.startswith(("<!-->", "<!--->"), pos, end):
                    return pos + (5 if text.startswith("<!-->", pos, end) else 6)
                found = text.find(closer, pos + len(opener), end)
                if found < 0:
                    self.missing.add(closer)
                    return pos + 1
                return found + len(closer)
        if text.startswith("<!", pos, end) and pos + 2 < end and text[pos + 2].isalpha():
            found = text.find(">", pos + 2, end)  # a declaration such as <!DOCTYPE x>
            return found + 1 if found >= 0 else pos + 1
        return pos + 1

    def _link_tail(self, pos: int) -> tuple[int, int] | None:
        """Parse ``(destination "title")`` at ``pos``.

        Returns where the masked part ends and where the link ends; ``None`` when
        this is not an inline link. The masked part is the whole ``(...)`` tail, or,
        when there is a title, only ``(`` and the destination: a title is not a
        destination, and a marker in it cites.
        """
        m = _LINK_TAIL.match(self.text, pos, self.end)
        if m is None:
            return None
        return (m.end() if m.group("title") is None else m.end("dest")), m.end()


def _escaped(text: str, pos: int, floor: int) -> bool:
    """Whether the character at ``pos`` follows an odd number of backslashes."""
    count = 0
    while pos - count > floor and text[pos - count - 1] == "\\":
        count += 1
    return count % 2 == 1
