"""StreamingResolver equals resolve for every chunking, and never raises early.

Texts are the differential test's LLM-answer shapes (quotes, lists, fences, tables,
links, definitions, raw HTML) and hostile piece soups, resolved against three
sources so that most planted markers are out of range.
"""

from __future__ import annotations

from itertools import pairwise

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_commonmark_differential import answers

from citemark import (
    MarkerOutOfRangeError,
    Source,
    StreamingResolver,
    SynthesisError,
    parse_markers,
    resolve,
)

SOURCES = [Source(text=f"source {i}", doc_id=f"d{i}") for i in range(1, 4)]
PIECES = [
    "`",
    "```\n",
    "[",
    "]",
    "(",
    ")",
    "<!--",
    "-->",
    "<a title='",
    "'>",
    "\n",
    "\n\n",
    "> ",
    "- ",
    "    ",
    "!",
    ":",
    "[9]",
    "[2]",
    "[1, 7]",
    "x",
    " ",
    "|",
    "|---|\n",
    "[r]: /u",
    "[r]",
    "\\",
]


def outcome(text: str) -> tuple[str, object]:
    try:
        return ("ok", resolve(text, SOURCES))
    except MarkerOutOfRangeError as exc:
        return ("out_of_range", exc.marker)
    except SynthesisError as exc:
        return ("error", type(exc))


def streamed(chunks: list[str]) -> tuple[tuple[str, object], int | None]:
    """The stream's outcome, and the index of the chunk that raised while feeding."""
    stream = StreamingResolver(SOURCES)
    for index, chunk in enumerate(chunks):
        try:
            stream.feed(chunk)
        except MarkerOutOfRangeError as exc:
            return ("out_of_range", exc.marker), index
    try:
        return ("ok", stream.finish()), None
    except MarkerOutOfRangeError as exc:
        return ("out_of_range", exc.marker), None
    except SynthesisError as exc:
        return ("error", type(exc)), None


@st.composite
def texts(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        return draw(answers())[0].replace("[7000", "[").replace("[700", "[")
    return "".join(draw(st.lists(st.sampled_from(PIECES), max_size=24)))


@st.composite
def chunkings(draw: st.DrawFn) -> tuple[str, list[str]]:
    text = draw(texts())
    if draw(st.booleans()):
        return text, list(text)  # one character at a time
    cuts = sorted(draw(st.sets(st.integers(0, len(text)), max_size=8)))
    bounds = [0, *cuts, len(text)]
    return text, [text[a:b] for a, b in pairwise(bounds) if b > a]


def _one_at_a_time(text: str) -> tuple[str, list[str]]:
    return text, list(text)


class TestStreamingEqualsResolve:
    # Derandomized, as test_stream_certainty is: CI runs the same 700 cases each time.
    # The pinned examples are what random seeds found at stop 29 (a closer or a
    # delimiter row behind a quote or list lead, written in part or after a blank
    # line; a table header that turns a definition above it into text).
    @settings(
        max_examples=700, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
    )
    @given(chunkings(), st.lists(st.sampled_from(PIECES), max_size=6))
    @example(_one_at_a_time("> <!-- [6]\n> \n> [3] `c [4]` <b title='[5]'>\n> -->"), [])
    @example(_one_at_a_time("> > <!-- [6]\n> > \n> > [3] `c [4]` <b title='[5]'>\n> > -->"), [])
    @example(_one_at_a_time("> - <!-- [6]\n> \n>   [3] `c [4]` <b title='[5]'>\n>   -->"), [])
    @example(_one_at_a_time("[9]: /u\n| [4] |\n|---|"), [])
    @example(_one_at_a_time("- - [9]: /u\n    | [4] |\n    |---|"), [])
    @example(
        _one_at_a_time("| x<? [1] the [2] the [3] | [4] x<? [5] ?> [7] [8] the |\n|---|---|"), []
    )
    @example(
        _one_at_a_time(
            "- | the | [2] x<![CDATA[ [3] the the the [4] the | x<![CDATA[ [6] ]]> |\n"
            "  |---|---|---|\n    code [7]"
        ),
        [],
    )
    # Found at stop 30: a closing backtick and then a delimiter row (two witnesses at
    # once) put [4] in a code span inside a cell.
    @example(
        _one_at_a_time("| the | the the the [a][r1] `[2]a ` b` | [3] `[4]x` |\n|---|---|---|"), []
    )
    # Found at stop 31: under a header line ended by CRLF, the delimiter row the stream
    # tried had one cell, so [4] in a code span that the cells split was dropped as hidden.
    @example(_one_at_a_time("| `a | [4] | b` |\r\n|---|---|---|\r\n[5] x"), [])
    # Left open at stop 30 (random seed 18) and holding since stop 31: fed a character
    # at a time, the stream named [6] where resolve names [4].
    @example(
        _one_at_a_time(
            "| [a][r1] x<!-- [2] the x `[3]a ` b` | [4] `[5]x` the the the | the the the [6] "
            "`a \\| [7]` the the |\r\n|---|---|---|\r\n| the | the | the | the |\r\n| the |\r\nthe"
        ),
        [],
    )
    # A comment whose text ends in "-" is closed by a character and "-->", not "-->".
    @example(_one_at_a_time("</pre> x [1]\n`[2]` <!-- [3]\n[4]\n- the"), ["`", "-->"])
    # A closing run at a line's start opens a fence; after a letter it ends the span.
    @example(
        _one_at_a_time(
            "the the the <span title='[1]'>\n2) ```\n    x = a[3]\n    x = a[4]\n    ```"
        ),
        [],
    )
    # And a header line in a list item after a lazy line, begun with one blank.
    @example(_one_at_a_time("- [r1]: /u[4]\n[5] [6]\n  | x |\n  |---|"), [])
    @example(("Use `a [9] b\n\nThen `", list("Use `a [9] b\n\nThen `")), [])
    @example(("`[9]` and then `", ["`[9]`", " and then `"]), ["x"])
    @example(("[a][9] x", ["[a][9] x"]), ["\n\n[9]: /u"])
    def test_same_result_and_never_early(self, chunked, continuation):
        """Same result, same first out-of-range marker; an early raise holds whatever follows."""
        text, chunks = chunked
        result, raised_at = streamed(chunks)
        assert outcome(text) == result
        if raised_at is not None:
            prefix = "".join(chunks[: raised_at + 1])
            assert result == outcome(prefix + "".join(continuation))

    CHANGING = ("[x [y] z](u[9]) and [8]", "\n\n[y]: /v")

    def test_a_marker_masked_for_a_while_is_still_checked(self):
        """A marker in a destination that a later definition turns into text is named.

        The definition of ``[y]`` makes ``[y]`` a link, so the outer brackets form no
        link and ``(u[9])`` is text: resolve names 9, and so must the stream.
        """
        assert ("out_of_range", 9) == outcome("".join(self.CHANGING))
        assert ("out_of_range", 9) == streamed(list(self.CHANGING))[0]

    def test_dropping_masked_markers_is_caught(self):
        """The old rule (forget a marker masked now, raise the first visible one) names 8."""
        first = self.CHANGING[0]
        visible = [o.number for o in parse_markers(first) if not 0 < o.number <= len(SOURCES)]
        assert visible[0] != outcome("".join(self.CHANGING))[1]
