"""ALCE-comparable citation recall and precision, and re-attribution (issue 36 parts 2-3).

`alce_row` below is a fresh implementation of ALCE's citation metrics written from
the published definitions (Gao et al. 2023, section 4, and what ``eval.py`` is
documented to do): its regex reading of ``[n`` markers, its claim cleaning, its
recall and precision per row and its means per run. It and citemark's
`citation_support` are fed the same verdicts by `ScriptedVerifier`, a real
`Verifier` whose answers come from a dict keyed by ``(claim, passages)``; on
generated answers that both parses read alike they must give the same numbers.
Where the parses differ, a test per case pins citemark's reading (and ALCE's, as
the regex reads it), as listed in ``docs/verifiers.md``.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citemark import Source
from citemark._judging.scorer.labels import classify_sources
from citemark._judging.scorer.reflist import find_reference_list
from citemark._judging.scorer.sentences import sentence_coverage
from citemark._judging.verifiers.base import Premise, Verdict, Verifier, VerifierIdentity
from citemark._judging.verifiers.reattribution import closeness_order, content_words
from citemark._judging.verifiers.support import (
    SupportRow,
    SupportRun,
    citation_support,
    citation_support_sync,
    sentence_claims,
)
from tests.strategies import answers, source_lists

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

IDENTITY = VerifierIdentity("lexical", "scripted", "test-1", "sha256:" + "0" * 64)
Key = tuple[str, tuple[str, ...]]


class ScriptedVerifier:
    """A `Verifier` whose verdicts come from a dict keyed by ``(claim, passages)``.

    An unscripted premise is a test failure (``KeyError``), unless ``default`` is
    given. Every batch is recorded, so calls can be counted.
    """

    def __init__(
        self,
        verdicts: Mapping[Key, bool | None],
        default: Callable[[Key], bool | None] | None = None,
    ) -> None:
        self.verdicts = verdicts
        self.default = default
        self.batches: list[list[Premise]] = []
        self.closed = False

    @property
    def identity(self) -> VerifierIdentity:
        return IDENTITY

    async def verify(self, premises: Sequence[Premise]) -> list[Verdict]:
        await asyncio.sleep(0)
        self.batches.append(list(premises))
        out = []
        for premise in premises:
            key = (premise.claim, premise.passages)
            if key in self.verdicts:
                entailed = self.verdicts[key]
            elif self.default is not None:
                entailed = self.default(key)
            else:
                raise KeyError(key)
            out.append(Verdict(entailed, None if entailed is not None else "call_failed"))
        return out

    async def aclose(self) -> None:
        self.closed = True

    @property
    def asked(self) -> list[Premise]:
        return [p for batch in self.batches for p in batch]


def test_scripted_verifier_is_a_verifier() -> None:
    assert isinstance(ScriptedVerifier({}), Verifier)


# ---------------------------------------------------------------------------------------
# ALCE, re-implemented from its published definitions.

_ALCE_MARKER = re.compile(r"\[(\d+)")  # eval.py reads a citation as "[" then digits


def alce_claim(sentence: str) -> str:
    """ALCE's cleaned claim: each "[n" (with one space before it) and every "]" dropped."""
    return re.sub(r" ?\[\d+", "", sentence).replace("]", "").strip()


def alce_refs(sentence: str) -> list[int]:
    """0-based document indices, in text order, repeats kept (``[1]`` is document 0)."""
    return [int(digits) - 1 for digits in _ALCE_MARKER.findall(sentence)]


@dataclass
class AlceRow:
    recall: float
    precision: float
    per_sentence: list[int]


