"""Support verifiers in the LangChain and LangSmith evaluators: advisory, identified, never a gate.

Every part is real: citemark's `LexicalVerifier`, a `JudgeVerifier` asking LangChain's
own ``FakeListChatModel`` through `LangChainChat`, an LCEL chain as the evaluated
target, and ``langsmith.evaluate`` / ``aevaluate`` in local mode against a recording
server on 127.0.0.1 (the ``recording_client`` fixture: nothing may be uploaded). The scripted
verifier below is a real class implementing the `Verifier` protocol, so a test decides
each verdict.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
import warnings
from types import SimpleNamespace

import langsmith
import pytest
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langsmith.evaluation import EvaluationResult
from langsmith.schemas import Example
from test_langsmith_evaluators import client  # noqa: F401 - the fixture, for recording_client

from citemark.verifiers import (
    JudgeVerifier,
    LexicalVerifier,
    Premise,
    SupportRow,
    Verdict,
    Verifier,
    VerifierIdentity,
    citation_support_sync,
)
from langchain_citemark import (
    LangChainChat,
    acitations_valid_evaluator,
    citation_feedback,
    citations_valid_evaluator,
    documents_to_sources,
    make_citation_evaluator,
)
from langchain_citemark.langsmith_evaluators import KEY, SUPPORT_KEY

DOCS = [
    Document("Patent licenses terminate on the date litigation is filed."),
    Document("Redistributions must retain the copyright notice."),
    Document("The software is provided without warranty."),
]
ANSWERS = {
    "good": "Patent licenses terminate when litigation is filed [1].",
    "misattributed": "Redistributions must retain the copyright notice [1].",
    "fabricated": "Patent licenses terminate [1]; notices stay [7].",
    "uncited": "The sources do not say.",
}
SECRET = "UNTRUSTED-ANSWER-TEXT"  # noqa: S105 - not a password


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


def never(premise: Premise) -> Verdict:
    return Verdict(entailed=False)


def undecided(premise: Premise) -> Verdict:
    return Verdict(None, "call_failed")


class RaisingVerifier(ScriptedVerifier):
    """A verifier that breaks its contract by raising, with row text in the message."""

    def __init__(self, error: Exception) -> None:
        super().__init__(never, "raising")
        self._error = error

    async def verify(self, premises):
        raise self._error


class WrongCountVerifier(ScriptedVerifier):
    """A verifier that answers a batch with one verdict too few."""

    async def verify(self, premises):
        return [Verdict(entailed=True) for _ in premises][1:]


@pytest.fixture
def recording_client(request):
    """test_langsmith_evaluators' ``client``: a LangSmith client over a recording server."""
    return request.getfixturevalue("client")


def run(outputs, inputs=None):
    return SimpleNamespace(outputs=outputs, inputs=inputs or {})


def deterministic(results):
    return [item for item in results if item["key"] != SUPPORT_KEY]


def support_of(results):
    (item,) = [item for item in results if item["key"] == SUPPORT_KEY]
    return item


