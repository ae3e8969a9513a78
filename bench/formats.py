"""Benchmark for the ``citemark check --from`` readers (issue #22): rows/s and peak RSS.

For each recorded format (``ragas``, ``deepeval`` JSON, ``openinference`` OTLP JSON,
``mlflow``, ``langsmith``, ``map``) the bench writes the same synthetic rows twice:
in that format's shape as ``reference/recorded-formats.md`` describes it, and in
citemark's own JSONL. Each row has a realistic answer (about 1.5 KB of sentences
with ``[n]`` markers; one row in eight cites a source that is not there) and 3 to 5
sources of a few hundred characters. It then prints, per format:

1. **read**: rows/s of the reader plus the row parser (``reader(handle, options)``
   then ``parse_recorded``), against reading the native file with ``parse_row``, the
   honest floor, timed in the same process, interleaved, best of ``--repeats``.
   Target: ratio <= 1.5. Reading alone isolates the reader: scoring dominates a full
   check.
2. **check**: rows/s of the real ``citemark check FILE --from FORMAT`` (``--map ...``
   for ``map``) against ``citemark check`` on the native file, each a subprocess,
   interleaved, best of ``--check-repeats``.

Every reader is told ``index_base=1`` and every check is given ``--index-base 1``
(the synthetic rows number their sources from 1).
3. **memory**: peak RSS (``VmHWM`` of a fresh subprocess that reads and parses every
   row of a file) over ``--memory-rows`` rows, for the native reader and each
   format. Target: the larger at most 1.5x the smaller. These files use small rows
   (an answer of about 100 characters, 3 short sources): what is measured is whether
   memory grows with the number of rows, not with their size. The default is 10,000
   against 100,000 rows: a million rows is 3.6 GB of OTLP JSON, and writing and
   reading it would take about 15 minutes for ``openinference`` alone on two loaded
   cores (extrapolated from 100,000 rows); ``--memory-rows 10000 1000000 --formats
   map`` takes about 5 minutes.

The defaults (5,000 rows read, 1,000 rows checked, memory over 10,000 and 100,000
rows) take about 6 minutes on two cores shared with other work.

A format whose reader is not importable yet is reported as "not available" and the
others still run; so is a check when the command does not take ``--from`` yet.
Every figure says how many rows the reader gave and how many were malformed or
un-assessed, so a reader that reads the synthetic shape differently is visible.

Run: ``.venv/bin/python bench/formats.py`` (``--rows 20000``, ``--check-rows 5000``,
``--memory-rows 10000 1000000``, ``--formats ragas map``, ``--no-check``, ``--no-memory``).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

TARGET_RATIO = 1.5
FORMATS = ("ragas", "deepeval", "openinference", "mlflow", "langsmith", "map")
MAP_OPTIONS = {
    "id": "/run_id",
    "question": "/input/question",
    "answer": "/output/text",
    "sources": "/retrieved",
    "source.text": "/page_content",
    "source.doc_id": "/metadata/doc_id",
    "source.chunk_id": "/metadata/chunk_id",
    "source.uri": "/metadata/source",
}
PROSE = (
    "the cheetah lion zebra savannah runs hunts lives in prides at night fastest land "
    "animal speed of about kilometres per hour over short distances and rests in shade "
    "while the herd grazes near water during the dry season of the year"
)
WORDS = tuple(PROSE.split())


# ---------------------------------------------------------------- the logical rows


def _text(rng: random.Random, size: int) -> str:
    words: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(WORDS)
        words.append(word)
        length += len(word) + 1
    return " ".join(words)


def logical_row(i: int, rng: random.Random, *, small: bool) -> dict[str, object]:
    """Row ``i``: id, question, answer with markers, and 3-5 sources (dicts)."""
    count = 3 if small else rng.randint(3, 5)
    sources = [
        {
            "text": _text(rng, 40 if small else rng.randint(250, 450)) + f" (record {i}.{k})",
            "doc_id": f"doc-{(i + k) % 997}",
            "chunk_id": f"doc-{(i + k) % 997}#{k}",
            "uri": f"https://example.org/doc-{(i + k) % 997}",
        }
        for k in range(1, count + 1)
    ]
    fabricated = rng.random() < 0.125
    sentences = []
    size = 100 if small else rng.randint(1000, 2000)
    length = 0
    while length < size:
        marker = rng.randint(1, count)
        sentence = f"{_text(rng, rng.randint(60, 160)).capitalize()} [{marker}]."
        sentences.append(sentence)
        length += len(sentence) + 1
    if fabricated:
        sentences[-1] = sentences[-1][:-4] + f"[{count + 4}]."
    return {
        "id": f"row-{i}",
        "question": f"Question {i}: {_text(rng, 40)}?",
        "answer": " ".join(sentences),
        "sources": sources,
    }


def native(row: dict[str, object]) -> str:
    return json.dumps(row)


def _sources(row: dict[str, object]) -> list[dict[str, str]]:
    sources = row["sources"]
    if not isinstance(sources, list):
        raise TypeError
    return sources


def _lc_document(source: dict[str, str]) -> dict[str, object]:
    """A LangChain ``Document.model_dump()``."""
    return {
        "id": source["chunk_id"],
        "metadata": {
            "source": source["uri"],
            "doc_id": source["doc_id"],
            "chunk_id": source["chunk_id"],
        },
        "page_content": source["text"],
        "type": "Document",
    }


def _prompt(row: dict[str, object]) -> str:
    numbered = "\n".join(f"[{n}] {s['text']}" for n, s in enumerate(_sources(row), start=1))
    return f"Answer from the sources and cite them as [n].\n\nSources:\n{numbered}"


# ---------------------------------------------------------------- the formats


def ragas(row: dict[str, object]) -> str:
    """``EvaluationDataset.to_jsonl``: one sample per line."""
    sources = _sources(row)
    return json.dumps(
        {
            "user_input": row["question"],
            "retrieved_contexts": [s["text"] for s in sources],
            "retrieved_context_ids": [s["chunk_id"] for s in sources],
            "response": row["answer"],
        }
    )


def deepeval(row: dict[str, object]) -> str:
    """One test case of a ``save_as("json")`` array (the array is written around them)."""
    return json.dumps(
        {
            "input": row["question"],
            "actual_output": row["answer"],
            "expected_output": None,
            "retrieval_context": [s["text"] for s in _sources(row)],
            "context": None,
            "name": row["id"],
            "comments": None,
            "source_file": None,
            "tools_called": None,
            "expected_tools": None,
            "token_cost": None,
            "input_token_count": None,
            "output_token_count": None,
            "additional_metadata": None,
            "custom_column_key_values": None,
            "expectations": None,
        }
    )


def _otlp_attr(key: str, value: str) -> dict[str, object]:
    return {"key": key, "value": {"stringValue": value}}


def _otlp_span(  # noqa: PLR0913, PLR0917 - one span's fields
    trace: str, span: str, parent: str | None, name: str, start: int, attributes: list[object]
) -> dict[str, object]:
    value: dict[str, object] = {
        "traceId": trace,
        "spanId": span,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(start + 1000),
        "attributes": attributes,
        "status": {"code": 1},
        "flags": 256,
    }
    if parent is not None:
        value["parentSpanId"] = parent
    return value


def openinference(row: dict[str, object], i: int) -> str:
    """One OTLP/JSON ``ExportTraceServiceRequest`` per line (hex ids, integer enums),
    holding a LangChain-instrumented trace: root chain, retriever, chat model."""
    trace = f"{i + 1:032x}"
    root, retriever, llm = (f"{i * 4 + k:016x}" for k in (1, 2, 3))
    t0 = 1_700_000_000_000_000_000 + i * 10_000
    question, answer = str(row["question"]), str(row["answer"])
    docs: list[object] = []
    for n, source in enumerate(_sources(row)):
        metadata = json.dumps(
            {"source": source["uri"], "doc_id": source["doc_id"], "chunk_id": source["chunk_id"]}
        )
        docs += [
            _otlp_attr(f"retrieval.documents.{n}.document.content", source["text"]),
            _otlp_attr(f"retrieval.documents.{n}.document.metadata", metadata),
        ]
    spans = [
        _otlp_span(
            trace,
            retriever,
            root,
            "VectorStoreRetriever",
            t0 + 1,
            [
                _otlp_attr("openinference.span.kind", "RETRIEVER"),
                _otlp_attr("input.value", question),
                *docs,
            ],
        ),
        _otlp_span(
            trace,
            llm,
            root,
            "FakeListChatModel",
            t0 + 2,
            [
                _otlp_attr("openinference.span.kind", "LLM"),
                _otlp_attr("llm.input_messages.0.message.role", "system"),
                _otlp_attr("llm.input_messages.0.message.content", _prompt(row)),
                _otlp_attr("llm.input_messages.1.message.role", "user"),
                _otlp_attr("llm.input_messages.1.message.content", question),
                _otlp_attr("llm.output_messages.0.message.role", "assistant"),
                _otlp_attr("llm.output_messages.0.message.content", answer),
            ],
        ),
        _otlp_span(
            trace,
            root,
            None,
            "rag_chain",
            t0,
            [
                _otlp_attr("openinference.span.kind", "CHAIN"),
                _otlp_attr("input.value", question),
                _otlp_attr("output.value", answer),
            ],
        ),
    ]
    scope = {"name": "openinference.instrumentation.langchain", "version": "0.1.80"}
    resource = {"attributes": [_otlp_attr("service.name", "rag")]}
    return json.dumps(
        {
            "resourceSpans": [
                {"resource": resource, "scopeSpans": [{"scope": scope, "spans": spans}]}
            ]
        }
    )


def _b64(number: int, size: int) -> str:
    return base64.b64encode(number.to_bytes(size, "big")).decode()


def mlflow(row: dict[str, object], i: int) -> str:
    """One ``Trace.to_json()`` per line: root chain, retriever, chat model spans, every
    attribute value JSON text."""
    trace = _b64(i + 1, 16)
    root, retriever, llm = (_b64(i * 4 + k, 8) for k in (1, 2, 3))
    t0 = 1_700_000_000_000_000_000 + i * 10_000
    question, answer = row["question"], row["answer"]
    documents = [
        {
            "page_content": s["text"],
            "metadata": {"source": s["uri"], "doc_id": s["doc_id"], "chunk_id": s["chunk_id"]},
            "id": s["chunk_id"],
        }
        for s in _sources(row)
    ]
    messages = [
        {"role": "system", "content": _prompt(row)},
        {"role": "user", "content": question},
    ]

    def span(sid: str, parent: str | None, name: str, start: int, **attrs: object) -> object:
        return {
            "trace_id": trace,
            "span_id": sid,
            "parent_span_id": parent,
            "name": name,
            "start_time_unix_nano": start,
            "end_time_unix_nano": start + 1000,
            "events": [],
            "links": [],
            "status": {"code": "STATUS_CODE_OK", "message": ""},
            "attributes": {key: json.dumps(value) for key, value in attrs.items()},
        }

    spans = [
        span(
            root,
            None,
            "rag_chain",
            t0,
            **{
                "mlflow.spanType": "CHAIN",
                "mlflow.spanInputs": question,
                "mlflow.spanOutputs": answer,
            },
        ),
        span(
            retriever,
            root,
            "VectorStoreRetriever",
            t0 + 1,
            **{
                "mlflow.spanType": "RETRIEVER",
                "mlflow.spanInputs": question,
                "mlflow.spanOutputs": documents,
            },
        ),
        span(
            llm,
            root,
            "FakeListChatModel",
            t0 + 2,
            **{
                "mlflow.spanType": "CHAT_MODEL",
                "mlflow.spanInputs": {"messages": messages},
                "mlflow.spanOutputs": {
                    "choices": [{"message": {"role": "assistant", "content": answer}}]
                },
                "mlflow.message.format": "langchain",
            },
        ),
    ]
    info = {
        "trace_id": f"tr-{i + 1:032x}",
        "trace_location": {
            "type": "MLFLOW_EXPERIMENT",
            "mlflow_experiment": {"experiment_id": "1"},
        },
        "request_time": "2026-01-01T00:00:00Z",
        "execution_duration_ms": 3,
        "state": "OK",
        "tags": {"mlflow.traceName": "rag_chain"},
        "trace_metadata": {"mlflow.trace_schema.version": "3"},
    }
    return json.dumps({"info": info, "data": {"spans": spans}})


def langsmith(row: dict[str, object], i: int) -> str:
    """The runs of one trace, one ``Run`` dict per line in ``dotted_order`` (tree) order:
    root chain, retriever, llm."""
    ids = [f"0190{i:08x}-0000-7000-8000-{k:012x}" for k in (1, 2, 3)]
    stamp = "20260101T000000000000Z"
    root = f"{stamp}{ids[0]}"
    question, answer = row["question"], row["answer"]
    documents = [_lc_document(s) for s in _sources(row)]
    system = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "SystemMessage"],
        "kwargs": {"content": _prompt(row), "type": "system"},
    }
    human = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "HumanMessage"],
        "kwargs": {"content": question, "type": "human"},
    }
    common = {
        "trace_id": ids[0],
        "start_time": "2026-01-01T00:00:00+00:00",
        "end_time": "2026-01-01T00:00:01+00:00",
        "tags": [],
        "session_name": "bench",
    }
    runs = [
        {
            "id": ids[0],
            "name": "rag_chain",
            "run_type": "chain",
            "dotted_order": root,
            "inputs": {"input": question},
            "outputs": {"context": documents, "question": question, "answer": answer},
            **common,
        },
        {
            "id": ids[1],
            "name": "VectorStoreRetriever",
            "run_type": "retriever",
            "parent_run_id": ids[0],
            "dotted_order": f"{root}.{stamp}{ids[1]}",
            "inputs": {"query": question},
            "outputs": {"documents": documents},
            **common,
        },
        {
            "id": ids[2],
            "name": "FakeListChatModel",
            "run_type": "llm",
            "parent_run_id": ids[0],
            "dotted_order": f"{root}.{stamp}{ids[2]}",
            "inputs": {"messages": [[system, human]]},
            "outputs": {
                "generations": [[{"text": answer, "type": "ChatGeneration"}]],
                "llm_output": None,
                "type": "LLMResult",
            },
            **common,
        },
    ]
    return "\n".join(json.dumps(run) for run in runs)


def mapped(row: dict[str, object]) -> str:
    """A LangChain chain's results as an app logs them, read with `MAP_OPTIONS`."""
    return json.dumps(
        {
            "run_id": row["id"],
            "input": {"question": row["question"]},
            "output": {"text": row["answer"]},
            "retrieved": [_lc_document(s) for s in _sources(row)],
        }
    )


