"""What the citation scorer returns: `CitationScore`, its reason codes, and the report over many.

A score is either assessed (``passed`` and ``score`` set) or un-assessed (a stable
``reason`` code set, and neither of the others), so a row nobody graded can never be
averaged in as a zero. `REASONS` maps each code to the sentence a person reads;
`coverage_report` counts outcomes and reasons over a batch. The builders at the end
are how the scorer makes its results: every explanation is written here, so the
sentences and the codes cannot drift apart.
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from citemark._contract.reasons import REASONS as REASONS_ALL
from citemark._contract.reasons import SCORER_REASONS, explain
from citemark._judging.scorer.findings import NO_FINDINGS, ScoreFindings

if TYPE_CHECKING:
    from collections.abc import Iterable

    from citemark._judging.scorer.findings import ViolationCode

__all__ = [
    "REASONS",
    "CitationScore",
    "coverage_report",
    "failed",
    "failed_after",
    "result",
    "unassessed",
    "with_findings",
]

REASONS: Final = SCORER_REASONS
"""Each un-assessed reason code the scorer uses and the sentence that explains it."""


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
        print(result.findings.ambiguous_citations[0].why)
        #> names_excluded_label
        print(json.loads(json.dumps(result.details, allow_nan=False)) == result.details)
        #> True
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

    findings: ScoreFindings = Field(default=NO_FINDINGS, exclude=True)
    """Every finding, typed: the classified markers, the sentence coverage, and the
    judge's audit fields. `details` is its JSON form."""

    @computed_field  # type: ignore[prop-decorator]
    @functools.cached_property
    def details(self) -> dict[str, Any]:
        """Every finding, JSON-safe: ``findings.model_dump(mode="json")``.

        This is the shape ``rows.jsonl`` stores (see the scorer docs for the keys).
        Fields a row never set (an unscored row's classification) are left out.
        """
        return self.findings.model_dump(mode="json", exclude_unset=True)

    @property
    def outcome(self) -> Literal["passed", "failed", "unassessed"]:
        """``passed``, ``failed`` or ``unassessed``."""
        if not self.assessed:
            return "unassessed"
        return "passed" if self.passed else "failed"

    @property
    def is_violation(self) -> bool:
        """Whether the row failed on a deterministic finding: what ``--fail-on-violation`` gates on.

        That is a row the scorer failed on a finding made in code, listed in
        ``findings.deterministic_failures``: a fabricated citation (an integer marker
        outside the source range, or a label-shaped marker naming no block), or
        sentence coverage below a minimum the caller set. A judge's verdict never is one.
        """
        return self.assessed and not self.passed and self.findings.violated

    @property
    def judge_band(self) -> int | None:
        """The judge's band (0-3) when its reply carried a valid one, else None.

        The band is an opinion: it is recorded, and it never changes
        `deterministic_passed` or `is_violation`.
        """
        return self.findings.raw_score

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
        findings = self.findings
        if findings.violated:
            return False
        if findings.ambiguous_citations or not findings.resolved_citations:
            return None
        return True

    @model_validator(mode="after")
    def _check_consistent(self) -> CitationScore:
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
        from citemark import CitationScorer
        from citemark.evaluation import coverage_report

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
    citations = dict.fromkeys(("resolved", "fabricated", "ambiguous", "ignored"), 0)
    deterministic = 0
    rows = 0
    for result in scores:
        rows += 1
        outcomes[result.outcome] += 1
        if not result.assessed:
            reasons[result.reason or ""] += 1
        elif result.findings.violated:
            deterministic += 1
        for kind, count in result.findings.marker_counts.items():
            citations[kind] += count
    assessed = outcomes["passed"] + outcomes["failed"]
    return {
        "rows": rows,
        "outcomes": outcomes,
        "assessed_share": assessed / rows if rows else None,
        "reasons": {
            code: {"count": count, "description": REASONS_ALL.get(code, code)}
            for code, count in sorted(reasons.items(), key=lambda item: (-item[1], item[0]))
        },
        "citations": citations,
        "deterministic_failures": deterministic,
    }


def result(  # noqa: PLR0913 - the model's own fields
    *,
    assessed: bool,
    passed: bool | None,
    score: float | None,
    reason: str | None,
    explanation: str,
    findings: ScoreFindings,
) -> CitationScore:
    """Build a score the scorer computed from its findings."""
    return CitationScore.model_validate(
        {
            "assessed": assessed,
            "passed": passed,
            "score": score,
            "reason": reason,
            "explanation": explanation,
            "findings": findings,
        }
    )


def unassessed(code: str, findings: ScoreFindings, particulars: str = "") -> CitationScore:
    """Leave a row un-assessed under ``code``: its sentence, then any structural particulars."""
    return result(
        assessed=False,
        passed=None,
        score=None,
        reason=code,
        explanation=explain(code, particulars),
        findings=findings,
    )


def failed(
    failures: list[str], findings: ScoreFindings, judge_text: str | None = None
) -> CitationScore:
    """Fail a row on deterministic findings: score 0, the findings first, the judge after."""
    tail = f" The judge, grading only the resolved citations, said: {judge_text}"
    return _failed(failures, findings, tail if judge_text else "")


def _failed(failures: list[str], findings: ScoreFindings, tail: str) -> CitationScore:
    return result(
        assessed=True,
        passed=False,
        score=0.0,
        reason=None,
        explanation="Failed: " + "; ".join(failures) + "." + tail,
        findings=findings,
    )


def with_findings(score: CitationScore, findings: ScoreFindings) -> CitationScore:
    """The same score, recording other findings (a fact found after the scorer ran)."""
    return result(
        assessed=score.assessed,
        passed=score.passed,
        score=score.score,
        reason=score.reason,
        explanation=score.explanation,
        findings=findings,
    )


def failed_after(
    score: CitationScore,
    findings: ScoreFindings,
    codes: list[ViolationCode],
    failures: list[str],
) -> CitationScore:
    """Fail a scored row on violations found beside its text (provider, structured citations).

    ``codes`` join the findings' deterministic failures; the row fails with score 0 and
    the failures first, whatever its markers or the judge said, followed by the score's
    own explanation when it was assessed (an un-assessed sentence no longer holds).
    """
    merged = findings.model_copy(
        update={
            "deterministic_failures": findings.deterministic_failures
            + tuple(c for c in codes if c not in findings.deterministic_failures)
        }
    )
    tail = " " + score.explanation if score.assessed and score.explanation else ""
    return _failed(failures, merged, tail)
