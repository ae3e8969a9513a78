"""Hypothesis strategies for the marker grammar, kept beside the tests that use them.

Each public function returns a strategy. `marker_texts` is Markdown-ish noise aimed
at the corners of SPEC §3.2 (fences, code spans, links, odd digits); `answers` is
prose as a model writes it; `source_lists` is what `citemark.resolve` is given.
`prose_and_code` and `commonmark_documents` build texts whose code is known in
advance, for the masking property and the markdown-it differential test.
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

from hypothesis import strategies as st

from citemark import Source

# Digits that Python's `\d` and `str.isdigit` accept but the grammar refuses:
# Arabic-Indic, Extended Arabic-Indic, fullwidth, Devanagari, superscript.
NON_ASCII_DIGITS = "١٣۳１१²"

_LETTERS = "abcxyzQé"
_ASCII_INTS = st.integers(min_value=0, max_value=12).map(str) | st.sampled_from(
    ["007", "00", "99", "1000000"]
)


@cache
def marker_groups() -> st.SearchStrategy[str]:
    """Bracket groups that cite: ``[1]``, ``[1, 2]``, ``[1,2]``, ``[0]``, ``[007]``."""
    separators = st.sampled_from([",", ", ", ",  "])

    def join(ints: list[str], seps: list[str]) -> str:
        body = ints[0] + "".join(sep + n for sep, n in zip(seps, ints[1:], strict=False))
        return f"[{body}]"

    return st.builds(
        join,
        st.lists(_ASCII_INTS, min_size=1, max_size=3),
        st.lists(separators, min_size=2, max_size=2),
    )


@cache
def non_markers() -> st.SearchStrategy[str]:
    """Bracketed things that look like markers and never cite."""
    return st.sampled_from(
        [
            "[^1]",
            "[PERSON_1]",
            "[EMAIL_2]",
            "[١]",
            "［1］",
            "[１]",
            "[ 1]",
            "[1 ]",
            "[1,]",
            "[1 ,2]",
            "[-1]",
            "[1a]",
            "[]",
        ]
    )


@cache
def _words() -> st.SearchStrategy[str]:
    return st.text(alphabet=_LETTERS, min_size=1, max_size=4)


def _run(char: str, min_size: int, max_size: int) -> st.SearchStrategy[str]:
    return st.integers(min_value=min_size, max_value=max_size).map(lambda n: char * n)


@cache
def _small_inline() -> st.SearchStrategy[str]:
    """Pieces that may sit inside a code span, a link's text or its destination."""
    return st.one_of(
        _words(),
        marker_groups(),
        non_markers(),
        st.sampled_from([" ", "[", "]", "(", ")", '"', "'", "!", ",", "^", "~", "\\"]),
        st.sampled_from(list("0123456789" + NON_ASCII_DIGITS)),
        _run("`", 1, 4),
    )


def _inline_spans() -> st.SearchStrategy[str]:
    """A backtick run, content that may cross a line, and a run that may not match."""

    def build(opener: int, closer: int, parts: list[str]) -> str:
        return "`" * opener + "".join(parts) + "`" * closer

    content = st.lists(_small_inline() | st.just("\n"), max_size=5)
    return st.builds(build, st.integers(1, 4), st.integers(0, 5), content)


def _links() -> st.SearchStrategy[str]:
    """Inline links and images, well formed or broken, with markers anywhere."""
    title = st.sampled_from(["", ' "t"', " 'x [2]'", ' "t [5]"', " (p [3])", ' "open'])
    dest = st.lists(_small_inline(), max_size=3).map("".join)
    text = st.lists(_small_inline(), max_size=3).map("".join)

    return st.tuples(
        st.sampled_from(["", "!"]),
        text,
        st.sampled_from(["", "", " ", "\n"]),
        dest,
        title,
        st.sampled_from([")", ")", ""]),
    ).map(lambda parts: "{}[{}]{}({}{}{}".format(*parts))