WRITERS: dict[str, Callable[[dict[str, object], int], str]] = {
    "native": lambda row, _: native(row),
    "ragas": lambda row, _: ragas(row),
    "deepeval": lambda row, _: deepeval(row),
    "openinference": openinference,
    "mlflow": mlflow,
    "langsmith": langsmith,
    "map": lambda row, _: mapped(row),
}


POOL = 256


def generate(path: Path, name: str, rows: int, *, small: bool, seed: int = 7) -> None:
    """Write ``rows`` rows in format ``name`` to ``path``, streaming.

    Small rows (the memory figures) repeat `POOL` drawn rows under fresh ids, which
    halves the time it takes to write a million of them.
    """
    rng = random.Random(seed)
    write = WRITERS[name]
    pool = [logical_row(i, rng, small=True) for i in range(POOL)] if small else []
    with path.open("w", encoding="utf-8") as out:
        if name == "deepeval":
            out.write("[\n")
        for i in range(rows):
            row = (
                {**pool[i % POOL], "id": f"row-{i}"} if small else logical_row(i, rng, small=False)
            )
            line = write(row, i)
            if name == "deepeval":
                out.write(("    " if i == 0 else ",\n    ") + line)
            else:
                out.write(line + "\n")
        if name == "deepeval":
            out.write("\n]\n")


