"""Record what the model said, always: rejected answers, the tutorial chain, structured chains.

Issue 35, items 1 and 7. Every chain here is real LCEL with LangChain's own fake chat
models, citemark's real parser, chain, checker or middleware, and the real
`CitationCallbackHandler` recording; the recorded files are checked by ``python -m
citemark check`` in a subprocess, as a team would the next day.
"""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore
from pydantic import BaseModel

from citemark import CitedAnswer, MarkerOutOfRangeError, QuoteNotInSourceError
from langchain_citemark import (
    CitationCallbackHandler,
    CitationMiddleware,
    CitationOutputParser,
    create_cited_answer_chain,
    create_structured_citation_chain,
    format_documents,
)

TEXTS = {
    "Apache-2.0": "Patent licenses terminate as of the date such litigation is filed.",
    "BSD": "Redistributions must retain the above copyright notice.",
    "MIT": "The software is provided as is, without warranty of any kind.",
}
CANARY = "CANARY-35-rejected-answer"
GOOD, BAD = "When does the patent license end?", "What must be kept?"


def retriever():
    """A real vector store's retriever over three license sentences (three per query)."""
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents(
        [Document(text, id=name, metadata={"source": name}) for name, text in TEXTS.items()]
    )
    return store.as_retriever(search_kwargs={"k": 3})


PROMPT = ChatPromptTemplate.from_template(
    "Answer from the numbered sources, citing them as [n].\n\n{context}\n\nQuestion: {question}"
)


def tutorial_chain(llm, parser=None, formatter=format_documents):
    """LangChain's RAG tutorial chain as written, with citemark's formatter and parser."""
    return (
        {"context": retriever() | formatter, "question": RunnablePassthrough()}
        | PROMPT
        | llm
        | (parser or CitationOutputParser())
    )