def _fences() -> st.SearchStrategy[str]:
    """A fence line at a line start: any length, indent and info string."""

    def build(indent: int, char: str, length: int, info: str, trail: str) -> str:
        return "\n" + " " * indent + char * length + info + trail + "\n"

    info = st.sampled_from(["", "python", "[9]", " `x`", "~", " a [1]"])
    return st.builds(
        build,
        st.integers(0, 5),
        st.sampled_from("`~"),
        st.integers(2, 6),
        info,
        st.sampled_from(["", "  ", " x"]),
    )


def marker_texts() -> st.SearchStrategy[str]:
    """Markdown-ish text built to hit the corners of the marker grammar and masking.

    Fences of either character and any length (closers shorter or longer than
    openers, unclosed ones), inline code spans that may cross lines or never close,
    inline links and images, stray brackets, ASCII and non-ASCII digits, citing and
    non-citing groups, container starts, letters, spaces, newlines and blank lines.
    """
    piece = st.one_of(
        _small_inline(),
        _inline_spans(),
        _links(),
        _fences(),
        st.sampled_from(["\n", "\n\n", "\n> ", "\n- ", "\n1. ", "\n    ", "\r\n", "\t"]),
        st.sampled_from(["<div>", "\n<!--", "-->", "\n# ", "\n---\n", "](", "\\`"]),
    )
    return st.lists(piece, max_size=30).map("".join)


_SENTENCE_WORDS = [
    *("the", "licence", "grants", "a", "patent", "right", "to", "each", "contributor"),
    *("and", "may", "terminate", "when", "litigation", "is", "filed", "against"),
    *("any", "party", "over", "the", "covered", "work"),
]


def answers() -> st.SearchStrategy[str]:
    """Prose as a model writes it: sentences ending in marker groups, some code."""

    def sentence(words: list[str], markers: list[str], end: str) -> str:
        text = " ".join(words).capitalize()
        return text + "".join(" " + m for m in markers) + end

    sentences = st.builds(
        sentence,
        st.lists(st.sampled_from(_SENTENCE_WORDS), min_size=1, max_size=10),
        st.lists(marker_groups() | non_markers(), max_size=2),
        st.sampled_from([".", ".", "!", ":", "?"]),
    )
    extras = st.sampled_from(
        [
            "See `names[1]` for details.",
            "```python\nx = a[2]\n```",
            "Read [the text [1]](https://example.org/[3]).",
            "- a point [1]",
            "The footnote[^1] says so.",
        ]
    )
    paragraph = st.lists(sentences | extras, min_size=1, max_size=4).map(" ".join)
    return st.lists(paragraph, min_size=1, max_size=3).map("\n\n".join)


def _sources() -> st.SearchStrategy[Source]:
    def build(
        text: str, doc_id: str, chunk_id: str | None, start: int | None, uri: str | None
    ) -> Source:
        end = None if start is None else start + len(text)
        return Source(text=text, doc_id=doc_id, chunk_id=chunk_id, start=start, end=end, uri=uri)

    return st.builds(
        build,
        st.text(max_size=20),
        st.text(alphabet=_LETTERS, min_size=1, max_size=6),
        st.none() | st.text(alphabet="0123456789", min_size=1, max_size=3),
        st.none() | st.integers(0, 10_000),
        st.none() | st.just("file:///docs/a.txt"),
    )


def source_lists() -> st.SearchStrategy[list[Source]]:
    """One to six sources, some with offsets whose span length matches their text."""
    return st.lists(_sources(), min_size=1, max_size=6)


# --- texts whose code is known ---------------------------------------------------------


class Placed(NamedTuple):
    """A text built from segments, with where each group in it was put."""

    text: str
    citing: list[tuple[int, str]]
    """(offset of the ``[``, the group) for every group placed outside code."""
    masked: list[int]
    """Offset of the ``[`` of every group placed inside code."""


class _Piece(NamedTuple):
    text: str
    citing: bool | None  # True: a citing group outside code; False: inside code


