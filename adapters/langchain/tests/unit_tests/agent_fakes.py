"""A tool-calling subclass of LangChain's GenericFakeChatModel, and a real retriever tool."""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForLLMRun
from langchain_core.documents import Document
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool, create_retriever_tool


class ToolCallingFakeChatModel(GenericFakeChatModel):
    """GenericFakeChatModel that accepts bound tools and streams tool calls too.

    ``bind_tools`` returns the model itself (the script decides which tool is
    called); ``_stream`` yields a scripted tool-calling reply as one chunk of tool
    call chunks, and a text reply token by token (split on whitespace, as the parent
    does), reporting each token to the run's callbacks. ``calls`` counts model calls.
    """

    calls: int = 0
    split_pattern: str = r"(\s)"
    """Where a text reply is split into tokens (a capture group keeps the separators)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFakeChatModel:
        return self

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kwargs):
        self.calls += 1
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ):
        result: ChatResult = self._generate(messages, stop=stop, run_manager=run_manager, **kwargs)
        message = result.generations[0].message
        assert isinstance(message, AIMessage)
        pieces = re.split(self.split_pattern, message.content) if message.content else []
        pieces = [piece for piece in pieces if piece]
        for piece in pieces:
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece, id=message.id))
            if run_manager is not None:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk
        if message.tool_calls:
            calls = [
                {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i}
                for i, c in enumerate(message.tool_calls)
            ]
            chunk = ChatGenerationChunk(
                message=AIMessageChunk(content="", id=message.id, tool_call_chunks=calls)
            )
            if run_manager is not None:
                run_manager.on_llm_new_token("", chunk=chunk)
            yield chunk


class KeywordRetriever(BaseRetriever):
    """Return the documents whose text contains the query's first word, in corpus order."""

    corpus: list[Document]

    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        word = query.split(maxsplit=1)[0].lower() if query.split() else ""
        return [d for d in self.corpus if word in d.page_content.lower()]


class PromptSpy(BaseCallbackHandler):
    """Record the messages of every chat model call, as the model saw them."""

    def __init__(self) -> None:
        self.seen: list[list[BaseMessage]] = []

    def on_chat_model_start(self, serialized, messages, **kwargs):
        self.seen.append(list(messages[0]))


CORPUS = [
    Document(
        "Patent licenses terminate as of the date such litigation is filed.",
        metadata={"source": "licenses/Apache-2.0", "start_index": 4891},
    ),
    Document(
        "Patent grants are irrevocable otherwise.", metadata={"source": "licenses/Apache-2.0"}
    ),
    Document("You must retain all copyright notices.", metadata={"source": "licenses/BSD"}),
]


def retriever_tool(name: str = "search_licenses", corpus: list[Document] = CORPUS) -> BaseTool:
    """A real retriever tool that returns its documents as the ToolMessage artifact."""
    return create_retriever_tool(
        KeywordRetriever(corpus=corpus),
        name,
        "Search the license texts.",
        response_format="content_and_artifact",
    )


def call(tool: str, query: str, call_id: str) -> dict[str, Any]:
    return {"name": tool, "args": {"query": query}, "id": call_id}
