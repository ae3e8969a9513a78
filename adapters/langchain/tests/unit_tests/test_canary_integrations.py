"""The canary never reaches an exception, a log record, an event attribute or a feedback comment.

One unique string is placed in the question, the documents, the answer and the
judge's reply; every new integration path (agent middleware in each mode, streaming,
LangSmith feedback, OpenTelemetry events) is driven with it and everything it left
behind is searched.
"""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from agent_fakes import ToolCallingFakeChatModel, call, retriever_tool
from langchain.agents import create_agent
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, ToolMessage
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

from citemark import otel
from citemark.testing import ScriptedChat, assert_cited
from langchain_citemark import CitationMiddleware, citation_feedback

CANARY = "CANARY-2b9d41e7-agent-do-not-leak"
DOCS = [Document(f"{CANARY} patent text"), Document(f"second {CANARY} text")]
QUESTION = {"messages": [("user", f"{CANARY} question?")]}
BAD = f"{CANARY} answer [1] and [7] {CANARY}"


@pytest.fixture
def exporter():
    memory = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    otel.enable(logger_provider=provider)
    yield memory
    otel.disable()


def agent_for(answer, middleware):
    replies = iter(
        [AIMessage("", tool_calls=[call("search", f"{CANARY} patent", "c1")]), AIMessage(answer)]
    )
    model = ToolCallingFakeChatModel(messages=replies)
    tools = [retriever_tool("search", corpus=DOCS)]
    return create_agent(model, tools=tools, middleware=[middleware])


def provoke():
    """Drive every new path with the canary; return the errors raised."""
    errors: list[BaseException] = []

    def attempt(action):
        try:
            action()
        except Exception as exc:  # noqa: BLE001 - collecting every error is the point
            errors.append(exc)

    attempt(lambda: agent_for(BAD, CitationMiddleware()).invoke(QUESTION))
    attempt(lambda: asyncio.run(agent_for(BAD, CitationMiddleware()).ainvoke(QUESTION)))
    attempt(lambda: agent_for(BAD, CitationMiddleware(on_violation="annotate")).invoke(QUESTION))

    def stream():
        list(agent_for(BAD, CitationMiddleware()).stream(QUESTION, stream_mode="messages"))

    attempt(stream)
    attempt(lambda: assert_cited(BAD, [*map(_source, DOCS)], question=CANARY))
    attempt(
        lambda: agent_for(BAD, CitationMiddleware(sources_key="documents")).invoke(
            {**QUESTION, "documents": f"{CANARY}"}
        )
    )

    @_tool_named("search")
    def search(query: str) -> str:
        """Search."""
        return f"{CANARY} {query}"

    def untyped_tool():
        replies = iter([AIMessage("", tool_calls=[call("search", CANARY, "c1")]), AIMessage(BAD)])
        create_agent(
            ToolCallingFakeChatModel(messages=replies),
            tools=[search],
            middleware=[CitationMiddleware(tool_names=["search"])],
        ).invoke(QUESTION)

    attempt(untyped_tool)
    return errors


def _source(document):
    from langchain_citemark import documents_to_sources

    return documents_to_sources([document])[0]


def _tool_named(name):
    from langchain_core.tools import tool

    return tool(name)


def judge_echo():
    return json.dumps(
        {
            "score": 3,
            "explanation": f"{CANARY} explanation",
            "verdicts": [{"occurrence": 1, "outcome": "supported", "context_span": "patent text"}],
        }
    )


class TestCanary:
    def test_no_error_message_carries_the_canary(self, caplog):
        """Every error raised on the new paths is free of the canary, in str, repr and args."""
        caplog.set_level(logging.DEBUG)
        errors = provoke()
        assert len(errors) >= 6
        assert [] == [
            type(e).__name__
            for e in errors
            if CANARY in str(e) or CANARY in repr(e) or CANARY in repr(e.args)
        ]

    def test_no_log_record_carries_the_canary(self, caplog):
        """Log records written on the new paths (LangChain's own callback warnings too) are clean."""
        caplog.set_level(logging.DEBUG)
        provoke()
        leaked = [r for r in caplog.records if CANARY in r.getMessage() or CANARY in str(r.args)]
        assert [] == leaked

    def test_no_event_attribute_carries_the_canary(self, exporter, caplog):
        """Every gen_ai.evaluation.result event (middleware, scorer, judge) is free of the canary."""
        provoke()
        judge = ScriptedChat([judge_echo()], provider="local", model_name="j")
        citation_feedback(f"{CANARY} patent [1].", DOCS, CANARY, judge=judge)
        records = exporter.get_finished_logs()
        assert len(records) >= 6
        names = {r.log_record.attributes["gen_ai.evaluation.name"] for r in records}
        assert {"citemark.citations_valid", "citemark.citation_support"} <= names
        for record in records:
            assert record.log_record.body is None
            assert CANARY not in json.dumps(dict(record.log_record.attributes))

    def test_no_feedback_comment_carries_the_canary(self):
        """LangSmith feedback, the judge's echo included, holds structural facts only."""
        judge = ScriptedChat([judge_echo()], provider="local", model_name="j")
        other = ScriptedChat([judge_echo()], provider="local", model_name="j")
        items = citation_feedback(f"{CANARY} patent [1] [9].", DOCS, CANARY, judge=other)
        items += citation_feedback(f"{CANARY} patent [1].", DOCS, CANARY, judge=judge)
        assert 4 == len(items)
        assert CANARY not in json.dumps(items)
        # The echo is real: the scorer's own explanation (data, not a message) quotes it.
        from citemark import CitationScorer

        echo = ScriptedChat([judge_echo()], provider="local", model_name="j")
        graded = CitationScorer(echo).score_sync(f"{CANARY} patent [1].", [*map(_source, DOCS)])
        assert CANARY in graded.explanation

    def test_the_annotated_report_is_data_and_may_hold_text(self):
        """The state report is an artifact: citations carry source text, by design."""
        result = agent_for(f"{CANARY} [1]", CitationMiddleware(on_violation="annotate")).invoke(
            QUESTION
        )
        (report,) = result["citemark_reports"]
        assert CANARY in report["citations"][0]["text"]
        assert isinstance(result["messages"][2], ToolMessage)
