"""OpenTelemetry ``gen_ai.evaluation.result`` events for citemark's checks and judge verdicts.

Turned on explicitly, once per process, with `enable` (it needs ``opentelemetry-api``:
``pip install citemark[otel]``); `disable` turns it off. While on, each of these emits
one event per result, as a log record named ``gen_ai.evaluation.result`` in the
current context, so it is parented to the span that is current when the check
finishes (your request span, an agent's model span):

- `citemark.CitationScorer.score` (and so ``citemark check``, ``score_many``, the
  LangSmith, LangChain and LlamaIndex evaluators, `citemark.testing.assert_cited`):
  ``citemark.citations_valid``, the deterministic check, and, when a judge was
  called, ``citemark.citation_support``, the judge's advisory opinion;
- `citemark.FaithfulnessJudge.judge`: ``citemark.faithfulness``;
- ``langchain_citemark.CitationMiddleware``: ``citemark.citations_valid`` per checked reply.

Attributes follow the GenAI semantic conventions: ``gen_ai.evaluation.name``,
``gen_ai.evaluation.score.label`` (``pass``/``fail``/``not_assessed``;
``supported``/``unsupported``; ``faithful``/``unfaithful``),
``gen_ai.evaluation.score.value`` only on the deterministic check (1.0 or 0.0: an
exact boolean; a judge's opinion is never a number to average),
``gen_ai.evaluation.explanation`` (counts and codes only), ``gen_ai.response.id`` when
known and ``error.type`` when a judge gave nothing usable. The conventions have no
evaluator identity yet, so judge events carry ``citemark.evaluator.provider``,
``citemark.evaluator.model`` and ``citemark.evaluator.revision`` (the SHA-256 of the
judge's prompt template: a changed rubric is a new revision), plus
``citemark.advisory = true``. No answer, source, question or judge text is ever an
attribute or a body.

See ``docs/observability.md`` for a runnable example.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from citemark._judging.observe import (
    CHECK_EVALUATION,
    FAITHFULNESS_EVALUATION,
    JUDGE_EVALUATION,
    emit_check,
    installed_sink,
    set_sink,
)

if TYPE_CHECKING:
    from types import ModuleType

    from opentelemetry._logs import Logger, LoggerProvider

__all__ = [
    "CHECK_EVALUATION",
    "EVENT_NAME",
    "FAITHFULNESS_EVALUATION",
    "JUDGE_EVALUATION",
    "disable",
    "emit_check",
    "enable",
    "is_enabled",
]

EVENT_NAME: Final = "gen_ai.evaluation.result"
"""The event name the GenAI semantic conventions define for an evaluation result."""


def enable(*, logger_provider: LoggerProvider | None = None) -> None:
    """Emit a ``gen_ai.evaluation.result`` event for every check and judge verdict.

    Calling it again replaces the earlier configuration.

    Args:
        logger_provider: The OpenTelemetry ``LoggerProvider`` to emit through; by
            default the global one (``opentelemetry._logs.get_logger_provider()``),
            which the OpenTelemetry SDK or auto-instrumentation configures.

    Raises:
        ModuleNotFoundError: ``opentelemetry-api`` is not installed.
    """
    logs = _logs_api()
    from citemark import __version__  # noqa: PLC0415 - citemark imports this module's deps

    logger = logs.get_logger("citemark", __version__, logger_provider=logger_provider)
    set_sink(_LoggerSink(logger))


def disable() -> None:
    """Stop emitting events; checks and verdicts go on unchanged."""
    set_sink(None)


def is_enabled() -> bool:
    """Whether events are being emitted."""
    return installed_sink() is not None


class _LoggerSink:
    """Write each result as an OpenTelemetry log record named after the event."""

    def __init__(self, logger: Logger) -> None:
        self._logger = logger
        from opentelemetry import context  # noqa: PLC0415 - optional dependency

        self._context = context

    def emit(self, attributes: dict[str, str | int | float | bool]) -> None:
        self._logger.emit(
            event_name=EVENT_NAME,
            attributes=attributes,
            context=self._context.get_current(),
        )


def _logs_api() -> ModuleType:
    try:
        from opentelemetry import _logs  # noqa: PLC0415 - optional dependency
    except ModuleNotFoundError:
        msg = "citemark.otel needs opentelemetry-api: pip install 'citemark[otel]'"
        raise ModuleNotFoundError(msg, name="opentelemetry") from None
    return _logs
