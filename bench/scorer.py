"""Benchmarks for the citation scorer (SPEC §3.9 and §7, issue 4).

Printed as times and ratios measured in the same run, never as timed tests:

1. Hostile inputs. 1 MB runs of backticks, tildes, "[" and "[doc-", scored as the
   response (with and without a judge, so the occurrence tagging runs too), as the
   context, and against a list of Source. Target: each under 1 s, and a 2 MB input
   at most 2.3x the 1 MB one. (The scorer the review log describes took 25 s on 8 KB
   of backticks, cubic in the run length.)
2. Judge concurrency. 200 rows against an OpenAI-compatible server on 127.0.0.1 with
   a fixed 50 ms latency, at concurrency 32:
   - ``CitationScorer.score_many`` with ``citemark.OpenAIChat``;
   - a bare ``httpx.AsyncClient`` behind ``asyncio.Semaphore(32)`` making the same
     200 requests (the ceiling httpx allows on this machine);
   - a raw HTTP/1.1 client on asyncio streams, 32 keep-alive connections and no
     library (the floor beneath any client);
   - LlamaIndex's ``BatchEvalRunner(workers=32)`` with ``FaithfulnessEvaluator``,
     its LLM a small ``CustomLLM`` posting to the same server with httpx.
   Targets (issue 25): score_many >= 1.0x bare httpx and >= 0.9x the raw client,
   with OpenAIChat's deadline and reply-size cap on; and >= 4x BatchEvalRunner.

The server is a minimal asyncio HTTP/1.1 server in its own process, so it does not
share the client's event loop or core: a ThreadingHTTPServer tops out below the
640 requests/s that 32 connections x 50 ms allow.

Run: ``.venv/bin/python bench/scorer.py`` (``--probes`` or ``--concurrency`` for one
half; ``--repeat N``, default 5, runs each concurrency measurement N times, interleaved,
and reports each client's best and median run; ``--no-llama-index`` leaves LlamaIndex
out).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import statistics
import time
from typing import Any

import httpx

from citemark import CitationScorer, OpenAIChat, ScoreRow, Source
from citemark.testing import ScriptedChat

CONTEXT = (
    "[doc-1] The late fee is 5% of the unpaid balance.\n"
    "[doc-2] Members of the credit union pay no late fee.\n"
    "[doc-3] Notices are sent by mail within ten days.\n"
)
RESPONSE = "The late fee is 5% of the unpaid balance [doc-1]. Members pay none [doc-2]."
SCORER_REPLY = json.dumps(
    {
        "score": 3,
        "explanation": "Both claims are stated in the blocks they cite.",
        "verdicts": [
            {"occurrence": 1, "outcome": "supported", "context_span": "late fee is 5%"},
            {"occurrence": 2, "outcome": "supported", "context_span": "pay no late fee"},
        ],
    }
)
LATENCY = 0.05
ROWS = 200
CONCURRENCY = 32
MB = 1_000_000


# --- 1. hostile inputs ---------------------------------------------------------------


def probes(size: int) -> dict[str, str]:
    return {
        "backticks": "`" * size,
        "tildes": "~" * size,
        "open brackets": "[" * size,
        "[doc- runs": "[doc-" * (size // 5),
        "[doc-1] markers": "[doc-1] " * (size // 8),
        "fence lines": "```\n" * (size // 4),
        "nested brackets": "[[" * (size // 4) + "]]" * (size // 4),
    }


def timed(func: Any, repeat: int = 2) -> float:
    """The best of ``repeat`` runs, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
    return best


def bench_probes() -> None:
    print("1. Hostile inputs (seconds; target < 1 s at 1 MB, 2 MB / 1 MB <= 2.3)")
    plain = CitationScorer()
    sources = [Source(text="The late fee is 5%.", doc_id="a")]
    header = (
        f"{'probe':<18}{'response':>10}{'judged':>10}{'context':>10}{'sources':>10}{'x2 ratio':>10}"
    )
    print(header)
    worst = 0.0
    for name, text in probes(MB).items():
        judged_text = RESPONSE + " " + text

        def judged(t: str = judged_text) -> None:
            CitationScorer(ScriptedChat([SCORER_REPLY])).score_sync(t, CONTEXT)

        times = [
            timed(lambda t=text: plain.score_sync(t, CONTEXT)),
            timed(judged),
            timed(lambda t=text: plain.score_sync(RESPONSE, CONTEXT + t)),
            timed(lambda t=text: plain.score_sync(t, sources)),
        ]
        double = probes(2 * MB)[name]
        ratio = timed(lambda t=double: plain.score_sync(t, CONTEXT)) / max(times[0], 1e-9)
        worst = max(worst, *times)
        print(f"{name:<18}" + "".join(f"{t:>10.3f}" for t in times) + f"{ratio:>10.2f}")
    print(f"slowest 1 MB probe: {worst:.3f} s ({'OK' if worst < 1 else 'OVER'} the 1 s target)")
    print()


