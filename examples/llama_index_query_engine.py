"""CitedQueryEngine: answers whose [n] markers are resolved and checked, offline.

Built from a retriever and an LLM, the engine numbers the retrieved nodes, asks
for [n] citations, and returns a CitedResponse, or raises MarkerOutOfRangeError for
a marker that names no source. Streaming answers are checked as they stream: a bad
marker stops the stream as soon as it is complete. The stand-in model is a
scripted CustomLLM.
"""

from __future__ import annotations

from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import Document

from citemark import MarkerOutOfRangeError
from llama_index.postprocessor.citemark.testing import ScriptedLLM
from llama_index.query_engine.citemark import CitedQueryEngine

documents = [
    Document(
        id_="Apache-2.0", text="Patent licenses terminate as of the date such litigation is filed."
    ),
    Document(
        id_="BSD", text="Redistributions of source code must retain the above copyright notice."
    ),
]
index = VectorStoreIndex.from_documents(documents, embed_model=MockEmbedding(embed_dim=8))
retriever = index.as_retriever(similarity_top_k=2)

llm = ScriptedLLM(
    replies=[
        "Keep the copyright notice [1][2], and the patent license ends on filing [1, 2].",
        "The sources say nothing about trademarks.",
        "The license ends [3].",
    ]
)
engine = CitedQueryEngine.from_args(retriever, llm=llm)

response = engine.query("What must I keep, and when does the patent license end?")
print(response.response)
for citation in response.citations:
    print(f"[{citation.marker}] {citation.doc_id} (node {citation.chunk_id[:8]})")

abstention = engine.query("Does either license grant trademark rights?")
print(f"abstained: {abstention.citations == ()}")

try:
    engine.query("When does the patent license end?")
except MarkerOutOfRangeError as exc:
    print(f"rejected: marker [{exc.marker}] of {exc.valid_count} sources")

# Streaming: tokens pass through as they arrive; [7] stops the stream at once.
streaming_llm = ScriptedLLM(
    replies=[["It ends ", "on filing [", "1]."], ["It ends [", "7", "] or so."]]
)
streaming = CitedQueryEngine.from_args(retriever, llm=streaming_llm, streaming=True)
stream = streaming.query("When does the patent license end?")
print("streamed:", "".join(stream.response_gen), [c.marker for c in stream.cited_answer.citations])
received = []
try:
    received.extend(streaming.query("When does the patent license end?").response_gen)
except MarkerOutOfRangeError as exc:
    print(f"stream stopped after {received} at marker [{exc.marker}]")
