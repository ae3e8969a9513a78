"""CitationOutputParser, for chains that keep their own prompt."""

from __future__ import annotations

import asyncio
from operator import itemgetter

import pytest
from fakes import DOCUMENTS, QUESTION, ChunkedFakeChatModel, ListRetriever
from langchain_core.exceptions import OutputParserException
from langchain_core.language_models import FakeListChatModel
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.runnables import RunnablePassthrough

from citemark import CitedAnswer, MarkerOutOfRangeError, NoSourcesError, SynthesisError
from langchain_citemark import CITED_ANSWER_PROMPT, CitationOutputParser, format_documents


class TestParse:
    def test_bound_documents(self):
        """A parser bound to the documents resolves text and messages."""
        parser = CitationOutputParser(documents=DOCUMENTS)
        assert [1] == [c.marker for c in parser.parse("Filed [1].").citations]
        assert [2] == [c.marker for c in parser.invoke(AIMessage(content="Keep [2].")).citations]

    def test_out_of_range(self):
        """A marker beyond the documents raises MarkerOutOfRangeError with the facts."""
        with pytest.raises(MarkerOutOfRangeError) as info:
            CitationOutputParser(documents=DOCUMENTS).parse("Filed [9].")
        assert (9, 3) == (info.value.marker, info.value.valid_count)

    def test_no_documents(self):
        """A parser bound to no documents raises NoSourcesError."""
        with pytest.raises(NoSourcesError):
            CitationOutputParser(documents=[]).parse("Filed [1].")

    def test_blank_answer(self):
        """A blank answer is a SynthesisError."""
        with pytest.raises(SynthesisError):
            CitationOutputParser(documents=DOCUMENTS).parse("  ")

    def test_unbound_parser_needs_documents(self):
        """An unbound parser given plain text says what it needs."""
        with pytest.raises(TypeError, match="no documents"):
            CitationOutputParser().parse("Filed [1].")

    def test_format_instructions(self):
        """Format instructions describe [N] markers without a real number."""
        instructions = CitationOutputParser().get_format_instructions()
        assert "[N]" in instructions
        assert "[1]" not in instructions


class TestInAnExistingChain:
    def chain(self, answer: str):
        retriever = ListRetriever(documents=DOCUMENTS)
        llm = FakeListChatModel(responses=[answer])
        return (
            RunnablePassthrough.assign(context=itemgetter("question") | retriever).assign(
                answer=(
                    RunnablePassthrough.assign(context=lambda x: format_documents(x["context"]))
                    | CITED_ANSWER_PROMPT
                    | llm
                    | StrOutputParser()
                )
            )
            | CitationOutputParser()
        )

    def test_assign_chain(self):
        """At the end of a RunnablePassthrough.assign chain, the parser reads context and answer."""
        answer = self.chain("Filed [1], kept [2].").invoke({"question": QUESTION})
        assert isinstance(answer, CitedAnswer)
        assert ["licenses/Apache-2.0", "licenses/BSD"] == [c.doc_id for c in answer.citations]

    def test_assign_chain_rejects(self):
        """The same chain rejects a fabricated marker."""
        with pytest.raises(MarkerOutOfRangeError):
            self.chain("Filed [5].").invoke({"question": QUESTION})

    def test_async(self):
        """ainvoke works on the same chain."""
        answer = asyncio.run(self.chain("Filed [3].").ainvoke({"question": QUESTION}))
        assert [3] == [c.marker for c in answer.citations]


class TestNotRepairable:
    """LangChain's repair parsers catch OutputParserException; ours is not one."""

    def fixing_parser(self, parser):
        from langchain_classic.output_parsers import OutputFixingParser

        fixer = FakeListChatModel(responses=["Filed [1]."])  # the "repair" a fixer would make
        return OutputFixingParser.from_llm(llm=fixer, parser=parser)

    def test_output_fixing_parser_does_not_swallow_our_error(self):
        """OutputFixingParser lets MarkerOutOfRangeError through: no repair to [1]."""
        wrapped = self.fixing_parser(CitationOutputParser(documents=DOCUMENTS))
        with pytest.raises(MarkerOutOfRangeError):
            wrapped.parse("Filed [9].")

    def test_naive_parser_is_repaired(self):
        """A parser raising OutputParserException gets its fabricated [9] rewritten to [1]."""

        class NaiveParser(CitationOutputParser):
            def parse(self, text: str) -> CitedAnswer:
                try:
                    return super().parse(text)
                except MarkerOutOfRangeError:
                    raise OutputParserException("bad citation") from None

        repaired = self.fixing_parser(NaiveParser(documents=DOCUMENTS)).parse("Filed [9].")
        assert "Filed [1]." == repaired.text


class TestStreaming:
    def test_transform_fails_fast(self):
        """Streaming through the parser raises as soon as the marker is complete."""
        pulled = []

        def chunks():
            for piece in ["Filed [", "9", "]", " tail", " more"]:
                pulled.append(piece)
                yield piece

        parser = CitationOutputParser(documents=DOCUMENTS)
        with pytest.raises(MarkerOutOfRangeError):
            list(parser.transform(chunks()))
        assert ["Filed [", "9", "]"] == pulled

    def test_transform_validates_the_final_text(self):
        """Unlike cumulative parsers, the final text is always resolved."""
        llm = ChunkedFakeChatModel(chunks=["Filed ", "[1", "]."])
        chain = llm | CitationOutputParser(documents=DOCUMENTS)
        assert [[1]] == [[c.marker for c in a.citations] for a in chain.stream(QUESTION)]

    def test_stream_through_a_chain_rejects_at_the_end(self):
        """A marker that is only certain at the end is still rejected."""
        llm = ChunkedFakeChatModel(chunks=["Use `x", "[9]"])
        chain = llm | CitationOutputParser(documents=DOCUMENTS)
        with pytest.raises(MarkerOutOfRangeError):
            list(chain.stream(QUESTION))
