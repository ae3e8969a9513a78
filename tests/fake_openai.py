"""A minimal OpenAI-compatible server on 127.0.0.1 for tests and benchmarks.

It answers ``POST /v1/chat/completions`` with replies computed from the prompt, so
command-line tests can drive the real ``citemark`` entry point against a real
socket. ``latency`` delays every reply (the judge concurrency benchmark uses 50 ms).
A responder that returns a `citemark.Completion` sets the reply's ``finish_reason``
(``"stop"`` otherwise), and every request body is kept in ``bodies``.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Self

Responder = Callable[[str], str]


class _Server(ThreadingHTTPServer):
    # Class attributes, because the constructor calls listen() with the backlog: set
    # on an instance afterwards it has no effect, and the default backlog of 5 resets
    # connections when a client opens 32 at once.
    daemon_threads = True
    request_queue_size = 128


class FakeOpenAI:
    """Serve chat completions until the ``with`` block ends."""

    def __init__(self, respond: Responder | list[str], *, latency: float = 0.0) -> None:
        self._respond = respond
        self.latency = latency
        self.prompts: list[str] = []
        self.bodies: list[dict[str, object]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def reply_for(self, prompt: str) -> str:
        with self._lock:
            index = len(self.prompts)
            self.prompts.append(prompt)
        if callable(self._respond):
            return self._respond(prompt)
        return self._respond[index]

    def __enter__(self) -> Self:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                """Quiet: a test reads what the server got, not its log."""

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path != "/v1/chat/completions":
                    # What llama.cpp's server and FastAPI-based servers answer.
                    missing = b'{"detail": "Not Found"}'
                    self.send_response(404)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(missing)))
                    self.end_headers()
                    self.wfile.write(missing)
                    return
                with fake._lock:
                    fake.bodies.append(body)
                content = fake.reply_for(body["messages"][-1]["content"])
                finish = getattr(content, "finish_reason", None) or "stop"
                if fake.latency:
                    time.sleep(fake.latency)
                choice = {
                    "message": {"role": "assistant", "content": str(content)},
                    "finish_reason": finish,
                }
                payload = json.dumps({"choices": [choice]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        server = _Server(("127.0.0.1", 0), Handler)
        self._server = server
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()


def run_cli(
    *args: str,
    base_url: str | None = None,
    cwd: Path | None = None,
    extra_env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the real ``citemark`` entry point in a subprocess, with a clean environment.

    Every ``CITEMARK_*`` variable of the calling environment is dropped; with
    ``base_url`` the command is pointed at that server and a fixed model name.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITEMARK_")}
    if base_url is not None:
        env["CITEMARK_BASE_URL"] = base_url
        env["CITEMARK_MODEL"] = "fake-model"
    env.update(extra_env or {})
    return subprocess.run(
        [sys.executable, "-m", "citemark", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def run_cli_on_a_terminal(
    *args: str, base_url: str | None = None
) -> tuple[subprocess.CompletedProcess[bytes], bytes]:
    """Run ``citemark`` as `run_cli` does, with standard error on a terminal (a pty).

    Returns the finished process (standard output captured) and every byte the
    command drew on the terminal.
    """
    master, slave = pty.openpty()
    drawn = bytearray()

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                return
            if not chunk:
                return
            drawn.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITEMARK_")}
    env["TERM"] = "xterm"
    if base_url is not None:
        env["CITEMARK_BASE_URL"] = base_url
    try:
        done = subprocess.run(
            [sys.executable, "-m", "citemark", *args],
            stdout=subprocess.PIPE,
            stderr=slave,
            env=env,
            timeout=120,
            check=False,
        )
    finally:
        os.close(slave)
        reader.join(timeout=10)
        os.close(master)
    return done, bytes(drawn)
