"""Properties of the marker grammar and of resolution (SPEC §8), over any text."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import answers, marker_texts, prose_and_code, source_lists

from citemark import MarkerOutOfRangeError, masked_spans, parse_markers, resolve
from citemark._contract.blank import is_blank
from citemark._markers.grammar import GROUP_PATTERN, group_bodies

ASCII_DIGITS = frozenset("0123456789")
TEXTS = st.one_of(st.text(), marker_texts(), answers())
FIELDS = ("doc_id", "chunk_id", "start", "end", "uri", "text")


def group_texts(text: str) -> list[str]:
    """The inside of every citing group parse_markers reports, once per group."""
    starts = dict.fromkeys((o.group_start, o.group_end) for o in parse_markers(text))
    return [text[start + 1 : end - 1] for start, end in starts]


class TestParseMarkers:
    @settings(max_examples=300)
    @given(TEXTS)
    def test_occurrences_slice_back_to_their_digits_and_group(self, text):
        """Every occurrence's offsets slice out ASCII digits equal to its number and a whole group."""
        for o in parse_markers(text):
            digits = text[o.start : o.end]
            assert digits != ""
            assert set(digits) <= ASCII_DIGITS
            assert int(digits) == o.number
            assert GROUP_PATTERN.fullmatch(text, o.group_start, o.group_end) is not None
            assert o.group_start < o.start < o.end < o.group_end

    @settings(max_examples=300)
    @given(TEXTS)
    def test_occurrences_are_in_text_order(self, text):
        """Occurrences come back in the order their digits appear, never overlapping."""
        flat = [x for o in parse_markers(text) for x in (o.start, o.end)]
        assert sorted(flat) == flat

    @settings(max_examples=300)
    @given(st.text(alphabet="[]0123456789, `~()\n", max_size=60) | st.text())
    def test_never_raises_on_bracket_soup(self, text):
        """Dense brackets, digits, backticks and tildes parse without raising."""
        parse_markers(text)


class TestMaskedSpans:
    @settings(max_examples=300)
    @given(TEXTS)
    def test_spans_are_sorted_disjoint_and_inside_the_text(self, text):
        """Masked spans are non-empty, sorted, disjoint and within the text."""
        spans = masked_spans(text)
        bounds = [x for span in spans for x in (span.start, span.end)]
        assert sorted(bounds) == bounds
        assert all(span.start < span.end for span in spans)
        assert all(0 <= x <= len(text) for x in bounds)
        assert {span.kind for span in spans} <= {
            "code",
            "link_destination",
            "link_label",
            "definition",
            "image",
            "autolink",
            "html",
            "table_overflow",
        }

    @settings(max_examples=300)
    @given(TEXTS)
    def test_citing_groups_are_the_unmasked_ones(self, text):
        """parse_markers keeps exactly the groups whose "[" lies in no masked span."""
        spans = masked_spans(text)
        unmasked = [
            m.span()
            for m in GROUP_PATTERN.finditer(text)
            if not any(s.start <= m.start() < s.end for s in spans)
        ]
        assert unmasked == list(
            dict.fromkeys((o.group_start, o.group_end) for o in parse_markers(text))
        )


class TestFastPath:
    @settings(max_examples=300)
    @given(TEXTS)
    def test_group_bodies_agree_with_parse_markers(self, text):
        """The body-only fast path resolve uses finds the same groups as parse_markers."""
        assert group_texts(text) == group_bodies(text)


class TestResolve:
    @settings(max_examples=300)
    @given(st.one_of(answers(), marker_texts(), st.text()), source_lists())
    def test_citations_come_only_from_the_sources(self, text, sources):
        """Each citation is sources[marker - 1], field for field, or resolve rejects the answer."""
        assume(not is_blank(text))  # a blank answer is a different contract (SPEC §3.4)
        try:
            answer = resolve(text, sources)
        except MarkerOutOfRangeError as error:
            rejected = error
        else:
            rejected = None
        if rejected is not None:
            assert not 1 <= rejected.marker <= len(sources)
            assert len(sources) == rejected.valid_count
            assert rejected.marker in {o.number for o in parse_markers(text)}
            return
        markers = [c.marker for c in answer.citations]
        assert len(set(markers)) == len(markers)
        for citation in answer.citations:
            assert 1 <= citation.marker <= len(sources)
            source = sources[citation.marker - 1]
            assert [getattr(source, f) for f in FIELDS] == [getattr(citation, f) for f in FIELDS]
        assert text == answer.text

    @settings(max_examples=300)
    @given(st.one_of(answers(), marker_texts()), source_lists())
    def test_citations_are_the_parsed_markers(self, text, sources):
        """An accepted answer cites exactly its parsed markers, in first-mention order."""
        assume(not is_blank(text))
        numbers = list(dict.fromkeys(o.number for o in parse_markers(text)))
        if not all(1 <= n <= len(sources) for n in numbers):
            with pytest.raises(MarkerOutOfRangeError):
                resolve(text, sources)
            return
        assert numbers == [c.marker for c in resolve(text, sources).citations]


class TestCodeMasking:
    @settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
    @given(prose_and_code())
    def test_masking_hides_exactly_the_code(self, placed):
        """Every group placed outside code cites at its offset and no group placed in code does."""
        occ = parse_markers(placed.text)
        found = list(
            dict.fromkeys((o.group_start, placed.text[o.group_start : o.group_end]) for o in occ)
        )
        assert placed.citing == found
        assert set(placed.masked).isdisjoint(o.group_start for o in occ)
