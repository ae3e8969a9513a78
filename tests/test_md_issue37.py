"""HTML blocks read by the grammar, cmark's label cap, and the ``[^n^]`` footnote (issue 37).

1. An HTML block's content is read by CommonMark 0.31.2 section 6.6's grammar (cmark
   does not scan it; a browser reads it so): a comment, a processing instruction and
   a CDATA section each end at the first closer after their opener. Inline raw HTML
   still follows cmark's scanner, which reads them in pieces.
2. A link label holds at most 1,000 bytes of UTF-8 between its brackets, as cmark
   0.31.2 counts (cmark-gfm agrees); each case is asked of cmark too, so a case that
   stops being what cmark does fails here.
3. ``[^0^]``, a footnote written with Pandoc's superscript inside the brackets, is
   reported as a footnote, in a heading and in its definitions.
"""

from __future__ import annotations

import pytest
from commonmark_oracles import cmark_visible
from paka import cmark

from citemark import (
    MarkerOutOfRangeError,
    Source,
    StreamingResolver,
    UnrecognizedCitationError,
    find_unrecognized,
    masked_spans,
    parse_markers,
    resolve,
)

SOURCES = [Source(text="Opened in 1889.", doc_id="p0"), Source(text="330 m tall.", doc_id="p1")]


def cited(text: str) -> list[int]:
    return [o.number for o in parse_markers(text)]


def shown(visible: str) -> list[int]:
    return [n for n in range(1, 10) if f"[{n}]" in visible]


# --- 1. HTML blocks ---------------------------------------------------------------------

# The issue's three texts, and the expected markers by the grammar.
ISSUE_BLOCKS = [
    ("<div>\n<!-- draft --->See [9] -->\n</div>\n\nAnd [1].", [9, 1]),
    ("<div>\n<? draft: see [9] ??>\n</div>\n\nSee [1].", [1]),
    ("<div>\n<![CDATA[ draft: see [9] ]]]>\n</div>\n\nSee [1].", [1]),
]
# More of the grammar in blocks: the first closer ends each; one that never closes
# hides nothing and leaves the later ones of its kind open too; containers alike.
GRAMMAR_BLOCKS = [
    ("<div>\n<!-- a -- [1] --> [2]\n</div>", [2]),
    ("<div>\n<!-- [1] - --> [2] -->\n</div>", [2]),
    ("<div>\n<!---->[1]--> [2]\n</div>", [1, 2]),
    ("<div>\n<? [1] ???> [2] ?>\n</div>", [2]),
    ("<div>\n<? [1] > [2] ?> [3]\n</div>", [3]),
    ("<div>\n<![CDATA[ [1] ]]]]> [2]\n</div>", [2]),
    ("<div>\n<![CDATA[ [1] ] ]]> [2] ]]>\n</div>", [2]),
    ("<div>\n<!-- [1]\n<!-- [2]\n</div>", [1, 2]),
    ("<div>\n<? [1] <? [2]\n</div>", [1, 2]),
    ("> <div>\n> <!-- draft --->[1] -->\n\n- <p>\n  <? [2] ??> [3]", [1, 3]),
]
# The same constructs inline: cmark's scanner still decides there.
INLINE_AS_CMARK = [
    ("a <!-- draft --->See [1] --> b [2]", [2]),
    ("a <? [1] ??> b [2]", [1, 2]),
    ("a <![CDATA[ [1] ]]]> b [2]", [1, 2]),
]


