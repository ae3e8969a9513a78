"""A loopback HTTP server that answers like a provider, for the official SDKs.

Every POST is recorded (path and JSON body) and answered with the next reply: a
``dict`` is sent as ``application/json``; a ``list`` of event dicts is sent as a
``text/event-stream`` (``event:`` is each dict's ``type``), as Anthropic streams.
The SDKs are pointed at ``base_url`` with their own base-URL options.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

Reply = dict[str, Any] | list[dict[str, Any]]


class ProviderServer:
    """Serve the given replies, in order, until the ``with`` block ends."""

    def __init__(self, *replies: Reply) -> None:
        self._replies = list(replies)
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._clients: list[Any] = []

    def own(self, client: Any) -> Any:
        """Close ``client`` (an SDK client) when the server stops; returns it."""
        self._clients.append(client)
        return client

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def _next(self, path: str, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append((path, body))
            return self._replies[len(self.requests) - 1]

    def __enter__(self) -> Self:
        server_side = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                """Quiet: a test reads what the server got, not its log."""

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else {}
                reply = server_side._next(self.path, body)
                if isinstance(reply, list):
                    payload = "".join(
                        f"event: {event['type']}\ndata: {json.dumps(event)}\n\n" for event in reply
                    ).encode()
                    content_type = "text/event-stream"
                else:
                    payload = json.dumps(reply).encode()
                    content_type = "application/json"
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        for client in self._clients:
            client.close()
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()