def rows(text: str) -> list[dict[str, Any]]:
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def check(path, out) -> dict[str, dict[str, Any]]:
    """``python -m citemark check FILE --out DIR --json``; rows.jsonl's records by id."""
    completed = subprocess.run(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "citemark", "check", str(path), "--out", str(out), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode in (0, 1), completed.stderr
    json.loads(completed.stdout)  # the --json summary is one JSON document
    records = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    return {record["id"]: record for record in records}


def verdict(record: dict[str, Any]) -> tuple[str, str | None, list[str]]:
    details = record.get("details") or {}
    return record["outcome"], record.get("reason"), details.get("deterministic_failures", [])


def agrees(report, record) -> bool:
    """Whether a handler report and a checked row say the same thing of one run."""
    outcome, reason, failures = verdict(record)
    if report.outcome == "out_of_range":
        return outcome == "failed" and "fabricated_citation" in failures
    if report.outcome == "quote_not_in_source":
        return outcome == "failed" and "quote_not_in_source" in failures
    if report.outcome in ("resolved", "abstained"):
        return outcome != "failed" and reason not in ("chain_error", "no_answer")
    return (outcome, reason) == ("unassessed", report.reason)


class TestTwoDays:
    def test_a_rejected_answer_checks_to_its_violation_on_each_day(self, tmp_path):
        """Two days, two files, one rejected [5] of three sources each day.

        The naive recorder wrote the rejected run as ``chain_error`` with no answer and no
        sources; recorded with its answer and the prompt's order, ``citemark check``
        finds the same ``fabricated_citation`` the parser rejected, both days.
        """
        for day in ("day1", "day2"):
            path = tmp_path / f"{day}.jsonl"
            handler = CitationCallbackHandler(record_to=path)
            llm = FakeListChatModel(responses=["It ends on filing [1].", f"Keep it [5]. {day}"])
            chain = tutorial_chain(llm)
            answer = chain.invoke(GOOD, config={"callbacks": [handler]})
            assert isinstance(answer, CitedAnswer)
            with pytest.raises(MarkerOutOfRangeError):
                chain.invoke(BAD, config={"callbacks": [handler]})
            good, bad = rows(path.read_text())
            assert (f"Keep it [5]. {day}", BAD, 3) == (
                bad["answer"],
                bad["question"],
                len(bad["sources"]),
            )
            assert "unassessed" not in bad
            assert ("MarkerOutOfRangeError", "run") == (bad["rejected"], bad["id_scope"])
            assert "rejected" not in good
            by_id = check(path, tmp_path / f"{day}-out")
            assert ("failed", None, ["fabricated_citation"]) == verdict(by_id[bad["id"]])
            assert "chain_error" not in {r.get("reason") for r in by_id.values()}
            assert ["resolved", "out_of_range"] == [r.outcome for r in handler.reports]
            assert (None, "MarkerOutOfRangeError") == tuple(r.rejected for r in handler.reports)
            for report in handler.reports:
                assert agrees(report, by_id[str(report.run_id)])


class TestEveryPathRecordsTheAnswer:
    def test_create_cited_answer_chain(self, tmp_path):
        """citemark's own chain rejecting [5] of three: the row holds the answer, in order."""
        out = io.StringIO()
        handler = CitationCallbackHandler(record_to=out)
        chain = create_cited_answer_chain(FakeListChatModel(responses=["Keep it [5]."]))
        documents = retriever().invoke(BAD)
        with pytest.raises(MarkerOutOfRangeError):
            chain.invoke({"question": BAD, "documents": documents}, config={"callbacks": [handler]})
        (row,) = rows(out.getvalue())
        assert ("Keep it [5].", "MarkerOutOfRangeError") == (row["answer"], row["rejected"])
        assert [d.page_content for d in documents] == [s["text"] for s in row["sources"]]
        assert [("out_of_range", 5)] == [(r.outcome, r.marker) for r in handler.reports]

    def test_the_agent_middleware(self, tmp_path):
        """CitationMiddleware raising out of an agent: the reply and its sources are the row."""
        path = tmp_path / "agent.jsonl"
        handler = CitationCallbackHandler(record_to=path)
        docs = [Document(text, metadata={"source": name}) for name, text in TEXTS.items()]
        model = GenericFakeChatModel(messages=iter(["It ends on filing [1] or [4]."]))
        agent = create_agent(model, middleware=[CitationMiddleware(sources_key="documents")])
        with pytest.raises(MarkerOutOfRangeError):
            agent.invoke(
                {"messages": [("user", GOOD)], "documents": docs}, config={"callbacks": [handler]}
            )
        (row,) = rows(path.read_text())
        assert ("It ends on filing [1] or [4].", GOOD) == (row["answer"], row["question"])
        assert list(TEXTS.values()) == [s["text"] for s in row["sources"]]
        by_id = check(path, tmp_path / "out")
        assert ("failed", None, ["fabricated_citation"]) == verdict(by_id[row["id"]])
        assert agrees(handler.reports[0], by_id[row["id"]])

    def test_a_chain_that_raised_before_any_answer_is_still_chain_error(self):
        """No model answered (the retriever step failed): chain_error, with no answer."""

        def broken(_: object) -> list[Document]:
            raise RuntimeError(CANARY)

        out = io.StringIO()
        handler = CitationCallbackHandler(record_to=out)
        chain = (
            {
                "context": RunnableLambda(broken) | format_documents,
                "question": RunnablePassthrough(),
            }
            | PROMPT
            | FakeListChatModel(responses=["Never [1]."])
            | CitationOutputParser()
        )
        with pytest.raises(RuntimeError):
            chain.invoke(GOOD, config={"callbacks": [handler]})
        (row,) = rows(out.getvalue())
        assert ("", [], "chain_error") == (row["answer"], row["sources"], row["unassessed"])
        assert "rejected" not in row
        assert [("unassessed", "chain_error")] == [(r.outcome, r.reason) for r in handler.reports]

    def test_a_later_failure_that_is_not_citemarks_is_recorded_as_raised(self):
        """A step after the model that raises its own error: the answer is still the row's."""

        def fails(_: object) -> None:
            raise ValueError(CANARY)

        out = io.StringIO()
        handler = CitationCallbackHandler(record_to=out)
        chain = tutorial_chain(FakeListChatModel(responses=["It ends on filing [2]."])) | fails
        with pytest.raises(ValueError, match=CANARY):
            chain.invoke(GOOD, config={"callbacks": [handler]})
        (row,) = rows(out.getvalue())
        assert ("It ends on filing [2].", "ValueError") == (row["answer"], row["raised"])
        assert "rejected" not in row
        assert ["resolved"] == [r.outcome for r in handler.reports]


class TestStoppedStreams:
    """A stream citemark stopped at the bad marker: the row holds what was said up to it.

    Before, each was chain_error with no answer (and, streamed, with no question).
    """

    def assert_cut_row(self, path, tmp_path, answer, question, marker):
        (row,) = rows(path.read_text())
        assert (answer, question, True) == (row["answer"], row["question"], row["answer_cut"])
        assert ("MarkerOutOfRangeError", 3) == (row["rejected"], len(row["sources"]))
        by_id = check(path, tmp_path / "out")
        assert ("failed", None, ["fabricated_citation"]) == verdict(by_id[row["id"]])
        return row

    def test_the_parser_streaming(self, tmp_path):
        path = tmp_path / "stream.jsonl"
        handler = CitationCallbackHandler(record_to=path)
        chain = tutorial_chain(FakeListChatModel(responses=["Keep it [5] and more text."]))
        with pytest.raises(MarkerOutOfRangeError):
            list(chain.stream(BAD, config={"callbacks": [handler]}))
        self.assert_cut_row(path, tmp_path, "Keep it [5]", BAD, 5)
        assert [("out_of_range", 5)] == [(r.outcome, r.marker) for r in handler.reports]

    def test_cited_answer_chain_streaming(self, tmp_path):
        path = tmp_path / "stream.jsonl"
        handler = CitationCallbackHandler(record_to=path)
        chain = create_cited_answer_chain(FakeListChatModel(responses=["Keep it [5] and more."]))
        documents = retriever().invoke(BAD)
        with pytest.raises(MarkerOutOfRangeError):
            list(
                chain.stream(
                    {"question": BAD, "documents": documents}, config={"callbacks": [handler]}
                )
            )
        self.assert_cut_row(path, tmp_path, "Keep it [5]", BAD, 5)

    def test_the_middlewares_stream_guard(self, tmp_path):
        """The guard raises inside the token callback; the recorder still got that token."""
        path = tmp_path / "stream.jsonl"
        handler = CitationCallbackHandler(record_to=path)
        docs = [Document(text, metadata={"source": name}) for name, text in TEXTS.items()]
        model = GenericFakeChatModel(messages=iter(["It ends on filing [1] or [4] then."]))
        agent = create_agent(model, middleware=[CitationMiddleware(sources_key="documents")])
        streamed = []
        with pytest.raises(MarkerOutOfRangeError):
            for token, _ in agent.stream(
                {"messages": [("user", GOOD)], "documents": docs},
                config={"callbacks": [handler]},
                stream_mode="messages",
            ):
                streamed.append(token.text)
        assert "[4]" not in "".join(streamed)  # the bad token never streamed out
        self.assert_cut_row(path, tmp_path, "It ends on filing [1] or [4]", GOOD, 4)

    def test_a_stream_that_broke_for_another_reason_is_chain_error(self):
        """Tokens cut by an error that is not the marker check are no answer: chain_error."""

        def fails(chunks):
            for _ in chunks:
                raise RuntimeError(CANARY)
            yield ""

        out = io.StringIO()
        handler = CitationCallbackHandler(record_to=out)
        chain = (
            {"context": retriever() | format_documents, "question": RunnablePassthrough()}
            | PROMPT
            | FakeListChatModel(responses=["Keep it [1] and more."])
            | fails
        )
        with pytest.raises(RuntimeError):
            list(chain.stream(BAD, config={"callbacks": [handler]}))
        (row,) = rows(out.getvalue())
        assert ("", "chain_error") == (row["answer"], row["unassessed"])


class ToolCallingFake(GenericFakeChatModel):
    """GenericFakeChatModel that accepts the schema tool; the script decides the call."""

    def bind_tools(self, tools, **kwargs):
        return self


class Answer(BaseModel):
    """Answer the question, citing the ids of the sources used."""

    answer: str
    citations: list[int]


def structured_model(citations: list[int]) -> ToolCallingFake:
    call = {"name": "Answer", "args": {"answer": "Fast.", "citations": citations}, "id": "c0"}
    return ToolCallingFake(messages=iter([AIMessage("", tool_calls=[call])]))


class TestStructuredChains:
    def test_a_plain_question_is_taken(self):
        """invoke("a question") with a retriever: LangChain raised inside assign before."""
        chain = create_structured_citation_chain(
            structured_model([0]), Answer, retriever=retriever()
        )
        result = chain.invoke(GOOD)
        assert (GOOD, 3) == (result["question"], len(result["context"]))
        assert [0] == [c.marker for c in result["checked"].citations]

    def test_without_a_retriever_a_plain_question_names_the_keys(self):
        chain = create_structured_citation_chain(structured_model([0]), Answer)
        with pytest.raises(TypeError, match=r"'question'.*'context'"):
            chain.invoke(GOOD)

    @pytest.mark.parametrize(("citations", "outcome"), [([0, 2], "resolved"), ([1, 7], "out")])
    def test_reports_agree_with_the_recorded_file(self, tmp_path, citations, outcome):
        """index_base=0 structured chain: the report is what check finds in the row.

        Before, the report said no_answer for every structured run while the file was
        right, and a rejected id was recorded as chain_error.
        """
        path = tmp_path / "structured.jsonl"
        handler = CitationCallbackHandler(record_to=path, index_base=0)
        chain = create_structured_citation_chain(
            structured_model(citations), Answer, retriever=retriever()
        )
        if outcome == "out":
            with pytest.raises(MarkerOutOfRangeError):
                chain.invoke(GOOD, config={"callbacks": [handler]})
        else:
            chain.invoke(GOOD, config={"callbacks": [handler]})
        (row,) = rows(path.read_text())
        assert {"answer": "Fast.", "citations": citations} == row["answer"]
        assert (0, 3) == (row["index_base"], len(row["sources"]))
        (report,) = handler.reports
        by_id = check(path, tmp_path / "out")
        assert agrees(report, by_id[row["id"]])
        if outcome == "out":
            assert ("out_of_range", 7) == (report.outcome, report.marker)
            assert "MarkerOutOfRangeError" == row["rejected"]
            assert "fabricated_citation" in verdict(by_id[row["id"]])[2]
        else:
            assert "resolved" == report.outcome


class Quote(BaseModel):
    """One source id and a verbatim quote from it."""

    source_id: int
    quote: str


class QuotedAnswer(BaseModel):
    """Answer the question, quoting the sources used."""

    answer: str
    citations: list[Quote]


class TestStructuredQuotes:
    def test_a_rejected_quote_is_recorded_and_reported_as_check_reads_it(self, tmp_path):
        """A quote its source does not hold: QuoteNotInSourceError, a row holding the
        object, a quote_not_in_source report, and check failing the row for it."""
        path = tmp_path / "quotes.jsonl"
        handler = CitationCallbackHandler(record_to=path, index_base=0)
        args = {"answer": "Fast.", "citations": [{"source_id": 0, "quote": "flies at noon"}]}
        call = {"name": "QuotedAnswer", "args": args, "id": "c0"}
        llm = ToolCallingFake(messages=iter([AIMessage("", tool_calls=[call])]))
        chain = create_structured_citation_chain(llm, QuotedAnswer, retriever=retriever())
        with pytest.raises(QuoteNotInSourceError):
            chain.invoke(GOOD, config={"callbacks": [handler]})
        (row,) = rows(path.read_text())
        assert (args, "QuoteNotInSourceError") == (row["answer"], row["rejected"])
        (report,) = handler.reports
        assert "quote_not_in_source" == report.outcome
        by_id = check(path, tmp_path / "out")
        assert "quote_not_in_source" in verdict(by_id[row["id"]])[2]
        assert agrees(report, by_id[row["id"]])


class TestTutorialChain:
    def test_the_tutorial_chain_takes_the_parser(self):
        """The chain as written resolves [n] against the documents its prompt numbered."""
        handler = CitationCallbackHandler()
        chain = tutorial_chain(FakeListChatModel(responses=["It ends on filing [2]."]))
        answer = chain.invoke(GOOD, config={"callbacks": [handler]})
        shown = retriever().invoke(GOOD)
        assert [(2, shown[1].metadata["source"])] == [
            (c.marker, c.doc_id) for c in answer.citations
        ]

    def test_the_sources_follow_the_prompts_numbering(self):
        """A formatter that numbers from the last document: [1] is the last retrieved."""

        def reversed_numbers(docs: list[Document]) -> str:
            return "\n".join(f"[{len(docs) - i}] {d.page_content}" for i, d in enumerate(docs))

        chain = tutorial_chain(
            FakeListChatModel(responses=["Cited [1]."]), formatter=reversed_numbers
        )
        answer = chain.invoke(GOOD, config={"callbacks": [CitationCallbackHandler()]})
        last = retriever().invoke(GOOD)[-1]
        assert [last.page_content] == [c.text for c in answer.citations]

    def test_stream_and_ainvoke_take_the_parser_too(self):
        handler = CitationCallbackHandler()
        chain = tutorial_chain(FakeListChatModel(responses=["Filed [1].", "Filed [3]."]))
        (streamed,) = list(chain.stream(GOOD, config={"callbacks": [handler]}))
        awaited = asyncio.run(chain.ainvoke(GOOD, config={"callbacks": [handler]}))
        assert ([1], [3]) == (
            [c.marker for c in streamed.citations],
            [c.marker for c in awaited.citations],
        )

    def test_without_a_handler_the_error_names_the_keys_and_both_fixes(self):
        """Before: "the parser has no documents: bind them or pass a dict holding them"."""
        chain = tutorial_chain(FakeListChatModel(responses=[f"Filed [1]. {CANARY}"]))
        with pytest.raises(TypeError) as caught:
            chain.invoke(CANARY)
        message = str(caught.value)
        for part in (
            "documents=",
            "'context'",
            "CitationCallbackHandler",
            "RunnablePassthrough.assign",
        ):
            assert part in message
        assert CANARY not in message

    def test_an_unnumbered_prompt_is_named_not_guessed(self):
        """The tutorial's own format_docs numbers nothing: the parser says so, with counts."""
        chain = tutorial_chain(
            FakeListChatModel(responses=[f"Filed [1]. {CANARY}"]),
            formatter=lambda docs: "\n\n".join(d.page_content for d in docs),
        )
        with pytest.raises(TypeError, match=r"3 documents.*1\.\.3.*format_documents") as caught:
            chain.invoke(CANARY, config={"callbacks": [CitationCallbackHandler()]})
        assert CANARY not in str(caught.value)
