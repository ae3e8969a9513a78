"""`OpenAIChat` against hostile servers on 127.0.0.1 (issue 17, items 1, 2, 9 and 10).

A trickling server that sends one byte at a time, a gzip bomb, an endless chunked
body, a slow server for the exception-chain checks, and a forward proxy named by
``HTTP_PROXY``. Each test also runs the naive variant (what a plain httpx client or
the old code path does) and shows it fails the same assertion.
"""

from __future__ import annotations

import asyncio
import copy
import gzip
import json
import pickle
import threading
import time
import traceback
import tracemalloc
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from citemark import ChatError, OpenAIChat

KEY = "sk-CANARY-key-17aa"
PROMPT = "CANARY-prompt-17bb"
MODEL = "m"
OK_BODY = json.dumps({"choices": [{"message": {"role": "assistant", "content": "ok"}}]}).encode()
# 64 MiB of zeros compress to about 64 KB.
BOMB_DECODED = 64 * 1024 * 1024
BOMB = gzip.compress(b"\0" * BOMB_DECODED, compresslevel=9)
CAP = 1024 * 1024
ERROR_BODY = json.dumps({"error": {"message": PROMPT, "code": "context_length_exceeded"}}).encode()


class Hostile(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), HostileHandler)
        self.stop = threading.Event()
        self.count: dict[str, int] = {}
        self.paths: list[str] = []
        self.lock = threading.Lock()

    def handle_error(self, request, client_address) -> None:
        """Quiet: a client hanging up on a hostile reply is what these tests do."""


class HostileHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Hostile

    def log_message(self, format, *args) -> None:  # noqa: A002 - the stdlib signature
        """Quiet: a test reads what the server got, not its log."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        scenario = self.path.split("/")[1] if "://" not in self.path else "proxied"
        with self.server.lock:
            self.server.count[scenario] = self.server.count.get(scenario, 0) + 1
            self.server.paths.append(self.path)
        getattr(self, "serve_" + scenario.replace("-", "_"))()

    def serve_trickle(self) -> None:
        """A 200 whose body arrives one byte every 0.1 s, well inside any read bound."""
        body = OK_BODY + b" " * 10_000
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        for byte in body:
            if self.server.stop.wait(0.1):
                return
            self.wfile.write(bytes([byte]))
            self.wfile.flush()

    def serve_bomb(self) -> None:
        self.send_response(200)
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(BOMB)))
        self.end_headers()
        self.wfile.write(BOMB)

    def serve_endless(self) -> None:
        """A chunked 200 that never ends."""
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunk = b"x" * 65536
        while not self.server.stop.is_set():
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))

    def serve_slow(self) -> None:
        self.server.stop.wait(30)

    def serve_gzip_ok(self) -> None:
        body = gzip.compress(OK_BODY)
        self.send_response(200)
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def serve_error_bomb(self) -> None:
        """A 400 whose gzip body inflates to 64 MiB (issue 26, item 8)."""
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(BOMB)))
        self.end_headers()
        self.wfile.write(BOMB)

    def serve_error_gzip(self) -> None:
        """A 400 with a small gzip OpenAI error body: its code is still read."""
        body = gzip.compress(ERROR_BODY)
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def serve_proxied(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(OK_BODY)))
        self.end_headers()
        self.wfile.write(OK_BODY)


@pytest.fixture(scope="module")
def hostile():
    server = Hostile()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.stop.set()
    server.shutdown()
    server.server_close()


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ("CITEMARK_BASE_URL", "CITEMARK_MODEL", "CITEMARK_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def url(server: Hostile, scenario: str) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/{scenario}/v1"


def fail(chat: OpenAIChat, prompt: str = "q") -> ChatError:
    with pytest.raises(ChatError) as info:
        asyncio.run(chat.complete(prompt))
    return info.value


def chain(exc: BaseException | None) -> list[BaseException]:
    seen: list[BaseException] = []
    pending = [exc]
    while pending:
        current = pending.pop()
        if current is None or any(current is s for s in seen):
            continue
        seen.append(current)
        pending += [current.__cause__, current.__context__]
    return seen


def reachable_texts(exc: BaseException) -> str:
    """Everything printable from the error: its traceback, chain, attributes, requests."""
    texts = ["".join(traceback.format_exception(exc))]
    for current in chain(exc):
        texts += [str(current), repr(current), repr(vars(current))]
        request = getattr(current, "_request", None)
        if request is not None:
            texts += [repr(dict(request.headers)), request.content.decode(errors="replace")]
    return "\n".join(texts)


class TestDeadline:
    def test_a_plain_timeout_bounds_the_whole_call(self, hostile):
        """A trickling server never trips a per-read bound, but the call ends at its timeout."""
        started = time.monotonic()
        error = fail(OpenAIChat(url(hostile, "trickle"), MODEL, timeout=1.0))
        elapsed = time.monotonic() - started

        assert ("deadline", 200) == (error.reason, error.status)
        assert elapsed < 3.0
        assert error.__cause__ is None
        assert error.__context__ is None

    def test_naive_per_read_timeout_never_fires(self, hostile):
        """The naive variant: httpx's timeout=1.0 alone is still reading after 3 s."""

        async def naive() -> bool:
            async with httpx.AsyncClient(timeout=1.0) as client:
                task = asyncio.ensure_future(client.post(url(hostile, "trickle") + "/x"))
                done, _ = await asyncio.wait([task], timeout=3.0)
                task.cancel()
                return bool(done)

        assert not asyncio.run(naive())

    def test_structured_timeout_gets_the_default_deadline_or_the_given_one(self, hostile):
        """An httpx.Timeout bounds phases; ``deadline`` bounds the whole call."""
        chat = OpenAIChat(url(hostile, "trickle"), MODEL, timeout=httpx.Timeout(5.0), deadline=1.0)
        started = time.monotonic()
        assert "deadline" == fail(chat).reason
        assert time.monotonic() - started < 3.0

    def test_the_deadline_applies_through_an_injected_client(self, hostile):
        async def call() -> None:
            async with httpx.AsyncClient(timeout=5.0) as client:
                chat = OpenAIChat(url(hostile, "trickle"), MODEL, client=client, deadline=1.0)
                await chat.complete("q")

        with pytest.raises(ChatError, match="deadline"):
            asyncio.run(call())

    @pytest.mark.parametrize("deadline", [0, -1.0, float("inf"), float("nan")])
    def test_an_unbounded_deadline_is_refused(self, deadline):
        with pytest.raises(ValueError, match="deadline must be"):
            OpenAIChat("http://127.0.0.1:1/v1", MODEL, deadline=deadline)


