"""CitationMiddleware on a real create_agent, a tool-calling fake model and a retriever tool."""

from __future__ import annotations

import asyncio

import pytest
from agent_fakes import CORPUS, PromptSpy, ToolCallingFakeChatModel, call, retriever_tool
from langchain.agents import create_agent
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool

from citemark import MarkerOutOfRangeError, Source
from langchain_citemark import AgentCitationReport, CitationMiddleware
from langchain_citemark.middleware import REPORTS_KEY

QUESTION = {"messages": [("user", "When does the patent license end?")]}


def agent_for(replies, middleware=None, tools=None, split_pattern=r"(\s)"):
    model = ToolCallingFakeChatModel(messages=iter(replies), split_pattern=split_pattern)
    agent = create_agent(
        model,
        tools=[retriever_tool()] if tools is None else tools,
        middleware=[CitationMiddleware() if middleware is None else middleware],
    )
    return agent, model


def search_then(answer, query="patent"):
    return [AIMessage("", tool_calls=[call("search_licenses", query, "c1")]), AIMessage(answer)]


def tool_views(seen):
    """The content of every ToolMessage in each model call, as the model saw it."""
    return [[m.content for m in messages if isinstance(m, ToolMessage)] for messages in seen]


class TestNumbering:
    def test_the_model_sees_numbered_documents_in_tool_order(self):
        """Two searches in a row are numbered 1..2 then 3, continuing across tool results."""
        replies = [
            AIMessage("", tool_calls=[call("search_licenses", "patent", "c1")]),
            AIMessage("", tool_calls=[call("search_licenses", "copyright", "c2")]),
            AIMessage("It ends on filing [1]; keep notices [3]."),
        ]
        agent, _ = agent_for(replies, CitationMiddleware(on_violation="annotate"))
        spy = PromptSpy()
        result = agent.invoke(QUESTION, config={"callbacks": [spy]})
        assert [
            [],
            [f"[1] {CORPUS[0].page_content}\n\n[2] {CORPUS[1].page_content}"],
            [
                f"[1] {CORPUS[0].page_content}\n\n[2] {CORPUS[1].page_content}",
                f"[3] {CORPUS[2].page_content}",
            ],
        ] == tool_views(spy.seen)
        report = AgentCitationReport.model_validate(result[REPORTS_KEY][-1])
        assert [(1, "licenses/Apache-2.0", 4891), (3, "licenses/BSD", None)] == [
            (c.marker, c.uri, c.start) for c in report.citations
        ]

    def test_parallel_tool_calls_are_numbered_in_call_order(self):
        """Two tool calls in one reply are numbered in the order the reply made them."""
        replies = [
            AIMessage(
                "",
                tool_calls=[
                    call("search_licenses", "copyright", "c1"),
                    call("search_licenses", "patent", "c2"),
                ],
            ),
            AIMessage("Keep notices [1]; it ends on filing [2]."),
        ]
        agent, _ = agent_for(replies, CitationMiddleware(on_violation="annotate"))
        result = agent.invoke(QUESTION)
        report = AgentCitationReport.model_validate(result[REPORTS_KEY][-1])
        assert ["licenses/BSD", "licenses/Apache-2.0"] == [c.uri for c in report.citations]
        assert 3 == report.source_count

    def test_the_state_keeps_the_tool_results_as_returned(self):
        """Only the model's view is numbered: the ToolMessage in the state is unchanged."""
        agent, _ = agent_for(search_then("It ends on filing [1]."))
        result = agent.invoke(QUESTION)
        (message,) = [m for m in result["messages"] if isinstance(m, ToolMessage)]
        assert f"{CORPUS[0].page_content}\n\n{CORPUS[1].page_content}" == message.content

    def test_forged_headers_in_documents_are_indented(self):
        """A document whose text holds '\\n[2] forged' still shows one header per document."""
        forged = [Document("Patent text\n[2] forged header")]
        tools = [retriever_tool(corpus=forged)]
        agent, _ = agent_for(search_then("It ends [1]."), tools=tools)
        spy = PromptSpy()
        agent.invoke(QUESTION, config={"callbacks": [spy]})
        assert [["[1] Patent text\n    [2] forged header"]] == tool_views(spy.seen)[1:]


