"""Prose references and footnotes with definitions are reported (issue 24, item 7).

Real pipelines cite as "Passage ID 3" or "Source 2" in running prose, and as ``[^n]``
footnotes with ``[^n]:`` definitions. Neither is a marker, and neither may pass for an
abstention: both are reported as unrecognized citation-like text, with a kind, and
``strict`` rejects them. A bare prose reference counts only when its number names one
of the sources under the numbering base, so "Document 1990" with three sources is a
year, not a citation.
"""

from __future__ import annotations

import pytest

from citemark import (
    CitationScorer,
    Source,
    StreamingResolver,
    UnrecognizedCitationError,
    find_unrecognized,
    resolve,
)
from citemark._markers.grammar import OPENERS, unmask
from citemark._markers.nearmiss import (
    may_hold_unrecognized,
    may_hold_unrecognized_beyond,
    unrecognized_in,
)

SOURCES = [Source(text=f"Passage {n}.", doc_id=f"d{n}") for n in range(1, 4)]


def reported(text: str, count: int | None = 3, index_base: int = 1) -> list[tuple[str, str]]:
    """(kind, text) of each token `find_unrecognized` reports, in order."""
    return [(t.kind, t.text) for t in find_unrecognized(text, count=count, index_base=index_base)]


def as_resolve_finds(text: str, count: int, index_base: int = 1) -> list[tuple[str, str]]:
    """The tokens through the parse and fast path `resolve` uses, given the count."""
    unmasked, spans = unmask(text)
    lone = "" in OPENERS.findall(unmasked)  # a visible "[" that opens no group
    if not may_hold_unrecognized_beyond(text, lone_bracket=lone, unmasked=unmasked, count=count):
        return []
    tokens = unrecognized_in(text, unmasked, spans, count=count, index_base=index_base)
    return [(t.kind, t.text) for t in tokens]


class TestBareProseReferences:
    @pytest.mark.parametrize(
        ("answer", "token"),
        [
            ("The tower opened in 1889, Passage 2 says.", "Passage 2"),
            ("Passage ID 3 gives its height.", "Passage ID 3"),
            ("As Source 2 notes, it is 330 m tall.", "Source 2"),
            ("Document 1 dates it to 1889.", "Document 1"),
            ("It is tall (see passage id: 2).", "(see passage id: 2)"),
            ("It is tall per source #3.", "source #3"),
            ("It is tall (Document ID 1).", "(Document ID 1)"),
            ("It opened in 1889 [1] and Source 2 gives its height.", "Source 2"),
        ],
    )
    def test_each_form_is_reported_when_its_number_names_a_source(self, answer, token):
        assert [("prose_reference", token)] == reported(answer)
        found = find_unrecognized(answer, count=3)[0]
        assert answer[found.start : found.end] == token
        # The same through the parse and the fast path resolve makes.
        assert [("prose_reference", token)] == as_resolve_finds(answer, 3)

    def test_without_the_count_only_the_bracketed_forms_are_reported(self):
        """The old reading: bare prose references go unreported, as they did before."""
        assert [] == reported("Passage ID 3 gives its height.", count=None)
        assert [] == reported("As Source 2 notes.", count=None)

    @pytest.mark.parametrize(
        "answer",
        [
            "Document 1990 describes the fair.",  # a year: three sources
            "Source 4 is not one of them.",  # no fourth source
            "Passage 0 under a base of 1.",
            "Sources 1 and 2 agree.",  # a plural names no single source
            "Open-source 2 is a codec; resource 2 and Resources 3 are not sources.",
            "Source 2.5 of the release, source 2,000 times.",
            "The 2nd source 3rd Document 2a.",
            "It opened in 1889 Source [2].",  # a marker, read as one
            "Code: `Source 2` and\n\n```\nPassage ID 3\n```\n",
            "[link](https://e.com/Source%202 'Source 2')",
        ],
    )
    def test_no_false_alarm(self, answer):
        assert [] == reported(answer)
        assert [] == as_resolve_finds(answer, 3)

    def test_the_numbering_base_decides_what_fits(self):
        answer = "Passage 0 and Passage 3 both say so."
        assert [("prose_reference", "Passage 3")] == reported(answer, index_base=1)
        assert [("prose_reference", "Passage 0")] == reported(answer, index_base=0)

    def test_a_parenthesised_reference_is_reported_whatever_the_count(self):
        """As before: "(Passage 7)" with three sources is citation-like all the same."""
        assert [("prose_reference", "(Passage 7)")] == reported("Tall (Passage 7).")

    def test_answer_of_only_markers_keeps_the_fast_path(self):
        """No stem of a prose word: the fast path still finds nothing to look for."""
        text = "It opened in 1889 [1] and is 330 m tall [2]."
        assert not may_hold_unrecognized(text, 2, count=3)
        assert not may_hold_unrecognized_beyond(text, lone_bracket=False, count=3)
        assert may_hold_unrecognized("Source 2 says so [1].", 1, count=3)


