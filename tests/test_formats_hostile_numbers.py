"""Hostile numbers in trace files (issue 38, item 1): one long number costs one row.

Python's ``int()`` refuses a decimal string of more than 4,300 digits with a
``ValueError``, and ``str.isdigit`` accepts ``"²"``, which ``int()`` refuses too. The
old readers handed both straight to ``int()``: a 5,000-digit ``[n]`` header in a
recorded prompt, an MLflow or OTLP end time, a ``droppedAttributesCount`` or an
``intValue`` made ``citemark check --from langsmith|mlflow|openinference`` exit 1 with
a traceback and publish nothing. Each file here is written by the tool's own SDK
(the harnesses of the readers' tests), the long number injected into one trace; the
real CLI must exit 0, check every other row as it checks them without the injection,
and report the bad trace as a malformed row with a structural reason (or, for a
prompt header, check it as a prompt whose numbering settles nothing).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

pytest.importorskip("langsmith")
pytest.importorskip("mlflow")
pytest.importorskip("openinference.instrumentation.langchain")

from fake_openai import run_cli
from langchain_core.runnables import RunnableLambda
from langchain_core.tracers import LangChainTracer

# The SDK harnesses of the readers' own tests: real LangSmith runs, MLflow traces and
# OpenInference spans, made offline.
from test_formats_langsmith import langsmith_client, posted_runs
from test_formats_mlflow import autolog_trace, jsonl, traces
from test_formats_mlflow import rag_chain as langchain_rag_chain
from test_formats_openinference import (
    FABRICATED,
    GOOD,
    QUESTION,
    langchain_tracing,
    otlp_hex,
    trace_hex,
)
from test_formats_openinference import rag_chain as openinference_chain

from citemark import MarkerOutOfRangeError, Source, resolve
from citemark._pipelines.readers._common import INT64, UINT64, bounded_int, prompt_index_base

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from langchain_core.documents import Document

__all__ = ["langchain_tracing", "langsmith_client", "traces"]  # fixtures, used by name

LONG = "9" * 5000
"""A number ``int()`` refuses (more than 4,300 digits)."""


def check(tmp_path: Path, name: str, data: bytes, reader: str) -> tuple[list[Any], list[Any]]:
    """``citemark check FILE --from READER``: rows.jsonl's records, and the malformed lines.

    The command must finish as a check does (0, or 1 for a failed row), with no
    traceback and nothing of the long number in what it prints.
    """
    path = tmp_path / f"{name}.json"
    path.write_bytes(data)
    out = tmp_path / name
    done = run_cli("check", str(path), "--from", reader, "--out", str(out))
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    assert LONG[:50] not in done.stdout + done.stderr
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    for row in rows:
        row.pop("run_id", None)
        if row["outcome"] == "malformed":
            assert LONG[:50] not in row["error"]
    report = json.loads((out / "report.json").read_bytes())
    return rows, report["check"]["malformed_lines"]


def headed(extra: str) -> Any:
    """A formatter numbering the documents ``[1]``... after one worked-example line ``extra``."""

    def render(docs: list[Document]) -> str:
        numbered = (f"[{n}] {d.page_content}" for n, d in enumerate(docs, start=1))
        return extra + "\n\n" + "\n\n".join(numbered)

    return RunnableLambda(render)


HEADERS = {"bracket": f"[{LONG}] An example.", "source": f"Source {LONG}: An example."}


class TestPromptHeaders:
    """A ``[n]`` or ``Source n:`` header of 5,000 digits in the recorded prompt."""

    def test_a_long_header_numbers_no_source(self):
        """The numbering it is part of settles nothing; a short header still does."""
        assert prompt_index_base(f"[{LONG}] x\n[0] a\n[1] b", 2) is None
        assert prompt_index_base(f"Source {LONG}: x\nSource 0: a\nSource 1: b", 2) is None
        assert 0 == prompt_index_base("[0] a\n[00001] b", 2)

    @pytest.mark.parametrize("header", HEADERS.values(), ids=HEADERS.keys())
    def test_langsmith_checks_the_row(self, langsmith_client, tmp_path, header):
        """``--from langsmith``: the run is checked as the same run without the long header."""
        client, parts = langsmith_client
        tracer = LangChainTracer(client=client, project_name="citemark-hostile")
        langchain_rag_chain("Fast [2].", headed(header)).invoke(
            QUESTION, config={"callbacks": [tracer]}
        )
        tracer.wait_for_futures()
        client.flush()
        hostile = posted_runs(parts)
        parts.clear()
        langchain_rag_chain("Fast [2].", headed("An example.")).invoke(
            QUESTION, config={"callbacks": [tracer]}
        )
        tracer.wait_for_futures()
        client.flush()
        control = posted_runs(parts)
        for runs in (hostile, control):
            runs.sort(key=lambda run: run["parent_run_id"] is not None)
        rows, malformed = check(tmp_path, "hostile", lines(hostile), "langsmith")
        expected, _ = check(tmp_path, "control", lines(control), "langsmith")
        assert [] == malformed
        assert [outcomes(r) for r in expected] == [outcomes(r) for r in rows]

    @pytest.mark.parametrize("header", HEADERS.values(), ids=HEADERS.keys())
    def test_mlflow_checks_the_row(self, traces, tmp_path, header):
        """``--from mlflow``: the trace is checked as the same trace without the long header."""
        hostile, _ = autolog_trace(traces, "Fast [2].", headed(header))
        control, _ = autolog_trace(traces, "Fast [2].", headed("An example."))
        rows, malformed = check(tmp_path, "hostile", jsonl(hostile), "mlflow")
        expected, _ = check(tmp_path, "control", jsonl(control), "mlflow")
        assert [] == malformed
        assert [outcomes(r) for r in expected] == [outcomes(r) for r in rows]


def lines(runs: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(run).encode() + b"\n" for run in runs)


def outcomes(row: dict[str, Any]) -> tuple[object, ...]:
    """What a check concluded about a row, without the ids and texts that differ by run."""
    details = row.get("details") or {}
    return (
        row["outcome"],
        row.get("reason"),
        details.get("deterministic_failures") if isinstance(details, dict) else None,
    )


MLFLOW_ENDS = {"long": LONG, "superscript": "²", "negative": -1, "past-uint64": 2**64}


class TestMlflowEndTimes:
    def test_a_bad_end_time_is_one_malformed_row(self, traces, tmp_path):
        """Each trace with a bad span end time is a malformed row at its line; the others are checked."""
        good, _ = autolog_trace(traces, "Fast [2].")
        data = [json.loads(good.to_json())]
        for end in MLFLOW_ENDS.values():
            trace, _ = autolog_trace(traces, "Fast [7].")
            value = json.loads(trace.to_json())
            value["data"]["spans"][1]["end_time_unix_nano"] = end
            data.append(value)
        data.append(json.loads(good.to_json()))
        text = b"".join(json.dumps(value).encode() + b"\n" for value in data)
        rows, malformed = check(tmp_path, "mlflow", text, "mlflow")
        reason = "span 2 end_time_unix_nano is not a time in nanoseconds (a uint64)"
        assert [{"line": n, "reason": reason} for n in (2, 3, 4, 5)] == malformed
        expected, _ = check(tmp_path, "control", jsonl(good), "mlflow")
        checked = [outcomes(r) for r in rows if r["outcome"] != "malformed"]
        assert [outcomes(r) for r in expected * 2] == checked
        assert [1, 2, 3, 4, 5, 6] == [r["line"] for r in rows]


OTLP_INJECTIONS: dict[str, Callable[[dict[str, Any]], None]] = {
    "end-time": lambda span: span.update(endTimeUnixNano=LONG),
    "dropped-attributes": lambda span: span.update(droppedAttributesCount=LONG),
    "int-value": lambda span: span["attributes"].append(
        {"key": "citemark.test", "value": {"intValue": LONG}}
    ),
    "int-value-past-int64": lambda span: span["attributes"].append(
        {"key": "citemark.test", "value": {"intValue": str(2**63)}}
    ),
}
OTLP_REASONS = {
    "end-time": "has an endTimeUnixNano that is not a uint64",
    "dropped-attributes": "has a droppedAttributesCount that is not a uint32",
    "int-value": "has an intValue attribute that is not an int64",
    "int-value-past-int64": "has an intValue attribute that is not an int64",
}


class TestOtlpNumbers:
    @pytest.mark.parametrize("field", OTLP_INJECTIONS, ids=OTLP_INJECTIONS.keys())
    def test_a_bad_number_costs_its_trace_only(self, langchain_tracing, tmp_path, field):
        """One OTLP request a trace; a long number in the second's root span.

        The first trace is checked as it is without the injection; the second is a
        malformed row that names the span and the field (and its trace, rootless, is
        reported incomplete); nothing of the number is quoted.
        """
        tracing = langchain_tracing()
        chain = openinference_chain([GOOD, FABRICATED])
        chain.invoke(QUESTION)
        chain.invoke("Which animal is fastest?")
        spans = tracing.spans()
        first = trace_hex(spans[0])
        one = [s for s in spans if trace_hex(s) == first]
        two = [s for s in spans if trace_hex(s) != first]
        request = json.loads(otlp_hex(two))
        found = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
        root = next(n for n, span in enumerate(found, start=1) if not span.get("parentSpanId"))
        OTLP_INJECTIONS[field](found[root - 1])
        text = otlp_hex(one) + json.dumps(request) + "\n"
        rows, malformed = check(tmp_path, "otlp", text.encode(), "openinference")
        expected, _ = check(tmp_path, "control", otlp_hex(one).encode(), "openinference")
        reason = f"span {root} of the OTLP request at line 2 {OTLP_REASONS[field]}"
        assert [reason] == [m["reason"] for m in malformed]
        assert expected == rows[:1]
        assert ["malformed", "unassessed"] == [r["outcome"] for r in rows[1:]]
        assert "trace_incomplete" == rows[2]["reason"]


def test_bounded_int_reads_64_bit_numbers_only():
    """The rule every reader's number goes through: ASCII decimal, inside its range."""
    assert 2**64 - 1 == bounded_int(str(2**64 - 1), UINT64)
    assert 2**64 - 1 == bounded_int("000" + str(2**64 - 1), UINT64)
    assert -(2**63) == bounded_int(str(-(2**63)), INT64)
    for bad in (LONG, "²", "١٢", "-1", str(2**64), 2**64, -1, True, 1.5, "", "-", "1e3"):
        assert bounded_int(bad, UINT64) is None, bad