# --- 2. judge concurrency ---------------------------------------------------------------


def serve(port_queue: Any, latency: float) -> None:
    """Run the loopback server until killed; put its port on ``port_queue``."""
    scorer_body = _envelope(SCORER_REPLY)
    yes_body = _envelope("YES")

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
                while True:
                    head = await reader.readuntil(b"\r\n\r\n")
                    length = 0
                    for line in head.split(b"\r\n"):
                        if line[:15].lower() == b"content-length:":
                            length = int(line[15:])
                    body = await reader.readexactly(length) if length else b""
                    await asyncio.sleep(latency)
                    payload = scorer_body if b"occurrence tag" in body else yes_body
                    writer.write(payload)
                    await writer.drain()
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=512)
        port_queue.put(server.sockets[0].getsockname()[1])
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def _envelope(content: str) -> bytes:
    payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]})
    data = payload.encode()
    head = (
        f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
    )
    return head.encode() + data


async def run_score_many(base_url: str) -> float:
    rows = [ScoreRow(RESPONSE, CONTEXT, "What is the late fee?") for _ in range(ROWS)]
    async with OpenAIChat(base_url, "bench-judge") as chat:
        scorer = CitationScorer(chat)
        start = time.perf_counter()
        results = await scorer.score_many(rows, concurrency=CONCURRENCY)
        elapsed = time.perf_counter() - start
    if not all(r.passed for r in results):
        raise RuntimeError({r.reason for r in results})
    return ROWS / elapsed


def scorer_prompt() -> str:
    chat = ScriptedChat([SCORER_REPLY])
    CitationScorer(chat).score_sync(RESPONSE, CONTEXT, "What is the late fee?")
    return chat.prompts[0]


async def run_bare_httpx(base_url: str, prompt: str) -> float:
    """The same 200 requests from a bare client: one ``client.post(json=...)`` per row.

    Each request body is built and serialized per row, as any client does whose
    prompts differ from row to row; nothing else happens between the requests.
    """
    url = f"{base_url}/chat/completions"
    semaphore = asyncio.Semaphore(CONCURRENCY)
    async with httpx.AsyncClient() as client:

        async def one() -> str:
            async with semaphore:
                body = {
                    "model": "bench-judge",
                    "messages": [{"role": "user", "content": prompt}],
                    "stream": False,
                }
                response = await client.post(url, json=body)
                return response.json()["choices"][0]["message"]["content"]

        start = time.perf_counter()
        replies = await asyncio.gather(*(one() for _ in range(ROWS)))
        elapsed = time.perf_counter() - start
    if not all(r == SCORER_REPLY for r in replies):
        raise RuntimeError("unexpected reply")
    return ROWS / elapsed


