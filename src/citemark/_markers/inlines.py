"""CommonMark 0.31.2 inline structure, as far as it decides which brackets a reader sees.

One left-to-right pass over the inline content of one block (a paragraph, a
heading, a table cell), in CommonMark's order: whichever construct starts first
wins. It reports the ranges a reader does not see as text: code spans, autolinks,
raw HTML, the ``(destination "title")`` tail of an inline link, the label of a full
reference link, and whole images (their alt text is an attribute). Link text stays
visible. Emphasis, entities and line breaks change no bracket's visibility and are
not parsed.

The scanner also holds the pieces the block scanner shares: the raw-HTML grammar
of CommonMark 0.31.2 section 6.6 (for HTML blocks, whose tags are masked and whose
character data is not; inline raw HTML follows cmark's scanner where the two differ)
and link reference definitions.

Every routine here is linear in its input: backtick runs are indexed by length,
raw HTML that fails to close once is not scanned again from a later start in the
same block, and link tails are single possessive regular-expression matches.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

__all__ = [
    "DEFINITION",
    "InlineScanner",
    "Span",
    "html_spans",
    "label_fits",
    "normalize_label",
]


class Span(NamedTuple):
    """A masked range in the scanned string, with the kind of construct it is."""

    start: int
    end: int
    kind: str


# --- raw HTML (CommonMark 6.6) ---------------------------------------------------------

_ATTRIBUTES = (
    r"(?:[ \t\n]++[A-Za-z_:][A-Za-z0-9_.:-]*+"
    r"(?:[ \t\n]*+=[ \t\n]*+(?:[^ \t\n\"'=<>`]++|'[^']*+'|\"[^\"]*+\"))?+)*+"
)
OPEN_TAG = rf"<[A-Za-z][A-Za-z0-9-]*+{_ATTRIBUTES}[ \t\n]*+/?>"
CLOSE_TAG = r"</[A-Za-z][A-Za-z0-9-]*+[ \t\n]*+>"
_AUTOLINK = re.compile(
    r"<[A-Za-z][A-Za-z0-9+.-]{1,31}:[^\x00-\x20<>]*+>"  # URI autolink
    r"|<[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]++@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*+>"  # e-mail autolink
)
_TAG = re.compile(f"{OPEN_TAG}|{CLOSE_TAG}")
_LETTER = re.compile(r"[A-Za-z]")
# A comment as cmark 0.31.2 scans one: a "-" in its text is followed by another
# character than "-", and "--" by another than ">", so "<!-- a --->" is no comment.
_COMMENT = re.compile(r"<!--(?:[^-]|-[^-]|--[^>])*+-->")
# Processing instructions and CDATA sections as cmark 0.31.2 scans them, in pieces:
# a "?" takes the character after it unless that is ">", and so does a "]]"; a "]"
# takes one that is not "]". So "<? a ??>" is no instruction (it would need an odd
# run of "?" before ">") and "<![CDATA[ a]]]>" no section (it needs a run of "]"
# whose length leaves 2 over when divided by 3).
_PI = re.compile(r"<\?(?:[^?>]++|\?[^>]|>)*+\?>")
_CDATA = re.compile(r"<!\[CDATA\[(?:[^\]]++|\][^\]]|\]\][^>])*+\]\]>")
_CLOSED = (("<?", _PI), ("<![CDATA[", _CDATA))


class _RawHtml:
    """Finds inline raw HTML at a ``<`` as cmark's inline parser; remembers what cannot close.

    A comment found unclosed also turns off CDATA sections and declarations for the
    rest of the block: they all start with ``<!`` and cmark stops looking at ``<!``
    once the comment scan has failed. (HTML blocks' content is read by the grammar
    instead: see ``html_spans``.)
    """

    def __init__(self) -> None:
        self.missing: set[str] = set()  # the openers found unclosed

    def match(self, text: str, pos: int, end: int) -> int:
        """Return the end of the raw HTML starting at ``pos``, or -1."""
        m = _TAG.match(text, pos, end)
        if m is not None:
            return m.end()
        if "<!--" in self.missing and text.startswith("<!", pos, end):
            return -1
        if text.startswith("<!-->", pos, end):
            return pos + 5
        if text.startswith("<!--->", pos, end):
            return pos + 6
        if text.startswith("<!--", pos, end):
            return self._comment(text, pos, end)
        for opener, pattern in _CLOSED:
            if text.startswith(opener, pos, end):
                return self._closed(opener, pattern, text, pos, end)
        return _declaration(text, pos, end, self.missing)

    def _closed(self, opener: str, pattern: re.Pattern[str], text: str, pos: int, end: int) -> int:
        if opener in self.missing:
            # cmark's inline parser scans no later one in the block once one fails.
            return -1
        m = pattern.match(text, pos, end)
        if m is None:
            self.missing.add(opener)
            return -1
        return m.end()

    def _comment(self, text: str, pos: int, end: int) -> int:
        if "<!--" in self.missing:
            return -1
        m = _COMMENT.match(text, pos, end)
        if m is not None:
            return m.end()
        # cmark's inline parser scans no later comment in the block once one fails.
        self.missing.add("<!--")
        return -1


def _declaration(text: str, pos: int, end: int, missing: set[str]) -> int:
    """The end of a declaration such as ``<!DOCTYPE html>`` at ``pos``, or -1.

    Read alike by cmark's scanner and the grammar: ``<!``, a letter, then up to the
    first ``>``. One that never closes is remembered in ``missing``.
    """
    if not (text.startswith("<!", pos, end) and pos + 2 < end and _LETTER.match(text, pos + 2)):
        return -1
    if "<!" in missing:
        return -1
    found = text.find(">", pos + 2, end)
    if found < 0:
        missing.add("<!")
        return -1
    return found + 1


# HTML blocks' content is read by CommonMark 0.31.2 section 6.6's grammar (cmark does
# not scan it at all; a browser reads it so): a comment, a processing instruction and
# a CDATA section each end at the first closer after their opener, so "<!-- a --->"
# is a comment and "<? a ??>" and "<![CDATA[ a ]]]>" are one instruction and one
# section. A construct whose closer is missing once is missing from every later start
# of the same opener too, which keeps the scan linear.
_GRAMMAR_CLOSED: Final = (("<!--", "-->"), ("<?", "?>"), ("<![CDATA[", "]]>"))


def _block_html(text: str, pos: int, end: int, missing: set[str]) -> int:
    """The end of the raw HTML at ``pos`` in an HTML block's content, by the grammar, or -1."""
    m = _TAG.match(text, pos, end)
    if m is not None:
        return m.end()
    if text.startswith("<!-->", pos, end):
        return pos + 5
    if text.startswith("<!--->", pos, end):
        return pos + 6
    for opener, closer in _GRAMMAR_CLOSED:
        if text.startswith(opener, pos, end):
            if opener in missing:
                return -1
            found = text.find(closer, pos + len(opener), end)
            if found < 0:
                missing.add(opener)
                return -1
            return found + len(closer)
    return _declaration(text, pos, end, missing)