class TestHtmlBlocksByTheGrammar:
    @pytest.mark.parametrize(("text", "expected"), ISSUE_BLOCKS)
    def test_issue_texts(self, text, expected):
        """The issue's texts: a comment that ends at its first '-->', one PI, one CDATA."""
        assert expected == cited(text)
        assert sorted(expected) == shown(cmark_visible(text))  # blocks read by the grammar

    def test_the_comment_text_raises_out_of_range(self):
        """[9] after '<!-- draft --->' is seen, so resolve and the stream reject it."""
        text = ISSUE_BLOCKS[0][0]
        with pytest.raises(MarkerOutOfRangeError):
            resolve(text, SOURCES)
        stream = StreamingResolver(SOURCES)
        with pytest.raises(MarkerOutOfRangeError):
            for char in text:
                stream.feed(char)

    @pytest.mark.parametrize("text", [t for t, _ in ISSUE_BLOCKS[1:]])
    def test_hidden_markers_never_raise(self, text):
        """A PI or CDATA section hides [9] for resolve and, one character a chunk, the stream."""
        assert [1] == [c.marker for c in resolve(text, SOURCES).citations]
        stream = StreamingResolver(SOURCES)
        for char in text:
            stream.feed(char)
        assert [1] == [c.marker for c in stream.finish().citations]

    @pytest.mark.parametrize(("text", "expected"), GRAMMAR_BLOCKS)
    def test_grammar(self, text, expected):
        """Where each construct of an HTML block ends, by the grammar."""
        assert expected == cited(text)
        assert expected == shown(cmark_visible(text))

    @pytest.mark.parametrize(("text", "expected"), INLINE_AS_CMARK)
    def test_inline_raw_html_follows_cmark(self, text, expected):
        """Inline, the same constructs are read as cmark's scanner reads them."""
        assert expected == shown(cmark_visible(text))
        assert expected == cited(text)

    def test_unclosed_openers_stay_linear(self):
        """A block of openers that never close is scanned once, not once per opener."""
        for opener in ("<!-- ", "<? ", "<![CDATA[ "):
            text = "<div>\n" + f"{opener}[1] " * 20_000
            assert [1] * 20_000 == cited(text)


# --- 2. link labels ---------------------------------------------------------------------


def _image_forms(doc: str) -> bool:
    """Whether cmark 0.31.2 renders an image in ``doc``."""
    return "<img" in cmark.to_html(doc)


def _label(chars: int, char: str = "a") -> str:
    return char * chars


LABELS = [
    _label(999),
    _label(1000),
    _label(1001),
    _label(500, "\u00e9"),  # 1,000 bytes
    _label(501, "\u00e9"),  # 1,002 bytes
    _label(333, "\u20ac") + "a",  # 1,000 bytes
    _label(334, "\u20ac"),  # 1,002 bytes
    _label(998) + "\\*",  # an escape counts both of its bytes
    _label(999) + "\\*",
    "a" + " " * 998 + "b",
    "a" + " " * 999 + "b",
]


class TestLabelCap:
    @pytest.mark.parametrize("label", LABELS, ids=lambda s: f"{len(s)}c{len(s.encode())}b")
    def test_full_reference(self, label):
        """A full reference image hides its alt text where cmark's label fits."""
        doc = f"![x [6]][{label}] and [1]\n\n[{label}]: /u\n"
        fits = len(label.encode()) <= 1000
        assert _image_forms(doc) == fits
        assert cited(doc) == ([1] if fits else [6, 1])

    @pytest.mark.parametrize("label", LABELS, ids=lambda s: f"{len(s)}c{len(s.encode())}b")
    def test_shortcut_and_definition(self, label):
        """A shortcut image and its definition: both hold the label under cmark's cap."""
        doc = f"![{label}] [1]\n\n[{label}]: /u\n"
        fits = len(label.encode()) <= 1000
        assert _image_forms(doc) == fits
        assert any(s.kind == "image" for s in masked_spans(doc)) == fits
        # The definition is masked only when cmark reads it as one.
        assert any(s.kind == "definition" for s in masked_spans(doc)) == fits

    @pytest.mark.parametrize("spaces", [998, 999])
    def test_shortcut_lookup_counts_the_raw_text(self, spaces):
        """A shortcut whose raw text passes the cap matches no label, even one that fits."""
        doc = f"![a{' ' * spaces}b] [1]\n\n[a b]: /u\n"
        fits = spaces + 2 <= 1000
        assert _image_forms(doc) == fits
        assert any(s.kind == "image" for s in masked_spans(doc)) == fits

    def test_a_too_long_label_falls_back_to_the_shortcut(self):
        """A label past the cap is no label: the link text is tried as a shortcut."""
        for size, image_end in ((1000, 1006), (1001, 4)):
            doc = f"![b][{'a' * size}] [1]\n\n[b]: /u\n[{'a' * 1000}]: /v\n"
            assert _image_forms(doc)
            assert ('src="/u"' in cmark.to_html(doc)) == (size > 1000)
            images = [s for s in masked_spans(doc) if s.kind == "image"]
            assert [(0, image_end)] == [(s.start, s.end) for s in images]


