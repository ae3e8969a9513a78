"""The block scanner's whole-document fast path, for the shapes answers usually take.

Most answers are paragraphs, bulleted items and one-level block quotes whose lines
open with an ordinary character, separated by empty lines, with now and then a
fenced code block or a GFM table at the top level. For such a document the block
structure is known without the line-by-line container walk of
`citemark._markers.blocks`: no line of it can open anything but a paragraph, an item or a
quote, no container can hold a fence or a table, and a line a container does not
continue closes it. So one possessive regular expression reads each run of such
lines, fences are masked whole, inert tables are checked for their cell counts only,
and the inline scanner runs only on the paragraphs that hold a character that can
open a masked construct.

`fast_spans` returns None for anything outside that shape (indentation, headings,
ordered lists, nested containers, HTML, link reference definitions, a table with a
masked cell or markup in it, a fence that does not close, carriage returns), and the
full scanner decides. Where it answers, it answers exactly as the full scanner does,
which a property test checks.
"""

from __future__ import annotations

import re

from citemark._markers.blocks import _FENCE, _contiguous, _join, _map, fence_end, pipe_only
from citemark._markers.inlines import InlineScanner, Span

__all__ = ["INDENTED", "INDENTED_AFTER_CR", "INDENTED_LINE", "fast_spans", "quick_spans"]

# A line that opens with an ordinary character, or with a backtick or tilde that
# opens no fence: paragraph text in any context here.
_PLAIN = r"(?:[^\x00-\x20#`~<*+\-_=>0-9|:]|`(?!``)|~(?!~~))[^\n]*+(?:\n|\Z)"
# Runs of plain lines, bulleted items ("- " and a plain line), quote lines ("> " and
# a plain line) and empty lines.
_RUN = re.compile(rf"(?:{_PLAIN}|[-+*>] {_PLAIN}|\n)*+")
# The same runs found by where they end: at the first line start that opens none of
# those lines. Only line starts are looked at, after a literal newline the engine
# skips to, so this costs about half of matching every character of the run.
_PLAIN_START = r"[^\x00-\x20#`~<*+\-_=>0-9|:]|`(?!``)|~(?!~~)"
_SIMPLE_LINE = rf"\n|\Z|{_PLAIN_START}|[-+*>] (?:{_PLAIN_START})"
_ODD_LINE = re.compile(rf"\n(?!{_SIMPLE_LINE})")
_ODD_FIRST = re.compile(rf"(?!{_SIMPLE_LINE})")
# Four spaces after nothing but spaces, block quote and list markers at a line start:
# the only place indented code can begin (a tab is looked for on its own).
_LINE_PREFIX = r"(?:[>*+\-0-9.)]| (?!   ))*+    "
INDENTED = re.compile(_LINE_PREFIX)
INDENTED_LINE = re.compile("\n" + _LINE_PREFIX)
INDENTED_AFTER_CR = re.compile("\r" + _LINE_PREFIX)  # a lone "\r" ends a line too
_DELIMITER_ROW = re.compile(r"\|?+[ \t]*+:?-++:?[ \t]*+(?:\|[ \t]*+:?-++:?[ \t]*+)*+\|?+[ \t]*+$")


def fast_spans(text: str) -> list[Span] | None:
    """The masked spans of a simply shaped ``text`` (see the module), or None."""
    if "\r" in text or _may_define(text):
        return None  # definitions make every paragraph's reference links matter
    spans: list[Span] = []
    runs: list[tuple[int, int]] = []  # runs of simple lines that hold inline markup
    pos, n = 0, len(text)
    block_end = 0  # where the last fence or table ended: a table may start there
    while True:
        stop = _run_end(text, pos)
        if stop > pos and _inline(text, pos, stop):
            runs.append((pos, stop))
        if stop >= n:
            break
        pos = stop
        char = text[pos]
        if char in "`~":
            pos = _fence(text, pos, spans)
        elif char == "|" and (pos in {0, block_end} or text.startswith("\n\n", pos - 2)):
            pos = _table(text, pos)
        elif char in "-+*" and text.startswith(" ", pos + 1):
            pos = _item_fence(text, pos, spans)
            if pos < 0:
                return None
            continue
        else:
            return None
        if pos < 0:
            return None
        block_end = pos
        if pos >= n:
            break
    if runs:
        scanner = InlineScanner(set())
        for start, end in runs:
            for block_start, block_end in _marked_blocks(text, start, end):
                _paragraphs(scanner, text, block_start, block_end, spans)
        spans.sort()
    return spans