@cache
def _prose_pieces() -> st.SearchStrategy[list[_Piece]]:
    """Prose that opens no code and no link: words, groups and lookalikes.

    Pieces are kept apart by spaces, so no ``](`` (a link destination) can form.
    """
    piece = st.one_of(
        _words().map(lambda w: _Piece(w, None)),
        marker_groups().map(lambda g: _Piece(g, citing=True)),
        non_markers().map(lambda g: _Piece(g, None)),
        st.sampled_from([".", ",", "(", ")", "!", "[", "]", "é", "١"]).map(
            lambda p: _Piece(p, None)
        ),
    )
    space = _Piece(" ", None)
    return st.lists(piece, min_size=1, max_size=6).map(
        lambda pieces: [x for p in pieces for x in (p, space)]
    )


@cache
def _code_text(forbidden_run: str) -> st.SearchStrategy[list[_Piece]]:
    """Code content: groups and noise, never containing ``forbidden_run`` as a run."""
    piece = st.one_of(
        _words().map(lambda w: _Piece(w, None)),
        marker_groups().map(lambda g: _Piece(g, citing=False)),
        st.sampled_from(["[", "]", "(", ")", "](", "~", "`", "``", "```", "<", "\\"]).map(
            lambda p: _Piece(p, None)
        ),
    )

    def clean(pieces: list[_Piece]) -> list[_Piece]:
        # Keep backtick runs apart, so that no run of the closing length forms.
        gap = _Piece(" x ", None)
        return [x for p in pieces if p.text != forbidden_run for x in (p, gap)]

    return st.lists(piece, max_size=6).map(clean)


@st.composite
def _inline_code(draw: st.DrawFn) -> list[_Piece]:
    length = draw(st.integers(1, 3))
    body = draw(_code_text("`" * length))
    if draw(st.booleans()):  # cross a line inside the span
        body = [*body, _Piece("\nx ", None)]
    run = _Piece("`" * length, None)
    return [run, _Piece(" ", None), *body, _Piece(" ", None), run]


@st.composite
def _fenced_block(draw: st.DrawFn) -> list[_Piece]:
    char = draw(st.sampled_from("`~"))
    length = draw(st.integers(3, 5))
    indent = " " * draw(st.integers(0, 3))
    # A tilde fence's info string may hold anything; a space keeps it off the run.
    info = [] if char == "`" else [_Piece(" ", None), *draw(_code_text(""))]
    info = info or [_Piece(draw(st.sampled_from(["", "python", "[7]"])), None)]
    if info[0].text == "[7]":
        info = [_Piece("[7]", citing=False)]
    pieces = [_Piece(indent + char * length, None), *info, _Piece("\n", None)]
    for _ in range(draw(st.integers(0, 3))):
        # Content lines start with a letter, so none of them can close the fence.
        pieces += [_Piece("x ", None), *draw(_code_text("")), _Piece("\n", None)]
        if draw(st.booleans()):  # a shorter run, or the other character, never closes
            other = draw(st.sampled_from(["`~".replace(char, ""), char]))
            short = other * (length - 1) if other == char else other * 4
            pieces.append(_Piece(" " * draw(st.integers(0, 3)) + short + "\n", None))
    closer = char * draw(st.integers(length, length + 2))
    pieces.append(
        _Piece(" " * draw(st.integers(0, 3)) + closer + draw(st.sampled_from(["", "  "])), None)
    )
    return pieces


@cache
def _paragraph_piece() -> st.SearchStrategy[list[_Piece]]:
    return _prose_pieces() | _inline_code()


@st.composite
def _paragraph(draw: st.DrawFn) -> list[_Piece]:
    pieces = [_Piece(draw(st.sampled_from(_LETTERS)) + " ", None)]
    for _ in range(draw(st.integers(1, 4))):
        pieces += draw(_paragraph_piece())
        pieces.append(_Piece(draw(st.sampled_from([" ", " ", "\nx "])), None))
    return pieces


def _place(segments: list[list[_Piece]]) -> Placed:
    text: list[str] = []
    citing: list[tuple[int, str]] = []
    masked: list[int] = []
    pos = 0
    for i, segment in enumerate(segments):
        if i:
            text.append("\n\n")
            pos += 2
        for piece in segment:
            if piece.citing is True:
                citing.append((pos, piece.text))
            elif piece.citing is False:
                masked.append(pos)
            text.append(piece.text)
            pos += len(piece.text)
    return Placed("".join(text), citing, masked)