def alce_row(
    sentences: list[str],
    docs: list[str],
    nli: Callable[[str, tuple[str, ...]], bool],
    at_most: int | None = 3,
) -> AlceRow | None:
    """Citation recall and precision of one answer, by ALCE's definitions.

    recall: a sentence scores 1 when the passages of all its citations, together,
    entail its claim; no citation (or one naming no document) scores 0. precision:
    citations of a sentence with recall 0 are wrong; with recall 1, a lone citation
    is right, and of several each is right unless it is irrelevant: it alone does
    not entail the claim, and the rest without it do. Precision is right citations
    over all citations counted, 0 with none; an answer with no sentence is skipped.
    """
    if not sentences:
        return None
    supported = 0
    right = 0
    counted = 0
    per_sentence = []
    for sentence in sentences:
        claim = alce_claim(sentence)
        refs = alce_refs(sentence)
        if not refs or any(ref >= len(docs) for ref in refs):
            per_sentence.append(0)
            continue
        if at_most is not None:
            refs = refs[:at_most]
        counted += len(refs)
        joint = nli(claim, tuple(docs[r] for r in refs))
        per_sentence.append(int(joint))
        supported += int(joint)
        if not joint:
            continue
        if len(refs) == 1:
            right += 1
            continue
        for position, ref in enumerate(refs):
            alone = nli(claim, (docs[ref],))
            rest = refs[:position] + refs[position + 1 :]
            if alone or not nli(claim, tuple(docs[r] for r in rest)):
                right += 1
    return AlceRow(
        recall=supported / len(sentences),
        precision=right / counted if counted else 0.0,
        per_sentence=per_sentence,
    )


def alce_run(rows: list[AlceRow | None]) -> tuple[float, float]:
    kept = [row for row in rows if row is not None]
    return (
        sum(r.recall for r in kept) / len(kept),
        sum(r.precision for r in kept) / len(kept),
    )


# ---------------------------------------------------------------------------------------
# Generated answers that both parses read alike: plain "[n]" markers before each full
# stop, distinct in a sentence, no code, no links, sentences split at ". ".

_VOCABULARY = ["alpha", "beta", "gamma", "delta", "paris", "rain", "tax", "law", "eu", "42"]


@dataclass
class Generated:
    docs: list[str]
    sentences: list[str]
    verdicts: dict[Key, bool]

    @property
    def answer(self) -> str:
        return " ".join(self.sentences)


@st.composite
def generated_rows(draw: st.DrawFn) -> Generated:
    n_docs = draw(st.integers(1, 6))
    docs = [f"document {i} says {draw(st.sampled_from(_VOCABULARY))}" for i in range(n_docs)]
    sentences: list[str] = []
    verdicts: dict[Key, bool] = {}
    for _ in range(draw(st.integers(1, 5))):
        words = draw(st.lists(st.sampled_from(_VOCABULARY), min_size=1, max_size=5))
        cited = draw(st.lists(st.integers(1, n_docs), unique=True, max_size=min(4, n_docs)))
        claim = " ".join(words).capitalize() + "."
        markers = "".join(f"[{n}]" for n in cited)
        body = claim[:-1] + (f" {markers}" if markers else "") + "."
        sentences.append(body)
        texts = [docs[n - 1] for n in cited]
        for size in range(1, len(texts) + 1):
            for subset in combinations(texts, size):
                verdicts.setdefault((claim, subset), draw(st.booleans()))
        for doc in docs:  # every source alone, for re-attribution
            verdicts.setdefault((claim, (doc,)), draw(st.booleans()))
    return Generated(docs, sentences, verdicts)


def _lookup(verdicts: dict[Key, bool]) -> Callable[[str, tuple[str, ...]], bool]:
    return lambda claim, passages: verdicts[claim, passages]


def _sources(docs: list[str]) -> list[Source]:
    return [Source(text=text, doc_id=f"d{i}") for i, text in enumerate(docs)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(generated_rows(), min_size=1, max_size=4), st.sampled_from([None, 1, 2, 3]))