def html_spans(text: str, start: int, end: int) -> list[Span]:
    """The tags, comments and other markup in an HTML block's content, by the grammar.

    Character data between them is what a reader sees, so it is not masked.
    """
    spans: list[Span] = []
    missing: set[str] = set()
    pos = text.find("<", start, end)
    while pos >= 0:
        stop = _block_html(text, pos, end, missing)
        if stop < 0:
            pos = text.find("<", pos + 1, end)
            continue
        spans.append(Span(pos, stop, "html"))
        pos = text.find("<", stop, end)
    return spans


# --- links (CommonMark 6.3, 4.7) --------------------------------------------------------

_MAX_PAREN_DEPTH = 32  # as cmark: deeper nesting ends the destination


def _nested_destination(depth: int) -> str:
    """A raw destination with balanced parentheses nested at most ``depth`` deep."""
    atom = r"[^\x00-\x20\x7f()\\]++|\\[!-/:-@\[-`{-~]|\\"
    inner = f"(?:{atom})*+"
    for _ in range(depth):
        inner = f"(?:{atom}|\\({inner}\\))*+"
    return inner


_RAW_DEST = _nested_destination(_MAX_PAREN_DEPTH)
_DEST = rf"(?:<(?:[^<>\n\\]|\\.)*+>|(?!<){_RAW_DEST})"
_WS = r"[ \t]*+(?:\n[ \t]*+)?"
_TITLE = r"(?:\"(?:[^\"\\]|\\.)*+\"|'(?:[^'\\]|\\.)*+'|\((?:[^()\\]|\\.)*+\))"
# An inline link tail: "(", a destination, optionally whitespace and a title, ")".
_LINK_TAIL = re.compile(rf"\({_WS}{_DEST}(?:{_WS}(?<=[ \t\n]){_TITLE})?+{_WS}\)", re.DOTALL)
# A link label: no unescaped bracket, and at most 1,000 bytes of UTF-8 between its
# brackets, as cmark 0.31.2 counts (its MAX_LINK_LABEL_LENGTH): the patterns allow
# 1,000 characters and ``label_fits`` checks the bytes.
MAX_LABEL_BYTES: Final = 1000
_LABEL = re.compile(r"\[(?:[^\\\[\]]|\\.){0,1000}+\]", re.DOTALL)
# A link reference definition, alone on its lines; with a title first, then without.
DEFINITION = re.compile(
    r"[ ]{0,3}+(?P<label>\[(?![ \t\n]*+\])(?:[^\\\[\]]|\\.){1,1000}+\]):"
    rf"{_WS}(?P<dest><(?:[^<>\n\\]|\\.)*+>|(?!<)(?=[^ \t\n]){_RAW_DEST})"
    rf"(?:(?=[ \t\n]){_WS}{_TITLE}[ \t]*+(?:\n|\Z)|[ \t]*+(?:\n|\Z))",
    re.DOTALL,
)
_SPACES = re.compile(r"[ \t\r\n]+")