async def run_raw_asyncio(base_url: str, prompt: str) -> float:
    """The same 200 requests from a hand-written HTTP/1.1 client on asyncio streams.

    ``CONCURRENCY`` keep-alive connections, each sending one request at a time and
    reading the reply by its ``Content-Length``: no pool, no timeouts, no decoding
    beyond ``json.loads``. The floor a client library sits on.
    """
    url = httpx.URL(base_url)
    host, port = url.host, url.port or 80
    path = url.path.rstrip("/") + "/chat/completions"
    rows = iter(range(ROWS))
    replies: list[str] = []

    async def connection() -> None:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            for _ in rows:
                body = json.dumps(
                    {
                        "model": "bench-judge",
                        "messages": [{"role": "user", "content": prompt}],
                        "stream": False,
                    }
                ).encode()
                writer.write(
                    f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                reply = json.loads(await reader.readexactly(length))
                replies.append(reply["choices"][0]["message"]["content"])
        finally:
            writer.close()
            await writer.wait_closed()

    start = time.perf_counter()
    await asyncio.gather(*(connection() for _ in range(CONCURRENCY)))
    elapsed = time.perf_counter() - start
    if len(replies) != ROWS or not all(r == SCORER_REPLY for r in replies):
        raise RuntimeError("unexpected reply")
    return ROWS / elapsed


def run_llama_index(base_url: str, *, native_async: bool = True) -> float:
    """BatchEvalRunner(workers=32) with FaithfulnessEvaluator over a loopback CustomLLM.

    With ``native_async`` the LLM implements ``acomplete`` with a shared
    ``httpx.AsyncClient`` (the fair comparison). Without it, the LLM implements only
    ``complete``, as CustomLLM's docstring asks, and CustomLLM's inherited
    ``acomplete`` calls it synchronously, blocking the event loop on every row.
    """
    from llama_index.core.evaluation import BatchEvalRunner, FaithfulnessEvaluator  # noqa: PLC0415
    from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata  # noqa: PLC0415
    from llama_index.core.llms.callbacks import llm_completion_callback  # noqa: PLC0415

    url = f"{base_url}/chat/completions"

    def request(prompt: str) -> dict[str, Any]:
        return {
            "model": "bench-judge",
            "messages": [{"role": "user", "content": prompt}],
            "stream": False,
        }

    class SyncLoopbackLLM(CustomLLM):
        """The smallest OpenAI-compatible LlamaIndex LLM: one httpx POST per call."""

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name="bench-judge")

        @llm_completion_callback()
        def complete(
            self,
            prompt: str,
            formatted: bool = False,  # noqa: ARG002
            **kwargs: Any,  # noqa: ARG002
        ) -> CompletionResponse:
            reply = SYNC_CLIENT.post(url, json=request(prompt)).json()
            return CompletionResponse(text=reply["choices"][0]["message"]["content"])

        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            raise NotImplementedError

    class LoopbackLLM(SyncLoopbackLLM):
        """The same LLM with a native async path over one shared AsyncClient."""

        @llm_completion_callback()
        async def acomplete(
            self,
            prompt: str,
            formatted: bool = False,  # noqa: ARG002
            **kwargs: Any,  # noqa: ARG002
        ) -> CompletionResponse:
            reply = (await CLIENT.post(url, json=request(prompt))).json()
            return CompletionResponse(text=reply["choices"][0]["message"]["content"])

    async def main() -> float:
        global CLIENT, SYNC_CLIENT
        CLIENT, SYNC_CLIENT = httpx.AsyncClient(timeout=30), httpx.Client(timeout=30)
        llm = LoopbackLLM() if native_async else SyncLoopbackLLM()
        runner = BatchEvalRunner(
            {"faithfulness": FaithfulnessEvaluator(llm=llm)}, workers=CONCURRENCY
        )
        start = time.perf_counter()
        results = await runner.aevaluate_response_strs(
            queries=["What is the late fee?"] * ROWS,
            response_strs=[RESPONSE] * ROWS,
            contexts_list=[[CONTEXT]] * ROWS,
        )
        elapsed = time.perf_counter() - start
        await CLIENT.aclose()
        SYNC_CLIENT.close()
        if not all(r.passing for r in results["faithfulness"]):
            raise RuntimeError("unexpected verdict")
        return ROWS / elapsed

    return asyncio.run(main())


SYNC_CLIENT: httpx.Client
CLIENT: httpx.AsyncClient


def _measure(results: Any, name: str, base_url: str, prompt: str) -> None:
    """Run one client twice, the first run untimed to warm it up (lazy imports,
    tokenizers, regex caches); put (rows/s, client CPU ms per row) on ``results``."""

    def run() -> float:
        if name == "score_many":
            return asyncio.run(run_score_many(base_url))
        if name == "bare httpx":
            return asyncio.run(run_bare_httpx(base_url, prompt))
        if name == "raw asyncio":
            return asyncio.run(run_raw_asyncio(base_url, prompt))
        return run_llama_index(base_url, native_async=name == "llama-index")

    run()
    started = time.process_time()
    rate = run()
    results.put((rate, (time.process_time() - started) / ROWS * 1000))


