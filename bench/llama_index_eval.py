"""Benchmark: CitationEvaluator under LlamaIndex's BatchEvalRunner vs citemark's score_many.

Issue 7. The same 200 rows (an answer citing [1] and [2] of three sources, and a
question) are graded twice against one OpenAI-compatible server on 127.0.0.1 with a
fixed 50 ms latency, both at concurrency 32, both through ``citemark.OpenAIChat``
and the same ``CitationScorer`` judge prompt:

- ``BatchEvalRunner({"citations": CitationEvaluator(judge=chat)}, workers=32)``,
  ``aevaluate_responses`` over LlamaIndex ``Response`` objects whose source nodes were
  numbered by ``number_nodes`` (the adapter's node path, conversion included), and
  once more through ``aevaluate_response_strs`` with the sources as plain contexts;
- ``CitationScorer(chat).score_many(rows, concurrency=32)``.

Both figures and their ratio are printed, measured in the same run; each client runs
``--repeat`` times, interleaved, and its best and median runs are reported (throughput
only ever loses to noise on a shared machine). Every row must come back graded (band 3,
passing), so a fast failure cannot pass for throughput.

The server is a minimal asyncio HTTP/1.1 server in its own process, so it shares
neither the client's event loop nor its core.

Run: ``.venv/bin/python bench/llama_index_eval.py [--repeat N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import time
import warnings

from llama_index.core.base.response.schema import Response
from llama_index.core.evaluation import BatchEvalRunner
from llama_index.core.schema import NodeWithScore, TextNode
from scorer import CONCURRENCY, LATENCY, ROWS, SCORER_REPLY, serve

from citemark import CitationScorer, OpenAIChat, ScoreRow, Source
from llama_index.evaluation.citemark import CitationEvaluator
from llama_index.postprocessor.citemark import number_nodes

# llama-index-core 0.14.25's BatchEvalRunner warns about its own deprecated helper.
warnings.filterwarnings("ignore", message="asyncio_module", category=DeprecationWarning)

TEXTS = [
    "The late fee is 5% of the unpaid balance.",
    "Members of the credit union pay no late fee.",
    "Notices are sent by mail within ten days.",
]
QUESTION = "What is the late fee?"
RESPONSE = "The late fee is 5% of the unpaid balance [1]. Members pay none [2]."
# The loopback server, its reply and the run's sizes are bench/scorer.py's, so the
# two benchmarks measure against the same thing.
REPLY = SCORER_REPLY


def sources() -> list[Source]:
    return [Source(text=text, doc_id=f"fees-{k}") for k, text in enumerate(TEXTS, start=1)]


def responses() -> list[Response]:
    """One LlamaIndex Response per row, its source nodes numbered as the postprocessor does."""
    rows = []
    for row in range(ROWS):
        nodes = [
            NodeWithScore(node=TextNode(id_=f"row{row}-{k}", text=text), score=1.0)
            for k, text in enumerate(TEXTS, start=1)
        ]
        rows.append(Response(RESPONSE, source_nodes=number_nodes(nodes)))
    return rows


async def run_batch_eval_runner(base_url: str, *, strings: bool = False) -> float:
    rows = responses()
    async with OpenAIChat(base_url, "bench-judge") as chat:
        runner = BatchEvalRunner({"citations": CitationEvaluator(judge=chat)}, workers=CONCURRENCY)
        start = time.perf_counter()
        if strings:
            results = await runner.aevaluate_response_strs(
                queries=[QUESTION] * ROWS,
                response_strs=[RESPONSE] * ROWS,
                contexts_list=[list(TEXTS)] * ROWS,
            )
        else:
            results = await runner.aevaluate_responses(queries=[QUESTION] * ROWS, responses=rows)
        elapsed = time.perf_counter() - start
    graded = results["citations"]
    if len(graded) != ROWS or not all(
        r.passing and not r.invalid_result and r.findings.raw_score == 3 for r in graded
    ):
        raise RuntimeError({r.invalid_reason for r in graded})
    return ROWS / elapsed


async def run_score_many(base_url: str) -> float:
    rows = [ScoreRow(RESPONSE, sources(), QUESTION) for _ in range(ROWS)]
    async with OpenAIChat(base_url, "bench-judge") as chat:
        scorer = CitationScorer(chat)
        start = time.perf_counter()
        results = await scorer.score_many(rows, concurrency=CONCURRENCY)
        elapsed = time.perf_counter() - start
    if len(results) != ROWS or not all(r.passed and r.judge_band == 3 for r in results):
        raise RuntimeError({r.reason for r in results})
    return ROWS / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per client, interleaved")
    args = parser.parse_args()
    print(
        f"{ROWS} rows, concurrency {CONCURRENCY}, loopback server with "
        f"{LATENCY * 1000:.0f} ms latency ({args.repeat} interleaved runs each)"
    )
    context = multiprocessing.get_context("spawn")
    ports = context.Queue()
    server = context.Process(target=serve, args=(ports, LATENCY), daemon=True)
    server.start()
    names = ("BatchEvalRunner", "BatchEvalRunner strs", "score_many")
    figures: dict[str, list[float]] = {name: [] for name in names}
    try:
        base_url = f"http://127.0.0.1:{ports.get(timeout=30)}/v1"
        for _ in range(args.repeat):
            figures["BatchEvalRunner"].append(asyncio.run(run_batch_eval_runner(base_url)))
            figures["score_many"].append(asyncio.run(run_score_many(base_url)))
            figures["BatchEvalRunner strs"].append(
                asyncio.run(run_batch_eval_runner(base_url, strings=True))
            )
    finally:
        server.kill()
        server.join()
    best = {name: max(values) for name, values in figures.items()}
    median = {name: statistics.median(values) for name, values in figures.items()}
    labels = {
        "BatchEvalRunner": "BatchEvalRunner(workers=32) + CitationEvaluator, aevaluate_responses",
        "BatchEvalRunner strs": "BatchEvalRunner(workers=32) + CitationEvaluator, aevaluate_response_strs",
        "score_many": "CitationScorer.score_many(concurrency=32)",
    }
    for name in names:
        shown = ", ".join(f"{v:.0f}" for v in figures[name])
        print(f"{labels[name]}")
        print(f"    best {best[name]:6.1f}  median {median[name]:6.1f} rows/s  (runs: {shown})")
    for label, figure in (("best", best), ("median", median)):
        ratio = figure["BatchEvalRunner"] / figure["score_many"]
        strs = figure["BatchEvalRunner strs"] / figure["score_many"]
        print(
            f"{label:<6} BatchEvalRunner / score_many = {ratio:.2f}x "
            f"(response_strs path: {strs:.2f}x)"
        )
    print(
        f"(latency alone caps any client at {CONCURRENCY / LATENCY:.0f} rows/s: "
        f"{CONCURRENCY} in flight x {LATENCY * 1000:.0f} ms)"
    )


if __name__ == "__main__":
    main()