class TestFootnotesWithDefinitions:
    ANSWER = (
        "It opened in 1889.[^1][^2] It is 330 m tall.[^3]\n\n"
        "[^1]: https://en.wikipedia.org/wiki/Eiffel_Tower\n"
        '[^2]: https://example.com/history "History"\n'
        "[^3]: https://example.com/height\n"
    )

    def test_every_reference_and_definition_is_a_footnote(self):
        """[^2] reads as [^1]'s link label and the definitions as definitions: all reported."""
        tokens = [(t.kind, t.text) for t in find_unrecognized(self.ANSWER)]
        assert [("footnote", f"[^{n}]") for n in (1, 2, 3, 1, 2, 3)] == tokens

    def test_a_marker_with_a_footnote_label_takes_the_fast_path_no_longer(self):
        """[1][^2] with a definition: every visible [ opens a group, yet [^2] is reported."""
        answer = "It opened in 1889 [1][^2].\n\n[^2]: https://example.com/history\n"
        assert ["footnote", "footnote"] == [t.kind for t in resolve(answer, SOURCES).unrecognized]
        with pytest.raises(UnrecognizedCitationError) as caught:
            resolve(answer, SOURCES, strict=True)
        assert (caught.value.kind, caught.value.start) == ("footnote", 21)
        assert "example.com" not in str(caught.value)

    def test_resolve_reports_them_and_strict_rejects(self):
        result = resolve(self.ANSWER, SOURCES)
        assert ["footnote"] * 6 == [t.kind for t in result.unrecognized]
        assert result.text == self.ANSWER  # nothing is stripped
        with pytest.raises(UnrecognizedCitationError) as caught:
            resolve(self.ANSWER, SOURCES, strict=True)
        assert (caught.value.kind, caught.value.start) == ("footnote", 18)

    def test_footnote_inside_a_definition_title_or_code_stays_unreported(self):
        """Only the label the masking read is the footnote; a title's text is not."""
        answer = 'Tall [x].\n\n[x]: https://example.com "[^1]"\n\n`[^2]`'
        assert () == find_unrecognized(answer)

    def test_footnote_without_definitions_is_reported_as_before(self):
        tokens = find_unrecognized("Tall [^1][^2].")
        assert [("footnote", "[^1]"), ("footnote", "[^2]")] == [(t.kind, t.text) for t in tokens]


class TestThroughResolveScorerAndCheck:
    """With the source count passed by resolve and the scorer (callsites.diff)."""

    ANSWER = "It opened in 1889 [1]. Passage ID 2 gives its height, Document 1990 the fair."

    def test_resolve_reports_the_bare_reference_and_not_the_year(self):
        result = resolve(self.ANSWER, SOURCES)
        assert [(t.kind, t.text) for t in result.unrecognized] == [
            ("prose_reference", "Passage ID 2")
        ]
        assert [c.marker for c in result.citations] == [1]

    def test_resolve_uses_the_numbering_base(self):
        answer = "It opened in 1889 [0]. Passage 3 is not a source; Passage 2 is."
        result = resolve(answer, SOURCES, index_base=0)
        assert [t.text for t in result.unrecognized] == ["Passage 2"]
        assert [t.text for t in resolve(answer.replace("[0]", "[1]"), SOURCES).unrecognized] == [
            "Passage 3",
            "Passage 2",
        ]

    def test_strict_rejects_naming_kind_and_offset_never_text(self):
        with pytest.raises(UnrecognizedCitationError) as caught:
            resolve(self.ANSWER, SOURCES, strict=True)
        assert (caught.value.kind, caught.value.start) == ("prose_reference", 23)
        assert "Passage" not in str(caught.value)
        stream = StreamingResolver(SOURCES, strict=True)
        for piece in ("It opened in 1889 [1]. Pass", "age ID", " 2 gives its height."):
            stream.feed(piece)
        with pytest.raises(UnrecognizedCitationError):
            stream.finish()

    def test_scorer_reports_and_strict_markers_fails_the_row(self):
        findings = CitationScorer().score_sync(self.ANSWER, SOURCES).findings
        assert [t.text for t in findings.unrecognized] == ["Passage ID 2"]
        strict = CitationScorer(strict_markers=True).score_sync(self.ANSWER, SOURCES)
        assert strict.findings.deterministic_failures == ("unrecognized_citation",)
        zero = CitationScorer(index_base=0).score_sync("Built [0]. Passage 3 says so.", SOURCES)
        assert zero.findings.unrecognized == ()