class TestDecodedSize:
    def test_gzip_bomb_is_refused_with_bounded_memory(self, hostile):
        """A 64 KB body inflating to 64 MiB is refused at the 1 MiB cap, after one request."""
        before = hostile.count.get("bomb", 0)
        tracemalloc.start()
        try:
            error = fail(OpenAIChat(url(hostile, "bomb"), MODEL, max_reply_bytes=CAP))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()

        assert ("reply_too_large", 200) == (error.reason, error.status)
        assert peak < 8 * CAP
        assert 1 == hostile.count["bomb"] - before

    def test_naive_read_inflates_the_whole_bomb(self, hostile):
        """The naive variant: httpx's own decoding materializes all 64 MiB before any cap."""

        async def naive() -> int:
            async with httpx.AsyncClient() as client:
                response = await client.post(url(hostile, "bomb") + "/x")
                return len(response.content)

        assert asyncio.run(naive()) > 8 * CAP

    def test_an_error_body_bomb_is_read_in_bounded_memory(self, hostile):
        """Issue 26: a 400 whose body inflates to 64 MiB costs well under 1 MiB to refuse.

        Only its first 16 KiB of decoded text is looked at for a provider code; past
        that there is none, and nothing more is inflated. A first call, to a small
        error body, does the lazy imports, so the peak counts only the call itself.
        """
        fail(OpenAIChat(url(hostile, "error-gzip"), MODEL))
        tracemalloc.start()
        try:
            error = fail(OpenAIChat(url(hostile, "error-bomb"), MODEL))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()

        assert ("http_status", 400, None) == (error.reason, error.status, error.provider_code)
        assert peak < CAP, peak

    def test_naive_error_body_read_inflates_a_whole_chunk(self, hostile):
        """The naive variant: httpx's decoded stream, stopped at 16 KiB, still peaks past 8 MiB."""

        async def naive() -> int:
            async with httpx.AsyncClient() as client:
                request = client.build_request("POST", url(hostile, "error-bomb") + "/x")
                response = await client.send(request, stream=True)
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > 16 * 1024:
                        break
                await response.aclose()
                return len(body)

        tracemalloc.start()
        try:
            asyncio.run(naive())
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak > 8 * CAP

    def test_a_gzip_error_body_keeps_its_code(self, hostile):
        error = fail(OpenAIChat(url(hostile, "error-gzip"), MODEL), PROMPT)
        assert ("http_status", "context_length_exceeded") == (error.reason, error.provider_code)
        assert PROMPT not in reachable_texts(error)

    def test_endless_chunked_body_is_refused_at_the_cap(self, hostile):
        started = time.monotonic()
        error = fail(OpenAIChat(url(hostile, "endless"), MODEL, max_reply_bytes=CAP))

        assert ("reply_too_large", 200) == (error.reason, error.status)
        assert time.monotonic() - started < 10.0

    def test_a_gzip_reply_under_the_cap_is_read(self, hostile):
        assert "ok" == asyncio.run(OpenAIChat(url(hostile, "gzip-ok"), MODEL).complete("q"))

    def test_the_default_cap_is_stated_and_checked(self):
        with pytest.raises(ValueError, match="max_reply_bytes"):
            OpenAIChat("http://127.0.0.1:1/v1", MODEL, max_reply_bytes=0)


