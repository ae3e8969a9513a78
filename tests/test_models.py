"""The models of SPEC §3.1: frozen, closed, and the offset rule."""

from __future__ import annotations

import pydantic
import pytest

from citemark import Citation, CitedAnswer, Source


class TestSource:
    def test_offsets_must_span_the_text(self):
        """end - start must equal len(text), else ValueError at construction."""
        with pytest.raises(
            ValueError, match=r"end - start must equal len\(text\) \(got 3, expected 5\)"
        ):
            Source(text="hello", doc_id="d", start=0, end=3)

    def test_offsets_must_be_ordered(self):
        """start must not exceed end, and neither may be negative."""
        with pytest.raises(ValueError, match="0 <= start <= end"):
            Source(text="", doc_id="d", start=4, end=3)
        with pytest.raises(ValueError, match="0 <= start <= end"):
            Source(text="ab", doc_id="d", start=-2, end=0)

    def test_offsets_come_in_pairs(self):
        """One offset without the other is rejected."""
        with pytest.raises(ValueError, match="together"):
            Source(text="ab", doc_id="d", start=0)

    def test_valid_offsets_and_defaults(self):
        """A source with consistent offsets keeps every field; the rest default."""
        src = Source(text="hello", doc_id="d", start=10, end=15)
        assert (10, 15, None, None, {}) == (src.start, src.end, src.chunk_id, src.uri, src.metadata)

    def test_frozen_and_closed(self):
        """Sources cannot be changed and reject unknown fields."""
        src = Source(text="a", doc_id="d")
        with pytest.raises(pydantic.ValidationError):
            src.text = "b"  # type: ignore[misc]
        with pytest.raises(pydantic.ValidationError):
            Source(text="a", doc_id="d", page=3)  # type: ignore[call-arg]

    def test_strict_about_types(self):
        """A non-string text is a validation error, not a coercion target."""
        with pytest.raises(pydantic.ValidationError):
            Source(text=None, doc_id="d")  # type: ignore[arg-type]


class TestCitation:
    def test_marker_is_not_negative(self):
        """A citation's marker is at least 0 (0 only exists under index_base=0)."""
        with pytest.raises(pydantic.ValidationError):
            Citation(marker=-1, doc_id="d", chunk_id=None, start=None, end=None, uri=None, text="")
        zero = Citation(
            marker=0, doc_id="d", chunk_id=None, start=None, end=None, uri=None, text=""
        )
        assert zero.marker == 0

    def test_offset_rule_applies(self):
        """Citations obey the same offset rule as sources."""
        with pytest.raises(ValueError, match=r"end - start"):
            Citation(marker=1, doc_id="d", chunk_id=None, start=0, end=9, uri=None, text="x")


class TestCitedAnswer:
    def test_abstention_is_the_empty_tuple(self):
        """An answer without citations is valid and has no abstained flag."""
        answer = CitedAnswer(text="The sources do not say.")
        assert () == answer.citations
        assert "abstained" not in CitedAnswer.model_fields

    def test_json_round_trip(self):
        """A cited answer survives a JSON round trip unchanged."""
        citation = Citation(marker=2, doc_id="d", chunk_id="d#1", start=0, end=1, uri="u", text="x")
        answer = CitedAnswer(text="x [2]", citations=(citation,))
        assert answer == CitedAnswer.model_validate_json(answer.model_dump_json())
