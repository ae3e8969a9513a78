"""CitedQueryEngine and the cited responses, over real indexes and query engines."""

from __future__ import annotations

import asyncio
import re

import pytest
from li_fakes import APACHE, BSD, QUESTION, index_of, index_of_nodes, license_documents
from llama_index.core.base.response.schema import AsyncStreamingResponse, Response
from llama_index.core.postprocessor import SimilarityPostprocessor
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.prompts import PromptTemplate
from llama_index.core.query_engine import CitationQueryEngine, RetrieverQueryEngine
from llama_index.core.response_synthesizers import ResponseMode
from llama_index.core.schema import QueryBundle

from citemark import (
    Citation,
    MarkerOutOfRangeError,
    NoSourcesError,
    Source,
    SynthesisError,
    Synthesizer,
)
from citemark.testing import ScriptedChat
from llama_index.postprocessor.citemark import CITATION_QA_TEMPLATE, CitationPostprocessor
from llama_index.postprocessor.citemark.testing import ScriptedLLM
from llama_index.query_engine.citemark import (
    CitedAsyncStreamingResponse,
    CitedQueryEngine,
    CitedResponse,
    CitedStreamingResponse,
    resolve_response,
    validate_stream,
)
from llama_index.query_engine.citemark import base as query_engine_base

GOOD = "They terminate when litigation is filed [1]; keep notices [2]."
APACHE_CITATION = Citation(
    marker=1,
    doc_id="Apache",
    chunk_id="a-apache",
    start=4891,
    end=4891 + len(APACHE.text),
    uri=None,
    text=APACHE.text,
)
BSD_CITATION = Citation(
    marker=2, doc_id="BSD", chunk_id="b-bsd", start=120, end=175, uri=None, text=BSD.text
)


def engine(*replies, streaming=False, **kwargs):
    llm = ScriptedLLM(replies=list(replies))
    retriever = index_of_nodes([APACHE, BSD]).as_retriever(similarity_top_k=2)
    return CitedQueryEngine.from_args(retriever, llm=llm, streaming=streaming, **kwargs), llm


class DropFirst(BaseNodePostprocessor):
    """A real postprocessor that drops the first node, to break the numbering."""

    def _postprocess_nodes(self, nodes, query_bundle=None):
        return nodes[1:]


class TestResolution:
    def test_markers_resolve_to_source_nodes(self):
        """query returns a CitedResponse whose citations carry node ids, documents, offsets."""
        cited, llm = engine(GOOD)
        response = cited.query(QUESTION)
        assert isinstance(response, CitedResponse)
        assert GOOD == response.response
        assert (APACHE_CITATION, BSD_CITATION) == response.citations
        assert ["a-apache", "b-bsd"] == [item.node.node_id for item in response.cited_nodes]
        assert 1 == len(llm.prompts)

    def test_aquery_gives_the_same_response(self):
        """aquery resolves exactly as query does."""
        sync = engine(GOOD)[0].query(QUESTION)
        asynced = asyncio.run(engine(GOOD)[0].aquery(QUESTION))
        assert sync.cited_answer == asynced.cited_answer

    def test_cited_nodes_follow_first_mention(self):
        """cited_nodes lists the cited source nodes in the order the answer cites them."""
        response = engine("Notices [2], then patents [1], notices again [2].")[0].query(QUESTION)
        assert ["b-bsd", "a-apache"] == [item.node.node_id for item in response.cited_nodes]

    def test_abstention_resolves_to_no_citations(self):
        """An answer without markers is an abstention: citations == ()."""
        response = engine("The sources do not say.")[0].query(QUESTION)
        assert () == response.citations
        assert [] == response.cited_nodes

    def test_wrapping_an_existing_engine(self):
        """An engine built with the postprocessor and the QA template can be wrapped as is."""
        llm = ScriptedLLM(replies=[GOOD])
        existing = index_of_nodes([APACHE, BSD]).as_query_engine(
            llm=llm,
            similarity_top_k=2,
            node_postprocessors=[CitationPostprocessor()],
            text_qa_template=CITATION_QA_TEMPLATE,
        )
        assert (APACHE_CITATION, BSD_CITATION) == CitedQueryEngine(existing).query(
            QUESTION
        ).citations

    def test_wrapping_a_citation_query_engine_numbers_by_position(self):
        """CitationQueryEngine's "Source N" chunks are resolved by position, and checked."""
        llm = ScriptedLLM(replies=["Filed [1].", "Filed [3]."])
        index = index_of_nodes([APACHE, BSD])
        wrapped = CitedQueryEngine(CitationQueryEngine.from_args(index, llm=llm))
        response = wrapped.query(QUESTION)
        assert [(1, "Apache")] == [(c.marker, c.doc_id) for c in response.citations]
        with pytest.raises(MarkerOutOfRangeError):
            wrapped.query(QUESTION)

    def test_prompts_are_reachable_through_the_wrapper(self):
        """get_prompts and update_prompts reach the wrapped engine, under its own keys."""
        key = "response_synthesizer:text_qa_template"
        cited, llm = engine(GOOD)
        assert CITATION_QA_TEMPLATE.get_template() == cited.get_prompts()[key].get_template()
        cited.update_prompts({key: PromptTemplate("Mine: {context_str} {query_str}")})
        cited.query(QUESTION)
        assert llm.prompts[0].startswith("Mine: cite_as: [1]")

    def test_retrieve_numbers_the_nodes(self):
        """retrieve goes through the wrapped engine, postprocessor included."""
        nodes = engine(GOOD)[0].retrieve(QueryBundle(QUESTION))
        assert ["[1]", "[2]"] == [item.node.metadata["cite_as"] for item in nodes]