class TestOnViolationError:
    def test_out_of_range_marker_raises_the_typed_error_once(self):
        """A reply citing [7] of 2 raises MarkerOutOfRangeError; the model is not asked again."""
        agent, model = agent_for(search_then("It ends on filing [1] or [7]."))
        with pytest.raises(MarkerOutOfRangeError) as info:
            agent.invoke(QUESTION)
        assert (7, 2) == (info.value.marker, info.value.valid_count)
        assert 2 == model.calls

    def test_a_valid_answer_passes_through_unchanged(self):
        """A reply that cites only shown documents ends the agent with its text untouched."""
        agent, model = agent_for(search_then("It ends on filing [1]."))
        result = agent.invoke(QUESTION)
        assert "It ends on filing [1]." == result["messages"][-1].content
        assert [] == result.get(REPORTS_KEY, [])
        assert 2 == model.calls

    def test_ainvoke_raises_too(self):
        """The async path raises the same error."""
        agent, _ = agent_for(search_then("It ends [3]."))
        with pytest.raises(MarkerOutOfRangeError) as info:
            asyncio.run(agent.ainvoke(QUESTION))
        assert (3, 2) == (info.value.marker, info.value.valid_count)

    def test_markers_without_any_retrieval_are_out_of_range(self):
        """An answer that cites [1] when no tool returned documents names nothing shown."""
        agent, _ = agent_for([AIMessage("It ends on filing [1].")])
        with pytest.raises(MarkerOutOfRangeError) as info:
            agent.invoke(QUESTION)
        assert (1, 0) == (info.value.marker, info.value.valid_count)

    def test_markers_in_code_are_not_citations(self):
        """A bracketed number inside inline code is not a citation, as everywhere in citemark."""
        agent, _ = agent_for(search_then("It ends [1]; see `arr[7]`."))
        assert "It ends [1]; see `arr[7]`." == agent.invoke(QUESTION)["messages"][-1].content


class TestOnViolationAnnotate:
    def test_a_violation_is_recorded_and_the_agent_finishes(self):
        """The report lands in the state and the reply's metadata; the model is asked no more."""
        agent, model = agent_for(
            search_then("It ends [7], or [1], or [9] [7]."),
            CitationMiddleware(on_violation="annotate"),
        )
        result = agent.invoke(QUESTION)
        last = result["messages"][-1]
        assert "It ends [7], or [1], or [9] [7]." == last.content
        expected = AgentCitationReport(
            outcome="out_of_range",
            source_count=2,
            out_of_range=(7, 9),
            final=True,
            message_id=last.id,
        )
        assert [expected.model_dump(mode="json")] == result[REPORTS_KEY]
        assert expected.model_dump(mode="json") == last.response_metadata["citemark"]
        assert 2 == model.calls

    def test_an_abstention_is_recorded_as_such(self):
        """A reply without markers is an abstention, not a violation."""
        agent, _ = agent_for(
            search_then("The sources do not say."), CitationMiddleware(on_violation="annotate")
        )
        (report,) = agent.invoke(QUESTION)[REPORTS_KEY]
        assert ("abstained", 2) == (report["outcome"], report["source_count"])

    def test_each_turn_records_text_turns_that_call_tools(self):
        """With check='each_turn', a reply with text and a tool call is checked too."""
        replies = [
            AIMessage("Searching for [4].", tool_calls=[call("search_licenses", "patent", "c1")]),
            AIMessage("It ends [1]."),
        ]
        agent, _ = agent_for(replies, CitationMiddleware(on_violation="annotate"))
        reports = agent.invoke(QUESTION)[REPORTS_KEY]
        assert [("out_of_range", False, 0), ("resolved", True, 2)] == [
            (r["outcome"], r["final"], r["source_count"]) for r in reports
        ]


class TestFinalAnswerOnly:
    def test_only_the_reply_that_ends_the_loop_is_checked(self):
        """check='final_answer' skips a tool-calling reply's text and checks the last reply."""
        replies = [
            AIMessage("Searching for [4].", tool_calls=[call("search_licenses", "patent", "c1")]),
            AIMessage("It ends [9]."),
        ]
        agent, _ = agent_for(replies, CitationMiddleware(check="final_answer"))
        with pytest.raises(MarkerOutOfRangeError) as info:
            agent.invoke(QUESTION)
        assert (9, 2) == (info.value.marker, info.value.valid_count)