def measure_apart(context: Any, name: str, base_url: str, prompt: str) -> tuple[float, float]:
    """Measure one client in a fresh process.

    Each run gets a heap of its own: LlamaIndex leaves hundreds of thousands of
    objects behind after import, and every later garbage collection in the same
    process would walk them, charging its cost to whichever client ran next.
    """
    results = context.Queue()
    child = context.Process(target=_measure, args=(results, name, base_url, prompt))
    child.start()
    figure: tuple[float, float] = results.get(timeout=300)
    child.join()
    return figure


def bench_concurrency(repeat: int, *, llama_index: bool = True) -> None:
    print(
        f"2. Judge concurrency: {ROWS} rows, concurrency {CONCURRENCY}, "
        f"loopback server with {LATENCY * 1000:.0f} ms latency ({repeat} interleaved runs each)"
    )
    context = multiprocessing.get_context("spawn")
    ports = context.Queue()
    server = context.Process(target=serve, args=(ports, LATENCY), daemon=True)
    server.start()
    try:
        base_url = f"http://127.0.0.1:{ports.get(timeout=30)}/v1"
        prompt = scorer_prompt()
        clients = ("score_many", "bare httpx", "raw asyncio") + (
            ("llama-index",) if llama_index else ()
        )
        figures: dict[str, list[float]] = {name: [] for name in clients}
        cpu: dict[str, list[float]] = {name: [] for name in clients}
        for _ in range(repeat):
            for name in clients:
                rate, cpu_ms = measure_apart(context, name, base_url, prompt)
                figures[name].append(rate)
                cpu[name].append(cpu_ms)
        sync_only = (
            measure_apart(context, "llama-index, sync-only", base_url, prompt)[0]
            if llama_index
            else None
        )
    finally:
        server.kill()
        server.join()
    # Throughput only ever loses to noise on a shared machine, so each client's best
    # run measures what it can do; the medians are printed beside them.
    best = {name: max(values) for name, values in figures.items()}
    median = {name: statistics.median(values) for name, values in figures.items()}
    for name, values in figures.items():
        shown = ", ".join(f"{v:.0f}" for v in values)
        print(
            f"{name:<12} best {best[name]:>6.1f}  median {median[name]:>6.1f} rows/s  "
            f"client CPU {statistics.median(cpu[name]):.2f} ms/row  (runs: {shown})"
        )
    if sync_only is not None:
        print(
            f"llama-index with a sync-only CustomLLM: {sync_only:.1f} rows/s "
            "(one run, for reference)"
        )
    for label, figure in (("best", best), ("median", median)):
        ceiling = figure["score_many"] / figure["bare httpx"]
        floor = figure["score_many"] / figure["raw asyncio"]
        line = (
            f"{label:<6} score_many / bare httpx = {ceiling:.2f}x "
            f"(target >= 1.0x: {'OK' if ceiling >= 1.0 else 'MISSED'}); "
            f"score_many / raw asyncio = {floor:.2f}x "
            f"(target >= 0.9x: {'OK' if floor >= 0.9 else 'MISSED'})"
        )
        if llama_index:
            versus = figure["score_many"] / figure["llama-index"]
            line += (
                f"; score_many / llama-index = {versus:.2f}x "
                f"(target >= 4x: {'OK' if versus >= 4 else 'MISSED'})"
            )
        print(line)
    if sync_only is not None:
        print(f"best score_many / sync-only llama-index = {best['score_many'] / sync_only:.1f}x")
    limit = CONCURRENCY / LATENCY
    print(
        f"(latency alone caps any client at {limit:.0f} rows/s: "
        f"{CONCURRENCY} in flight x {LATENCY * 1000:.0f} ms)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--probes", action="store_true", help="only the hostile-input probes")
    parser.add_argument("--concurrency", action="store_true", help="only the concurrency benchmark")
    parser.add_argument("--repeat", type=int, default=5, help="concurrency runs per client")
    parser.add_argument(
        "--no-llama-index", action="store_true", help="leave LlamaIndex out of the comparison"
    )
    args = parser.parse_args()
    both = not (args.probes or args.concurrency)
    if args.probes or both:
        bench_probes()
    if args.concurrency or both:
        bench_concurrency(args.repeat, llama_index=not args.no_llama_index)


if __name__ == "__main__":
    main()
