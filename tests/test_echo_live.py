"""The echo check against a real model; runs only with CITEMARK_LIVE=1 (SPEC §10).

The model comes from the environment: CITEMARK_BASE_URL, CITEMARK_MODEL and, if
needed, CITEMARK_API_KEY, as `OpenAIChat` reads them. These tests measure the model
as much as citemark, so they assert only what no model may do (leak a marker it was
never shown) and what the report must hold whatever the model does.
"""

from __future__ import annotations

import json
import os

import pytest

from citemark import ModelIdentity, OpenAIChat, Synthesizer, run_echo_check_sync

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(
        os.environ.get("CITEMARK_LIVE") != "1", reason="live model tests need CITEMARK_LIVE=1"
    ),
]


class TestEchoLive:
    def test_a_real_model_runs_the_default_suite(self, tmp_path):
        """Every default case gets an outcome, none of them a leak, and the report is written."""
        synthesizer = Synthesizer(OpenAIChat())
        report = run_echo_check_sync(synthesizer, out_dir=tmp_path)
        assert 3 == len(report.cases)
        assert 0 == report.counts["leak"]
        assert ModelIdentity.of(synthesizer) == report.synthesis
        data = json.loads((tmp_path / "echo-latest.json").read_bytes())
        assert 1 == data["schema_version"]

    def test_citations_of_a_real_model_re_read_from_the_files(self):
        """Whatever a real model cites among the planted passages verifies against the file."""
        report = run_echo_check_sync(Synthesizer(OpenAIChat()), seed=1)
        for case in report.cases:
            assert all("verified" == c.verification for c in case.citations), case.case
