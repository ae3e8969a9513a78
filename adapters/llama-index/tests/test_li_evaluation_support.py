"""CitationEvaluator with a support verifier: advisory, identified, never moves ``passing``.

Real parts throughout: a VectorStoreIndex over fixed nodes with ``MockEmbedding``, the
adapter's `ScriptedLLM` answering, `CitationPostprocessor`, ``BatchEvalRunner``,
citemark's `LexicalVerifier`, and a `JudgeVerifier` asking a LlamaIndex LLM through
`LlamaIndexChat`. The scripted verifier is a real class implementing the `Verifier`
protocol, so a test decides each verdict.
"""

from __future__ import annotations

import asyncio
import hashlib
import json

import pytest
from li_fakes import APACHE, BSD, QUESTION, index_of_nodes
from llama_index.core.base.response.schema import Response
from llama_index.core.evaluation import BatchEvalRunner
from llama_index.core.schema import NodeWithScore

from citemark.verifiers import (
    JudgeVerifier,
    LexicalVerifier,
    Premise,
    RowSupport,
    SupportRow,
    Verdict,
    VerifierIdentity,
    citation_support_sync,
)
from llama_index.evaluation.citemark import CitationEvaluator
from llama_index.postprocessor.citemark import (
    CitationPostprocessor,
    LlamaIndexChat,
    nodes_to_sources,
    number_nodes,
)
from llama_index.postprocessor.citemark.testing import ScriptedLLM

NODES = number_nodes([NodeWithScore(node=APACHE, score=0.9), NodeWithScore(node=BSD, score=0.8)])
ANSWERS = {
    "good": "Patent licenses terminate on the date litigation is filed [1].",
    "misattributed": "Redistributions must retain the copyright notice [1].",
    "fabricated": "Patent licenses terminate [1]; notices stay [7].",
    "uncited": "The sources do not say.",
}
UNTRUSTED = "UNTRUSTED-ANSWER-TEXT"
RUNNER_WARNING = pytest.mark.filterwarnings("ignore:asyncio_module:DeprecationWarning")


class ScriptedVerifier:
    """A real `Verifier`: each verdict from a rule over the premise; every batch kept."""

    def __init__(self, rule, name: str = "scripted") -> None:
        self._rule = rule
        self.batches: list[list[Premise]] = []
        digest = hashlib.sha256(name.encode()).hexdigest()
        self._identity = VerifierIdentity("scripted", name, "1", f"sha256:{digest}")

    @property
    def identity(self) -> VerifierIdentity:
        return self._identity

    async def verify(self, premises):
        self.batches.append(list(premises))
        return [self._rule(premise) for premise in premises]

    async def aclose(self) -> None:
        return None


class RaisingVerifier(ScriptedVerifier):
    """A verifier that breaks its contract by raising, with row text in the message."""

    async def verify(self, premises):
        msg = f"could not read {premises[0].claim}"
        raise RuntimeError(msg)


def never(premise: Premise) -> Verdict:
    return Verdict(entailed=False)


def undecided(premise: Premise) -> Verdict:
    return Verdict(entailed=None, problem="unparseable_reply")


def evaluate(evaluator, text):
    response = Response(text, source_nodes=list(NODES))
    return asyncio.run(evaluator.aevaluate_response(query=QUESTION, response=response))


def outcome(result):
    """What the deterministic check decided, support aside."""
    details = {k: v for k, v in result.details.items() if k != "support"}
    return (result.passing, result.score, result.invalid_result, result.invalid_reason, details)


