"""Structured-output citations over LlamaIndex's real structured paths.

Each path is LlamaIndex's own: ``llm.structured_predict`` (an ``LLMTextCompletionProgram``
over the scripted ``CustomLLM``, a ``FunctionCallingProgram`` over LlamaIndex's
``MockFunctionCallingLLM``), ``llm.as_structured_llm``, and a ``RetrieverQueryEngine``
built with ``output_cls=``. The nodes come from a real ``VectorStoreIndex``. Each
rejection is shown beside the naive reading, ``nodes[source_id - 1]``, which trusts
the model's ids and quotes.
"""

from __future__ import annotations

import json

import pytest
from li_fakes import APACHE, BSD, QUESTION, index_of_nodes
from llama_index.core.base.llms.types import ToolCallBlock
from llama_index.core.base.response.schema import PydanticResponse, Response
from llama_index.core.llms import ChatMessage
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.program import FunctionCallingProgram, LLMTextCompletionProgram
from llama_index.core.program.utils import get_program_for_llm
from llama_index.core.prompts import PromptTemplate
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode
from pydantic import BaseModel

from citemark import (
    MarkerOutOfRangeError,
    QuoteNotInSourceError,
    StructuredAnswerError,
    SynthesisError,
)
from llama_index.postprocessor.citemark import CitationPostprocessor, number_nodes
from llama_index.postprocessor.citemark.testing import ScriptedLLM
from llama_index.query_engine.citemark import (
    StructuredCitedResponse,
    resolve_structured_nodes,
    resolve_structured_response,
)


class CitedAnswer(BaseModel):
    """An answer and the numbers of the sources that justify it."""

    answer: str
    citations: list[int]


class Citation(BaseModel):
    """One source number and a verbatim quote from it."""

    source_id: int
    quote: str


class QuotedAnswer(BaseModel):
    """An answer and verbatim quotes from the sources that justify it."""

    answer: str
    citations: list[Citation]


PROMPT = PromptTemplate(
    "Answer from the numbered sources; cite each by its number.\n\n{context}\n\n"
    "Question: {question}"
)
REAL = "the date such litigation is filed"  # in APACHE, shown as [1]


def shown_nodes():
    """The retrieved nodes, numbered: [1] is APACHE, [2] is BSD (ties break by id)."""
    retrieved = index_of_nodes([APACHE, BSD]).as_retriever().retrieve(QUESTION)
    return number_nodes(retrieved)


def context(nodes):
    return "\n\n".join(item.node.get_content(MetadataMode.LLM) for item in nodes)


def scripted_predict(output_cls, reply):
    """``structured_predict`` over the scripted CustomLLM: an LLMTextCompletionProgram."""
    nodes = shown_nodes()
    llm = ScriptedLLM(replies=[json.dumps(reply)])
    assert isinstance(get_program_for_llm(output_cls, PROMPT, llm), LLMTextCompletionProgram)
    output = llm.structured_predict(output_cls, PROMPT, context=context(nodes), question=QUESTION)
    return output, nodes, llm


def function_calling_llm(output_cls, arguments):
    """LlamaIndex's MockFunctionCallingLLM, answering with a call of the schema tool."""

    def reply(messages, **kwargs):
        call = ToolCallBlock(
            tool_call_id="call_0", tool_name=output_cls.__name__, tool_kwargs=arguments
        )
        return ChatMessage(role="assistant", blocks=[call])

    return MockFunctionCallingLLM(response_generator=reply)


def naive_nodes(output, nodes):
    """The naive reading: ``nodes[n - 1]`` for every id the model wrote."""
    return [nodes[c - 1].node.node_id for c in output.citations]


def naive_quotes(output, nodes):
    return [(nodes[c.source_id - 1].node.node_id, c.quote) for c in output.citations]


class TestStructuredPredict:
    def test_a_right_answer_maps_back_to_the_nodes(self):
        reply = {"answer": "On filing.", "citations": [{"source_id": 1, "quote": REAL}]}
        output, nodes, llm = scripted_predict(QuotedAnswer, reply)
        checked = resolve_structured_nodes(output, nodes)
        assert isinstance(checked, StructuredCitedResponse)
        assert [(1, "a-apache", "Apache")] == [
            (c.marker, c.chunk_id, c.doc_id) for c in checked.citations
        ]
        assert ["a-apache"] == [item.node.node_id for item in checked.cited_nodes]
        assert "cite_as: [1]" in llm.prompts[0]

    def test_an_out_of_range_id_is_rejected_where_the_naive_reading_crashes(self):
        output, nodes, _ = scripted_predict(CitedAnswer, {"answer": "On filing.", "citations": [3]})
        with pytest.raises(IndexError):
            naive_nodes(output, nodes)
        with pytest.raises(MarkerOutOfRangeError) as caught:
            resolve_structured_nodes(output, nodes)
        assert (3, 2, 1) == (caught.value.marker, caught.value.valid_count, caught.value.index_base)

    def test_id_zero_is_rejected_where_the_naive_reading_wraps_around(self):
        """Sources are [1] and [2]; ``nodes[0 - 1]`` silently reads the last node."""
        output, nodes, _ = scripted_predict(CitedAnswer, {"answer": "Keep it.", "citations": [0]})
        assert ["b-bsd"] == naive_nodes(output, nodes)
        with pytest.raises(MarkerOutOfRangeError):
            resolve_structured_nodes(output, nodes)

    def test_a_wrong_quote_is_rejected_through_a_function_calling_program(self):
        """The FunctionCallingProgram path; the naive reading accepts the invented quote."""
        arguments = {"answer": "On filing.", "citations": [{"source_id": 1, "quote": "on day 30"}]}
        llm = function_calling_llm(QuotedAnswer, arguments)
        nodes = shown_nodes()
        assert isinstance(get_program_for_llm(QuotedAnswer, PROMPT, llm), FunctionCallingProgram)
        output = llm.structured_predict(
            QuotedAnswer, PROMPT, context=context(nodes), question=QUESTION
        )
        assert [("a-apache", "on day 30")] == naive_quotes(output, nodes)
        with pytest.raises(QuoteNotInSourceError) as caught:
            resolve_structured_nodes(output, nodes)
        assert (1, 1, None) == (
            caught.value.source_id,
            caught.value.citation,
            caught.value.in_other_source,
        )


