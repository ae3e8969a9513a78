"""The chat seam: the one place citemark talks to a model.

`ChatModel` is a protocol of three members, so anything with a provider name, a
model name and an async ``complete(prompt) -> str`` can stand behind synthesis, query
rewriting, the judge and the echo check: `OpenAIChat` for any OpenAI-compatible
endpoint, `citemark.testing.ScriptedChat` in tests, and the adapters' bridges for
LangChain and LlamaIndex models. The protocol and `Completion` are defined in
`citemark._model.completion`, which loads no httpx, so a module that only types against
the seam (the scorer, the judge) keeps ``citemark check`` without a judge off the
HTTP client; they are re-exported here.

Each call is exactly one request. There is no retry layer anywhere: a failure is a
`ChatError` carrying the provider, the model and the HTTP status, never the body.
httpx's exceptions are translated in one place, `_post_once`, the way httpx's own
``map_httpcore_exceptions`` translates httpcore's.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import math
import os
import re
import ssl
import urllib.request
import weakref
import zlib
from typing import TYPE_CHECKING, Final, Self

import httpx

from citemark._contract.errors import ChatConfigError, ChatError
from citemark._model.completion import (
    DEFAULT_MAX_REPLY_BYTES,
    MACHINE_CODE,
    ChatModel,
    Completion,
    finish_reason_of,
    is_truncated,
)

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator
    from types import TracebackType

# The protocol and the completion live in `citemark._model.completion`, which loads no
# httpx; they are re-exported here, the chat seam's historical home.
__all__ = [
    "DEFAULT_MAX_REPLY_BYTES",
    "ChatModel",
    "Completion",
    "OpenAIChat",
    "finish_reason_of",
    "is_truncated",
]

_PROVIDER: Final = "openai-compatible"
_BASE_URL_ENV: Final = "CITEMARK_BASE_URL"
_MODEL_ENV: Final = "CITEMARK_MODEL"
_API_KEY_ENV: Final = "CITEMARK_API_KEY"

# Bounded in every phase. The read bound is long because a local model on a CPU can
# take minutes to produce a long answer; the others only cover the network.
_DEFAULT_TIMEOUT: Final = httpx.Timeout(connect=5.0, read=120.0, write=30.0, pool=10.0)

# The whole call (connect, send, read, decode) is bounded too, on by default: a
# server that trickles one byte at a time never trips the per-read bound above.
_DEFAULT_DEADLINE: Final = 300.0

# Only these codings are asked for, and decoded here (bounded) rather than by httpx.
_ACCEPT_ENCODING: Final = "gzip, deflate"

# Visible ASCII only: h11 quotes an illegal header value in its exception message,
# so a key with a newline or a space would otherwise reach an error text.
_API_KEY_SHAPE: Final = re.compile(r"[\x21-\x7e]+")

_MAX_PORT: Final = 65535

# What httpx's own clients send, which a request built without one must name itself.
_USER_AGENT: Final = f"python-httpx/{httpx.__version__}"

# How much of an error status's body is read to find its machine code.
_ERROR_BODY_LIMIT: Final = 16 * 1024

# Stands for a body that did not decode; JSON itself can decode to None.
_NOT_JSON: Final = object()


class OpenAIChat:
    """A `ChatModel` for any OpenAI-compatible ``/chat/completions`` endpoint.

    Works with OpenAI, Ollama, vLLM, the llama.cpp server and LiteLLM. Each
    `complete` call sends exactly one non-streaming ``POST
    {base_url}/chat/completions`` with the prompt as a single user message, and
    nothing retries it: not citemark, and not the transport, because a client
    citemark creates uses ``httpx.AsyncHTTPTransport(retries=0)``. A failure is a
    `ChatError` after that one request.

    Configuration comes from the arguments, else from the environment variables
    ``CITEMARK_BASE_URL``, ``CITEMARK_MODEL`` and ``CITEMARK_API_KEY``, read once,
    here. ``Authorization: Bearer <key>`` is sent only when a key is set, and the
    key never appears in `repr`, in an error or in a log record.

    Without ``client``, the instance creates its own ``httpx.AsyncClient``s on
    first use, one per call in flight, each holding a single connection (measured
    faster than one shared client; see ``_ClientPool``), and reuses them for calls
    on the same event loop. Called from another event loop (a sync wrapper calls
    ``asyncio.run`` once per call), it creates fresh ones, since an httpx client
    must not cross event loops; the old ones are closed when their loop shuts down
    through ``asyncio.run`` (or ``asyncio.Runner``). Call `aclose`, or use
    ``async with``, to release connections earlier; close the instance before
    closing an event loop you manage by hand.

    Args:
        base_url: The OpenAI-style base URL, which already includes ``/v1``, e.g.
            ``http://localhost:11434/v1``. Defaults to ``CITEMARK_BASE_URL``.

        model: The model name sent with each request. Defaults to
            ``CITEMARK_MODEL``.

        api_key: The bearer token. Defaults to ``CITEMARK_API_KEY``; pass ``""``
            to send no key even when that variable is set.

        timeout: A number bounds the whole call: connecting, sending, reading
            and decoding together finish within that many seconds (and each phase
            within it too). An ``httpx.Timeout`` sets the phases separately, and
            the whole call is then bounded by ``deadline``. The default is 5 s to
            connect, 120 s to read, 30 s to write, 10 s to wait for a pooled
            connection and 300 s for the whole call. Every phase must be bounded.
            With ``client``, the client's own phase bounds apply unless this is
            given; the deadline applies either way.

        deadline: Seconds the whole call may take, overriding what ``timeout``
            implies. A call past it is a `ChatError` with reason ``"deadline"``.

        max_reply_bytes: The most bytes the response body may have once decoded
            (default 8 MiB). The body is decoded while it is read, so a
            compressed body that would inflate past the cap, or an endless one,
            is refused as soon as it crosses it: a `ChatError` with reason
            ``"reply_too_large"``. Only ``gzip`` and ``deflate`` are accepted as
            content codings.

        client: An ``httpx.AsyncClient`` to send requests with. It is used as is
            (its transport, retries, headers and redirect policy are the
            caller's) and is never closed by this instance.

        temperature: Sent as ``temperature`` when given.

        max_tokens: Sent as ``max_tokens`` when given. A reply cut off at this
            limit comes back with ``finish_reason == "length"`` (see `Completion`):
            synthesis rejects it and the scorer leaves the row un-assessed.

        seed: Sent as ``seed`` when given, for endpoints that sample reproducibly.

    Raises:
        ChatConfigError: the base URL or the model is missing from both the arguments
            and the environment, the base URL is not an ``http(s)`` URL, the key
            holds characters other than visible ASCII, a timeout is unbounded or
            not positive, ``temperature`` is not finite, or ``max_tokens`` or
            ``seed`` is not an integer (``max_tokens`` a positive one).
    """

    def __init__(  # noqa: PLR0913 - the OpenAI options are keyword-only past three
        self,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | httpx.Timeout = _DEFAULT_TIMEOUT,
        client: httpx.AsyncClient | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        deadline: float | None = None,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
    ) -> None:
        base = base_url if base_url is not None else os.environ.get(_BASE_URL_ENV, "")
        if not base:
            msg = f"base_url is required: pass base_url= or set {_BASE_URL_ENV}"
            raise ChatConfigError(msg)
        name = model if model is not None else os.environ.get(_MODEL_ENV, "")
        if not name:
            msg = f"model is required: pass model= or set {_MODEL_ENV}"
            raise ChatConfigError(msg)
        key = api_key if api_key is not None else os.environ.get(_API_KEY_ENV, "")
        if key and not _API_KEY_SHAPE.fullmatch(key):
            # The key itself is never echoed, not even in part.
            msg = "api_key must be visible ASCII characters, without spaces or line breaks"
            raise ChatConfigError(msg)

        self._base_url = _parse_base_url(base)
        self._url = self._base_url.copy_with(
            path=self._base_url.path.rstrip("/") + "/chat/completions"
        )
        self._model = name
        self._options = _sampling_options(temperature, max_tokens) | _seed_option(seed)
        self._headers = {
            "Accept": "application/json",
            "Accept-Encoding": _ACCEPT_ENCODING,
            "Content-Type": "application/json",
        }
        if key:
            self._headers["Authorization"] = f"Bearer {key}"
        self._timeout = _bounded_timeout(timeout)
        # An injected client keeps its own timeout unless one was passed explicitly.
        self._request_timeout: httpx.Timeout | None = (
            None if client is not None and timeout is _DEFAULT_TIMEOUT else self._timeout
        )
        self._deadline = _total_deadline(timeout, deadline)
        self._max_reply_bytes = _reply_cap(max_reply_bytes)
        # What an owned client's request carries, computed once: the headers a
        # client's `build_request` would merge (httpx's defaults under ours) and
        # the phase bounds as the transport reads them.
        self._owned_headers = httpx.Headers(
            {
                "User-Agent": _USER_AGENT,
                "Connection": "keep-alive",
                **self._headers,
            }
        )
        self._owned_extensions = {"timeout": self._timeout.as_dict()}
        # Read here, once, as httpx reads them for a client it builds itself: a
        # client built with an explicit transport (as the pool's are) skips them.
        self._proxy = _environment_proxy(self._base_url)
        self._injected = client
        self._owned: _ClientPool | None = None
        self._owned_loop: weakref.ref[asyncio.AbstractEventLoop] | None = None
        self._closer: AsyncGenerator[None, None] | None = None

    @property
    def provider(self) -> str:
        """Always ``"openai-compatible"``."""
        return _PROVIDER

    @property
    def model_name(self) -> str:
        """The model name sent with each request."""
        return self._model

    def __repr__(self) -> str:
        # Credentials stay out: the key is shown only as set or not, and any
        # user:password part of the base URL is dropped.
        shown_url = str(self._base_url.copy_with(userinfo=b""))
        key = "'***'" if "Authorization" in self._headers else "None"
        return f"OpenAIChat(base_url={shown_url!r}, model={self._model!r}, api_key={key})"

    def __reduce_ex__(self, protocol: object) -> tuple[object, ...]:
        """Refuse to be pickled or copied: the state holds the API key in clear.

        Raises:
            TypeError: always; build a new instance where one is needed.
        """
        msg = "OpenAIChat cannot be pickled or copied: it holds an API key; build a new one"
        raise TypeError(msg)

    async def complete(self, prompt: str) -> Completion:
        """Send ``prompt`` as one user message and return the reply's content.

        Args:
            prompt: The whole prompt, sent as the content of one ``user`` message.

        Returns:
            ``choices[0].message.content`` of the provider's reply, as is, as a
            `Completion` carrying ``choices[0].finish_reason``.

        Raises:
            ChatError: the one request failed: no connection, a timeout, an HTTP
                status other than 200, a body that is not JSON, or an envelope
                without a string at ``choices[0].message.content``. ``status`` is
                the HTTP status, or ``None`` when no response arrived; ``reason``
                is a stable code (see `citemark.ChatError`).
        """
        if self._injected is not None:
            client = self._injected
            # The caller's client merges its own headers, cookies and auth in.
            request = client.build_request(
                "POST",
                self._url,
                content=self._body(prompt),
                headers=self._headers,
                timeout=client.timeout if self._request_timeout is None else self._request_timeout,
            )
            return await self._send(client, request)
        pool = await self._pool()
        client = pool.acquire()
        try:
            # A client of the pool has nothing of its own to merge in (no cookies,
            # auth or default headers past httpx's), so the request is built whole
            # here: `build_request`'s merging cost more than the rest of a call.
            request = httpx.Request(
                "POST",
                self._url,
                content=self._body(prompt),
                headers=self._owned_headers,
                extensions=self._owned_extensions,
            )
            return await self._send(client, request)
        finally:
            pool.release(client)

    def _body(self, prompt: str) -> bytes:
        body = {
            "model": self._model,
            "messages": [{"role": "user", "content": prompt}],
            "stream": False,
            **self._options,
        }
        # Serialized here rather than with httpx's ``json=``: ASCII escapes keep a
        # prompt holding a lone surrogate encodable instead of crashing the encoder.
        return json.dumps(body).encode("ascii")

    async def _send(self, client: httpx.AsyncClient, request: httpx.Request) -> Completion:
        content = await _post_within(
            client, request, self._model, self._deadline, self._max_reply_bytes
        )
        return _completion_text(content, self._model)

    async def aclose(self) -> None:
        """Close the clients this instance created, if any; an injected one stays open.

        The instance stays usable: a later call creates a fresh client.
        """
        closer, owned_loop = self._closer, self._owned_loop
        self._owned = self._owned_loop = self._closer = None
        # A client is closed on its own loop only. One left on another loop is
        # closed when that loop shuts down its async generators.
        if (
            closer is not None
            and owned_loop is not None
            and owned_loop() is asyncio.get_running_loop()
        ):
            await closer.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _pool(self) -> _ClientPool:
        """The pool of clients this instance owns on the running loop."""
        loop = asyncio.get_running_loop()
        if self._owned is not None and self._owned_loop is not None and self._owned_loop() is loop:
            return self._owned
        pool = _ClientPool(self._timeout, self._proxy, tls=self._base_url.scheme == "https")
        # Set before the first await, so concurrent first calls share one pool.
        self._owned, self._owned_loop = pool, weakref.ref(loop)
        # Started here, this async generator is registered with the running loop,
        # and ``asyncio.run`` closes it (running its ``finally``) before it closes
        # the loop. Without it, a sync wrapper's ``asyncio.run`` would leave the
        # clients' keep-alive sockets open on a closed loop.
        self._closer = _close_at_loop_shutdown(pool)
        await anext(self._closer)
        return pool


class _ClientPool:
    """httpx clients of one connection each, lent to one call at a time.

    Measured here (bench/scorer.py, 32 concurrent calls against a loopback server
    with 50 ms latency): one client per in-flight call, each with a single
    connection, is about 15% faster than one shared client with 32 connections,
    whose connection-pool bookkeeping dominates its cost. A pool sized to the
    concurrency inside one client was slower still. As many clients exist as the
    most calls ever in flight at once; each keeps at most one connection alive.
    """

    def __init__(self, timeout: httpx.Timeout, proxy: str | None = None, *, tls: bool) -> None:
        self._timeout = timeout
        self._proxy = proxy
        self._tls = tls
        self._free: list[httpx.AsyncClient] = []
        self._all: list[httpx.AsyncClient] = []

    def acquire(self) -> httpx.AsyncClient:
        if self._free:
            return self._free.pop()
        client = httpx.AsyncClient(
            transport=httpx.AsyncHTTPTransport(
                verify=_tls_context(verified=self._tls),
                proxy=self._proxy,
                retries=0,
                limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
            ),
            timeout=self._timeout,
        )
        self._all.append(client)
        return client

    def release(self, client: httpx.AsyncClient) -> None:
        self._free.append(client)

    async def aclose(self) -> None:
        clients, self._all, self._free = self._all, [], []
        for client in clients:
            await client.aclose()


_TLS: dict[bool, ssl.SSLContext] = {}  # by "verified": each built once per process, on first need


def _tls_context(*, verified: bool) -> ssl.SSLContext:
    """The TLS context of a pool's clients.

    For an ``https://`` endpoint, httpx's verifying context (certifi's roots, or
    ``SSL_CERT_FILE``/``SSL_CERT_DIR`` as read on first use), built once per process
    and shared: building one loads the whole root store, about 25 to 100 ms, which
    a sync wrapper would otherwise pay on every call (each ``asyncio.run`` gets a
    fresh pool). An ``http://`` endpoint never opens TLS (the pool's clients only
    ever reach it, and a proxy's TLS has a context of its own), yet httpx's
    transport wants a context: it gets one that trusts no certificate at all, so
    any use would fail closed. Both are shared: even an empty context costs a few
    milliseconds to build, and a pool builds a client per call in flight.
    """
    context = _TLS.get(verified)
    if context is None:
        context = (
            httpx.create_ssl_context() if verified else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        )
        _TLS[verified] = context
    return context


async def _post_within(
    client: httpx.AsyncClient,
    request: httpx.Request,
    model: str,
    deadline: float,
    max_bytes: int,
) -> bytes:
    """`_post_once` under one deadline for the whole exchange, decoding included.

    The expiry is raised outside the handler, so the ``TimeoutError`` (and the
    cancellation inside it) is neither the cause nor the context.
    """
    exchange = _Exchange()
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(deadline):
            return await _post_once(client, request, model, max_bytes, exchange)
    raise ChatError(
        "the call ran past its deadline",
        provider=_PROVIDER,
        model=model,
        status=exchange.status,
        reason="deadline",
    )


# What each refusal of a reply's body says: too large once decoded, or undecodable.
_BODY_REFUSALS: Final = {
    "reply_too_large": "the decoded reply grew past max_reply_bytes",
    "transport": "the transport failed (DecodingError)",  # what httpx's own failure says
}


def _refused_body(model: str, status: int, reason: str) -> ChatError:
    """The refusal of a reply body, ``reason`` one of `_BODY_REFUSALS`."""
    return ChatError(
        _BODY_REFUSALS[reason], provider=_PROVIDER, model=model, status=status, reason=reason
    )


class _Exchange:
    """What one exchange has got so far: the status, once the head has arrived."""

    __slots__ = ("status",)

    def __init__(self) -> None:
        self.status: int | None = None


async def _post_once(
    client: httpx.AsyncClient,
    request: httpx.Request,
    model: str,
    max_bytes: int = DEFAULT_MAX_REPLY_BYTES,
    exchange: _Exchange | None = None,
) -> bytes:
    """Send the one request and return the body of a 200; anything else is `ChatError`.

    The only place an httpx exception is caught, shaped like httpx's own
    ``map_httpcore_exceptions``. Reasons are fixed strings. The response is streamed
    so that the body of an error status is never read at all.

    No cause is chained, and every `ChatError` is raised outside the handler, so no
    httpx exception is reachable as its context either: even a timeout's holds the
    request in ``.request``, with the bearer token and the prompt. Besides, h11
    quotes the offending status or
    header line in a protocol error, a proxy error quotes the proxy's reason phrase,
    and with an injected client that follows redirects an ``UnsupportedProtocol``
    quotes the scheme of the provider's ``Location`` (and holds its URL in
    ``.request``). Such an error is raised after its handler has ended, so it is
    not the ``__context__`` either.

    ``httpx.RequestError`` is caught as the last branch, so a request failure httpx
    adds or a branch above misses (``TooManyRedirects``, ``DecodingError``) is still
    a `ChatError`; nothing broader is, so a bug in citemark stays a traceback.
    """
    status: int | None = None
    try:
        response = await client.send(request, stream=True)
        status = response.status_code
        if exchange is not None:
            exchange.status = status
        try:
            if status != httpx.codes.OK:
                raise await _status_error(response, request, model)
            return await _read_bounded(response, max_bytes, model)
        finally:
            await response.aclose()
    except httpx.TimeoutException as exc:
        reason, code = _TIMEOUT_REASONS.get(type(exc), "timed out"), "timeout"
    except httpx.ConnectError:
        reason, code = "could not connect", "connect"
    except (httpx.ProtocolError, httpx.ProxyError) as exc:
        reason, code = f"the HTTP exchange was malformed ({type(exc).__name__})", "protocol"
    except httpx.TooManyRedirects:
        reason = "the provider redirected more times than the client allows (TooManyRedirects)"
        code = "protocol"
    except httpx.RequestError as exc:
        reason, code = f"the transport failed ({type(exc).__name__})", "transport"
    # Outside every handler: no cause and no context (see above).
    raise ChatError(reason, provider=_PROVIDER, model=model, status=status, reason=code)


_TIMEOUT_REASONS: Final[dict[type[httpx.TimeoutException], str]] = {
    httpx.ConnectTimeout: "timed out connecting",
    httpx.ReadTimeout: "timed out reading the response",
    httpx.WriteTimeout: "timed out sending the request",
    httpx.PoolTimeout: "timed out waiting for a free connection in the client's pool",
}


async def _status_error(response: httpx.Response, request: httpx.Request, model: str) -> ChatError:
    """The `ChatError` for a status other than 200: reason ``http_status``.

    It carries the provider's machine code when the body has one (see
    `_provider_error_code`), and for a 404 on a base URL whose path does not end in
    ``/v1`` its detail says to add it.
    """
    status = response.status_code
    detail = _status_reason(status)
    if status == httpx.codes.NOT_FOUND and _lacks_v1(request.url):
        detail += (
            "; the base URL's path does not end in /v1, and OpenAI-compatible servers "
            "serve /v1/chat/completions: try adding /v1 to the base URL"
        )
    code = await _provider_error_code(response)
    return ChatError(
        detail,
        provider=_PROVIDER,
        model=model,
        status=status,
        reason="http_status",
        provider_code=code,
    )


def _lacks_v1(url: httpx.URL) -> bool:
    """Whether the path before ``/chat/completions`` does not end in ``/v1``."""
    base = url.path.removesuffix("/chat/completions")
    return not base.rstrip("/").endswith("/v1")


async def _provider_error_code(response: httpx.Response) -> str | None:
    """The machine code of an OpenAI-style error body, or None; never its message.

    Reads at most ``_ERROR_BODY_LIMIT`` bytes of decoded text, inflated in the same
    bounded steps as a reply (`_decode_bounded`), so a compressed error body costs
    no more than that to refuse. A longer body, one that does not arrive or decode,
    or one that is not a JSON object with ``error.code`` or ``error.type`` matching
    ``^[a-z0-9_.-]{1,64}$`` gives None. ``code`` is preferred over ``type``: it is
    the more specific (``context_length_exceeded`` against
    ``invalid_request_error``). Nothing raised while reading is kept, not even as a
    context: the error is raised by the caller after this returns.
    """
    try:
        body, refusal = await _decode_bounded(response, _ERROR_BODY_LIMIT)
    except (httpx.HTTPError, httpx.StreamError):
        return None
    if refusal is not None:
        return None
    try:
        envelope = json.loads(body)
    except (ValueError, RecursionError):
        return None
    return _error_code_in(envelope)


def _error_code_in(envelope: object) -> str | None:
    """``error.code`` or ``error.type`` of a decoded error body, when a short machine code."""
    error = envelope.get("error") if isinstance(envelope, dict) else None
    if not isinstance(error, dict):
        return None
    for key in ("code", "type"):
        value = error.get(key)
        if isinstance(value, str) and MACHINE_CODE.fullmatch(value):
            return value
    return None


async def _read_bounded(response: httpx.Response, max_bytes: int, model: str) -> bytes:
    """The body of ``response`` decoded, refused as soon as it passes ``max_bytes``.

    See `_decode_bounded`; a refusal is raised here, outside any handler.
    """
    body, refusal = await _decode_bounded(response, max_bytes)
    if refusal is not None:
        raise _refused_body(model, response.status_code, refusal)
    return body


async def _decode_bounded(response: httpx.Response, max_bytes: int) -> tuple[bytes, str | None]:
    """The body of ``response`` decoded, or why not: a key of `_BODY_REFUSALS`.

    Reads the raw bytes and decodes them here, a chunk at a time, with zlib's
    ``max_length``: no chunk ever inflates past what is left of ``max_bytes``, so a
    gzip bomb costs at most that in memory, and reading stops as soon as the decoded
    body passes it. httpx's own decoders inflate each chunk whole before anything
    could count it. httpx's transport errors propagate to the caller.
    """
    if response.is_stream_consumed:
        # A transport that hands over a body already read and decoded (httpx's
        # MockTransport does): it is in memory already, and only its size is checked.
        content = response.content
        return (b"", "reply_too_large") if len(content) > max_bytes else (content, None)
    decoders = _decoders(response.headers.get("content-encoding", ""))
    if decoders is None:
        return b"", "transport"
    parts: list[bytes] = []
    size = 0
    async for raw in response.aiter_raw():
        data = raw
        try:
            for decoder in decoders:
                data = decoder.feed(data, max_bytes - size)
        except zlib.error:
            return b"", "transport"
        except _TooLargeError:
            return b"", "reply_too_large"
        size += len(data)
        if size > max_bytes:
            return b"", "reply_too_large"
        parts.append(data)
    if not all(decoder.complete() for decoder in decoders):
        return b"", "transport"
    return b"".join(parts), None


class _TooLargeError(Exception):
    """A decoder would have produced more than the room left under the cap."""


class _Inflater:
    """One ``gzip`` or ``deflate`` layer, decoding into at most the room it is given."""

    def __init__(self, *, gzip: bool) -> None:
        self._gzip = gzip
        self._started = False
        self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 16 if gzip else zlib.MAX_WBITS)

    def feed(self, data: bytes, room: int) -> bytes:
        if not data:
            return b""
        if not self._started and not self._gzip:
            self._started = True
            # "deflate" is meant to be zlib-wrapped; some servers send it raw.
            try:
                return self._bounded(data, room)
            except zlib.error:
                self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
        self._started = True
        return self._bounded(data, room)

    def _bounded(self, data: bytes, room: int) -> bytes:
        # One byte past the room is enough to know the cap is crossed; below it,
        # max_length was not reached, so the whole input was consumed.
        out = self._zlib.decompress(data, max(room, 0) + 1)
        if len(out) > room:
            raise _TooLargeError
        return out

    def complete(self) -> bool:
        return self._zlib.eof or not self._started


def _decoders(content_encoding: str) -> list[_Inflater] | None:
    """The decoders for a Content-Encoding, outermost last; None for one not accepted."""
    decoders: list[_Inflater] = []
    for coding in reversed([c.strip().lower() for c in content_encoding.split(",")]):
        if coding in {"", "identity"}:
            continue
        if coding in {"gzip", "x-gzip"}:
            decoders.append(_Inflater(gzip=True))
        elif coding == "deflate":
            decoders.append(_Inflater(gzip=False))
        else:
            return None
    return decoders


def _status_reason(status: int) -> str:
    if status >= httpx.codes.BAD_REQUEST:
        return f"the provider answered HTTP {status}"
    if httpx.codes.is_redirect(status):
        return f"the provider answered HTTP {status}, a redirect, which is not followed"
    return f"the provider answered HTTP {status} where 200 was expected"


def _completion_text(content: bytes, model: str) -> Completion:
    """Read ``choices[0].message.content`` from a 200 body, or raise `ChatError`.

    Decoding errors are neither chained nor kept as the context:
    ``JSONDecodeError.doc`` holds the whole body, ``UnicodeDecodeError.object`` its
    bytes.
    """

    def malformed(
        reason: str, code: str = "bad_envelope", provider_code: str | None = None
    ) -> ChatError:
        return ChatError(
            reason,
            provider=_PROVIDER,
            model=model,
            status=httpx.codes.OK,
            reason=code,
            provider_code=provider_code,
        )

    try:
        envelope = json.loads(content)
    except (ValueError, RecursionError):
        # Raised below, outside the handler, so the decoder error is not even the
        # __context__ of the ChatError.
        envelope = _NOT_JSON
    if envelope is _NOT_JSON:
        raise malformed("the response body is not valid JSON")
    if not isinstance(envelope, dict):
        raise malformed("the response body is not a JSON object")
    choices = envelope.get("choices")
    if not isinstance(choices, list) or not choices:
        raise malformed("the response has no choices", provider_code=_error_code_in(envelope))
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    if not isinstance(message, dict):
        raise malformed("choices[0].message is missing or not an object")
    if "content" not in message:
        raise malformed("choices[0].message.content is missing")
    text = message["content"]
    finish = _finish_reason(choices[0])
    if text is None:
        ended = f" (finish_reason {finish})" if finish else ""
        msg = f"choices[0].message.content is null{ended}"
        raise malformed(msg, "null_content")
    if not isinstance(text, str):
        raise malformed("choices[0].message.content is not a string")
    return Completion(text, finish)


def _finish_reason(choice: dict[str, object]) -> str | None:
    """``choices[0].finish_reason`` when it is a short machine code, else None."""
    value = choice.get("finish_reason")
    return value if isinstance(value, str) and MACHINE_CODE.fullmatch(value) else None


async def _close_at_loop_shutdown(pool: _ClientPool) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        await pool.aclose()


def _parse_base_url(base: str) -> httpx.URL:
    # Messages name the rule, never the URL, which may hold credentials.
    try:
        url = httpx.URL(base)
    except httpx.InvalidURL:
        msg = "base_url is not a valid URL"
        raise ChatConfigError(msg) from None
    if url.scheme not in {"http", "https"} or not url.host:
        msg = "base_url must be an http:// or https:// URL with a host"
        raise ChatConfigError(msg)
    if url.port is not None and not 0 < url.port <= _MAX_PORT:
        msg = f"base_url's port must lie in 1..{_MAX_PORT}"
        raise ChatConfigError(msg)
    return url


def _bounded_timeout(timeout: float | httpx.Timeout) -> httpx.Timeout:
    bounds = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
    for phase in ("connect", "read", "write", "pool"):
        seconds = getattr(bounds, phase)
        if seconds is None or not 0 < seconds < math.inf:
            msg = f"timeout must bound every phase with a positive number: {phase} is {seconds}"
            raise ChatConfigError(msg)
    return bounds


def _seed_option(seed: int | None) -> dict[str, int]:
    if seed is None:
        return {}
    if isinstance(seed, bool) or not isinstance(seed, int):
        msg = "seed must be an integer"
        raise ChatConfigError(msg)
    return {"seed": seed}


def _total_deadline(timeout: float | httpx.Timeout, deadline: float | None) -> float:
    """The whole call's bound: ``deadline``, else a plain ``timeout``, else the default."""
    if deadline is None:
        deadline = _DEFAULT_DEADLINE if isinstance(timeout, httpx.Timeout) else timeout
    if isinstance(deadline, bool) or not 0 < deadline < math.inf:
        msg = "deadline must be a positive, finite number of seconds"
        raise ChatConfigError(msg)
    return float(deadline)


