"""Resolution of markers into citations, SPEC §3.4."""

from __future__ import annotations

import pytest

from citemark import (
    Citation,
    CitedAnswer,
    MarkerOutOfRangeError,
    NoSourcesError,
    Source,
    SynthesisError,
    resolve,
)

SOURCES = [
    Source(text="alpha", doc_id="A", chunk_id="A#0", start=0, end=5, uri="a.txt"),
    Source(text="beta", doc_id="B"),
    Source(text="gamma", doc_id="C", chunk_id="C#4", start=7, end=12),
]


def citation(marker: int) -> Citation:
    src = SOURCES[marker - 1]
    return Citation(
        marker=marker,
        doc_id=src.doc_id,
        chunk_id=src.chunk_id,
        start=src.start,
        end=src.end,
        uri=src.uri,
        text=src.text,
    )


class TestResolve:
    def test_markers_resolve_to_source_fields(self):
        """Marker n becomes a citation built from sources[n-1]'s own fields."""
        text = "First [3], then [1, 2]."
        assert CitedAnswer(text=text, citations=(citation(3), citation(1), citation(2))) == resolve(
            text, SOURCES
        )

    def test_citations_are_deduplicated_in_first_mention_order(self):
        """Repeated markers (also written with leading zeros) yield one citation each."""
        text = "[2] and [1][2] and [02]"
        assert (citation(2), citation(1)) == resolve(text, SOURCES).citations

    def test_a_source_list_changed_in_place_resolves_against_its_new_sources(self):
        """The citations made for a list are reused only while it holds the same sources."""
        sources = list(SOURCES)
        assert resolve("[1] [2]", sources).citations == (citation(1), citation(2))
        sources[0] = Source(text="delta", doc_id="D")
        assert [c.doc_id for c in resolve("[1] [2]", sources).citations] == ["D", "B"]
        sources.pop()
        with pytest.raises(MarkerOutOfRangeError):
            resolve("[3]", sources)

    def test_no_markers_is_an_abstention(self):
        """An answer without markers resolves to an empty citation tuple."""
        assert () == resolve("The sources do not answer this.", SOURCES).citations

    def test_markers_in_code_are_ignored(self):
        """A bracketed number inside code neither cites nor fails."""
        assert (citation(1),) == resolve("Use `arr[7]` here [1].", SOURCES).citations

    @pytest.mark.parametrize(
        ("text", "marker"), [("[4]", 4), ("[0]", 0), ("[1, 9]", 9), ("[2][5][6]", 5)]
    )
    def test_out_of_range_marker_is_rejected(self, text, marker):
        """The first out-of-range marker raises MarkerOutOfRangeError with only facts."""
        with pytest.raises(MarkerOutOfRangeError) as info:
            resolve(text, SOURCES)
        assert (marker, 3) == (info.value.marker, info.value.valid_count)
        assert (
            f"marker [{marker}] is out of range: the answer was given 3 sources, "
            "so markers must lie in 1..3"
        ) == str(info.value)
        assert isinstance(info.value, SynthesisError)

    def test_huge_marker_is_out_of_range(self):
        """A 30-digit marker is out of range and its message stays short."""
        with pytest.raises(MarkerOutOfRangeError) as info:
            resolve("[" + "9" * 30 + "]", SOURCES)
        assert int("9" * 30) == info.value.marker
        assert "<30-digit number>" in str(info.value)

    def test_empty_sources_raise_even_without_markers(self):
        """resolve(text, []) raises NoSourcesError whatever the text."""
        for text in ("no markers here", "[1]"):
            with pytest.raises(NoSourcesError):
                resolve(text, [])

    @pytest.mark.parametrize("text", ["", "  \n\t ", "\u200b", "\x00\x01", " \u200b\n"])
    def test_blank_answer_is_rejected(self, text):
        """A blank answer is a SynthesisError, not an abstention."""
        with pytest.raises(SynthesisError, match="answer is blank"):
            resolve(text, SOURCES)

    def test_errors_pickle(self):
        """Both resolution errors survive pickling, for process-pool batches."""
        import pickle

        again = pickle.loads(pickle.dumps(MarkerOutOfRangeError(7, 3)))  # noqa: S301 - our own bytes
        assert (7, 3) == (again.marker, again.valid_count)
        assert isinstance(pickle.loads(pickle.dumps(NoSourcesError())), NoSourcesError)  # noqa: S301

    def test_text_is_kept_verbatim(self):
        """The answer text keeps its markers exactly as the model wrote them."""
        text = "Odd spacing [1,  2] and [3]."
        assert text == resolve(text, SOURCES).text
