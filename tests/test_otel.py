"""gen_ai.evaluation.result events through the OpenTelemetry SDK's in-memory exporter."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider

from citemark import CitationScorer, FaithfulnessJudge, JudgeError, Source, otel
from citemark.testing import ScriptedChat, assert_cited

SOURCES = [Source(text="Fees rise in May.", doc_id="a"), Source(text="Members pay.", doc_id="b")]


@pytest.fixture
def exporter():
    """Events go to an in-memory exporter while the test runs; off again afterwards."""
    memory = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    otel.enable(logger_provider=provider)
    yield memory
    otel.disable()


def events(memory):
    return [
        (record.log_record.event_name, dict(record.log_record.attributes or {}))
        for record in memory.get_finished_logs()
    ]


def judge_reply(score=3, quote="Fees rise in May"):
    return json.dumps(
        {
            "score": score,
            "explanation": "The fee rise is stated.",
            "verdicts": [{"occurrence": 1, "outcome": "supported", "context_span": quote}],
        }
    )


class TestCheckEvents:
    def test_a_deterministic_failure(self, exporter):
        """A fabricated marker emits one citations_valid event: label fail, value 0.0, counts."""
        CitationScorer().score_sync("Fees rise [1]; members pay [5].", SOURCES)
        assert [
            (
                "gen_ai.evaluation.result",
                {
                    "gen_ai.evaluation.name": "citemark.citations_valid",
                    "gen_ai.evaluation.score.label": "fail",
                    "gen_ai.evaluation.score.value": 0.0,
                    "gen_ai.evaluation.explanation": "citations: 1 resolved, 1 fabricated, "
                    "0 ambiguous, 0 ignored; failed on fabricated_citation",
                    "citemark.evaluator.kind": "deterministic",
                },
            )
        ] == events(exporter)

    def test_nothing_to_check_has_no_value(self, exporter):
        """An uncited answer is not assessed: a label and a reason, and no score value."""
        CitationScorer().score_sync("Fees rise.", SOURCES)
        ((_, attributes),) = events(exporter)
        assert "gen_ai.evaluation.score.value" not in attributes
        assert ("not_assessed", "no_resolved_citations") == (
            attributes["gen_ai.evaluation.score.label"],
            attributes["citemark.reason"],
        )

    def test_events_are_parented_to_the_current_span(self, exporter):
        """The event carries the trace and span id of the span current when the check ran."""
        tracer = TracerProvider().get_tracer("test")
        with tracer.start_as_current_span("request") as span:
            CitationScorer().score_sync("Fees rise [1].", SOURCES)
        (record,) = exporter.get_finished_logs()
        context = span.get_span_context()
        assert (context.trace_id, context.span_id) == (
            record.log_record.trace_id,
            record.log_record.span_id,
        )

    def test_assert_cited_emits_its_check(self, exporter):
        """assert_cited runs the scorer, so its check is an event too."""
        assert_cited("Fees rise [1].", SOURCES)
        ((_, attributes),) = events(exporter)
        assert "citemark.citations_valid" == attributes["gen_ai.evaluation.name"]

    def test_disable_stops_the_events(self, exporter):
        """After disable, checks run as before and emit nothing."""
        otel.disable()
        assert not otel.is_enabled()
        CitationScorer().score_sync("Fees rise [5].", SOURCES)
        assert [] == events(exporter)


class TestJudgeEvents:
    def test_the_scorer_judge_opinion_is_a_separate_advisory_event(self, exporter):
        """A judged row emits the check, then the judge's opinion with its identity and revision."""
        scorer = CitationScorer(ScriptedChat([judge_reply()], provider="local", model_name="j-1"))
        scorer.score_sync("Fees rise [1].", SOURCES)
        (_, check), (_, opinion) = events(exporter)
        assert "pass" == check["gen_ai.evaluation.score.label"]
        assert {
            "gen_ai.evaluation.name": "citemark.citation_support",
            "gen_ai.evaluation.score.label": "supported",
            "gen_ai.evaluation.explanation": "advisory; judge band 3 of 0..3 over 1 citation",
            "citemark.evaluator.kind": "judge",
            "citemark.evaluator.provider": "local",
            "citemark.evaluator.model": "j-1",
            "citemark.evaluator.revision": scorer.prompt_sha256,
            "citemark.advisory": True,
        } == opinion

    def test_an_unusable_judge_reply_is_reported_as_such(self, exporter):
        """A reply that fails validation: not_assessed, with the reason as error.type."""
        scorer = CitationScorer(ScriptedChat(["{not json"], provider="local", model_name="j-1"))
        scorer.score_sync("Fees rise [1].", SOURCES)
        (_, opinion) = events(exporter)[1]
        assert ("not_assessed", "invalid_judge_output") == (
            opinion["gen_ai.evaluation.score.label"],
            opinion["error.type"],
        )

    def test_a_faithfulness_verdict_is_an_event_with_the_judge_revision(self, exporter):
        """FaithfulnessJudge.judge emits citemark.faithfulness with label, identity and prompt hash."""
        verdict = json.dumps({"faithful": True, "unsupported_claims": [], "reasoning": "ok"})
        judge = FaithfulnessJudge(ScriptedChat([verdict], provider="local", model_name="f-1"))
        judge.judge_sync("When?", "Fees rise [1].", SOURCES)
        ((_, attributes),) = events(exporter)
        assert {
            "gen_ai.evaluation.name": "citemark.faithfulness",
            "gen_ai.evaluation.score.label": "faithful",
            "gen_ai.evaluation.explanation": "advisory verdict; 0 unsupported claims",
            "citemark.evaluator.kind": "judge",
            "citemark.evaluator.provider": "local",
            "citemark.evaluator.model": "f-1",
            "citemark.evaluator.revision": judge.prompt_sha256,
            "citemark.advisory": True,
        } == attributes

    def test_a_rejected_verdict_still_reports_and_raises(self, exporter):
        """A reply that is not a verdict raises JudgeError and emits not_assessed with the type."""
        judge = FaithfulnessJudge(ScriptedChat(["maybe"], provider="local", model_name="f-1"))
        with pytest.raises(JudgeError):
            judge.judge_sync("When?", "Fees rise [1].", SOURCES)
        ((_, attributes),) = events(exporter)
        assert ("not_assessed", "JudgeError") == (
            attributes["gen_ai.evaluation.score.label"],
            attributes["error.type"],
        )


class TestOptionalDependency:
    def test_the_core_never_imports_opentelemetry(self):
        """Importing citemark, its testing module and citemark.otel loads no OpenTelemetry module."""
        code = (
            "import sys, citemark, citemark.testing, citemark.otel;"
            "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
        )
        assert "[]" == done.stdout.strip()

    def test_enable_without_the_package_says_what_to_install(self):
        """With opentelemetry absent, enable raises ModuleNotFoundError naming the extra."""
        code = (
            "import sys; sys.modules['opentelemetry'] = None\n"
            "from citemark import otel\n"
            "try:\n    otel.enable()\nexcept ModuleNotFoundError as exc:\n    print(exc)\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
        )
        assert "citemark.otel needs opentelemetry-api: pip install 'citemark[otel]'" == (
            done.stdout.strip()
        )
