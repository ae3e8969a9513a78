"""``--from mlflow``: traces MLflow itself records of LangChain chains and traced functions.

Every trace here is made by mlflow-tracing in the test, from ``mlflow.langchain.autolog()``
over a real LangChain retrieval chain or from ``@mlflow.trace`` spans, and is written
with MLflow's own ``Trace.to_json()``. Nothing leaves the process: the tracking URI
names a closed port on 127.0.0.1, and the one network step of MLflow's exporter (the
upload ``MlflowV3SpanExporter._log_trace`` makes) is replaced by a list that keeps the
`mlflow.entities.Trace` MLflow built. mlflow-tracing 3.17.2 has no store that works
offline without sqlparse (its file and SQL stores import it), so this is the one place
to catch the trace. The fixture turns autolog off and resets MLflow's tracing state.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import pytest

pytest.importorskip("mlflow")

import mlflow
from hinted import check_as_hinted
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore
from mlflow.entities import Document as MlflowDocument
from mlflow.entities import SpanType
from mlflow.entities.trace_location import MlflowExperimentLocation
from mlflow.tracing.export.mlflow_v3 import MlflowV3SpanExporter

from citemark._pipelines.readers import ReadOptions, Recorded, reader_for
from citemark._pipelines.readers._common import prompt_index_base

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from mlflow.entities import Trace

DOCS = [
    Document(page_content="Lions live in prides and hunt at night.", id="lion#0"),
    Document(page_content="Cheetahs run at 93 to 104 km/h.", id="cheetah#0"),
    Document(page_content="Tigers are solitary hunters.", id="tiger#0"),
]
QUESTION = "How fast is a cheetah?"


@pytest.fixture
def traces(monkeypatch: pytest.MonkeyPatch, free_port: int) -> Iterator[list[Trace]]:
    """The traces MLflow finishes while the test runs, caught before they would upload."""
    caught: list[Trace] = []

    def keep(self: object, trace: Trace, prompts: object, workspace: object = None) -> None:
        caught.append(trace)

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://127.0.0.1:{free_port}")
    monkeypatch.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
    monkeypatch.setattr(MlflowV3SpanExporter, "_log_trace", keep)
    monkeypatch.setattr(MlflowV3SpanExporter, "_log_spans", lambda *args, **kwargs: None)
    mlflow.tracing.set_destination(MlflowExperimentLocation(experiment_id="0"))
    try:
        yield caught
    finally:
        mlflow.langchain.autolog(disable=True)
        mlflow.tracing.reset()


def numbered(start: int = 1, order: Callable[[list[Document]], list[Document]] = list) -> Any:
    """A formatter numbering the documents ``[start]``, ``[start+1]``, ... in ``order``."""

    def render(docs: list[Document]) -> str:
        return "\n\n".join(f"[{n}] {d.page_content}" for n, d in enumerate(order(docs), start))

    return RunnableLambda(render)


def rag_chain(reply: str, formatter: Any = None, k: int = 3) -> Any:
    """A real LangChain retrieval chain: vector store, numbered prompt, fake chat model."""
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents(DOCS)
    retriever = store.as_retriever(search_kwargs={"k": k})
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from the sources, citing [n].\n\n{context}"), ("human", "{question}")]
    )
    model = FakeListChatModel(responses=[reply])
    context = retriever | (formatter or numbered())
    return (
        {"context": context, "question": RunnablePassthrough()} | prompt | model | StrOutputParser()
    )


def autolog_trace(
    traces: list[Trace], reply: str, formatter: Any = None
) -> tuple[Trace, list[str]]:
    """Run the chain once under ``mlflow.langchain.autolog()``; its trace and the ids retrieved."""
    mlflow.langchain.autolog()
    chain = rag_chain(reply, formatter)
    chain.invoke(QUESTION)
    mlflow.langchain.autolog(disable=True)
    (trace,) = traces[-1:]
    retrieved = [d.id for d in chain.first.steps__["context"].first.invoke(QUESTION)]
    return trace, retrieved


def read(data: bytes, index_base: int | None = None) -> list[Recorded]:
    return list(reader_for("mlflow")(io.BytesIO(data), ReadOptions(index_base=index_base)))


def jsonl(*traces: Trace) -> bytes:
    return b"".join(t.to_json().encode() + b"\n" for t in traces)


def naive(trace: Trace) -> dict[str, object]:
    """The naive reader: the first retriever span found, the previews for question and answer."""
    spans = json.loads(trace.to_json())["data"]["spans"]
    first = next(s for s in spans if json.loads(s["attributes"]["mlflow.spanType"]) == "RETRIEVER")
    documents = json.loads(first["attributes"]["mlflow.spanOutputs"])
    info = trace.info
    return {
        "question": info.request_preview,
        "answer": info.response_preview,
        "sources": [{"text": d["page_content"], "doc_id": d["id"]} for d in documents],
    }


class TestAutologChain:
    def test_row_comes_from_the_spans(self, traces):
        """The root's input, the chat model's reply, and the retriever's documents in order."""
        trace, retrieved = autolog_trace(traces, "Cheetahs reach 104 km/h [2].")
        (record,) = read(jsonl(trace))
        assert record.unassessed is None
        assert record.malformed is None
        row = dict(record.row or {})
        assert trace.info.trace_id == row["id"]
        assert QUESTION == row["question"]
        assert "Cheetahs reach 104 km/h [2]." == row["answer"]
        assert retrieved == [s["doc_id"] for s in row["sources"]]  # type: ignore[attr-defined]
        assert "index_base" not in row
        assert not record.index_base_from_prompt

    def test_every_file_shape_gives_the_same_rows(self, traces):
        """JSONL, a JSON array and pretty-printed traces one after another read alike."""
        one, _ = autolog_trace(traces, "Fast [1].")
        two, _ = autolog_trace(traces, "Faster [2].")
        shapes = [
            jsonl(one, two),
            f"[{one.to_json()},\n {two.to_json(pretty=True)}]".encode(),
            (one.to_json(pretty=True) + "\n" + two.to_json(pretty=True)).encode(),
        ]
        rows = [[r.row for r in read(shape)] for shape in shapes]
        assert rows[0] == rows[1] == rows[2]
        assert [one.info.trace_id, two.info.trace_id] == [r["id"] for r in rows[0]]  # type: ignore[index]

    def test_splitter_survives_chunk_edges_and_escapes(self, traces):
        """Texts far longer than a read chunk, full of quotes and backslashes, come back whole."""
        text = 'a "quoted" \\ back\\slash {[not structure]} ' * 5000

        @mlflow.trace(span_type=SpanType.RETRIEVER)
        def retrieve(query: str) -> list[MlflowDocument]:
            return [MlflowDocument(page_content=text, id="big")]

        @mlflow.trace(span_type=SpanType.CHAIN)
        def answer(query: str) -> str:
            retrieve(query)
            return "See [1]."

        answer(QUESTION)
        answer(QUESTION)
        pretty = f"[{traces[0].to_json(pretty=True)}, {traces[1].to_json()}]".encode()
        for record in read(pretty):
            assert text == record.row["sources"][0]["text"]  # type: ignore[index]

    def test_jsonl_is_read_a_line_at_a_time(self, traces):
        """A JSONL file is never read whole: no read() without a size."""
        trace, _ = autolog_trace(traces, "Fast [1].")

        class NoWholeRead(io.BytesIO):
            def read(self, size: int | None = -1) -> bytes:
                assert size is not None
                assert size >= 0
                return super().read(size)

            def readlines(self, hint: int | None = -1) -> list[bytes]:
                raise AssertionError

        records = list(reader_for("mlflow")(NoWholeRead(jsonl(trace) * 3), ReadOptions()))
        assert [1, 2, 3] == [r.line for r in records]

    def test_previews_are_never_the_answer(self, traces):
        """MLflow cuts the response preview short; the reader takes the model span's whole reply."""
        reply = "Cheetahs run at 93 to 104 km/h [2]. " * 40
        trace, _ = autolog_trace(traces, reply)
        (record,) = read(jsonl(trace))
        assert reply == record.row["answer"]  # type: ignore[index]
        cut = str(naive(trace)["answer"])  # the naive preview reader gets a cut answer
        assert len(cut) < len(reply)
        assert cut.endswith("...")

    def test_zero_based_prompt_sets_the_base(self, traces):
        """``[0]..[2]`` in the recorded prompt gives index_base 0; --index-base wins over it."""
        trace, _ = autolog_trace(traces, "Fast [0].", numbered(start=0))
        (record,) = read(jsonl(trace))
        assert 0 == record.row["index_base"]
        assert record.index_base_from_prompt
        (explicit,) = read(jsonl(trace), index_base=1)
        assert "index_base" not in explicit.row
        assert not explicit.index_base_from_prompt
        # a prompt with [1]..[3] and stray [0] lines is not 0-based
        assert prompt_index_base("[1] a\n[2] b\n[3] c\n[0] d", 3) is None
        assert 0 == prompt_index_base("[0] a\n[1] b\n[2] c", 3)

    def test_prompt_in_another_order_is_unassessed(self, traces):
        """A formatter that reorders the documents: list order is not the numbering the model saw."""
        trace, retrieved = autolog_trace(traces, "Fast [1].", numbered(order=lambda d: d[::-1]))
        (record,) = read(jsonl(trace))
        assert "source_order_not_recorded" == record.unassessed
        # the naive reader trusts the list and resolves [1] to another document than the model saw
        assert retrieved[0] == naive(trace)["sources"][0]["doc_id"]  # type: ignore[index]
        assert retrieved[0] != retrieved[-1]