def label_fits(text: str, start: int, end: int) -> bool:
    """Whether the label ``text[start:end]`` (brackets included) is within cmark's cap.

    cmark counts the bytes of the UTF-8 text between the brackets; a lone surrogate,
    which no UTF-8 text holds, counts as the three bytes Python would write for it.
    """
    if end - start - 2 > MAX_LABEL_BYTES:
        return False
    inner = text[start + 1 : end - 1]
    return inner.isascii() or len(inner.encode("utf-8", "surrogatepass")) <= MAX_LABEL_BYTES


def normalize_label(label: str) -> str:
    """CommonMark's label matching key: brackets off, whitespace collapsed, case folded."""
    return _SPACES.sub(" ", label[1:-1].strip(" \t\r\n")).casefold()


# --- the scanner -----------------------------------------------------------------------

_TOKEN = re.compile(r"[`\[\]<]")
_TOKEN_CODE_ONLY = re.compile(r"`")
_BACKTICKS = re.compile(r"`++")
_MAX_BACKTICKS = 1000  # as cmark: a longer run never opens or closes a code span
_SIMPLE_PAIR = re.compile(r"\[[^\[\]`\\<]*+\]")


def _escaped(text: str, pos: int, floor: int) -> bool:
    """Whether the character at ``pos`` follows an odd number of backslashes.

    The scanner calls it only after seeing a backslash at ``pos - 1``, which spares
    the call for almost every token.
    """
    count = 0
    while pos - count > floor and text[pos - count - 1] == "\\":
        count += 1
    return count % 2 == 1


