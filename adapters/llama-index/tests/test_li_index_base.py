"""index_base=0 through every LlamaIndex entry point where numbers meet nodes.

Each pipeline is built with ``index_base=0`` over a real index and checked end to
end: the prompt shows ``cite_as: [0]`` for the first node, an answer citing ``[0]``
resolves to it, and ``[n]`` with ``n == len(nodes)`` is out of range. Each test then
runs the same assertion on the naive variant (the base not passed down: 1) and
shows it failing.
"""

from __future__ import annotations

import asyncio

import pytest
from li_fakes import APACHE, BSD, QUESTION, index_of_nodes
from llama_index.core.base.response.schema import Response, StreamingResponse
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import NodeWithScore, TextNode

from citemark import MarkerOutOfRangeError, SynthesisError, parse_markers
from llama_index.evaluation.citemark import CitationEvaluator
from llama_index.postprocessor.citemark import (
    CITATION_KEY,
    CITATION_QA_TEMPLATE,
    CitationPostprocessor,
    nodes_to_sources,
    number_nodes,
)
from llama_index.postprocessor.citemark.testing import ScriptedLLM
from llama_index.query_engine.citemark import CitedQueryEngine, resolve_response, validate_stream

# Both nodes retrieved, APACHE first (ties on mock embeddings break by node id).
ZERO = "They end on filing [0]; keep the notice [1]."
PAST_END = "Keep the notice [2]."
WANT = [(0, "a-apache"), (1, "b-bsd")]
BAD_BASES = [2, -1, True, False, "0", 1.0, None]


def retriever():
    return index_of_nodes([APACHE, BSD]).as_retriever(similarity_top_k=2)


def cited(response) -> list[tuple[int, str | None]]:
    return [(c.marker, c.chunk_id) for c in response.citations]


def fails(check) -> bool:
    """Whether ``check()`` fails: its assertion, or the pipeline rejecting the answer."""
    try:
        check()
    except (AssertionError, MarkerOutOfRangeError, SynthesisError):
        return True
    return False


def numbered(**options) -> list[NodeWithScore]:
    return number_nodes([NodeWithScore(node=APACHE), NodeWithScore(node=BSD)], **options)


# --- the postprocessor and the node helpers -----------------------------------------


class TestNumbering:
    def test_the_postprocessor_numbers_from_the_base(self):
        """CitationPostprocessor(index_base=0) writes cite_as [0], [1]; the default [1], [2]."""
        nodes = [NodeWithScore(node=APACHE, score=0.5), NodeWithScore(node=BSD, score=0.4)]
        zero = CitationPostprocessor(index_base=0).postprocess_nodes(nodes)
        assert ["[0]", "[1]"] == [n.node.metadata[CITATION_KEY] for n in zero]
        naive = CitationPostprocessor().postprocess_nodes(nodes)
        assert ["[1]", "[2]"] == [n.node.metadata[CITATION_KEY] for n in naive]
        zero_async = asyncio.run(CitationPostprocessor(index_base=0).apostprocess_nodes(nodes))
        assert ["[0]", "[1]"] == [n.node.metadata[CITATION_KEY] for n in zero_async]

    def test_nodes_are_read_back_with_the_base_they_were_numbered_with(self):
        """nodes_to_sources(index_base=0) reads [0]..[N-1]; reading them as 1-based is refused."""
        zero = numbered(index_base=0)
        assert ["a-apache", "b-bsd"] == [s.chunk_id for s in nodes_to_sources(zero, index_base=0)]
        with pytest.raises(SynthesisError, match=r"not numbered \[1\]\.\.\[2\] once each"):
            nodes_to_sources(zero)
        with pytest.raises(SynthesisError, match=r"not numbered \[0\]\.\.\[1\] once each"):
            nodes_to_sources(numbered(), index_base=0)

    def test_invalid_bases_are_refused(self):
        for value in BAD_BASES:
            with pytest.raises(ValueError, match="index_base must be 0 or 1"):
                CitationPostprocessor(index_base=value)
            with pytest.raises(ValueError, match="index_base must be 0 or 1"):
                numbered(index_base=value)
            with pytest.raises(ValueError, match="index_base must be 0 or 1"):
                nodes_to_sources(numbered(), index_base=value)
        assert CitationPostprocessor().index_base == 1


