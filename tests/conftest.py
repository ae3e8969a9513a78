"""Fixtures the test modules share."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

# ``make check`` runs the suite without these (``-m "not slow"``); ``make test`` runs
# everything. A module is listed for what it starts, not for how long it happens to take:
# a browser, a Ray cluster, the second (formats) venv, a wheel build, or the ``citemark``
# command in a child process for most of its tests.
SLOW_MODULES: dict[str, str] = {
    "test_report_html.py": "browser",
    "test_report_html_headline.py": "browser",
    "test_ray.py": "ray",
    "test_ray_cluster.py": "ray",
    "test_ray_faults.py": "ray",
    "test_ray_parts.py": "ray",
    "test_ray_quiet.py": "ray",
    "test_diff_ray.py": "ray",
    "test_ray_verifier.py": "ray",
    "test_cli_first_hour.py": "ray",
    "test_formats_hints.py": "formats venv",
    "test_formats_phoenix.py": "formats venv",
    "test_formats_ragas_deepeval.py": "formats venv",
    "test_honest_headline.py": "formats venv",
    "test_dist.py": "wheel builds",
    "test_cli_answer.py": "cli process",
    "test_cli_check.py": "cli process",
    "test_cli_echo_calibrate.py": "cli process",
    "test_cli_endpoint.py": "cli process",
    "test_examples.py": "cli process",
    "test_diff.py": "cli process",
    "test_replay.py": "cli process",
    "test_headline.py": "cli process",
    "test_output_faults.py": "cli process",
    "test_output_set.py": "cli process",
    "test_import_cost.py": "cli process",
    "test_surrogates.py": "cli process",
    "test_recording.py": "cli process",
    "test_otel.py": "cli process",
    "test_diff_pipeline.py": "cli process",
    "test_diff_bounded.py": "cli process",
    "test_diff_matching.py": "cli process",
    "test_diff_formats.py": "cli process",
    "test_diff_recorded_chain.py": "cli process",
    "test_formats_hostile_numbers.py": "cli process",
    "test_formats_langsmith.py": "cli process",
    "test_formats_openinference.py": "cli process",
    "test_cli_check_providers.py": "cli process",
    "test_native_documents.py": "cli process",
    "test_recording_rejected.py": "cli process",
}


# A docs example that starts these is slow too (its text says so).
_SLOW_EXAMPLE_WORDS = ("subprocess", "citemark.ray", "import ray")


def pytest_ignore_collect(collection_path: Path) -> bool | None:
    """With ``CITEMARK_FAST=1`` (``make check``), the slow modules are not even imported."""
    if os.environ.get("CITEMARK_FAST") == "1" and collection_path.name in SLOW_MODULES:
        return True
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``slow`` each test of a `SLOW_MODULES` module and each docs example that
    starts a process or Ray; ``make check`` leaves them out.
    """
    for item in items:
        callspec = getattr(item, "callspec", None)
        example = callspec.params.get("example") if callspec is not None else None
        code = getattr(example, "code", "")
        if Path(str(item.fspath)).name in SLOW_MODULES or any(
            word in code for word in _SLOW_EXAMPLE_WORDS
        ):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on: the socket that held it is closed."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
