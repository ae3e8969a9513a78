"""citemark for LlamaIndex: a query engine whose ``[n]`` citations are resolved and checked."""

from llama_index.query_engine.citemark.base import CitedQueryEngine
from llama_index.query_engine.citemark.provider_citations import (
    citable_documents,
    parse_citation_blocks,
)
from llama_index.query_engine.citemark.response import (
    CitedAsyncStreamingResponse,
    CitedResponse,
    CitedStreamingResponse,
    resolve_response,
    validate_stream,
)

__all__ = [
    "CitedAsyncStreamingResponse",
    "CitedQueryEngine",
    "CitedResponse",
    "CitedStreamingResponse",
    "citable_documents",
    "parse_citation_blocks",
    "resolve_response",
    "validate_stream",
]
