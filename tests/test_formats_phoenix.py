"""Phoenix span tables saved as Parquet, read by `--from openinference` through `citemark._pipelines.readers.phoenix`.

Every table here is Phoenix's own: a real LangChain retrieval chain (`InMemoryVectorStore`,
`DeterministicFakeEmbedding`, `FakeListChatModel`) runs under OpenInference's
`LangChainInstrumentor` with an OTel SDK `InMemorySpanExporter`; the spans are OTLP-encoded,
decoded by `phoenix.trace.otel.decode_otlp_span`, made a `TraceDataset` and saved with
`DataFrame.to_parquet` (`tests/producers/phoenix_spans.py`, in the formats environment). No
Phoenix server is started. The producer also writes the same spans as OTLP JSON, so the
Parquet rows can be compared with what the OpenInference reader makes of the same spans.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from formats_env import produce

from citemark._contract.errors import CitemarkError
from citemark._pipelines.readers import ReadOptions, Recorded, phoenix, reader_for

DOCUMENTS = [
    {
        "id": "lion#0",
        "text": "Lions live in prides and hunt mostly at night.",
        "metadata": {"doc_id": "lion", "chunk_id": "lion#0", "source": "https://example.org/lion"},
    },
    {
        "id": "cheetah#0",
        "text": "The cheetah is the fastest land animal, at 93 to 104 km/h.",
        "metadata": {"doc_id": "cheetah", "chunk_id": "cheetah#0"},
    },
    {
        "id": "cheetah#1",
        "text": "Cheetahs live in the savannahs of Africa and Iran.",
        "metadata": {"doc_id": "cheetah", "chunk_id": "cheetah#1"},
    },
]
RUNS = [
    {"question": "How fast is a cheetah?", "answer": "93 to 104 km/h [2].", "k": 3},
    {"question": "Where do lions live?", "answer": "In prides [1].", "k": 2},
    {"question": "No retriever?", "answer": "Nothing to cite [1].", "retrievals": 0},
    {"question": "Two retrievals?", "answer": "Both [1] [2].", "k": 2, "retrievals": 2},
]
MANY = [
    {"id": f"d{n}", "text": f"Document number {n} about cheetahs.", "metadata": {"doc_id": f"d{n}"}}
    for n in range(12)
]


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Phoenix's Parquet of RUNS, and of one run whose retriever span hit the attribute limit."""
    work = tmp_path_factory.mktemp("phoenix")
    produce("phoenix_spans", {"documents": DOCUMENTS, "runs": RUNS}, work / "runs.parquet", work)
    limited = {
        "documents": MANY,
        "runs": [{"question": "Which?", "answer": "This one [1].", "k": 10}],
        "max_span_attributes": 16,
    }
    produce("phoenix_spans", limited, work / "limited.parquet", work)
    return {"runs": work / "runs.parquet", "limited": work / "limited.parquet"}


def read_path(path: Path, index_base: int | None = None) -> list[Recorded]:
    with path.open("rb") as handle:
        return list(reader_for("openinference")(handle, ReadOptions(index_base=index_base)))


def check(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "citemark", "check", *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
    )


def result_rows(out: Path) -> list[dict[str, object]]:
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    for row in rows:
        row.pop("run_id")
    return rows


def test_the_table_is_phoenix_offline_dataframe(tables: dict[str, Path]) -> None:
    """The columns are the ones Phoenix writes: nested `attributes.*` structs, hex ids."""
    names = set(pq.ParquetFile(tables["runs"]).schema_arrow.names)
    assert {"context.trace_id", "context.span_id", "parent_id", "span_kind"} <= names
    assert {"attributes.retrieval", "attributes.llm", "attributes.input"} <= names


def test_each_trace_is_a_row_tied_to_its_retriever(tables: dict[str, Path]) -> None:
    """The LLM answer of each trace goes with the RETRIEVER documents of that trace, in order."""
    records = read_path(tables["runs"])
    assert [record.line for record in records] == [1, 2, 3, 4]
    first, second = (dict(record.row or {}) for record in records[:2])
    assert first["question"] == "How fast is a cheetah?"
    assert first["answer"] == "93 to 104 km/h [2]."
    by_id = {doc["id"]: doc for doc in DOCUMENTS}
    for row, count in ((first, 3), (second, 2)):
        sources = row["sources"]
        assert isinstance(sources, list)
        assert len(sources) == count
        for source in sources:
            doc = by_id[source["doc_id"]]  # Document.id, from the span's output listing
            assert source["text"] == doc["text"]
            # A null a Parquet struct column filled in is not a metadata key.
            assert source["metadata"] == doc["metadata"]
        assert len(str(row["id"])) == 32
    # The prompt numbered the documents [1]..[k]: the base is read off it.
    assert records[0].index_base_from_prompt
    assert first["index_base"] == 1
    assert records[2].unassessed == "no_retrieval_recorded"
    assert records[3].unassessed == "several_retrievals"


