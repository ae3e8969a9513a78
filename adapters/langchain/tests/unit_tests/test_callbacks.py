"""CitationCallbackHandler on an unmodified retrieval chain."""

from __future__ import annotations

import asyncio
from operator import itemgetter

import pytest
from fakes import DOCUMENTS, QUESTION, ListRetriever
from langchain_core.language_models import FakeListChatModel, FakeListLLM
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate, PromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough

from citemark import MarkerOutOfRangeError
from langchain_citemark import CitationCallbackHandler, CitedAnswerChain


def own_formatting(docs) -> str:
    """The user's own numbering code, in reverse order to prove it is recovered."""
    lines = [f"Source {len(docs) - i}: {d.page_content}" for i, d in enumerate(reversed(docs))]
    return "\n".join(lines)


def rag_chain(llm):
    """The LangChain guide's shape: assign context, then assign the answer."""
    prompt = ChatPromptTemplate.from_template(
        "Cite sources as [n].\n{formatted}\n\nQuestion: {question}"
    )
    retriever = ListRetriever(documents=DOCUMENTS)
    return RunnablePassthrough.assign(context=itemgetter("question") | retriever).assign(
        answer=RunnablePassthrough.assign(formatted=lambda x: own_formatting(x["context"]))
        | prompt
        | llm
        | StrOutputParser()
    )


def outcomes(handler):
    return [
        (r.outcome, r.reason, r.marker, [c.doc_id for c in r.citations]) for r in handler.reports
    ]


class TestUnmodifiedChain:
    def test_correct_fabricated_and_abstained(self):
        """One report per run: resolved, out_of_range and abstained, in order."""
        llm = FakeListChatModel(responses=["Filed [1].", "Filed [7].", "The sources do not say."])
        chain = rag_chain(llm)
        handler = CitationCallbackHandler()
        for _ in range(3):
            chain.invoke({"question": QUESTION}, config={"callbacks": [handler]})
        assert [
            ("resolved", None, None, ["licenses/Apache-2.0"]),
            ("out_of_range", None, 7, []),
            ("abstained", None, None, []),
        ] == outcomes(handler)

    def test_numbering_is_recovered_from_the_prompt(self):
        """The numbers come from the prompt the user's code rendered, not retrieval order."""
        llm = FakeListChatModel(responses=["Kept [2], redistributed [3]."])
        handler = CitationCallbackHandler()
        rag_chain(llm).invoke({"question": QUESTION}, config={"callbacks": [handler]})
        assert [("resolved", None, None, ["licenses/BSD", "doc-3"])] == outcomes(handler)

    def test_batch(self):
        """batch yields one report per input."""
        llm = FakeListChatModel(responses=["Filed [1].", "Filed [9]."])
        handler = CitationCallbackHandler()
        rag_chain(llm).batch(
            [{"question": QUESTION}] * 2, config={"callbacks": [handler], "max_concurrency": 1}
        )
        assert ["resolved", "out_of_range"] == [r.outcome for r in handler.reports]

    def test_async(self):
        """ainvoke is observed the same way."""
        handler = CitationCallbackHandler()
        chain = rag_chain(FakeListChatModel(responses=["Filed [4]."]))
        asyncio.run(chain.ainvoke({"question": QUESTION}, config={"callbacks": [handler]}))
        assert [("out_of_range", None, 4, [])] == outcomes(handler)

    def test_text_llm(self):
        """A plain text LLM's prompt is read from on_llm_start."""
        prompt = PromptTemplate.from_template("{formatted}\nQ: {question}")
        chain = RunnablePassthrough.assign(
            context=itemgetter("question") | ListRetriever(documents=DOCUMENTS)
        ).assign(
            answer=RunnablePassthrough.assign(formatted=lambda x: own_formatting(x["context"]))
            | prompt
            | FakeListLLM(responses=["Filed [1]."])
        )
        handler = CitationCallbackHandler()
        chain.invoke({"question": QUESTION}, config={"callbacks": [handler]})
        assert ["resolved"] == [r.outcome for r in handler.reports]

    def test_documents_from_a_plain_step(self):
        """Without a retriever run, Documents passed between steps are used."""
        prompt = ChatPromptTemplate.from_template("{formatted}\n{question}")
        chain = RunnablePassthrough.assign(
            context=itemgetter("question") | RunnableLambda(lambda q: DOCUMENTS)
        ).assign(
            answer=RunnablePassthrough.assign(formatted=lambda x: own_formatting(x["context"]))
            | prompt
            | FakeListChatModel(responses=["Filed [1], kept [2]."])
            | StrOutputParser()
        )
        handler = CitationCallbackHandler()
        chain.invoke({"question": QUESTION}, config={"callbacks": [handler]})
        assert [("resolved", None, None, ["licenses/Apache-2.0", "licenses/BSD"])] == outcomes(
            handler
        )


