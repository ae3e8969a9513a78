"""What real CommonMark implementations show as text, for the differential tests.

Each oracle returns the *visible text* of a document: the text a reader of the
rendered answer sees outside code, with every boundary a marker group cannot cross
(a code span, a tag, emphasis, a line break, a block) written as NUL. Link text is
visible, and its brackets are put back, so that ``[7](u)`` shows ``[7]`` as the
source wrote it; an autolink's URL is not a marker group and is left out.

- cmark 0.31.2 (the C reference implementation, through ``paka.cmark``'s XML AST),
- markdown-it-py in CommonMark mode (tokens), with the GFM table rule enabled for
  table documents,
- cmark-gfm, for table documents: its AST through the library ``cmarkgfm`` loads,
  and its HTML output (``cmarkgfm``'s own binding) for the older checks.

HTML blocks are opaque to the parsers; their character data is visible and their
tags, comments and other markup are not, by CommonMark's raw-HTML grammar
(section 6.6), implemented here on its own.
"""

from __future__ import annotations

import ctypes
import html
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from urllib.parse import unquote

import cmarkgfm
import cmarkgfm._cmark
from cmarkgfm.cmark import Options
from markdown_it import MarkdownIt
from paka import cmark

SEP = "\x00"
NS = "{http://commonmark.org/xml/1.0}"

# An entity or numeric character reference as CommonMark reads one (section 2.5).
_REFERENCE = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_MARKER_CHARS = frozenset("[]0123456789,")


def _defused(match: re.Match[str]) -> str:
    return "&#xFFFD;" if html.unescape(match.group()) in _MARKER_CHARS else match.group()


def defuse_references(text: str) -> str:
    """``text`` with each reference to a marker character (a bracket, a digit, a comma)
    made a reference to U+FFFD.

    A reference is never markup, so the document's structure is unchanged; what a
    parser then shows as ``[9]`` was written so in the source. ``&#91;9&#93;``
    *displays* as ``[9]`` but is no marker group (the marker grammar reads the
    source, see the spec's 3.2); the oracles read through this.
    """
    return _REFERENCE.sub(_defused, text)


_ATTR = r"(?:[ \t\n]+[A-Za-z_:][A-Za-z0-9_.:-]*(?:[ \t\n]*=[ \t\n]*(?:[^ \t\n\"'=<>`]+|'[^']*'|\"[^\"]*\"))?)"
RAW_HTML = re.compile(
    rf"<[A-Za-z][A-Za-z0-9-]*{_ATTR}*[ \t\n]*/?>"
    r"|</[A-Za-z][A-Za-z0-9-]*[ \t\n]*>"
    # A comment, a processing instruction and a CDATA section each end at the first
    # closer after their opener, by the grammar (not cmark's inline scanner, which
    # reads them in pieces): "<!-- a --->" is a comment, "<? a ??>" an instruction.
    r"|<!-->|<!--->|<!--.*?-->"
    r"|<\?.*?\?>"
    r"|<![A-Za-z][^>]*>"
    r"|<!\[CDATA\[.*?\]\]>",
    re.DOTALL,
)


def html_block_data(literal: str) -> str:
    """An HTML block's content with its markup replaced by NUL."""
    out = []
    pos = 0
    while pos < len(literal):
        if literal[pos] == "<":
            m = RAW_HTML.match(literal, pos)
            if m is not None:
                out.append(SEP)
                pos = m.end()
                continue
        out.append(literal[pos])
        pos += 1
    return "".join(out)


# --- cmark ----------------------------------------------------------------------------


def cmark_visible(text: str) -> str:
    """cmark 0.31.2's visible text of ``text``."""
    return _xml_visible(cmark.to_xml(defuse_references(text), sourcepos=True))


