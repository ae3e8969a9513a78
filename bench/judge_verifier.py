"""Benchmark: the ``judge`` verifier's premises/s against a bare asyncio HTTP client (issue 36).

A loopback OpenAI-compatible server (asyncio streams, in its own process so it does not
share the clients' event loop) answers every ``POST`` with a canned
``{"entailed": true}`` after a fixed latency (2 ms by default). Four clients, measured
in this one process, interleaved, each ``--repeat`` times:

- ``JudgeVerifier(OpenAIChat(...), concurrency=C).verify(premises)``: renders each
  prompt, sends it through citemark's chat seam (deadline and reply-size cap on),
  parses each reply strictly;
- ``OpenAIChat.complete`` alone on the rendered prompts (what the chat seam costs,
  which the verifier must go through so that recording and replay cover it);
- the httpx floor: one ``httpx.AsyncClient`` (pool of C connections) behind
  ``asyncio.Semaphore(C)`` posting the same JSON bodies and reading
  ``choices[0].message.content``; nothing else;
- the raw floor: C keep-alive connections on bare asyncio streams, hand-written
  HTTP/1.1, the same bodies, ``json.loads`` of each reply; no library at all.

The verifier's own cost is printed too: the same premises through a chat with no
transport. The chat and both floors get the prompts rendered beforehand, so they do
less work than the verifier. Target: verifier / floor >= 0.9x, against each floor. Throughput only
loses to noise on a shared machine, so each client's best run is its figure; medians
are printed beside them.

Run: ``.venv/bin/python bench/judge_verifier.py`` (``--premises N``, ``--concurrency C``,
``--latency-ms L``, ``--repeat R``).
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

from citemark._judging.verifiers.base import Premise, Verdict
from citemark._judging.verifiers.judge import JudgeVerifier, render_entailment_prompt
from citemark._model.chat import OpenAIChat

MODEL = "bench-entail"
REPLY = '{"entailed": true}'


def serve(ports: Any, latency: float) -> None:
    """Serve canned chat completions on 127.0.0.1 until killed; put the port on ``ports``."""
    data = json.dumps(
        {"choices": [{"message": {"role": "assistant", "content": REPLY}, "finish_reason": "stop"}]}
    ).encode()
    response = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(data)}\r\n\r\n".encode()
        + data
    )

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
                while True:
                    head = await reader.readuntil(b"\r\n\r\n")
                    length = 0
                    for line in head.split(b"\r\n"):
                        name, _, value = line.partition(b":")
                        if name.strip().lower() == b"content-length":
                            length = int(value)
                    await reader.readexactly(length)
                    await asyncio.sleep(latency)
                    writer.write(response)
                    await writer.drain()
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=512)
        ports.put(server.sockets[0].getsockname()[1])
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def make_premises(count: int) -> list[Premise]:
    """Distinct premises of realistic size: two passages of about 300 characters each."""
    return [
        Premise(
            claim=f"The late fee on account {i} is 5% of the unpaid balance.",
            passages=(
                f"Account {i}: the late fee is 5% of the unpaid balance, charged once per "
                "billing cycle. Members of the credit union pay no late fee. " * 2,
                f"Notices for account {i} are sent by mail within ten days of the due date, "
                "and a second notice follows after thirty days. " * 2,
            ),
        )
        for i in range(count)
    ]


async def run_verifier(base_url: str, premises: list[Premise], concurrency: int) -> float:
    chat = OpenAIChat(base_url, MODEL, api_key="")
    verifier = JudgeVerifier(chat, concurrency=concurrency)
    try:
        start = time.perf_counter()
        verdicts = await verifier.verify(premises)
        elapsed = time.perf_counter() - start
    finally:
        await verifier.aclose()
    if verdicts != [Verdict(entailed=True)] * len(premises):
        raise RuntimeError("unexpected verdicts")
    return len(premises) / elapsed


async def run_chat(base_url: str, prompts: list[str], concurrency: int) -> float:
    """``OpenAIChat.complete`` alone on the rendered prompts, no verifier: the seam's cost."""
    chat = OpenAIChat(base_url, MODEL, api_key="")
    semaphore = asyncio.Semaphore(concurrency)

    async def one(prompt: str) -> str:
        async with semaphore:
            return await chat.complete(prompt)

    try:
        start = time.perf_counter()
        replies = await asyncio.gather(*(one(prompt) for prompt in prompts))
        elapsed = time.perf_counter() - start
    finally:
        await chat.aclose()
    if replies != [REPLY] * len(prompts):
        raise RuntimeError("unexpected replies")
    return len(prompts) / elapsed


class _Canned:
    """A chat with no transport at all: what the verifier itself costs per premise."""

    provider = "canned"
    model_name = MODEL

    async def complete(self, prompt: str) -> str:
        del prompt
        return REPLY


async def run_no_network(premises: list[Premise], concurrency: int) -> float:
    verifier = JudgeVerifier(_Canned(), concurrency=concurrency)
    start = time.perf_counter()
    verdicts = await verifier.verify(premises)
    elapsed = time.perf_counter() - start
    if verdicts != [Verdict(entailed=True)] * len(premises):
        raise RuntimeError("unexpected verdicts")
    return len(premises) / elapsed


