"""Streaming resolution: fail fast on a cited marker that cannot be valid.

Both adapters stream model output through `StreamingResolver`. It passes text
through unchanged and raises `MarkerOutOfRangeError` once an out-of-range marker is
*certainly* a citation and every marker before it is settled too: its group is
complete and nothing later can hide it (see `_settled`), so the error names the
same marker `citemark.resolve` names for the whole text, and is never raised for a
text `resolve` accepts. A marker that is masked now keeps waiting: later text may
still show it. When the stream ends, `finish` resolves the whole text exactly as
`citemark.resolve` does.

A marker split across chunks (``"[1"`` then ``"2]"``) is handled: the scan keeps
only a ``[`` that later text could still close as a group. Feeding is linear in
the text; while an out-of-range marker waits for certainty, each chunk re-reads the
whole text once.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from citemark._contract.errors import MarkerOutOfRangeError, NoSourcesError
from citemark._contract.syntax import DEFAULT_INDEX_BASE, GROUP_PATTERN, check_index_base
from citemark._markers.blocks import block_spans, row_cells
from citemark._markers.grammar import marker_number, masked_spans
from citemark._markers.inlines import MAX_LABEL_BYTES, normalize_label
from citemark._markers.resolve import resolve

if TYPE_CHECKING:
    from collections.abc import Sequence

    from citemark._contract.models import CitedAnswer, Source

__all__ = ["StreamingResolver"]

# What may follow "[" in an unfinished marker group.
_GROUP_PREFIX = re.compile(r"[0-9, ]*")


class StreamingResolver:
    """Resolve an answer while it streams in.

    Example:
        ```python
        from citemark import MarkerOutOfRangeError, Source, StreamingResolver

        stream = StreamingResolver([Source(text="a", doc_id="a"), Source(text="b", doc_id="b")])
        for piece in ["It ends [", "2] and [1", "]."]:
            stream.feed(piece)
        print([c.marker for c in stream.finish().citations])
        #> [2, 1]
        stream = StreamingResolver([Source(text="a", doc_id="a")])
        try:
            for piece in ["Wrong [", "7", "] and more"]:
                stream.feed(piece)
        except MarkerOutOfRangeError as exc:
            print(exc.marker, "raised while feeding", repr(piece))
        #> 7 raised while feeding '] and more'
        ```
    """

    def __init__(
        self,
        sources: Sequence[Source],
        *,
        index_base: int = DEFAULT_INDEX_BASE,
        strict: bool = False,
        allow_ranges: bool = False,
    ) -> None:
        """Start a stream over ``sources``.

        ``index_base``, ``strict`` and ``allow_ranges`` mean what they mean for
        `citemark.resolve`. Citation-like text that is not a marker may arrive split
        over any number of chunks: it is found on the whole text by `finish`, which
        reports it (or, with ``strict``, rejects it) exactly as `resolve` does.

        Raises:
            NoSourcesError: ``sources`` is empty (before any text arrives).
            ValueError: ``index_base`` is not 0 or 1.
        """
        self._base = check_index_base(index_base)
        self._strict = strict
        self._allow_ranges = allow_ranges
        if not sources:
            raise NoSourcesError
        self._sources = tuple(sources)
        # Everything fed so far is "".join(self._done) + self._tail. The tail holds
        # only what could still be the start of a marker group, so it stays short and
        # feeding stays linear; the whole text is joined only when a marker waits.
        self._done: list[str] = []
        self._tail = ""
        self._tail_at = 0  # offset of the tail in the whole text
        self._waiting: list[tuple[int, int]] = []  # (group start, marker) to re-check

    @property
    def text(self) -> str:
        """Everything fed so far."""
        return "".join(self._done) + self._tail

    def feed(self, chunk: str) -> str:
        """Append ``chunk`` and return it unchanged.

        Raises:
            MarkerOutOfRangeError: a complete marker outside ``1..N`` is certainly a
                citation, whatever text follows.
        """
        self._tail += chunk
        if "]" in chunk:
            self._find_groups()
        self._trim()
        if self._waiting:
            self._raise_if_certain()
        return chunk

    def finish(self) -> CitedAnswer:
        """Resolve the whole text, exactly as `citemark.resolve` would.

        Raises:
            SynthesisError: the text is blank, or a marker is out of range
                (`MarkerOutOfRangeError`).
        """
        return resolve(
            self.text,
            self._sources,
            index_base=self._base,
            strict=self._strict,
            allow_ranges=self._allow_ranges,
        )

    def _find_groups(self) -> None:
        count = len(self._sources)
        base = self._base
        for group in GROUP_PATTERN.finditer(self._tail):
            for digits in group.group(1).split(","):
                number = marker_number(digits.strip(" "))
                if not base <= number < count + base:
                    self._waiting.append((self._tail_at + group.start(), number))
                    break
        # Those groups are examined; only an unclosed "[" after them may continue.
        last_close = self._tail.rfind("]")
        if last_close >= 0:
            self._retire(last_close + 1)

    def _trim(self) -> None:
        """Keep in the tail only a "[" that later text could still close as a group."""
        tail = self._tail
        opener = tail.rfind("[")
        if opener < 0 or not _GROUP_PREFIX.fullmatch(tail, opener + 1):
            self._retire(len(tail))
        elif opener > 0:
            self._retire(opener)

    def _retire(self, length: int) -> None:
        if length:
            self._done.append(self._tail[:length])
            self._tail = self._tail[length:]
            self._tail_at += length

    def _raise_if_certain(self) -> None:
        """Raise for the first waiting marker once it, and all before it, are settled.

        Markers wait in text order. A settled marker that is masked is certainly no
        citation and is dropped; a settled visible one raises. An unsettled marker
        (masked or not) stops the walk, so no later marker is named before it: the
        error always names the marker `resolve` would name.
        """
        text = self.text
        self._waiting.sort()
        starts = [start for start, _ in self._waiting]
        seen = [_masked_at([(a, b) for a, b, _ in masked_spans(text)], starts)]
        for suffix, defined in _continuations(text, starts[0]):
            if defined:
                spans = [(a, b) for a, b, _ in block_spans(text + suffix, defined)]
            else:
                spans = [(a, b) for a, b, _ in masked_spans(text + suffix)]
            seen.append(_masked_at(spans, starts))
        kept = []
        for index, (_, number) in enumerate(self._waiting):
            states = {masked[index] for masked in seen}
            if len(states) > 1:
                kept = self._waiting[index:]  # some continuation shows it, another hides it
                break
            if states == {True}:
                continue  # masked whatever follows: never a citation
            raise MarkerOutOfRangeError(number, len(self._sources), self._base)
        self._waiting = kept


def _masked_at(
    spans: Sequence[tuple[int, int] | tuple[int, int, str]], starts: list[int]
) -> list[bool]:
    """For each sorted offset in ``starts``, whether a span of the sorted ``spans`` covers it."""
    out = []
    i = 0
    for start in starts:
        while i < len(spans) and spans[i][1] <= start:
            i += 1
        out.append(i < len(spans) and spans[i][0] <= start)
    return out


# A line end, then only blanks, then a line end: no paragraph crosses it.
# Atomic: a CR LF is one line end, never a CR and then an empty line.
_BLANK_LINE = re.compile(r"(?>\r\n|\r|\n)[ \t]*+(?:\r\n|\r|\n)")
_BACKTICK_RUN = re.compile(r"`++")
# A bracket pair that can be a link label, and a line's container prefix.
_LABEL = re.compile(r"\[(?:[^\\\[\]]|\\.){1,1000}\]", re.DOTALL)
_LINE_PREFIX = re.compile(r"(?:[ \t>]|(?:[-+*]|[0-9]{1,9}[.)])[ \t])*+")
# A "[" (not escaped) whose label runs to the end of the text, unclosed.
_OPEN_LABEL = re.compile(r"(?<!\\)(?:\\\\)*+\[((?:[^\\\[\]]|\\.)*+\\?)\Z", re.DOTALL)
# Text that ends what can be open at the end of a text and hold a group: raw HTML
# (a tag, also after a letter where ">" would start a quote; a quoted attribute; a
# comment, also after a letter where its text ends in "-"; a processing instruction,
# after an odd or an even run of "?"; CDATA, also after a letter where its text ends
# in "]"), an autolink, a link title or a definition's, and a definition after a label.
_CLOSERS = (">", "x>", '">', "'>", "-->", "x-->", "?>", "]]>", "x]]>", '"', "'", ": /u", "/u")
# What the last line may hold while it is still becoming a delimiter row.
_PARTIAL_ROW = re.compile(r"[ \t>]*+\|?(?:[ \t]*+:?-*+:?[ \t]*+\|)*+[ \t]*+:?-*+")
_LINES = re.compile(r"\r\n|\r|\n")
_MAX_BACKTICKS = 1000  # as cmark: a longer run opens no code span
_MAX_DEPTH = 33  # one more than cmark's nesting of parentheses in a destination


def _continuations(text: str, start: int) -> list[tuple[str, frozenset[str]]]:
    """What may follow ``text`` and change whether a group from ``start`` on is seen.

    Each is a suffix and a set of labels a later definition would define. Only what
    is open in the paragraph of the group at ``start`` can change later, so the
    backtick runs, parentheses, brackets and labels are those after the last blank
    line before it: a closing run of each length (a code span), ``)`` as deep as the
    open parentheses, after an optional quote or ``>`` (a destination or title),
    ``(u)`` after as many ``]`` as there are open brackets (an image around it), a
    delimiter row under the last line (a table header, cut into cells; behind each
    line's lead, and with one cell more) or under a new header line (which turns the
    definitions above it into text), raw HTML and title closers (also on a new line
    behind the last line's quote markers and list indentation, and after a letter
    where at a line's start they would open a block), and a definition of each label
    (alone, and all at once) for reference links, and of a label still being written
    at the end, closed by ``]``. A lead begun on the last line is matched by columns
    (a tab read to its tab stop, blanks before a ``>`` taken as its indentation).
    Each closer is also tried with a delimiter row after it (a span closed, and then
    its line a header), and, when the text ends in a backslash that would escape it,
    after one more character. A backtick run counts also without an
    escaped first backtick, and an escaped ``)`` or ``]`` closes nothing. Each is a
    witness: a group that one of them shows and another hides is not settled.
    """
    floor = 0
    for m in _BLANK_LINE.finditer(text, 0, start):
        floor = m.end()
    region = text[floor:]
    out: list[tuple[str, frozenset[str]]] = [(closer, frozenset()) for closer in _CLOSERS]
    cut = _line_start(text, len(text))  # where the last line starts
    tail = text[cut:]
    begin, lead = _new_line(text, cut)
    if begin:
        # On a new line: after a list marker with nothing behind it yet, a closer on
        # the marker's line makes an item that ends the paragraph, one on the next
        # line does not. Inside a quote or list item, a closer only counts on a line
        # that continues it (an HTML block takes no lazy continuation line).
        out.extend((begin + closer, frozenset()) for closer in _CLOSERS)
    runs: set[int] = set()
    for m in _BACKTICK_RUN.finditer(region):
        runs.add(len(m.group()))
        if m.start() and region[m.start() - 1] == "\\":
            # An escaped first backtick is literal, and the rest of the run opens.
            runs.add(len(m.group()) - 1)
    runs.discard(0)
    for size in sorted(runs):
        if size <= _MAX_BACKTICKS:  # right after the text (a run it ends grows), apart,
            # and after a letter: at a line's start a run would open a fence instead.
            out.extend((gap + "`" * size, frozenset()) for gap in ("", " ", "x"))
    # An escaped closer closes nothing, so "\\)" and "\\]" are not counted as closers (a
    # closer after an escaped backslash is left out too: more depth, more witnesses).
    closing = region.count(")") - region.count("\\)")
    depth = min(max(region.count("(") - closing, 0) + 1, _MAX_DEPTH)
    for quote in ("", '"', "'", ">"):
        out.extend((quote + ")" * d, frozenset()) for d in range(1, depth + 1))
    closing = region.count("]") - region.count("\\]")
    depth = min(max(region.count("[") - closing, 0) + 1, _MAX_DEPTH)
    out.extend(("]" * d + "(u)", frozenset()) for d in range(depth + 1))
    # A closer and then a delimiter row: the line, its spans closed, becomes a header.
    out.extend([(suffix + _delimiter_row(text + suffix), defined) for suffix, defined in out])
    # The lead's blanks may be a paragraph's indentation, not a list item's, and a
    # lazy line has neither quote markers nor the item's indentation: what follows
    # is also tried behind each line's whole lead, its quote markers only, and none.
    lines = _LINES.split(region)
    quotes = {line[: len(line) - len(line.lstrip(" \t>"))].rstrip(" \t") for line in lines}
    whole = {_last_line_lead(line)[0] for line in lines}
    leads = sorted(({q + " " if q else "" for q in quotes} | whole) - {lead})
    # A lazy line keeps its indentation, which cmark-gfm may read as one more cell.
    for row_lead in (None, *leads):
        out.extend((_delimiter_row(text, more, row_lead), frozenset()) for more in (0, 1))
    rows = _partial_rows(text, cut)
    out.extend((row, frozenset()) for row in rows)
    if not begin.startswith("\n") and begin:  # the row's line still lacks part of its lead
        out.extend((begin + row, frozenset()) for row in rows)
    # cmark-gfm reads no definition above a table's header: a header line and its
    # delimiter row after the text make the paragraph's definitions plain text.
    out.append((f"{begin}| x |\n{lead}|---|", frozenset()))
    out.extend((f"\n{q}| x |\n{q}|---|", frozenset()) for q in leads)
    if _LINE_PREFIX.fullmatch(tail):
        # The last line has its containers only, or the start of a lead: a closer
        # may follow the rest of any line's lead (a blank line in a quote in a list
        # item may be indented as the item's text is, or further), and the header
        # line may go on from there, as it is or with the rest of the lead.
        found = {q: _lead_rest(tail, q) for q in sorted({lead, *leads})}
        rests = {rest for rest in found.values() if rest is not None} - {"", begin}
        out.extend((rest + closer, frozenset()) for rest in sorted(rests) for closer in _CLOSERS)
        for q, rest in found.items():
            rests = {"", rest or ""}
            out.extend((f"{rest}| x |\n{q}|---|", frozenset()) for rest in sorted(rests))
    if _ends_escaping(text):
        # The text ends in a backslash that escapes whatever comes next: each suffix
        # is also tried after a character, which leaves its own first character free.
        out.extend([("x" + suffix, defined) for suffix, defined in out])
    labels = {normalize_label(m.group()) for m in _LABEL.finditer(region)}
    labels.discard("")
    out.extend(("", frozenset({label})) for label in sorted(labels))
    if len(labels) > 1:
        out.append(("", frozenset(labels)))
    out.extend(_open_label(text, floor, labels))
    return out


def _open_label(text: str, floor: int, labels: set[str]) -> list[tuple[str, frozenset[str]]]:
    """A label still being written at the end of ``text``, closed and defined below.

    ``[b`` after ``![a [6]]`` is a full reference once ``]`` and a definition of
    ``b`` follow: the suffix closes it (after a character, where the text ends in an
    escaping backslash or the label is still blank) and the label is read as
    defined, alone and with ``labels``.
    """
    m = _OPEN_LABEL.search(text, max(floor, len(text) - MAX_LABEL_BYTES - 8))
    if m is None:
        return []
    blank = not m.group(1).strip(" \t\r\n")
    close = "x]" if blank or _ends_escaping(text) else "]"
    written = "[" + m.group(1) + close
    label = normalize_label(written)
    if not label or len(written[1:-1].encode()) > MAX_LABEL_BYTES:
        return []
    out = [(close, frozenset({label}))]
    if labels - {label}:
        out.append((close, frozenset({label, *labels})))
    return out


def _ends_escaping(text: str) -> bool:
    """Whether ``text`` ends in an odd run of backslashes (one escapes what comes next)."""
    count = 0
    while count < len(text) and text[-1 - count] == "\\":
        count += 1
    return count % 2 == 1


def _line_start(text: str, end: int) -> int:
    """Where the line holding the text just before offset ``end`` starts."""
    return max(text.rfind("\n", 0, end), text.rfind("\r", 0, end)) + 1


def _line_end_before(text: str, cut: int) -> int:
    """Where the line break that ends just before ``cut`` begins (CR LF is one break)."""
    return cut - 2 if text.startswith("\r\n", cut - 2) else cut - 1


def _last_line_lead(text: str) -> tuple[str, int]:
    """What continues the last line's containers on a new line, and where its text starts.

    The lead keeps the line's ``>`` markers and turns a list marker into spaces of its
    width, so a line after it stays in the same quote or list item. A ``>`` right
    before a list marker (``>-``) gets a blank after it: on a later line the blank
    after ``>`` is the quote's own, and the item's indentation counts after it.
    """
    cut = _line_start(text, len(text))
    if cut == len(text):
        cut = _line_start(text, _line_end_before(text, cut))
    prefix = _LINE_PREFIX.match(text, cut)
    at = prefix.end() if prefix is not None else cut
    lead = ""
    tight: list[int] = []  # where in the lead a ">" is followed by a list marker
    for i in range(cut, at):  # a tab goes to the next tab stop, as cmark reads it
        c = text[i]
        if c == ">" and i + 1 < at and text[i + 1] not in " \t>":
            tight.append(len(lead) + 1)
        lead += " " * (4 - len(lead) % 4) if c == "\t" else c if c == ">" else " "
    for end in reversed(tight):
        lead = lead[:end] + " " + lead[end:]
    return lead, at


def _new_line(text: str, cut: int) -> tuple[str, str]:
    """How a continuation starts a line in the last line's containers, and their lead.

    ``cut`` is where the last line starts. Returns what to append to begin such a
    line and the whole lead a further line needs. When ``text`` already ends on a new
    line (nothing but blanks, or the start of the lead, after its last break), no
    break is appended, only what the lead still lacks; the lead is that of the last
    line with content: a list item goes on past a blank line.
    """
    tail = text[cut:]
    if cut and _LINE_PREFIX.fullmatch(tail):
        lead = _last_line_lead(_through_last_content(text[:cut]))[0]
        rest = _lead_rest(tail, lead)  # a lead written in part ("> > " after ">"): its rest
        if rest is not None:
            return rest, lead
    lead = _last_line_lead(text)[0]
    return "\n" + lead, lead


def _columns(prefix: str) -> str:
    """A line's ``prefix`` with each tab written as the blanks to its tab stop (as cmark)."""
    out = ""
    for c in prefix:
        out += " " * (4 - len(out) % 4) if c == "\t" else c
    return out