def _run_end(text: str, pos: int) -> int:
    """Where the run of simple lines starting at the line start ``pos`` ends (`_RUN`)."""
    if _ODD_FIRST.match(text, pos) is not None:
        return pos
    odd = _ODD_LINE.search(text, pos)
    return len(text) if odd is None else odd.start() + 1


def quick_spans(text: str) -> list[Span] | None:
    """The masked spans of prose with top-level fences, inert tables and simple code spans.

    The shapes most answers that mask anything take, read with a handful of
    one-character searches and no line walk: every backtick, pipe and ``~~~`` of
    ``text`` is visited in order and must be part of a closed fence at column 0, of
    an inert table at a block start (see `_table`), or of a code span of single
    backticks that opens and closes on one line (no backslash before it). Between
    those, every ``](`` must end a simple inline link (see `_simple_link`) and the
    text must hold nothing else that can mask (no ``<``, tab or indentation; no
    ``]:`` or carriage return anywhere), so its block structure,
    whatever it is, hides nothing. A fence at column 0 interrupts any paragraph and
    is no lazy continuation, so it opens at the top level; a code span on one line
    is the same span in a paragraph, a heading, an item, a quote or a table cell.

    Returns None for anything else, and `fast_spans` or the full scanner decides.
    """
    if "\r" in text or _may_define(text):
        return None
    spans: list[Span] = []
    regions: list[tuple[int, int]] = []  # fences, tables and code spans, in order
    n = len(text)
    pos = block_end = 0  # a table may start where the last fence or table ended
    tick = pipe = tilde = paren = -1  # the next of each, searched again once passed
    while True:
        if tick < pos:
            tick = text.find("`", pos) % (n + 1)  # -1 becomes n: none
        if pipe < pos:
            pipe = text.find("|", pos) % (n + 1)
        if tilde < pos:
            tilde = _tildes(text, pos)
        if paren < pos:
            paren = _link_tail(text, pos)
        at = min(tick, pipe, tilde, paren)
        if at >= n:
            break
        if at == paren:
            end = _simple_link(text, pos, at)
            if end < 0:
                return None
            spans.append(Span(at, end, "link_destination"))
            regions.append((at, end))
            pos = end
            continue
        line_start = at == 0 or text[at - 1] == "\n"
        if at == pipe:
            if not line_start or not (at == block_end or text.startswith("\n\n", at - 2)):
                return None  # a pipe inside a paragraph may make it a table's header
            end = _table(text, at)
        elif line_start and (at == tilde or text.startswith("```", at)):
            end = _fence(text, at, spans)
        elif at == tilde or text.startswith("``", at) or (at and text[at - 1] == "\\"):
            return None  # an indented fence, a longer run or an escaped backtick
        else:
            close = text.find("`", at + 1)
            if close < 0 or text.startswith("``", close) or text.find("\n", at, close) >= 0:
                return None
            spans.append(Span(at, close + 1, "code"))
            regions.append((at, close + 1))
            pos = close + 1
            continue
        if end < 0:
            return None
        regions.append((at, end))
        pos = block_end = end
    if _masks_outside(text, regions):
        return None
    return spans


_SIMPLE_TAIL = re.compile(r"\([^\x00-\x20()<>\\`\[\]]*+\)")


