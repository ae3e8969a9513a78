"""The cited-answer Runnable: a contract suite of our own (langchain-tests has none)."""

from __future__ import annotations

import asyncio

import pytest
from fakes import DOCUMENTS, QUESTION, ChunkedFakeChatModel
from langchain_core.language_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.runnables import RunnableLambda, RunnablePassthrough

from citemark import (
    CitedAnswer,
    MarkerOutOfRangeError,
    NoSourcesError,
    Source,
    SynthesisError,
    Synthesizer,
)
from citemark.testing import ScriptedChat
from langchain_citemark import CitedAnswerChain, create_cited_answer_chain, runnables

GOOD = "They terminate when litigation is filed [1]; keep notices [2]."
INPUT = {"question": QUESTION, "documents": DOCUMENTS}


def collect_stream(chain, input_=INPUT):
    chunks = list(chain.stream(input_))
    return chunks[:-1], chunks[-1]


async def collect_astream(chain, input_=INPUT):
    chunks = [c async for c in chain.astream(input_)]
    return chunks[:-1], chunks[-1]


class TestInvocationStyles:
    """Every invocation style gives the same CitedAnswer for the same input."""

    def results(self):
        def chain():
            return create_cited_answer_chain(FakeListChatModel(responses=[GOOD]))

        deltas, streamed = collect_stream(chain())
        adeltas, astreamed = asyncio.run(collect_astream(chain()))
        return {
            "invoke": chain().invoke(INPUT),
            "ainvoke": asyncio.run(chain().ainvoke(INPUT)),
            "batch": chain().batch([INPUT])[0],
            "abatch": asyncio.run(chain().abatch([INPUT]))[0],
            "stream": streamed,
            "astream": astreamed,
            "stream_text": CitedAnswer(text="".join(deltas), citations=streamed.citations),
            "astream_text": CitedAnswer(text="".join(adeltas), citations=astreamed.citations),
        }

    def test_all_styles_agree(self):
        """invoke, ainvoke, batch, abatch, stream and astream return equal answers."""
        results = self.results()
        expected = results["invoke"]
        assert [1, 2] == [c.marker for c in expected.citations]
        assert dict.fromkeys(results, expected) == results

    def test_citations_map_back_to_documents(self):
        """Citations carry metadata['source'] and start_index offsets; -1 leaves none."""
        answer = create_cited_answer_chain(FakeListChatModel(responses=[GOOD])).invoke(INPUT)
        assert [
            (
                "licenses/Apache-2.0",
                "licenses/Apache-2.0",
                4891,
                4891 + len(DOCUMENTS[0].page_content),
            ),
            ("licenses/BSD", "licenses/BSD", None, None),
        ] == [(c.doc_id, c.uri, c.start, c.end) for c in answer.citations]

    def test_document_id_is_the_chunk_id(self):
        """A Document's id becomes the citation's chunk_id (and doc_id without a source)."""
        answer = create_cited_answer_chain(FakeListChatModel(responses=["Yes [3]."])).invoke(INPUT)
        assert [("doc-3", "doc-3")] == [(c.doc_id, c.chunk_id) for c in answer.citations]


class TestRejection:
    def test_out_of_range_marker_raises(self):
        """[4] of 3 documents raises MarkerOutOfRangeError from invoke."""
        chain = create_cited_answer_chain(FakeListChatModel(responses=["Filed [4]."]))
        with pytest.raises(MarkerOutOfRangeError) as info:
            chain.invoke(INPUT)
        assert (4, 3) == (info.value.marker, info.value.valid_count)

    def test_error_is_not_an_output_parser_exception(self):
        """The error type is citemark's, so LangChain's repair parsers never catch it."""
        from langchain_core.exceptions import OutputParserException

        assert not issubclass(MarkerOutOfRangeError, OutputParserException)

    def test_empty_documents_fail_before_the_model(self):
        """No documents: NoSourcesError, and the model is never called."""
        llm = ChunkedFakeChatModel(chunks=["x [1]"])
        with pytest.raises(NoSourcesError):
            create_cited_answer_chain(llm).invoke({"question": QUESTION, "documents": []})
        assert 0 == llm.calls

    def test_blank_question_fails_before_the_model(self):
        """A blank question is a SynthesisError before any model call."""
        llm = ChunkedFakeChatModel(chunks=["x [1]"])
        with pytest.raises(SynthesisError):
            create_cited_answer_chain(llm).invoke({"question": " ", "documents": DOCUMENTS})
        assert 0 == llm.calls

    def test_a_zero_width_question_is_blank_as_in_the_core(self, monkeypatch):
        """A question of zero-width spaces is refused before the model, as the core refuses it.

        With the naive rule (``not question.strip()``) the same question reaches the model.
        """
        question = "\u200b \u200b"
        with pytest.raises(SynthesisError, match="blank"):
            Synthesizer(ScriptedChat([GOOD])).synthesize_sync(
                question, [Source(text="t", doc_id="d")]
            )
        llm = ChunkedFakeChatModel(chunks=["x [1]"])
        with pytest.raises(SynthesisError, match="blank"):
            create_cited_answer_chain(llm).invoke({"question": question, "documents": DOCUMENTS})
        assert 0 == llm.calls
        monkeypatch.setattr(runnables, "is_blank", lambda text: not text.strip())
        naive = ChunkedFakeChatModel(chunks=["x [1]"])
        create_cited_answer_chain(naive).invoke({"question": question, "documents": DOCUMENTS})
        assert 1 == naive.calls

    def test_abstention(self):
        """An answer without markers is an abstention, not an error."""
        chain = create_cited_answer_chain(FakeListChatModel(responses=["The sources do not say."]))
        assert () == chain.invoke(INPUT).citations

    def test_wrong_input_shape(self):
        """A malformed input is a TypeError naming the expected keys."""
        chain = create_cited_answer_chain(FakeListChatModel(responses=[GOOD]))
        with pytest.raises(TypeError, match="'question'"):
            chain.invoke({"query": QUESTION, "documents": DOCUMENTS})