class TestNoSecretReachable:
    def test_a_timeout_exposes_neither_key_nor_prompt(self, hostile):
        """No httpx exception (whose .request holds both) is reachable from the ChatError."""
        chat = OpenAIChat(url(hostile, "slow"), MODEL, KEY, timeout=httpx.Timeout(0.3))
        error = fail(chat, PROMPT)

        assert ("timeout", "timed out reading the response") == (error.reason, error.detail)
        assert [error] == chain(error)
        texts = reachable_texts(error)
        assert KEY not in texts
        assert PROMPT not in texts

    def test_naive_chained_timeout_exposes_both(self, hostile):
        """The naive variant (``raise ... from exc``) reaches the key and the prompt."""

        async def naive() -> ChatError:
            async with httpx.AsyncClient(timeout=0.3) as client:
                try:
                    await client.post(
                        url(hostile, "slow") + "/x",
                        headers={"Authorization": f"Bearer {KEY}"},
                        content=PROMPT.encode(),
                    )
                except httpx.ReadTimeout as exc:
                    wrapped = ChatError("x", provider="p", model="m")
                    wrapped.__cause__ = exc
                    return wrapped
            raise AssertionError

        texts = reachable_texts(asyncio.run(naive()))
        assert KEY in texts
        assert PROMPT in texts

    def test_pickling_refuses_and_keeps_the_key_out(self):
        chat = OpenAIChat("http://127.0.0.1:1/v1", MODEL, KEY)
        with pytest.raises(TypeError, match="cannot be pickled") as info:
            pickle.dumps(chat)
        with pytest.raises(TypeError):
            copy.deepcopy(chat)
        assert KEY not in str(info.value)
        # The naive variant: the default reduction carries the key in clear.
        assert KEY in repr(object.__reduce_ex__(chat, 2))


class TestProxy:
    def test_http_proxy_from_the_environment_is_used(self, hostile, monkeypatch):
        """HTTP_PROXY routes the call through the proxy, as httpx's default client does."""
        proxy = f"http://127.0.0.1:{hostile.server_address[1]}"
        monkeypatch.setenv("HTTP_PROXY", proxy)
        target = "http://upstream.invalid/v1"

        assert "ok" == asyncio.run(OpenAIChat(target, MODEL).complete("q"))
        assert "http://upstream.invalid/v1/chat/completions" in hostile.paths

    def test_naive_explicit_transport_ignores_the_environment(self, hostile, monkeypatch):
        """The naive variant: a client given a transport skips HTTP_PROXY entirely."""
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{hostile.server_address[1]}")

        async def naive() -> None:
            transport = httpx.AsyncHTTPTransport(retries=0)
            async with httpx.AsyncClient(transport=transport, timeout=2.0) as client:
                await client.post("http://upstream.invalid/v1/chat/completions")

        with pytest.raises(httpx.ConnectError):
            asyncio.run(naive())

    @pytest.mark.parametrize("no_proxy", ["127.0.0.1", "*", "127.0.0.0/8", "localhost,127.0.0.1"])
    def test_no_proxy_exempts_the_host(self, hostile, monkeypatch, no_proxy):
        """A host NO_PROXY names is reached directly, not through the (dead) proxy."""
        monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
        monkeypatch.setenv("NO_PROXY", no_proxy)

        assert "ok" == asyncio.run(OpenAIChat(url(hostile, "gzip-ok"), MODEL).complete("q"))

    def test_without_no_proxy_the_dead_proxy_is_used(self, hostile, monkeypatch):
        monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")

        assert "connect" == fail(OpenAIChat(url(hostile, "gzip-ok"), MODEL)).reason
