"""Traces whose spans are not one tree: a span id given twice, parent ids in a cycle (issue 38).

The spans come from real runs, as the readers' own tests make them: a LangChain
retrieval chain under OpenInference's instrumentor on an OpenTelemetry SDK provider,
written as OTLP JSON (`test_formats_openinference`), and a LangChain chain under
``mlflow.langchain.autolog()``, written with MLflow's ``Trace.to_json()``
(`test_formats_mlflow`). Each file is then edited the way a broken exporter or a
hostile file would leave it: one span's id given to another span, or two spans made
each other's parent. Such a trace is ``trace_incomplete``, never read as if it were
a tree; the other traces of the file are read as before.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

pytest.importorskip("mlflow")

# The SDK harnesses of the two readers' own tests: the fixtures and helpers that make
# real OpenInference spans and real MLflow traces offline.
from test_formats_mlflow import autolog_trace, traces
from test_formats_mlflow import read as read_mlflow
from test_formats_openinference import QUESTION, langchain_tracing, otlp_hex, read_text, run_check
from test_formats_openinference import two_runs as two_chain_runs

from citemark._contract.reasons import explain
from citemark._pipelines.readers._tree import has_cycle

if TYPE_CHECKING:
    from pathlib import Path

    from test_formats_openinference import Tracing

__all__ = ["langchain_tracing", "traces", "two_chain_runs"]  # fixtures, used by name


# --- OTLP JSON (OpenInference) ---------------------------------------------------


def otlp_request(tracing: Tracing) -> dict[str, Any]:
    """The two runs' spans as one OTLP request (hex ids), as a collector's file exporter writes it."""
    request: dict[str, Any] = json.loads(otlp_hex(tracing.spans()))
    return request


def spans_of(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's span objects, in file order, to edit in place."""
    return [
        span
        for resource in request["resourceSpans"]
        for scope in resource["scopeSpans"]
        for span in scope["spans"]
    ]


def first_trace_span(request: dict[str, Any], name: str) -> dict[str, Any]:
    """The span called ``name`` in the file's first trace."""
    spans = spans_of(request)
    first = spans[0]["traceId"]
    (found,) = [s for s in spans if s["traceId"] == first and s["name"] == name]
    return found


def rows(request: dict[str, Any]) -> list[tuple[str | None, str | None]]:
    """Each record's un-assessed reason and question."""
    return [
        (r.unassessed, None if r.row is None else str(r.row["question"]))
        for r in read_text(json.dumps(request) + "\n")
    ]


SECOND_QUESTION = "Which animal is fastest?"
BOTH_READ = [(None, QUESTION), (None, SECOND_QUESTION)]


class TestOtlpSpanTrees:
    def test_two_spans_under_one_id_make_the_trace_incomplete(self, two_chain_runs):
        """A later span given the retriever's id: trace_incomplete, not a row missing a span.

        Today's reader kept the first span under an id and dropped the other without
        a word, so the trace read as a whole, assessed row.
        """
        tracing, _ = two_chain_runs
        request = otlp_request(tracing)
        assert BOTH_READ == rows(request)
        retriever = first_trace_span(request, "VectorStoreRetriever")
        first_trace_span(request, "RunnablePassthrough")["spanId"] = retriever["spanId"]
        assert [("trace_incomplete", QUESTION), (None, SECOND_QUESTION)] == rows(request)

    def test_a_child_under_the_root_id_makes_the_trace_incomplete(self, two_chain_runs):
        """A span carrying the root's own span id, arriving before the root: not one tree."""
        tracing, _ = two_chain_runs
        request = otlp_request(tracing)
        root = first_trace_span(request, "rag_chain")
        first_trace_span(request, "StrOutputParser")["spanId"] = root["spanId"]
        assert "trace_incomplete" == rows(request)[0][0]

    def test_an_exact_copy_of_a_span_is_read_once(self, two_chain_runs):
        """The same span sent twice, as an exporter's retry does: the rows are unchanged."""
        tracing, _ = two_chain_runs
        request = otlp_request(tracing)
        before = read_text(json.dumps(request) + "\n")
        scope = request["resourceSpans"][0]["scopeSpans"][0]
        scope["spans"] = [scope["spans"][0], *scope["spans"]]
        after = read_text(json.dumps(request) + "\n")
        assert [(r.unassessed, r.row) for r in before] == [(r.unassessed, r.row) for r in after]
        assert BOTH_READ == rows(request)

    def test_a_parent_cycle_below_the_root_makes_the_trace_incomplete(self, two_chain_runs):
        """Retriever and its parent each other's parent: below no root, trace_incomplete.

        Today's reader walked the cycle without a word (its walks stop at a span seen
        before) and assessed the row as if the retrieval were part of the run.
        """
        tracing, _ = two_chain_runs
        request = otlp_request(tracing)
        retriever = first_trace_span(request, "VectorStoreRetriever")
        parallel = first_trace_span(request, "RunnableParallel<context,question>")
        parallel["parentSpanId"] = retriever["spanId"]
        assert [("trace_incomplete", QUESTION), (None, SECOND_QUESTION)] == rows(request)

    def test_a_span_that_is_its_own_parent_makes_the_trace_incomplete(self, two_chain_runs):
        """The smallest cycle: the chat model span names itself as its parent."""
        tracing, _ = two_chain_runs
        request = otlp_request(tracing)
        model = first_trace_span(request, "FakeListChatModel")
        model["parentSpanId"] = model["spanId"]
        assert [("trace_incomplete", QUESTION), (None, SECOND_QUESTION)] == rows(request)

    def test_sdk_json_spans_are_held_to_one_tree_too(self, two_chain_runs):
        """ConsoleSpanExporter's objects (``parent_id``, ``0x`` ids): a cycle, then a shared id."""
        tracing, _ = two_chain_runs
        spans = [json.loads(span.to_json()) for span in tracing.spans()]
        first = [s for s in spans if s["context"]["trace_id"] == spans[0]["context"]["trace_id"]]
        named = {s["name"]: s for s in first}
        retriever, parallel = (
            named["VectorStoreRetriever"],
            named["RunnableParallel<context,question>"],
        )

        def read_sdk() -> list[str | None]:
            return [r.unassessed for r in read_text("".join(json.dumps(s) + "\n" for s in spans))]

        assert [None, None] == read_sdk()
        parallel["parent_id"] = retriever["context"]["span_id"]
        assert ["trace_incomplete", None] == read_sdk()
        parallel["parent_id"] = named["rag_chain"]["context"]["span_id"]
        named["RunnablePassthrough"]["context"]["span_id"] = retriever["context"]["span_id"]
        assert ["trace_incomplete", None] == read_sdk()

    def test_check_reports_the_row_with_its_reason(self, two_chain_runs, tmp_path: Path):
        """Through citemark check: the tangled trace is an un-assessed row that says why."""
        tracing, _ = two_chain_runs
        request = otlp_request(tracing)
        retriever = first_trace_span(request, "VectorStoreRetriever")
        first_trace_span(request, "RunnableParallel<context,question>")["parentSpanId"] = retriever[
            "spanId"
        ]
        checked = run_check(
            tmp_path, "tangled.jsonl", json.dumps(request) + "\n", "--from", "openinference"
        )
        assert [("unassessed", "trace_incomplete"), ("failed", None)] == [
            (r["outcome"], r["reason"]) for r in checked
        ]
        assert explain("trace_incomplete") == checked[0]["explanation"]
        assert "parents in a cycle" in checked[0]["explanation"]