def _xml_visible(xml: str) -> str:
    """The visible text of a document in CommonMark's XML form (cmark's or cmark-gfm's)."""
    root = ET.fromstring(xml.encode())  # noqa: S314 - cmark's own output for our input
    out: list[str] = []

    def walk(node: ET.Element) -> None:
        tag = node.tag.removeprefix(NS)
        if tag == "text":
            out.append(node.text or "")
            return
        if tag == "html_block":
            out.append(SEP + html_block_data(node.text or "") + SEP)
            return
        if tag in {"code", "code_block", "html_inline", "image", "softbreak", "linebreak"}:
            out.append(SEP)
            return
        if tag == "link":
            children = list(node)
            only = children[0].text if len(children) == 1 else None
            dest = node.get("destination", "")
            # An autolink: its text is its destination (cmark's inline sourcepos is not
            # exact enough to look for the "<").
            if only is not None and dest in {only, f"mailto:{only}"}:
                out.append(SEP)
                return
            out.append(SEP + "[")
            for child in node:
                walk(child)
            out.append("]" + SEP)
            return
        out.append(SEP)
        for child in node:
            walk(child)
        out.append(SEP)

    walk(root)
    return "".join(out)


# --- markdown-it ------------------------------------------------------------------------

MD = MarkdownIt("commonmark")
MD_TABLES = MarkdownIt("commonmark").enable("table")


def markdown_it_visible(text: str, tables: bool = False) -> str:
    """markdown-it-py's visible text of ``text`` (CommonMark mode, optionally GFM tables)."""
    out: list[str] = []
    for token in (MD_TABLES if tables else MD).parse(defuse_references(text)):
        if token.type == "html_block":
            out.append(SEP + html_block_data(token.content) + SEP)
        elif token.type == "inline":
            auto = 0
            for child in token.children or []:
                if child.type == "link_open" and child.markup == "autolink":
                    auto += 1
                elif child.type == "link_close" and auto:
                    auto -= 1
                elif auto:
                    continue
                elif child.type == "text":
                    out.append(child.content)
                elif child.type == "link_open":
                    out.append(SEP + "[")
                elif child.type == "link_close":
                    out.append("]" + SEP)
                else:
                    out.append(SEP)
        out.append(SEP)
    return "".join(out)


# --- cmark-gfm --------------------------------------------------------------------------


class _Visible(HTMLParser):
    """Text of cmark-gfm's HTML output, outside code; link text bracketed."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.code = 0
        self.links: list[tuple[int, str]] = []  # where each open <a> began, its href

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "code":
            self.code += 1
        if tag == "a" and not self.code:
            self.links.append((len(self.out), dict(attrs).get("href") or ""))
            self.out.append(SEP + "[")
        else:
            self.out.append(SEP)

    def handle_endtag(self, tag: str) -> None:
        if tag == "code":
            self.code -= 1
        if tag == "a" and not self.code and self.links:
            at, href = self.links.pop()
            inner = "".join(self.out[at + 1 :])
            if href in {inner, f"mailto:{inner}"} or unquote(href) == inner:
                del self.out[at:]  # an autolink: its URL is no marker group
                self.out.append(SEP)
                return
            self.out.append("]" + SEP)
        else:
            self.out.append(SEP)

    def handle_data(self, data: str) -> None:
        self.out.append(SEP if self.code else data)

    def parse_marked_section(self, i: int, report: int = 1) -> int:
        # Python 3.11's parser fails an assertion on "<![" and no name: it is text.
        try:
            return super().parse_marked_section(i, report)
        except AssertionError:
            self.handle_data("<![")
            return i + 3


def _gfm_html(text: str, unsafe: bool = True) -> str:
    return cmarkgfm.markdown_to_html_with_extensions(
        defuse_references(text),
        options=Options.CMARK_OPT_UNSAFE if unsafe else 0,
        extensions=["table"],
    )


def cmark_gfm_visible(text: str) -> str:
    """cmark-gfm's visible text of ``text`` with the table extension (and no raw HTML)."""
    parser = _Visible()
    parser.feed(_gfm_html(text))
    parser.close()
    # HTMLParser keeps the body of a <script> or <style> that never closes unread:
    # it is character data all the same, as in an HTML block that runs to the end.
    if parser.cdata_elem is not None:
        parser.out.append(parser.rawdata)
    return "".join(parser.out)


