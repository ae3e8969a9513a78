"""Evaluation events: what every check and every judge verdict reports, once turned on.

citemark's checks and judges call the hooks here as they finish; while no sink is
installed (the default) a hook is one comparison and returns. `citemark.otel.enable`
installs a sink that writes each result as an OpenTelemetry ``gen_ai.evaluation.result``
event. This module never imports OpenTelemetry: the sink does, when it is built.

Every attribute is a structural fact: a code, a count, a marker number, a model
identity, a SHA-256. The answer, the sources, the question, the judge's reply and its
explanation never reach an event, so an event can go to any backend.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Concatenate, Final, ParamSpec, Protocol, TypeVar

from citemark._contract.errors import ChatError, JudgeError
from citemark._contract.words import counted

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from citemark._judging.scorer.result import CitationScore
    from citemark._model.completion import ChatModel

__all__ = [
    "CHECK_EVALUATION",
    "FAITHFULNESS_EVALUATION",
    "JUDGE_EVALUATION",
    "Sink",
    "emit_check",
    "installed_sink",
    "observed_score",
    "observed_verdict",
    "set_sink",
]

CHECK_EVALUATION: Final = "citemark.citations_valid"
"""The evaluation name of the deterministic citation check."""
JUDGE_EVALUATION: Final = "citemark.citation_support"
"""The evaluation name of the scorer judge's advisory opinion on the resolved citations."""
FAITHFULNESS_EVALUATION: Final = "citemark.faithfulness"
"""The evaluation name of `citemark.FaithfulnessJudge`'s advisory verdict."""

# Reason codes a judge's reply (not the row) produces: the judge's event carries them.
_JUDGE_REASONS: Final = frozenset(
    {
        "judge_call_failed",
        "invalid_judge_output",
        "incomplete_judge_verdicts",
        "contradictory_judge_verdicts",
        "judge_score_contradicts_verdicts",
    }
)
_SUPPORTED_BAND: Final = 2

_P = ParamSpec("_P")


# What the hooks read of the scorer, the judge and a verdict. Protocols, not imports:
# the scorer and the judge import this module, so it must not import them back.
class _ScorerFacts(Protocol):
    @property
    def judge(self) -> ChatModel | None: ...
    @property
    def prompt_sha256(self) -> str: ...


class _JudgeFacts(Protocol):
    @property
    def provider(self) -> str: ...
    @property
    def model_name(self) -> str: ...
    @property
    def prompt_sha256(self) -> str: ...


class _VerdictFacts(Protocol):
    @property
    def faithful(self) -> bool: ...
    @property
    def unsupported_claims(self) -> tuple[str, ...]: ...


_Scorer = TypeVar("_Scorer", bound=_ScorerFacts)
_Judge = TypeVar("_Judge", bound=_JudgeFacts)
_Verdict = TypeVar("_Verdict", bound=_VerdictFacts)


class Sink(Protocol):
    """Where evaluation results go: one call per result, attributes already structural."""

    def emit(self, attributes: dict[str, str | int | float | bool]) -> None:
        """Record one ``gen_ai.evaluation.result``."""


_sink: Sink | None = None


def set_sink(sink: Sink | None) -> Sink | None:
    """Install ``sink`` (or none) and return the one it replaces."""
    global _sink
    previous, _sink = _sink, sink
    return previous


def installed_sink() -> Sink | None:
    """The installed sink, or None."""
    return _sink


def emit_check(
    *,
    passed: bool | None,
    explanation: str,
    reason: str | None = None,
    response_id: str | None = None,
) -> None:
    """Report one deterministic citation check: pass, fail, or not assessed.

    Args:
        passed: True or False for a decided check; None when it could not be assessed.
        explanation: Structural facts only: counts, marker numbers, codes.
        reason: The stable code of a check that was not assessed.
        response_id: The id of the model response that was checked, when known.
    """
    sink = _sink
    if sink is None:
        return
    attributes: dict[str, str | int | float | bool] = {
        "gen_ai.evaluation.name": CHECK_EVALUATION,
        "gen_ai.evaluation.score.label": _label(passed),
        "gen_ai.evaluation.explanation": explanation,
        "citemark.evaluator.kind": "deterministic",
    }
    if passed is not None:
        # An exact boolean, not an opinion: 1.0 passed, 0.0 failed.
        attributes["gen_ai.evaluation.score.value"] = 1.0 if passed else 0.0
    if reason is not None:
        attributes["citemark.reason"] = reason
    if response_id is not None:
        attributes["gen_ai.response.id"] = response_id
    sink.emit(attributes)


