"""The ``lexical`` verifier: its rule on hand-written cases, its identity, its batches.

Every verdict here is worked out by hand from the rule in the module docstring of
``citemark._judging.verifiers.lexical`` (numbers, coverage of content stems against
the threshold, negation against the best-matching sentence), never read back from
the verifier.
"""

from __future__ import annotations

import asyncio
import hashlib

import pytest

from citemark._judging.verifiers import lexical
from citemark._judging.verifiers.base import Premise, Verdict, Verifier, verify_sync
from citemark._judging.verifiers.lexical import (
    RULE_VERSION,
    THRESHOLD,
    LexicalVerifier,
    rule_text,
    stem,
)

YES = Verdict(entailed=True)
NO = Verdict(entailed=False)
CANARY = "CANARY-lexical-5e1d"

BUDGET = "In 2019 the city council approved a budget of $4,500,000 for new bicycle lanes."


def judge(claim: str, *passages: str, threshold: float = THRESHOLD) -> Verdict:
    """The verdict of a fresh verifier on one premise."""
    return verify_sync(LexicalVerifier(threshold), [Premise(claim, passages)])[0]


class TestVerdicts:
    def test_a_paraphrase_with_the_same_content_words_is_entailed(self) -> None:
        # Content stems: budget dollar new bicycl lan approv city council: 7 of 8
        # found ("dollars" is not), 0.875 >= 0.7; 4500000 and 2019 both occur.
        claim = (
            "A budget of 4,500,000 dollars for new bicycle lanes was approved "
            "by the city council in 2019."
        )
        assert judge(claim, BUDGET) == YES

    def test_numbers_are_read_in_one_normal_form(self) -> None:
        assert judge("The council approved 4500000 for bicycle lanes in 2019.", BUDGET) == YES
        assert judge("Growth was 3.50% in 2021.", "In 2021, growth was 3.5 percent.") == YES
        assert judge("Growth reached three percent.", "Growth reached 3%.") == YES

    def test_a_changed_number_is_not_entailed(self) -> None:
        claim = "The city council approved a budget of $4,600,000 for new bicycle lanes in 2019."
        assert judge(claim, BUDGET) == NO
        assert judge("The city council approved new bicycle lanes in 2018.", BUDGET) == NO

    def test_an_added_negation_is_not_entailed(self) -> None:
        claim = "In 2019 the city council did not approve a budget for new bicycle lanes."
        assert judge(claim, BUDGET) == NO
        assert judge(claim.replace("did not", "never"), BUDGET) == NO

    def test_a_dropped_negation_is_not_entailed(self) -> None:
        passage = "The council did not approve the bicycle lanes."
        assert judge("The council approved the bicycle lanes.", passage) == NO
        assert judge("The council didn\u2019t approve the bicycle lanes.", passage) == YES

    def test_a_negation_in_another_sentence_does_not_count(self) -> None:
        # The best-matching sentence is the first, which holds no negation.
        passage = "The council approved the bicycle lanes. No vote was held on parking fees."
        assert judge("The council approved the bicycle lanes.", passage) == YES
        assert judge("The council did not approve the bicycle lanes.", passage) == NO

    def test_an_unrelated_passage_is_not_entailed(self) -> None:
        passage = "Photosynthesis converts light energy into chemical energy in plants."
        assert judge("The city council approved new bicycle lanes.", passage) == NO

    def test_an_added_fact_is_not_entailed_at_the_threshold(self) -> None:
        passage = "In adults, regular exercise reduces blood pressure."
        # 5 of 6 content stems (0.83): entailed; 5 of 8 (0.625): not at 0.7, yes at 0.6.
        assert judge("Regular exercise lowers blood pressure in adults.", passage) == YES
        added = "Regular exercise lowers blood pressure and cures diabetes in adults."
        assert judge(added, passage) == NO
        assert judge(added, passage, threshold=0.6) == YES

    def test_coverage_exactly_at_the_threshold_is_entailed(self) -> None:
        # Ten content stems, seven found: 7/10 is exactly 0.7.
        passage = "alpha bravo charlie delta echo foxtrot golf"
        claim = "alpha bravo charlie delta echo foxtrot golf hotel india juliet"
        assert judge(claim, passage) == YES
        assert judge(claim + " kilo", passage) == NO  # 7/11

    def test_several_passages_together_entail(self) -> None:
        first = "The bridge opened in 1998."
        second = "The bridge carries 40,000 vehicles a day."
        claim = "The bridge opened in 1998 and carries 40000 vehicles a day."
        assert judge(claim, first) == NO
        assert judge(claim, second) == NO
        assert judge(claim, first, second) == YES
        assert judge(claim, second, first) == YES

    def test_casefolding_is_unicode_aware(self) -> None:
        assert judge("Die STRASSE wurde 2020 gebaut.", "Die Straße wurde 2020 gebaut.") == YES

    def test_no_passages_entail_nothing(self) -> None:
        assert judge("The bridge opened in 1998.") == NO
        assert judge("The bridge opened in 1998.", "", "   \n\n ") == NO

    def test_a_claim_with_nothing_to_match_gets_no_verdict(self) -> None:
        for claim in ("", "   ", "It is not.", "It was what they said."):
            assert judge(claim, BUDGET) == Verdict(entailed=None, problem="no_content_words")

    def test_code_quotes_and_tables_are_read(self) -> None:
        passage = (
            "Install it:\n\n```python\nclient = connect(timeout=30)\n```\n\n"
            "> The client retries never.\n\n| setting | value |\n|---|---|\n| timeout | 30 |"
        )
        assert judge("The client connects with a timeout of 30.", passage) == YES
        assert judge("The client connects with a timeout of 60.", passage) == NO