def test_same_numbers_as_alce_on_answers_both_read_alike(
    rows: list[Generated], at_most: int | None
) -> None:
    merged: dict[Key, bool] = {}
    for row in rows:
        for key, value in row.verdicts.items():
            merged.setdefault(key, value)
    expected = [alce_row(r.sentences, r.docs, _lookup(merged), at_most) for r in rows]
    verifier = ScriptedVerifier(dict(merged))
    run = citation_support_sync(
        [SupportRow(r.answer, _sources(r.docs)) for r in rows],
        verifier,
        at_most_citations=at_most,
        reattribute=False,
    )
    for want, got, row in zip(expected, run.rows, rows, strict=True):
        assert want is not None
        assert [s.sentence.claim for s in got.sentences] == [alce_claim(s) for s in row.sentences]
        assert [s.recall for s in got.sentences] == want.per_sentence
        assert got.recall == pytest.approx(want.recall)
        assert got.precision == pytest.approx(want.precision)
    recall, precision = alce_run(expected)
    assert run.recall == pytest.approx(recall)
    assert run.precision == pytest.approx(precision)
    assert run.unjudged_sentences == run.unjudged_citations == 0
    # Identical premises are asked once, and at most three rounds are needed.
    asked = verifier.asked
    assert len(asked) == len(set(asked)) == run.premises
    assert run.batches == len(verifier.batches) <= 3


@settings(max_examples=100, deadline=None)
@given(st.lists(generated_rows(), min_size=1, max_size=3))
def test_reattribution_leaves_the_alce_numbers_alone(rows: list[Generated]) -> None:
    merged: dict[Key, bool] = {}
    for row in rows:
        for key, value in row.verdicts.items():
            merged.setdefault(key, value)
    inputs = [SupportRow(r.answer, _sources(r.docs)) for r in rows]
    plain = citation_support_sync(inputs, ScriptedVerifier(merged), reattribute=False)
    verifier = ScriptedVerifier(merged)
    with_others = citation_support_sync(inputs, verifier, max_calls=2)
    assert (with_others.recall, with_others.precision) == (plain.recall, plain.precision)
    for checked in with_others.rows:
        for judged in checked.sentences:
            for citation in judged.citations:
                found = citation.reattribution
                if citation.alone != "not_entailed":
                    assert found is None
                    continue
                assert found is not None
                assert len(found.tried) <= 2
                assert not set(found.tried) & set(judged.sentence.cited)
                assert set(found.supported_by_other_source) <= set(found.tried)


# ---------------------------------------------------------------------------------------
# The sentences are the scorer's.


@settings(max_examples=300, deadline=None)
@given(answers(), source_lists())
def test_sentences_are_the_scorers_sentences(answer: str, sources: list[Source]) -> None:
    claims = sentence_claims(answer, sources)
    # What the scorer hands sentence coverage, as CitationScorer._findings builds it.
    found = classify_sources(answer, sources)
    cited = [o.start for o in found.occurrences if o.kind == "resolved"]
    blanked = [*found.masked, *((o.start, o.end) for o in found.occurrences)]
    block = find_reference_list(answer, ((o.start, o.end, o.tag_at) for o in found.occurrences))
    if block is not None:
        blanked.append((block.start, block.end))
        cited = [at for at in cited if not block.start <= at < block.end]
    coverage = sentence_coverage(answer, blanked, cited)
    assert len(claims) == coverage.sentences
    assert sum(1 for c in claims if c.cited) == coverage.cited_sentences
    uncited = tuple(answer[c.start : c.end].strip() for c in claims if not c.cited)
    assert uncited == coverage.uncited_sentences


# ---------------------------------------------------------------------------------------
# Unjudged verdicts.


def test_a_sentence_without_a_verdict_is_left_out_and_counted() -> None:
    docs = ["one", "two"]
    answer = "Alpha [1]. Beta [1][2]. Gamma."
    verdicts: dict[Key, bool | None] = {
        ("Alpha.", ("one",)): None,
        ("Beta.", ("one", "two")): True,
        ("Beta.", ("one",)): False,
        ("Beta.", ("two",)): None,
    }
    run = citation_support_sync(
        [SupportRow(answer, _sources(docs))], ScriptedVerifier(verdicts), reattribute=False
    )
    (row,) = run.rows
    alpha, beta, gamma = row.sentences
    assert (alpha.status, alpha.recall, alpha.problem) == ("unjudged", None, "call_failed")
    assert [c.precise for c in alpha.citations] == [None]
    assert (beta.status, beta.recall) == ("judged", 1)
    assert (gamma.status, gamma.recall, gamma.citations) == ("uncited", 0, ())
    # [1] does not entail alone, and its rest ([2] alone) has no verdict: unjudged.
    # [2] has no verdict alone, but its rest ([1] alone) does not entail: [2] is
    # needed, so it is precise whatever it says alone.
    assert [c.precise for c in beta.citations] == [None, True]
    assert row.recall == pytest.approx(1 / 2)  # Beta 1, Gamma 0; Alpha left out
    assert row.precision == pytest.approx(1.0)  # one decided citation, precise
    assert (row.unjudged_sentences, row.unjudged_citations) == (1, 2)
    assert (run.unjudged_sentences, run.unjudged_citations) == (1, 2)