def _simple_link(text: str, pos: int, paren: int) -> int:
    """The end of an inline link whose ``](`` has its ``(`` at ``paren``, or -1.

    Only the simple form: a ``[`` after ``pos`` on the same line with no bracket,
    backslash or ``!`` about it, and a bare destination with nothing after it. Then
    that ``[`` is the innermost open bracket, active (no link formed after it), and
    the link is ``[`` ... ``](destination)``, its tail masked as the full scanner does.
    """
    close = paren - 1
    opener = text.rfind("[", pos, close)
    if (
        opener < 0
        or (opener > 0 and text[opener - 1] in "!\\")
        or text[close - 1] == "\\"
        or text.find("]", opener, close) >= 0
        or text.find("\n", opener, close) >= 0
    ):
        return -1
    tail = _SIMPLE_TAIL.match(text, paren)
    return -1 if tail is None else tail.end()


def _link_tail(text: str, pos: int) -> int:
    """The ``(`` of the next ``](`` at or after ``pos``, found at each ``(``; else ``len(text)``."""
    at = text.find("(", pos)
    while at >= 0 and (at == 0 or text[at - 1] != "]"):
        at = text.find("(", at + 1)
    return len(text) if at < 0 else at


def _masks_outside(text: str, regions: list[tuple[int, int]]) -> bool:
    """Whether ``<``, a tab or indentation occurs outside the sorted ``regions``.

    Each search runs over the whole text once: one found inside a region resumes
    at the region's end.
    """
    last = len(regions)
    for char in "<\t":
        at = text.find(char)
        i = 0
        while at >= 0:
            while i < last and regions[i][1] <= at:
                i += 1
            if i == last or regions[i][0] > at:
                return True
            at = text.find(char, regions[i][1])
    if INDENTED.match(text) is not None:
        return True
    m = INDENTED_LINE.search(text)
    i = 0
    while m is not None:
        line = m.start() + 1
        while i < last and regions[i][1] <= line:
            i += 1
        if i == last or regions[i][0] > line:
            return True
        m = INDENTED_LINE.search(text, regions[i][1] - 1)
    return False


def _tildes(text: str, pos: int) -> int:
    """The next ``~~~`` at or after ``pos``, found at each ``~``; ``len(text)`` for none."""
    at = text.find("~", pos)
    while at >= 0 and not text.startswith("~~~", at):
        at = text.find("~", at + 1)
    return len(text) if at < 0 else at


def _may_define(text: str) -> bool:
    """Whether ``]:`` occurs: found at each ``:``, as one-character searches are C-speed."""
    at = text.find(":", 1)
    while at >= 0:
        if text[at - 1] == "]":
            return True
        at = text.find(":", at + 1)
    return False


def _inline(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` holds a character that can open inline markup."""
    return (
        text.find("`", start, end) >= 0
        or text.find("<", start, end) >= 0
        or (text.find("(", start, end) >= 0 and text.find("](", start, end) >= 0)
    )


def _fence(text: str, pos: int, spans: list[Span]) -> int:
    """A fence at column 0 that closes: masked whole; where the text goes on, or -1."""
    end = fence_end(text, pos)
    if end < 0:
        return -1
    spans.append(Span(pos, end, "code"))
    return end + 1


def _item_fence(text: str, pos: int, spans: list[Span]) -> int:
    """A bullet item holding a fence opener, closed by the next line; its end, or -1.

    ``- ``` `` followed by the end of the text or by a line at column 0 (not empty,
    not indented): that line does not continue the item, and a fence takes no lazy
    line, so the fence holds its opener alone, as in cmark.
    """
    eol = text.find("\n", pos)
    if eol < 0:
        eol = len(text)
    elif eol + 1 < len(text) and text[eol + 1] in " \t\n":
        return -1
    if _FENCE.match(text, pos + 2, eol) is None:
        return -1
    spans.append(Span(pos + 2, eol, "code"))
    return eol + 1


def _table(text: str, pos: int) -> int:
    """An inert table of pipe-led rows, none past the header's count; its end, or -1.

    The table must end at an empty line or at the end of the text, and hold no
    backslash (cells are then split at every pipe) and nothing inline that can mask,
    so that nothing in it is masked at all.
    """
    end = text.find("\n\n", pos)
    end = len(text) if end < 0 else end + 1
    if text.find("\\", pos, end) >= 0 or _inline(text, pos, end):
        return -1
    lines = text[pos:end].rstrip("\n").split("\n")
    if len(lines) < 2 or not lines[1].startswith("|") or not _DELIMITER_ROW.match(lines[1]):  # noqa: PLR2004
        return -1
    count = _cell_count(lines[1])
    if _cell_count(lines[0]) != count:
        return -1
    for line in lines[2:]:
        if not line.startswith("|") or pipe_only(line, 0, len(line)):
            return -1  # a row of only "|" ends the table: the full scanner reads on
        # A row that ends with a pipe has one cell fewer than pipes: the usual row is
        # settled by one count, the others by splitting it as the full scanner does.
        if (line.count("|") > count + 1 or not line.endswith("|")) and _cell_count(line) > count:
            return -1
    return end