class InlineScanner:
    """Masks what a reader does not see in one block's inline content."""

    def __init__(self, labels: set[str]) -> None:
        self.labels = labels  # normalized labels of the document's definitions
        self.raw = _RawHtml()
        self.last_paren = -1  # the last ")" of the content being scanned

    def scan(self, text: str, start: int, end: int, spans: list[Span]) -> None:  # noqa: PLR0915
        """Append the masked ranges of ``text[start:end]`` to ``spans``, in order."""
        if (
            not self.labels
            and text.find("`", start, end) < 0
            and text.find("<", start, end) < 0
            and text.find("](", start, end) < 0
        ):
            return  # nothing here can start a masked construct
        # cmark remembers a closer found missing for one block's content only: a
        # later block may close what an earlier one left open.
        self.raw.missing.clear()
        self.last_paren = text.rfind(")", start, end)
        ordered = [m.span() for m in _BACKTICKS.finditer(text, start, end)]
        # cmark's memory of the scan for closing runs: where it last saw a run of
        # each length, and whether a scan has reached the end. A closer is looked for
        # only where that memory says one may still come, which keeps this linear,
        # and is kept even where it forgets a closer that is there: cmark decides.
        last_seen: dict[int, int] = {}
        scanned = False
        ri = 0  # index in ordered of the run at the cursor
        links = self.labels or text.find("](", start, end) >= 0 or text.find("<", start, end) >= 0
        token = _TOKEN if links else _TOKEN_CODE_ONLY
        # Openers: [position of "[", is an image, a "[" came after it].
        openers: list[list[int]] = []
        # No links in links: once a link forms, the "[" openers before it are inactive
        # until a new "[" is pushed, which makes them usable again. That last part is
        # cmark's own behaviour (its no_link_openers flag), and cmark decides.
        no_link = False
        skip_to = start
        out: list[Span] = []
        for m in token.finditer(text, start, end):
            pos = m.start()
            if pos < skip_to:
                continue
            char = text[pos]
            if char == "`":
                while ordered[ri][1] <= pos:
                    ri += 1
                run_end = ordered[ri][1]  # the maximal run holding pos ends there
                open_at, length = pos, run_end - pos
                if text[pos - 1] == "\\" and _escaped(text, pos, skip_to):
                    open_at += 1  # the escaped backtick is literal; the rest may open
                    length -= 1
                    if length == 0:
                        continue
                skip_to = run_end
                if length > _MAX_BACKTICKS or (scanned and last_seen.get(length, -1) <= run_end):
                    continue
                for j in range(ri + 1, len(ordered)):
                    closer_start, closer_end = ordered[j]
                    size = closer_end - closer_start
                    last_seen[size] = closer_start
                    if size == length:
                        skip_to = closer_end
                        out.append(Span(open_at, skip_to, "code"))
                        break
                else:
                    scanned = True
            elif char == "<":
                if text[pos - 1] == "\\" and _escaped(text, pos, skip_to):
                    continue
                auto = _AUTOLINK.match(text, pos, end)
                if auto is not None:
                    skip_to = auto.end()
                    out.append(Span(pos, skip_to, "autolink"))
                    continue
                stop = self.raw.match(text, pos, end)
                if stop >= 0:
                    skip_to = stop
                    out.append(Span(pos, stop, "html"))
            elif char == "[":
                if text[pos - 1] == "\\" and _escaped(text, pos, skip_to):
                    continue
                image = pos > start and text[pos - 1] == "!" and not _escaped(text, pos - 1, start)
                if openers:
                    openers[-1][2] = 1
                if not image:
                    no_link = False
                if not self.labels:
                    # A pair with nothing inside that could open anything, and no "("
                    # after it, is pushed and popped again without forming a link.
                    simple = _SIMPLE_PAIR.match(text, pos, end)
                    if simple is not None and text[simple.end() : simple.end() + 1] != "(":
                        skip_to = simple.end()
                        continue
                openers.append([pos, int(image), 0])
            elif openers and not (text[pos - 1] == "\\" and _escaped(text, pos, skip_to)):
                opener_pos, is_image, after = openers.pop()
                if not is_image and no_link:
                    continue
                stop, kind = self._link_end(text, pos + 1, end, opener_pos, after)
                if stop < 0:
                    continue
                if is_image:
                    while out and out[-1].start >= opener_pos - 1:
                        out.pop()  # all of an image is hidden, its inner spans too
                    out.append(Span(opener_pos - 1, stop, "image"))
                else:
                    if stop > pos + 1 and kind:
                        out.append(Span(pos + 1, stop, kind))
                    no_link = True
                skip_to = stop
        spans.extend(out)

    def _link_end(
        self, text: str, pos: int, end: int, opener: int, bracket_after: int
    ) -> tuple[int, str]:
        """After a ``]`` at ``pos - 1``: where the link ends and what its tail is, or -1."""
        if text.startswith("(", pos, end) and pos < self.last_paren:
            m = _LINK_TAIL.match(text, pos, end)  # a tail ends at a ")": none, no tail
            if m is not None:
                return m.end(), "link_destination"
        if not self.labels:
            return -1, ""
        label = _LABEL.match(text, pos, end) if text.startswith("[", pos, end) else None
        size = label.end() - pos if label is not None else 0
        if size > 2:  # noqa: PLR2004 - "[]" is the collapsed form
            if label_fits(text, pos, pos + size):
                key = normalize_label(text[pos : pos + size])
                return (pos + size, "link_label") if key in self.labels else (-1, "")
            size = 0  # too many bytes for cmark: no label, but the text may be one
        if bracket_after:
            return -1, ""
        if normalize_label(text[opener:pos]) in self.labels and label_fits(text, opener, pos):
            return pos + size, ""
        return -1, ""