# --- MLflow ------------------------------------------------------------------------


def mlflow_spans(value: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    """The trace's spans of one ``mlflow.spanType``."""
    return [
        s for s in value["data"]["spans"] if json.loads(s["attributes"]["mlflow.spanType"]) == kind
    ]


class TestMlflowSpanTrees:
    def test_a_parent_cycle_is_incomplete_not_no_retrieval(self, traces):
        """The retriever and its parent each other's parent: trace_incomplete.

        Today's reader followed the retriever's parents round the cycle back to the
        retriever itself, took it for a retriever inside another, and said the trace
        held no retrieval (``no_retrieval_recorded``).
        """
        trace, _ = autolog_trace(traces, "Cheetahs reach 104 km/h [2].")
        value = json.loads(trace.to_json())
        by_id = {span["span_id"]: span for span in value["data"]["spans"]}
        (retriever,) = mlflow_spans(value, "RETRIEVER")
        parent = by_id[retriever["parent_span_id"]]
        assert parent["parent_span_id"] is not None  # below the root, not the root itself
        parent["parent_span_id"] = retriever["span_id"]
        (record,) = read_mlflow(json.dumps(value).encode())
        assert "trace_incomplete" == record.unassessed

    def test_a_span_that_is_its_own_parent_is_incomplete(self, traces):
        """The chat model span names itself as its parent."""
        trace, _ = autolog_trace(traces, "Cheetahs reach 104 km/h [2].")
        value = json.loads(trace.to_json())
        (model,) = mlflow_spans(value, "CHAT_MODEL")
        model["parent_span_id"] = model["span_id"]
        (record,) = read_mlflow(json.dumps(value).encode())
        assert "trace_incomplete" == record.unassessed

    def test_two_spans_under_one_id_are_incomplete(self, traces):
        """The chat model span given the retriever's id: which one the id names is not known."""
        trace, _ = autolog_trace(traces, "Cheetahs reach 104 km/h [2].")
        value = json.loads(trace.to_json())
        (retriever,) = mlflow_spans(value, "RETRIEVER")
        (model,) = mlflow_spans(value, "CHAT_MODEL")
        model["span_id"] = retriever["span_id"]
        (record,) = read_mlflow(json.dumps(value).encode())
        assert "trace_incomplete" == record.unassessed

    def test_the_untouched_trace_reads_whole(self, traces):
        """The same trace as MLflow wrote it: one tree, an assessed row."""
        trace, _ = autolog_trace(traces, "Cheetahs reach 104 km/h [2].")
        (record,) = read_mlflow(trace.to_json().encode())
        assert (None, None) == (record.unassessed, record.malformed)


# --- The cycle test itself -----------------------------------------------------------


class TestHasCycle:
    @pytest.mark.parametrize(
        ("parents", "cycle"),
        [
            ({}, False),
            ({"r": None}, False),
            ({"r": None, "a": "r", "b": "a", "c": "a"}, False),
            ({"a": "lost", "b": "a"}, False),  # a lost parent ends the chain
            ({"a": "a"}, True),
            ({"r": None, "a": "b", "b": "a"}, True),
            ({"r": None, "x": "a", "a": "b", "b": "c", "c": "a"}, True),  # a tail into a cycle
        ],
    )
    def test_cycles_are_found_and_trees_are_not_cycles(self, parents, cycle):
        """Self-parents, two- and three-span cycles, a cycle reached from a tail."""
        assert cycle == has_cycle(parents)

    def test_a_long_chain_is_linear(self):
        """200,000 spans in one chain, visited from every span: settled spans are not walked again."""
        chain = {f"s{i}": (f"s{i - 1}" if i else None) for i in range(200_000)}
        reverse = dict(reversed(chain.items()))
        assert not has_cycle(reverse)
        reverse["s0"] = "s199999"
        assert has_cycle(reverse)