class TestCitationFeedback:
    @pytest.mark.parametrize("case", list(ANSWERS))
    @pytest.mark.parametrize("verifier", [LexicalVerifier(), ScriptedVerifier(never)])
    def test_the_deterministic_result_is_the_same_with_a_verifier(self, case, verifier):
        """citations_valid (score and comment) is identical with and without a verifier."""
        plain = citation_feedback(ANSWERS[case], DOCS, "When?")
        verified = citation_feedback(ANSWERS[case], DOCS, "When?", verifier=verifier)
        assert plain == deterministic(verified)
        assert [KEY, SUPPORT_KEY] == [item["key"] for item in verified]

    def test_support_carries_the_verifier_identity_and_the_row(self):
        """citation_support: recall as score, the core's report line, RowSupport as metadata."""
        verifier = LexicalVerifier()
        answer = ANSWERS["good"] + " " + ANSWERS["misattributed"]
        item = support_of(citation_feedback(answer, DOCS, verifier=verifier))
        built = EvaluationResult(**item)
        expected = citation_support_sync(
            [SupportRow(answer, documents_to_sources(DOCS))], LexicalVerifier()
        )
        assert (SUPPORT_KEY, 0.5, expected.summary()) == (built.key, built.score, built.comment)
        assert expected.rows[0].as_dict() == built.metadata
        assert verifier.identity.as_dict() == built.metadata["verifier"]
        assert True is built.metadata["advisory"]
        assert built.comment.startswith("support, advisory, verifier lexical sha256:")
        # The misattributed sentence's citation is not supported; source 2 is.
        second = built.metadata["sentences"][1]["citations"][0]
        assert ("not_entailed", [2]) == (
            second["alone"],
            second["reattribution"]["supported_by_other_source"],
        )

    def test_an_undecided_verifier_gives_unjudged_counts_not_a_guess(self):
        """entailed=None everywhere: score None, recall n/a, every sentence counted unjudged."""
        answer = ANSWERS["good"] + " " + ANSWERS["misattributed"]
        item = support_of(citation_feedback(answer, DOCS, verifier=ScriptedVerifier(undecided)))
        meta = item["metadata"]
        assert (None, None, None, 2, 2) == (
            item["score"],
            meta["recall"],
            meta["precision"],
            meta["unjudged_sentences"],
            meta["unjudged_citations"],
        )
        assert ["call_failed", "call_failed"] == [s["problem"] for s in meta["sentences"]]
        assert "citation recall n/a, precision n/a over 2 sentences" in item["comment"]

    def test_an_abstention_counts_as_uncited(self):
        """An answer that cites nothing is not assessed by the check, and recall 0 by ALCE."""
        results = citation_feedback(ANSWERS["uncited"], DOCS, verifier=LexicalVerifier())
        assert None is results[0]["score"]
        item = support_of(results)
        assert (0.0, "uncited") == (item["score"], item["metadata"]["sentences"][0]["status"])

    def test_no_documents_means_no_support(self):
        """With no source to verify against, only the check's own result comes back."""
        verifier = ScriptedVerifier(never)
        results = citation_feedback("Filed [1].", [], verifier=verifier)
        assert ([KEY], []) == ([item["key"] for item in results], verifier.batches)

    @pytest.mark.parametrize(
        "verifier",
        [RaisingVerifier(RuntimeError(f"reply quoted {SECRET}")), WrongCountVerifier(never)],
    )
    def test_a_failing_verifier_costs_nothing_and_leaks_nothing(self, verifier):
        """A verifier that raises: the check stands, support names only the exception class."""
        answer = f"{SECRET} terminates on filing [1]."
        plain = citation_feedback(answer, DOCS)
        results = citation_feedback(answer, DOCS, verifier=verifier)
        assert plain == deterministic(results)
        item = support_of(results)
        kind = "RuntimeError" if isinstance(verifier, RaisingVerifier) else "ValueError"
        assert None is item["score"]
        assert item["comment"].endswith(f": not assessed, the verifier raised {kind}")
        assert {"advisory": True, "verifier": verifier.identity.as_dict(), "error": kind} == (
            item["metadata"]
        )
        assert SECRET not in json.dumps(item)

    def test_inside_a_running_event_loop(self):
        """In an async test citation_feedback scores and verifies on a worker thread."""

        async def inside():
            return citation_feedback(ANSWERS["good"], DOCS, verifier=LexicalVerifier())

        assert [True, 1.0] == [item["score"] for item in asyncio.run(inside())]

    def test_a_judge_verifier_over_a_langchain_fake_chat_model(self):
        """JudgeVerifier asking LangChain's FakeListChatModel: its identity and verdicts."""
        model = FakeListChatModel(responses=['{"entailed": true}'])
        verifier = JudgeVerifier(LangChainChat(model))
        item = support_of(citation_feedback(ANSWERS["good"], DOCS, verifier=verifier))
        assert (1.0, "judge") == (item["score"], item["metadata"]["verifier"]["kind"])
        assert verifier.identity.as_dict() == item["metadata"]["verifier"]

    def test_what_is_not_a_verifier_is_refused_at_once(self):
        """A verifier that does not follow the protocol is a TypeError when building."""
        with pytest.raises(TypeError, match=r"citemark\.verifiers\.Verifier"):
            citations_valid_evaluator(verifier="lexical")
        with pytest.raises(TypeError, match=r"citemark\.verifiers\.Verifier"):
            make_citation_evaluator(verifier=object())
        assert isinstance(ScriptedVerifier(never), Verifier)


class TestMakeCitationEvaluator:
    @pytest.mark.parametrize("case", list(ANSWERS))
    def test_score_is_the_same_support_joins_comment_and_metadata(self, case):
        """Support never moves the score; it is appended to the comment and in metadata."""
        outputs = {"answer": ANSWERS[case], "documents": DOCS}
        plain = make_citation_evaluator()(run(outputs), None)
        verifier = ScriptedVerifier(never)
        verified = make_citation_evaluator(verifier=verifier)(run(outputs), None)
        assert (plain["key"], plain["score"]) == (verified["key"], verified["score"])
        support = verified["metadata"]["citation_support"]
        assert verified["comment"].startswith(plain["comment"] + "; support, advisory, verifier ")
        assert (True, verifier.identity.as_dict(), 0.0) == (
            support["advisory"],
            support["verifier"],
            support["recall"],
        )
        assert EvaluationResult(**verified).metadata == verified["metadata"]

    def test_without_a_verifier_nothing_is_added(self):
        """No verifier: the result has exactly the keys it always had."""
        result = make_citation_evaluator()(run({"answer": ANSWERS["good"], "context": DOCS}), None)
        assert {"key", "score", "comment"} == set(result)


