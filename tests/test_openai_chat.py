"""`OpenAIChat` against a real HTTP server on 127.0.0.1, SPEC §3.6 and §8.

The server is the standard library's ``ThreadingHTTPServer`` in a background thread,
so timeouts, error statuses, hang-ups and truncated bodies are real. Each test gets
its own URL prefix, ``/<tag>/<scenario>/v1``: the scenario picks the server's
behaviour and the server counts and records the requests per prefix, so "exactly
one request" is asserted from the server's side. ``httpx.MockTransport`` appears
only in `TestEnvelopeShapes`, for body shapes that need no network to be real.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import json
import logging
import socket
import sys
import threading
import time
import traceback
import uuid
import warnings
from collections import defaultdict
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from citemark import ChatError
from citemark._model.chat import ChatModel, OpenAIChat

CANARY = "CANARY-chat-91d2"
# A URL scheme is case-insensitive and httpx lowercases it, so this one is lowercase.
SCHEME_CANARY = "canary-scheme-7e3a"
KEY = "sk-CANARY-key-5e1f"
MODEL = "test-model"
PROVIDER = "openai-compatible"
ANSWER = "The license terminates on breach [1]."

# Bodies of a 200 that a provider may send but citemark must reject, with the reason.
MALFORMED_200 = {
    "not-json": (f"<html>{CANARY}</html>".encode(), "the response body is not valid JSON"),
    "truncated": (
        b'{"choices": [{"message": {"content": "' + CANARY.encode(),
        "the response body is not valid JSON",
    ),
    "array": (
        json.dumps([{"choices": [{"message": {"content": CANARY}}]}]).encode(),
        "the response body is not a JSON object",
    ),
    "no-choices": (
        json.dumps({"id": CANARY, "object": "chat.completion"}).encode(),
        "the response has no choices",
    ),
    "empty-choices": (json.dumps({"choices": []}).encode(), "the response has no choices"),
    "null-content": (
        json.dumps({"choices": [{"message": {"role": "assistant", "content": None}}]}).encode(),
        "choices[0].message.content is null",
    ),
    "numeric-content": (
        json.dumps({"choices": [{"message": {"role": "assistant", "content": 42}}]}).encode(),
        "choices[0].message.content is not a string",
    ),
}
ERROR_BODY = json.dumps({"error": {"message": CANARY, "type": "server_error"}}).encode()
OK_BODY = json.dumps(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": ANSWER},
                "finish_reason": "stop",
            }
        ],
    }
).encode()
# Long enough that a timeout shorter than this is unmistakable; the fixture's teardown
# releases the waiting handler threads early.
SLOW_SECONDS = 10.0


@dataclass(frozen=True)
class Seen:
    """One request as the server received it."""

    headers: dict[str, str]
    body: dict[str, object]
    port: int


class FakeProvider(ThreadingHTTPServer):
    """An OpenAI-compatible server whose behaviour is chosen by the URL path."""

    # socketserver's default backlog of 5 drops the SYNs of concurrent tests, and a
    # dropped SYN is retried only after a second.
    request_queue_size = 64

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), ScenarioHandler)
        self.lock = threading.Lock()
        self.seen: defaultdict[str, list[Seen]] = defaultdict(list)
        self.release = threading.Event()

    def handle_error(self, request, client_address) -> None:
        """Quiet: a client that timed out closed its socket, so the late reply fails."""


class ScenarioHandler(BaseHTTPRequestHandler):
    """Serves ``POST /<tag>/<scenario>/v1/chat/completions``."""

    protocol_version = "HTTP/1.1"
    server: FakeProvider

    def log_message(self, format, *args) -> None:  # noqa: A002 - the stdlib signature
        """Quiet: a test reads what the server got, not its log."""

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        tag, scenario = self.path.strip("/").split("/")[:2]
        seen = Seen(
            headers={name.lower(): value for name, value in self.headers.items()},
            body=json.loads(raw),
            port=self.client_address[1],
        )
        with self.server.lock:
            self.server.seen[f"{tag}/{scenario}"].append(seen)
        self.respond(tag, scenario)

    def respond(self, tag: str, scenario: str) -> None:
        if scenario == "ok":
            self.reply(200, OK_BODY)
        elif scenario.startswith("status-"):
            self.reply(int(scenario.removeprefix("status-")), ERROR_BODY)
        elif scenario == "redirect":
            self.redirect(302, f"/{tag}/ok/v1/chat/completions")
        elif scenario == "redirect-scheme":
            # httpcore quotes an unsupported scheme in UnsupportedProtocol's message.
            self.redirect(302, f"{SCHEME_CANARY}://{CANARY}.invalid/{CANARY}")
        elif scenario == "redirect-loop":
            # 307 keeps the method, so every hop is a POST back to this scenario.
            self.redirect(307, f"/{tag}/redirect-loop/v1/chat/completions?{CANARY}")
        elif scenario in MALFORMED_200:
            self.reply(200, MALFORMED_200[scenario][0])
        elif scenario == "slow":
            self.server.release.wait(SLOW_SECONDS)
            self.reply(200, OK_BODY)
        elif scenario == "stall-body":
            self.send_response(200)
            self.send_header("Content-Length", str(len(OK_BODY)))
            self.end_headers()
            self.wfile.write(OK_BODY[:10])
            self.wfile.flush()
            self.server.release.wait(SLOW_SECONDS)
            self.close_connection = True
        elif scenario == "short-body":
            self.send_response(200)
            self.send_header("Content-Length", str(len(OK_BODY)))
            self.end_headers()
            self.wfile.write(OK_BODY[:10])
            self.close_connection = True
        elif scenario == "bad-gzip":
            self.send_response(200)
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", "8")
            self.end_headers()
            self.wfile.write(b"not gzip")
        elif scenario == "hang-up":
            self.close_connection = True
        elif scenario == "bad-header":
            # A header line without a colon: h11 rejects it and quotes it.
            self.wfile.write(b"HTTP/1.1 200 OK\r\n" + CANARY.encode() + b"\r\n\r\n")
            self.close_connection = True
        else:
            self.reply(418, b"unknown scenario")

    def redirect(self, status: int, location: str) -> None:
        self.send_response(status)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def reply(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Provider:
    """One test's view of the server: its own URL prefixes and request records."""

    def __init__(self, server: FakeProvider) -> None:
        self.server = server
        self.tag = uuid.uuid4().hex
        self.root = f"http://127.0.0.1:{server.server_address[1]}"

    def base_url(self, scenario: str) -> str:
        return f"{self.root}/{self.tag}/{scenario}/v1"

    def seen(self, scenario: str) -> list[Seen]:
        with self.server.lock:
            return list(self.server.seen[f"{self.tag}/{scenario}"])

    def count(self, scenario: str) -> int:
        return len(self.seen(scenario))


