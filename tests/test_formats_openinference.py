"""`citemark check --from openinference`: OpenInference spans as the instrumentors write them.

Every trace here comes from a real chain run in the test: LangChain (langchain-core's
`InMemoryVectorStore`, `DeterministicFakeEmbedding`, its fake chat models) under
OpenInference's `LangChainInstrumentor`, and a LlamaIndex query engine under its
`LlamaIndexInstrumentor`, on an OpenTelemetry SDK `TracerProvider` whose spans an
`InMemorySpanExporter` keeps. The spans are written the ways they are recorded: OTLP
JSON with base64 ids and enum names (protobuf's `MessageToDict` of what the OTLP
exporter sends), the same with hex ids and integer enums (what collectors' file
exporters write), and the SDK's own `ReadableSpan.to_json()` (pretty-printed one after
another, or one per line).
"""

from __future__ import annotations

import base64
import io
import json
import re
import subprocess
import sys
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from google.protobuf.json_format import MessageToDict
from hinted import check_as_hinted
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.output_parsers.openai_tools import PydanticToolsParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnableParallel, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore
from llama_index.core import Document as LlamaDocument
from llama_index.core import VectorStoreIndex
from llama_index.core.base.llms.types import CompletionResponse, LLMMetadata
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms import CustomLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.query_engine import CitationQueryEngine
from openinference.instrumentation.langchain import LangChainInstrumentor
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

from citemark._contract.reasons import RECORDED_REASONS
from citemark._pipelines.readers import ReadOptions, Recorded, openinference, reader_for

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from opentelemetry.sdk.trace import ReadableSpan

# langchain-core deprecates calling `.text()` on a message; OpenInference's LangChain
# instrumentor still does when it records message content. Nothing in citemark calls it.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Calling .text\\(\\) as a method is deprecated:DeprecationWarning"
)

RECORDED = Path(__file__).resolve().parent.parent / "examples" / "data" / "recorded"
QUESTION = "How fast is a cheetah?"
ANIMALS = {
    "lion": "Lions live in prides and hunt mostly at night.",
    "cheetah": "The cheetah is the fastest land animal, at 93 to 104 km/h.",
    "zebra": "Zebras have black and white stripes that confuse biting flies.",
    "eagle": "Eagles build large nests called eyries on cliffs.",
    "otter": "Sea otters hold hands while they sleep so they do not drift apart.",
}
GOOD = "A cheetah runs at 93 to 104 km/h [1]. Lions hunt at night [2]."
FABRICATED = "A cheetah runs at 93 to 104 km/h [1]. Otters are fast too [7]."


def animal_documents() -> list[Document]:
    """The corpus: LangChain documents with ids, and the app's own metadata keys."""
    return [
        Document(
            id=f"{name}#0",
            page_content=text,
            metadata={
                "source": f"https://example.org/{name}",
                "doc_id": name,
                "chunk_id": f"{name}#0",
            },
        )
        for name, text in ANIMALS.items()
    ]


def numbered(documents: Sequence[Document], base: int = 1) -> str:
    """The sources as the prompt shows them: ``[n] text``, one per line."""
    return "\n".join(f"[{n}] {d.page_content}" for n, d in enumerate(documents, start=base))


def how_to_blocks(documents: Sequence[Document]) -> str:
    """LangChain's citation how-to layout: ``Source ID: i`` blocks, numbered from 0."""
    return "\n\n".join(
        f"Source ID: {i}\nArticle Title: {d.metadata['doc_id']}\nArticle Snippet: {d.page_content}"
        for i, d in enumerate(documents)
    )


class Tracing:
    """An SDK tracer provider whose finished spans an in-memory exporter keeps."""

    def __init__(self, limits: SpanLimits | None = None) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(span_limits=limits or SpanLimits())
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def spans(self) -> tuple[ReadableSpan, ...]:
        return self.exporter.get_finished_spans()


@pytest.fixture
def langchain_tracing() -> Iterator[Callable[..., Tracing]]:
    """Starts OpenInference's LangChain instrumentation; stopped again in teardown."""
    instrumentor = LangChainInstrumentor()

    def start(limits: SpanLimits | None = None) -> Tracing:
        tracing = Tracing(limits)
        instrumentor.instrument(tracer_provider=tracing.provider)
        return tracing

    yield start
    instrumentor.uninstrument()


@pytest.fixture
def llama_index_tracing() -> Iterator[Tracing]:
    """Starts OpenInference's LlamaIndex instrumentation; stopped again in teardown."""
    tracing = Tracing()
    instrumentor = LlamaIndexInstrumentor()
    instrumentor.instrument(tracer_provider=tracing.provider)
    yield tracing
    instrumentor.uninstrument()


def rag_chain(
    answers: Sequence[str],
    documents: Sequence[Document] | None = None,
    k: int = 3,
    layout: Callable[[Sequence[Document]], str] = numbered,
) -> Any:
    """A LangChain retrieval chain: retriever, numbered prompt, fake chat model, parser."""
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents(list(documents or animal_documents()))
    retriever = store.as_retriever(search_kwargs={"k": k})
    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "Answer from the sources and cite them.\nSources:\n{context}"),
            ("human", "{question}"),
        ]
    )
    model = FakeListChatModel(responses=list(answers))
    to_prompt = RunnableLambda(
        lambda x: {"context": layout(x["context"]), "question": x["question"]}
    )
    answer = to_prompt | prompt | model | StrOutputParser()
    chain = RunnableParallel(
        context=retriever, question=RunnablePassthrough()
    ) | RunnablePassthrough.assign(answer=answer)
    return chain.with_config(run_name="rag_chain")


