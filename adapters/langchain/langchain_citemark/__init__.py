"""LangChain integration for citemark: checkable integer citations."""

from typing import TYPE_CHECKING, Any

from langchain_citemark.callbacks import CitationCallbackHandler, CitationReport
from langchain_citemark.chat_models import LangChainChat
from langchain_citemark.documents import (
    CITED_ANSWER_PROMPT,
    documents_to_sources,
    format_documents,
)
from langchain_citemark.evaluators import make_citation_evaluator
from langchain_citemark.langsmith_evaluators import (
    acitations_valid_evaluator,
    citation_feedback,
    citations_valid_evaluator,
)
from langchain_citemark.output_parsers import CitationOutputParser
from langchain_citemark.provider_citations import parse_provider_message
from langchain_citemark.runnables import (
    CitedAnswerChain,
    CitedAnswerInput,
    create_cited_answer_chain,
)
from langchain_citemark.structured import (
    STRUCTURED_CITATION_PROMPT,
    StructuredCitationChecker,
    create_structured_citation_chain,
    format_documents_with_ids,
)

if TYPE_CHECKING:
    from langchain_citemark.middleware import AgentCitationReport, CitationMiddleware

__all__ = [
    "CITED_ANSWER_PROMPT",
    "STRUCTURED_CITATION_PROMPT",
    "AgentCitationReport",
    "CitationCallbackHandler",
    "CitationMiddleware",
    "CitationOutputParser",
    "CitationReport",
    "CitedAnswerChain",
    "CitedAnswerInput",
    "LangChainChat",
    "StructuredCitationChecker",
    "acitations_valid_evaluator",
    "citation_feedback",
    "citations_valid_evaluator",
    "create_cited_answer_chain",
    "create_structured_citation_chain",
    "documents_to_sources",
    "format_documents",
    "format_documents_with_ids",
    "make_citation_evaluator",
    "parse_provider_message",
]

# The agent middleware needs the `langchain` package (the `agents` extra); importing
# it lazily keeps `import langchain_citemark` working with langchain-core alone.
_LAZY = {"AgentCitationReport", "CitationMiddleware"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from langchain_citemark import middleware  # noqa: PLC0415 - optional dependency

        return getattr(middleware, name)
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
