"""What the citation scorer returns: `CitationScore`, its reason codes, and the report over many.

A score is either assessed (``passed`` and ``score`` set) or un-assessed (a stable
``reason`` code set, and neither of the others), so a row nobody graded can never be
averaged in as a zero. `REASONS` maps each code to the sentence a person reads;
`coverage_report` counts outcomes and reasons over a batch. The builders at the end
are how the scorer makes its results: every explanation is written here, so the
sentences and the codes cannot drift apart.
"""

from __future__ import annotations

import json
from collections import Counter
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

from citemark._scorer.labels import AMBIGUOUS, FABRICATED, IGNORED, RESOLVED

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "CITATION_KEYS",
    "REASONS",
    "CitationScore",
    "coverage_report",
    "failed",
    "result",
    "unassessed",
]

_REASONS: Final = {
    "empty_context": "the context is empty, so there is nothing a citation could name",
    "no_resolved_citations": "the response has no citation that names a source",
    "unsupported_label_style": "source labels are not distinguishable from ordinary text",
    "partial_citation_coverage": "only some of the response's citations could be resolved",
    "no_judge": "no judge was configured to grade the resolved citations",
    "judge_call_failed": "the call to the judge failed",
    "invalid_judge_output": "the judge returned unusable output",
    "incomplete_judge_verdicts": "the judge did not assess every citation",
    "contradictory_judge_verdicts": "the judge returned more than one verdict for a citation",
    "judge_score_contradicts_verdicts": "the judge's score contradicts its own verdicts",
    "occurrence_tagging_failed": "the response could not be tagged for the judge",
    "scoring_error": "scoring this row raised an error",
}
REASONS: Final = MappingProxyType(_REASONS)
"""Each un-assessed reason code and the sentence that explains it."""


class CitationScore(BaseModel):
    r"""The scorer's result for one row: a graded score, or a reason it is un-assessed.

    An assessed row has ``passed`` and ``score`` and no ``reason``; an un-assessed
    row has ``reason`` (a code from `CitationScorer.REASONS`) and neither of the
    others, so an un-assessed row can never be averaged in as a zero. ``details`` is
    JSON-safe: ``json.dumps(details, allow_nan=False)`` never fails.

    Example:
        ```python
        import json

        from citemark import CitationScorer

        scorer = CitationScorer()
        result = scorer.score_sync(
            "Rates rise [doc-2].", "[doc-1] Rates rise in May.\n[doc-2] \n"
        )
        print(result.assessed, result.reason)
        #> False partial_citation_coverage
        print(json.dumps(result.details["ambiguous_citations"][0]["why"], allow_nan=False))
        #> "names_excluded_label"
        ```
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        strict=True,
        hide_input_in_errors=True,
        use_attribute_docstrings=True,
    )

    assessed: bool
    """Whether the row was graded: by the judge, or by a deterministic failure."""

    passed: bool | None
    """Whether the row passed; None when it is un-assessed."""

    score: float | None
    """The score in 0..1 (the judge's band divided by 3, or 0 for a deterministic
    failure); None when the row is un-assessed."""

    reason: str | None
    """The stable reason code of an un-assessed row; None when it is assessed."""

    explanation: str
    """What happened, for a person: the judge's words, a deterministic finding, or
    the reason's sentence with its particulars."""

    details: dict[str, Any] = Field(default_factory=dict)
    """Every finding, JSON-safe: the classified markers, the sentence coverage, and
    the judge's audit fields (see the scorer docs for the keys)."""

    @property
    def deterministic_passed(self) -> bool | None:
        """The row's outcome on the checks made in code alone, whatever the judge said.

        ``False`` when a finding made in code failed the row (a fabricated citation,
        or sentence coverage below a minimum the caller asked for); ``True`` when at
        least one citation resolved and nothing failed or stayed ambiguous; ``None``
        when there is nothing to check (no resolved citation, an empty context) or an
        ambiguous marker leaves the row partly resolved. This is what an adapter
        reports as pass or fail: the judge's opinion never changes it.
        """
        details = self.details
        if details.get("deterministic_failures"):
            return False
        if details.get("ambiguous_citations") or not details.get("resolved_citations"):
            return None
        return True

    @model_validator(mode="after")
    def _check_consistent(self, info: ValidationInfo) -> CitationScore:
        if self.assessed:
            if self.passed is None or self.score is None or self.reason is not None:
                msg = "an assessed score has passed and score, and no reason"
                raise ValueError(msg)
            if not 0.0 <= self.score <= 1.0:
                msg = "score must lie in 0..1"
                raise ValueError(msg)
        elif self.passed is not None or self.score is not None or not self.reason:
            msg = "an un-assessed score has a reason, and passed and score are None"
            raise ValueError(msg)
        # The scorer builds details from str, int, bool, None and finite ratios only,
        # and its tests serialize every path; re-encoding a hundred thousand markers
        # per row to prove it again would cost more than scoring them.
        if info.context is not _BUILT_BY_SCORER:
            _check_json_safe(self.details)
        return self