# --- The ways spans are written down ------------------------------------------


def otlp_base64(spans: Sequence[ReadableSpan]) -> str:
    """One OTLP request per line, as protobuf's JSON mapping writes it (base64 ids, enum names)."""
    return json.dumps(MessageToDict(encode_spans(spans))) + "\n"


def otlp_hex(spans: Sequence[ReadableSpan]) -> str:
    """One OTLP request per line as OTLP/JSON file exporters write it (hex ids, integer enums)."""
    request = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for resource in request["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(request) + "\n"


def otlp_snake(spans: Sequence[ReadableSpan]) -> str:
    """The protobuf JSON mapping with the proto's own field names (``resource_spans``, ``trace_id``)."""
    return json.dumps(MessageToDict(encode_spans(spans), preserving_proto_field_name=True)) + "\n"


def sdk_pretty(spans: Sequence[ReadableSpan]) -> str:
    """`ConsoleSpanExporter`'s output: pretty-printed `to_json()` objects one after another."""
    return "".join(span.to_json() + "\n" for span in spans)


def sdk_lines(spans: Sequence[ReadableSpan]) -> str:
    """One `to_json(indent=None)` object per line."""
    return "".join(span.to_json(indent=None) + "\n" for span in spans)


def sdk_array(spans: Sequence[ReadableSpan]) -> str:
    """What a user dumps of the SDK's spans: one JSON array of their `to_json()` objects."""
    return json.dumps([json.loads(span.to_json()) for span in spans])


def sdk_array_pretty(spans: Sequence[ReadableSpan]) -> str:
    """The same array, ``json.dump(..., indent=2)``."""
    return json.dumps([json.loads(span.to_json()) for span in spans], indent=2)


WRITERS = {
    "otlp-base64": otlp_base64,
    "otlp-hex": otlp_hex,
    "otlp-snake": otlp_snake,
    "sdk-pretty": sdk_pretty,
    "sdk-lines": sdk_lines,
    "sdk-array": sdk_array,
    "sdk-array-pretty": sdk_array_pretty,
}


def read_text(text: str, index_base: int | None = None) -> list[Recorded]:
    """The reader's records for a file holding ``text``."""
    return list(openinference.read(io.BytesIO(text.encode()), ReadOptions(index_base=index_base)))


def trace_hex(span: ReadableSpan) -> str:
    return format(span.context.trace_id, "032x")


def root_of(spans: Sequence[ReadableSpan]) -> ReadableSpan:
    (root,) = [s for s in spans if s.parent is None]
    return root


def run_check(tmp_path: Path, name: str, text: str, *options: str) -> list[dict[str, Any]]:
    """``citemark check FILE --out DIR OPTIONS`` through the real entry point; rows.jsonl's records."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    out = tmp_path / f"out-{name}"
    done = subprocess.run(
        [sys.executable, "-m", "citemark", "check", str(path), "--out", str(out), *options],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    lines = (out / "rows.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def without_run_id(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in record.items() if k != "run_id"} for record in records]


# --- LangChain ------------------------------------------------------------------


@pytest.fixture
def two_runs(langchain_tracing: Callable[..., Tracing]) -> tuple[Tracing, list[dict[str, Any]]]:
    """Two invocations of the text chain: one sound answer, one citing [7] of 3 sources."""
    tracing = langchain_tracing()
    chain = rag_chain([GOOD, FABRICATED])
    outputs = [chain.invoke(QUESTION), chain.invoke("Which animal is fastest?")]
    return tracing, outputs


class TestLangChain:
    def test_every_encoding_reads_to_the_same_rows(self, two_runs):
        """OTLP base64 and hex, SDK pretty and per line: one row per trace, all identical."""
        tracing, _ = two_runs
        spans = tracing.spans()
        read = {name: read_text(write(spans)) for name, write in WRITERS.items()}
        first = read["otlp-base64"]
        assert 2 == len(first)
        for name, records in read.items():
            assert first == records, name
        roots = [s for s in spans if s.parent is None]
        assert [trace_hex(r) for r in roots] == [r.row["id"] for r in first]

    def test_a_row_is_the_chain_run(self, two_runs):
        """Question, answer and sources in retrieval order, as the chain returned them."""
        tracing, outputs = two_runs
        (record, _) = read_text(otlp_hex(tracing.spans()))
        row = record.row
        context = outputs[0]["context"]
        assert (1, None, QUESTION, GOOD) == (
            record.line,
            record.unassessed,
            row["question"],
            row["answer"],
        )
        assert [d.page_content for d in context] == [s["text"] for s in row["sources"]]
        assert [d.id for d in context] == [s["doc_id"] for s in row["sources"]]
        assert [d.metadata["chunk_id"] for d in context] == [s["chunk_id"] for s in row["sources"]]
        assert [d.metadata["source"] for d in context] == [s["uri"] for s in row["sources"]]
        assert [d.metadata for d in context] == [s["metadata"] for s in row["sources"]]

    def test_the_document_id_comes_from_output_value_when_its_content_agrees(self, two_runs):
        """LangChain's spans drop document.id; the id is read from the retriever's output.value.

        A reader that took the metadata's doc_id (the naive fallback) would name the
        document, not the chunk the retriever returned.
        """
        tracing, outputs = two_runs
        (retriever,) = [s for s in tracing.spans() if s.name == "VectorStoreRetriever"][:1]
        assert not any(key.endswith(".document.id") for key in retriever.attributes)
        (record, _) = read_text(sdk_pretty(tracing.spans()))
        ids = [s["doc_id"] for s in record.row["sources"]]
        assert [d.id for d in outputs[0]["context"]] == ids
        assert [d.metadata["doc_id"] for d in outputs[0]["context"]] != ids

    def test_the_prompt_shows_the_base(self, two_runs):
        """The prompt numbers the documents [1]..[3]: base 1, read off the prompt."""
        tracing, _ = two_runs
        for record in read_text(sdk_lines(tracing.spans())):
            assert (1, True) == (record.row["index_base"], record.index_base_from_prompt)

    def test_the_fabricated_marker_fails_the_row_end_to_end(self, two_runs, tmp_path):
        """--from openinference: [7] of three sources fails its row; the sound one does not."""
        tracing, _ = two_runs
        records = run_check(
            tmp_path, "spans.jsonl", otlp_base64(tracing.spans()), "--from", "openinference"
        )
        assert ["unassessed", "failed"] == [r["outcome"] for r in records]
        assert "no_judge" == records[0]["reason"]
        assert ["fabricated_citation"] == records[1]["details"]["deterministic_failures"]
        assert [trace_hex(s) for s in tracing.spans() if s.parent is None] == [
            r["id"] for r in records
        ]

    def test_rows_jsonl_is_that_of_the_same_rows_in_citemarks_own_format(self, two_runs, tmp_path):
        """The rows the reader builds, written as native JSONL, give identical rows.jsonl records.

        (Every encoding reads to the same rows: see the first test.)
        """
        tracing, _ = two_runs
        text = sdk_pretty(tracing.spans())
        native = "".join(json.dumps(r.row) + "\n" for r in read_text(text, index_base=1))
        from_spans = run_check(
            tmp_path, "spans.json", text, "--from", "openinference", "--index-base", "1"
        )
        own = run_check(tmp_path, "rows.jsonl", native)
        assert 2 == len(own)
        assert without_run_id(own) == without_run_id(from_spans)

    def test_seventy_documents_lose_the_top_ranked_to_the_attribute_limit(
        self, langchain_tracing, tmp_path
    ):
        """Default SpanLimits evict the oldest attributes: the query and documents 0-6.

        The row is sources_truncated. A naive reader taking the surviving indexes,
        renumbered, would resolve [1] to the eighth document, not the one the model
        was shown as [1].
        """
        tracing = langchain_tracing()
        documents = [
            Document(
                id=f"n{i}",
                page_content=f"Numbered fact {i}: item {i} weighs {i * 3} kg.",
                metadata={"doc_id": f"n{i}"},
            )
            for i in range(70)
        ]
        output = rag_chain(["Item weights are listed [1]."], documents, k=70).invoke(QUESTION)
        spans = tracing.spans()
        (retriever,) = [s for s in spans if s.name == "VectorStoreRetriever"]
        assert retriever.dropped_attributes > 0
        naive = naive_sources(retriever.attributes)
        assert 63 == len(naive)
        assert output["context"][0].page_content != naive[0]
        for writer in WRITERS.values():
            (record,) = read_text(writer(spans))
            assert "sources_truncated" == record.unassessed
        (row,) = run_check(tmp_path, "spans.jsonl", otlp_hex(spans), "--from", "openinference")
        assert ("unassessed", "sources_truncated") == (row["outcome"], row["reason"])

    @pytest.mark.parametrize("index", ["99999999999999999999", "02", "\u0662", "2x", "-2"])
    def test_a_document_index_that_is_not_canonical_leaves_the_row_unassessed(
        self, langchain_tracing, index
    ):
        """A key under ``retrieval.documents.`` whose index is not ``0|[1-9][0-9]*`` in ASCII.

        The chain's real trace, with the third document's keys renamed to ``index`` (and
        LangChain's ``output.value`` copy of the list taken out, as a LlamaIndex trace
        has none). The old ``(\\d{1,9})`` pattern dropped the twenty-digit index (two
        contiguous documents, resolved) and read ``02`` and the Arabic-Indic digit two
        as 2 (three documents, resolved from keys no writer makes); each is now
        sources_truncated.
        """
        tracing = langchain_tracing()
        rag_chain([GOOD]).invoke(QUESTION)
        request = json.loads(otlp_hex(tracing.spans()))
        (retriever,) = [
            span
            for resource in request["resourceSpans"]
            for scope in resource["scopeSpans"]
            for span in scope["spans"]
            if span["name"] == "VectorStoreRetriever"
        ]
        prefix = "retrieval.documents."
        kept = []
        for pair in retriever["attributes"]:
            key = pair["key"]
            if key.startswith("output."):
                continue
            renamed = prefix + index + key[len(prefix) + 1 :]
            kept.append({**pair, "key": renamed} if key.startswith(prefix + "2.") else pair)
        retriever["attributes"] = kept
        text = json.dumps(request) + "\n"
        old = re.compile(r"(\d{1,9})\.document\.(content|id|score|metadata)")
        old_indexes = {
            int(match.group(1))
            for pair in kept
            if pair["key"].startswith(prefix) and (match := old.fullmatch(pair["key"], len(prefix)))
        }
        # No gap the old reader would have seen: it resolved the row.
        assert sorted(old_indexes) == list(range(len(old_indexes)))
        (record,) = read_text(text)
        assert "sources_truncated" == record.unassessed
        assert [] == record.row["sources"]

    def test_a_value_length_limit_that_cuts_a_document_is_seen(self, langchain_tracing):
        """max_attribute_length cuts output.value (it no longer parses) and a long document alike.

        The naive reader would resolve against the cut text as if it were the source.
        """
        tracing = langchain_tracing(SpanLimits(max_attribute_length=120))
        documents = [*animal_documents()[:2], Document(id="long", page_content="Long fact. " * 40)]
        rag_chain(["Long facts [1]."], documents, k=3).invoke("Long fact?")
        spans = tracing.spans()
        (retriever,) = [s for s in spans if s.name == "VectorStoreRetriever"]
        cut = [v for k, v in retriever.attributes.items() if k.endswith(".document.content")]
        assert "Long fact. " * 40 not in cut
        (record,) = read_text(otlp_base64(spans))
        assert "sources_truncated" == record.unassessed

    def test_a_zero_based_prompt_sets_base_zero(self, langchain_tracing, tmp_path):
        """The how-to's ``Source ID: 0`` blocks: base 0 from the prompt, so [0] resolves.

        The naive variant (the default base 1) fails the same row: [0] names no
        source. An explicit --index-base wins over the prompt.
        """
        tracing = langchain_tracing()
        rag_chain(["The cheetah is fastest [0]."], layout=how_to_blocks).invoke(QUESTION)
        spans = tracing.spans()
        (record,) = read_text(sdk_pretty(spans))
        assert (0, True) == (record.row["index_base"], record.index_base_from_prompt)
        (explicit,) = read_text(sdk_pretty(spans), index_base=1)
        assert (1, False) == (explicit.row["index_base"], explicit.index_base_from_prompt)
        (read_zero,) = run_check(
            tmp_path, "zero.json", sdk_pretty(spans), "--from", "openinference"
        )
        assert [] == read_zero["details"]["deterministic_failures"]
        assert read_zero["details"]["index_base_from_prompt"]
        (read_one,) = run_check(
            tmp_path, "one.json", sdk_pretty(spans), "--from", "openinference", "--index-base", "1"
        )
        assert "failed" == read_one["outcome"]

    def test_a_prompt_in_another_order_is_not_the_numbering(self, langchain_tracing):
        """The prompt lists the documents reversed: the retrieved order is not what the model saw.

        A naive reader numbering the retriever's list would resolve [1] to the
        wrong document.
        """
        tracing = langchain_tracing()
        output = rag_chain([GOOD], layout=lambda ds: numbered(list(reversed(ds)))).invoke(QUESTION)
        (llm,) = [s for s in tracing.spans() if s.name == "FakeListChatModel"]
        prompt = llm.attributes["llm.input_messages.0.message.content"]
        assert f"[1] {output['context'][-1].page_content}" in prompt
        assert f"[1] {output['context'][0].page_content}" not in prompt
        (record,) = read_text(otlp_hex(tracing.spans()))
        assert "source_order_not_recorded" == record.unassessed
        assert [] == record.row["sources"]

    def test_no_retriever_is_no_retrieval_recorded(self, langchain_tracing):
        """A chain that answers without retrieving: un-assessed, never resolved against nothing."""
        tracing = langchain_tracing()
        prompt = ChatPromptTemplate.from_messages([("human", "{question}")])
        (prompt | FakeListChatModel(responses=[GOOD])).invoke({"question": QUESTION})
        (record,) = read_text(otlp_hex(tracing.spans()))
        assert ("no_retrieval_recorded", QUESTION, GOOD) == (
            record.unassessed,
            record.row["question"],
            record.row["answer"],
        )

    def test_two_retrievals_in_the_prompt_are_several_retrievals(self, langchain_tracing):
        """Two retrievers feed one prompt: which list the markers number is not recorded.

        A naive reader taking the first RETRIEVER span would resolve against it.
        """
        tracing = langchain_tracing()
        store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
        store.add_documents(animal_documents())
        first = store.as_retriever(search_kwargs={"k": 2})
        second = store.as_retriever(search_kwargs={"k": 4})
        prompt = ChatPromptTemplate.from_messages([("system", "{a}\n{b}"), ("human", "{question}")])
        fmt = RunnableLambda(
            lambda x: {"a": numbered(x["a"]), "b": numbered(x["b"]), "question": x["question"]}
        )
        chain = RunnableParallel(a=first, b=second, question=RunnablePassthrough()) | fmt | prompt
        (chain | FakeListChatModel(responses=[GOOD])).invoke(QUESTION)
        lists = [
            naive_sources(s.attributes) for s in tracing.spans() if s.name == "VectorStoreRetriever"
        ]
        assert 2 == len(lists)
        assert lists[0] != lists[1]
        (record,) = read_text(otlp_hex(tracing.spans()))
        assert "several_retrievals" == record.unassessed

    def test_the_retrieval_the_prompt_holds_is_the_one(self, langchain_tracing):
        """Two retrievals, only one of which the prompt shows: that one is the row's sources."""
        tracing = langchain_tracing()
        store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
        store.add_documents(animal_documents())
        used = store.as_retriever(search_kwargs={"k": 2})
        unused = store.as_retriever(search_kwargs={"k": 5})
        prompt = ChatPromptTemplate.from_messages([("system", "{a}"), ("human", "{question}")])
        fmt = RunnableLambda(lambda x: {"a": numbered(x["a"]), "question": x["question"]})
        chain = RunnableParallel(a=used, b=unused, question=RunnablePassthrough()) | fmt | prompt
        (chain | FakeListChatModel(responses=[GOOD])).invoke(QUESTION)
        (record,) = read_text(otlp_hex(tracing.spans()))
        assert (None, 2) == (record.unassessed, len(record.row["sources"]))

    def test_one_list_retrieved_twice_is_one_retrieval(self, langchain_tracing):
        """The same retriever run twice records the identical list twice: one retrieval.

        A reader counting RETRIEVER spans would call it several_retrievals.
        """
        tracing = langchain_tracing()
        store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
        store.add_documents(animal_documents())
        retriever = store.as_retriever(search_kwargs={"k": 3})
        prompt = ChatPromptTemplate.from_messages([("system", "{a}"), ("human", "{question}")])
        fmt = RunnableLambda(lambda x: {"a": numbered(x["a"]), "question": x["question"]})
        chain = RunnableParallel(a=retriever, b=retriever, question=RunnablePassthrough()) | fmt
        (chain | prompt | FakeListChatModel(responses=[GOOD])).invoke(QUESTION)
        assert 2 == sum(1 for s in tracing.spans() if s.name == "VectorStoreRetriever")
        (record,) = read_text(otlp_hex(tracing.spans()))
        assert (None, 3) == (record.unassessed, len(record.row["sources"]))

    def test_the_answer_is_the_last_llm_call(self, langchain_tracing):
        """A query-rewriting call before retrieval: the answer is the call that ends last.

        A reader taking the first LLM span would grade the rewritten query.
        """
        tracing = langchain_tracing()
        store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
        store.add_documents(animal_documents())
        rewrite = (
            ChatPromptTemplate.from_messages([("human", "Rewrite: {question}")])
            | FakeListChatModel(responses=["cheetah top speed"])
            | StrOutputParser()
        )
        prompt = ChatPromptTemplate.from_messages([("system", "{a}"), ("human", "{question}")])
        fmt = RunnableLambda(lambda x: {"a": numbered(x["a"]), "question": x["question"]})
        chain = (
            RunnablePassthrough.assign(a=rewrite | store.as_retriever(search_kwargs={"k": 3}))
            | fmt
            | prompt
            | FakeListChatModel(responses=[GOOD])
        )
        chain.invoke({"question": QUESTION})
        llm_spans = [s for s in tracing.spans() if s.name == "FakeListChatModel"]
        assert 2 == len(llm_spans)
        (record,) = read_text(sdk_pretty(tracing.spans()))
        assert (None, QUESTION, GOOD) == (
            record.unassessed,
            record.row["question"],
            record.row["answer"],
        )

    def test_a_structured_answer_is_the_tool_call_object(self, langchain_tracing, tmp_path):
        """Structured output: the answer is the tool call's arguments, a JSON object.

        Its citation 5 of three sources fails the row end to end.
        """

        class CitedAnswer(BaseModel):
            answer: str
            citations: list[int]

        tracing = langchain_tracing()
        store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
        store.add_documents(animal_documents())
        prompt = ChatPromptTemplate.from_messages(
            [("system", "{context}"), ("human", "{question}")]
        )
        calls = [
            {
                "name": "CitedAnswer",
                "args": {"answer": "About 100 km/h.", "citations": c},
                "id": "call_0",
            }
            for c in ([0], [5])
        ]
        model = GenericFakeChatModel(
            messages=iter([AIMessage(content="", tool_calls=[c]) for c in calls])
        )
        fmt = RunnableLambda(
            lambda x: {"context": how_to_blocks(x["context"]), "question": x["question"]}
        )
        chain = (
            RunnableParallel(
                context=store.as_retriever(search_kwargs={"k": 3}), question=RunnablePassthrough()
            )
            | fmt
            | prompt
            | model
            | PydanticToolsParser(tools=[CitedAnswer], first_tool_only=True)
        )
        chain.invoke(QUESTION)
        chain.invoke(QUESTION)
        text = otlp_hex(tracing.spans())
        records = read_text(text)
        assert [{"answer": "About 100 km/h.", "citations": c} for c in ([0], [5])] == [
            r.row["answer"] for r in records
        ]
        assert [0, 0] == [r.row["index_base"] for r in records]
        checked = run_check(tmp_path, "structured.jsonl", text, "--from", "openinference")
        assert "failed" != checked[0]["outcome"]
        assert "failed" == checked[1]["outcome"]
        assert "fabricated_citation" in checked[1]["details"]["deterministic_failures"]


def naive_sources(attributes: Any) -> list[str]:
    """What a naive reader makes of a retriever span: the contents it holds, renumbered."""
    found = {}
    for key, value in attributes.items():
        match = re.fullmatch(r"retrieval\.documents\.(\d+)\.document\.content", key)
        if match:
            found[int(match.group(1))] = value
    return [found[i] for i in sorted(found)]


# --- Traces as a stream ---------------------------------------------------------


class TestStream:
    def test_a_trace_without_its_root_is_incomplete_at_the_end(self, two_runs):
        """Spans whose root never arrives: trace_incomplete, emitted after the complete rows."""
        tracing, _ = two_runs
        spans = tracing.spans()
        first_trace = spans[0].context.trace_id
        kept = [s for s in spans if not (s.parent is None and s.context.trace_id == first_trace)]
        records = read_text(sdk_lines(kept))
        assert [(1, None), (2, "trace_incomplete")] == [(r.line, r.unassessed) for r in records]
        assert format(first_trace, "032x") == records[1].row["id"]

    def test_past_the_open_trace_cap_the_oldest_is_incomplete(self, two_runs, monkeypatch):
        """With room for one open trace, interleaved traces: the first is emitted incomplete.

        Its later spans, root included, are ignored rather than read as a new trace.
        """
        tracing, _ = two_runs
        spans = tracing.spans()
        ids = [s.context.trace_id for s in spans]
        one = [s for s in spans if s.context.trace_id == ids[0]]
        two = [s for s in spans if s.context.trace_id != ids[0]]
        interleaved = [one[0], *two, *one[1:]]
        monkeypatch.setattr(openinference, "MAX_OPEN_TRACES", 1)
        records = read_text(sdk_lines(interleaved))
        assert [("trace_incomplete", format(ids[0], "032x")), (None, trace_hex(two[0]))] == [
            (r.unassessed, r.row["id"]) for r in records
        ]

    def test_past_the_span_cap_the_oldest_trace_is_incomplete(self, two_runs, monkeypatch):
        """With room for fewer spans than a trace holds, a trace is emitted incomplete."""
        tracing, _ = two_runs
        monkeypatch.setattr(openinference, "MAX_OPEN_SPANS", 3)
        records = read_text(sdk_lines(tracing.spans()))
        assert ["trace_incomplete", "trace_incomplete"] == [r.unassessed for r in records]

    def test_a_malformed_record_is_reported_and_reading_goes_on(self, two_runs):
        """A broken record between spans is one malformed row that quotes none of it."""
        tracing, _ = two_runs
        spans = tracing.spans()
        middle = len(spans) // 2
        canary = "CANARY-oi-41"
        text = (
            sdk_pretty(spans[:middle])
            + '{"name": "'
            + canary
            + '", "context": 7, "attributes": {}}\n'
            + canary
            + "\n"
            + sdk_pretty(spans[middle:])
        )
        records = read_text(text)
        malformed = [r for r in records if r.row is None]
        assert 2 == len(malformed)
        assert all(canary not in (r.malformed or "") for r in malformed)
        assert [None, None] == [r.unassessed for r in records if r.row is not None]
        assert [1, 2, 3, 4] == [r.line for r in records]

    def test_a_broken_pretty_printed_span_is_one_malformed_row(self, two_runs):
        """A pretty-printed span broken mid-string is one malformed row; the next span is read.

        A reader that went on line by line would report each of its remaining lines.
        """
        tracing, _ = two_runs
        spans = list(tracing.spans())
        plain = next(s for s in spans if s.name == "StrOutputParser")
        spans.remove(plain)
        broken = plain.to_json().replace('"name": "', '"name": "unterminated\n', 1)
        records = read_text(broken + "\n" + sdk_pretty(spans))
        malformed = [r.malformed for r in records if r.row is None]
        assert ["the record starting at line 1 is not JSON"] == malformed
        assert [None, None] == [r.unassessed for r in records if r.row is not None]

    def test_a_file_cut_inside_a_record_is_malformed(self, two_runs):
        """The last pretty-printed object is cut off: a malformed record, never a partial span."""
        tracing, _ = two_runs
        text = sdk_pretty(tracing.spans())
        records = read_text(text[: len(text) - 40])
        (malformed,) = [r for r in records if r.row is None]
        assert "the record starting at line" in (malformed.malformed or "")
        assert (malformed.malformed or "").endswith("is cut off")

    def test_reading_is_lazy(self, two_runs):
        """The first row is produced before the file is read to its end."""
        tracing, _ = two_runs
        spans = tracing.spans()
        lines = sdk_lines(spans).encode().splitlines(keepends=True)
        first_root = next(i for i, s in enumerate(spans) if s.parent is None)
        consumed = []

        class Handle(io.BytesIO):
            def __iter__(self):
                for line in lines:
                    consumed.append(line)
                    yield line

        records = openinference.read(Handle(), ReadOptions())
        next(records)
        assert first_root + 1 == len(consumed) < len(lines)

    def test_the_reader_is_registered(self):
        """--from openinference names this module's read."""
        assert openinference.read is reader_for("openinference")

    def test_reason_codes_are_recorded_reasons(self):
        """Every code the reader emits is in the shared vocabulary."""
        source = Path(openinference.__file__).read_text(encoding="utf-8")
        used = set(re.findall(r'"([a-z_]+)"', source))
        emitted = {
            "no_retrieval_recorded",
            "several_retrievals",
            "sources_truncated",
            "source_order_not_recorded",
            "structured_output_not_parsed",
            "trace_incomplete",
        }
        assert emitted <= used
        assert emitted <= set(RECORDED_REASONS)


class TestProducersFiles:
    """The files the SDK and a user write, read as they are; given without --from, named."""

    def test_a_json_array_of_sdk_spans_is_streamed(self, two_runs):
        """An array of `to_json()` spans gives the rows of its lines, each marked a per-run id."""
        tracing, _ = two_runs
        spans = tracing.spans()
        lines = read_text(sdk_lines(spans))
        for text in (sdk_array(spans), sdk_array_pretty(spans)):
            assert lines == read_text(text)
        assert {"run"} == {r.row["id_scope"] for r in lines}

    def test_a_bad_element_is_named_by_its_position(self, two_runs):
        """A number among the spans: one malformed record naming element 2, the traces still read."""
        tracing, _ = two_runs
        spans = [json.loads(span.to_json()) for span in tracing.spans()]
        records = read_text(json.dumps([spans[0], 7, *spans[1:]]))
        reasons = [r.malformed for r in records if r.malformed]
        assert [
            "the record at element 2 of the JSON array is neither an OTLP request nor a span"
        ] == reasons
        assert 2 == sum(1 for r in records if r.row is not None)

    def test_console_span_exporter_output_is_named_and_read(self, langchain_tracing, tmp_path):
        """The SDK's ConsoleSpanExporter writing to a file: the hint names --from openinference."""
        tracing = langchain_tracing()
        path = tmp_path / "console.json"
        with path.open("w", encoding="utf-8") as out:
            tracing.provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=out)))
            chain = rag_chain([GOOD, FABRICATED])
            chain.invoke(QUESTION)
            chain.invoke("Which animal is fastest?")
        assert path.read_text(encoding="utf-8").startswith("{\n")
        option, records = check_as_hinted(path, tmp_path)
        assert "--from openinference" == option
        assert ["unassessed", "failed"] == [r["outcome"] for r in records]

    def test_an_array_of_sdk_spans_is_named_and_read(self, two_runs, tmp_path):
        """``json.dump`` of the spans given without --from: the hint names the reader that reads it."""
        tracing, _ = two_runs
        path = tmp_path / "spans.json"
        path.write_text(sdk_array_pretty(tracing.spans()), encoding="utf-8")
        option, records = check_as_hinted(path, tmp_path)
        assert "--from openinference" == option
        assert 2 == len(records)


