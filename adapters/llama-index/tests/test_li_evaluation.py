"""CitationEvaluator and StrictFaithfulnessEvaluator, alone and under BatchEvalRunner."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from li_fakes import APACHE, BSD, QUESTION, index_of_nodes, scorer_reply
from llama_index.core.base.response.schema import Response
from llama_index.core.evaluation import BatchEvalRunner, FaithfulnessEvaluator
from llama_index.core.evaluation.faithfulness import DEFAULT_EVAL_TEMPLATE
from llama_index.core.prompts import PromptTemplate
from llama_index.core.schema import NodeWithScore

from citemark import DEFAULT_JUDGE_PROMPT, ChatError, JudgeError, MappingReader
from citemark.testing import ScriptedChat
from llama_index.evaluation.citemark import (
    CitationEvaluator,
    CitemarkEvaluationResult,
    StrictFaithfulnessEvaluator,
)
from llama_index.postprocessor.citemark import CitationPostprocessor, number_nodes
from llama_index.postprocessor.citemark.testing import ScriptedLLM

ANSWER = "They terminate when litigation is filed [1]."
NODES = number_nodes([NodeWithScore(node=APACHE, score=0.9), NodeWithScore(node=BSD, score=0.8)])
# BatchEvalRunner.__init__ in llama-index-core 0.14.25 calls its own deprecated
# asyncio_module(); the warning is LlamaIndex's, about LlamaIndex.
RUNNER_WARNING = pytest.mark.filterwarnings("ignore:asyncio_module:DeprecationWarning")
FAITHFUL = json.dumps({"faithful": True, "unsupported_claims": [], "reasoning": "Stated in [1]."})


def response(text=ANSWER, nodes=NODES):
    return Response(text, source_nodes=list(nodes))


def evaluate(evaluator, text=ANSWER, nodes=NODES):
    return asyncio.run(evaluator.aevaluate_response(query=QUESTION, response=response(text, nodes)))


class TestDeterministicChecks:
    def test_resolved_citations_pass_with_node_ids_and_offsets(self):
        """aevaluate_response sees the nodes: citations keep node ids, documents and offsets."""
        result = evaluate(CitationEvaluator())
        assert isinstance(result, CitemarkEvaluationResult)
        assert (True, False, None, None) == (
            result.passing,
            result.invalid_result,
            result.invalid_reason,
            result.score,
        )
        assert [
            {
                "marker": 1,
                "doc_id": "Apache",
                "chunk_id": "a-apache",
                "start": 4891,
                "end": 4891 + len(APACHE.text),
                "uri": None,
                "text": APACHE.text,
            }
        ] == result.details["citations"]
        assert "1 citation names a source the answer was given. No judge was configured." == (
            result.feedback
        )

    def test_fabricated_marker_fails(self):
        """A marker beyond the nodes is a deterministic failure: passing False, not invalid."""
        result = evaluate(CitationEvaluator(), "Filed [3].")
        assert (False, False, ["fabricated_citation"]) == (
            result.passing,
            result.invalid_result,
            result.details["deterministic_failures"],
        )

    def test_string_contexts_are_numbered_by_position(self):
        """aevaluate(contexts=[...]) numbers the contexts [1]..[N] in order."""
        evaluator = CitationEvaluator()
        good = evaluator.evaluate(query=QUESTION, response="Notices [2].", contexts=["a", "b"])
        bad = evaluator.evaluate(query=QUESTION, response="Notices [3].", contexts=["a", "b"])
        assert (True, False) == (good.passing, bad.passing)
        assert "context-2" == good.details["citations"][0]["doc_id"]

    @pytest.mark.parametrize(
        ("text", "nodes", "reason"),
        [
            ("The sources do not say.", NODES, "no_resolved_citations"),
            ("   ", NODES, "no_answer"),
            (None, NODES, "no_answer"),
            ("Filed [1].", [], "empty_context"),
            ("Filed [1].", NODES[1:], "numbering_unknown"),
        ],
    )
    def test_rows_that_cannot_be_assessed_are_invalid(self, text, nodes, reason):
        """Un-assessable rows come back invalid_result=True with a stable reason code."""
        result = evaluate(CitationEvaluator(), text, nodes)
        assert (True, reason, None) == (
            result.invalid_result,
            result.invalid_reason,
            result.passing,
        )

    def test_unnumbered_nodes_are_read_by_position(self):
        """Nodes that were never numbered (CitationQueryEngine's) are numbered by position."""
        plain = [NodeWithScore(node=APACHE), NodeWithScore(node=BSD)]
        result = evaluate(CitationEvaluator(), "Notices [2].", plain)
        assert (True, "b-bsd") == (result.passing, result.details["citations"][0]["chunk_id"])

    def test_a_reader_fails_a_span_that_does_not_re_read(self):
        """With a reader, a cited span that differs in its document fails the row."""
        apache_document = "x" * 4891 + APACHE.text
        reader = MappingReader({"Apache": apache_document, "BSD": "changed since indexing"})
        evaluator = CitationEvaluator(reader=reader)
        good = evaluate(evaluator, "Filed [1].")
        bad = evaluate(evaluator, "Notices [2].")
        assert (True, [{"marker": 1, "outcome": "verified"}]) == (
            good.passing,
            good.details["verifications"],
        )
        assert (False, [{"marker": 2, "outcome": "drifted"}]) == (
            bad.passing,
            bad.details["verifications"],
        )
        assert "Failed: cited spans do not re-read from their documents: [2] drifted." == (
            bad.feedback
        )

    def test_the_sync_paths_keep_the_nodes(self):
        """evaluate_response (sync) reads the nodes too, unlike LlamaIndex's flattening."""
        result = CitationEvaluator().evaluate_response(query=QUESTION, response=response())
        assert "a-apache" == result.details["citations"][0]["chunk_id"]

    def test_an_error_inside_is_caught(self):
        """A judge double that runs out of replies becomes evaluation_error, not a raise."""
        result = evaluate(CitationEvaluator(judge=ScriptedChat([])))
        assert ("evaluation_error", {"error": "ScriptExhaustedError"}) == (
            result.invalid_reason,
            result.details,
        )

    def test_only_llms_and_chat_models_are_judges(self):
        """A judge that is neither a LlamaIndex LLM nor a ChatModel is refused."""
        with pytest.raises(TypeError):
            CitationEvaluator(judge="gpt-4")

    def test_prompts_mixin(self):
        """The judge prompt is citemark's own: nothing to get or update."""
        evaluator = CitationEvaluator()
        evaluator.update_prompts({})
        assert {} == evaluator.get_prompts()


class TestAdvisoryJudge:
    def test_the_judge_opinion_goes_to_feedback_not_passing(self):
        """A judge band of 0 leaves passing True: the deterministic checks passed."""
        reply = json.dumps(
            {
                "score": 0,
                "explanation": "Nothing supports it.",
                "verdicts": [{"occurrence": 1, "outcome": "unsupported"}],
            }
        )
        judge = ScriptedChat([reply], provider="p", model_name="m")
        result = evaluate(CitationEvaluator(judge=judge))
        assert (True, None, 0) == (result.passing, result.score, result.details["raw_score"])
        sha = result.details["judge"]["prompt_sha256"][:12]
        assert (
            "1 citation names a source the answer was given. "
            f"Advisory judge p/m (prompt {sha}) gave band 0/3: Nothing supports it."
        ) == result.feedback

    def test_a_llama_index_llm_is_a_judge(self):
        """A LlamaIndex LLM is bridged; its identity is recorded with the verdicts."""
        judge = ScriptedLLM(replies=[scorer_reply("supported")], model_name="judge-1")
        result = evaluate(CitationEvaluator(judge=judge))
        assert (True, 3) == (result.passing, result.details["raw_score"])
        assert ("ScriptedLLM", "judge-1") == (
            result.details["judge"]["provider"],
            result.details["judge"]["model"],
        )

    def test_a_malformed_reply_is_invalid(self):
        """A reply that fails validation makes the row invalid; passing stays deterministic."""
        result = evaluate(CitationEvaluator(judge=ScriptedChat(["YES"])))
        assert (True, "invalid_judge_output", True) == (
            result.invalid_result,
            result.invalid_reason,
            result.passing,
        )

    def test_a_failed_call_is_invalid(self):
        """A judge transport failure makes the row invalid with judge_call_failed."""
        error = ChatError("timed out", provider="p", model="m")
        result = evaluate(CitationEvaluator(judge=ScriptedChat([error])))
        assert "judge_call_failed" == result.invalid_reason

    def test_a_fabrication_fails_whatever_the_judge_says(self):
        """A fabricated marker fails the row even when the judge's reply is malformed."""
        result = evaluate(CitationEvaluator(judge=ScriptedChat(["YES"])), "Filed [1] and [5].")
        assert (False, False) == (result.passing, result.invalid_result)


@RUNNER_WARNING
class TestBatchEvalRunner:
    ROWS = 50

    @staticmethod
    def row_of(prompt):
        return int(re.search(r"Row (\d+)\?", prompt).group(1))

    def answer(self, prompt):
        row = self.row_of(prompt)
        return "Filed [9]." if row % 7 == 3 else f"Row {row}: filed [1]."

    def judge(self, prompt):
        row = self.row_of(prompt)
        malformed = [
            "YES",
            '{"score": NaN, "explanation": "x", "verdicts": []}',
            "Sure! " + scorer_reply("supported"),
            '{"score": true, "explanation": "x", "verdicts": []}',
            scorer_reply("supported")[:-1] + ', "score": 3}',
        ]
        return malformed[row // 5 % 5] if row % 5 == 0 else scorer_reply("supported")

    def test_all_rows_come_back_and_malformed_replies_are_invalid(self):
        """50 rows through a real engine and BatchEvalRunner: none lost, bad replies invalid."""
        engine = index_of_nodes([APACHE, BSD]).as_query_engine(
            llm=ScriptedLLM(replies=[self.answer] * self.ROWS),
            similarity_top_k=2,
            node_postprocessors=[CitationPostprocessor()],
        )
        judge = ScriptedLLM(replies=[self.judge] * self.ROWS)
        runner = BatchEvalRunner({"citations": CitationEvaluator(judge=judge)}, workers=8)
        queries = [f"Row {row}?" for row in range(self.ROWS)]
        results = asyncio.run(runner.aevaluate_queries(engine, queries=queries))["citations"]
        assert self.ROWS == len(results)
        by_row = {self.row_of(result.query): result for result in results}
        fabricated = {row for row in range(self.ROWS) if row % 7 == 3}
        malformed = {row for row in range(self.ROWS) if row % 5 == 0} - fabricated
        assert malformed == {row for row, r in by_row.items() if r.invalid_result}
        assert {"invalid_judge_output"} == {by_row[row].invalid_reason for row in malformed}
        assert fabricated == {row for row, r in by_row.items() if r.passing is False}
        assert set(range(self.ROWS)) - fabricated == {
            row for row, r in by_row.items() if r.passing is True
        }

    def test_response_strings_path_keeps_going_too(self):
        """aevaluate_response_strs with failing judge calls returns every row."""
        judge = ScriptedChat([ChatError("down", provider="p", model="m")] * 10)
        runner = BatchEvalRunner({"citations": CitationEvaluator(judge=judge)}, workers=4)
        results = runner.evaluate_response_strs(
            queries=["q"] * 10, response_strs=["Filed [1]."] * 10, contexts_list=[["a"]] * 10
        )["citations"]
        assert ["judge_call_failed"] * 10 == [result.invalid_reason for result in results]


ROW = {
    "query": "How long?",
    "response": "The license is perpetual.",
    "contexts": ["Fees are 5%."],
}


class TestStrictFaithfulness:
    @pytest.mark.parametrize(
        "reply",
        [
            "No. The eyes of the reader may deceive, but the context says nothing.",
            "no, not supported (yesterday's data)",
            "YES",
            '{"faithful": "true", "unsupported_claims": [], "reasoning": "ok"}',
        ],
    )
    def test_replies_the_builtin_coerces_are_invalid_here(self, reply):
        """Non-JSON or non-strict replies are invalid_judge_output, never a verdict."""
        strict = StrictFaithfulnessEvaluator(llm=ScriptedLLM(replies=[reply])).evaluate(**ROW)
        assert (True, "invalid_judge_output", None) == (
            strict.invalid_result,
            strict.invalid_reason,
            strict.passing,
        )

    def test_the_builtin_misreads_a_no(self):
        """LlamaIndex's evaluator passes "No. The eyes..." because "yes" is a substring."""
        reply = "No. The eyes of the reader may deceive, but the context says nothing."
        builtin = FaithfulnessEvaluator(llm=ScriptedLLM(replies=[reply])).evaluate(**ROW)
        assert (True, False) == (builtin.passing, builtin.invalid_result)

    def test_a_valid_verdict_is_read_correctly(self):
        """A strict JSON 'not faithful' verdict gives passing False and names the claim."""
        reply = json.dumps(
            {
                "faithful": False,
                "unsupported_claims": ["The license is perpetual."],
                "reasoning": "Only fees are stated.",
            }
        )
        result = StrictFaithfulnessEvaluator(llm=ScriptedLLM(replies=[reply])).evaluate(**ROW)
        assert (False, False, None) == (result.passing, result.invalid_result, result.score)
        assert "Only fees are stated. Unsupported claims: The license is perpetual." == (
            result.feedback
        )
        assert ["The license is perpetual."] == result.details["verdict"]["unsupported_claims"]

    def test_judge_identity_is_recorded(self):
        """details records the judge's provider, model and prompt SHA-256."""
        evaluator = StrictFaithfulnessEvaluator(
            llm=ScriptedChat([FAITHFUL], provider="p", model_name="m")
        )
        result = evaluator.evaluate(**{**ROW, "response": "Fees are 5% [1]."})
        assert (
            True,
            {"provider": "p", "model": "m", "prompt_sha256": evaluator.judge.prompt_sha256},
        ) == (
            result.passing,
            result.details["judge"],
        )

    def test_raise_error_raises_the_citemark_error_through_the_sync_path(self):
        """raise_error=True raises JudgeError intact, not LlamaIndex's 'nested async' error."""
        evaluator = StrictFaithfulnessEvaluator(llm=ScriptedLLM(replies=["YES"]), raise_error=True)
        with pytest.raises(JudgeError):
            evaluator.evaluate(**ROW)

    def test_an_unfaithful_verdict_never_raises(self):
        """raise_error=True does not turn an advisory 'not faithful' into an exception."""
        reply = json.dumps({"faithful": False, "unsupported_claims": [], "reasoning": "No."})
        evaluator = StrictFaithfulnessEvaluator(llm=ScriptedLLM(replies=[reply]), raise_error=True)
        assert evaluator.evaluate(**ROW).passing is False

    @pytest.mark.parametrize(
        ("row", "reason"),
        [
            ({"response": None, "contexts": ["a"]}, "no_answer"),
            ({"response": "x", "contexts": []}, "empty_context"),
            ({"response": "x", "contexts": None}, "empty_context"),
        ],
    )
    def test_missing_inputs_are_invalid_not_raised(self, row, reason):
        """Missing response or contexts give an invalid result, so a batch keeps going."""
        result = StrictFaithfulnessEvaluator(llm=ScriptedLLM()).evaluate(**row)
        assert reason == result.invalid_reason

    def test_prompts_mixin(self):
        """eval_template is exposed and updatable; a YES/NO template is refused."""
        evaluator = StrictFaithfulnessEvaluator(llm=ScriptedLLM())
        assert DEFAULT_JUDGE_PROMPT == evaluator.get_prompts()["eval_template"].get_template()
        mine = "Q: {question}\nA: {answer}\nS: {sources}\nReply with the JSON verdict."
        evaluator.update_prompts({"eval_template": PromptTemplate(mine)})
        assert mine == evaluator.judge.prompt_template
        with pytest.raises(ValueError, match="prompt template must use exactly"):
            StrictFaithfulnessEvaluator(llm=ScriptedLLM(), eval_template=DEFAULT_EVAL_TEMPLATE)

    @RUNNER_WARNING
    def test_under_batch_eval_runner(self):
        """Mixed replies through BatchEvalRunner: every row returns, each read strictly."""
        replies = [FAITHFUL if k % 2 else "Yes, supported." for k in range(10)]
        judge = ScriptedLLM(replies=replies)
        runner = BatchEvalRunner(
            {"faithfulness": StrictFaithfulnessEvaluator(llm=judge)}, workers=1
        )
        results = runner.evaluate_response_strs(
            queries=["q"] * 10,
            response_strs=["Fees are 5%."] * 10,
            contexts_list=[["Fees are 5%."]] * 10,
        )["faithfulness"]
        assert [None, True] * 5 == [result.passing for result in results]