class TestSpanApi:
    def run(self, *retrievals: list[MlflowDocument], nested: bool = False) -> None:
        @mlflow.trace(span_type=SpanType.RETRIEVER)
        def inner(query: str, documents: list[MlflowDocument]) -> list[MlflowDocument]:
            return documents

        @mlflow.trace(span_type=SpanType.RETRIEVER)
        def retrieve(query: str, documents: list[MlflowDocument]) -> list[MlflowDocument]:
            return inner(query, documents) if nested else documents

        @mlflow.trace(span_type=SpanType.LLM)
        def generate(prompt: str) -> str:
            return "Cheetahs are fast [1]."

        @mlflow.trace(span_type=SpanType.CHAIN)
        def answer(question: str) -> str:
            for documents in retrievals:
                retrieve(question, documents)
            return generate(question)

        answer(QUESTION)

    def test_several_retrievals_are_unassessed(self, traces):
        """Two retrievals: nothing ties either to the answer, where the naive reader takes the first."""
        first = [MlflowDocument(page_content="Lions hunt.", id="lion")]
        second = [MlflowDocument(page_content="Cheetahs run.", id="cheetah")]
        self.run(first, second)
        (record,) = read(jsonl(traces[0]))
        assert "several_retrievals" == record.unassessed
        assert "lion" == naive(traces[0])["sources"][0]["doc_id"]  # type: ignore[index]

    def test_nested_retriever_is_one_retrieval(self, traces):
        """A retriever span inside another is the same retrieval, read once."""
        self.run([MlflowDocument(page_content="Cheetahs run.", id="cheetah")], nested=True)
        (record,) = read(jsonl(traces[0]))
        assert record.unassessed is None
        assert ["cheetah"] == [s["doc_id"] for s in record.row["sources"]]  # type: ignore[index, union-attr]
        assert "Cheetahs are fast [1]." == record.row["answer"]  # type: ignore[index]

    def test_no_retrieval_is_unassessed(self, traces):
        """No retriever documents: un-assessed, not a row with an empty source list."""
        self.run([])
        (record,) = read(jsonl(traces[0]))
        assert "no_retrieval_recorded" == record.unassessed
        assert [] == naive(traces[0])["sources"]  # the naive reader makes a row of nothing

    def test_lost_root_is_incomplete(self, traces):
        """A trace whose root span was lost: the first span left is not the root."""
        self.run([MlflowDocument(page_content="Cheetahs run.", id="cheetah")])
        value = json.loads(traces[0].to_json())
        value["data"]["spans"] = value["data"]["spans"][1:]
        (record,) = read(json.dumps(value).encode())
        assert "trace_incomplete" == record.unassessed

    def test_cut_retriever_output_is_truncated(self, traces):
        """A retriever output no longer JSON (a value-length limit cut it) is sources_truncated."""
        self.run([MlflowDocument(page_content="Cheetahs run.", id="cheetah")])
        value = json.loads(traces[0].to_json())
        for span in value["data"]["spans"]:
            if span["name"] == "retrieve":
                span["attributes"]["mlflow.spanOutputs"] = span["attributes"]["mlflow.spanOutputs"][
                    :20
                ]
        (record,) = read(json.dumps(value).encode())
        assert "sources_truncated" == record.unassessed

    def test_tool_call_answer_is_structured(self, traces):
        """A chat model's tool call becomes a structured answer; arguments without one are unparsed."""

        def chat_trace(arguments: str) -> Trace:
            @mlflow.trace(span_type=SpanType.RETRIEVER)
            def retrieve(query: str) -> list[MlflowDocument]:
                return [MlflowDocument(page_content="Cheetahs run.", id="cheetah")]

            @mlflow.trace(span_type=SpanType.CHAT_MODEL)
            def chat(messages: list[dict[str, str]]) -> dict[str, object]:
                call = {
                    "id": "c0",
                    "type": "function",
                    "function": {"name": "CitedAnswer", "arguments": arguments},
                }
                return {
                    "choices": [
                        {"message": {"role": "assistant", "content": None, "tool_calls": [call]}}
                    ]
                }

            @mlflow.trace(span_type=SpanType.CHAIN)
            def answer(question: str) -> object:
                retrieve(question)
                return chat([{"role": "user", "content": question}])

            answer(QUESTION)
            return traces[-1]

        (good,) = read(jsonl(chat_trace('{"answer": "Fast.", "citations": [0]}')))
        assert {"answer": "Fast.", "citations": [0]} == good.row["answer"]  # type: ignore[index]
        (bad,) = read(jsonl(chat_trace('{"citations": "first"}')))
        assert "structured_output_not_parsed" == bad.unassessed


