"""One masking for the scorer and `citemark.resolve` (issue 24, item 5).

The scorer's labelled mode reads a bracketed label where `resolve` would read a marker
group, and both must agree on which of them a reader sees: a label inside a multi-line
HTML comment or CDATA section is hidden whether that section sits in a paragraph, a
block quote or a list item, and whatever the line endings. The regression tests name
the cases that used to be counted as fabricated; the differential tests compare the
two over generated texts (quotes, list items, comments and CDATA spanning lines,
processing instructions, code, CRLF and lone CR) and over every example of the
CommonMark 0.31.2 spec with markers planted in it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scorer_helpers import CONTEXT
from strategies import commonmark_documents, marker_texts

from citemark import CitationScorer, Source, parse_markers, resolve
from citemark._contract.syntax import GROUP_PATTERN
from citemark._judging.scorer.labels import (
    _DEFAULT_LF,
    DEFAULT_CITATION_PATTERN,
    DEFAULT_LABEL_PATTERN,
    _parse_blocks,
    classify_labelled,
    compile_pattern,
)

LABELS = compile_pattern(DEFAULT_LABEL_PATTERN, "label_pattern")
CITATIONS = compile_pattern(DEFAULT_CITATION_PATTERN, "citation_pattern")
ANGLE_LABELS = compile_pattern(r"^<<([a-z0-9-]+)>>(?=[ \t]|$)", "label_pattern")
ANGLE_CITATIONS = compile_pattern(r"<<([a-z0-9-]+)>>", "citation_pattern")
ANGLE_CONTEXT = "<<doc-1>> The late fee is 5%.\n<<doc-2>> Members pay none.\n"
SOURCES = [Source(text=f"Passage {n}.", doc_id=f"d{n}") for n in range(1, 13)]
SPEC = json.loads(
    (Path(__file__).parent / "data" / "commonmark-spec-0.31.2.json").read_text(encoding="utf-8")
)

# A label alone on a line inside a construct that spans lines: {label} is where it goes.
HIDING = {
    "comment_in_quote": "> Fees rise <!--\n> {label}\n> --> [doc-1].",
    "comment_in_list_item": "- Fees rise <!--\n  {label}\n  --> [doc-1].",
    "comment_in_ordered_item": "1. Fees rise <!--\n   {label}\n   --> [doc-1].",
    "cdata_in_quote": "> Fees rise <![CDATA[\n> {label}\n> ]]> [doc-1].",
    "cdata_in_list_item": "* Fees rise <![CDATA[\n  {label}\n  ]]> [doc-1].",
    "comment_with_crlf": "Fees rise <!--\r\n{label}\r\n--> [doc-1].",
    "comment_with_lone_cr": "Fees rise <!--\r{label}\r--> [doc-1].",
    "cdata_with_crlf": "Fees rise <![CDATA[\r\n{label}\r\n]]> [doc-1].",
    "comment_in_quote_with_cr": "> Fees rise <!--\r> {label}\r> --> [doc-1].",
    "pi_in_quote": "> Fees rise <?\n> {label}\n> ?> [doc-1].",
}


def as_markers(template: str, marker: str) -> str:
    """The template with integer markers: ``marker`` for the label, ``[1]`` for doc-1."""
    return template.format(label=marker).replace("[doc-1]", "[1]")


def buckets(response: str, context: str = CONTEXT) -> dict[str, list[str]]:
    """The labels of each class, and the count of labels hidden by the masking."""
    found = classify_labelled(response, context, LABELS, CITATIONS)
    out: dict[str, list[str]] = {"resolved": [], "fabricated": [], "ambiguous": [], "ignored": []}
    for occ in found.occurrences:
        out[occ.kind].append(occ.label)
    out["hidden"] = ["x"] * found.in_code
    return out


class TestLabelInsideMultiLineMarkup:
    """Review of issue 24: these labels were counted as fabricated; resolve masks them."""

    @pytest.mark.parametrize("template", HIDING.values(), ids=HIDING.keys())
    def test_label_alone_on_a_hidden_line_is_not_fabricated(self, template):
        """[doc-9] there is hidden, as resolve hides [9] in the same place."""
        assert {
            "resolved": ["doc-1"],
            "fabricated": [],
            "ambiguous": [],
            "ignored": [],
            "hidden": ["x"],
        } == buckets(template.format(label="[doc-9]"))
        assert [1] == [o.number for o in parse_markers(as_markers(template, "[9]"))]

    @pytest.mark.parametrize("template", HIDING.values(), ids=HIDING.keys())
    def test_the_same_label_outside_the_markup_is_still_fabricated(self, template):
        """Control: with the construct left unopened, the label is seen and accused."""
        opened = template.replace("<!--", "(").replace("<![CDATA[", "(").replace("<?", "(")
        assert ["doc-9"] == buckets(opened.format(label="[doc-9]"))["fabricated"]
        assert [9, 1] == [o.number for o in parse_markers(as_markers(opened, "[9]"))]

    def test_scorer_findings_do_not_fail_the_row(self):
        """Through CitationScorer: no fabricated citation, the label counted as hidden."""
        response = HIDING["comment_in_quote"].format(label="[doc-9]")
        findings = CitationScorer().score_sync(response, CONTEXT).findings
        assert ((), 1) == (findings.fabricated_citations, findings.markers_in_code)
        assert "fabricated_citation" not in findings.deterministic_failures

    @pytest.mark.parametrize("template", HIDING.values(), ids=HIDING.keys())
    def test_custom_syntax_inside_the_markup_is_hidden_too(self, template):
        """<<doc-9>> reads as a tag by itself, but a piece of a comment is not its own."""
        response = template.format(label="<<doc-9>>").replace("[doc-1]", "<<doc-1>>")
        found = classify_labelled(response, ANGLE_CONTEXT, ANGLE_LABELS, ANGLE_CITATIONS)
        assert [("doc-1", "resolved")] == [(o.label, o.kind) for o in found.occurrences]

    def test_custom_syntax_in_prose_still_cites(self):
        """Control: the <<id>> syntax's own tag does not hide it (in prose, quote or item)."""
        for response in ("Fee <<doc-9>>.", "> Fee\n> <<doc-9>>\n", "- Fee\r\n  <<doc-9>>\r\n"):
            found = classify_labelled(response, ANGLE_CONTEXT, ANGLE_LABELS, ANGLE_CITATIONS)
            assert [("doc-9", "fabricated")] == [(o.label, o.kind) for o in found.occurrences]