def _lead_rest(tail: str, lead: str) -> str | None:
    """What to write after ``tail``, a line's start, so the line has ``lead``'s containers.

    ``lead`` is written in ``>`` and blanks (`_last_line_lead`); ``tail`` may hold tabs,
    read to their tab stops. Where the tail is not the start of the lead column for
    column, its ``>`` markers are matched in order and the blanks after its last one
    taken as indentation: up to three columns more before the lead's next ``>`` still
    continue that quote (so they are dropped), and past its last one they are the
    line's text. None where the tail writes a list marker or more ``>`` than the lead.
    """
    written = _columns(tail)
    if lead.startswith(written):
        return lead[len(written) :]
    markers = written.count(">")
    if written.strip(" >") or markers > lead.count(">"):
        return None
    rest = ">".join(lead.split(">")[markers:])
    blanks = len(written) - len(written.rstrip(" "))
    indent = len(rest) - len(rest.lstrip(" "))
    return rest[blanks:] if blanks <= indent else rest[indent:]


def _through_last_content(text: str) -> str:
    """``text`` up to the end of its last line holding more than a container prefix.

    A line of only ``>`` markers and blanks is a blank line inside its quote: a list
    item in that quote goes on past it, so its lead is read from the line before.
    """
    end = len(text)
    while end > 0:
        start = _line_start(text, _line_end_before(text, end))
        line = text[start:end].rstrip("\r\n")
        if not _LINE_PREFIX.fullmatch(line) or line.strip(" \t>"):
            return text[:start] + line + "\n"
        end = start
    return "\n"