class TestRejection:
    def test_out_of_range_marker_raises_after_one_call(self):
        """[7] of 2 sources raises MarkerOutOfRangeError, after exactly one LLM call."""
        cited, llm = engine("Filed [7].")
        with pytest.raises(MarkerOutOfRangeError) as info:
            cited.query(QUESTION)
        assert (7, 2) == (info.value.marker, info.value.valid_count)
        assert 1 == len(llm.prompts)

    def test_the_plain_engine_accepts_what_the_wrapper_rejects(self):
        """The same engine unwrapped returns [7] silently; the wrapper is what checks it."""
        llm = ScriptedLLM(replies=["Filed [7].", "Filed [7]."])
        plain = index_of_nodes([APACHE, BSD]).as_query_engine(
            llm=llm, node_postprocessors=[CitationPostprocessor()]
        )
        assert "Filed [7]." == plain.query(QUESTION).response
        with pytest.raises(MarkerOutOfRangeError):
            CitedQueryEngine(plain).query(QUESTION)

    def test_aquery_rejects_too(self):
        """aquery raises MarkerOutOfRangeError for [0]."""
        with pytest.raises(MarkerOutOfRangeError) as info:
            asyncio.run(engine("Filed [0].")[0].aquery(QUESTION))
        assert 0 == info.value.marker

    def test_blank_question_is_rejected_before_any_call(self):
        """A blank question raises SynthesisError and the LLM is never called."""
        cited, llm = engine(GOOD)
        with pytest.raises(SynthesisError):
            cited.query("   ")
        assert [] == llm.prompts

    def test_a_zero_width_question_is_blank_as_in_the_core(self, monkeypatch):
        """A question of zero-width spaces is refused before any call, as the core refuses it.

        With the naive rule (``not query_str.strip()``) the same question reaches the LLM.
        """
        question = "\u200b \u200b"
        with pytest.raises(SynthesisError, match="blank"):
            Synthesizer(ScriptedChat([GOOD])).synthesize_sync(
                question, [Source(text="t", doc_id="d")]
            )
        cited, llm = engine(GOOD)
        with pytest.raises(SynthesisError, match="blank"):
            cited.query(question)
        assert [] == llm.prompts
        monkeypatch.setattr(query_engine_base, "is_blank", lambda text: not text.strip())
        naive, naive_llm = engine(GOOD)
        naive.query(question)
        assert 1 == len(naive_llm.prompts)

    def test_blank_answer_is_rejected(self):
        """A blank completion is a SynthesisError, not an abstention."""
        with pytest.raises(SynthesisError):
            engine("  ")[0].query(QUESTION)

    def test_no_retrieved_nodes_raise_no_sources_without_a_call(self):
        """When every node is filtered out, NoSourcesError is raised and no LLM call made."""
        cited, llm = engine(
            GOOD, node_postprocessors=[SimilarityPostprocessor(similarity_cutoff=2.0)]
        )
        with pytest.raises(NoSourcesError):
            cited.query(QUESTION)
        assert [] == llm.prompts

    def test_a_postprocessor_after_numbering_breaks_it_loudly(self):
        """A node dropped after numbering makes the answer unresolvable: SynthesisError."""
        llm = ScriptedLLM(replies=["Notices [2]."])
        existing = RetrieverQueryEngine.from_args(
            index_of_nodes([APACHE, BSD]).as_retriever(similarity_top_k=2),
            llm=llm,
            node_postprocessors=[CitationPostprocessor(), DropFirst()],
        )
        with pytest.raises(SynthesisError, match="not numbered") as info:
            CitedQueryEngine(existing).query(QUESTION)
        assert type(info.value) is SynthesisError

    @pytest.mark.parametrize(
        "mode",
        [
            ResponseMode.TREE_SUMMARIZE,
            ResponseMode.SIMPLE_SUMMARIZE,
            ResponseMode.ACCUMULATE,
            ResponseMode.COMPACT_ACCUMULATE,
            ResponseMode.GENERATION,
            ResponseMode.NO_TEXT,
        ],
    )
    def test_modes_that_cannot_cite_are_refused(self, mode):
        """from_args refuses response modes whose final text is not written from the sources."""
        with pytest.raises(ValueError, match="cannot give a checkable cited answer"):
            engine(GOOD, response_mode=mode)

    def test_messages_hold_no_untrusted_text(self):
        """A canary in the question, the sources and the answer never reaches the error."""
        canary = "CANARY-4f1d2c"
        node = APACHE.model_copy(update={"text": f"{canary} text"})
        llm = ScriptedLLM(replies=[f"{canary} [9]."])
        cited = CitedQueryEngine.from_args(index_of_nodes([node]).as_retriever(), llm=llm)
        with pytest.raises(MarkerOutOfRangeError) as info:
            cited.query(f"{canary}?")
        assert canary not in str(info.value)
        assert canary not in repr(info.value.args)


