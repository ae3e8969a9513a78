"""Fail-fast is exact: the stream raises in the chunk that makes a marker certain.

"Certain" is judged by the reference parsers, not by citemark: a planted marker
(every number unique and out of range for the nine sources) is certainly a citation
after a prefix when cmark shows it for the prefix followed by each of a fixed set of
adversarial continuations (closers for code spans, raw HTML, autolinks, link tails,
titles and images; a definition after a label; a delimiter row under the last line;
a later definition of every label the prefix holds, also after closing a fence, a
comment or another HTML block that may be open), and every planted marker before it
is certainly hidden. Both directions are asserted over random chunkings: the stream
never raises before that chunk, and it raises within it, naming that marker.
"""

from __future__ import annotations

import re
from itertools import pairwise

from commonmark_oracles import (
    cmark_gfm_markup_free,
    cmark_gfm_visible,
    cmark_visible,
    makes_table,
)
from hypothesis import HealthCheck, example, given, reject, settings
from hypothesis import strategies as st
from test_commonmark_differential import answers, old_core_blocks

from citemark import MarkerOutOfRangeError, Source, StreamingResolver
from citemark._stream import _continuations as stream_continuations

SOURCES = [Source(text=f"source {i}", doc_id=f"d{i}") for i in range(1, 10)]
_CLOSERS = [
    *(
        "",
        "`",
        "``",
        "```",
        " `",
        " ``",
        " ```",
        ">",
        '">',
        "'>",
        "-->",
        " -->",
        "x-->",
        "?>",
        "]]>",
        "x]]>",
    ),
    *('"', "'", ")", "))", '")', "')", ">)", "(u)", "](u)", "]](u)", ": /u", "/u"),
]
# A delimiter row on a new line; where the prefix already ends a line, right after it.
_TABLE_ROWS = [
    "\n" + lead + "|".join(["-"] * cells)
    for lead in ("", "> ", "  ", "   ")
    for cells in range(1, 5)
]
# A header line and its delimiter row: cmark-gfm then reads no definition above them.
_TABLE_ROWS += [
    nl + lead + "| x |\n" + lead + "|---|" for nl in ("", "\n") for lead in ("", "> ", "  ", "    ")
]
_BEFORE_DEFINITIONS = ["", "\n```", "\n````", "\n~~~", "\n-->", "\n?>", "\n]]>", "\n>", "\n</pre>"]
_LABEL = re.compile(r"\[((?:[^\\\[\]]|\\.){1,999})\]")
_BLANK = re.compile(r"(?>\r\n|\r|\n)[ \t>]*+(?:\r\n|\r|\n)")
_PLANTED = re.compile(r"\[(7[0-9]{4})\]")


def continuations(prefix: str) -> list[tuple[str, bool]]:
    """The fixed set, with the prefix's labels; each with whether cmark-gfm judges it.

    A definition is written with blanks inside its brackets (the same label once
    normalized), so that where it is only text, in an HTML block that is still open,
    it does not show a planted marker's own text. The closers are also written on a
    new line behind the last line's quote markers (an HTML block in a quote ends
    where the quote does).
    """
    table = "|---|" in prefix or "\n|-" in prefix
    out = [(c, table) for c in _CLOSERS] + [(row, True) for row in _TABLE_ROWS]
    if prefix.endswith(("\n", "\r")):
        out += [(row[1:], True) for row in _TABLE_ROWS if row.startswith("\n")]
    lines = re.split(r"\r\n|\r|\n", prefix.rstrip("\r\n"))
    quotes = re.match(r"[> ]*", lines[-1]).group()
    if ">" in quotes:
        begin = quotes if prefix.endswith(("\n", "\r")) else "\n" + quotes
        out += [(begin + c, table) for c in _CLOSERS if c]
    if len(lines) > 1 and quotes == lines[-1] and not prefix.endswith(("\n", "\r")):
        # A lead written in part ("\n>" under "> > "): the closers after its rest.
        lead = re.match(r"[> ]*", lines[-2]).group()
        if lead.startswith(quotes):
            out += [(lead[len(quotes) :] + c, table) for c in _CLOSERS if c]
    # And the stream's own witnesses, judged by cmark: where the fixed set lacks one
    # the stream has (a closer behind a quote and list lead, say), the stream waiting
    # for it is right, and cmark says so.
    planted = _PLANTED.search(prefix)
    if planted is not None:
        for suffix, defined in stream_continuations(prefix, planted.start()):
            if not defined:
                out.append((suffix, table or "|-" in suffix))
    labels = sorted({m.group(1) for m in _LABEL.finditer(prefix)})
    for before in _BEFORE_DEFINITIONS:
        for label in labels:
            out.append((f"{before}\n\n[ {label} ]: /u", table))
        if len(labels) > 1:
            out.append((before + "\n\n" + "".join(f"[ {x} ]: /u\n" for x in labels), table))
    return out


