"""index_base=0 through every LangChain entry point where numbers meet documents.

Each pipeline is built with ``index_base=0`` and checked end to end: the model is
shown ``[0]`` for the first document, an answer citing ``[0]`` resolves to it, and
``[n]`` with ``n == len(documents)`` is out of range. Each test then runs the same
assertion on the naive variant, the same pipeline with the base not passed down
(the default, 1), and shows it failing: the prompt opens with ``[1]``, ``[0]`` is
rejected, or ``[1]`` names the wrong document.
"""

from __future__ import annotations

import asyncio

import pytest
from agent_fakes import PromptSpy, ToolCallingFakeChatModel, call, retriever_tool
from langchain.agents import create_agent
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

from citemark import CitedAnswer, MarkerOutOfRangeError, otel, parse_markers
from langchain_citemark import (
    AgentCitationReport,
    CitationCallbackHandler,
    CitationMiddleware,
    CitationOutputParser,
    CitedAnswerChain,
    acitations_valid_evaluator,
    citation_feedback,
    citations_valid_evaluator,
    create_cited_answer_chain,
    format_documents,
    make_citation_evaluator,
)
from langchain_citemark.middleware import REPORTS_KEY

DOCS = [
    Document("Patent licenses terminate on filing.", metadata={"source": "apache"}),
    Document("Keep the copyright notices.", metadata={"source": "bsd"}),
]
QUESTION = "When does the license end?"
INPUT = {"question": QUESTION, "documents": DOCS}
# Cites both documents 0-based; under base 1, [0] names nothing.
ZERO = "Licenses end on filing [0]; keep the notices [1]."
# Cites n == len(DOCS): out of range from 0 (valid 0..1), but in range from 1.
PAST_END = "Keep the notices [2]."
WANT = [(0, "apache"), (1, "bsd")]
BAD_BASES = [2, -1, True, False, "0", 1.0, None]


def cited(answer: CitedAnswer) -> list[tuple[int, str]]:
    return [(c.marker, c.doc_id) for c in answer.citations]


def first_header(prompt: str) -> str:
    """The first source header line of a rendered prompt (the line opening with '[')."""
    return next(line for line in prompt.splitlines() if line.startswith("["))


def fails(check) -> bool:
    """Whether ``check()`` fails: its assertion, or the pipeline rejecting the answer."""
    try:
        check()
    except (AssertionError, MarkerOutOfRangeError):
        return True
    return False


class Spy(PromptSpy):
    """PromptSpy that also returns the text of the last prompt a chat model saw."""

    def last(self) -> str:
        return "\n".join(m.text for m in self.seen[-1])


# --- CitedAnswerChain ---------------------------------------------------------------


def chain_for(reply: str, **kwargs) -> CitedAnswerChain:
    return create_cited_answer_chain(FakeListChatModel(responses=[reply]), **kwargs)


def check_chain(make) -> None:
    """invoke, ainvoke, stream and astream render [0] first and resolve [0] to DOCS[0]."""
    spy = Spy()
    answer = make(ZERO).invoke(INPUT, config={"callbacks": [spy]})
    assert first_header(spy.last()) == f"[0] {DOCS[0].page_content}"
    assert cited(answer) == WANT
    assert cited(asyncio.run(make(ZERO).ainvoke(INPUT))) == WANT
    # FakeListChatModel streams one character at a time: every marker is split.
    assert cited(list(make(ZERO).stream(INPUT))[-1]) == WANT

    async def astreamed() -> CitedAnswer:
        return [c async for c in make(ZERO).astream(INPUT)][-1]

    assert cited(asyncio.run(astreamed())) == WANT


class TestCitedAnswerChain:
    def test_zero_based_chain_renders_and_resolves_from_zero(self):
        """index_base=0: the prompt shows [0] first and [0] resolves to the first document."""
        check_chain(lambda reply: chain_for(reply, index_base=0))
        assert fails(lambda: check_chain(chain_for))  # the naive variant: base 1

    def test_marker_equal_to_the_document_count_is_out_of_range(self):
        """[2] with two documents is rejected from 0, in invoke and while streaming."""
        with pytest.raises(MarkerOutOfRangeError) as caught:
            chain_for(PAST_END, index_base=0).invoke(INPUT)
        assert (caught.value.marker, caught.value.valid_count, caught.value.index_base) == (
            2,
            2,
            0,
        )
        with pytest.raises(MarkerOutOfRangeError):
            list(chain_for(PAST_END, index_base=0).stream(INPUT))
        # The naive variant accepts it, silently naming the second document.
        assert cited(chain_for(PAST_END).invoke(INPUT)) == [(2, "bsd")]

    def test_the_field_is_validated_at_construction(self):
        """CitedAnswerChain(index_base=...) refuses anything but 0 and 1, bools included."""
        llm = FakeListChatModel(responses=["x"])
        for value in BAD_BASES:
            with pytest.raises(ValueError, match="index_base must be 0 or 1"):
                create_cited_answer_chain(llm, index_base=value)
            with pytest.raises(ValueError, match="index_base must be 0 or 1"):
                CitedAnswerChain(llm=llm, index_base=value)
        assert CitedAnswerChain(llm=llm).index_base == 1