class TestNeverRaises:
    def test_unnumbered_prompt_is_unassessed(self):
        """Documents pasted without numbers cannot be checked: unassessed, no exception."""
        prompt = ChatPromptTemplate.from_template("{formatted}\n{question}")
        chain = RunnablePassthrough.assign(
            context=itemgetter("question") | ListRetriever(documents=DOCUMENTS)
        ).assign(
            answer=RunnablePassthrough.assign(
                formatted=lambda x: " ".join(d.page_content for d in x["context"])
            )
            | prompt
            | FakeListChatModel(responses=["Filed [1]."])
            | StrOutputParser()
        )
        handler = CitationCallbackHandler()
        chain.invoke({"question": QUESTION}, config={"callbacks": [handler]})
        assert [("unassessed", "numbering_unknown", None, [])] == outcomes(handler)

    def test_chain_error_before_an_answer_is_recorded(self):
        """A chain that fails before its model answered is unassessed with chain_error."""

        def broken(_: object) -> str:
            raise RuntimeError

        chain = RunnableLambda(broken) | FakeListChatModel(responses=["Filed [1]."])
        handler = CitationCallbackHandler()
        with pytest.raises(RuntimeError):
            chain.invoke({"question": QUESTION}, config={"callbacks": [handler]})
        assert [("unassessed", "chain_error", None, [])] == outcomes(handler)
        assert handler.reports[0].rejected is None

    def test_a_rejected_answer_is_reported_as_what_it_cited(self):
        """citemark's own chain rejecting [9] of two: the report is the answer's, out of
        range at 9, and says what rejected it; before, it was chain_error."""
        chain = CitedAnswerChain(llm=FakeListChatModel(responses=["Filed [9]."]))
        handler = CitationCallbackHandler()
        with pytest.raises(MarkerOutOfRangeError):
            chain.invoke(
                {"question": QUESTION, "documents": DOCUMENTS}, config={"callbacks": [handler]}
            )
        assert [("out_of_range", None, 9, [])] == outcomes(handler)
        assert "MarkerOutOfRangeError" == handler.reports[0].rejected

    def test_odd_output_is_unassessed(self):
        """A chain whose output holds no answer text is unassessed with no_answer."""
        chain = RunnablePassthrough.assign(
            context=itemgetter("question") | ListRetriever(documents=DOCUMENTS)
        )
        handler = CitationCallbackHandler()
        chain.invoke({"question": QUESTION}, config={"callbacks": [handler]})
        assert [("unassessed", "no_answer", None, [])] == outcomes(handler)

    def test_state_is_released(self):
        """After the runs end, the handler keeps reports only, not run bookkeeping."""
        handler = CitationCallbackHandler()
        rag_chain(FakeListChatModel(responses=["Filed [1]."])).invoke(
            {"question": QUESTION}, config={"callbacks": [handler]}
        )
        assert ({}, {}, {}) == (handler._root_of, handler._members, handler._runs)
