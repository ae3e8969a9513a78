"""Shared builders for the LlamaIndex adapter tests: real indexes, scripted LLMs.

Everything here is a real llama-index-core object. The only stand-ins are the LLM
(`ScriptedLLM`, a small CustomLLM) and the embedding model (``MockEmbedding``), so
that no test touches the network. Node ids are fixed, because retrieval over
identical mock embeddings breaks ties by node id.
"""

from __future__ import annotations

import json
from pathlib import Path

from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import Document, NodeRelationship, TextNode

from citemark import FileReader, MappingReader

ROOT = Path(__file__).resolve().parents[3]
LICENSES = ROOT / "examples" / "data" / "licenses"


def license_documents() -> list[Document]:
    """The bundled license corpus, one Document per file, text read exactly."""
    reader = FileReader(LICENSES)
    return [
        Document(id_=path.name, text=reader.read(path.name), metadata={"file_name": path.name})
        for path in sorted(LICENSES.iterdir())
    ]


def license_reader() -> MappingReader:
    """A reader of the bundled licenses by document id."""
    return MappingReader({doc.doc_id: doc.text for doc in license_documents()})


def index_of(documents: list[Document], chunk_size: int = 256) -> VectorStoreIndex:
    """A VectorStoreIndex over ``documents`` with mock embeddings and stable node ids."""
    splitter = SentenceSplitter(
        chunk_size=chunk_size,
        chunk_overlap=0,
        id_func=lambda i, doc: f"{doc.doc_id}-{i}",
    )
    return VectorStoreIndex.from_documents(
        documents, transformations=[splitter], embed_model=MockEmbedding(embed_dim=8)
    )


def index_of_nodes(nodes: list[TextNode]) -> VectorStoreIndex:
    """A VectorStoreIndex over ready nodes, with mock embeddings."""
    return VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=8))


def text_node(node_id: str, text: str, doc_id: str, start: int | None = None) -> TextNode:
    """A node of document ``doc_id``, with offsets when ``start`` is given."""
    node = TextNode(
        id_=node_id,
        text=text,
        start_char_idx=start,
        end_char_idx=None if start is None else start + len(text),
        metadata={"file_name": doc_id},
    )
    node.relationships[NodeRelationship.SOURCE] = Document(id_=doc_id).as_related_node_info()
    return node


# Two short nodes with fixed ids; [1] and [2] below mean these, in this order, when
# both are retrieved (ties on mock embeddings break by node id).
APACHE = text_node(
    "a-apache", "Patent licenses terminate as of the date such litigation is filed.", "Apache", 4891
)
BSD = text_node("b-bsd", "Redistributions must retain the above copyright notice.", "BSD", 120)
QUESTION = "When does the patent license end?"


def scorer_reply(*outcomes: str, score: int = 3) -> str:
    """A well-formed scorer judge reply grading occurrences 1..n as ``supported``."""
    spans = {"supported": "the date such litigation is filed"}
    verdicts = [
        {"occurrence": k, "outcome": outcome, "context_span": spans[outcome]}
        for k, outcome in enumerate(outcomes, start=1)
    ]
    return json.dumps({"score": score, "explanation": "Stated there.", "verdicts": verdicts})