# --- the differential test ----------------------------------------------------------------

_WORDS = st.sampled_from(["Fees", "rise", "late", "x", "é", "tall", "*a*", "_b_", "(", ")"])
_MARKERS = st.sampled_from(["[1]", "[2]", "[3]", "[7]", "[9]", "[1, 2]", "[3,9]", "[007]", "[12]"])
_INLINE = st.sampled_from(
    [
        "<!--",
        "-->",
        "<![CDATA[",
        "]]>",
        "<?",
        "?>",
        "<!DOCTYPE",
        ">",
        "<b>",
        "</b>",
        '<a href="',
        '">',
        "`",
        "``",
        "[",
        "]",
        "](u)",
        "<https://e.com/",
        "[x]",
        "\\",
        "&lt;",
        "|",
    ]
)
_PREFIXES = st.sampled_from(["", "", "", "> ", ">", "> > ", "- ", "* ", "1. ", "  ", "    ", "\t"])
_ENDINGS = st.sampled_from(["\n", "\n", "\r\n", "\r"])


@st.composite
def _line(draw: st.DrawFn) -> str:
    """A line: a container prefix, then words, markers and HTML/code openers and closers."""
    prefix = draw(_PREFIXES)
    if draw(st.integers(0, 5)) == 0:
        return prefix + draw(_MARKERS)  # a marker alone on its line
    pieces = draw(st.lists(_WORDS | _MARKERS | _INLINE, min_size=1, max_size=6))
    return prefix + " ".join(pieces)