def prose_and_code() -> st.SearchStrategy[Placed]:
    """Paragraphs with closed code spans, and closed fenced blocks, blank-line apart."""
    segments = st.lists(_paragraph() | _fenced_block(), min_size=1, max_size=5)
    return segments.map(_place)


# --- CommonMark documents for the differential test -------------------------------------


@cache
def _cm_inline() -> st.SearchStrategy[str]:
    """Inline pieces with no ``<``, backslash, ``:``, ``&``, ``%`` or ``>``."""
    return st.one_of(
        _words(),
        marker_groups(),
        st.sampled_from(["[^1]", "[PERSON_1]", "[١]", "[ 1]", "[1,]"]),
        st.sampled_from([" ", " ", "[", "]", "(", ")", "](", '"', "'", "!", ",", "~", "*"]),
        st.sampled_from([*"0123456789", "١", "\t", "\u00a0", "#", "=", "-"]),
        _run("`", 1, 4),
    )


@cache
def _cm_link(*, nested: bool) -> st.SearchStrategy[str]:
    """A link or image, well formed or not; its text may hold spans and links."""
    text_piece = _cm_inline() | _cm_span()
    if nested:
        text_piece |= _cm_link(nested=False)
    title = st.sampled_from(
        [
            *("", ' "t"', " 'x [2]'", ' "t [5]"', " (p [3])", ' "open', ' "t\nb [4]"'),
            *("\t'[6]'", ' "`"', " '`` [7]'", ' "](v[8])"'),
        ]
    )

    return st.tuples(
        st.sampled_from(["", "!"]),
        st.lists(text_piece, max_size=3).map("".join),
        st.sampled_from(["", "", " ", "\nx"]),
        st.lists(_cm_inline(), max_size=3).map(lambda s: "".join(s).replace(" ", "")),
        title,
        st.sampled_from([")", ")", " )", ""]),
    ).map(lambda parts: "{}[{}]({}{}{}{}".format(*parts))


@cache
def _cm_span() -> st.SearchStrategy[str]:
    def build(opener: int, closer: int, parts: list[str]) -> str:
        return "`" * opener + "".join(parts) + "`" * closer

    # A line break inside a span is followed by a letter, as every line is.
    content = st.lists(_cm_inline() | st.just("\nx"), max_size=5)
    return st.builds(build, st.integers(1, 4), st.integers(0, 5), content)


def _cm_line() -> st.SearchStrategy[str]:
    piece = _cm_inline() | _cm_link(nested=True) | _cm_span()
    rest = st.lists(piece, max_size=6).map("".join)
    return st.builds(lambda first, rest: first + rest, st.sampled_from(_LETTERS), rest)


def _cm_fence_line() -> st.SearchStrategy[str]:
    def build(indent: int, char: str, length: int, info: str, trail: str) -> str:
        return " " * indent + char * length + info + trail

    info = st.sampled_from(["", "", "python", "[9]", " [1, 2] x", " `x`", "~", "a`"])
    return st.builds(
        build,
        st.integers(0, 3),
        st.sampled_from("`~"),
        st.integers(2, 6),
        info,
        st.sampled_from(["", "", "  "]),
    )


def commonmark_documents() -> st.SearchStrategy[str]:
    """Markdown made of top-level paragraphs and fences only.

    Every line is a fence line (0-3 spaces, a run of backticks or tildes, an info
    string) or starts with a letter; there is no four-space indentation, ``>``, list
    marker, ``<``, backslash, ``&``, ``%`` or ``:``, so there are no other blocks, no
    raw HTML, no escapes, no entities and no link reference definitions.
    """
    line = st.one_of(_cm_line(), _cm_line(), _cm_fence_line(), st.sampled_from(["", "  "]))
    return st.lists(line, min_size=1, max_size=10).map("\n".join)
