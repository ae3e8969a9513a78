"""Synthesis and the judge against a real model; runs only with CITEMARK_LIVE=1 (SPEC §10).

The endpoint comes from CITEMARK_BASE_URL, CITEMARK_MODEL and CITEMARK_API_KEY.
A real model may answer, abstain or cite out of range; these tests assert only
what citemark guarantees whatever the model does.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from citemark import (
    BM25Retriever,
    FaithfulnessJudge,
    FileReader,
    JudgeError,
    OpenAIChat,
    SynthesisError,
    Synthesizer,
    verify_citation,
)

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(
        os.environ.get("CITEMARK_LIVE") != "1", reason="live model tests need CITEMARK_LIVE=1"
    ),
]

LICENSES = Path(__file__).resolve().parent.parent / "examples" / "data" / "licenses"
QUESTION = "Under the Apache License 2.0, when does a contributor's patent license terminate?"


class TestLive:
    def test_synthesis_cites_only_what_it_was_given(self):
        """Every citation of a real answer names a retrieved chunk and re-reads verbatim."""
        sources = BM25Retriever.from_directory(LICENSES, patterns=("*",)).retrieve(QUESTION, k=4)
        try:
            answer = Synthesizer(OpenAIChat()).synthesize_sync(QUESTION, sources)
        except SynthesisError:
            return  # a rejection is a valid outcome: the contract held
        reader = FileReader(LICENSES)
        assert all(verify_citation(c, reader).ok for c in answer.citations)
        assert {c.chunk_id for c in answer.citations} <= {s.chunk_id for s in sources}

    def test_judge_reply_is_a_verdict_or_a_judge_error(self):
        """A real judge's reply either validates strictly or raises JudgeError."""
        sources = BM25Retriever.from_directory(LICENSES, patterns=("*",)).retrieve(QUESTION, k=2)
        judge = FaithfulnessJudge(OpenAIChat())
        try:
            verdict = judge.judge_sync(
                QUESTION, "It terminates when litigation is filed [1].", sources
            )
        except JudgeError:
            return
        assert not (verdict.faithful and verdict.unsupported_claims)