class TestSamples:
    def test_the_bundled_samples_are_the_same_spans(self):
        """examples/data/recorded: the OTLP and console samples read to the same two rows."""
        rows = []
        for name in ("openinference-otlp.jsonl", "openinference-console.json"):
            with (RECORDED / name).open("rb") as handle:
                rows.append([r.row for r in openinference.read(handle, ReadOptions())])
        assert 2 == len(rows[0])
        assert rows[0] == rows[1]

    def test_the_otlp_sample_fails_its_fabricated_row(self, tmp_path):
        """As the docs say: [3] resolves to cheetah#0 and [7] of three fails its row."""
        text = (RECORDED / "openinference-otlp.jsonl").read_text(encoding="utf-8")
        records = run_check(tmp_path, "sample.jsonl", text, "--from", "openinference")
        assert ["unassessed", "failed"] == [r["outcome"] for r in records]
        assert ["fabricated_citation"] == records[1]["details"]["deterministic_failures"]

    def test_a_handle_that_cannot_seek_is_read_whole(self):
        """A pipe-like handle (no peek, no seek): the bytes read to sniff for Parquet are kept."""
        data = (RECORDED / "openinference-console.json").read_bytes()

        class Pipe(io.RawIOBase):
            def __init__(self) -> None:
                self._data = io.BytesIO(data)

            def readable(self) -> bool:
                return True

            def readinto(self, buffer):
                chunk = self._data.read(min(len(buffer), 7))
                buffer[: len(chunk)] = chunk
                return len(chunk)

        piped = [r.row for r in openinference.read(Pipe(), ReadOptions())]
        assert [r.row for r in read_text(data.decode())] == piped


