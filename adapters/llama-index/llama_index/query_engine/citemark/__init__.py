"""citemark for LlamaIndex: a query engine whose ``[n]`` citations are resolved and checked."""

from llama_index.query_engine.citemark.base import CitedQueryEngine
from llama_index.query_engine.citemark.provider_citations import (
    citable_documents,
    parse_citation_blocks,
)
from llama_index.query_engine.citemark.recording import CitationRecordingHandler
from llama_index.query_engine.citemark.response import (
    CitedAsyncStreamingResponse,
    CitedResponse,
    CitedStreamingResponse,
    resolve_response,
    validate_stream,
)
from llama_index.query_engine.citemark.structured import (
    StructuredCitedResponse,
    resolve_structured_nodes,
    resolve_structured_response,
)

__all__ = [
    "CitationRecordingHandler",
    "CitedAsyncStreamingResponse",
    "CitedQueryEngine",
    "CitedResponse",
    "CitedStreamingResponse",
    "StructuredCitedResponse",
    "citable_documents",
    "parse_citation_blocks",
    "resolve_response",
    "resolve_structured_nodes",
    "resolve_structured_response",
    "validate_stream",
]