# ---------------------------------------------------------------- reading


def reader_or_none(name: str) -> Callable[..., Iterator[object]] | None:
    """The format's reader, or None when its module cannot be imported yet."""
    from citemark._pipelines.readers import reader_for  # noqa: PLC0415 - the bench imports lazily

    try:
        return reader_for(name)  # type: ignore[return-value]
    except Exception:  # noqa: BLE001 - any import failure means "not available"
        return None


def options_for(name: str) -> object:
    from citemark._pipelines.readers import ReadOptions  # noqa: PLC0415

    return ReadOptions(index_base=1, mapping=MAP_OPTIONS if name == "map" else None)


def read_native(path: Path) -> dict[str, int]:
    from citemark._pipelines.eval_report import MalformedLine  # noqa: PLC0415
    from citemark._pipelines.readers.citemark_rows import parse_row  # noqa: PLC0415

    counts = {"rows": 0, "malformed": 0, "unassessed": 0}
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            parsed = parse_row(number, raw)
            if parsed is None:
                continue
            counts["rows"] += 1
            counts["malformed"] += isinstance(parsed, MalformedLine)
    return counts


def read_format(name: str, path: Path) -> dict[str, int]:
    from citemark._pipelines.eval_report import MalformedLine  # noqa: PLC0415
    from citemark._pipelines.readers.citemark_rows import parse_recorded  # noqa: PLC0415

    reader = reader_or_none(name)
    if reader is None:
        raise LookupError(name)
    counts = {"rows": 0, "malformed": 0, "unassessed": 0}
    with path.open("rb") as handle:
        for record in reader(handle, options_for(name)):
            parsed = parse_recorded(record)  # type: ignore[arg-type]
            counts["rows"] += 1
            if isinstance(parsed, MalformedLine):
                counts["malformed"] += 1
            elif parsed.unassessed is not None:
                counts["unassessed"] += 1
    return counts