class TestParquet:
    def test_a_parquet_file_goes_to_the_phoenix_reader(self, monkeypatch):
        """A file starting with PAR1 is handed, whole and unread, to citemark._pipelines.readers.phoenix."""
        seen = []

        def read(handle, options):
            seen.append((handle.read(), options))
            yield Recorded(line=1, row={"id": "p"})

        monkeypatch.setitem(
            sys.modules, "citemark._pipelines.readers.phoenix", types.SimpleNamespace(read=read)
        )
        records = list(openinference.read(io.BytesIO(b"PAR1 rest"), ReadOptions(index_base=0)))
        assert [Recorded(line=1, row={"id": "p"})] == records
        assert [(b"PAR1 rest", ReadOptions(index_base=0))] == seen


# --- LlamaIndex -----------------------------------------------------------------


class CannedLLM(CustomLLM):
    """A completion LLM that gives the same answer to every prompt."""

    answer: str = ""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata()

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self.answer)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError


def llama_documents(texts: dict[str, str] | None = None) -> list[LlamaDocument]:
    return [
        LlamaDocument(text=text, doc_id=name, metadata={"source": f"https://example.org/{name}"})
        for name, text in (texts or ANIMALS).items()
    ]


# OpenInference's LlamaIndex instrumentor calls pydantic's deprecated `.json()` on the
# LLM's metadata; as an error it would make the instrumentor drop the LLM spans.
@pytest.mark.filterwarnings(
    "ignore:The `json` method is deprecated:pydantic.warnings.PydanticDeprecatedSince20"
)
class TestLlamaIndex:
    def test_a_citation_query_engine_run_is_one_row_numbered_from_one(self, llama_index_tracing):
        """CitationQueryEngine's ``Source n:`` blocks: base 1 from the prompt; node ids as doc_id.

        Index building made traces of its own (no LLM, no retrieval): they are not
        rows. Only VectorIndexRetriever.retrieve holds documents; a naive reader
        counting RETRIEVER spans would call the trace several_retrievals.
        """
        index = VectorStoreIndex.from_documents(
            llama_documents(), embed_model=MockEmbedding(embed_dim=8)
        )
        engine = CitationQueryEngine.from_args(
            index, llm=CannedLLM(answer="Fast [1]."), similarity_top_k=3
        )
        response = engine.query(QUESTION)
        spans = llama_index_tracing.spans()
        assert 2 == sum(
            1 for s in spans if s.attributes.get("openinference.span.kind") == "RETRIEVER"
        )
        assert 1 < len({s.context.trace_id for s in spans})
        for writer in WRITERS.values():
            (record,) = read_text(writer(spans))
            row = record.row
            assert (None, QUESTION, "Fast [1].") == (
                record.unassessed,
                row["question"],
                row["answer"],
            )
            assert (1, True) == (row["index_base"], record.index_base_from_prompt)
            assert [n.node.get_content() for n in response.source_nodes] == [
                f"Source {i}:\n{s['text']}\n" for i, s in enumerate(row["sources"], start=1)
            ]
            assert all(re.fullmatch(r"[0-9a-f-]{36}", s["doc_id"]) for s in row["sources"])

    def test_the_templates_worked_example_is_not_a_source(self, llama_index_tracing):
        """One node retrieved: the template's own example ``Source 2:`` is not a second source.

        A reader counting every ``Source n:`` header in the prompt would see two
        sources where the list holds one, and refuse the row.
        """
        index = VectorStoreIndex.from_documents(
            llama_documents(), embed_model=MockEmbedding(embed_dim=8)
        )
        engine = CitationQueryEngine.from_args(
            index, llm=CannedLLM(answer="Fast [1]."), similarity_top_k=1
        )
        engine.query(QUESTION)
        spans = llama_index_tracing.spans()
        (llm,) = [s for s in spans if s.name == "CannedLLM.complete"]
        assert re.search(r"^Source 2:", llm.attributes["llm.prompts"][0], re.MULTILINE)
        (record,) = read_text(sdk_lines(spans))
        assert (None, 1, True) == (
            record.unassessed,
            len(record.row["sources"]),
            record.index_base_from_prompt,
        )

    def test_re_chunked_sources_are_not_the_retrieved_list(self, llama_index_tracing):
        """A node split into two citation chunks: the model saw more ``Source n`` than nodes.

        Whichever order the retriever returned them in, numbering the retriever's
        nodes is not the numbering the model saw (the long node is two sources, so
        one number is shifted or past the list's end). The row is un-assessed.
        """
        texts = {"long": "The first node is long. " * 60, "short": "The second node is short."}
        index = VectorStoreIndex.from_documents(
            llama_documents(texts), embed_model=MockEmbedding(embed_dim=8)
        )
        engine = CitationQueryEngine.from_args(
            index, llm=CannedLLM(answer="Long [2]."), similarity_top_k=2, citation_chunk_size=128
        )
        response = engine.query(QUESTION)
        assert 2 < len(response.source_nodes)
        (record,) = read_text(otlp_hex(llama_index_tracing.spans()))
        assert "source_order_not_recorded" == record.unassessed

    def test_the_attribute_limit_on_llama_index_spans_is_seen(self, llama_index_tracing):
        """40 nodes (4 attributes each) overflow 128 attributes: sources_truncated."""
        texts = {f"n{i}": f"Node {i} says {i * 7}." for i in range(40)}
        index = VectorStoreIndex.from_documents(
            llama_documents(texts), embed_model=MockEmbedding(embed_dim=8)
        )
        index.as_query_engine(llm=CannedLLM(answer="Says [1]."), similarity_top_k=40).query(
            QUESTION
        )
        spans = llama_index_tracing.spans()
        (retriever,) = [s for s in spans if s.name == "VectorIndexRetriever.retrieve"]
        assert retriever.dropped_attributes > 0
        (record,) = read_text(otlp_base64(spans))
        assert "sources_truncated" == record.unassessed