def test_a_row_whose_every_verdict_is_missing_has_no_figures() -> None:
    run = citation_support_sync(
        [SupportRow("Alpha [1].", _sources(["one"]))],
        ScriptedVerifier({}, default=lambda _key: None),
    )
    (row,) = run.rows
    assert (row.recall, row.precision) == (None, None)
    assert (run.recall, run.precision) == (None, None)


def test_no_citation_at_all_is_precision_zero_and_no_sentence_is_no_figure() -> None:
    run = citation_support_sync(
        [SupportRow("Nothing cited.", _sources(["one"])), SupportRow("[1]", _sources(["one"]))],
        ScriptedVerifier({}),
    )
    uncited, empty = run.rows
    assert (uncited.recall, uncited.precision) == (0.0, 0.0)
    assert (empty.recall, empty.precision, empty.sentences) == (None, None, ())
    assert (run.recall, run.precision) == (0.0, 0.0)
    assert "citation recall 0.00, precision 0.00 over 1 sentence" in run.summary()


def test_wrong_verdict_count_is_refused_without_the_text() -> None:
    class Short(ScriptedVerifier):
        async def verify(self, premises: Sequence[Premise]) -> list[Verdict]:
            return (await super().verify(premises))[:-1]

    private_text = "Secret claim text"
    with pytest.raises(ValueError, match="0 verdicts for 1 premise") as caught:
        citation_support_sync(
            [SupportRow(f"{private_text} [1].", _sources(["hidden passage"]))],
            Short({}, default=lambda _key: True),
        )
    assert "Secret" not in str(caught.value)
    assert "hidden" not in str(caught.value)


def test_row_json_carries_the_verifier_identity() -> None:
    verifier = ScriptedVerifier({}, default=lambda key: key[1] == ("two",))
    run: SupportRun = citation_support_sync(
        [SupportRow("Alpha [1].", _sources(["one", "two"]))], verifier
    )
    row = run.rows[0].as_dict()
    assert row["verifier"] == IDENTITY.as_dict()
    assert row["advisory"] is True
    sentences = row["sentences"]
    assert isinstance(sentences, list)
    (first,) = sentences
    assert first["claim"] == "Alpha."
    (citation,) = first["citations"]
    assert citation["alone"] == "not_entailed"
    assert citation["reattribution"] == {
        "tried": [2],
        "supported_by_other_source": [2],
        "unjudged": 0,
    }
    assert run.as_dict()["verifier"] == IDENTITY.as_dict()


# ---------------------------------------------------------------------------------------
# Where the two parses differ (docs/verifiers.md, "ALCE-comparable metrics").

FIVE = _sources(["zero", "one", "two", "three", "four"])


def _one(answer: str, sources: list[Source] = FIVE, base: int = 1) -> tuple[str, tuple[int, ...]]:
    (claim,) = sentence_claims(answer, sources, index_base=base)
    return claim.claim, claim.cited


def test_zero_marker() -> None:
    # ALCE: [0] is document index -1, the LAST document.
    assert alce_refs("Alpha [0].") == [-1]
    # citemark, numbering from 1: [0] names nothing; from 0, the first source.
    (claim,) = sentence_claims("Alpha [0].", FIVE)
    assert (claim.claim, claim.cited, claim.unresolved_markers) == ("Alpha.", (), 1)
    assert _one("Alpha [0].", base=0) == ("Alpha.", (0,))