class TestSupport:
    @pytest.mark.parametrize("case", list(ANSWERS))
    @pytest.mark.parametrize("verifier", [LexicalVerifier(), ScriptedVerifier(never)])
    def test_the_deterministic_result_is_the_same_with_a_verifier(self, case, verifier):
        """passing, score, validity and the scorer's details do not move with a verifier."""
        plain = evaluate(CitationEvaluator(), ANSWERS[case])
        verified = evaluate(CitationEvaluator(verifier=verifier), ANSWERS[case])
        assert outcome(plain) == outcome(verified)
        assert verified.feedback.startswith(plain.feedback + "\nsupport, advisory, verifier ")
        assert (None, None) == (plain.support, plain.details.get("support"))

    def test_support_carries_the_verifier_identity_and_the_row(self):
        """support is the RowSupport; details["support"] its JSON; feedback ends with its line."""
        verifier = LexicalVerifier()
        answer = ANSWERS["good"] + " " + ANSWERS["misattributed"]
        result = evaluate(CitationEvaluator(verifier=verifier), answer)
        expected = citation_support_sync(
            [SupportRow(answer, nodes_to_sources(NODES))], LexicalVerifier()
        )
        assert isinstance(result.support, RowSupport)
        assert expected.rows[0] == result.support
        assert expected.rows[0].as_dict() == result.details["support"]
        assert verifier.identity == result.support.verifier
        assert (0.5, True) == (result.support.recall, result.details["support"]["advisory"])
        assert result.feedback.endswith("\n" + expected.summary())
        citation = result.support.sentences[1].citations[0]
        assert ("not_entailed", (2,)) == (
            citation.alone,
            citation.reattribution.supported_by_other_source,
        )
        assert result.passing is True
        assert "support" not in result.model_dump()  # the typed field is excluded, as findings

    def test_an_undecided_verifier_gives_unjudged_counts_not_a_guess(self):
        """entailed=None: recall and precision None, the sentence counted unjudged with its code."""
        result = evaluate(CitationEvaluator(verifier=ScriptedVerifier(undecided)), ANSWERS["good"])
        support = result.support
        assert (None, None, 1, 1) == (
            support.recall,
            support.precision,
            support.unjudged_sentences,
            support.unjudged_citations,
        )
        assert ("unjudged", "unparseable_reply") == (
            support.sentences[0].status,
            support.sentences[0].problem,
        )
        assert result.feedback.endswith("citation recall n/a, precision n/a over 1 sentence")
        assert result.passing is True

    def test_a_raising_verifier_costs_nothing_and_leaks_nothing(self):
        """A verifier that raises: the check stands; only the exception's class is recorded."""
        answer = f"{UNTRUSTED} terminates on filing [1]."
        plain = evaluate(CitationEvaluator(), answer)
        verifier = RaisingVerifier(never, "raising")
        result = evaluate(CitationEvaluator(verifier=verifier), answer)
        assert outcome(plain) == outcome(result)
        expected = {
            "advisory": True,
            "verifier": verifier.identity.as_dict(),
            "error": "RuntimeError",
        }
        assert (None, expected) == (result.support, result.details["support"])
        assert result.feedback.endswith(": not assessed, the verifier raised RuntimeError")
        assert UNTRUSTED not in json.dumps(result.details["support"])
        assert UNTRUSTED not in result.feedback.split("\n")[-1]

    def test_no_sources_means_no_support(self):
        """A row with no source nodes is invalid as before, and the verifier is not asked."""
        verifier = ScriptedVerifier(never)
        response = Response("Filed [1].", source_nodes=[])
        result = asyncio.run(
            CitationEvaluator(verifier=verifier).aevaluate_response(
                query=QUESTION, response=response
            )
        )
        assert ("empty_context", None, []) == (
            result.invalid_reason,
            result.support,
            verifier.batches,
        )

    def test_the_sync_path_and_plain_contexts(self):
        """evaluate() with string contexts runs the verifier through LlamaIndex's asyncio_run."""
        result = CitationEvaluator(verifier=LexicalVerifier()).evaluate(
            query="q", response="Fees are 5% [1]. Cats purr [1].", contexts=["Fees are 5%."]
        )
        assert (True, 0.5, 0.5) == (result.passing, result.support.recall, result.support.precision)

    def test_a_judge_verifier_over_a_llama_index_llm(self):
        """JudgeVerifier asking a LlamaIndex LLM (bridged): its identity and verdict recorded."""
        llm = ScriptedLLM(replies=['{"entailed": true}'], model_name="judge-1")
        verifier = JudgeVerifier(LlamaIndexChat(llm))
        result = evaluate(CitationEvaluator(verifier=verifier), ANSWERS["good"])
        assert (1.0, "judge", "judge-1") == (
            result.support.recall,
            result.support.verifier.kind,
            result.support.verifier.version,
        )
        assert 1 == len(llm.prompts)

    def test_what_is_not_a_verifier_is_refused(self):
        """A verifier that does not follow the protocol is a TypeError at construction."""
        with pytest.raises(TypeError, match=r"citemark\.verifiers\.Verifier"):
            CitationEvaluator(verifier="lexical")
        assert CitationEvaluator(verifier=LexicalVerifier()).verifier is not None


@RUNNER_WARNING
class TestBatchEvalRunner:
    def test_a_real_engine_and_runner_with_and_without_a_verifier(self):
        """Through a query engine and BatchEvalRunner: passing per row unmoved, support beside it."""
        cases = list(ANSWERS)

        def run(evaluator):
            engine = index_of_nodes([APACHE, BSD]).as_query_engine(
                llm=ScriptedLLM(replies=[ANSWERS[case] for case in cases]),
                similarity_top_k=2,
                node_postprocessors=[CitationPostprocessor()],
            )
            runner = BatchEvalRunner({"citations": evaluator}, workers=1)
            results = asyncio.run(runner.aevaluate_queries(engine, queries=cases))["citations"]
            return {result.query: result for result in results}

        plain = run(CitationEvaluator())
        verifier = ScriptedVerifier(never)
        verified = run(CitationEvaluator(verifier=verifier))
        assert {case: outcome(plain[case]) for case in cases} == {
            case: outcome(verified[case]) for case in cases
        }
        assert dict.fromkeys(cases, 0.0) == {case: verified[case].support.recall for case in cases}
        assert {verifier.identity} == {verified[case].support.verifier for case in cases}
