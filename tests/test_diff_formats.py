"""citemark diff across trace exports (issue 35, item 2): LangSmith against MLflow.

The same two questions go through the same real LangChain retrieval chain twice:
once under LangSmith's own tracer (its runs caught on 127.0.0.1 and dumped as the SDK
exports them), once under ``mlflow.langchain.autolog()`` (each trace written with
MLflow's ``Trace.to_json()``); the second time the chain answers the second question
with a source it was not given. ``citemark check --from langsmith`` and ``--from
mlflow`` give rows whose ids are trace ids, which no two runs share, marked
``"id_scope": "run"``; ``citemark diff`` compares them row by row, by question. The
old code matched by id first and refused the pair ("share no row").
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

pytest.importorskip("langsmith")
pytest.importorskip("mlflow")

import mlflow
from fake_openai import run_cli
from langchain_core.tracers import LangChainTracer

# The SDK harnesses of the two readers' own tests: the fixtures and helpers that make
# real LangSmith runs and real MLflow traces offline.
from test_formats_langsmith import langsmith_client, posted_runs
from test_formats_langsmith import rag_chain as langsmith_chain
from test_formats_mlflow import jsonl, traces
from test_formats_mlflow import rag_chain as mlflow_chain

if TYPE_CHECKING:
    from pathlib import Path

    from langsmith import Client
    from mlflow.entities import Trace

__all__ = ["langsmith_client", "traces"]  # fixtures, used by name

QUESTIONS = ("How fast is a cheetah?", "Where do lions live?")
MONDAY = ("Cheetahs reach 104 km/h [2].", "Lions live in prides [1].")
# Tuesday's pipeline cites a seventh source for the lions, of three it was given.
TUESDAY = (MONDAY[0], "Lions live in prides [7].")


def langsmith_export(
    client: Client, parts: list[tuple[str, bytes]], replies: tuple[str, ...]
) -> bytes:
    """Each question through the chain under LangSmith's tracer; the runs, one a line."""
    tracer = LangChainTracer(client=client, project_name="citemark-diff")
    for question, reply in zip(QUESTIONS, replies, strict=True):
        langsmith_chain(reply).invoke(question, config={"callbacks": [tracer]})
    tracer.wait_for_futures()
    client.flush()
    return b"".join(json.dumps(run).encode() + b"\n" for run in posted_runs(parts))


def mlflow_export(caught: list[Trace], replies: tuple[str, ...]) -> bytes:
    """Each question through the chain under MLflow's autolog; the traces, one a line."""
    mlflow.langchain.autolog()
    try:
        for question, reply in zip(QUESTIONS, replies, strict=True):
            mlflow_chain(reply).invoke(question)
    finally:
        mlflow.langchain.autolog(disable=True)
    return jsonl(*caught)


def check(tmp_path: Path, name: str, data: bytes, reader: str) -> list[dict[str, Any]]:
    (tmp_path / f"{name}.json").write_bytes(data)
    done = run_cli(
        "check", str(tmp_path / f"{name}.json"), "--from", reader, "--out", str(tmp_path / name)
    )
    assert done.returncode in (0, 1), done.stderr
    return [json.loads(line) for line in (tmp_path / name / "rows.jsonl").read_text().splitlines()]


def test_a_langsmith_export_diffs_row_by_row_against_an_mlflow_export(
    langsmith_client, traces, tmp_path
):
    """Two rows compared by question; the one that now cites [7] of 3 is a new violation."""
    monday = check(tmp_path, "monday", langsmith_export(*langsmith_client, MONDAY), "langsmith")
    tuesday = check(tmp_path, "tuesday", mlflow_export(traces, TUESDAY), "mlflow")
    for rows in (monday, tuesday):
        assert 2 == len(rows)
        # The readers mark trace ids as per-run ids; rows.jsonl keeps the mark.
        assert ["run", "run"] == [row.get("id_scope") for row in rows]
    assert not {row["id"] for row in monday} & {row["id"] for row in tuesday}
    done = run_cli("diff", str(tmp_path / "monday"), str(tmp_path / "tuesday"), "--json")
    assert (0, "") == (done.returncode, done.stderr)
    diff = json.loads(done.stdout)["diff"]
    assert (2, 1, 0, 0) == (diff["compared"], diff["changed"], diff["added"], diff["removed"])
    assert ({"question": 2}, {"old": 2, "new": 2}) == (diff["matched_by"], diff["per_run_ids"])
    (change,) = diff["changes"]
    assert "new_violation" in change["why"]
    assert "question" not in change["inputs_changed"]
    assert "answer" in change["inputs_changed"]
