"""Fixtures the test modules share."""

from __future__ import annotations

import socket

import pytest


@pytest.fixture
def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on: the socket that held it is closed."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