def coverage_report(scores: Iterable[CitationScore]) -> dict[str, Any]:
    """Count outcomes and un-assessed reasons over many scores, with each reason's sentence.

    Args:
        scores: The scores of a batch, e.g. from `CitationScorer.score_many`.

    Returns:
        A JSON-safe dict: ``rows``; ``outcomes`` (``passed``, ``failed`` and
        ``unassessed`` counts); ``assessed_share`` (None for no rows); ``reasons``,
        each code mapped to its ``count`` and ``description``, most frequent first;
        ``citations``, the classified marker occurrences summed over all rows; and
        ``deterministic_failures``, how many rows failed on a finding made in code.

    Example:
        ```python
        from citemark import CitationScorer, coverage_report

        scorer = CitationScorer()
        rows = [
            scorer.score_sync("Fees rise [doc-1].", "[doc-1] Fees rise in May."),
            scorer.score_sync("Fees rise [doc-9].", "[doc-1] Fees rise in May."),
            scorer.score_sync("Fees rise.", ""),
        ]
        report = coverage_report(rows)
        print(report["outcomes"])
        #> {'passed': 0, 'failed': 1, 'unassessed': 2}
        for code, entry in report["reasons"].items():
            print(code, entry["count"], "-", entry["description"])
        #> empty_context 1 - the context is empty, so there is nothing a citation could name
        #> no_judge 1 - no judge was configured to grade the resolved citations
        ```
    """
    outcomes = {"passed": 0, "failed": 0, "unassessed": 0}
    reasons: Counter[str] = Counter()
    citations = dict.fromkeys((RESOLVED, FABRICATED, AMBIGUOUS, IGNORED), 0)
    deterministic = 0
    rows = 0
    for result in scores:
        rows += 1
        if not result.assessed:
            outcomes["unassessed"] += 1
            reasons[result.reason or ""] += 1
        else:
            outcomes["passed" if result.passed else "failed"] += 1
            if result.details.get("deterministic_failures"):
                deterministic += 1
        for kind, key in CITATION_KEYS.items():
            entries = result.details.get(key)
            citations[kind] += len(entries) if isinstance(entries, list) else 0
    assessed = outcomes["passed"] + outcomes["failed"]
    return {
        "rows": rows,
        "outcomes": outcomes,
        "assessed_share": assessed / rows if rows else None,
        "reasons": {
            code: {"count": count, "description": _REASONS.get(code, code)}
            for code, count in sorted(reasons.items(), key=lambda item: (-item[1], item[0]))
        },
        "citations": citations,
        "deterministic_failures": deterministic,
    }


CITATION_KEYS: Final = {
    RESOLVED: "resolved_citations",
    FABRICATED: "fabricated_citations",
    AMBIGUOUS: "ambiguous_citations",
    IGNORED: "ignored_markers",
}

_BUILT_BY_SCORER: Final = {"built_by": "citemark.CitationScorer"}


def result(  # noqa: PLR0913 - the model's own fields
    *,
    assessed: bool,
    passed: bool | None,
    score: float | None,
    reason: str | None,
    explanation: str,
    details: dict[str, Any],
) -> CitationScore:
    """Build a score the scorer computed: validated, but details not re-encoded."""
    fields = {
        "assessed": assessed,
        "passed": passed,
        "score": score,
        "reason": reason,
        "explanation": explanation,
        "details": details,
    }
    return CitationScore.model_validate(fields, context=_BUILT_BY_SCORER)


def unassessed(code: str, details: dict[str, Any], particulars: str = "") -> CitationScore:
    """Leave a row un-assessed under ``code``: its sentence, then any structural particulars."""
    sentence = _REASONS[code]
    explanation = f"Not assessed: {sentence}" + (f" ({particulars})." if particulars else ".")
    return result(
        assessed=False,
        passed=None,
        score=None,
        reason=code,
        explanation=explanation,
        details=details,
    )


def failed(
    failures: list[str], details: dict[str, Any], judge_text: str | None = None
) -> CitationScore:
    """Fail a row on deterministic findings: score 0, the findings first, the judge after."""
    explanation = "Failed: " + "; ".join(failures) + "."
    if judge_text:
        explanation += f" The judge, grading only the resolved citations, said: {judge_text}"
    return result(
        assessed=True,
        passed=False,
        score=0.0,
        reason=None,
        explanation=explanation,
        details=details,
    )


def _check_json_safe(details: dict[str, Any]) -> None:
    """Refuse details that ``json.dumps(allow_nan=False)`` cannot serialize.

    The encoder itself is the check (it runs in C, and a row's details can hold a
    hundred thousand markers); its message is replaced, since it may quote a value.
    """
    try:
        json.dumps(details, allow_nan=False)
    except (ValueError, TypeError, RecursionError) as exc:
        kind = "a non-finite number" if isinstance(exc, ValueError) else type(exc).__name__
        msg = f"details must be JSON-safe: json.dumps(allow_nan=False) failed ({kind})"
        raise ValueError(msg) from None