# --- the cited query engine ---------------------------------------------------------


def engine(*replies, streaming=False, **options):
    llm = ScriptedLLM(replies=list(replies))
    return CitedQueryEngine.from_args(retriever(), llm=llm, streaming=streaming, **options), llm


def check_engine(**options) -> None:
    """query and aquery show cite_as: [0] first and resolve [0] to the first node."""
    cited_engine, llm = engine(ZERO, ZERO, **options)
    response = cited_engine.query(QUESTION)
    assert "cite_as: [0]" in llm.prompts[0]
    assert "cite_as: [2]" not in llm.prompts[0]
    assert cited(response) == WANT
    assert cited(asyncio.run(cited_engine.aquery(QUESTION))) == WANT


def check_streaming_engine(**options) -> None:
    """A streaming engine resolves [0] split across tokens to the first node."""
    cited_engine, _ = engine(["They end [", "0]; keep [", "1]."], streaming=True, **options)
    response = cited_engine.query(QUESTION)
    assert "".join(response.response_gen) == "They end [0]; keep [1]."
    assert cited(response.cited_answer) == WANT


class TestQueryEngine:
    def test_a_zero_based_engine_numbers_and_resolves_from_zero(self):
        """from_args(index_base=0): the prompt shows [0], and [0] names the first node."""
        check_engine(index_base=0)
        assert fails(check_engine)

    def test_a_zero_based_streaming_engine_resolves_from_zero(self):
        check_streaming_engine(index_base=0)
        assert fails(check_streaming_engine)

    def test_the_marker_past_the_end_is_out_of_range(self):
        """[2] of two nodes is rejected from 0, whole and while streaming."""
        cited_engine, _ = engine(PAST_END, index_base=0)
        with pytest.raises(MarkerOutOfRangeError) as caught:
            cited_engine.query(QUESTION)
        assert (caught.value.marker, caught.value.valid_count, caught.value.index_base) == (
            2,
            2,
            0,
        )
        streaming, _ = engine(["Keep [", "2", "] too."], streaming=True, index_base=0)
        with pytest.raises(MarkerOutOfRangeError):
            list(streaming.query(QUESTION).response_gen)
        naive, _ = engine(PAST_END)  # the naive engine takes [2] as the second node
        assert cited(naive.query(QUESTION)) == [(2, "b-bsd")]

    def test_a_wrapped_engine_with_the_other_base_is_rejected_not_shifted(self):
        """A 0-numbering postprocessor under a base-1 wrapper is a numbering error."""
        wrapped = RetrieverQueryEngine.from_args(
            retriever(),
            llm=ScriptedLLM(replies=[ZERO, ZERO]),
            node_postprocessors=[CitationPostprocessor(index_base=0)],
            text_qa_template=CITATION_QA_TEMPLATE,
        )
        assert cited(CitedQueryEngine(wrapped, index_base=0).query(QUESTION)) == WANT
        with pytest.raises(SynthesisError, match="same index_base"):
            CitedQueryEngine(wrapped).query(QUESTION)

    def test_invalid_bases_are_refused(self):
        wrapped = RetrieverQueryEngine.from_args(retriever(), llm=ScriptedLLM())
        for value in BAD_BASES:
            with pytest.raises(ValueError, match="index_base must be 0 or 1"):
                CitedQueryEngine(wrapped, index_base=value)
            with pytest.raises(ValueError, match="index_base must be 0 or 1"):
                CitedQueryEngine.from_args(retriever(), llm=ScriptedLLM(), index_base=value)


# --- the responses ------------------------------------------------------------------


