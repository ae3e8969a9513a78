"""A file another library wrote, given without ``--from``: the error names the reader that reads it.

Every file here is written by its producer in the test (Ragas' ``to_csv``, ``to_list``
and ``to_pandas().to_parquet()``, DeepEval's
``save_as``, Phoenix's span table through ``DataFrame.to_parquet``, MLflow's
``Trace.to_json``), given to ``citemark check`` without ``--from``; the ``--from``
the error names is then run on the same file and must read every row of it
(`hinted.check_as_hinted`). The hint is decided from the file's content, not its
first line: a CSV header's columns, a JSON array's first element, a Parquet schema.
"""

from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from formats_env import produce
from hinted import check_as_hinted, hinted_reader
from test_formats_phoenix import DOCUMENTS, RUNS
from test_formats_ragas_deepeval import DEEPEVAL_SPEC, RAGAS_SPEC

from citemark._pipelines.readers._hints import HEAD_BYTES, file_hint

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(scope="module")
def produced(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The files Ragas, DeepEval and Phoenix write for the specs of their reader tests."""
    work = tmp_path_factory.mktemp("hint-producers")
    produce("ragas_dataset", RAGAS_SPEC, work / "ragas", work)
    produce("deepeval_dataset", DEEPEVAL_SPEC, work / "deepeval", work)
    produce("phoenix_spans", {"documents": DOCUMENTS, "runs": RUNS}, work / "spans.parquet", work)
    return {
        "ragas-csv": work / "ragas" / "ragas.csv",
        "ragas-json": work / "ragas" / "ragas.json",
        "ragas-parquet": work / "ragas" / "ragas.parquet",
        "deepeval-json": work / "deepeval" / "deepeval.json",
        "deepeval-csv": work / "deepeval" / "deepeval.csv",
        "phoenix-parquet": work / "spans.parquet",
    }


@pytest.mark.parametrize(
    ("name", "reader", "rows"),
    [
        ("ragas-csv", "--from ragas", len(RAGAS_SPEC)),
        ("ragas-json", "--from ragas", len(RAGAS_SPEC)),
        ("ragas-parquet", "--from ragas", len(RAGAS_SPEC)),
        ("deepeval-json", "--from deepeval", len(DEEPEVAL_SPEC)),
        ("deepeval-csv", "--from deepeval", len(DEEPEVAL_SPEC)),
        ("phoenix-parquet", "--from openinference", len(RUNS)),
    ],
)
def test_the_named_reader_reads_the_file(produced, tmp_path, name, reader, rows):
    """No --from: exit 2 naming the reader; that reader then reads every row of the file."""
    option, records = check_as_hinted(produced[name], tmp_path)
    assert reader == option
    assert rows == len(records)


def test_the_hint_quotes_nothing_of_the_file(produced, tmp_path):
    """The sentence is citemark's: no column, key or value of the file is in it."""
    _, error = hinted_reader(produced["ragas-csv"], tmp_path)
    assert "user_input" not in error
    assert "cheetah" not in error.lower()
    assert "line 1: not valid JSON (the file is CSV with Ragas's columns" in error


def test_a_parquet_table_of_deepeval_cases_is_not_sent_to_a_reader(tmp_path):
    """pyarrow's Parquet of DeepEval columns: no reader takes it, and the hint says so."""
    table = pa.table({"input": ["q"], "actual_output": ["a [1]"], "retrieval_context": [["c"]]})
    path = tmp_path / "deepeval.parquet"
    pq.write_table(table, path)
    with path.open("rb") as handle:
        handle.seek(7)
        hint = file_hint(handle)
        assert 7 == handle.tell()
    assert "Parquet table of DeepEval records, which --from deepeval does not read" in str(hint)


def test_keys_past_the_head_are_not_needed(tmp_path):
    """A first record larger than the head the hint reads is still known by its first keys."""
    trace = {"info": {"trace_id": "tr-1"}, "data": {"spans": [{"pad": "x" * HEAD_BYTES}]}}
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(trace, indent=2), encoding="utf-8")
    with path.open("rb") as handle:
        assert "read it with --from mlflow" in str(file_hint(handle))


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\xff\xfe not text",
        b"a,b,c\n1,2,3\n",
        b'[{"question": "q", "answer": "a"}]',
        b'{\n "question": "q"\n}\n',
    ],
    ids=["empty", "binary", "csv-unknown", "array-unknown", "object-unknown"],
)
def test_no_hint_where_no_reader_fits(data):
    """A file no reader recognises gets no file hint (the line's own reason stays)."""
    assert file_hint(io.BytesIO(data)) is None
