"""CitationScore.deterministic_passed: the checks made in code, whatever the judge says."""

from __future__ import annotations

import pytest

from citemark import ChatError, CitationScorer, Source
from citemark.testing import ScriptedChat

SOURCES = [Source(text="Fees are 5% of the balance.", doc_id="fees")]


class TestDeterministicPassed:
    @pytest.mark.parametrize(
        ("answer", "expected"),
        [("Fees are 5% [1].", True), ("Fees are 5% [2].", False), ("I cannot tell.", None)],
    )
    @pytest.mark.parametrize(
        "judge",
        [
            None,
            ScriptedChat(["not json"] * 3),
            ScriptedChat([ChatError("timed out", provider="p", model="m")] * 3),
        ],
        ids=["no judge", "unusable reply", "failed call"],
    )
    def test_the_judge_never_changes_it(self, answer, expected, judge):
        """A resolved answer is True, a fabrication False, an abstention None, with any judge."""
        assert expected == CitationScorer(judge).score_sync(answer, SOURCES).deterministic_passed

    def test_an_empty_context_has_nothing_to_check(self):
        """An empty labelled context leaves the deterministic outcome undecided."""
        assert None is CitationScorer().score_sync("Rates rise [doc-1].", "").deterministic_passed

    def test_a_naive_reading_of_passed_is_caught(self):
        """Reading `passed` instead would let an unusable judge reply erase a clean result."""
        found = CitationScorer(ScriptedChat(["not json"])).score_sync("Fees are 5% [1].", SOURCES)
        assert (None, True) == (found.passed, found.deterministic_passed)