# --- format_documents + CitationOutputParser ---------------------------------------


def lcel_chain(reply: str, base: int | None):
    """A chain its author wires: format_documents -> prompt -> model -> parser."""
    options = {} if base is None else {"index_base": base}
    prompt = ChatPromptTemplate.from_template("{context}\n\nQuestion: {question}")
    return RunnablePassthrough.assign(
        context=lambda x: format_documents(x["documents"], **options)
    ).assign(
        answer=prompt | FakeListChatModel(responses=[reply]) | StrOutputParser()
    ) | CitationOutputParser(documents_key="documents", **options)


def check_lcel(base: int | None) -> None:
    spy = Spy()
    answer = lcel_chain(ZERO, base).invoke(INPUT, config={"callbacks": [spy]})
    assert first_header(spy.last()) == f"[0] {DOCS[0].page_content}"
    assert cited(answer) == WANT


class TestFormatDocumentsAndParser:
    def test_format_documents_numbers_from_the_base(self):
        """format_documents(index_base=0) writes [0] first; the default writes [1]."""
        assert format_documents(DOCS, index_base=0).splitlines()[0] == "[0] " + (
            DOCS[0].page_content
        )
        assert format_documents(DOCS).splitlines()[0] == f"[1] {DOCS[0].page_content}"

    def test_a_zero_based_lcel_chain_resolves_from_zero(self):
        """Renderer and parser given index_base=0 agree; the naive chain rejects [0]."""
        check_lcel(0)
        assert fails(lambda: check_lcel(None))

    def test_the_streaming_parser_rejects_the_marker_past_the_end(self):
        """CitationOutputParser.transform with index_base=0 rejects [2] of two documents."""
        parser = CitationOutputParser(documents=DOCS, index_base=0)
        assert cited(list(parser.transform(iter(["Licenses end [", "0]."])))[-1]) == [(0, "apache")]
        with pytest.raises(MarkerOutOfRangeError):
            list(parser.transform(iter(["Keep [", "2", "]."])))

        def check_naive() -> None:
            assert cited(CitationOutputParser(documents=DOCS).parse(ZERO)) == WANT

        assert fails(check_naive)

    def test_invalid_bases_are_refused(self):
        """format_documents and the parser refuse anything but 0 and 1."""
        for value in BAD_BASES:
            with pytest.raises(ValueError, match="index_base must be 0 or 1"):
                format_documents(DOCS, index_base=value)
            with pytest.raises(ValueError, match="index_base must be 0 or 1"):
                CitationOutputParser(documents=DOCS, index_base=value)


# --- CitationMiddleware ------------------------------------------------------------


def agent_run(replies, middleware, tools=None, **state):
    model = ToolCallingFakeChatModel(messages=iter(replies))
    agent = create_agent(
        model, tools=[retriever_tool()] if tools is None else tools, middleware=[middleware]
    )
    spy = Spy()
    result = agent.invoke({"messages": [("user", QUESTION)], **state}, config={"callbacks": [spy]})
    return result, spy


def two_searches(answer: str) -> list[AIMessage]:
    return [
        AIMessage("", tool_calls=[call("search_licenses", "patent", "c1")]),
        AIMessage("", tool_calls=[call("search_licenses", "copyright", "c2")]),
        AIMessage(answer),
    ]


def check_middleware_tools(**options) -> None:
    """Tool results are numbered 0, 1, then 2 across searches; [0] and [2] resolve."""
    middleware = CitationMiddleware(on_violation="annotate", **options)
    result, spy = agent_run(two_searches("It ends on filing [0]; keep notices [2]."), middleware)
    views = [[m.content for m in ms if isinstance(m, ToolMessage)] for ms in spy.seen]
    assert views[2][0].startswith("[0] Patent licenses terminate")
    assert views[2][1].startswith("[2] You must retain")
    report = AgentCitationReport.model_validate(result[REPORTS_KEY][-1])
    assert report.outcome == "resolved"
    assert [(c.marker, c.doc_id) for c in report.citations] == [
        (0, "licenses/Apache-2.0"),
        (2, "licenses/BSD"),
    ]