@pytest.fixture(scope="module")
def fake_server():
    server = FakeProvider()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.release.set()
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def provider(fake_server) -> Provider:
    return Provider(fake_server)


@pytest.fixture
def closed_port():
    """A loopback port that is bound but not listening, so connecting is refused."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    yield sock.getsockname()[1]
    sock.close()


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    """The developer's own CITEMARK_* settings never leak into these tests."""
    for name in ("CITEMARK_BASE_URL", "CITEMARK_MODEL", "CITEMARK_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def facts(exc: ChatError) -> dict[str, object]:
    """Every fact a ChatError carries, for whole-value comparison."""
    return {
        "type": type(exc),
        "provider": exc.provider,
        "model": exc.model,
        "status": exc.status,
        # The sentence; the stable code in .reason is checked in TestReasonCodes.
        "reason": exc.detail,
    }


def chat_error(status: int | None, reason: str, model: str = MODEL) -> dict[str, object]:
    return {
        "type": ChatError,
        "provider": PROVIDER,
        "model": model,
        "status": status,
        "reason": reason,
    }


def fail(chat: OpenAIChat, prompt: str = "q") -> ChatError:
    """Run one call that must fail and return its ChatError."""
    with pytest.raises(ChatError) as info:
        asyncio.run(chat.complete(prompt))
    return info.value


def fail_following_redirects(url: str, max_redirects: int = 20) -> ChatError:
    """Run one call through an injected client that follows redirects; return its ChatError."""

    async def call() -> None:
        async with httpx.AsyncClient(follow_redirects=True, max_redirects=max_redirects) as client:
            await OpenAIChat(url, MODEL, client=client).complete("q")

    with pytest.raises(ChatError) as info:
        asyncio.run(call())
    return info.value


def texts_of(exc: BaseException) -> list[str]:
    """Every text an error exposes: str, repr, attributes, args, its whole chain."""
    texts = ["".join(traceback.format_exception(exc))]
    pending: list[BaseException | None] = [exc]
    visited: set[int] = set()
    while pending:
        current = pending.pop()
        if current is None or id(current) in visited:
            continue
        visited.add(id(current))
        texts += [str(current), repr(current), repr(vars(current)), repr(current.args)]
        pending += [current.__cause__, current.__context__]
    return texts


def cause_type(exc: BaseException) -> type[BaseException] | None:
    """The type of what ``exc`` was raised from or during, or None when it stands alone."""
    cause = exc.__cause__ or exc.__context__
    return None if cause is None else type(cause)


class TestSuccess:
    def test_returns_the_content(self, provider):
        """A 200 envelope's choices[0].message.content is returned as is."""
        chat = OpenAIChat(provider.base_url("ok"), MODEL)

        assert ANSWER == asyncio.run(chat.complete("What ends the license?"))

    def test_request_body(self, provider):
        """The body holds the model, the prompt as one user message and stream false."""
        chat = OpenAIChat(provider.base_url("ok"), MODEL)

        asyncio.run(chat.complete("What ends the license?"))

        [seen] = provider.seen("ok")
        assert {
            "model": MODEL,
            "messages": [{"role": "user", "content": "What ends the license?"}],
            "stream": False,
        } == seen.body

    def test_sampling_options_sent_when_given(self, provider):
        """temperature and max_tokens appear in the body only when they were given."""
        chat = OpenAIChat(provider.base_url("ok"), MODEL, temperature=0.0, max_tokens=64)

        asyncio.run(chat.complete("q"))

        [seen] = provider.seen("ok")
        assert {"temperature": 0.0, "max_tokens": 64} == {
            k: seen.body[k] for k in ("temperature", "max_tokens")
        }

    def test_posts_to_chat_completions_under_the_base_url(self, provider):
        """The request goes to {base_url}/chat/completions, trailing slash or not."""
        asyncio.run(OpenAIChat(provider.base_url("ok") + "/", MODEL).complete("q"))
        asyncio.run(OpenAIChat(provider.base_url("ok"), MODEL).complete("q"))

        assert 2 == provider.count("ok")

    def test_no_authorization_without_a_key(self, provider):
        """Without a key the request carries no Authorization header at all."""
        asyncio.run(OpenAIChat(provider.base_url("ok"), MODEL).complete("q"))

        [seen] = provider.seen("ok")
        assert "authorization" not in seen.headers
        assert "application/json" == seen.headers["content-type"]

    def test_bearer_when_a_key_is_set(self, provider):
        """With a key the request carries Authorization: Bearer <key>."""
        asyncio.run(OpenAIChat(provider.base_url("ok"), MODEL, KEY).complete("q"))

        [seen] = provider.seen("ok")
        assert f"Bearer {KEY}" == seen.headers["authorization"]

    def test_lone_surrogate_in_the_prompt_is_sent(self, provider):
        """A prompt holding a lone surrogate is sent JSON-escaped instead of crashing."""
        asyncio.run(OpenAIChat(provider.base_url("ok"), MODEL).complete("a\ud800b"))

        [seen] = provider.seen("ok")
        assert [{"role": "user", "content": "a\ud800b"}] == seen.body["messages"]

    def test_identity(self, provider):
        """provider and model_name report who serves the model, as ChatModel requires."""
        chat = OpenAIChat(provider.base_url("ok"), MODEL)

        assert (PROVIDER, MODEL) == (chat.provider, chat.model_name)
        assert isinstance(chat, ChatModel)


class TestStatuses:
    @pytest.mark.parametrize("status", [400, 401, 404, 429, 500, 503])
    def test_error_status_after_one_request(self, provider, status):
        """An HTTP error status is a ChatError carrying that status, after one request."""
        scenario = f"status-{status}"

        error = fail(OpenAIChat(provider.base_url(scenario), MODEL))

        assert chat_error(status, f"the provider answered HTTP {status}") == facts(error)
        assert 1 == provider.count(scenario)

    def test_message_wording(self, provider):
        """The message names the provider, the model, the status and the fixed reason."""
        error = fail(OpenAIChat(provider.base_url("status-503"), MODEL))

        assert (
            "openai-compatible chat call to model 'test-model' failed "
            "(status 503, http_status, provider code server_error): "
            "the provider answered HTTP 503"
        ) == str(error)

    @pytest.mark.parametrize("status", [201, 204])
    def test_other_2xx_is_malformed(self, provider, status):
        """A 2xx other than 200 is not a completion: ChatError with that status."""
        scenario = f"status-{status}"

        error = fail(OpenAIChat(provider.base_url(scenario), MODEL))

        reason = f"the provider answered HTTP {status} where 200 was expected"
        assert chat_error(status, reason) == facts(error)
        assert 1 == provider.count(scenario)

    def test_redirect_is_not_followed(self, provider):
        """A redirect is a ChatError; the redirected-to URL never sees a request."""
        error = fail(OpenAIChat(provider.base_url("redirect"), MODEL))

        reason = "the provider answered HTTP 302, a redirect, which is not followed"
        assert chat_error(302, reason) == facts(error)
        assert (1, 0) == (provider.count("redirect"), provider.count("ok"))


class TestTransportFailures:
    def test_read_timeout_within_the_bound(self, provider):
        """A server slower than the read timeout gives a ChatError as soon as it expires."""
        chat = OpenAIChat(provider.base_url("slow"), MODEL, timeout=httpx.Timeout(0.3))

        started = time.monotonic()
        error = fail(chat)
        elapsed = time.monotonic() - started

        assert elapsed < 2.0
        assert chat_error(None, "timed out reading the response") == facts(error)
        # Not chained: a timeout's ``.request`` holds the bearer token and the prompt.
        assert cause_type(error) is None
        assert 1 == provider.count("slow")

    def test_timeout_while_reading_the_body(self, provider):
        """A body that stalls after a 200 times out too, and keeps the status it had."""
        chat = OpenAIChat(provider.base_url("stall-body"), MODEL, timeout=httpx.Timeout(0.3))

        started = time.monotonic()
        error = fail(chat)

        assert time.monotonic() - started < 2.0
        assert chat_error(200, "timed out reading the response") == facts(error)

    def test_refused_connection(self, closed_port):
        """Nothing listening is a ChatError with no status, and no httpx error chained."""
        chat = OpenAIChat(f"http://127.0.0.1:{closed_port}/v1", MODEL)

        error = fail(chat)

        assert chat_error(None, "could not connect") == facts(error)
        assert cause_type(error) is None

    def test_hang_up_without_a_response(self, provider):
        """A server that closes without answering gives one request and a ChatError."""
        error = fail(OpenAIChat(provider.base_url("hang-up"), MODEL))

        reason = "the HTTP exchange was malformed (RemoteProtocolError)"
        assert chat_error(None, reason) == facts(error)
        assert cause_type(error) is None
        assert 1 == provider.count("hang-up")

    def test_body_shorter_than_its_length(self, provider):
        """A body cut short of its Content-Length is a ChatError with status 200."""
        error = fail(OpenAIChat(provider.base_url("short-body"), MODEL))

        reason = "the HTTP exchange was malformed (RemoteProtocolError)"
        assert chat_error(200, reason) == facts(error)

    def test_undecodable_content_encoding(self, provider):
        """A body that fails its Content-Encoding is a ChatError with status 200."""
        error = fail(OpenAIChat(provider.base_url("bad-gzip"), MODEL))

        reason = "the transport failed (DecodingError)"
        assert chat_error(200, reason) == facts(error)
        assert cause_type(error) is None


class TestInjectedClientRedirects:
    """An injected client may follow redirects; what fails after one is still a ChatError."""

    def test_raw_errors_carry_the_provider_location(self, provider):
        """The checks below are not vacuous: the httpx errors themselves hold the canaries."""

        async def raw(scenario: str) -> httpx.RequestError:
            url = provider.base_url(scenario) + "/chat/completions"
            async with httpx.AsyncClient(follow_redirects=True, max_redirects=3) as client:
                with pytest.raises(httpx.RequestError) as info:
                    await client.post(url, json={})
            return info.value

        unsupported = asyncio.run(raw("redirect-scheme"))
        loop = asyncio.run(raw("redirect-loop"))

        assert httpx.UnsupportedProtocol is type(unsupported)
        assert SCHEME_CANARY in str(unsupported)
        assert CANARY.lower() in str(unsupported.request.url).lower()
        assert httpx.TooManyRedirects is type(loop)
        assert CANARY in str(loop.request.url)

    def test_redirect_to_an_unsupported_scheme(self, provider):
        """A Location with an unsupported scheme is a ChatError with no cause and no context."""
        error = fail_following_redirects(provider.base_url("redirect-scheme"))

        reason = "the transport failed (UnsupportedProtocol)"
        assert chat_error(None, reason) == facts(error)
        message = (
            f"{PROVIDER} chat call to model {MODEL!r} failed (no response, transport): {reason}"
        )
        assert message == str(error)
        assert (None, None) == (error.__cause__, error.__context__)
        assert 1 == provider.count("redirect-scheme")

    def test_redirect_loop(self, provider):
        """More redirects than the client allows is a ChatError, not a raw TooManyRedirects."""
        error = fail_following_redirects(provider.base_url("redirect-loop"), max_redirects=3)

        reason = "the provider redirected more times than the client allows (TooManyRedirects)"
        assert chat_error(None, reason) == facts(error)
        message = (
            f"{PROVIDER} chat call to model {MODEL!r} failed (no response, protocol): {reason}"
        )
        assert message == str(error)
        assert (None, None) == (error.__cause__, error.__context__)
        assert 4 == provider.count("redirect-loop")

    @pytest.mark.parametrize("scenario", ["redirect-scheme", "redirect-loop"])
    def test_provider_location_never_surfaces(self, provider, scenario):
        """Neither the scheme nor the URL of a provider's Location reaches the error or its chain."""
        error = fail_following_redirects(provider.base_url(scenario), max_redirects=3)

        for text in texts_of(error):
            assert SCHEME_CANARY not in text.lower()
            assert CANARY.lower() not in text.lower()


class TestMalformedEnvelopes:
    @pytest.mark.parametrize("scenario", sorted(MALFORMED_200))
    def test_malformed_200_after_one_request(self, provider, scenario):
        """A 200 whose body is not a usable envelope is a ChatError with status 200."""
        error = fail(OpenAIChat(provider.base_url(scenario), MODEL))

        assert chat_error(200, MALFORMED_200[scenario][1]) == facts(error)
        assert cause_type(error) is None
        assert 1 == provider.count(scenario)


class TestEnvelopeShapes:
    """Further envelope shapes, served by httpx.MockTransport through an injected client."""

    @staticmethod
    def complete_with(body: bytes) -> str:
        def handler(request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, content=body)

        async def call() -> str:
            transport = httpx.MockTransport(handler)
            async with httpx.AsyncClient(transport=transport) as client:
                return await OpenAIChat("http://provider.test/v1", MODEL, client=client).complete(
                    "q"
                )

        return asyncio.run(call())

    @pytest.mark.parametrize(
        ("body", "reason"),
        [
            (b"", "the response body is not valid JSON"),
            (b"\xff\xfe{", "the response body is not valid JSON"),
            (b"[" * 100_000, "the response body is not valid JSON"),
            (
                b'{"choices": [{"message": {"content": ' + b"9" * 5000 + b"}}]}",
                "the response body is not valid JSON",
            ),
            (b"null", "the response body is not a JSON object"),
            (b'"text"', "the response body is not a JSON object"),
            (b'{"choices": {"0": {}}}', "the response has no choices"),
            (b'{"choices": null}', "the response has no choices"),
            (b'{"choices": ["text"]}', "choices[0].message is missing or not an object"),
            (b'{"choices": [{"text": "x"}]}', "choices[0].message is missing or not an object"),
            (b'{"choices": [{"message": "x"}]}', "choices[0].message is missing or not an object"),
            (
                b'{"choices": [{"message": {"role": "assistant"}}]}',
                "choices[0].message.content is missing",
            ),
            (
                b'{"choices": [{"message": {"content": [{"type": "text", "text": "x"}]}}]}',
                "choices[0].message.content is not a string",
            ),
            (
                b'{"choices": [{"message": {"content": true}}]}',
                "choices[0].message.content is not a string",
            ),
        ],
        ids=[
            "empty",
            "not-utf8",
            "deeply-nested",
            "huge-integer",
            "null",
            "string",
            "choices-object",
            "choices-null",
            "choice-not-object",
            "message-missing",
            "message-string",
            "content-missing",
            "content-parts",
            "content-bool",
        ],
    )
    def test_shape_is_rejected(self, body, reason):
        """Each malformed envelope is a ChatError naming what is wrong, not the body."""
        with pytest.raises(ChatError) as info:
            self.complete_with(body)

        assert chat_error(200, reason) == facts(info.value)
        assert cause_type(info.value) is None

    def test_empty_string_content_is_returned(self):
        """An empty string is a string: judging blank answers is the caller's job."""
        assert "" == self.complete_with(b'{"choices": [{"message": {"content": ""}}]}')


class TestNoLeaks:
    def test_error_body_never_surfaces(self, provider, caplog):
        """A canary in provider bodies never reaches an error, its chain or a log record."""
        caplog.set_level(logging.DEBUG)
        errors = [
            fail(OpenAIChat(provider.base_url(scenario), MODEL))
            for scenario in ("status-400", "status-500", "not-json", "truncated", "array")
        ]

        assert 5 == len(errors)
        for error in errors:
            for text in texts_of(error):
                assert CANARY not in text
        # The capture is live (httpx logs each request), and no record holds the canary.
        assert any(record.name == "httpx" for record in caplog.records)
        for record in caplog.records:
            assert CANARY not in record.getMessage()
        assert CANARY not in caplog.text

    def test_canary_reaches_the_client(self, provider):
        """The check above is not vacuous: a plain client reading the body sees the canary."""
        url = provider.base_url("status-500") + "/chat/completions"

        assert CANARY in httpx.post(url, json={}).text

    def test_malformed_header_line_never_surfaces(self, provider):
        """A canary in an illegal header line, which h11 quotes, stays out of the chain."""
        error = fail(OpenAIChat(provider.base_url("bad-header"), MODEL))

        reason = "the HTTP exchange was malformed (RemoteProtocolError)"
        assert chat_error(None, reason) == facts(error)
        for text in texts_of(error):
            assert CANARY not in text

    def test_key_never_surfaces(self, provider, caplog):
        """The API key stays out of repr, errors and DEBUG log records."""
        caplog.set_level(logging.DEBUG)
        chat = OpenAIChat(provider.base_url("status-401"), MODEL, KEY)

        error = fail(chat)
        asyncio.run(OpenAIChat(provider.base_url("ok"), MODEL, KEY).complete("q"))

        assert f"Bearer {KEY}" == provider.seen("status-401")[0].headers["authorization"]
        assert KEY not in repr(chat)
        for text in texts_of(error):
            assert KEY not in text
        assert caplog.records
        for record in caplog.records:
            assert KEY not in record.getMessage()
        assert KEY not in caplog.text

    def test_repr(self, provider):
        """repr shows the base URL and the model, the key only as set, no URL password."""
        base = provider.base_url("ok").replace("http://", f"http://user:{CANARY}@")

        assert (
            f"OpenAIChat(base_url={provider.base_url('ok')!r}, model='test-model', api_key='***')"
        ) == repr(OpenAIChat(base, MODEL, KEY))
        assert (
            f"OpenAIChat(base_url={provider.base_url('ok')!r}, model='test-model', api_key=None)"
        ) == repr(OpenAIChat(provider.base_url("ok"), MODEL))

    def test_malformed_key_is_rejected_without_echo(self):
        """A key with a line break is a ValueError whose message does not quote it."""
        with pytest.raises(ValueError, match="api_key must be visible ASCII") as info:
            OpenAIChat("http://127.0.0.1:1/v1", MODEL, KEY + "\n")

        assert KEY not in str(info.value)


class TestConfiguration:
    def test_environment(self, provider, monkeypatch):
        """With no arguments, base URL, model and key come from CITEMARK_* variables."""
        monkeypatch.setenv("CITEMARK_BASE_URL", provider.base_url("ok"))
        monkeypatch.setenv("CITEMARK_MODEL", "env-model")
        monkeypatch.setenv("CITEMARK_API_KEY", "env-key")

        chat = OpenAIChat()
        asyncio.run(chat.complete("q"))

        [seen] = provider.seen("ok")
        assert ("env-model", "env-model", "Bearer env-key") == (
            chat.model_name,
            seen.body["model"],
            seen.headers["authorization"],
        )

    def test_arguments_win(self, provider, monkeypatch):
        """Arguments override every CITEMARK_* variable."""
        monkeypatch.setenv("CITEMARK_BASE_URL", provider.base_url("status-500"))
        monkeypatch.setenv("CITEMARK_MODEL", "env-model")
        monkeypatch.setenv("CITEMARK_API_KEY", "env-key")

        chat = OpenAIChat(provider.base_url("ok"), "arg-model", "arg-key")
        asyncio.run(chat.complete("q"))

        [seen] = provider.seen("ok")
        assert ("arg-model", "Bearer arg-key") == (
            seen.body["model"],
            seen.headers["authorization"],
        )
        assert 0 == provider.count("status-500")

    def test_empty_key_argument_sends_no_key(self, provider, monkeypatch):
        """api_key="" sends no Authorization even when CITEMARK_API_KEY is set."""
        monkeypatch.setenv("CITEMARK_API_KEY", "env-key")

        asyncio.run(OpenAIChat(provider.base_url("ok"), MODEL, "").complete("q"))

        [seen] = provider.seen("ok")
        assert "authorization" not in seen.headers

    def test_environment_read_at_construction(self, provider, monkeypatch):
        """Changing the environment after construction does not change the instance."""
        monkeypatch.setenv("CITEMARK_BASE_URL", provider.base_url("ok"))
        monkeypatch.setenv("CITEMARK_MODEL", "env-model")
        chat = OpenAIChat()
        monkeypatch.setenv("CITEMARK_BASE_URL", provider.base_url("status-500"))

        asyncio.run(chat.complete("q"))

        assert (1, 0) == (provider.count("ok"), provider.count("status-500"))

    def test_missing_base_url(self):
        """No base URL anywhere is a ValueError naming the argument and the variable."""
        with pytest.raises(
            ValueError, match=r"^base_url is required: pass base_url= or set CITEMARK_BASE_URL$"
        ):
            OpenAIChat(model=MODEL)

    def test_missing_model(self):
        """No model anywhere is a ValueError naming the argument and the variable."""
        with pytest.raises(
            ValueError, match=r"^model is required: pass model= or set CITEMARK_MODEL$"
        ):
            OpenAIChat("http://127.0.0.1:1/v1")

    @pytest.mark.parametrize(
        "base_url",
        ["localhost:11434/v1", "ftp://127.0.0.1/v1", "http:///v1", "http://127.0.0.1:99999/v1"],
    )
    def test_unusable_base_url(self, base_url):
        """A base URL that is not http(s) with a host and a valid port is a ValueError."""
        with pytest.raises(ValueError, match="base_url"):
            OpenAIChat(base_url, MODEL)

    def test_default_timeout(self):
        """By default every phase is bounded: connect 5 s, read 120 s, write 30 s, pool 10 s."""
        default = inspect.signature(OpenAIChat).parameters["timeout"].default

        assert httpx.Timeout(connect=5.0, read=120.0, write=30.0, pool=10.0) == default

    @pytest.mark.parametrize(
        "timeout",
        [httpx.Timeout(None), httpx.Timeout(5.0, read=None), 0, -1.0, float("nan"), float("inf")],
        ids=["none", "read-none", "zero", "negative", "nan", "inf"],
    )
    def test_unbounded_timeout_is_rejected(self, timeout):
        """A timeout must bound every phase with a positive, finite number."""
        with pytest.raises(ValueError, match="timeout must bound every phase"):
            OpenAIChat("http://127.0.0.1:1/v1", MODEL, timeout=timeout)

    @pytest.mark.parametrize(
        ("options", "match"),
        [
            ({"temperature": float("nan")}, "temperature must be a finite number"),
            ({"max_tokens": 0}, "max_tokens must be a positive integer"),
            ({"max_tokens": True}, "max_tokens must be a positive integer"),
        ],
        ids=["temperature-nan", "max-tokens-zero", "max-tokens-bool"],
    )
    def test_bad_sampling_options(self, options, match):
        """Sampling options that would send invalid JSON or nonsense are ValueErrors."""
        with pytest.raises(ValueError, match=match):
            OpenAIChat("http://127.0.0.1:1/v1", MODEL, **options)


class TestClientLifecycle:
    def test_two_asyncio_runs(self, provider, monkeypatch):
        """Two asyncio.run calls in a row each get a fresh client, and nothing leaks."""
        unraisable = []
        monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
        chat = OpenAIChat(provider.base_url("ok"), MODEL)

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            first = asyncio.run(chat.complete("one"))
            second = asyncio.run(chat.complete("two"))
            del chat
            gc.collect()

        assert (ANSWER, ANSWER) == (first, second)
        first_seen, second_seen = provider.seen("ok")
        assert first_seen.port != second_seen.port
        assert ([], []) == ([str(w.message) for w in caught], unraisable)

    def test_leak_check_catches_a_reused_client(self, provider, monkeypatch):
        """The check above is not vacuous: a bare client reused across loops leaks a socket."""
        unraisable = []
        monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
        url = provider.base_url("ok") + "/chat/completions"
        client = httpx.AsyncClient()

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            asyncio.run(client.post(url, json={}))
            del client
            gc.collect()

        assert any(issubclass(w.category, ResourceWarning) for w in caught) or unraisable

    def test_same_loop_reuses_the_client(self, provider):
        """Calls on one event loop share the owned client and its connection."""
        chat = OpenAIChat(provider.base_url("ok"), MODEL)

        async def twice() -> None:
            async with chat:
                await chat.complete("one")
                await chat.complete("two")

        asyncio.run(twice())

        first, second = provider.seen("ok")
        assert first.port == second.port

    def test_concurrent_calls(self, provider):
        """Concurrent calls on one loop each make exactly one request and all succeed."""
        chat = OpenAIChat(provider.base_url("ok"), MODEL)

        async def many() -> list[str]:
            async with chat:
                return await asyncio.gather(*(chat.complete(str(i)) for i in range(8)))

        assert [ANSWER] * 8 == asyncio.run(many())
        assert 8 == provider.count("ok")

    def test_usable_after_aclose(self, provider):
        """aclose releases the owned client; a later call on the same loop opens a new one."""
        chat = OpenAIChat(provider.base_url("ok"), MODEL)

        async def around_close() -> None:
            await chat.complete("one")
            await chat.aclose()
            await chat.complete("two")
            await chat.aclose()

        asyncio.run(around_close())

        first, second = provider.seen("ok")
        assert first.port != second.port

    def test_injected_client_is_used_and_left_open(self, provider):
        """An injected client sends the request and is still open after the chat closes."""

        async def use() -> bool:
            async with httpx.AsyncClient(headers={"X-Injected": "yes"}) as client:
                async with OpenAIChat(provider.base_url("ok"), MODEL, client=client) as chat:
                    await chat.complete("q")
                still_open = not client.is_closed
                await client.post(provider.base_url("ok") + "/chat/completions", json={})
                return still_open

        assert asyncio.run(use())
        first, _ = provider.seen("ok")
        assert "yes" == first.headers["x-injected"]
        assert 2 == provider.count("ok")

    def test_injected_client_keeps_its_timeout(self, provider):
        """Without an explicit timeout, the injected client's own timeout applies."""

        async def call() -> None:
            async with httpx.AsyncClient(timeout=0.3) as client:
                await OpenAIChat(provider.base_url("slow"), MODEL, client=client).complete("q")

        started = time.monotonic()
        with pytest.raises(ChatError) as info:
            asyncio.run(call())

        assert time.monotonic() - started < 2.0
        assert chat_error(None, "timed out reading the response") == facts(info.value)

    def test_explicit_timeout_overrides_the_injected_client(self, provider):
        """An explicit timeout applies to each request even through an injected client."""

        async def call() -> None:
            async with httpx.AsyncClient(timeout=30.0) as client:
                chat = OpenAIChat(provider.base_url("slow"), MODEL, client=client, timeout=0.3)
                await chat.complete("q")

        started = time.monotonic()
        with pytest.raises(ChatError):
            asyncio.run(call())

        assert time.monotonic() - started < 2.0


class TestConnectionsAndTls:
    """What a call costs beneath the request: connections opened, TLS contexts built."""

    def test_sequential_calls_reuse_one_connection(self, provider):
        """Calls one after another on a loop travel on one kept-alive connection."""
        chat = OpenAIChat(provider.base_url("ok"), MODEL)

        async def calls() -> None:
            async with chat:
                for n in range(6):
                    await chat.complete(f"q{n}")

        asyncio.run(calls())

        assert 1 == len({seen.port for seen in provider.seen("ok")})

    def test_concurrent_calls_open_one_connection_per_call_in_flight(self, provider):
        """Waves of 8 concurrent calls open at most 8 connections in all, kept between waves."""
        chat = OpenAIChat(provider.base_url("ok"), MODEL)

        async def waves() -> None:
            async with chat:
                for wave in range(3):
                    await asyncio.gather(*(chat.complete(f"{wave}-{n}") for n in range(8)))

        asyncio.run(waves())

        assert 24 == provider.count("ok")
        assert len({seen.port for seen in provider.seen("ok")}) <= 8

    def test_a_pooled_request_carries_the_headers_a_client_would_merge(self, provider):
        """Built without `build_request`, a request still sends what httpx's clients send."""
        asyncio.run(OpenAIChat(provider.base_url("ok"), MODEL, KEY).complete("q"))

        [seen] = provider.seen("ok")
        port = provider.root.rsplit(":", 1)[1]
        assert {
            "host": f"127.0.0.1:{port}",
            "accept": "application/json",
            "accept-encoding": "gzip, deflate",
            "connection": "keep-alive",
            "user-agent": f"python-httpx/{httpx.__version__}",
            "content-type": "application/json",
            "authorization": f"Bearer {KEY}",
        } == {name: value for name, value in seen.headers.items() if name != "content-length"}
        assert int(seen.headers["content-length"]) > 0

    def test_an_http_endpoint_loads_no_certificate_store(self, provider, monkeypatch):
        """Calls to an http:// URL, each on its own loop, never build a verifying context."""
        from citemark._model import chat as _chat

        built = count_tls_contexts(monkeypatch)
        monkeypatch.setattr(_chat, "_TLS", {}, raising=False)  # a fresh process cache
        chat = OpenAIChat(provider.base_url("ok"), MODEL)

        for n in range(3):
            asyncio.run(chat.complete(f"q{n}"))

        assert (3, 0) == (provider.count("ok"), len(built))

    def test_an_https_endpoint_builds_its_context_once_per_process(self, closed_port, monkeypatch):
        """A sync wrapper's calls (one asyncio.run each) share one verifying context."""
        from citemark._model import chat as _chat

        built = count_tls_contexts(monkeypatch)
        monkeypatch.setattr(_chat, "_TLS", {}, raising=False)  # a fresh process cache
        chat = OpenAIChat(f"https://127.0.0.1:{closed_port}/v1", MODEL)

        reasons = [fail(chat).reason for _ in range(3)]

        assert (["connect"] * 3, 1) == (reasons, len(built))

    def test_the_context_of_an_http_endpoint_trusts_nothing(self):
        """The context an http:// pool hands httpx would refuse every certificate."""
        import ssl

        from citemark._model.chat import _tls_context

        closed = _tls_context(verified=False)

        assert closed is _tls_context(verified=False)
        assert (ssl.CERT_REQUIRED, True) == (closed.verify_mode, closed.check_hostname)
        assert 0 == closed.cert_store_stats()["x509_ca"]


def count_tls_contexts(monkeypatch) -> list[None]:
    """Record each call of httpx's `create_ssl_context`, which still runs as is."""
    built: list[None] = []
    real = httpx.create_ssl_context

    def counted(*args, **kwargs):
        built.append(None)
        return real(*args, **kwargs)

    monkeypatch.setattr(httpx, "create_ssl_context", counted)
    return built