@st.composite
def masking_documents(draw: st.DrawFn) -> str:
    """Lines in quotes and list items, constructs spanning them, mixed line endings."""
    lines = draw(st.lists(_line() | st.sampled_from(["", "```", "~~~", "> ```"]), max_size=9))
    out = []
    for line in lines:
        out.append(line)
        out.append(draw(_ENDINGS))
    return "".join(out[:-1]) if out else "[1]"


def _with_endings(text: str) -> list[str]:
    crlf = text.replace("\r\n", "\n").replace("\r", "\n")
    return [crlf, crlf.replace("\n", "\r\n"), crlf.replace("\n", "\r")]


def assert_scorer_sees_what_resolve_sees(text: str) -> None:
    """Each marker group is a scorer occurrence if and only if resolve cites it."""
    cited = {(o.group_start, o.group_end) for o in parse_markers(text)}
    found = classify_labelled(text, CONTEXT, LABELS, CITATIONS)
    occurrences = {(o.start, o.end) for o in found.occurrences}
    groups = [m.span() for m in GROUP_PATTERN.finditer(text)]
    seen = {span for span in groups if span in occurrences}
    assert cited == seen, (sorted(cited - seen), sorted(seen - cited))
    numbers = {int(x) for s, e in seen for x in text[s + 1 : e - 1].split(",")}
    if numbers and 1 <= min(numbers) and max(numbers) <= len(SOURCES):
        assert numbers == {c.marker for c in resolve(text, SOURCES).citations}


def assert_labels_fabricated_where_markers_cite(text: str) -> None:
    """With every [n] written [doc-n], exactly the cited out-of-range ones are fabricated."""
    expected = [
        f"doc-{int(digits)}"
        for occ in parse_markers(text)
        for digits in [text[occ.start : occ.end]]
        if not 1 <= int(digits) <= 3  # CONTEXT declares doc-1..doc-3
    ]

    def as_labels(match: object) -> str:
        body = match.group(1)  # type: ignore[attr-defined]
        return "[" + ",".join(f"doc-{int(n)}" for n in body.split(",")) + "]"

    labelled = GROUP_PATTERN.sub(as_labels, text)
    assert expected == buckets(labelled)["fabricated"]


class TestScorerAgreesWithResolve:
    @settings(max_examples=400, deadline=None)
    @given(masking_documents())
    def test_on_containers_multi_line_markup_and_line_endings(self, text):
        assert_scorer_sees_what_resolve_sees(text)
        assert_labels_fabricated_where_markers_cite(text)

    @settings(max_examples=150, deadline=None)
    @given(marker_texts() | commonmark_documents())
    def test_on_the_shared_marker_strategies(self, text):
        for variant in _with_endings(text):
            assert_scorer_sees_what_resolve_sees(variant)

    def test_on_every_spec_example_with_markers_planted(self):
        """Each line of each spec example gets a marker after it and one on its own line."""
        checked = 0
        for case in SPEC:
            lines = case["markdown"].split("\n")
            after = "\n".join(f"{line} [7]" if line else line for line in lines)
            alone = "\n".join(f"{line}\n[8]" for line in lines)
            for text in (after, alone):
                for variant in _with_endings(text):
                    assert_scorer_sees_what_resolve_sees(variant)
                    checked += 1
        assert checked == 6 * len(SPEC)


class TestDefaultLabelTwin:
    """Without a "\\r" in the context, the "^"-only twin finds exactly the default's labels."""

    @settings(max_examples=300, deadline=None)
    @given(
        st.lists(
            st.sampled_from(["[doc-1]", "[a.b]", " [x] ", "text", "\n", "\t", "[", "]", "[d 1]"]),
            max_size=20,
        ).map("".join)
    )
    def test_same_blocks_as_the_default(self, context):
        default = re.compile(DEFAULT_LABEL_PATTERN, re.MULTILINE)
        starts = [m.span() for m in default.finditer(context)]
        assert starts == [m.span() for m in _DEFAULT_LF.finditer(context)]
        assert _parse_blocks(context, default) == _parse_blocks(context, _DEFAULT_LF)