# --- 3. the [^n^] footnote --------------------------------------------------------------

OPENSCHOLAR = (
    "### Challenges and Future Directions[^0^][^1^][^3^]\n\n"
    "Grounding remains an open problem.\n\n"
    "[^0^]: Grounding Language Models to Real-World Environments, 2023.\n"
    "[^1^]: Retrieval-Augmented Generation for Knowledge-Intensive Tasks, 2020.\n"
    "[^3^]: Self-RAG: Learning to Retrieve, Generate and Critique, 2023.\n"
)


class TestSuperscriptFootnote:
    def test_openscholar_answer(self):
        """Each [^n^], in the heading and in the definitions, is a footnote."""
        found = [(t.kind, t.text) for t in find_unrecognized(OPENSCHOLAR)]
        texts = ["[^0^]", "[^1^]", "[^3^]"] * 2
        assert [("footnote", t) for t in texts] == found
        assert len(resolve(OPENSCHOLAR, SOURCES).unrecognized) == len(texts)
        with pytest.raises(UnrecognizedCitationError):
            resolve(OPENSCHOLAR, SOURCES, strict=True)

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("Opened [^2^].\n\n[^2^]: https://example.com/a", ["[^2^]", "[^2^]"]),
            ("Opened [^1^][^2^].\n\n[^2^]: https://example.com/a", ["[^1^]", "[^2^]", "[^2^]"]),
            ("Opened `[^2^]` and [^x^^] [^^2].", []),
        ],
    )
    def test_definitions_and_code(self, text, expected):
        """Read as a definition's or a link's label it is still reported; in code it is not."""
        assert expected == [t.text for t in find_unrecognized(text) if t.kind == "footnote"]


# --- streaming cases 1 and 2 of the issue -----------------------------------------------

# Fed in the chunks shown, the stream raised for [6], which resolve hides.
STREAM_CASES = [
    list("Escape it as \\``[6]` and cite [1]."),  # an escaped backtick counted into a run
    list('See [the docs](https://e.com "note [6]\\; more") and [1].'),  # a chunk ending in "\"
    ["See ![a\\] [6] x\\", "]](u) and [1]."],  # "\]" counted as a closing bracket
]


def _feed(pieces: list[str]) -> StreamingResolver:
    stream = StreamingResolver(SOURCES)
    for piece in pieces:
        stream.feed(piece)
    return stream


class TestStreamEscapes:
    @pytest.mark.parametrize("pieces", STREAM_CASES, ids=range(len(STREAM_CASES)))
    def test_issue_chunks(self, pieces):
        """Fed as the issue feeds it, the text raises nothing and finishes as resolve."""
        text = "".join(pieces)
        assert [1] == [c.marker for c in resolve(text, SOURCES).citations]
        assert [1] == [c.marker for c in _feed(pieces).finish().citations]

    @pytest.mark.parametrize("pieces", STREAM_CASES, ids=range(len(STREAM_CASES)))
    def test_every_split_in_two(self, pieces):
        """Cut anywhere in two, the text raises nothing either."""
        text = "".join(pieces)
        for cut in range(len(text) + 1):
            assert [1] == [c.marker for c in _feed([text[:cut], text[cut:]]).finish().citations]

    @pytest.mark.parametrize(
        "text",
        [
            "Escape it as \\`[6] and cite [1].",
            "See \\\\`[6] and [1].\n\nMore.",
            'See [the docs](https://e.com "note") [6]\\; more and [1].',
            "See ![a\\] [6] x\\]\\] and [1].\n\nMore.",
        ],
    )
    def test_a_visible_marker_still_raises_before_the_end(self, text):
        """Where [6] is seen whatever follows (its paragraph ended), the stream raises."""
        with pytest.raises(MarkerOutOfRangeError):
            resolve(text, SOURCES)
        stream = StreamingResolver(SOURCES)
        with pytest.raises(MarkerOutOfRangeError):
            for char in text:
                stream.feed(char)