def _partial_rows(text: str, cut: int) -> list[str]:
    """What completes a delimiter row begun on the last line, under the line above it.

    ``cut`` is where the last line starts. ``|`` or ``|--`` under a header line may
    still become its delimiter row, with as many cells as the header has (or one more
    or fewer, which cmark-gfm refuses), and a one-cell row needs no pipe once it holds
    an alignment colon (``-:``: no setext underline).
    """
    if not cut or not _PARTIAL_ROW.fullmatch(text, cut):
        return []
    header = text[:cut]
    start = _line_start(header, _line_end_before(header, cut))
    prefix = _LINE_PREFIX.match(header, start)
    at = prefix.end() if prefix is not None else start
    cells = row_cells(header, at, max(len(header.rstrip("\r\n")), at))
    return [
        ":",
        *("-" + "|-" * more for more in range(cells + 1)),
        *("|-" * more for more in range(1, cells + 1)),
    ]


def _delimiter_row(text: str, more: int = 0, lead: str | None = None) -> str:
    """A delimiter row that makes the last line of ``text`` a table's header.

    ``more`` is how many cells to write beyond those the line shows; ``lead`` is
    written before the row instead of the last line's own.
    """
    own, at = _last_line_lead(text)
    lead = own if lead is None else lead
    end = len(text.rstrip("\r\n"))
    cells = row_cells(text, at, max(end, at)) + more
    newline = "" if text.endswith(("\n", "\r")) else "\n"
    # One cell needs a pipe: "-" alone under a line is a setext underline.
    return newline + lead + ("|".join(["-"] * cells) if cells > 1 else "|-")