def test_parquet_rows_equal_the_openinference_rows_of_the_same_spans(
    tables: dict[str, Path],
) -> None:
    """Phoenix's table and the OTLP JSON of the same spans give the same rows, reasons and bases."""
    from_parquet = read_path(tables["runs"])
    otlp = Path(str(tables["runs"]) + ".otlp.jsonl")
    from_otlp = read_path(otlp)
    key = lambda r: (r.row or {}).get("id")  # noqa: E731
    assert sorted(
        ((r.row, r.unassessed, r.index_base_from_prompt) for r in from_parquet), key=str
    ) == sorted(((r.row, r.unassessed, r.index_base_from_prompt) for r in from_otlp), key=str)
    assert len({key(r) for r in from_parquet}) == len(RUNS)


def test_a_trace_id_is_marked_as_one_runs(tables: dict[str, Path]) -> None:
    """Every row's id is a trace id, which names one run: each carries id_scope "run"."""
    records = read_path(tables["runs"])
    assert len(RUNS) == len(records)
    assert [{"run"}] == [{str((r.row or {}).get("id_scope")) for r in records}]


def test_evicted_documents_are_truncated_not_renumbered(tables: dict[str, Path]) -> None:
    """The attribute limit evicted the first documents and Phoenix re-nested the rest from 0.

    The naive variant, numbering Phoenix's `retrieval.documents` list as it stands,
    gives [1] to a document the model saw as [4]: this reader calls it `sources_truncated`.
    """
    (record,) = read_path(tables["limited"])
    assert record.unassessed == "sources_truncated"
    rows = pq.ParquetFile(tables["limited"]).read().to_pylist()
    retriever = next(row for row in rows if row["span_kind"] == "RETRIEVER")
    llm = next(row for row in rows if row["span_kind"] == "LLM")
    listed = [
        item["document"]["content"] for item in retriever["attributes.retrieval"]["documents"]
    ]
    prompt = llm["attributes.llm"]["input_messages"][0]["message"]["content"]
    assert len(listed) < 10
    seen_as_one = prompt.split("[1] ", 1)[1].split("\n", 1)[0]
    assert listed[0] != seen_as_one


def test_span_order_does_not_matter(tables: dict[str, Path], tmp_path: Path) -> None:
    """Rows are the same when each trace's root span comes first (as a server listing may sort).

    The naive variant, emitting a trace when its root arrives, would read the reversed
    table as traces with nothing but a root.
    """
    table = pq.read_table(tables["runs"])
    reversed_path = tmp_path / "reversed.parquet"
    pq.write_table(table.take(pa.array(range(table.num_rows - 1, -1, -1))), reversed_path)
    forward = sorted((str(r.row), r.unassessed) for r in read_path(tables["runs"]))
    backward = sorted((str(r.row), r.unassessed) for r in read_path(reversed_path))
    assert backward == forward
    small = tmp_path / "small-groups.parquet"
    pq.write_table(table, small, row_group_size=3)
    assert sorted((str(r.row), r.unassessed) for r in read_path(small)) == forward


def test_end_to_end_matches_the_native_format(tables: dict[str, Path], tmp_path: Path) -> None:
    """`check --from openinference TABLE.parquet` gives the native format's rows.jsonl.

    With --index-base given, the base is the option's, so the rows are exactly the
    native rows; without it, the rows say the base was read off the recorded prompt.
    """
    records = read_path(tables["runs"], index_base=1)
    assessed = [dict(r.row or {}) for r in records if r.unassessed is None]
    assert len(assessed) == 2
    native = tmp_path / "native.jsonl"
    native.write_text("".join(json.dumps(row) + "\n" for row in assessed), encoding="utf-8")
    out, native_out = tmp_path / "phoenix", tmp_path / "native"
    done = check(tables["runs"], "--from", "openinference", "--index-base", "1", "--out", out)
    assert done.returncode == 0, done.stderr
    assert check(native, "--index-base", "1", "--out", native_out).returncode == 0
    results = result_rows(out)
    assert results[:2] == result_rows(native_out)
    assert [r["reason"] for r in results[2:]] == ["no_retrieval_recorded", "several_retrievals"]


def test_not_parquet_or_not_a_span_table_is_malformed(tmp_path: Path) -> None:
    """A file that is not Parquet, or a Parquet without span columns, is one malformed record."""
    (bad,) = phoenix.read(io.BytesIO(b"PAR1 not really"), ReadOptions())
    assert bad.malformed == "not a readable Parquet file"
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"question": ["canary-31"]}), other)
    with other.open("rb") as handle:
        (record,) = phoenix.read(handle, ReadOptions())
    assert record.malformed is not None
    assert "context.trace_id" in record.malformed
    assert "canary" not in record.malformed


def test_a_span_row_without_a_trace_id_is_malformed(tmp_path: Path) -> None:
    """A span that names no trace cannot be tied to one: malformed, with its row number only."""
    path = tmp_path / "spans.parquet"
    pq.write_table(
        pa.table(
            {
                "context.trace_id": [None],
                "context.span_id": ["00000000000000aa"],
                "parent_id": [None],
                "span_kind": ["LLM"],
            }
        ),
        path,
    )
    with path.open("rb") as handle:
        (record,) = phoenix.read(handle, ReadOptions())
    assert record.malformed == "span row 1 of the table has no trace id"


def test_missing_pyarrow_is_a_citemark_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without pyarrow, reading Parquet raises a CitemarkError that says what to install."""
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(CitemarkError, match="needs pyarrow"):
        list(phoenix.read(io.BytesIO(b"PAR1"), ReadOptions()))