# --- streaming cases 3 and 4 of the issue -----------------------------------------------

# Fed in the chunks shown, the stream raised for [6], which resolve hides: a label still
# being written after "![...]" had no definition tried, and a lead was matched with
# spaces only (a tab in it, blanks past a list item's indentation before ">", a ">"
# right before a list marker), so no HTML closer was tried on a line that continues
# the block.
STREAM_LEADS_AND_LABELS = [
    ["See ![a [6]][b", "]\n\n[b]: https://example.com/i.png\n\nAnd [1]."],  # issue, case 3
    list("See ![a [6]][b]\n\n[b]: https://example.com/i.png\n\nAnd [1]."),  # "[" still blank
    ["See ![a [6]][b\\", "\\]\n\n[b\\\\]: /u\n\nAnd [1]."],  # the label ends escaping
    list(">\t+ <!--\n>\t  [6]\n>\t  -->\n\nSee [1]."),  # issue, case 4: a tab in the lead
    list(">>  <![CDATA[ [6]\n>\t>]]>\n\nSee [1]."),  # a tab before the inner ">"
    list("- > <!DOCTYPE html [6]\n    > x>\n\nSee [1]."),  # the hunt at seed 900
    list(">- <!X [6]\n>    x>\n\nSee [1]."),  # ">" right before a list marker
]


class TestStreamLeadsAndLabels:
    @pytest.mark.parametrize("pieces", STREAM_LEADS_AND_LABELS, ids=range(7))
    def test_issue_chunks(self, pieces):
        """Fed as shown, the text raises nothing and finishes exactly as resolve."""
        text = "".join(pieces)
        assert [1] == [c.marker for c in resolve(text, SOURCES).citations]
        assert resolve(text, SOURCES) == _feed(pieces).finish()

    @pytest.mark.parametrize("pieces", STREAM_LEADS_AND_LABELS, ids=range(7))
    def test_every_split_in_two(self, pieces):
        """Cut anywhere in two, the text raises nothing either."""
        text = "".join(pieces)
        for cut in range(len(text) + 1):
            assert [1] == [c.marker for c in _feed([text[:cut], text[cut:]]).finish().citations]

    @pytest.mark.parametrize(
        ("text", "at"),
        [
            ("See [6].\n\nAnd ![a][b and more", len("See [6]")),
            (">\t+ <!-- -->\n>\t  [6]\n\nMore.", len(">\t+ <!-- -->\n>\t  [6]\n")),
            ("- > <!DOCTYPE html>\n    > [6]\n\nMore.", len("- > <!DOCTYPE html>\n    > [6]\n")),
        ],
    )
    def test_a_visible_marker_still_raises_before_the_end(self, text, at):
        """Where nothing can hide [6] any more, the stream raises as soon as before."""
        with pytest.raises(MarkerOutOfRangeError):
            resolve(text, SOURCES)
        stream = StreamingResolver(SOURCES)
        for char in text[: at - 1]:
            stream.feed(char)
        with pytest.raises(MarkerOutOfRangeError):
            stream.feed(text[at - 1])


class TestStreamOneCellRowWithAColon:
    """The equality hunt's seed 17: ``-:`` under a line is a one-cell delimiter row.

    With no pipe, ``-`` alone would be a setext underline, but ``-:`` is a table's
    delimiter row for cmark-gfm: the line above becomes a header cell, the code span
    that hid ``[6]`` no longer closes, and ``[6]`` is the first marker out of range.
    The stream must not name ``[7]`` before the colon can arrive.
    """

    TEXT = "`[6]\n` [7]\n-:"

    @pytest.mark.parametrize(
        "pieces", [["`[6]\n` [7]\n-", ":"], list(TEXT)], ids=["issue", "chars"]
    )
    def test_the_stream_names_what_resolve_names(self, pieces):
        with pytest.raises(MarkerOutOfRangeError) as whole:
            resolve(self.TEXT, SOURCES)
        stream = StreamingResolver(SOURCES)
        with pytest.raises(MarkerOutOfRangeError) as streamed:
            for piece in pieces:
                stream.feed(piece)
            stream.finish()
        assert (6, 6) == (whole.value.marker, streamed.value.marker)