def check_middleware_state(**options) -> None:
    """State documents go into the system message from [0]; [0] resolves to DOCS[0]."""
    middleware = CitationMiddleware(sources_key="documents", on_violation="annotate", **options)
    result, spy = agent_run([AIMessage(ZERO)], middleware, tools=[], documents=DOCS)
    assert f"[0] {DOCS[0].page_content}" in spy.last()
    report = AgentCitationReport.model_validate(result[REPORTS_KEY][-1])
    assert [(c.marker, c.doc_id) for c in report.citations] == WANT


class TestMiddleware:
    def test_tool_results_are_numbered_from_zero_across_searches(self):
        """index_base=0 continues the numbering 0, 1, 2 over two tool results."""
        check_middleware_tools(index_base=0)
        assert fails(check_middleware_tools)

    def test_state_sources_are_numbered_from_zero(self):
        """index_base=0 renders the state's documents from [0] and resolves [0]."""
        check_middleware_state(index_base=0)
        assert fails(check_middleware_state)

    def test_the_marker_past_the_end_is_out_of_range(self):
        """[2] of two documents: raised with on_violation='error', recorded with 'annotate'."""
        options = {"sources_key": "documents", "index_base": 0}
        with pytest.raises(MarkerOutOfRangeError) as caught:
            agent_run([AIMessage(PAST_END)], CitationMiddleware(**options), [], documents=DOCS)
        assert (caught.value.marker, caught.value.index_base) == (2, 0)
        annotate = CitationMiddleware(on_violation="annotate", **options)
        result, _ = agent_run([AIMessage(PAST_END)], annotate, [], documents=DOCS)
        report = AgentCitationReport.model_validate(result[REPORTS_KEY][-1])
        assert (report.outcome, report.out_of_range) == ("out_of_range", (2,))
        # [0] is in range from 0: the annotate report must not count it out of range.
        result, _ = agent_run([AIMessage("Filing [0].")], annotate, [], documents=DOCS)
        assert AgentCitationReport.model_validate(result[REPORTS_KEY][-1]).outcome == "resolved"
        naive = CitationMiddleware(on_violation="annotate", sources_key="documents")
        result, _ = agent_run([AIMessage("Filing [0].")], naive, [], documents=DOCS)
        assert AgentCitationReport.model_validate(result[REPORTS_KEY][-1]).outcome != "resolved"

    def test_the_stream_guard_resolves_from_zero(self):
        """stream_mode='messages': [0] streams through, [2] stops the stream."""

        def streamed(answer, **options):
            model = ToolCallingFakeChatModel(messages=iter([AIMessage(answer)]))
            middleware = CitationMiddleware(sources_key="documents", **options)
            agent = create_agent(model, tools=[], middleware=[middleware])
            state = {"messages": [("user", QUESTION)], "documents": DOCS}
            return "".join(c.text for c, _ in agent.stream(state, stream_mode="messages"))

        assert streamed("Filing [0] applies.", index_base=0) == "Filing [0] applies."
        with pytest.raises(MarkerOutOfRangeError):
            streamed("Keep [2] too.", index_base=0)
        with pytest.raises(MarkerOutOfRangeError):  # the naive guard rejects a valid [0]
            streamed("Filing [0] applies.")

    def test_invalid_bases_are_refused(self):
        for value in BAD_BASES:
            with pytest.raises(ValueError, match="index_base must be 0 or 1"):
                CitationMiddleware(index_base=value)


# --- CitationCallbackHandler -------------------------------------------------------


def handled(reply: str, handler: CitationCallbackHandler):
    prompt = ChatPromptTemplate.from_template("{context}\n\nQ: {question}")
    chain = (
        RunnablePassthrough.assign(context=lambda x: format_documents(x["documents"], index_base=0))
        | prompt
        | FakeListChatModel(responses=[reply])
        | StrOutputParser()
    )
    chain.invoke(INPUT, config={"callbacks": [handler]})
    return handler.reports[-1]


def check_handler(handler: CitationCallbackHandler) -> None:
    report = handled(ZERO, handler)
    assert (report.outcome, cited_report(report)) == ("resolved", WANT)