async def run_floor(base_url: str, prompts: list[str], concurrency: int) -> float:
    url = f"{base_url}/chat/completions"
    semaphore = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits) as client:

        async def one(prompt: str) -> str:
            body = {
                "model": MODEL,
                "messages": [{"role": "user", "content": prompt}],
                "stream": False,
            }
            async with semaphore:
                response = await client.post(
                    url,
                    content=json.dumps(body).encode("ascii"),
                    headers={"Content-Type": "application/json"},
                )
            content: str = response.json()["choices"][0]["message"]["content"]
            return content

        start = time.perf_counter()
        replies = await asyncio.gather(*(one(prompt) for prompt in prompts))
        elapsed = time.perf_counter() - start
    if replies != [REPLY] * len(prompts):
        raise RuntimeError("unexpected replies")
    return len(prompts) / elapsed


async def run_raw(base_url: str, prompts: list[str], concurrency: int) -> float:
    """The same bodies over ``concurrency`` keep-alive connections on bare asyncio streams.

    Hand-written HTTP/1.1: each connection sends one request at a time and reads the
    reply by its ``Content-Length``; no pool, no timeouts, no library; the same JSON
    body and ``json.loads`` of the reply. The floor beneath any client.
    """
    url = httpx.URL(base_url)
    host, port = url.host, url.port or 80
    path = url.path.rstrip("/") + "/chat/completions"
    pending = iter(enumerate(prompts))
    replies: list[str] = [""] * len(prompts)

    async def connection() -> None:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            for index, prompt in pending:
                body = json.dumps(
                    {
                        "model": MODEL,
                        "messages": [{"role": "user", "content": prompt}],
                        "stream": False,
                    }
                ).encode("ascii")
                writer.write(
                    f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                reply = json.loads(await reader.readexactly(length))
                replies[index] = reply["choices"][0]["message"]["content"]
        finally:
            writer.close()
            await writer.wait_closed()

    start = time.perf_counter()
    await asyncio.gather(*(connection() for _ in range(min(concurrency, len(prompts)))))
    elapsed = time.perf_counter() - start
    if replies != [REPLY] * len(prompts):
        raise RuntimeError("unexpected replies")
    return len(prompts) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--premises", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--latency-ms", type=float, default=2.0)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    premises = make_premises(args.premises)
    prompts = [render_entailment_prompt(p) for p in premises]
    context = multiprocessing.get_context("spawn")
    ports = context.Queue()
    server = context.Process(target=serve, args=(ports, args.latency_ms / 1000), daemon=True)
    server.start()
    figures: dict[str, list[float]] = {"verifier": [], "chat": [], "httpx": [], "raw": []}
    try:
        base_url = f"http://127.0.0.1:{ports.get(timeout=30)}/v1"
        # One warm-up each, not counted: imports, first connections, the server's start.
        asyncio.run(run_verifier(base_url, premises[:50], args.concurrency))
        asyncio.run(run_floor(base_url, prompts[:50], args.concurrency))
        asyncio.run(run_raw(base_url, prompts[:50], args.concurrency))
        for _ in range(args.repeat):
            c = args.concurrency
            figures["verifier"].append(asyncio.run(run_verifier(base_url, premises, c)))
            figures["chat"].append(asyncio.run(run_chat(base_url, prompts, c)))
            figures["httpx"].append(asyncio.run(run_floor(base_url, prompts, c)))
            figures["raw"].append(asyncio.run(run_raw(base_url, prompts, c)))
    finally:
        server.kill()
        server.join()

    print(
        f"judge verifier: {args.premises} premises, concurrency {args.concurrency}, "
        f"loopback server with {args.latency_ms:g} ms latency, {args.repeat} interleaved runs"
    )
    labels = {
        "verifier": "JudgeVerifier/OpenAIChat",
        "chat": "OpenAIChat alone",
        "httpx": "httpx.AsyncClient floor",
        "raw": "raw asyncio-streams floor",
    }
    for name, label in labels.items():
        runs = ", ".join(f"{v:.0f}" for v in figures[name])
        print(
            f"{label:<26} best {max(figures[name]):7.1f}  median "
            f"{statistics.median(figures[name]):7.1f} premises/s  (runs: {runs})"
        )
    for how, pick in (("best", max), ("median", statistics.median)):
        for floor in ("chat", "httpx", "raw"):
            ratio = pick(figures["verifier"]) / pick(figures[floor])
            verdict = "OK" if ratio >= 0.9 else "MISSED"
            print(f"{how:<6} verifier / {floor} floor = {ratio:.2f}x (target >= 0.9x: {verdict})")
    alone = asyncio.run(run_no_network(premises, args.concurrency))
    print(f"JudgeVerifier with no transport (a canned in-process chat): {alone:.0f} premises/s")
    ceiling = args.concurrency / (args.latency_ms / 1000)
    print(f"(latency alone caps any client at {ceiling:.0f} premises/s)")


if __name__ == "__main__":
    main()
