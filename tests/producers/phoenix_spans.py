"""Write a Phoenix span table as Parquet, from a LangChain retrieval chain run under OpenInference.

Run with the formats environment's Python (``.venv-formats/bin/python``)::

    phoenix_spans.py SPEC.json OUT.parquet

SPEC.json holds ``{"documents": [{"id", "text", "metadata"}], "runs": [RUN, ...],
"max_span_attributes": N?}``; each RUN is ``{"question", "answer", "k",
"retrievals": 1}`` (``retrievals`` 0 runs the model without a retriever, 2
retrieves twice in one trace). Every run is one ``invoke`` of a real chain: an
``InMemoryVectorStore`` with ``DeterministicFakeEmbedding``, a prompt numbering the
documents ``[1]..[k]`` and a ``FakeListChatModel`` replying with the run's answer.
The spans are caught by the OTel SDK's ``InMemorySpanExporter``, encoded with the
OTLP encoder, decoded by Phoenix's own offline path
(``phoenix.trace.otel.decode_otlp_span``, ``TraceDataset.from_spans``) and saved
with ``DataFrame.to_parquet``; the same spans are also written as OTLP JSON to
``OUT.parquet.otlp.jsonl``. No Phoenix server is started.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from google.protobuf.json_format import MessageToDict
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnableParallel, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from phoenix.trace import TraceDataset
from phoenix.trace.otel import decode_otlp_span

PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", "Answer from the numbered sources only and cite them as [n].\n\n{context}"),
        ("human", "{question}"),
    ]
)


def numbered(documents: list[Document]) -> str:
    """The sources as the model sees them: ``[1] text``, one per paragraph."""
    return "\n\n".join(f"[{n}] {doc.page_content}" for n, doc in enumerate(documents, start=1))


def chain_for(store: InMemoryVectorStore, run: dict[str, object]):
    """A one-run chain: retrieve (0, 1 or 2 times), number, prompt, fake model, parse."""
    model = FakeListChatModel(responses=[str(run["answer"])])
    retriever = store.as_retriever(search_kwargs={"k": int(run.get("k", 3))})
    retrievals = int(run.get("retrievals", 1))
    if retrievals == 0:
        context = RunnableLambda(lambda _question: "(no sources)")
    elif retrievals == 1:
        context = retriever | numbered
    else:
        # Two retrievals in one trace (k=1 and the run's k), both numbered into the prompt.
        first = store.as_retriever(search_kwargs={"k": 1})
        context = RunnableParallel(first=first, second=retriever) | RunnableLambda(
            lambda found: numbered(found["first"] + found["second"])
        )
    return (
        {"context": context, "question": RunnablePassthrough()} | PROMPT | model | StrOutputParser()
    ).with_config(run_name="rag_chain")


def main(spec_path: str, out_path: str) -> None:
    """Run the spec's chains under OpenInference and write Phoenix's span table."""
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    limits = SpanLimits(max_span_attributes=spec.get("max_span_attributes"))
    exporter = InMemorySpanExporter()
    provider = TracerProvider(span_limits=limits)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
        store.add_documents(
            [
                Document(id=doc["id"], page_content=doc["text"], metadata=doc.get("metadata", {}))
                for doc in spec["documents"]
            ]
        )
        for run in spec["runs"]:
            chain_for(store, run).invoke(run["question"])
    finally:
        instrumentor.uninstrument()
    request = encode_spans(exporter.get_finished_spans())
    spans = [
        decode_otlp_span(span)
        for resource_spans in request.resource_spans
        for scope_spans in resource_spans.scope_spans
        for span in scope_spans.spans
    ]
    TraceDataset.from_spans(spans).dataframe.to_parquet(out_path)
    # The same spans as OTLP JSON (protobuf's JSON mapping), for the OpenInference reader.
    Path(out_path + ".otlp.jsonl").write_text(
        json.dumps(MessageToDict(request)) + "\n", encoding="utf-8"
    )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