class TestStreaming:
    def test_stream_passes_tokens_and_resolves_at_the_end(self):
        """A streaming query yields the tokens unchanged, then cited_answer is set."""
        cited, _ = engine(["They terminate [", "1]; keep notices [2", "]."], streaming=True)
        response = cited.query(QUESTION)
        assert isinstance(response, CitedStreamingResponse)
        assert response.cited_answer is None
        tokens = list(response.response_gen)
        assert ["They terminate [", "1]; keep notices [2", "]."] == tokens
        assert (APACHE_CITATION, BSD_CITATION) == response.cited_answer.citations
        assert "".join(tokens) == str(response)

    def test_get_response_returns_a_cited_response(self):
        """get_response consumes the stream and returns the same CitedResponse as query."""
        streamed = engine([GOOD], streaming=True)[0].query(QUESTION).get_response()
        assert isinstance(streamed, CitedResponse)
        assert engine(GOOD)[0].query(QUESTION).cited_answer == streamed.cited_answer

    def test_out_of_range_marker_fails_fast(self):
        """A split [7] raises as soon as it is complete; later tokens are never yielded."""
        cited, _ = engine(["Filed [", "7", "] and ", "more."], streaming=True)
        seen = []
        with pytest.raises(MarkerOutOfRangeError) as info:
            seen.extend(cited.query(QUESTION).response_gen)
        assert (7, ["Filed [", "7"]) == (info.value.marker, seen)

    def test_a_marker_that_could_become_code_waits_for_the_end(self):
        """A [7] after an open backtick waits; the end of the stream settles it."""
        cited, _ = engine(["Run `x[", "7]", "` now [1]."], streaming=True)
        response = cited.query(QUESTION)
        assert ["Run `x[", "7]", "` now [1]."] == list(response.response_gen)
        assert [1] == [c.marker for c in response.cited_answer.citations]

    def test_async_streaming(self):
        """aquery with streaming gives a checked async stream and its cited answer."""

        async def run():
            cited, _ = engine(["Filed [", "1]."], streaming=True)
            response = await cited.aquery(QUESTION)
            tokens = [token async for token in response.async_response_gen()]
            return response, tokens, await response.get_response()

        response, tokens, final = asyncio.run(run())
        assert isinstance(response, CitedAsyncStreamingResponse)
        assert ["Filed [", "1]."] == tokens
        assert (APACHE_CITATION,) == final.citations

    def test_async_streaming_rejects(self):
        """An out-of-range marker raises while the async stream is consumed."""

        async def run():
            response = await engine(["Filed [9", "]."], streaming=True)[0].aquery(QUESTION)
            return [token async for token in response.async_response_gen()]

        with pytest.raises(MarkerOutOfRangeError):
            asyncio.run(run())

    def test_a_consumed_stream_is_validated_whole(self):
        """validate_stream on a stream already read resolves the text it kept."""
        plain = index_of_nodes([APACHE]).as_query_engine(
            llm=ScriptedLLM(replies=[["Filed [", "1]."]]),
            streaming=True,
            node_postprocessors=[CitationPostprocessor()],
        )
        response = plain.query(QUESTION)
        str(response)
        assert (APACHE_CITATION,) == validate_stream(response).get_response().citations

    def test_non_streaming_responses_are_refused(self):
        """validate_stream takes only streaming responses, resolve_response only plain ones."""
        with pytest.raises(TypeError):
            validate_stream(Response("x"))
        with pytest.raises(TypeError):
            resolve_response(AsyncStreamingResponse(response_gen=None))