class Unjudged(Exception):  # noqa: N818 - a signal, not an error
    """No reference parser can judge a witness of this prefix."""


def certain_marker(prefix: str) -> int | None:
    """The planted marker that is certainly the first visible one after ``prefix``, if any."""
    planted = [int(m.group(1)) for m in _PLANTED.finditer(prefix)]
    if not planted:
        return None
    witnesses = continuations(prefix)
    if any(table and old_core_blocks(prefix + suffix) for suffix, table in witnesses):
        # cmark-gfm's older core divides such a text into blocks unlike 0.31.2 (a
        # lazy tag line ends a quote, <search> is no block start), and cmark has no
        # tables: no oracle judges a table witness there.
        raise Unjudged
    # cmark-gfm's output is read by Python's HTML parser, which reads raw HTML as a
    # browser does, not by CommonMark's grammar (an unclosed comment runs on into a
    # later block's "-->"). Where cmark-gfm and cmark already differ on a marker of a
    # prefix that holds no table, the difference is that parser's: cmark alone judges.
    # A table after the text cannot reach back past a blank line: in a prefix that
    # holds no table, cmark judges the markers before its last blank line too (the
    # parser can run an unclosed CDATA section on into a "]]>" in the table).
    tabled = makes_table(prefix)
    floor = 0 if tabled else max((m.end() for m in _BLANK.finditer(prefix)), default=0)
    judged_alone = any(prefix.index(f"[{number}]") < floor for number in planted)
    # Each witness's reading of a marker: cmark's, or cmark-gfm's where the witness
    # makes a table (as the issue says), and then cmark's where cmark judges alone.
    # Python's parser can also show a group that cmark-gfm reads as raw HTML (it ends
    # "<?" at the first ">"): where cmark-gfm's view without raw HTML hides a group
    # that the parser shows, that witness does not judge it.
    views = []
    for suffix, table in witnesses:
        text = prefix + suffix
        if table and makes_table(text):
            own = cmark_visible(text) if judged_alone else ""
            views.append((cmark_gfm_visible(text), cmark_gfm_markup_free(text), own))
        else:
            views.append((cmark_visible(text), None, ""))
    gfm, plain = cmark_gfm_visible(prefix), cmark_visible(prefix)
    for number in planted:
        mark = f"[{number}]"
        trusted = tabled or (mark in gfm) == (mark in plain)
        earlier = prefix.index(mark) < floor
        states = set()
        for view, free, own in views:
            if free is None:
                states.add(mark in view)
            elif earlier:
                states.add(mark in own)
            elif trusted and (mark in free or mark not in view):
                states.add(mark in free)
        if not states:
            raise Unjudged  # every witness makes a table, and that parser misreads it
        if states == {True}:
            return number
        if states != {False}:
            return None  # not settled: nothing after it may be named yet
    return None


def fed(chunks: list[str]) -> tuple[int | None, int | None]:
    """The index of the chunk that raised while feeding, and the marker it named."""
    stream = StreamingResolver(SOURCES)
    for index, chunk in enumerate(chunks):
        try:
            stream.feed(chunk)
        except MarkerOutOfRangeError as exc:
            return index, exc.marker
    return None, None


@st.composite
def chunked_answers(draw: st.DrawFn) -> list[str]:
    text = draw(answers())[0]
    cuts = sorted(draw(st.sets(st.integers(0, len(text)), max_size=8)))
    return [text[a:b] for a, b in pairwise([0, *cuts, len(text)]) if b > a]


