"""Check an agent's citations with CitationMiddleware on langchain's create_agent.

The agent searches a retriever tool; the middleware numbers the tool's documents
for the model and checks every reply. The fake model stands in for yours.
"""

from typing import Any

from langchain.agents import create_agent
from langchain_core.documents import Document
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import create_retriever_tool

from citemark import MarkerOutOfRangeError
from langchain_citemark import CitationMiddleware


class ToolCallingFake(GenericFakeChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> "ToolCallingFake":  # noqa: ARG002, ANN401
        return self


class Licenses(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:  # noqa: ARG002, ANN401
        return [
            Document(
                "Patent licenses end when litigation is filed.", metadata={"source": "Apache-2.0"}
            ),
            Document("Copyright notices must be kept.", metadata={"source": "BSD"}),
        ]


search = create_retriever_tool(
    Licenses(), "search", "Search the licenses.", response_format="content_and_artifact"
)


def agent(answer: str, **options: Any) -> Any:  # noqa: ANN401
    replies = iter(
        [
            AIMessage("", tool_calls=[{"name": "search", "args": {"query": "patent"}, "id": "1"}]),
            AIMessage(answer),
        ]
    )
    return create_agent(
        ToolCallingFake(messages=replies),
        tools=[search],
        middleware=[CitationMiddleware(**options)],
    )


question = {"messages": [("user", "When does the patent license end?")]}

result = agent("It ends when litigation is filed [1].").invoke(question)
print("answer:", result["messages"][-1].content)

annotated = agent("It ends on filing [1], see [4].", on_violation="annotate").invoke(question)
report = annotated["citemark_reports"][-1]
print("annotated:", report["outcome"], report["out_of_range"], "of", report["source_count"])

try:
    agent("It ends on filing [4].").invoke(question)
except MarkerOutOfRangeError as exc:
    print("rejected:", exc)