def read_any(name: str, path: Path) -> dict[str, int]:
    return read_native(path) if name == "native" else read_format(name, path)


def _counts(counts: dict[str, int]) -> str:
    return (
        f"{counts['rows']:,} rows, {counts['malformed']:,} malformed, "
        f"{counts['unassessed']:,} un-assessed"
    )


def bench_read(names: list[str], files: dict[str, Path], rows: int, repeats: int) -> None:
    print(f"\n== read: reader + row parser vs parse_row on the native file ({rows:,} rows)")
    for name in names:
        if reader_or_none(name) is None:
            print(f"{name:13}: not available (its reader is not importable yet)")
            continue
        try:
            counts = read_format(name, files[name])
        except Exception as exc:  # noqa: BLE001 - a reader that fails is reported, not fatal
            print(f"{name:13}: the reader failed: {type(exc).__name__}")
            continue
        best = {"native": float("inf"), name: float("inf")}
        for _ in range(repeats):
            for which in ("native", name):
                start = time.perf_counter()
                read_any(which, files[which])
                best[which] = min(best[which], time.perf_counter() - start)
        ratio = best[name] / best["native"]
        verdict = "within" if ratio <= TARGET_RATIO else "OVER"
        print(
            f"{name:13}: {rows / best[name]:9,.0f} rows/s; native {rows / best['native']:9,.0f} "
            f"rows/s; ratio {ratio:5.2f} ({verdict} {TARGET_RATIO}x) [{_counts(counts)}]",
            flush=True,
        )