def observed_score(
    method: Callable[Concatenate[_Scorer, _P], Coroutine[Any, Any, CitationScore]],
) -> Callable[Concatenate[_Scorer, _P], Coroutine[Any, Any, CitationScore]]:
    """Decorate `CitationScorer.score`: report the row's check, then the judge's opinion."""

    @functools.wraps(method)
    async def score(self: _Scorer, /, *args: _P.args, **kwargs: _P.kwargs) -> CitationScore:
        result = await method(self, *args, **kwargs)
        if _sink is not None:
            _report_score(self, result)
        return result

    return score


def observed_verdict(
    method: Callable[Concatenate[_Judge, _P], Coroutine[Any, Any, _Verdict]],
) -> Callable[Concatenate[_Judge, _P], Coroutine[Any, Any, _Verdict]]:
    """Decorate `FaithfulnessJudge.judge`: report each verdict, or why there is none."""

    @functools.wraps(method)
    async def judge(self: _Judge, /, *args: _P.args, **kwargs: _P.kwargs) -> _Verdict:
        try:
            verdict = await method(self, *args, **kwargs)
        except (ChatError, JudgeError) as exc:
            if _sink is not None:
                _report_verdict(self, None, type(exc).__name__)
            raise
        if _sink is not None:
            _report_verdict(self, verdict, None)
        return verdict

    return judge


def _label(passed: bool | None) -> str:
    if passed is None:
        return "not_assessed"
    return "pass" if passed else "fail"


def _report_score(scorer: _ScorerFacts, result: CitationScore) -> None:
    findings = result.findings
    counts = findings.marker_counts
    facts = (
        f"citations: {counts['resolved']} resolved, {counts['fabricated']} fabricated, "
        f"{counts['ambiguous']} ambiguous, {counts['ignored']} ignored"
    )
    passed = result.deterministic_passed
    if findings.deterministic_failures:
        facts += "; failed on " + ", ".join(findings.deterministic_failures)
    # Nothing to check (no resolved citation, an empty context) or an ambiguous
    # marker: the scorer stops before any judge, so the row's reason is the check's.
    reason = result.reason if passed is None else None
    if reason is not None:
        facts += f"; not assessed: {reason}"
    emit_check(passed=passed, explanation=facts, reason=reason)
    judge = scorer.judge
    sink = _sink
    if judge is None or sink is None or not findings.judge_called:
        return
    attributes = _identity(judge.provider, judge.model_name, scorer.prompt_sha256)
    attributes["gen_ai.evaluation.name"] = JUDGE_EVALUATION
    band = result.judge_band
    rejection = findings.judge_rejection
    error = (
        "ChatError"
        if findings.judge_error is not None
        else rejection
        if rejection is not None
        else result.reason
        if result.reason in _JUDGE_REASONS
        else None
    )
    graded = counts["resolved"]
    if error is not None or band is None:
        attributes["gen_ai.evaluation.score.label"] = "not_assessed"
        attributes["error.type"] = str(error or "invalid_judge_output")
        attributes["gen_ai.evaluation.explanation"] = (
            f"advisory; the judge gave no usable opinion on {counted(graded, 'citation')}"
        )
    else:
        supported = band >= _SUPPORTED_BAND
        attributes["gen_ai.evaluation.score.label"] = "supported" if supported else "unsupported"
        attributes["gen_ai.evaluation.explanation"] = (
            f"advisory; judge band {band} of 0..3 over {counted(graded, 'citation')}"
        )
    sink.emit(attributes)


def _report_verdict(judge: _JudgeFacts, verdict: _VerdictFacts | None, error: str | None) -> None:
    sink = _sink
    if sink is None:
        return
    attributes = _identity(judge.provider, judge.model_name, judge.prompt_sha256)
    attributes["gen_ai.evaluation.name"] = FAITHFULNESS_EVALUATION
    if verdict is None:
        attributes["gen_ai.evaluation.score.label"] = "not_assessed"
        attributes["error.type"] = str(error)
        attributes["gen_ai.evaluation.explanation"] = "advisory; no usable verdict"
    else:
        claims = len(verdict.unsupported_claims)
        attributes["gen_ai.evaluation.score.label"] = (
            "faithful" if verdict.faithful else "unfaithful"
        )
        attributes["gen_ai.evaluation.explanation"] = (
            f"advisory verdict; {counted(claims, 'unsupported claim')}"
        )
    sink.emit(attributes)


def _identity(provider: str, model: str, prompt_sha256: str) -> dict[str, str | int | float | bool]:
    return {
        "citemark.evaluator.kind": "judge",
        "citemark.evaluator.provider": provider,
        "citemark.evaluator.model": model,
        "citemark.evaluator.revision": prompt_sha256,
        "citemark.advisory": True,
    }