def _cell_count(line: str) -> int:
    """How many cells a row with no backslash has, as ``_md_blocks._cells`` splits it."""
    line = line.rstrip(" \t")
    line = line.removeprefix("|")
    pipes = line.count("|")
    if pipes == 0:
        return 1
    return pipes if line.endswith("|") else pipes + 1


def _marked_blocks(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The blocks between empty lines of a run that hold inline markup, in order.

    No paragraph spans an empty line, and the inline scanner finds nothing in a
    paragraph without a backtick, a ``<`` or a ``](``, so only these need scanning.
    """
    out: list[tuple[int, int]] = []
    # The next occurrence of each opener, searched again only once passed: linear.
    nexts = {c: text.find(c, start, end) for c in ("`", "<", "](")}
    pos = start
    while True:
        for c, at in nexts.items():
            if 0 <= at < pos:
                nexts[c] = text.find(c, pos, end)
        found = [at for at in nexts.values() if at >= 0]
        if not found:
            break
        at = min(found)
        blank = text.rfind("\n\n", pos, at)
        block_start = blank + 2 if blank >= 0 else pos
        stop = text.find("\n\n", at, end)
        block_end = end if stop < 0 else stop + 1
        out.append((block_start, block_end))
        pos = block_end
    return out


def _paragraphs(scanner: InlineScanner, text: str, start: int, end: int, out: list[Span]) -> None:
    """Inline-scan the paragraphs of a run of simple lines, in document order.

    An empty line ends a paragraph; an item starts one, and so does a quote line
    unless a quoted paragraph is open; any other line continues the open paragraph
    (lazily, inside an item or a quote).
    """
    para: list[tuple[int, int]] = []
    quoted = False
    pos = start
    while pos < end:
        eol = text.find("\n", pos, end)
        if eol < 0:
            eol = end
        lead = text[pos] if eol > pos else ""
        if lead == ">" and quoted:
            para.append((pos + 2, eol))
        elif not lead or lead in "-+*>":
            if para:
                _scan(scanner, text, para, out)
                para = []
            quoted = lead == ">"
            if lead:
                para.append((pos + 2, eol))
        else:
            para.append((pos, eol))
        pos = eol + 1
    if para:
        _scan(scanner, text, para, out)


def _scan(scanner: InlineScanner, text: str, lines: list[tuple[int, int]], out: list[Span]) -> None:
    """Inline-scan one paragraph's lines, mapping spans of joined lines back."""
    if _contiguous(text, lines):
        scanner.scan(text, lines[0][0], lines[-1][1], out)
        return
    content, starts = _join(text, lines)
    found: list[Span] = []
    scanner.scan(content, 0, len(content), found)
    if len(found) < 8:  # noqa: PLR2004 - a few spans: map each
        for span in found:
            out.extend(_map(span, lines, starts))
        return
    # Many spans (sorted, disjoint): one walk over the lines maps them all. This
    # runs once per piece of a span (every line of a long quote), so it builds the
    # tuples directly and keeps to locals.
    i, last = 0, len(lines) - 1
    new, append = tuple.__new__, out.append
    for span_start, span_end, kind in found:
        while i < last and starts[i + 1] <= span_start:
            i += 1
        j = i
        while j <= last:
            at = starts[j]
            if at >= span_end:
                break
            start, end = lines[j]
            lo = max(at, span_start)
            hi = at + end - start
            hi = min(hi, span_end)
            if lo < hi:
                append(new(Span, (start + lo - at, start + hi - at, kind)))
            j += 1
