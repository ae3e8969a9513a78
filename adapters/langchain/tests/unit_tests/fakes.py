"""Small subclasses of LangChain's own test doubles, for exact streaming control."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.documents import Document
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.retrievers import BaseRetriever


class ChunkedFakeChatModel(GenericFakeChatModel):
    """GenericFakeChatModel that streams exactly the scripted chunks of one reply."""

    chunks: list[str]
    messages: Any = iter(())
    calls: int = 0

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.calls += 1
        return ChatResult(
            generations=[ChatGeneration(message=AIMessage(content="".join(self.chunks)))]
        )

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ):
        self.calls += 1
        for piece in self.chunks:
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
            if run_manager is not None:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk


class ListRetriever(BaseRetriever):
    """A retriever returning fixed documents, so callbacks see a real retriever run."""

    documents: list[Document]

    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        return list(self.documents)


DOCUMENTS = [
    Document(
        "Patent licenses terminate as of the date such litigation is filed.",
        metadata={"source": "licenses/Apache-2.0", "start_index": 4891},
    ),
    Document(
        "You must retain all copyright notices.",
        metadata={"source": "licenses/BSD", "start_index": -1},
    ),
    Document("Redistribution is permitted.", id="doc-3"),
]
QUESTION = "When does the patent license end?"