def cmark_gfm_markup_free(text: str) -> str:
    """cmark-gfm's visible text with each raw HTML node, inline or block, as one NUL.

    cmark-gfm's safe mode writes a fixed comment in place of raw HTML, so this view
    does not depend on how Python's HTML parser reads raw HTML: a group it shows is
    outside raw HTML by cmark-gfm's own grammar. It hides what an HTML block holds.
    Safe mode also drops unsafe URLs (``javascript:`` and the like), so an autolink
    to one shows; the generated answers hold none.
    """
    parser = _Visible()
    parser.feed(_gfm_html(text, unsafe=False).replace("<!-- raw HTML omitted -->", "<hr>"))
    parser.close()
    return "".join(parser.out)


# cmark-gfm's XML renderer: `cmarkgfm` binds only its HTML renderer, but its library
# exports the whole C API, so the AST is read as cmark's is (tables as elements, each
# raw HTML node as its own element: no HTML parser guesses which markup is raw).
_GFM = ctypes.CDLL(cmarkgfm._cmark.__file__)
_LIBC = ctypes.CDLL(None)
_POINTER = ctypes.c_void_p
for _name, _result, _arguments in [
    ("cmark_parser_new", _POINTER, [ctypes.c_int]),
    ("cmark_find_syntax_extension", _POINTER, [ctypes.c_char_p]),
    ("cmark_parser_attach_syntax_extension", ctypes.c_int, [_POINTER, _POINTER]),
    ("cmark_parser_feed", None, [_POINTER, ctypes.c_char_p, ctypes.c_size_t]),
    ("cmark_parser_finish", _POINTER, [_POINTER]),
    ("cmark_render_xml", _POINTER, [_POINTER, ctypes.c_int]),
    ("cmark_node_free", None, [_POINTER]),
    ("cmark_parser_free", None, [_POINTER]),
]:
    getattr(_GFM, _name).restype = _result
    getattr(_GFM, _name).argtypes = _arguments
_LIBC.free.argtypes = [_POINTER]
_GFM.cmark_gfm_core_extensions_ensure_registered()


def cmark_gfm_xml(text: str) -> str:
    """cmark-gfm's AST of ``text`` (table extension on) in CommonMark's XML form."""
    parser = _GFM.cmark_parser_new(0)
    try:
        _GFM.cmark_parser_attach_syntax_extension(
            parser, _GFM.cmark_find_syntax_extension(b"table")
        )
        data = text.encode()
        _GFM.cmark_parser_feed(parser, data, len(data))
        document = _GFM.cmark_parser_finish(parser)
        rendered = _GFM.cmark_render_xml(document, 0)
        try:
            return ctypes.string_at(rendered).decode()
        finally:
            _LIBC.free(rendered)
            _GFM.cmark_node_free(document)
    finally:
        _GFM.cmark_parser_free(parser)


# A table element of cmark-gfm's AST on a line of its own (raw HTML is escaped there).
_TABLE_NODE = re.compile(r"^ *<table>$", re.MULTILINE)


def makes_table(text: str) -> bool:
    """Whether cmark-gfm reads a table in ``text``.

    Read on the AST, not on ``cmarkgfm``'s HTML: each call of its
    ``markdown_to_html_with_extensions`` leaks about 11 KB (measured at 2025.10.22),
    which ran a random-seed hunt of a few thousand examples out of memory.
    """
    return _TABLE_NODE.search(cmark_gfm_xml(defuse_references(text))) is not None


def cmark_gfm_grammar_visible(text: str) -> str:
    """cmark-gfm's visible text, read from its AST as `cmark_visible` reads cmark's.

    Raw inline HTML is a boundary and an HTML block's content is read by section
    6.6's grammar, exactly as for cmark: unlike `cmark_gfm_visible` (Python's HTML
    parser on the rendered HTML) and `cmark_gfm_markup_free` (which hides HTML blocks
    whole), it judges HTML blocks in table documents.
    """
    return _xml_visible(cmark_gfm_xml(defuse_references(text)))