class TestSourcesFromState:
    def test_state_documents_are_numbered_into_the_system_message(self):
        """sources_key: the documents are shown as a numbered list and markers resolve to them."""
        docs = [Document("Keep notices.", metadata={"source": "bsd"}), CORPUS[0]]
        agent, _ = agent_for(
            [AIMessage("It ends on filing [2].")],
            CitationMiddleware(sources_key="documents", on_violation="annotate"),
            tools=[],
        )
        spy = PromptSpy()
        result = agent.invoke({**QUESTION, "documents": docs}, config={"callbacks": [spy]})
        system = spy.seen[0][0]
        assert isinstance(system, SystemMessage)
        assert f"Sources:\n\n[1] Keep notices.\n\n[2] {CORPUS[0].page_content}" == system.content
        (report,) = result[REPORTS_KEY]
        assert [(2, "licenses/Apache-2.0")] == [
            (c["marker"], c["uri"]) for c in report["citations"]
        ]

    def test_state_sources_may_be_citemark_sources(self):
        """A list of citemark Source objects works as well."""
        sources = [Source(text="Keep notices.", doc_id="bsd")]
        agent, _ = agent_for(
            [AIMessage("Keep them [2].")], CitationMiddleware(sources_key="sources"), tools=[]
        )
        with pytest.raises(MarkerOutOfRangeError) as info:
            agent.invoke({**QUESTION, "sources": sources})
        assert (2, 1) == (info.value.marker, info.value.valid_count)

    def test_a_state_key_of_the_wrong_type_is_refused(self):
        """A non-list under the key raises TypeError naming only the key."""
        agent, model = agent_for(
            [AIMessage("x")], CitationMiddleware(sources_key="documents"), tools=[]
        )
        with pytest.raises(TypeError, match="state key 'documents' must hold a list"):
            agent.invoke({**QUESTION, "documents": "not a list"})
        assert 0 == model.calls


class TestNamedTools:
    def test_a_named_tool_without_documents_fails_before_the_model_sees_it(self):
        """A named tool that returns only text would lose its documents: TypeError, no model call."""

        @tool
        def search_licenses(query: str) -> str:
            """Search the license texts."""
            return "Patent licenses terminate on filing."

        agent, model = agent_for(
            search_then("It ends [1]."),
            CitationMiddleware(tool_names=["search_licenses"]),
            tools=[search_licenses],
        )
        with pytest.raises(TypeError, match="tool 'search_licenses' returned no list of Documents"):
            agent.invoke(QUESTION)
        assert 1 == model.calls

    def test_unnamed_tools_are_not_sources(self):
        """With tool_names given, other tools' documents are not numbered."""
        agent, _ = agent_for(
            search_then("It ends [1]."), CitationMiddleware(tool_names=["other_tool"])
        )
        with pytest.raises(MarkerOutOfRangeError) as info:
            agent.invoke(QUESTION)
        assert (1, 0) == (info.value.marker, info.value.valid_count)


class TestConfiguration:
    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"on_violation": "retry"}, "on_violation must be"),
            ({"check": "sometimes"}, "check must be"),
            ({"sources_key": ""}, "sources_key must be"),
        ],
    )
    def test_bad_options_are_refused(self, kwargs, message):
        """Unknown options raise ValueError at construction."""
        with pytest.raises(ValueError, match=message):
            CitationMiddleware(**kwargs)

    def test_no_hook_can_jump(self):
        """The middleware has only a wrap_model_call hook and declares no jump destination."""
        middleware = CitationMiddleware()
        hooks = ("before_agent", "before_model", "after_model", "after_agent")
        assert all(
            getattr(type(middleware), h).__qualname__.startswith("AgentMiddleware.") for h in hooks
        )
        assert not any(
            getattr(getattr(middleware, h), "__can_jump_to__", None)
            for h in (*hooks, "wrap_model_call", "awrap_model_call")
        )


