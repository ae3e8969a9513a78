"""LangChain integration for citemark: checkable integer citations."""

import importlib
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
from langchain_citemark.runnables import (
    CitedAnswerChain,
    CitedAnswerInput,
    create_cited_answer_chain,
)

if TYPE_CHECKING:
    from langchain_citemark.middleware import AgentCitationReport, CitationMiddleware
    from langchain_citemark.provider_citations import parse_provider_message
    from langchain_citemark.structured import (
        STRUCTURED_CITATION_PROMPT,
        StructuredCitationChecker,
        create_structured_citation_chain,
        format_documents_with_ids,
    )

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

# Names whose modules load on first use. The agent middleware needs the `langchain`
# package (the `agents` extra), so `import langchain_citemark` works with
# langchain-core alone; provider citations (citemark.providers) and structured
# answers build their models only when used.
_LAZY = {
    "AgentCitationReport": "langchain_citemark.middleware",
    "CitationMiddleware": "langchain_citemark.middleware",
    "parse_provider_message": "langchain_citemark.provider_citations",
    "STRUCTURED_CITATION_PROMPT": "langchain_citemark.structured",
    "StructuredCitationChecker": "langchain_citemark.structured",
    "create_structured_citation_chain": "langchain_citemark.structured",
    "format_documents_with_ids": "langchain_citemark.structured",
}


def __getattr__(name: str) -> Any:
    home = _LAZY.get(name)
    if home is None:
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