def test_markers_in_code() -> None:
    assert alce_refs("Use `x[1]` here [2].") == [0, 1]
    assert _one("Use `x[1]` here [2].") == ("Use `x[1]` here.", (2,))
    claims = sentence_claims("Set it:\n\n```\nx = a[3]\n```\n\nDone [1].", FIVE)
    assert [(c.claim, c.cited) for c in claims] == [("Set it:", ()), ("Done.", (1,))]


def test_link_text_and_destination() -> None:
    # Link text: both cite 1; ALCE's claim keeps the destination, citemark's does not.
    assert alce_refs("Alpha [1](http://a.example/x).") == [0]
    assert alce_claim("Alpha [1](http://a.example/x).") == "Alpha(http://a.example/x)."
    assert _one("Alpha [1](http://a.example/x).") == ("Alpha.", (1,))
    # A destination: ALCE cites 2; citemark reads no marker there.
    assert alce_refs("Alpha [see](http://a.example/[2]) [1].") == [1, 0]
    assert _one("Alpha [see](http://a.example/[2]) [1].") == (
        "Alpha [see](http://a.example/[2]).",
        (1,),
    )


def test_reference_list() -> None:
    answer = "Alpha [1]. Beta [2].\n\nReferences:\n[1] First title\n[2] Second title"
    claims = sentence_claims(answer, FIVE)
    # The list's lines are no claims for citemark; ALCE's tokenizer makes them sentences
    # each citing its entry ("[1] First title" cites document 0).
    assert [(c.claim, c.cited) for c in claims] == [("Alpha.", (1,)), ("Beta.", (2,))]
    assert alce_refs("[1] First title") == [0]


def test_near_miss_with_a_space() -> None:
    assert alce_refs("Alpha [ 1].") == []
    assert alce_claim("Alpha [ 1].") == "Alpha [ 1."
    (claim,) = sentence_claims("Alpha [ 1].", FIVE)
    assert (claim.claim, claim.cited, claim.unresolved_markers) == ("Alpha [ 1].", (), 0)


def test_comma_group() -> None:
    assert alce_refs("Alpha [1, 2].") == [0]
    assert alce_claim("Alpha [1, 2].") == "Alpha, 2."
    assert _one("Alpha [1, 2].") == ("Alpha.", (1, 2))


def test_repeated_marker() -> None:
    assert alce_refs("Alpha [1][1].") == [0, 0]
    assert _one("Alpha [1][1].") == ("Alpha.", (1,))


def test_out_of_range_marker() -> None:
    # ALCE: any citation past the documents makes the sentence's recall 0, no citation counted.
    row = alce_row(["Alpha [1][9]."], ["zero"], lambda _c, _p: True)
    assert row is not None
    assert (row.recall, row.precision) == (0.0, 0.0)
    # citemark: judged on what resolves; the out-of-range marker is counted beside it.
    (claim,) = sentence_claims("Alpha [1][9].", FIVE[:1])
    assert (claim.claim, claim.cited, claim.unresolved_markers) == ("Alpha.", (1,), 1)


def test_marker_after_the_full_stop_belongs_to_the_sentence_before() -> None:
    claims = sentence_claims("Alpha. [1] Beta [2].", FIVE)
    assert [(c.claim, c.cited) for c in claims] == [("Alpha.", (1,)), ("Beta.", (2,))]


def test_blank_source_is_not_a_citation() -> None:
    sources = _sources(["one", "   "])
    (claim,) = sentence_claims("Alpha [1][2].", sources)
    assert (claim.cited, claim.unresolved_markers) == ((1,), 1)


# ---------------------------------------------------------------------------------------
# Re-attribution: ordered by closeness, ties by position, bounded per citation.


