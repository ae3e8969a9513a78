"""LangChain integration for citemark: checkable integer citations."""

from langchain_citemark.callbacks import CitationCallbackHandler, CitationReport
from langchain_citemark.chat_models import LangChainChat
from langchain_citemark.documents import (
    CITED_ANSWER_PROMPT,
    documents_to_sources,
    format_documents,
)
from langchain_citemark.evaluators import make_citation_evaluator
from langchain_citemark.output_parsers import CitationOutputParser
from langchain_citemark.provider_citations import parse_provider_message
from langchain_citemark.runnables import (
    CitedAnswerChain,
    CitedAnswerInput,
    create_cited_answer_chain,
)

__all__ = [
    "CITED_ANSWER_PROMPT",
    "CitationCallbackHandler",
    "CitationOutputParser",
    "CitationReport",
    "CitedAnswerChain",
    "CitedAnswerInput",
    "LangChainChat",
    "create_cited_answer_chain",
    "documents_to_sources",
    "format_documents",
    "make_citation_evaluator",
    "parse_provider_message",
]