class TestStem:
    @pytest.mark.parametrize(
        ("words", "expected"),
        [
            (("increase", "increases", "increased", "increasing"), "increas"),
            (("study", "studies", "studied"), "study"),
            (("run", "running"), "run"),
            (("stop", "stops", "stopped"), "stop"),
            (("class", "classes"), "class"),
            (("regular", "regularly"), "regular"),
            (("call", "called", "calling"), "call"),
        ],
    )
    def test_forms_of_a_word_share_a_stem(self, words: tuple[str, ...], expected: str) -> None:
        assert {stem(word) for word in words} == {expected}


class TestIdentity:
    def test_the_identity_names_the_rule(self) -> None:
        identity = LexicalVerifier().identity
        digest = hashlib.sha256(rule_text(THRESHOLD).encode()).hexdigest()
        assert (identity.kind, identity.name, identity.version) == ("lexical", "lexical", "1")
        assert identity.version == RULE_VERSION
        assert identity.digest == f"sha256:{digest}"
        assert LexicalVerifier().identity == identity

    def test_the_digest_changes_with_the_threshold(self) -> None:
        digests = {LexicalVerifier(t).identity.digest for t in (0.7, 0.6, 0.75, 1.0)}
        assert len(digests) == 4

    def test_the_digest_covers_the_word_lists(self, monkeypatch: pytest.MonkeyPatch) -> None:
        before = LexicalVerifier().identity.digest
        monkeypatch.setattr(lexical, "STOP_WORDS", lexical.STOP_WORDS - {"the"})
        assert LexicalVerifier().identity.digest != before
        monkeypatch.undo()
        monkeypatch.setattr(lexical, "NEGATIONS", lexical.NEGATIONS | {"hardly"})
        assert LexicalVerifier().identity.digest != before
        monkeypatch.undo()
        monkeypatch.setattr(lexical, "_VERB_RULES", lexical._VERB_RULES[:-1])
        assert LexicalVerifier().identity.digest != before
        monkeypatch.undo()
        assert LexicalVerifier().identity.digest == before

    @pytest.mark.parametrize("threshold", [0.0, -0.1, 1.5, float("nan"), True])
    def test_a_threshold_outside_the_range_is_refused(self, threshold: float) -> None:
        with pytest.raises(ValueError, match=r"threshold must be a number in \(0, 1\]"):
            LexicalVerifier(threshold)

    def test_it_follows_the_verifier_protocol(self) -> None:
        verifier = LexicalVerifier()
        assert isinstance(verifier, Verifier)
        asyncio.run(verifier.aclose())


