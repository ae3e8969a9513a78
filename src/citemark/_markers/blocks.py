"""CommonMark 0.31.2 block structure plus GFM tables, for finding what a reader sees.

The scanner walks the lines once, as CommonMark's reference parsers do: each line
first continues the open containers (block quotes, list items) with their column
rules (tab stops every 4; a tab partly used by a container leaves the rest of its
columns as indentation), then may open new blocks, then adds its remainder to the
innermost leaf. Fenced and indented code are masked whole; paragraphs, headings
and table cells are queued with the container markers stripped from their lines,
and inline-parsed once the whole document is read, because a reference link may
come before its definition. HTML blocks mask their tags and comments and keep their
character data. A GFM table row is split into cells, each parsed on its own; cells
past the header's count are not rendered, so they are masked.

Everything is linear in the length of the text.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from citemark._markers.inlines import (
    CLOSE_TAG,
    DEFINITION,
    OPEN_TAG,
    InlineScanner,
    Span,
    html_spans,
    label_fits,
    normalize_label,
)

__all__ = ["block_spans", "fence_end", "pipe_only", "row_cells"]

_EOL = re.compile(r"\r\n|\r|\n")
_ATX = re.compile(r"#{1,6}+(?:[ \t]|$)")
_FENCE = re.compile(r"`{3,}+(?![^`]*+`)|~{3,}+")
_CLOSING_FENCE = re.compile(r"(?:`{3,}+|~{3,}+)(?=[ \t]*+$)")
_SETEXT = re.compile(r"(?:=++|-++)[ \t]*+$")
_THEMATIC = re.compile(r"(?:(?:\*[ \t]*+){3,}+|(?:_[ \t]*+){3,}+|(?:-[ \t]*+){3,}+)$")
_BULLET = frozenset("*+-")
_ORDERED = re.compile(r"([0-9]{1,9})[.)]")
_HTML_BLOCK_TAGS = (
    "address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|"
    "dd|details|dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|"
    "frameset|h1|h2|h3|h4|h5|h6|head|header|hr|html|iframe|legend|li|link|main|menu|"
    "menuitem|nav|noframes|ol|optgroup|option|p|param|search|section|summary|table|"
    "tbody|td|tfoot|th|thead|title|tr|track|ul"
)
_HTML_START = re.compile(
    r"(?P<t1><(?:script|pre|style|textarea)(?:[ \t>]|$))"
    r"|(?P<t2><!--)"
    r"|(?P<t3><\?)"
    r"|(?P<t5><!\[CDATA\[)"
    r"|(?P<t4><![A-Za-z])"
    rf"|(?P<t6></?(?:{_HTML_BLOCK_TAGS})(?:[ \t>]|/>|$))"
    rf"|(?P<t7>(?:{OPEN_TAG}|{CLOSE_TAG})[ \t]*+$)",
    re.IGNORECASE,
)
_HTML_END = {
    "t1": re.compile(r"</(?:script|pre|style|textarea)>", re.IGNORECASE),
    "t2": re.compile(r"-->"),
    "t3": re.compile(r"\?>"),
    "t4": re.compile(r">"),
    "t5": re.compile(r"\]\]>"),
}
_DELIMITER_ROW = re.compile(r"\|?+[ \t]*+:?-++:?[ \t]*+(?:\|[ \t]*+:?-++:?[ \t]*+)*+\|?+[ \t]*+$")
# Characters that may start a block other than a paragraph (or indentation).
_SPECIAL = frozenset("#`~<*+-_=>0123456789|:")
# A run of lines that are paragraph text or bullet items with paragraph text: a
# line starting with none of _SPECIAL nor a space, or "- " and such a character.
# The last bullet's marker is group 1.
_PLAIN_LINE = r"[^\x00-\x20#`~<*+\-_=>0-9|:][^\n]*+(?:\n|\Z)"
_SIMPLE_BLOCK = re.compile(rf"(?:{_PLAIN_LINE})*+(?:([-+*]) {_PLAIN_LINE}(?:{_PLAIN_LINE})*+)*+")
# A closing fence line (for a fence opened at column 0).
# A fence line after a newline: the literal first character lets the engine skip ahead.
_FENCE_LINE = re.compile(r"\n {0,3}+(`{3,}+|~{3,}+)[ \t]*+(?=\n|\Z)")

# Block kinds.
DOC, QUOTE, LIST, ITEM, PARA, FENCE, CODE, HTML, TABLE = range(9)
_CONTAINERS = frozenset({DOC, QUOTE, ITEM})


class _Block:
    __slots__ = ("a", "b", "c", "empty", "kind", "lines")

    def __init__(self, kind: int, a: int = 0, b: int = 0, c: int = 0) -> None:
        self.kind = kind
        self.a = a  # ITEM: content column; FENCE: length; LIST: marker; HTML: type; TABLE: cells
        self.b = b  # FENCE: indentation; LIST: ordered
        self.c = c  # FENCE: start offset; the character is kept in lines[0]
        self.empty = True  # ITEM: no child yet
        self.lines: list[tuple[int, int]] = []


class _Scanner:
    def __init__(self, text: str, defined: frozenset[str] = frozenset()) -> None:
        self.text = text
        self.spans: list[Span] = []
        self.inline: list[list[tuple[int, int]]] = []  # queued inline content, as pieces
        self.html: list[list[tuple[int, int]]] = []
        self.labels: set[str] = set(defined)
        self.may_define = bool(defined) or "]:" in text
        self.stack: list[_Block] = [_Block(DOC)]
        self.offset = self.column = self.nns = self.nns_col = self.indent = self.end = 0
        self.partial = self.blank = False
        self.matched = 0
        self.all_closed = True
        self.line_done = False

    # --- the cursor --------------------------------------------------------------------

    def _find_nns(self) -> None:
        text, i, cols, end = self.text, self.offset, self.column, self.end
        while i < end:
            c = text[i]
            if c == " ":
                cols += 1
            elif c == "\t":
                cols += 4 - cols % 4
            else:
                break
            i += 1
        self.blank = i >= end
        self.nns, self.nns_col = i, cols
        self.indent = cols - self.column

    def _advance_nns(self) -> None:
        self.offset, self.column, self.partial = self.nns, self.nns_col, False

    def _advance(self, count: int, *, columns: bool) -> None:
        text, end = self.text, self.end
        while count > 0 and self.offset < end:
            if text[self.offset] == "\t":
                to_tab = 4 - self.column % 4
                if columns:
                    self.partial = to_tab > count
                    step = min(count, to_tab)
                    self.column += step
                    self.offset += 0 if self.partial else 1
                    count -= step
                else:
                    self.partial = False
                    self.column += to_tab
                    self.offset += 1
                    count -= 1
            else:
                self.partial = False
                self.offset += 1
                self.column += 1
                count -= 1

    def _char(self, pos: int) -> str:
        return self.text[pos] if pos < self.end else ""

    # --- blocks ------------------------------------------------------------------------

    def _close_unmatched(self) -> None:
        stack = self.stack
        while len(stack) > self.matched + 1:
            self._finalize(stack.pop())
        self.all_closed = True

    def _add(self, kind: int, a: int = 0, b: int = 0, c: int = 0) -> _Block:
        self._close_unmatched()
        stack = self.stack
        while stack[-1].kind not in _CONTAINERS and not (stack[-1].kind == LIST and kind == ITEM):
            self._finalize(stack.pop())
        if kind != ITEM:
            while stack[-1].kind == LIST:
                self._finalize(stack.pop())
        if stack[-1].kind == ITEM:
            stack[-1].empty = False
        block = _Block(kind, a, b, c)
        stack.append(block)
        self.matched = len(stack) - 1
        return block

    def _finalize(self, block: _Block) -> None:
        kind = block.kind
        if kind == PARA:
            if block.lines:
                self._paragraph(block.lines)
        elif kind == FENCE:
            end = block.lines[-1][1] if block.lines else block.c
            self.spans.append(Span(block.c, max(end, block.c), "code"))
        elif kind == HTML and block.lines:
            self.html.append(block.lines)

    def _paragraph(self, lines: list[tuple[int, int]], heading: bool = False) -> bool:
        """Queue a paragraph's inline content after its definitions; False if none is left."""
        if self.may_define and self.text.startswith("[", lines[0][0]):
            lines = self._definitions(lines)
            if not lines:
                return False
        if heading or lines:
            self.inline.append(lines)
        return True

    def _definitions(self, lines: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Mask and record the definitions a paragraph starts with; return the rest."""
        content, starts = _join(self.text, lines)
        pos = 0
        while pos < len(content) and content[pos] == "[":
            m = DEFINITION.match(content, pos)
            if m is None or not label_fits(content, m.start("label"), m.end("label")):
                break
            self.labels.add(normalize_label(m.group("label")))
            self.spans.extend(_map(Span(pos, m.end(), "definition"), lines, starts))
            pos = m.end()
        if pos == 0:
            return lines
        return [line for line, at in zip(lines, starts, strict=True) if at >= pos]

    # --- lines -------------------------------------------------------------------------

    def run(self) -> list[Span]:
        text = self.text
        pos, n = 0, len(text)
        if "\r" not in text:
            stack = self.stack
            while pos < n:
                if stack[-1].kind in _CONTAINERS:
                    if len(stack) == 1 and text[pos] == "\n":
                        pos += 1  # an empty line with nothing open
                        continue
                    skipped = self._skip(pos)
                    if skipped >= 0:
                        pos = skipped
                        continue
                end = text.find("\n", pos)
                if end < 0:
                    end = n
                self._line(pos, end)
                pos = end + 1
        else:
            while pos < n:
                eol = _EOL.search(text, pos)
                end = eol.start() if eol else n
                self._line(pos, end)
                pos = eol.end() if eol else n
        while len(self.stack) > 1:
            self._finalize(self.stack.pop())
        scanner = InlineScanner(self.labels)
        spans = self.spans
        for lines in self.inline:
            if _contiguous(text, lines):
                scanner.scan(text, lines[0][0], lines[-1][1], spans)
            else:
                content, starts = _join(text, lines)
                found: list[Span] = []
                scanner.scan(content, 0, len(content), found)
                for span in found:
                    spans.extend(_map(span, lines, starts))
        for lines in self.html:
            if _contiguous(text, lines):
                spans.extend(html_spans(text, lines[0][0], lines[-1][1]))
            else:
                content, starts = _join(text, lines)
                for span in html_spans(content, 0, len(content)):
                    spans.extend(_map(span, lines, starts))
        spans.sort()
        return spans

    def _skip(self, pos: int) -> int:
        """Read a simple block at a line start with no leaf open; where reading goes on.

        Two blocks are read whole, without the line loop: a top-level fenced code
        block that closes, and a block of plain lines and bullet items (each "- "
        and a character that starts nothing) that ends at an empty line or the end
        of the text and holds nothing inline that can mask. A line starting at column
        0 with none of the container markers closes every open container, so the
        stack is cut back to the document, and left as a list item after a list, as
        the line loop leaves it. -1 where the block is not one of these.
        """
        text, stack = self.text, self.stack
        if text[pos] in "`~":
            return self._skip_fence(pos)
        m = _SIMPLE_BLOCK.match(text, pos)
        if m is None:
            return -1
        stop = m.end()
        if stop == pos or (stop < len(text) and text[stop] != "\n") or not self._inert(pos, stop):
            return -1
        del stack[1:]
        if m.group(1) is not None:
            stack.append(_Block(LIST, ord(m.group(1)), 0))
            item = _Block(ITEM, 2)
            item.empty = False
            stack.append(item)
        while stop < len(text) and text[stop] == "\n":
            stop += 1
        return stop

    def _inert(self, start: int, end: int) -> bool:
        """Whether inline parsing of ``text[start:end]`` would find nothing to mask.

        That needs a backtick, a ``<`` or a ``](``, or a definition somewhere in the
        text (for reference links); content without them need not be queued.
        """
        text = self.text
        return (
            not self.may_define
            and text.find("`", start, end) < 0
            and text.find("<", start, end) < 0
            and (text.find("(", start, end) < 0 or text.find("](", start, end) < 0)
        )

    def _skip_fence(self, pos: int) -> int:
        """A fenced code block at column 0 that closes: mask it whole, return what follows."""
        end = fence_end(self.text, pos)
        if end < 0:
            return -1  # no fence, or it runs to the end of the text: the line loop reads it
        del self.stack[1:]
        self.spans.append(Span(pos, end, "code"))
        return end + 1

    def _line(self, start: int, end: int) -> None:  # noqa: PLR0915 - one branch per rule
        text, stack = self.text, self.stack
        top = stack[-1]
        if len(stack) == 2 and top.kind == FENCE:  # noqa: PLR2004 - fenced code, outside containers
            first = start
            while first < end and first - start < 4 and text[first] == " ":  # noqa: PLR2004
                first += 1
            if first - start == 4 or first >= end or text[first] != text[top.c]:  # noqa: PLR2004
                top.lines.append((start, end))
                return
        if start == end and len(stack) <= 2 and top.kind in {DOC, PARA}:  # noqa: PLR2004
            if top.kind == PARA:
                self._finalize(stack.pop())  # an empty line ends the paragraph
            return
        if len(stack) == 2 and top.kind == TABLE and start < end:  # noqa: PLR2004 - a top-level table
            lead = text[start]
            if (lead == "|" and not pipe_only(text, start, end)) or (
                lead not in _SPECIAL and lead > " "
            ):
                self._row(top.a, start, end)  # a row: no other block starts with these
                return
        if len(stack) <= 2 and start < end and text[start] not in _SPECIAL and text[start] > " ":  # noqa: PLR2004
            # Fast path: a line that starts with ordinary text, outside containers.
            if top.kind == PARA:
                top.lines.append((start, end))
                return
            if top.kind == DOC:
                block = _Block(PARA)
                block.lines.append((start, end))
                stack.append(block)
                return
            if top.kind == FENCE:
                top.lines.append((start, end))
                return
        self.offset, self.column, self.partial, self.end = start, 0, False, end
        self.line_done = False
        matched = 0
        for i in range(1, len(stack)):
            self._find_nns()
            result = self._continue(stack[i])
            if result == 1:
                break
            if result == 2:  # noqa: PLR2004 - the line closed a fence
                return
            matched = i
        self.matched = matched
        self.all_closed = matched == len(stack) - 1
        container = stack[matched]
        lazy_from = -1
        while container.kind not in {FENCE, CODE, HTML}:
            self._find_nns()
            lazy_from = self.offset
            if not self.indent >= 4 and self._char(self.nns) not in _SPECIAL:  # noqa: PLR2004
                self._advance_nns()
                break
            started = self._start(container)
            if started == 0:
                self._advance_nns()
                break
            container = self.stack[-1]
            if started == 2:  # noqa: PLR2004 - a leaf
                break
        if self.line_done:
            return
        if not self.all_closed and not self.blank and self.stack[-1].kind == PARA:
            # A lazy continuation line keeps its indentation, as in cmark: it can then
            # hold no link reference definition and be no table header.
            self.stack[-1].lines.append((lazy_from, end))
            return
        self._close_unmatched()
        tip = self.stack[-1]
        kind = tip.kind
        if kind in {PARA, FENCE}:
            tip.lines.append((self.offset, end))
        elif kind == CODE:
            if not self.blank:
                self.spans.append(Span(self.offset, end, "code"))
        elif kind == HTML:
            tip.lines.append((self.offset, end))
            closer = _HTML_END.get(f"t{tip.a}")
            if closer is not None and closer.search(text, self.offset, end):
                self._finalize(self.stack.pop())
        elif kind == TABLE:
            self._row(tip.a, self.offset, end)
        elif not self.blank:
            self._find_nns()
            self._add(PARA).lines.append((self.nns, end))

    def _continue(self, block: _Block) -> int:
        kind = block.kind
        if kind == QUOTE:
            if self.indent < 4 and self._char(self.nns) == ">":  # noqa: PLR2004
                self._advance_nns()
                self._advance(1, columns=False)
                if self._char(self.offset) in {" ", "\t"}:
                    self._advance(1, columns=True)
                return 0
            return 1
        if kind == ITEM:
            # cmark's order: enough indentation continues the item even on a blank
            # line; a blank line otherwise continues it only if it has content.
            if self.indent >= block.a:
                self._advance(block.a, columns=True)
            elif self.blank and not block.empty:
                self._advance_nns()
            else:
                return 1
            return 0
        if kind == LIST:
            return 0
        if kind == FENCE:
            fence = self.text[block.c]
            if self.indent < 4 and self._char(self.nns) == fence:  # noqa: PLR2004
                m = _CLOSING_FENCE.match(self.text, self.nns, self.end)
                if m is not None and m.group()[0] == fence and m.end() - m.start() >= block.a:
                    block.lines.append((self.nns, self.end))
                    self.stack.pop()
                    self._finalize(block)
                    return 2
            i = block.b
            while i > 0 and self._char(self.offset) in {" ", "\t"}:
                self._advance(1, columns=True)
                i -= 1
            return 0
        if kind == CODE:
            if self.indent >= 4:  # noqa: PLR2004
                self._advance(4, columns=True)
            elif self.blank:
                self._advance_nns()
            else:
                return 1
            return 0
        if kind == HTML:
            return 1 if self.blank and block.a >= 6 else 0  # noqa: PLR2004
        if kind == TABLE and pipe_only(self.text, self.nns, self.end):
            return 1  # as cmark-gfm: a row of only "|" has no cell and ends the table
        return 1 if self.blank else 0  # PARA, TABLE

    def _start(self, container: _Block) -> int:
        """Try each block start at the cursor: 0 none, 1 a container, 2 a leaf."""
        text, nns, end = self.text, self.nns, self.end
        char = self._char(nns)
        indented = self.indent >= 4  # noqa: PLR2004
        if not indented:
            if char == ">":
                self._advance_nns()
                self._advance(1, columns=False)
                if self._char(self.offset) in {" ", "\t"}:
                    self._advance(1, columns=True)
                self._add(QUOTE)
                return 1
            if char == "#" and _ATX.match(text, nns, end):
                self._advance_nns()
                self._add_leaf()
                hashes = nns
                while hashes < end and text[hashes] == "#":
                    hashes += 1
                close = _heading_end(text, hashes, end)
                if close > hashes:
                    self.inline.append([(hashes, close)])
                self.line_done = True
                return 2
            if char in {"`", "~"}:
                m = _FENCE.match(text, nns, end)
                if m is not None:
                    self._add(FENCE, m.end() - nns, self.indent, nns)
                    self._advance_nns()
                    return 2
            if char == "<":
                m = _HTML_START.match(text, nns, end)
                if m is not None and m.lastgroup is not None:
                    # As cmark: a complete tag alone on its line is type 7 whatever its
                    # name, "</pre>" and "<script/>" too (type 1 needs an opening tag).
                    htype = int(m.lastgroup[1])
                    if htype < 7 or (  # noqa: PLR2004
                        container.kind != PARA
                        and not (
                            not self.all_closed and not self.blank and self.stack[-1].kind == PARA
                        )
                    ):
                        self._add(HTML, htype)
                        return 2
            if container.kind == PARA and char in {"=", "-"} and _SETEXT.match(text, nns, end):
                self._close_unmatched()
                para = self.stack.pop()
                if self._paragraph(para.lines, heading=True):
                    self.line_done = True
                    return 2
                container = _Block(PARA)  # all definitions: try the other starts
                self.stack.append(container)
                self.matched = len(self.stack) - 1
            if char in {"*", "_", "-"} and _THEMATIC.match(text, nns, end):
                self._add_leaf()
                self.line_done = True
                return 2
        if (not indented or container.kind == LIST) and self._item(container):
            return 1
        if indented and self.stack[-1].kind != PARA and not self.blank:
            self._advance(4, columns=True)
            self._add(CODE)
            return 2
        if (
            not indented
            and container.kind == PARA
            and char in {"|", ":", "-"}
            and _DELIMITER_ROW.match(text, nns, end)
        ):
            return self._table(container)
        return 0

    def _add_leaf(self) -> None:
        """Close what a one-line leaf (heading, thematic break) interrupts."""
        self._close_unmatched()
        stack = self.stack
        while stack[-1].kind not in _CONTAINERS:
            self._finalize(stack.pop())
        if stack[-1].kind == ITEM:
            stack[-1].empty = False

    def _item(self, container: _Block) -> bool:
        text, nns, end = self.text, self.nns, self.end
        if self.indent >= 4:  # noqa: PLR2004
            return False
        char = self._char(nns)
        ordered = 0
        if char in _BULLET:
            size, marker = 1, ord(char)
        else:
            m = _ORDERED.match(text, nns, end)
            if m is None:
                return False
            if container.kind == PARA and m.group(1) != "1":
                return False
            size, marker, ordered = m.end() - nns, ord(text[m.end() - 1]), 1
        after = nns + size
        if after < end and text[after] not in {" ", "\t"}:
            return False
        if container.kind == PARA and not text[after:end].strip(" \t"):
            return False
        marker_offset = self.indent
        self._advance_nns()
        self._advance(size, columns=True)
        spaces_col, spaces_offset = self.column, self.offset
        while True:
            self._advance(1, columns=True)
            if not (self.column - spaces_col < 5 and self._char(self.offset) in {" ", "\t"}):  # noqa: PLR2004
                break
        spaces = self.column - spaces_col
        if spaces >= 5 or spaces < 1 or self.offset >= end:  # noqa: PLR2004
            padding = size + 1
            self.column, self.offset, self.partial = spaces_col, spaces_offset, False
            if self._char(self.offset) in {" ", "\t"}:
                self._advance(1, columns=True)
        else:
            padding = size + spaces
        self._close_unmatched()
        top = self.stack[-1]
        if top.kind != LIST or top.a != marker or top.b != ordered:
            self._add(LIST, marker, ordered)
        self._add(ITEM, marker_offset + padding)
        return True

    def _table(self, para: _Block) -> int:
        """A delimiter row under a paragraph whose last line has as many cells: a table."""
        text = self.text
        if para.b or not para.lines:
            return 0
        count = len(_cells(text, self.nns, self.end))
        header = para.lines[-1]
        cells = _cells(text, *header)
        if len(cells) != count:
            para.b = 1  # as cmark-gfm: a paragraph is tried for a table once
            return 0
        self._close_unmatched()
        self.stack.pop()
        if len(para.lines) > 1:
            # As cmark-gfm: the lines above the header stay a paragraph, and are
            # not read for link reference definitions.
            self.inline.append(para.lines[:-1])
        if not self._inert(*header):
            for cell in cells:
                if cell[0] < cell[1]:
                    self.inline.append([cell])
        self._add(TABLE, count)
        self.line_done = True
        return 2

    def _row(self, count: int, start: int, end: int) -> None:
        inert = self._inert(start, end)
        for i, (cell_start, cell_end) in enumerate(_cells(self.text, start, end)):
            if cell_start >= cell_end:
                continue
            if i < count:
                if inert:
                    continue
                self.inline.append([(cell_start, cell_end)])
            else:
                self.spans.append(Span(cell_start, cell_end, "table_overflow"))


def fence_end(text: str, pos: int) -> int:
    """Where the fenced code block opening at ``pos`` (column 0) ends, or -1.

    The end is that of its closing line (a run of the opener's character at least as
    long, with nothing after it but spaces); -1 when the line at ``pos`` opens no
    fence or the fence never closes. Both the full and the fast scanner read a
    top-level fence with it.
    """
    eol = text.find("\n", pos)
    if eol < 0:
        return -1
    opener = _FENCE.match(text, pos, eol)
    if opener is None:
        return -1
    char, size = text[pos], opener.end() - pos
    close = _FENCE_LINE.search(text, eol)
    while close is not None and (close.group(1)[0] != char or len(close.group(1)) < size):
        close = _FENCE_LINE.search(text, close.end())
    return -1 if close is None else close.end()


def pipe_only(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is one ``|`` and blanks: a row of no cell in cmark-gfm."""
    return text[start:end].strip(" \t") == "|"


def _cells(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The trimmed cells of a table row: split at unescaped pipes, outer pipes optional.

    Indentation before a leading pipe makes an empty first cell, as in cmark-gfm (only
    a lazy continuation line still has it here).
    """
    while end > start and text[end - 1] in " \t":
        end -= 1
    if start < end and text[start] == "|":
        start += 1
    cells: list[tuple[int, int]] = []
    cell = start
    pos = text.find("|", start, end)
    while pos >= 0:
        slashes = 0
        while pos - slashes - 1 >= cell and text[pos - slashes - 1] == "\\":
            slashes += 1
        if slashes % 2 == 0:
            cells.append((cell, pos))
            cell = pos + 1
        pos = text.find("|", pos + 1, end)
    if cell < end or not cells:
        cells.append((cell, end))
    out = []
    for cell_start, cell_end in cells:
        a, b = cell_start, cell_end
        while a < b and text[a] in " \t":
            a += 1
        while b > a and text[b - 1] in " \t":
            b -= 1
        out.append((a, b))
    return out


def _heading_end(text: str, start: int, end: int) -> int:
    """Where an ATX heading's content ends: before an optional closing run of ``#``."""
    while end > start and text[end - 1] in " \t":
        end -= 1
    run = end
    while run > start and text[run - 1] == "#":
        run -= 1
    if run == end:
        return end
    if run == start:
        return start
    if text[run - 1] in " \t":
        while run > start and text[run - 1] in " \t":
            run -= 1
        return run
    return end


def _contiguous(text: str, lines: list[tuple[int, int]]) -> bool:
    """Whether the lines follow each other in ``text``, one newline apart."""
    previous = lines[0][1]
    for start, end in lines[1:]:
        if start != previous + 1 or text[previous] != "\n":
            return False
        previous = end
    return True


def _join(text: str, lines: list[tuple[int, int]]) -> tuple[str, list[int]]:
    """The lines as one string joined by newlines, and where each starts in it."""
    starts = []
    at = 0
    for start, end in lines:
        starts.append(at)
        at += end - start + 1
    return "\n".join(text[start:end] for start, end in lines), starts


def _map(span: Span, lines: list[tuple[int, int]], starts: list[int]) -> list[Span]:
    """Map a span of the joined lines back onto the text, one piece per line."""
    out = []
    i = max(bisect_right(starts, span.start) - 1, 0)
    while i < len(lines) and starts[i] < span.end:
        (start, end), at = lines[i], starts[i]
        lo, hi = max(span.start, at), min(span.end, at + end - start)
        if lo < hi:
            out.append(Span(start + lo - at, start + hi - at, span.kind))
        i += 1
    return out


def block_spans(text: str, defined: frozenset[str] = frozenset()) -> list[Span]:
    """Every range of ``text`` a reader of the rendered Markdown does not see as text.

    ``defined`` holds normalized labels to read as defined besides the text's own
    definitions: what a definition appended later would do (the stream asks).
    """
    return _Scanner(text, defined).run()


def row_cells(text: str, start: int, end: int) -> int:
    """How many cells the table row ``text[start:end]`` has, split as cmark-gfm splits it."""
    return len(_cells(text, start, end))
