"""Checkable [n] citations on an ordinary LlamaIndex query engine, offline.

A VectorStoreIndex over two bundled licenses (mock embeddings, so nothing leaves
the machine), an ordinary query engine whose last node postprocessor is
CitationPostprocessor, with the citation QA template, and resolve_response to map
each [n] of the answer to the node it names. Every citation is then re-read from
its license file. The stand-in model is a scripted CustomLLM: first it cites the
source that holds the answer, then one that was never shown, which is rejected.
"""

from __future__ import annotations

from pathlib import Path

from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import Document

from citemark import FileReader, MarkerOutOfRangeError, verify_citation
from llama_index.postprocessor.citemark import CITATION_QA_TEMPLATE, CitationPostprocessor
from llama_index.postprocessor.citemark.testing import ScriptedLLM
from llama_index.query_engine.citemark import resolve_response

LICENSES = Path(__file__).resolve().parent / "data" / "licenses"
QUESTION = (
    "What happens to the Apache patent license if you sue claiming the Work infringes a patent?"
)


def stand_in_model(prompt: str) -> str:
    """Cite the numbered source that holds the answer, as a good model would."""
    for block in prompt.split("\ncite_as: ")[1:]:
        if "such litigation is filed" in block:
            marker = block.split("\n", 1)[0]
            return f"The patent licenses granted to you terminate as of the date the litigation is filed {marker}."
    return "The sources do not say."


reader = FileReader(LICENSES)
documents = [Document(id_=name, text=reader.read(name)) for name in ("Apache-2.0", "BSD")]
index = VectorStoreIndex.from_documents(
    documents,
    transformations=[SentenceSplitter(chunk_size=512, chunk_overlap=0)],
    embed_model=MockEmbedding(embed_dim=8),
)

llm = ScriptedLLM(replies=[stand_in_model, "They terminate immediately [42]."])
engine = index.as_query_engine(
    llm=llm,
    similarity_top_k=10,
    # Last: it numbers what the model sees. The splitter cuts each node into
    # smaller citable chunks whose offsets still slice their document.
    node_postprocessors=[
        CitationPostprocessor(text_splitter=SentenceSplitter(chunk_size=128, chunk_overlap=0))
    ],
    text_qa_template=CITATION_QA_TEMPLATE,
)

response = resolve_response(engine.query(QUESTION))
print(response.response)
print(f"{len(response.source_nodes)} numbered sources were shown")
for citation in response.citations:
    outcome = verify_citation(citation, reader).outcome
    print(f"[{citation.marker}] {citation.doc_id} {citation.start}-{citation.end} {outcome}")

try:
    resolve_response(engine.query(QUESTION))
except MarkerOutOfRangeError as exc:
    print(f"rejected: marker [{exc.marker}] of {exc.valid_count} sources")
