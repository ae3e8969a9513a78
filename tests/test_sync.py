"""Every ``*_sync`` twin runs through the one helper, `citemark._contract.sync.run_sync`."""

from __future__ import annotations

import asyncio
import sys
import warnings

import pytest

from citemark import (
    CitationScorer,
    FaithfulnessJudge,
    QueryRewriter,
    Source,
    Synthesizer,
    run_calibration_sync,
    run_echo_check_sync,
    run_synthesis_sync,
)
from citemark._contract.sync import run_sync
from citemark.testing import ScriptedChat

SOURCES = [Source(text="Fees rise in May.", doc_id="fees")]


class Loud:
    """A result that counts how often it is repr'd."""

    reprs = 0

    def __repr__(self) -> str:
        type(self).reprs += 1
        return "Loud()"


async def make_loud() -> Loud:
    return Loud()


class TestRunSync:
    def test_returns_the_result(self):
        """run_sync returns what the coroutine returned."""
        answer = Synthesizer(ScriptedChat(["Fees rise [1]."])).synthesize_sync("When?", SOURCES)
        assert (("fees",), "no_judge") == (
            tuple(citation.doc_id for citation in answer.citations),
            CitationScorer().score_sync("Fees rise [1].", SOURCES).reason,
        )

    def test_the_result_is_never_repred(self):
        """The result is not repr'd; on Python 3.11 plain asyncio.run (the naive variant) reprs it."""
        Loud.reprs = 0
        assert isinstance(run_sync(make_loud), Loud)
        assert 0 == Loud.reprs
        asyncio.run(make_loud())
        if sys.version_info < (3, 12):
            assert Loud.reprs > 0

    def test_inside_a_loop_the_coroutine_is_never_created(self):
        """From a running loop it raises RuntimeError before making the coroutine.

        The naive variant, ``asyncio.run(coro)``, has already made it and leaves it
        never awaited.
        """
        made = []

        def start():
            made.append(1)
            return make_loud()

        async def inside() -> None:
            with pytest.raises(RuntimeError, match="await its async twin instead"):
                run_sync(start)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                with pytest.raises(RuntimeError):
                    asyncio.run(start())

        asyncio.run(inside())
        assert [1] == made  # only the naive call made one


class TestEveryTwinUsesIt:
    @pytest.mark.parametrize(
        "twin",
        [
            lambda: CitationScorer().score_sync("a [1]", SOURCES),
            lambda: Synthesizer(ScriptedChat([])).synthesize_sync("q", SOURCES),
            lambda: QueryRewriter(ScriptedChat([])).rewrite_sync("q"),
            lambda: FaithfulnessJudge(ScriptedChat([])).judge_sync("q", "a", SOURCES),
            lambda: run_calibration_sync(None, None, "reg.json"),  # type: ignore[arg-type]
            lambda: run_echo_check_sync(None),  # type: ignore[arg-type]
            lambda: run_synthesis_sync(None, [], input_stage="raw"),  # type: ignore[arg-type]
        ],
        ids=[
            "score_sync",
            "synthesize_sync",
            "rewrite_sync",
            "judge_sync",
            "run_calibration_sync",
            "run_echo_check_sync",
            "run_synthesis_sync",
        ],
    )
    def test_inside_a_loop_it_is_the_helpers_error(self, twin):
        """Called from a running loop, each twin raises run_sync's own error, with nothing left un-awaited."""

        async def inside() -> None:
            with warnings.catch_warnings():
                warnings.simplefilter("error", RuntimeWarning)
                with pytest.raises(RuntimeError, match="await its async twin instead"):
                    twin()

        asyncio.run(inside())
