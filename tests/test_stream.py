"""Streaming resolution, SPEC §3.4: fail fast, and agree with resolve at the end."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from citemark import (
    MarkerOutOfRangeError,
    NoSourcesError,
    Source,
    StreamingResolver,
    SynthesisError,
    resolve,
)

SOURCES = [Source(text=f"source {i}", doc_id=f"d{i}") for i in range(1, 4)]


def feed_all(pieces: list[str]) -> tuple[StreamingResolver, int | None]:
    """Feed pieces; return the resolver and the index of the piece that raised."""
    stream = StreamingResolver(SOURCES)
    for index, piece in enumerate(pieces):
        try:
            stream.feed(piece)
        except MarkerOutOfRangeError:
            return stream, index
    return stream, None


def splits(text: str) -> list[list[str]]:
    """Every way of cutting ``text`` into two pieces."""
    return [[text[:i], text[i:]] for i in range(len(text) + 1)]


class TestFailFast:
    @pytest.mark.parametrize("pieces", splits("It ends [12] now."))
    def test_split_marker_raises_when_complete(self, pieces):
        """[12] split at any position raises on the piece that completes it."""
        _, raised = feed_all(pieces)
        completing = 0 if "]" in pieces[0] else 1
        assert completing == raised

    def test_raises_before_the_stream_ends(self):
        """The error comes while feeding, not at finish."""
        _, raised = feed_all(["See [", "9", "]", " and then a long tail"])
        assert 2 == raised

    def test_pending_code_span_waits(self):
        """An out-of-range marker after an unmatched backtick waits: the span may close."""
        stream, raised = feed_all(["Use `arr", "[9]", " here"])
        assert raised is None
        stream.feed("` ok [1].")
        assert [1] == [c.marker for c in stream.finish().citations]

    def test_pending_span_that_never_closes_fails_at_the_end(self):
        """If the backtick never closes, finish rejects the marker."""
        stream, raised = feed_all(["Use `arr", "[9] here."])
        assert raised is None
        with pytest.raises(MarkerOutOfRangeError):
            stream.finish()

    def test_paragraph_end_makes_it_certain(self):
        """A blank line after the marker ends the paragraph: the wait is over."""
        _, raised = feed_all(["Use `arr", "[9] here.", "\n\nNext"])
        assert 2 == raised

    def test_pending_link_destination_waits(self):
        """An out-of-range marker inside an unfinished link destination waits."""
        stream, raised = feed_all(["[x](https://e/", "[9]", "/path) and [2]."])
        assert raised is None
        assert [2] == [c.marker for c in stream.finish().citations]

    def test_fenced_code_never_raises(self):
        """A marker inside a fence is code, both while streaming and at the end."""
        stream, raised = feed_all(["```\n", "x = a[9]\n", "```\n", "Done [1]."])
        assert raised is None
        assert [1] == [c.marker for c in stream.finish().citations]

    def test_text_passes_through(self):
        """feed returns each piece unchanged and text accumulates them."""
        stream = StreamingResolver(SOURCES)
        assert "abc [" == stream.feed("abc [")
        assert "1]" == stream.feed("1]")
        assert "abc [1]" == stream.text

    def test_no_sources_raises_at_once(self):
        """An empty source list fails before any text arrives."""
        with pytest.raises(NoSourcesError):
            StreamingResolver([])

    def test_blank_stream_is_rejected(self):
        """A stream that produced only whitespace is a SynthesisError at finish."""
        stream, _ = feed_all([" ", "\n"])
        with pytest.raises(SynthesisError):
            stream.finish()


class TestAgreesWithResolve:
    @given(
        st.lists(
            st.text(alphabet=st.sampled_from("ab [],0123459`~\n()x"), max_size=12), max_size=12
        )
    )
    def test_streaming_never_disagrees(self, pieces):
        """Fail-fast raises only when resolve rejects the whole text; otherwise results match."""
        text = "".join(pieces)
        stream, raised = feed_all(pieces)
        try:
            expected = resolve(text, SOURCES)
        except SynthesisError:
            expected = None
        if raised is not None:
            assert expected is None
            return
        if expected is None:
            with pytest.raises(SynthesisError):
                stream.finish()
        else:
            assert expected == stream.finish()


class TestFailFastAfterClosedCode:
    """Issue 24, item 6: a closed code span before a marker no longer makes it wait."""

    def test_closed_span_then_marker_raises_at_once(self):
        """With two sources, "After code `a[1]` comes [8]": no continuation can hide [8]."""
        stream = StreamingResolver(SOURCES[:2])
        with pytest.raises(MarkerOutOfRangeError) as info:
            for piece in ["After code `a[1]` comes [8]", " and more", " text."]:
                stream.feed(piece)
        assert 8 == info.value.marker
        assert "After code `a[1]` comes [8]" == stream.text

    def test_a_label_position_still_waits(self):
        """A group after "[a]" waits: a later definition of 8 would make it a label."""
        _, raised = feed_all(["[a][8]", " more", "\n\nand more"])
        assert raised is None

    def test_an_open_span_still_waits(self):
        """After an unmatched backtick the marker waits for the paragraph to end."""
        _, raised = feed_all(["Use `a [8]", " b", "\n\nnext"])
        assert 2 == raised
