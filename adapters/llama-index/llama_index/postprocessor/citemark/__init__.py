"""citemark for LlamaIndex: numbered, citable nodes and the QA prompt that cites them."""

from llama_index.postprocessor.citemark.base import CitationPostprocessor
from llama_index.postprocessor.citemark.chat import LlamaIndexChat
from llama_index.postprocessor.citemark.nodes import (
    CITATION_KEY,
    CitationNode,
    nodes_to_sources,
    number_nodes,
)
from llama_index.postprocessor.citemark.prompts import (
    CITATION_QA_TEMPLATE,
    CITATION_REFINE_TEMPLATE,
)

__all__ = [
    "CITATION_KEY",
    "CITATION_QA_TEMPLATE",
    "CITATION_REFINE_TEMPLATE",
    "CitationNode",
    "CitationPostprocessor",
    "LlamaIndexChat",
    "nodes_to_sources",
    "number_nodes",
]