class TestCertaintyIsExact:
    @settings(
        max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
    )
    @given(chunked_answers())
    @example(["After code `a[1]` comes [70001]", " and more."])
    @example(["Use `a [70001]", " b` and [70002]", "\n\nend"])
    @example(["[a][70001]", " x", "\n\n[r1]: /u"])
    @example(["![x [70001]", "](i.png) [70002]"])
    @example(["<a title='[70001]", "'> [70002]"])
    @example(["| a |\n|---|\n", "| `x | [70001]` |", "\n"])
    # Found at stop 30: a header line under indented or lazy paragraph lines, or in a
    # list item indented by a tab; an HTML block of the first kind left open.
    @example(["[r1]: /u[70003]\n    code [70004]\n    more"])
    @example(["> [r1]: /u[70003]\n    code [70004]\n    more"])
    @example(["> [r1]: /u[70003]\n>     ", "code [70004]\n>     more"])
    @example(["- [r1]: /u[70003]\n\tcode [70004]\n\tmore"])
    @example(["<pre class='[70006]'>\n[70003] `c [70004]` <b title='[70005]'>\nx [70007]"])
    @example(["<script>\n[70003] `c [70004]` <b title='[70005]'>\nx [70007]"])
    @example(["<pre\n[70003] `c [70004]` <b title='[70005]'>\nx [70007]"])
    # Found at stop 31: under a header line ended by CRLF, the delimiter row the stream
    # tried had one cell (the line above was read as the empty one between CR and LF).
    @example(["| `a | [70001] | b` |\r\n", "|---|---|---|\r\n[70002] x"])
    # A comment whose text ends in "-" ("<!-- x --->") is none for cmark: " -->" ends it.
    @example(["# <!-- [70001] -", "-> the"])
    # A one-cell delimiter row (it needs a pipe); CR LF read as one line end when
    # looking for the paragraph's start; a closer on the line after a bare
    # list marker; a header row a lazy line's indentation gives one more cell.
    @example([">", ' [r1]: /u[70003] "t [70001]"\n\n``[70004]\n`` ', "[70005]\n", "\nthe"])
    # An unclosed CDATA section in an HTML block, then a table witness: cmark judges.
    @example(
        ["- - 1. <![CDATA[ [70006]\n\n      [70003] `c [70004]` <b title=", "'[70005]'>\n      x"]
    )
    @example(["    code [70001]", "\r\n    more\r\n> <span\r\ntitle='[70002]'> the [70004] the"])
    @example(["x<? [70001] ?> x<? [70003]\n* ", "    code [70004]\n      more"])
    @example(
        ["- | the |\n |---|\n | x<? [70001] the |\n | the |\n |---|\n | x<? [70002] ?> [70004] |"]
    )
    # And a header line in a list item after a lazy line: the item's definition is text.
    @example(["- [r1]: /u[70003]\n[70004] [70005]"])
    # Found at stop 32: a delimiter row on a lazy line makes no table, though the
    # prefix's witnesses were all marked as table ones, and [70007], which Python's
    # parser shows (it ends "<?" at "]]>"), was judged by none, so never settled.
    @example(["1. x<? <![CDATA[ ]]> [70007] ?> <!-- [70010]\n |---|\n", "\nx"])
    # A CDATA section whose text ends in "]" is not closed by "]]>" ("]]]>" ends
    # none), and a heading ends at its line: only a closer after a letter shows
    # that [70001] may still be hidden (stray "]" keep "]](u)" from making an image).
    @example(["# <![CDATA[ ] ] [70001]", " b ]]> [70002]"])
    # Hunt seeds 802 and 805: "]]]>" ends no CDATA section for cmark; "<![" with no
    # name, which Python's HTML parser failed an assertion on.
    @example(["# <![CDATA[ [70001] ] the the ] [70002]"])
    @example(["<div>\n[70002]\n</div>\n<![", "CDATA[ [70009]\n\n[70006] x"])
    # Hunt seed 801: a blank line of a quote in a list item, indented one column more
    # than the item's text; the next line may go on from its whole lead.
    @example(["1. > <!-- [70006]\n    > \n    ", "> x\nthe"])
    def test_raises_exactly_when_certain(self, chunks):
        """Never before the chunk that makes a marker certain, and within that chunk."""
        expected_at, expected_marker = None, None
        for index in range(len(chunks)):
            try:
                marker = certain_marker("".join(chunks[: index + 1]))
            except Unjudged:
                reject()
            if marker is not None:
                expected_at, expected_marker = index, marker
                break
        assert (expected_at, expected_marker) == fed(chunks)