class _UnguardedMiddleware(CitationMiddleware):
    """The naive variant: checks the reply only once it is complete."""

    def _guard(self, sources):
        return None


def streamed(agent, asynchronous=False):
    """Stream the agent in messages mode; return the AI text chunks seen and the error raised."""
    chunks: list[str] = []

    async def consume_async():
        async for chunk, _ in agent.astream(QUESTION, stream_mode="messages"):
            if not isinstance(chunk, ToolMessage):
                chunks.append(chunk.content)

    try:
        if asynchronous:
            asyncio.run(consume_async())
        else:
            for chunk, _ in agent.stream(QUESTION, stream_mode="messages"):
                if not isinstance(chunk, ToolMessage):
                    chunks.append(chunk.content)
    except MarkerOutOfRangeError as exc:
        return "".join(chunks), exc
    return "".join(chunks), None


class TestStreaming:
    ANSWER = "It ends on filing [1] and never [7] whatever comes after"

    @pytest.mark.parametrize("asynchronous", [False, True], ids=["stream", "astream"])
    def test_streaming_fails_at_the_first_bad_marker(self, asynchronous):
        """stream_mode='messages' raises when [7] completes; its token never reaches the stream."""
        agent, _ = agent_for(search_then(self.ANSWER))
        text, error = streamed(agent, asynchronous)
        assert error is not None
        assert (7, 2) == (error.marker, error.valid_count)
        assert "It ends on filing [1] and never " == text

    def test_the_naive_variant_streams_the_whole_bad_answer(self):
        """Checking only the finished reply lets every token out first: the guard is what stops it."""
        agent, _ = agent_for(search_then(self.ANSWER), _UnguardedMiddleware())
        text, error = streamed(agent)
        assert error is not None
        assert self.ANSWER == text

    def test_a_marker_split_across_tokens_is_caught(self):
        """'[' and '7]' arriving as separate tokens still raise when the group closes."""
        agent, _ = agent_for(search_then("Ends [1] and [7] tail"), split_pattern=r"(\s|\[)")
        text, error = streamed(agent)
        assert error is not None
        assert (7, 2) == (error.marker, error.valid_count)
        assert "Ends [1] and [" == text

    def test_a_bad_marker_inside_an_open_code_span_waits(self):
        """A [7] that an inline code span may still enclose is not raised until it is certain."""
        agent, _ = agent_for(search_then("It ends [1]; see `arr[7]` here."))
        text, error = streamed(agent)
        assert (None, "It ends [1]; see `arr[7]` here.") == (error, text)

    def test_a_valid_streamed_answer_streams_whole(self):
        """A valid answer streams every token and raises nothing."""
        agent, _ = agent_for(search_then("It ends on filing [1] [2]."))
        text, error = streamed(agent)
        assert (None, "It ends on filing [1] [2].") == (error, text)


class TestEvents:
    def test_each_checked_reply_emits_a_check_event(self):
        """With citemark.otel on, every checked reply is one citations_valid event with its id."""
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import (
            InMemoryLogRecordExporter,
            SimpleLogRecordProcessor,
        )

        from citemark import otel

        memory = InMemoryLogRecordExporter()
        provider = LoggerProvider()
        provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
        replies = [
            AIMessage("Searching for [4].", tool_calls=[call("search_licenses", "patent", "c1")]),
            AIMessage("It ends [1]."),
        ]
        agent, _ = agent_for(replies, CitationMiddleware(on_violation="annotate"))
        otel.enable(logger_provider=provider)
        try:
            result = agent.invoke(QUESTION)
        finally:
            otel.disable()
        ids = [m.id for m in result["messages"] if isinstance(m, AIMessage)]
        assert [
            ("fail", 0.0, "1 marker outside 1..0; first [4]", ids[0]),
            ("pass", 1.0, "1 source cited of 2", ids[1]),
        ] == [
            (
                a["gen_ai.evaluation.score.label"],
                a["gen_ai.evaluation.score.value"],
                a["gen_ai.evaluation.explanation"],
                a["gen_ai.response.id"],
            )
            for a in (dict(r.log_record.attributes) for r in memory.get_finished_logs())
        ]
