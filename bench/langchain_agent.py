"""Middleware overhead: an agent turn with CitationMiddleware against the same agent without it.

Both agents are ``create_agent`` over the same tool-calling fake chat model and the
same real retriever tool, answering the same question: the model calls the tool,
reads its two documents and answers citing both. The cited agent also numbers the
tool's documents for the model and resolves the answer's markers. Printed as a ratio
over 300 invocations each, interleaved, best of three (issue 15 target: <= 1.2).
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from langchain.agents import create_agent
from langchain_core.documents import Document
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import create_retriever_tool

from langchain_citemark import CitationMiddleware

N = 300
DOCS = [
    Document(
        "Patent licenses terminate as of the date such litigation is filed.",
        metadata={"source": "licenses/Apache-2.0", "start_index": 4891},
    ),
    Document("You must retain all copyright notices.", metadata={"source": "licenses/BSD"}),
]
ANSWER = "The patent license terminates when litigation is filed [1], and notices stay [2]."
QUESTION = {"messages": [("user", "When does the patent license end?")]}


class ToolCallingFake(GenericFakeChatModel):
    """GenericFakeChatModel that accepts bound tools; replies cycle tool call, answer."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFake:  # noqa: ARG002
        return self


class FixedRetriever(BaseRetriever):
    documents: list[Document]

    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:  # noqa: ARG002
        return list(self.documents)


def agent(middleware: list[Any]) -> Any:
    replies = itertools.cycle(
        [
            AIMessage("", tool_calls=[{"name": "search", "args": {"query": "patent"}, "id": "c1"}]),
            AIMessage(ANSWER),
        ]
    )
    tool = create_retriever_tool(
        FixedRetriever(documents=DOCS),
        "search",
        "Search the licenses.",
        response_format="content_and_artifact",
    )
    return create_agent(ToolCallingFake(messages=replies), tools=[tool], middleware=middleware)


def timed(graph: Any) -> float:
    graph.invoke(QUESTION)  # warm up
    start = time.perf_counter()
    for _ in range(N):
        graph.invoke(QUESTION)
    return time.perf_counter() - start


def main() -> None:
    plain, cited = agent([]), agent([CitationMiddleware()])
    if cited.invoke(QUESTION)["messages"][-1].content != ANSWER:
        msg = "the cited agent did not return the answer"
        raise RuntimeError(msg)
    base_times, cited_times = [], []
    for _ in range(3):
        base_times.append(timed(plain))
        cited_times.append(timed(cited))
    base, ours = min(base_times), min(cited_times)
    print(
        f"LangChain agent: with CitationMiddleware {ours / N * 1e6:.0f} us/turn, without "
        f"{base / N * 1e6:.0f} us/turn over {N} turns; ratio {ours / base:.2f} (target <= 1.2)"
    )


if __name__ == "__main__":
    main()