class TestStructuredLLM:
    def test_a_misattributed_quote_names_the_node_that_holds_it(self):
        """as_structured_llm: ``raw`` is the parsed object; the quote is [1]'s, cited as [2]."""
        arguments = {"answer": "On filing.", "citations": [{"source_id": 2, "quote": REAL}]}
        structured = function_calling_llm(QuotedAnswer, arguments).as_structured_llm(QuotedAnswer)
        nodes = shown_nodes()
        response = structured.chat([ChatMessage(role="user", content=context(nodes))])
        assert [("b-bsd", REAL)] == naive_quotes(response.raw, nodes)
        with pytest.raises(QuoteNotInSourceError) as caught:
            resolve_structured_nodes(response.raw, nodes)
        assert (2, 1) == (caught.value.source_id, caught.value.in_other_source)

    def test_the_completion_form_is_checked_alike(self):
        llm = ScriptedLLM(replies=[json.dumps({"answer": "Keep it.", "citations": [2, 5]})])
        response = llm.as_structured_llm(CitedAnswer).complete("Sources: ...")
        with pytest.raises(MarkerOutOfRangeError) as caught:
            resolve_structured_nodes(response.raw, shown_nodes())
        assert 5 == caught.value.marker


def structured_engine(reply, index_base=1):
    """A RetrieverQueryEngine with output_cls=, numbered by CitationPostprocessor."""
    return RetrieverQueryEngine.from_args(
        index_of_nodes([APACHE, BSD]).as_retriever(),
        llm=ScriptedLLM(replies=[json.dumps(reply)]),
        node_postprocessors=[CitationPostprocessor(index_base=index_base)],
        output_cls=QuotedAnswer,
    )


class TestQueryEngine:
    def test_a_pydantic_response_is_checked_against_its_source_nodes(self):
        reply = {"answer": "On filing.", "citations": [{"source_id": 1, "quote": REAL}]}
        response = structured_engine(reply).query(QUESTION)
        assert isinstance(response, PydanticResponse)
        checked = resolve_structured_response(response)
        assert ["a-apache"] == [item.node.node_id for item in checked.cited_nodes]

    def test_an_out_of_range_id_in_a_pydantic_response_is_rejected(self):
        reply = {"answer": "On filing.", "citations": [{"source_id": 3, "quote": REAL}]}
        response = structured_engine(reply).query(QUESTION)
        with pytest.raises(IndexError):
            naive_quotes(response.response, response.source_nodes)
        with pytest.raises(MarkerOutOfRangeError):
            resolve_structured_response(response)

    def test_nodes_numbered_from_zero_are_read_from_zero(self):
        reply = {"answer": "On filing.", "citations": [{"source_id": 0, "quote": REAL}]}
        response = structured_engine(reply, index_base=0).query(QUESTION)
        checked = resolve_structured_response(response, index_base=0)
        assert [(0, "a-apache")] == [(c.marker, c.chunk_id) for c in checked.citations]
        assert ["a-apache"] == [item.node.node_id for item in checked.cited_nodes]
        with pytest.raises(SynthesisError, match="not numbered"):
            resolve_structured_response(response)  # the other base is refused, not guessed

    def test_a_response_without_an_object_is_refused(self):
        with pytest.raises(StructuredAnswerError):
            resolve_structured_response(PydanticResponse(None, source_nodes=shown_nodes()))
        with pytest.raises(TypeError):
            resolve_structured_response(Response("text", source_nodes=shown_nodes()))


class TestPositionalNodes:
    def test_unnumbered_nodes_are_read_by_position(self):
        """Nodes without cite_as (CitationQueryEngine's convention) map by position."""
        nodes = index_of_nodes([APACHE, BSD]).as_retriever().retrieve(QUESTION)
        checked = resolve_structured_nodes({"answer": "x", "citations": [2]}, nodes)
        assert ["b-bsd"] == [item.node.node_id for item in checked.cited_nodes]