def test_a_native_answer_citing_a_long_number(tmp_path):
    """``[`` + 5,000 digits + ``]`` in a native row's answer: out of range, checked, no crash.

    The old report page looked the label up through ``int()`` and ended ``check`` in a
    traceback after every row was checked; a zero-padded ``[000...01]`` resolves to
    source 1 and is shown as a citation of it.
    """
    long, padded = f"Cheetahs are fast [{LONG}].", f"Cheetahs are fast [{'0' * 5000}1]."
    source = Source(text="Cheetahs are fast.", doc_id="c")
    with pytest.raises(MarkerOutOfRangeError) as raised:  # the typed error, bounded
        resolve(long, [source])
    assert LONG[:50] not in str(raised.value)
    assert ["c"] == [c.doc_id for c in resolve(padded, [source]).citations]
    path = tmp_path / "rows.jsonl"
    path.write_text(
        "".join(
            json.dumps({"question": QUESTION, "answer": answer, "sources": [source.model_dump()]})
            + "\n"
            for answer in (long, padded)
        ),
        encoding="utf-8",
    )
    done = run_cli("check", str(path), "--out", str(tmp_path / "out"))
    assert 0 == done.returncode, done.stderr
    assert "Traceback" not in done.stderr
    rows = [json.loads(x) for x in (tmp_path / "out" / "rows.jsonl").read_text().splitlines()]
    assert ["failed", "unassessed"] == [r["outcome"] for r in rows]
    assert [["fabricated_citation"], []] == [r["details"]["deterministic_failures"] for r in rows]
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert LONG in page  # the page shows the row, marker and all
