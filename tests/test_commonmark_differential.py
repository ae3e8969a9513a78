"""Code and link-destination masking, checked against markdown-it-py's CommonMark.

Over Markdown made only of top-level paragraphs and fences (see
`strategies.commonmark_documents`), the bracket groups citemark masks as code must
be exactly those markdown-it puts in code (inline code, fence content and fence
info strings), and those it masks as link destinations exactly those markdown-it
puts in a link's or image's destination. A link title is not a destination: a
group in it cites, so it is in neither count.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING
from urllib.parse import unquote

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from strategies import commonmark_documents

from citemark import masked_spans
from citemark import parse_markers as citemark_parse
from citemark._markers import GROUP_PATTERN

if TYPE_CHECKING:
    from markdown_it.token import Token

# The grammar's group pattern without possessive quantifiers, for any string.
MARKER = re.compile(r"\[[0-9]+(?:, *[0-9]+)*\]")
MD = MarkdownIt("commonmark")


def reference_groups(text: str) -> tuple[Counter[str], Counter[str]]:
    """Groups markdown-it puts in code, and in link destinations.

    Inline code content has its line endings turned into spaces and one surrounding
    space stripped; a group holds neither spaces at its ends nor line endings, and
    every line of these documents starts with a letter, so counting groups is
    unaffected. Destinations come back percent-encoded and are decoded first.
    """
    code: Counter[str] = Counter()
    link: Counter[str] = Counter()

    def walk(tokens: list[Token]) -> None:
        for token in tokens:
            if token.type in {"code_inline", "fence", "code_block"}:
                code.update(MARKER.findall(token.content))
                code.update(MARKER.findall(token.info))
            elif token.type in {"link_open", "image"}:
                for name in ("href", "src"):
                    if name in token.attrs:
                        link.update(MARKER.findall(unquote(str(token.attrs[name]))))
            if token.children:
                walk(token.children)

    walk(MD.parse(text))
    return code, link


def citemark_groups(text: str) -> tuple[Counter[str], Counter[str]]:
    """Groups whose ``[`` lies in a span citemark masks, by the span's kind."""
    found: dict[str, Counter[str]] = {"code": Counter(), "link_destination": Counter()}
    spans = masked_spans(text)
    for m in GROUP_PATTERN.finditer(text):
        for span in spans:
            if span.start <= m.start() < span.end:
                found[span.kind][m.group()] += 1
    return found["code"], found["link_destination"]


class TestAgainstMarkdownIt:
    @settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(commonmark_documents())
    @example("a `[1]` [2]")
    @example("```[9]\nb [1]\n```\nc [2]")
    @example("a [x](u[1] 'y [2]') [3]")
    @example("~~~~\nb [1]\n~~~\nc [2]\n~~~~~\nd [3]")
    @example("a ``[1]`\nb [2]``")
    @example("a ![b `[1]`](c[2]) [3]")
    @example("a [b [c](d[1])](e[2]) ![f [g](h[3])](i[4])")
    @example('a [b](c "`") [1] `')
    @example("a `b\n```\nc [1]`\n```")
    @example("a [b](c[1] 'd\ne [2]')")
    def test_masked_groups_match_commonmark(self, text):
        """Groups masked as code and as link destinations are exactly markdown-it's."""
        assert reference_groups(text) == citemark_groups(text)


# Everything Markdown offers that could hide a bracket, for the safety property below.
PIECES = [
    "`",
    "``",
    "```",
    "~~~",
    "\n",
    "\n\n",
    " ",
    "    ",
    "\t",
    "> ",
    "- ",
    "1. ",
    "2. ",
    "* ",
    "[",
    "]",
    "(",
    ")",
    "](",
    "<",
    ">",
    "<a href='",
    "'>",
    "</a>",
    "<!--",
    "-->",
    "\\",
    "x",
    "foo",
    "!",
    '"',
    "'",
    "#",
    "<div>",
    "<pre>",
    "</pre>",
    "http://e.x",
    "<http://a.b/",
    ":",
    "]:",
    "*",
    "_",
    "\r\n",
    "&",
    "<?",
    "?>",
    "===",
    "---",
    "\xa0",
]
HIDDEN = re.compile(r"<code>.*?</code>|<pre>.*?</pre>|<!--.*?-->|<[^>]*>", re.DOTALL)


@st.composite
def hostile_markdown(draw: st.DrawFn) -> tuple[str, list[int]]:
    """Random Markdown with uniquely numbered markers [100], [101], ... among the pieces."""
    parts: list[str] = []
    markers: list[int] = []
    for _ in range(draw(st.integers(1, 14))):
        if draw(st.booleans()) and draw(st.booleans()):
            markers.append(100 + len(markers))
            parts.append(f"[{markers[-1]}]")
        else:
            parts.append(draw(st.sampled_from(PIECES)))
    return "".join(parts), markers


class TestNeverHidesVisibleText:
    @settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(hostile_markdown())
    @example(("See [a](<b>[100]) here.", [100]))
    @example(("- `[100]\n1.\n`", [100]))
    @example(("> `[100]\n2. x\n`", [100]))
    @example(("[a]: `x\n[100] `", [100]))
    @example(("<e>\xa0\n~~~[100]", [100]))
    def test_a_marker_markdown_it_shows_as_text_cites(self, document):
        """A marker markdown-it renders as visible text is never masked by citemark.

        The dangerous direction only: masking a visible marker would let a fabricated
        citation through. Code, raw HTML, comments and attributes are removed from
        markdown-it's output before looking.
        """
        text, markers = document
        cited = {o.number for o in citemark_parse(text)}
        visible = HIDDEN.sub("", MD.render(text))
        assert [] == [m for m in markers if m not in cited and f"[{m}]" in visible]