class TestMalformed:
    @pytest.mark.parametrize(
        ("data", "reason"),
        [
            (b'{"info": {}, "data": {"spans": []}}\n', "info.trace_id must be a non-empty string"),
            (
                b'{"info": {"trace_id": "tr-1"}, "data": {"spans": 3}}\n',
                "data.spans must be a list",
            ),
            (b'[{"info": 1, "data": {}}, 7]', "a trace needs info and data objects"),
            (b'{\n "info": {"trace_id": "SECRET"', "the file ends inside a trace"),
            (b"[7]", "a trace must be a JSON object"),
        ],
    )
    def test_reasons_are_structural(self, data, reason):
        """A bad record gets a fixed reason that never quotes it."""
        records = read(data)
        assert reason == records[0].malformed
        assert all("SECRET" not in (r.malformed or "") for r in records)


def run_check(tmp_path: Path, name: str, data: bytes, *options: str) -> list[dict[str, object]]:
    path = tmp_path / f"{name}.in"
    path.write_bytes(data)
    out = tmp_path / name
    done = subprocess.run(
        [sys.executable, "-m", "citemark", "check", str(path), "--out", str(out), *options],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    for record in records:
        record.pop("run_id", None)
    return records


class TestShapes:
    def test_a_pretty_printed_trace_is_named_and_read(self, traces, tmp_path):
        """``Trace.to_json(pretty=True)`` given without --from: the hint names --from mlflow.

        The row the named reader reads carries its trace id as a per-run id.
        """
        trace, _ = autolog_trace(traces, "Cheetahs reach 104 km/h [2].")
        path = tmp_path / "trace.json"
        path.write_text(trace.to_json(pretty=True), encoding="utf-8")
        option, records = check_as_hinted(path, tmp_path)
        assert "--from mlflow" == option
        assert [trace.info.trace_id] == [r["id"] for r in records]
        (row,) = read(path.read_bytes())
        assert "run" == row.row["id_scope"]  # type: ignore[index]

    def test_pretty_printed_traces_are_numbered_by_their_first_line(self, traces):
        """Traces one after another: each row's line is the line its trace starts on."""
        one, _ = autolog_trace(traces, "Fast [1].")
        two, _ = autolog_trace(traces, "Faster [2].")
        first = one.to_json(pretty=True) + "\n"
        records = read(("\n" + first + two.to_json(pretty=True)).encode())
        assert [2, 2 + first.count("\n")] == [r.line for r in records]


class TestCheckEndToEnd:
    def test_fabricated_marker_fails_and_native_rows_match(self, traces, tmp_path):
        """Through ``citemark check --from mlflow``: [7] of 3 sources fails; native rows agree."""
        good, _ = autolog_trace(traces, "Cheetahs reach 104 km/h [2].")
        fake, _ = autolog_trace(traces, "Cheetahs reach 104 km/h [7].")
        data = jsonl(good, fake)
        recorded = run_check(tmp_path, "mlflow", data, "--from", "mlflow")
        assert ["unassessed", "failed"] == [r["outcome"] for r in recorded]
        assert ["fabricated_citation"] == recorded[1]["details"]["deterministic_failures"]  # type: ignore[index]
        native = b"".join(json.dumps(r.row).encode() + b"\n" for r in read(data))
        assert recorded == run_check(tmp_path, "native", native)
