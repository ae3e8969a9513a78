"""The LangSmith-style evaluator: deterministic score, judge opinion in the comment."""

from __future__ import annotations

from types import SimpleNamespace

from fakes import DOCUMENTS
from langchain_core.language_models import FakeListChatModel
from langchain_core.messages import AIMessage

from citemark import CitedAnswer
from langchain_citemark import LangChainChat, make_citation_evaluator


def run(outputs, inputs=None):
    return SimpleNamespace(outputs=outputs, inputs=inputs or {})


class TestEvaluator:
    def test_valid_citation_scores_1(self):
        """Citations that name given documents score 1."""
        result = make_citation_evaluator()(
            run({"answer": "Filed [1].", "context": DOCUMENTS}), None
        )
        assert {
            "key": "citation_validity",
            "score": 1,
            "comment": "resolved: 1 distinct citation(s)",
        } == result

    def test_fabrication_scores_0(self):
        """A marker naming no document scores 0."""
        result = make_citation_evaluator()(
            run({"answer": AIMessage(content="x [4]")}, {"documents": DOCUMENTS}), None
        )
        assert 0 == result["score"]
        assert "out_of_range: marker [4] names no document (3 given)" == result["comment"]

    def test_abstention_scores_1(self):
        """An abstention is valid."""
        result = make_citation_evaluator()(
            run({"output": CitedAnswer(text="No idea.")}, {"documents": DOCUMENTS}), None
        )
        assert (1, "abstained: 0 distinct citation(s)") == (result["score"], result["comment"])

    def test_unassessed_has_no_score(self):
        """Without documents there is no score, never an invented one."""
        result = make_citation_evaluator()(run({"answer": "x [1]"}), None)
        assert (None, "unassessed: no documents in the run") == (result["score"], result["comment"])

    def test_judge_only_comments(self):
        """A judge saying 'not faithful' changes the comment, never the score."""
        reply = '{"faithful": false, "unsupported_claims": ["Filed"], "reasoning": "r"}'
        judge = LangChainChat(FakeListChatModel(responses=[reply]))
        result = make_citation_evaluator(judge)(
            run({"answer": "Filed [1].", "context": DOCUMENTS}, {"question": "q"}), None
        )
        assert 1 == result["score"]
        assert "not faithful (1 unsupported claim(s))" in result["comment"]

    def test_unusable_judge_reply_is_reported(self):
        """A malformed judge reply is named as unusable, and the score stands."""
        judge = LangChainChat(FakeListChatModel(responses=["yes, faithful"]))
        result = make_citation_evaluator(judge)(
            run({"answer": "Filed [1].", "context": DOCUMENTS}), None
        )
        assert 1 == result["score"]
        assert "gave no usable opinion: JudgeError" in result["comment"]
