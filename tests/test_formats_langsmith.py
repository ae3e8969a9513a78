"""``--from langsmith``: the runs LangSmith's own tracer posts for a real LangChain chain.

The chain runs with a real `LangChainTracer` whose `langsmith.Client` points at a
recording HTTP server the test starts on 127.0.0.1 (fake API key). The server keeps
the parts of every ``POST /runs/multipart``; `posted_runs` merges each run's parts
(``post.<id>``, ``post.<id>.inputs``, ``.outputs``, ..., then any ``patch.<id>``) into
one object, and `langsmith.schemas.Run` validates it and dumps it the way the SDK
exports runs (``model_dump(mode="json")``). That JSONL is what the reader takes.
"""

from __future__ import annotations

import email.parser
import email.policy
import io
import json
import random
import subprocess
import sys
import threading
import uuid
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest
from hinted import check_as_hinted

pytest.importorskip("langsmith")

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_core.tracers import LangChainTracer
from langchain_core.vectorstores import InMemoryVectorStore
from langsmith import Client
from langsmith._internal._beta_decorator import LangSmithDeprecationWarning
from langsmith.schemas import Example, Run

from citemark._pipelines.readers import ReadOptions, Recorded, reader_for
from citemark._pipelines.readers import langsmith as langsmith_format

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

DOCS = [
    Document(page_content="Lions live in prides and hunt at night.", id="lion#0"),
    Document(page_content="Cheetahs run at 93 to 104 km/h.", id="cheetah#0"),
    Document(page_content="Tigers are solitary hunters.", id="tiger#0"),
]
QUESTION = "How fast is a cheetah?"