def test_closeness_order_is_overlap_then_position() -> None:
    claim = "The Eiffel tower opened in 1889 in Paris."
    candidates = [
        (1, "A tower in Paris."),  # tower, paris: 2
        (2, "Unrelated text about rain."),  # 0
        (3, "Eiffel tower, Paris, 1889."),  # 4
        (4, "The tower and the river."),  # tower: 1 ("the", "and" are stop words)
        (5, "Paris has a tower."),  # 2, after 1 by position
    ]
    assert closeness_order(claim, candidates) == [3, 1, 5, 4, 2]
    assert content_words(claim) == {"eiffel", "tower", "opened", "1889", "paris"}


def test_reattribution_is_bounded_and_deterministic() -> None:
    docs = [
        "nothing here",  # 1, cited
        "cats sleep",  # 2
        "paris tower opened 1889",  # 3: closest
        "the tower in paris",  # 4
        "eiffel",  # 5
        "paris",  # 6
    ]
    claim = "Eiffel tower in Paris opened 1889."
    answer = "Eiffel tower in Paris opened 1889 [1]."

    def run(max_calls: int) -> tuple[tuple[int, ...], tuple[int, ...], int]:
        verifier = ScriptedVerifier({}, default=lambda key: key[1] in (("eiffel",), ("paris",)))
        result = citation_support_sync(
            [SupportRow(answer, _sources(docs))], verifier, max_calls=max_calls
        )
        (citation,) = result.rows[0].sentences[0].citations
        assert citation.reattribution is not None
        other = [p for p in verifier.asked if p.passages != ("nothing here",)]
        assert all(p.claim == claim for p in verifier.asked)
        return (
            citation.reattribution.tried,
            citation.reattribution.supported_by_other_source,
            len(other),
        )

    assert run(1) == ((3,), (), 1)
    assert run(3) == ((3, 4, 5), (5,), 3)
    assert run(5) == ((3, 4, 5, 6, 2), (5, 6), 5)
    assert run(9) == run(5)  # bounded by the other sources there are
    assert run(3) == run(3)


def test_reattribution_numbers_follow_the_answers_base() -> None:
    verifier = ScriptedVerifier({}, default=lambda key: key[1] == ("zero",))
    result = citation_support_sync(
        [SupportRow("Alpha [1].", _sources(["zero", "one"]), index_base=0)], verifier
    )
    (citation,) = result.rows[0].sentences[0].citations
    assert citation.source == 1
    assert citation.reattribution is not None
    assert citation.reattribution.supported_by_other_source == (0,)


def test_reattribution_off_asks_only_what_alce_asks() -> None:
    verifier = ScriptedVerifier({}, default=lambda _key: False)
    citation_support_sync(
        [SupportRow("Alpha [1][2].", _sources(["one", "two", "three"]))],
        verifier,
        reattribute=False,
    )
    # Recall 0: ALCE asks nothing more than the joint premise.
    assert [p.passages for p in verifier.asked] == [("one", "two")]


def test_identical_premises_across_rows_are_asked_once() -> None:
    verifier = ScriptedVerifier({}, default=lambda _key: True)
    rows = [SupportRow("Alpha [1][2].", _sources(["one", "two"])) for _ in range(50)]
    run = citation_support_sync(rows, verifier)
    assert run.recall == run.precision == 1.0
    # Round 1: the joint premise and each passage alone; nothing else is needed.
    assert [len(b) for b in verifier.batches] == [3]


def test_bad_options_are_refused() -> None:
    rows = [SupportRow("Alpha [1].", _sources(["one"]))]
    with pytest.raises(ValueError, match="at_most_citations"):
        citation_support_sync(rows, ScriptedVerifier({}), at_most_citations=0)
    with pytest.raises(ValueError, match="max_calls"):
        citation_support_sync(rows, ScriptedVerifier({}), max_calls=-1)
    with pytest.raises(ValueError, match="index_base"):
        citation_support_sync([SupportRow("A [1].", _sources(["one"]), 2)], ScriptedVerifier({}))


def test_async_entry_point() -> None:
    verifier = ScriptedVerifier({}, default=lambda _key: True)
    run = asyncio.run(citation_support([SupportRow("Alpha [1].", _sources(["one"]))], verifier))
    assert (run.recall, run.precision, run.batches) == (1.0, 1.0, 1)