def example(case):
    inputs = {"case": case, "question": "When?", "documents": DOCS}
    return Example(id=uuid.uuid4(), dataset_id=uuid.uuid4(), inputs=inputs, outputs=None)


def lcel_target(cases):
    """Answers from a real LCEL chain (prompt | fake chat model | parser), one per case.

    The chain runs before ``evaluate``: invoked inside a local-mode ``evaluate`` it
    would be traced, and LangSmith 0.15 posts those child runs even with
    ``upload_runs=False`` (the recording server would see them).
    """
    prompt = ChatPromptTemplate.from_messages([("human", "{question}")])
    model = FakeListChatModel(responses=[ANSWERS[case] for case in cases])
    chain = prompt | model | StrOutputParser()
    answers = {case: chain.invoke({"question": case}) for case in cases}  # in order
    return lambda inputs: {"answer": answers[inputs["case"]]}


def local_evaluate(lsclient, evaluator, cases, *, asynchronous=False):
    """langsmith.evaluate (or aevaluate) with upload_runs=False; every result by case."""
    data = [example(case) for case in cases]
    target = lcel_target(cases)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".upload_runs. parameter is in beta")
        if asynchronous:

            async def atarget(inputs):
                return target(inputs)

            async def collect():
                results = await langsmith.aevaluate(
                    atarget,
                    data=data,
                    evaluators=[evaluator],
                    upload_runs=False,
                    client=lsclient,
                    max_concurrency=0,
                )
                return [row async for row in results]

            rows = asyncio.run(collect())
        else:
            rows = list(
                langsmith.evaluate(
                    target, data=data, evaluators=[evaluator], upload_runs=False, client=lsclient
                )
            )
    return {
        row["example"].inputs["case"]: {r.key: r for r in row["evaluation_results"]["results"]}
        for row in rows
    }


class TestLangSmithEvaluate:
    def test_evaluate_with_and_without_a_verifier(self, recording_client):
        """Through langsmith.evaluate: citations_valid unchanged, citation_support beside it."""
        lsclient, _ = recording_client
        cases = list(ANSWERS)
        plain = local_evaluate(lsclient, citations_valid_evaluator(), cases)
        verified = local_evaluate(
            lsclient, citations_valid_evaluator(verifier=LexicalVerifier()), cases
        )
        for case in cases:
            before, after = plain[case][KEY], verified[case][KEY]
            assert (before.score, before.comment) == (after.score, after.comment)
        scores = {case: verified[case][SUPPORT_KEY].score for case in cases}
        assert {"good": 1.0, "misattributed": 0.0, "fabricated": 0.0, "uncited": 0.0} == scores
        identity = LexicalVerifier().identity.as_dict()
        assert all(verified[c][SUPPORT_KEY].metadata["verifier"] == identity for c in cases)

    def test_mean_of_the_support_scores_is_the_run_recall(self, recording_client):
        """LangSmith's mean of citation_support over rows is ALCE's run recall."""
        lsclient, _ = recording_client
        cases = list(ANSWERS)
        verified = local_evaluate(
            lsclient, citations_valid_evaluator(verifier=LexicalVerifier()), cases
        )
        scores = [verified[c][SUPPORT_KEY].score for c in cases]
        sources = documents_to_sources(DOCS)
        whole = citation_support_sync(
            [SupportRow(ANSWERS[c], sources) for c in cases], LexicalVerifier()
        )
        assert whole.recall == sum(scores) / len(scores)

    def test_aevaluate_awaits_the_verifier_on_the_callers_loop(self, recording_client):
        """acitations_valid_evaluator awaits a scripted verifier; undecided verdicts stay None."""
        lsclient, _ = recording_client
        verifier = ScriptedVerifier(undecided)
        verified = local_evaluate(
            lsclient,
            acitations_valid_evaluator(verifier=verifier),
            ["good", "fabricated"],
            asynchronous=True,
        )
        assert (True, False) == (verified["good"][KEY].score, verified["fabricated"][KEY].score)
        support = verified["good"][SUPPORT_KEY]
        assert (None, 1, verifier.identity.as_dict()) == (
            support.score,
            support.metadata["unjudged_sentences"],
            support.metadata["verifier"],
        )
        assert verifier.batches