def check_responses(**options) -> None:
    nodes = numbered(index_base=0)
    assert cited(resolve_response(Response(ZERO, source_nodes=nodes), **options)) == WANT
    stream = validate_stream(StreamingResponse(iter(["end [", "0]; keep [1]."]), nodes), **options)
    assert "".join(stream.response_gen) == "end [0]; keep [1]."
    assert cited(stream.cited_answer) == WANT


class TestResponses:
    def test_responses_resolve_from_zero(self):
        """resolve_response and validate_stream with index_base=0 resolve [0] to node 0."""
        check_responses(index_base=0)
        assert fails(check_responses)

    def test_unnumbered_nodes_are_numbered_by_position_from_the_base(self):
        """Nodes without cite_as (CitationQueryEngine's convention) count from index_base."""
        plain = [NodeWithScore(node=APACHE), NodeWithScore(node=BSD)]
        assert cited(resolve_response(Response(ZERO, source_nodes=plain), index_base=0)) == WANT
        with pytest.raises(MarkerOutOfRangeError):
            resolve_response(Response(PAST_END, source_nodes=plain), index_base=0)
        with pytest.raises(MarkerOutOfRangeError):
            resolve_response(Response(ZERO, source_nodes=plain))  # naive: [0] names nothing

    def test_invalid_bases_are_refused(self):
        nodes = numbered()
        for value in BAD_BASES:
            with pytest.raises(ValueError, match="index_base must be 0 or 1"):
                resolve_response(Response("x", source_nodes=nodes), index_base=value)
            with pytest.raises(ValueError, match="index_base must be 0 or 1"):
                validate_stream(StreamingResponse(iter(["x"]), nodes), index_base=value)


# --- the evaluator ------------------------------------------------------------------


def check_evaluator(**options) -> None:
    evaluator = CitationEvaluator(**options)
    result = evaluator.evaluate_response(response=Response(ZERO, source_nodes=numbered(**options)))
    assert result.passing
    assert [(c.marker, c.chunk_id) for c in result.citations] == WANT
    nodes = numbered(index_base=0)
    result = evaluator.evaluate_response(response=Response(ZERO, source_nodes=nodes))
    assert result.passing


class TestEvaluator:
    def test_the_evaluator_reads_zero_numbered_nodes_from_zero(self):
        """CitationEvaluator(index_base=0) passes [0] and [1] over nodes numbered from 0."""
        check_evaluator(index_base=0)
        assert fails(check_evaluator)
        naive = CitationEvaluator().evaluate_response(
            response=Response(ZERO, source_nodes=numbered(index_base=0))
        )
        assert (naive.invalid_result, naive.invalid_reason) == (True, "numbering_unknown")

    def test_the_marker_past_the_end_fails(self):
        evaluator = CitationEvaluator(index_base=0)
        nodes = numbered(index_base=0)
        result = evaluator.evaluate_response(response=Response(PAST_END, source_nodes=nodes))
        assert (result.passing, len(result.findings.fabricated_citations)) == (False, 1)
        contexts = [APACHE.text, BSD.text]
        plain = asyncio.run(evaluator.aevaluate(response=ZERO, contexts=contexts))
        assert plain.passing
        assert not asyncio.run(evaluator.aevaluate(response=PAST_END, contexts=contexts)).passing

    def test_invalid_bases_are_refused(self):
        for value in BAD_BASES:
            with pytest.raises(ValueError, match="index_base must be 0 or 1"):
                CitationEvaluator(index_base=value)


def test_numbered_text_nodes_only_carry_the_header_they_were_given():
    """A zero-based cite_as line is the node's first rendered line (what the model sees)."""
    node = numbered(index_base=0)[0].node
    assert isinstance(node, TextNode)
    assert node.get_content("llm").splitlines()[0] == "cite_as: [0]"


def test_a_zero_based_qa_prompt_holds_only_the_headers_it_numbered():
    """The QA template's rules name no number: the prompt's markers are [0] and [1] only."""
    cited_engine, llm = engine(ZERO, index_base=0)
    cited_engine.query(QUESTION)
    assert [0, 1] == [o.number for o in parse_markers(llm.prompts[0])]