# ---------------------------------------------------------------- the whole check


def check_command(name: str, path: Path, out: Path) -> list[str]:
    command = [sys.executable, "-m", "citemark", "check", str(path), "--out", str(out)]
    command += ["--json", "--quiet", "--index-base", "1"]
    if name == "map":
        command += [f"--map={field}={pointer}" for field, pointer in MAP_OPTIONS.items()]
    elif name != "native":
        command += ["--from", name]
    return command


def run_check(name: str, path: Path, out: Path) -> tuple[float, dict[str, object] | str]:
    start = time.perf_counter()
    done = subprocess.run(check_command(name, path, out), capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        line = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        return elapsed, f"exit {done.returncode}: {line[0][:160]}"
    summary: dict[str, object] = json.loads(done.stdout)["check"]
    return elapsed, summary


def bench_check(
    names: list[str], files: dict[str, Path], root: Path, rows: int, repeats: int
) -> None:
    print(
        f"\n== check: citemark check --from FORMAT vs citemark check on the native file ({rows:,} rows)"
    )
    native_best = float("inf")
    for name in names:
        if reader_or_none(name) is None:
            print(f"{name:13}: not available (its reader is not importable yet)")
            continue
        best = float("inf")
        summary: dict[str, object] | str = ""
        for _ in range(repeats):
            elapsed, native_summary = run_check("native", files["native"], root / "out-native")
            if isinstance(native_summary, str):
                print(f"native check failed: {native_summary}")
                return
            native_best = min(native_best, elapsed)
            elapsed, summary = run_check(name, files[name], root / f"out-{name}")
            if isinstance(summary, str):
                break
            best = min(best, elapsed)
        if isinstance(summary, str):
            print(f"{name:13}: not available ({summary})")
            continue
        ratio = best / native_best
        verdict = "within" if ratio <= TARGET_RATIO else "OVER"
        print(
            f"{name:13}: {rows / best:9,.0f} rows/s; native {rows / native_best:9,.0f} rows/s; "
            f"ratio {ratio:5.2f} ({verdict} {TARGET_RATIO}x) [passed {summary['passed']}, "
            f"failed {summary['failed']}, un-assessed {summary['unassessed']}, "
            f"malformed {summary['malformed']}]",
            flush=True,
        )


# ---------------------------------------------------------------- memory


def peak_rss(name: str, path: Path) -> tuple[int, float, dict[str, int]] | str:
    """Read ``path`` in a fresh subprocess; its VmHWM in bytes, the wall time, the counts."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, __file__, "--child", name, str(path)], capture_output=True, check=False
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        line = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        return f"exit {done.returncode}: {line[0][:160]}"
    result = json.loads(done.stdout)
    return result["vmhwm_kb"] * 1024, elapsed, result["counts"]


def child(name: str, path: Path) -> int:
    """The subprocess of `peak_rss`: read every row, print the counts and VmHWM."""
    counts = read_any(name, path)
    status = Path("/proc/self/status").read_text(encoding="ascii")
    (line,) = (x for x in status.splitlines() if x.startswith("VmHWM:"))
    print(json.dumps({"counts": counts, "vmhwm_kb": int(line.split()[1])}))
    return 0


def bench_memory(names: list[str], root: Path, sizes: list[int]) -> None:
    small, large = min(sizes), max(sizes)
    print(f"\n== memory: peak RSS reading {small:,} vs {large:,} small rows, a fresh process each")
    for name in ["native", *names]:
        if name != "native" and reader_or_none(name) is None:
            print(f"{name:13}: not available (its reader is not importable yet)")
            continue
        peaks: dict[int, int] = {}
        figures = []
        for rows in (small, large):
            path = root / f"memory-{name}-{rows}.{'json' if name == 'deepeval' else 'jsonl'}"
            start = time.perf_counter()
            generate(path, name, rows, small=True)
            written = time.perf_counter() - start
            size = path.stat().st_size
            result = peak_rss(name, path)
            path.unlink()
            if isinstance(result, str):
                figures.append(f"{rows:,} rows: failed ({result})")
                break
            peak, elapsed, counts = result
            peaks[rows] = peak
            figures.append(
                f"{rows:,} rows ({size / 1e6:,.0f} MB, written in {written:.0f} s, read in "
                f"{elapsed:.0f} s): {peak / 2**20:6.1f} MiB [{_counts(counts)}]"
            )
        verdict = ""
        if len(peaks) == 2:
            ratio = peaks[large] / peaks[small]
            word = "within" if ratio <= TARGET_RATIO else "OVER"
            verdict = f"; ratio {ratio:.2f} ({word} {TARGET_RATIO}x)"
        print(f"{name:13}: " + "; ".join(figures) + verdict, flush=True)


# ---------------------------------------------------------------- main


def write_files(root: Path, kind: str, names: list[str], rows: int) -> dict[str, Path]:
    print(f"\ngenerating {rows:,} rows in each format for the {kind} figures", flush=True)
    files = {}
    for name in names:
        files[name] = root / f"{kind}-{name}.{'json' if name == 'deepeval' else 'jsonl'}"
        generate(files[name], name, rows, small=False)
    return files


def remove(files: dict[str, Path]) -> None:
    for path in files.values():
        path.unlink()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=int, default=5_000, help="rows for the read figures")
    parser.add_argument("--check-rows", type=int, default=1_000, help="rows for the check figures")
    parser.add_argument("--repeats", type=int, default=3, help="best of, for the read figures")
    parser.add_argument("--check-repeats", type=int, default=1, help="best of, for the check")
    parser.add_argument("--memory-rows", type=int, nargs=2, default=[10_000, 100_000])
    parser.add_argument("--formats", nargs="+", choices=FORMATS, default=list(FORMATS))
    parser.add_argument("--no-check", action="store_true", help="skip the whole-check figures")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak RSS figures")
    parser.add_argument("--child", nargs=2, metavar=("FORMAT", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child[0], Path(args.child[1]))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="citemark-bench-formats-") as folder:
        root = Path(folder)
        files = write_files(root, "read", ["native", *args.formats], args.rows)
        size = files["native"].stat().st_size
        print(f"native file: {size / 1e6:.1f} MB, {size / args.rows / 1e3:.1f} KB a row")
        bench_read(args.formats, files, args.rows, args.repeats)
        remove(files)
        if not args.no_check:
            files = write_files(root, "check", ["native", *args.formats], args.check_rows)
            bench_check(args.formats, files, root, args.check_rows, args.check_repeats)
            remove(files)
        if not args.no_memory:
            bench_memory(args.formats, root, args.memory_rows)
    print(f"\nwhole run: {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