class TestBatches:
    def test_order_is_kept_and_matches_one_at_a_time(self) -> None:
        passage = "The council did not approve the bicycle lanes."
        cases = [
            (Premise("The bridge opened in 1998.", ("The bridge opened in 1998.",)), YES),
            (Premise("The council approved the bicycle lanes.", (passage,)), NO),
            (Premise("It is not.", (passage,)), Verdict(None, "no_content_words")),
            (Premise("The council didn't approve the bicycle lanes.", (passage,)), YES),
            (Premise("The bridge opened in 1999.", ("The bridge opened in 1998.",)), NO),
        ]
        verifier = LexicalVerifier()
        for order in (cases, cases[::-1], cases[1:] + cases[:1], cases * 3):
            premises = [premise for premise, _ in order]
            assert verify_sync(verifier, premises) == [verdict for _, verdict in order]
            assert [verify_sync(verifier, [p])[0] for p in premises] == [v for _, v in order]

    def test_an_empty_batch_gives_no_verdicts(self) -> None:
        assert verify_sync(LexicalVerifier(), []) == []

    def test_a_cached_passage_gives_the_same_verdict(self) -> None:
        lexical._passage.cache_clear()
        premise = Premise("The council approved the bicycle lanes.", (BUDGET,))
        first = verify_sync(LexicalVerifier(), [premise] * 50)
        info = lexical._passage.cache_info()
        assert (info.misses, info.hits) == (1, 49)
        assert first == [YES] * 50

    def test_verdicts_do_not_depend_on_the_memo_bound(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        passages = (BUDGET, "The council did not approve the bicycle lanes. Fees rose 4%.")
        claims = [
            "The council approved the bicycle lanes.",
            "The council approved a budget of 4,500,000 in 2019.",
            "Fees rose 4 percent.",
            "Fees did not rise.",
        ]
        premises = [Premise(c, (p,)) for c in claims for p in passages]
        premises += [Premise(c, passages) for c in claims]
        lexical._passage.cache_clear()
        expected = verify_sync(LexicalVerifier(), premises)
        # A bound smaller than one passage's pieces: every passage starts a fresh memo.
        monkeypatch.setattr(lexical, "_CLASS_BOUND", 5)
        monkeypatch.setattr(lexical, "_MEMO", [{}])
        lexical._passage.cache_clear()
        assert verify_sync(LexicalVerifier(), premises) == expected
        assert len(lexical._MEMO[0]) <= 20
        lexical._passage.cache_clear()


class TestUntrustedText:
    def test_a_wrong_type_names_the_premise_index_only(self) -> None:
        premises = [
            Premise(f"{CANARY} claim one", (f"{CANARY} passage",)),
            Premise(f"{CANARY} claim two", (f"{CANARY} passage", b"bytes")),  # type: ignore[arg-type]
        ]
        with pytest.raises(TypeError) as caught:
            verify_sync(LexicalVerifier(), premises)
        assert str(caught.value) == "premise 1: the claim and every passage must be str"
        assert CANARY not in repr(caught.value)
        assert caught.value.__cause__ is None
        assert caught.value.__context__ is None

    def test_hostile_text_gets_a_verdict_not_an_exception(self) -> None:
        hostile = [
            "\x00\ud800" + CANARY,
            "n't " * 1000,
            "9" * 5000 + ",000.000",
            "'''" + "\u0301" * 100,
            "\u202e" + CANARY + "\n\n\n|#>- 1.",
            "é" * 20_000,
        ]
        premises = [Premise(c, (p,)) for c in hostile for p in hostile]
        verdicts = verify_sync(LexicalVerifier(), premises)
        assert len(verdicts) == len(premises)
        assert all(v.entailed is not None or v.problem == "no_content_words" for v in verdicts)
