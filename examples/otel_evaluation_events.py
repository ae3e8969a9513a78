"""Emit OpenTelemetry gen_ai.evaluation.result events for citemark's checks.

An in-memory exporter stands in for your collector.
"""

import json

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

from citemark import CitationScorer, Source, otel
from citemark.testing import ScriptedChat

exporter = InMemoryLogRecordExporter()
provider = LoggerProvider()
provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
otel.enable(logger_provider=provider)

sources = [Source(text="Fees rise in May.", doc_id="fees"), Source(text="No fee.", doc_id="m")]
reply = json.dumps(
    {
        "score": 3,
        "explanation": "Stated in the source.",
        "verdicts": [{"occurrence": 1, "outcome": "supported", "context_span": "Fees rise in May"}],
    }
)
judged = CitationScorer(ScriptedChat([reply], provider="local", model_name="judge-1"))
judged.score_sync("Fees rise in May [1].", sources)
CitationScorer().score_sync("Fees rise [1]; members pay [7].", sources)
otel.disable()

for record in exporter.get_finished_logs():
    attributes = record.log_record.attributes
    print(
        attributes["gen_ai.evaluation.name"],
        attributes["gen_ai.evaluation.score.label"],
        attributes.get("citemark.evaluator.model", "code"),
        "-",
        attributes["gen_ai.evaluation.explanation"],
    )