def cited_report(report) -> list[tuple[int, str]]:
    return [(c.marker, c.doc_id) for c in report.citations]


class TestCallbackHandler:
    def test_a_zero_based_chain_is_checked_from_zero(self):
        """A chain numbering from 0 is resolved from 0; the naive handler cannot read it."""
        check_handler(CitationCallbackHandler(index_base=0))
        assert fails(lambda: check_handler(CitationCallbackHandler()))
        assert handled(ZERO, CitationCallbackHandler()).reason == "numbering_unknown"

    def test_the_marker_past_the_end_is_out_of_range(self):
        report = handled(PAST_END, CitationCallbackHandler(index_base=0))
        assert (report.outcome, report.marker) == ("out_of_range", 2)

    def test_invalid_bases_are_refused(self):
        for value in BAD_BASES:
            with pytest.raises(ValueError, match="index_base must be 0 or 1"):
                CitationCallbackHandler(index_base=value)


# --- evaluators --------------------------------------------------------------------


class Run:
    """What LangSmith hands an evaluator: inputs and outputs."""

    def __init__(self, answer: str) -> None:
        self.inputs = {"question": QUESTION, "documents": DOCS}
        self.outputs = {"answer": answer}


class TestEvaluators:
    def test_make_citation_evaluator_scores_from_zero(self):
        """[0] and [1] pass from 0, [2] fails; the naive evaluator fails the valid answer."""
        zero = make_citation_evaluator(index_base=0)
        assert zero(Run(ZERO), None)["score"] == 1
        assert zero(Run(PAST_END), None)["score"] == 0
        assert make_citation_evaluator()(Run(ZERO), None)["score"] == 0  # naive

    def test_langsmith_feedback_scores_from_zero(self):
        """citation_feedback and both evaluators pass [0], fail [2] and say 0..1."""
        (good,) = citation_feedback(ZERO, DOCS, index_base=0)
        assert good["score"] is True
        (bad,) = citation_feedback(PAST_END, DOCS, index_base=0)
        assert (bad["score"], bad["comment"]) == (
            False,
            "marker [2] is outside 0..1 (1 of 1 citations fabricated)",
        )
        assert citations_valid_evaluator(index_base=0)(Run(ZERO), None)["results"][0]["score"]
        results = asyncio.run(acitations_valid_evaluator(index_base=0)(Run(PAST_END), None))
        assert results["results"][0]["score"] is False
        (naive,) = citation_feedback(ZERO, DOCS)
        assert naive["score"] is False

    def test_invalid_bases_are_refused_when_built(self):
        for value in BAD_BASES:
            for build in (make_citation_evaluator, citations_valid_evaluator):
                with pytest.raises(ValueError, match="index_base must be 0 or 1"):
                    build(index_base=value)
            with pytest.raises(ValueError, match="index_base must be 0 or 1"):
                acitations_valid_evaluator(index_base=value)
            with pytest.raises(ValueError, match="index_base must be 0 or 1"):
                citation_feedback(ZERO, DOCS, index_base=value)


# --- what the prompt says, and what the events say ---------------------------------


class TestPromptAndEvents:
    def test_a_zero_based_prompt_holds_only_the_headers_it_numbered(self):
        """The citing rules name no number, so the only markers shown are [0] and [1]."""
        spy = Spy()
        chain_for(ZERO, index_base=0).invoke(INPUT, config={"callbacks": [spy]})
        shown = [o.number for o in parse_markers(spy.last())]
        assert shown == [0, 1]
        parser = CitationOutputParser(documents=DOCS, index_base=0)
        assert parse_markers(parser.get_format_instructions()) == ()

    def test_check_events_state_the_zero_based_range(self):
        """With citemark.otel on, an out-of-range reply's event says 'outside 0..1'."""
        memory = InMemoryLogRecordExporter()
        provider = LoggerProvider()
        provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
        middleware = CitationMiddleware(
            sources_key="documents", on_violation="annotate", index_base=0
        )
        otel.enable(logger_provider=provider)
        try:
            agent_run([AIMessage(PAST_END)], middleware, [], documents=DOCS)
            agent_run([AIMessage(ZERO)], middleware, [], documents=DOCS)
        finally:
            otel.disable()
        assert [
            ("fail", "1 marker outside 0..1; first [2]"),
            ("pass", "2 sources cited of 2"),
        ] == [
            (a["gen_ai.evaluation.score.label"], a["gen_ai.evaluation.explanation"])
            for a in (dict(r.log_record.attributes) for r in memory.get_finished_logs())
        ]