class Recorder(BaseHTTPRequestHandler):
    """Keeps the multipart parts LangSmith posts, and serves them back as ``/runs/query``.

    ``POST /runs/query`` (what `Client.list_runs` calls) answers with every run posted
    so far, merged; every other call is answered with ``{}``.
    """

    parts: list[tuple[str, bytes]]

    def handle_any(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        reply = b"{}"
        if self.path.startswith("/runs/multipart"):
            head = f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode()
            message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
            for part in message.iter_parts():
                name = part.get_param("name", header="content-disposition")
                self.parts.append((str(name), part.get_payload(decode=True)))
        elif self.path.startswith("/runs/query"):
            # as the API sends runs: their attachments as s3_urls, which the client converts
            served = [
                {k: v for k, v in r.items() if k != "attachments"} for r in posted_runs(self.parts)
            ]
            reply = json.dumps({"runs": served}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def do_GET(self) -> None:
        self.handle_any()

    def do_POST(self) -> None:
        self.handle_any()

    def log_message(self, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def langsmith_client() -> Iterator[tuple[Client, list[tuple[str, bytes]]]]:
    """A LangSmith client posting to a recorder on 127.0.0.1, and the parts it posted."""
    parts: list[tuple[str, bytes]] = []
    handler = type("Handler", (Recorder,), {"parts": parts})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    client = Client(api_url=f"http://127.0.0.1:{server.server_address[1]}", api_key="fake-key")
    try:
        yield client, parts
    finally:
        client.flush()
        client.session.close()
        server.shutdown()
        server.server_close()
        thread.join()


def posted_runs(parts: list[tuple[str, bytes]]) -> list[dict[str, Any]]:
    """Merge each run's posted parts into one run, validated and dumped as the SDK exports it."""
    runs: dict[str, dict[str, Any]] = {}
    for name, payload in parts:
        kind, _, rest = name.partition(".")
        run_id, _, field = rest.partition(".")
        if kind not in {"post", "patch"}:
            continue
        run = runs.setdefault(run_id, {})
        value = json.loads(payload)
        if field:
            run[field] = value
        else:
            run.update(value)
    return [Run.model_validate(run).model_dump(mode="json") for run in runs.values()]


def numbered(start: int = 1) -> Any:
    return RunnableLambda(
        lambda docs: "\n\n".join(f"[{n}] {d.page_content}" for n, d in enumerate(docs, start))
    )


def rag_chain(reply: str, start: int = 1, second_retriever: bool = False) -> Any:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents(DOCS)
    retriever = store.as_retriever(search_kwargs={"k": 3})
    steps: dict[str, Any] = {
        "context": retriever | numbered(start),
        "question": RunnablePassthrough(),
    }
    if second_retriever:
        steps["more"] = store.as_retriever(search_kwargs={"k": 1})
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from the sources, citing [n].\n\n{context}"), ("human", "{question}")]
    )
    return steps | prompt | FakeListChatModel(responses=[reply]) | StrOutputParser()


def traced(client: Client, parts: list[tuple[str, bytes]], *chains: Any) -> list[dict[str, Any]]:
    """Run each chain once under the real tracer; the runs it posted, as the SDK exports them."""
    tracer = LangChainTracer(client=client, project_name="citemark-test")
    for chain in chains:
        chain.invoke(QUESTION, config={"callbacks": [tracer]})
    tracer.wait_for_futures()
    client.flush()
    return posted_runs(parts)


def read(lines: list[dict[str, Any]], index_base: int | None = None) -> list[Recorded]:
    data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    return list(reader_for("langsmith")(io.BytesIO(data), ReadOptions(index_base=index_base)))


def naive(runs: list[dict[str, Any]]) -> dict[str, object]:
    """The naive reader: file order trusted, the first run is the root, the first retriever wins."""
    retriever = next(r for r in runs if r["run_type"] == "retriever")
    return {
        "question": (runs[0]["inputs"] or {}).get("input"),
        "answer": (runs[0]["outputs"] or {}).get("output"),
        "sources": [d["id"] for d in retriever["outputs"]["documents"]],
    }


class TestPostedRuns:
    def test_shuffled_runs_rebuild_the_trace(self, langsmith_client):
        """Runs in any order: the root by parent_run_id, the retriever's documents in order."""
        runs = traced(*langsmith_client, rag_chain("Cheetahs reach 104 km/h [2]."))
        retriever = next(r for r in runs if r["run_type"] == "retriever")
        expected = [d["id"] for d in retriever["outputs"]["documents"]]
        root = next(r for r in runs if r["parent_run_id"] is None)
        middle = [r for r in runs if r is not retriever and r is not root]
        random.Random(7).shuffle(middle)  # noqa: S311 - a fixed order, not a secret
        shuffled = [retriever, *middle, root]
        (record,) = read(shuffled)
        assert record.unassessed is None
        row = dict(record.row or {})
        assert root["id"] == row["id"]
        assert QUESTION == row["question"]
        assert "Cheetahs reach 104 km/h [2]." == row["answer"]
        assert expected == [s["doc_id"] for s in row["sources"]]  # type: ignore[attr-defined]
        assert naive(shuffled)["answer"] is None  # the naive reader took a child for the root

    def test_interleaved_traces_are_kept_apart(self, langsmith_client):
        """Two traces' runs alternating line by line give two rows, each with its own answer."""
        runs = traced(*langsmith_client, rag_chain("First [1]."), rag_chain("Second [2]."))
        by_trace: dict[str, list[dict[str, Any]]] = {}
        for run in runs:
            by_trace.setdefault(run["trace_id"], []).append(run)
        one, two = by_trace.values()
        mixed = [run for pair in zip(one, two, strict=False) for run in pair]
        mixed += one[len(two) :] + two[len(one) :]
        answers = sorted(str((r.row or {})["answer"]) for r in read(mixed))
        assert ["First [1].", "Second [2]."] == answers

    def test_several_retrievals_are_unassessed(self, langsmith_client):
        """Two retriever runs: nothing ties either to the answer; the naive reader takes the first."""
        runs = traced(*langsmith_client, rag_chain("Fast [1].", second_retriever=True))
        (record,) = read(runs)
        assert "several_retrievals" == record.unassessed
        assert naive(runs)["sources"]  # the naive reader resolved against one of them

    def test_missing_root_is_incomplete(self, langsmith_client):
        """The root run never arrives: trace_incomplete, where the naive reader picks a child."""
        runs = [r for r in traced(*langsmith_client, rag_chain("Fast [1].")) if r["parent_run_id"]]
        (record,) = read(runs)
        assert "trace_incomplete" == record.unassessed
        assert naive(runs)["question"] == QUESTION  # a child's input passes for the question

    def test_zero_based_prompt_sets_the_base(self, langsmith_client):
        """The llm run's prompt numbers [0]..[2]: index_base 0, unless --index-base is given."""
        runs = traced(*langsmith_client, rag_chain("Fast [0].", start=0))
        (record,) = read(runs)
        assert 0 == (record.row or {})["index_base"]
        assert record.index_base_from_prompt
        (explicit,) = read(runs, index_base=1)
        assert "index_base" not in (explicit.row or {})

    def test_run_after_its_window_is_malformed(self, langsmith_client, monkeypatch):
        """A run coming more than WINDOW lines after its trace's last one is reported, not merged."""
        monkeypatch.setattr(langsmith_format, "WINDOW", 2)
        runs = traced(*langsmith_client, rag_chain("Fast [1]."))
        root = next(r for r in runs if r["parent_run_id"] is None)
        late = next(r for r in runs if r["run_type"] == "retriever")
        others = [r for r in runs if r is not late]
        filler = [{"inputs": {"question": "q"}, "outputs": {"answer": "a", "context": ["c"]}}] * 3
        records = read([*others, *filler, late])
        assert "a run of a trace already read" in str(records[-1].malformed)
        trace_row = next(r for r in records if (r.row or {}).get("id") == root["id"])
        assert "no_retrieval_recorded" == trace_row.unassessed


class TestExamples:
    def example(self, outputs: dict[str, Any]) -> dict[str, Any]:
        value = Example(
            id=uuid.uuid4(),
            dataset_id=uuid.uuid4(),
            created_at=datetime.now(tz=UTC),
            inputs={"question": QUESTION},
            outputs=outputs,
        )
        return value.model_dump(mode="json")

    def test_example_is_a_row(self):
        """inputs.question, outputs.answer and outputs.context documents make a row."""
        docs = [{"page_content": d.page_content, "id": d.id, "metadata": {}} for d in DOCS]
        example = self.example({"answer": "Fast [2].", "context": docs})
        (record,) = read([example])
        assert {
            "id": example["id"],
            "question": QUESTION,
            "answer": "Fast [2].",
            "sources": [{"text": d.page_content, "doc_id": d.id, "metadata": {}} for d in DOCS],
        } == record.row

    def test_joined_context_is_unassessed(self):
        """One context string: where one source ends cannot be known; naive reading is one source."""
        joined = "\n\n".join(d.page_content for d in DOCS)
        (record,) = read([self.example({"answer": "Fast [2].", "context": joined})])
        assert "contexts_joined" == record.unassessed


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


def test_check_end_to_end(langsmith_client, tmp_path):
    """``citemark check --from langsmith``: [7] of 3 sources fails; the native rows agree."""
    runs = traced(*langsmith_client, rag_chain("Fast [2]."), rag_chain("Fast [7]."))
    # the roots first, so each row's line (its root run's) is the line of the native row
    runs.sort(key=lambda run: run["parent_run_id"] is not None)
    data = b"".join(json.dumps(run).encode() + b"\n" for run in runs)
    recorded = run_check(tmp_path, "langsmith", data, "--from", "langsmith")
    outcomes = sorted(str(r["outcome"]) for r in recorded)
    assert ["failed", "unassessed"] == outcomes
    failed = next(r for r in recorded if r["outcome"] == "failed")
    assert ["fabricated_citation"] == failed["details"]["deterministic_failures"]  # type: ignore[index]
    rows = read(runs)
    native = b"".join(json.dumps(r.row).encode() + b"\n" for r in rows)
    assert recorded == run_check(tmp_path, "native", native)


class TestListedRuns:
    """What a user dumps from `Client.list_runs`: a JSON array of `Run.dict()` objects."""

    def listed(self, client: Client, parts: list[tuple[str, bytes]], *chains: Any) -> list[Run]:
        traced(client, parts, *chains)
        with pytest.warns(LangSmithDeprecationWarning, match="list_runs"):
            return list(client.list_runs(project_id=uuid.uuid4()))

    @pytest.mark.filterwarnings("ignore:The `dict` method is deprecated:DeprecationWarning")
    @pytest.mark.parametrize("indent", [None, 2], ids=["one-line", "pretty"])
    def test_a_json_array_of_listed_runs_reads_as_its_jsonl(self, langsmith_client, indent):
        """``json.dump([r.dict() for r in client.list_runs(...)])``: the rows of the same runs.

        Each row's line is its root run's position in the array; its id is the trace id,
        marked as a per-run id.
        """
        runs = self.listed(*langsmith_client, rag_chain("Fast [2]."), rag_chain("Slow [1]."))
        assert 9 < len(runs)
        dumped = json.dumps([r.dict() for r in runs], default=str, indent=indent).encode()
        records = list(reader_for("langsmith")(io.BytesIO(dumped), ReadOptions()))
        jsonl = read([r.model_dump(mode="json") for r in runs])
        assert [r.row for r in jsonl] == [r.row for r in records]
        assert ["Fast [2].", "Slow [1]."] == sorted(str((r.row or {})["answer"]) for r in records)
        assert all(r.unassessed is None and r.malformed is None for r in records)
        roots = [n for n, r in enumerate(runs, start=1) if r.parent_run_id is None]
        assert sorted(roots) == sorted(r.line for r in records)
        assert {"run"} == {(r.row or {})["id_scope"] for r in records}

    @pytest.mark.filterwarnings("ignore:The `dict` method is deprecated:DeprecationWarning")
    def test_a_dumped_array_given_without_from_is_named_and_read(self, langsmith_client, tmp_path):
        """The dumped runs given to a plain check: the hint names --from langsmith, which reads them."""
        runs = self.listed(*langsmith_client, rag_chain("Fast [2]."), rag_chain("Fast [7]."))
        path = tmp_path / "runs.json"
        with path.open("w", encoding="utf-8") as handle:
            json.dump([r.dict() for r in runs], handle, default=str, indent=2)
        option, records = check_as_hinted(path, tmp_path)
        assert "--from langsmith" == option
        assert ["failed", "unassessed"] == sorted(str(r["outcome"]) for r in records)

    def test_runs_pretty_printed_one_after_another(self, langsmith_client):
        """Runs dumped one ``json.dump(..., indent=2)`` after another: each row's line is its root's."""
        runs = self.listed(*langsmith_client, rag_chain("Fast [2]."))
        texts = [json.dumps(r.model_dump(mode="json"), indent=2) + "\n" for r in runs]
        records = list(reader_for("langsmith")(io.BytesIO("".join(texts).encode()), ReadOptions()))
        (record,) = records
        root = next(n for n, r in enumerate(runs) if r.parent_run_id is None)
        assert 1 + sum(text.count("\n") for text in texts[:root]) == record.line
        assert read([r.model_dump(mode="json") for r in runs])[0].row == record.row

    def test_a_cut_array_is_one_malformed_record(self, langsmith_client):
        """An array cut short: the runs before the cut are read, then one structural reason."""
        runs = self.listed(*langsmith_client, rag_chain("Fast [2]."))
        dumped = json.dumps([r.model_dump(mode="json") for r in runs]).encode()
        records = list(reader_for("langsmith")(io.BytesIO(dumped[:-40]), ReadOptions()))
        reasons = [r.malformed for r in records if r.malformed]
        assert ["the file ends inside a run"] == reasons


def test_an_example_id_is_the_datasets():
    """A dataset example's id names the question: it carries no id_scope."""
    example = TestExamples().example({"answer": "Fast [1].", "context": ["Cheetahs run."]})
    (record,) = read([example])
    assert "id_scope" not in (record.row or {})