class TestBatch:
    def inputs(self):
        return [INPUT, {"question": QUESTION, "documents": DOCUMENTS[:1]}, INPUT]

    def test_one_bad_row_raises_without_return_exceptions(self):
        """batch raises the bad row's MarkerOutOfRangeError by default."""
        chain = create_cited_answer_chain(FakeListChatModel(responses=["Cited [2]."]))
        with pytest.raises(MarkerOutOfRangeError):
            chain.batch(self.inputs(), config={"max_concurrency": 1})

    def test_one_bad_row_is_returned_with_return_exceptions(self):
        """With return_exceptions=True the other rows still resolve."""
        chain = create_cited_answer_chain(FakeListChatModel(responses=["Cited [2]."]))
        results = chain.batch(self.inputs(), config={"max_concurrency": 1}, return_exceptions=True)
        assert [CitedAnswer, MarkerOutOfRangeError, CitedAnswer] == [type(r) for r in results]

    def test_abatch_with_return_exceptions(self):
        """abatch behaves the same way."""
        chain = create_cited_answer_chain(FakeListChatModel(responses=["Cited [2]."]))
        results = asyncio.run(chain.abatch(self.inputs(), return_exceptions=True))
        assert [CitedAnswer, MarkerOutOfRangeError, CitedAnswer] == [type(r) for r in results]


ANSWER = "Ends on filing [12]."


class TestStreaming:
    @pytest.mark.parametrize("cut", range(len(ANSWER) + 1))
    def test_split_marker_fails_fast_at_every_position(self, cut):
        """[12] of 3, split at any position, raises on the chunk that completes it."""
        pieces = [ANSWER[:cut], ANSWER[cut:], " and a tail that never arrives"]
        chain = create_cited_answer_chain(ChunkedFakeChatModel(chunks=pieces))
        seen = []
        with pytest.raises(MarkerOutOfRangeError):
            for chunk in chain.stream(INPUT):
                seen.append(chunk)
        completing = 0 if "]" in pieces[0] else 1
        assert [p for p in pieces[:completing] if p] == seen

    def test_per_character_stream_resolves(self):
        """FakeListChatModel streams one character at a time; markers still resolve."""
        deltas, answer = collect_stream(
            create_cited_answer_chain(FakeListChatModel(responses=[GOOD]))
        )
        assert len(GOOD) == len(deltas)
        assert [1, 2] == [c.marker for c in answer.citations]

    def test_per_word_stream(self):
        """GenericFakeChatModel streams per word; the final CitedAnswer comes last."""
        llm = GenericFakeChatModel(messages=iter([GOOD]))
        deltas, answer = collect_stream(create_cited_answer_chain(llm))
        assert GOOD == "".join(deltas)
        assert GOOD == answer.text

    def test_astream_fails_fast(self):
        """astream raises as soon as the marker completes."""
        chain = create_cited_answer_chain(ChunkedFakeChatModel(chunks=["Bad [", "7]", " tail"]))

        async def run():
            seen = []
            with pytest.raises(MarkerOutOfRangeError):
                async for chunk in chain.astream(INPUT):
                    seen.append(chunk)
            return seen

        assert ["Bad ["] == asyncio.run(run())


class TestComposition:
    def test_composes_after_a_retriever(self):
        """{'question': ..., 'documents': retriever} | chain works with |."""
        retriever = RunnableLambda(lambda q: DOCUMENTS)
        chain = {
            "question": RunnablePassthrough(),
            "documents": retriever,
        } | create_cited_answer_chain(FakeListChatModel(responses=[GOOD]))
        assert [1, 2] == [c.marker for c in chain.invoke(QUESTION).citations]

    def test_schemas_and_name(self):
        """Input and output schemas are declared and runs carry a clear name."""
        chain = create_cited_answer_chain(FakeListChatModel(responses=[GOOD]))
        assert {"question", "documents"} == set(
            chain.get_input_jsonschema()["$defs"]["CitedAnswerInput"]["required"]
        )
        assert "CitedAnswer" == chain.get_output_jsonschema()["title"]
        assert "CitedAnswerChain" == chain.get_name()

    def test_callbacks_and_config_flow_through(self):
        """Callbacks given to the chain see the chain run and the model run beneath it."""
        from langchain_core.tracers.run_collector import RunCollectorCallbackHandler

        collector = RunCollectorCallbackHandler()
        chain = create_cited_answer_chain(FakeListChatModel(responses=[GOOD]))
        chain.invoke(INPUT, config={"callbacks": [collector], "tags": ["t1"]})
        root = collector.traced_runs[0]
        assert ("CitedAnswerChain", ["t1"]) == (root.name, root.tags)
        assert ["FakeListChatModel"] == [child.name for child in root.child_runs]
        assert isinstance(root.outputs["output"], CitedAnswer)

    def test_is_a_runnable_serializable(self):
        """The chain is a pydantic RunnableSerializable with its configuration as fields."""
        chain = create_cited_answer_chain(FakeListChatModel(responses=[GOOD]))
        assert isinstance(chain, CitedAnswerChain)
        assert "question" == chain.question_key
