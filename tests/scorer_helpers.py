"""Shared fixtures for the citation scorer tests: a context, reply builders, a runner.

Replies are built as JSON text from plain values, so a test can deliver exactly the
reply it means, falsy ones included (``null``, ``[]``, ``0``), without a helper that
turns them into something else.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from citemark import CitationScore, CitationScorer
from citemark.testing import ScriptedChat

CONTEXT = (
    "[doc-1] The late fee is 5% of the unpaid balance.\n"
    "[doc-2] Members of the credit union pay no late fee.\n"
    "[doc-3] Notices are sent by mail within ten days.\n"
)
"""Three hyphen-labelled blocks; each test quotes them through the spans below."""

SPAN = {
    "doc-1": "late fee is 5%",
    "doc-2": "pay no late fee",
    "doc-3": "sent by mail",
}
"""A verbatim quote from each block of CONTEXT."""

GOOD = "The late fee is 5% [doc-1]."
"""A response with one correct citation."""


def supported(occurrence: int, span: str, **extra: Any) -> dict[str, Any]:
    """A supported verdict."""
    return {"occurrence": occurrence, "outcome": "supported", "context_span": span, **extra}


def misattributed(occurrence: int, marker: str, span: str, **extra: Any) -> dict[str, Any]:
    """A misattributed verdict naming the block that does support the claim."""
    return {
        "occurrence": occurrence,
        "outcome": "misattributed",
        "supporting_marker": marker,
        "context_span": span,
        **extra,
    }


def unsupported(occurrence: int, **extra: Any) -> dict[str, Any]:
    """An unsupported verdict."""
    return {"occurrence": occurrence, "outcome": "unsupported", **extra}


def reply(score: object, *verdicts: object, explanation: object = "Judged.") -> str:
    """A judge reply with the given score and verdicts, as JSON text."""
    return json.dumps({"score": score, "explanation": explanation, "verdicts": list(verdicts)})


def passing(*labels: str) -> str:
    """A score-3 reply with a verifiable supported verdict for each occurrence, in order."""
    return reply(3, *(supported(i, SPAN[label]) for i, label in enumerate(labels, start=1)))


def score(
    response: str,
    sources: object = CONTEXT,
    replies: list[Any] | None = None,
    *,
    judge: bool = True,
    question: str = "",
    **options: Any,
) -> tuple[CitationScore, ScriptedChat]:
    """Score one row with a ScriptedChat judge (or none) and return the result and the chat."""
    chat = ScriptedChat(replies or [])
    scorer = CitationScorer(chat if judge else None, **options)
    result = asyncio.run(scorer.score(response, sources, question))  # type: ignore[arg-type]
    return result, chat


def outcome(result: CitationScore) -> tuple[bool, bool | None, float | None, str | None]:
    """The four fields that decide a row, for comparing rows."""
    return (result.assessed, result.passed, result.score, result.reason)


def kinds(result: CitationScore) -> dict[str, list[str]]:
    """The labels in each classification bucket of a result."""
    keys = {
        "resolved": "resolved_citations",
        "fabricated": "fabricated_citations",
        "ambiguous": "ambiguous_citations",
        "ignored": "ignored_markers",
    }
    return {kind: [e["label"] for e in result.details[key]] for kind, key in keys.items()}


def json_safe(result: CitationScore) -> str:
    """Serialize a result's details the strict way; raises if they are not JSON-safe."""
    return json.dumps(result.details, allow_nan=False)
