"""The LangSmith-style evaluator: deterministic score, judge opinion in the comment."""

from __future__ import annotations

import json
from types import SimpleNamespace

from fakes import DOCUMENTS
from langchain_core.language_models import FakeListChatModel
from langchain_core.messages import AIMessage

from citemark import CitedAnswer
from citemark.evaluation import explain
from langchain_citemark import LangChainChat, make_citation_evaluator


def run(outputs, inputs=None):
    return SimpleNamespace(outputs=outputs, inputs=inputs or {})


def judge_reply(score: int, outcome: str) -> str:
    """A reply in the scorer's judge contract for one occurrence citing DOCUMENTS[0]."""
    verdict = {"occurrence": 1, "outcome": outcome}
    if outcome == "supported":
        verdict["context_span"] = "terminate as of the date"
    return json.dumps({"score": score, "explanation": "checked", "verdicts": [verdict]})


class TestEvaluator:
    def test_valid_citation_scores_1(self):
        """Citations that name given documents score 1."""
        result = make_citation_evaluator()(
            run({"answer": "Filed [1].", "context": DOCUMENTS}), None
        )
        assert {
            "key": "citation_validity",
            "score": 1,
            "comment": "every marker names a given document (1 resolved)",
        } == result

    def test_fabrication_scores_0(self):
        """A marker naming no document scores 0."""
        result = make_citation_evaluator()(
            run({"answer": AIMessage(content="x [4]")}, {"documents": DOCUMENTS}), None
        )
        assert 0 == result["score"]
        assert (
            "Failed: the response cites a marker outside the 3 sources it was given: 4."
            == result["comment"]
        )

    def test_abstention_is_unassessed(self):
        """An answer that cites nothing has no citations to check: no score, as in LlamaIndex."""
        result = make_citation_evaluator()(
            run({"output": CitedAnswer(text="No idea.")}, {"documents": DOCUMENTS}), None
        )
        assert None is result["score"]
        assert result["comment"].startswith("unassessed (no_resolved_citations)")

    def test_empty_output_documents_are_not_replaced_by_inputs(self):
        """A run that output no documents is checked against none, not its input documents."""
        result = make_citation_evaluator()(
            run({"answer": "Keep them [1].", "documents": []}, {"documents": DOCUMENTS}), None
        )
        assert None is result["score"]

    def test_unassessed_has_no_score(self):
        """Without documents there is no score, never an invented one."""
        result = make_citation_evaluator()(run({"answer": "x [1]"}), None)
        assert (None, "unassessed (empty_context): " + explain("empty_context")) == (
            result["score"],
            result["comment"],
        )

    def test_judge_only_comments(self):
        """A judge grading the citation unsupported changes the comment, never the score."""
        judge = LangChainChat(FakeListChatModel(responses=[judge_reply(0, "unsupported")]))
        result = make_citation_evaluator(judge)(
            run({"answer": "Filed [1].", "context": DOCUMENTS}, {"question": "q"}), None
        )
        assert 1 == result["score"]
        assert "band 0/3" in result["comment"]

    def test_unusable_judge_reply_is_reported(self):
        """A malformed judge reply is named as unusable, and the score stands."""
        judge = LangChainChat(FakeListChatModel(responses=["yes, faithful"]))
        result = make_citation_evaluator(judge)(
            run({"answer": "Filed [1].", "context": DOCUMENTS}), None
        )
        assert 1 == result["score"]
        assert "gave no usable opinion (invalid_judge_output)" in result["comment"]