class TestRefine:
    @staticmethod
    def reply(prompt):
        """Cite the first source shown, or keep the existing answer and cite the last."""
        shown = re.findall(r"(?m)^cite_as: \[(\d+)\]", prompt)
        if "The existing answer" in prompt:
            existing = prompt.split("---------------------\n")[1].split("\n---------------------")[
                0
            ]
            return f"{existing} Also [{shown[-1]}]."
        return f"Start [{shown[0]}]."

    def refine_engine(self, reply, mode=ResponseMode.COMPACT):
        llm = ScriptedLLM(replies=[reply] * 20, context_window=1000, num_output=100)
        retriever = index_of(license_documents(), chunk_size=128).as_retriever(similarity_top_k=8)
        return CitedQueryEngine.from_args(retriever, llm=llm, response_mode=mode), llm

    @pytest.mark.parametrize("mode", [ResponseMode.COMPACT, ResponseMode.REFINE])
    def test_the_last_pass_is_resolved_against_global_numbers(self, mode):
        """Across refine passes, markers stay global and the final text resolves."""
        cited, llm = self.refine_engine(self.reply, mode)
        response = cited.query(QUESTION)
        assert len(llm.prompts) > 1
        final = {int(n) for n in re.findall(r"\[(\d+)\]", response.response)}
        assert final == {c.marker for c in response.citations}
        assert max(final) > 3  # cites a source the first pass never showed

    def test_an_out_of_range_marker_in_the_last_pass_is_rejected(self):
        """The last pass's text is checked: a [99] there raises."""

        def bad_last(prompt):
            return self.reply(prompt) + (" [99]" if "The existing answer" in prompt else "")

        with pytest.raises(MarkerOutOfRangeError):
            self.refine_engine(bad_last)[0].query(QUESTION)

    def test_only_the_last_pass_survives(self):
        """A marker an earlier pass wrote and a later pass dropped is gone, unchecked."""

        def forgetful(prompt):
            if "The existing answer" in prompt:
                return "Rewritten without citations."
            return "Start [99]."

        response = self.refine_engine(forgetful)[0].query(QUESTION)
        assert ("Rewritten without citations.", ()) == (response.response, response.citations)