def _reply_cap(max_reply_bytes: int) -> int:
    if (
        isinstance(max_reply_bytes, bool)
        or not isinstance(max_reply_bytes, int)
        or max_reply_bytes < 1
    ):
        msg = "max_reply_bytes must be a positive integer"
        raise ChatConfigError(msg)
    return max_reply_bytes


def _environment_proxy(url: httpx.URL) -> str | None:
    """The proxy the environment names for ``url``, as httpx reads it for its own clients.

    ``HTTPS_PROXY``/``HTTP_PROXY`` by the URL's scheme, else ``ALL_PROXY`` (either
    case), unless ``NO_PROXY`` lists the host. httpx skips the environment for a
    client given an explicit transport, which is how citemark builds its clients.
    """
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(url.scheme) or proxies.get("all")
    if not proxy:
        return None
    if _bypassed(url.host, proxies.get("no", "")):
        return None
    return proxy


def _bypassed(host: str, no_proxy: str) -> bool:
    """Whether ``NO_PROXY`` exempts ``host``: ``*``, the host, a parent domain, a network."""
    host = host.lower().strip("[]")
    for raw in no_proxy.split(","):
        entry = raw.strip().lower()
        if "://" in entry:
            entry = entry.split("://", 1)[1]
        entry = entry.strip("/")
        if not entry:
            continue
        if entry == "*":
            return True
        if not entry.startswith("[") and entry.count(":") == 1:
            entry = entry.split(":", 1)[0]
        entry = entry.strip("[]")
        if _in_network(host, entry):
            return True
        domain = entry.lstrip(".")
        if host == domain or host.endswith("." + domain):
            return True
    return False


def _in_network(host: str, entry: str) -> bool:
    try:
        return ipaddress.ip_address(host) in ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return False


def _sampling_options(temperature: float | None, max_tokens: int | None) -> dict[str, float | int]:
    options: dict[str, float | int] = {}
    if temperature is not None:
        if not math.isfinite(temperature):
            msg = "temperature must be a finite number"
            raise ChatConfigError(msg)
        options["temperature"] = temperature
    if max_tokens is not None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            msg = "max_tokens must be a positive integer"
            raise ChatConfigError(msg)
        options["max_tokens"] = max_tokens
    return options
