"""The counts of a ``citemark check`` run: everything its summary needs, in constant memory.

A `Tally` counts the scored rows a chunk at a time (`Tally.add_scores`), each row by
its group and its failure's cause (`Tally.add_grouped`), and the malformed lines,
listing the first `MAX_MALFORMED_LISTED` of them; `Tally.summary` is the run's
``check`` section of ``report.json``. The local run keeps one tally; the Ray engine
keeps one per shard and merges them in input order (`Tally.merge`) into the tally a
single pass would have kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from citemark._contract.artifacts import ModelIdentity
from citemark._contract.errors import NoRowsError
from citemark._judging.assertions import citation_outcome
from citemark._judging.scorer.scorer import coverage_report
from citemark._pipelines.check.groups import CauseTally, GroupTally, add_counts
from citemark._pipelines.check.terminal import printable
from citemark._pipelines.check.titles import row_title
from citemark._pipelines.eval_report import (
    MAX_VIOLATING_LISTED,
    CheckSummary,
    CitationHeadline,
    VerdictCounts,
    ViolatingRow,
)
from citemark._pipelines.readers.citemark_rows import describe_unreadable
from citemark._pipelines.readers.provider_rows import count_provider_citations

if TYPE_CHECKING:
    from citemark._judging.scorer.findings import ScoreFindings
    from citemark._judging.scorer.result import CitationScore
    from citemark._judging.scorer.scorer import CitationScorer
    from citemark._pipelines.eval_report import MalformedLine
    from citemark._pipelines.readers.citemark_rows import CheckRow

__all__ = ["MAX_MALFORMED_LISTED", "Tally"]

MAX_MALFORMED_LISTED: Final = 100
"""How many malformed lines the summary lists by number; all are counted."""


class Tally:
    """The run's counts: everything the summary needs, in constant memory.

    Args:
        group_by: The row field counts are broken down by (``--group-by``), or None.
        every_group: Count every group by name, none in ``(other)`` yet: a Ray
            shard's tally, whose groups the driver's `merge` caps.
    """

    def __init__(self, group_by: str | None = None, *, every_group: bool = False) -> None:
        self.group_by = group_by
        self.groups = GroupTally(every_group=every_group)
        self.causes = CauseTally()
        self.rows = 0
        self.outcomes = dict.fromkeys(("passed", "failed", "unassessed"), 0)
        self.reasons: dict[str, int] = {}
        self.citations: dict[str, int] = {}
        self.deterministic = 0
        self.malformed = 0
        self.malformed_lines: list[MalformedLine] = []
        self.judge_calls = 0
        self.judge_saved = 0
        self.judge_truncated = 0
        self.judge_failures: dict[str, int] = {}
        self.judge_codes: dict[str, int] = {}
        self.with_unrecognized = 0
        self.unrecognized_kinds: dict[str, int] = {}
        self.zero_based = 0
        self.out_from_zero = 0
        # The first rows with a violation, named (`ViolatingRow`); bounded.
        self.violating: list[ViolatingRow] = []
        self.all_resolve = 0
        self.unverifiable = 0
        self.cite_nothing = 0
        self.violations: dict[str, int] = {}
        self.provider_rows = 0
        self.provider_citations: dict[str, int] = {}
        # The headline: rows by `citation_outcome`, unchecked rows by
        # reason, and the judge's verdicts on the rows whose outcome it decided.
        self.citation_outcomes: dict[str, int] = {}
        self.unchecked_reasons: dict[str, int] = {}
        self.judge_verdicts: dict[str, int] = {}

    def add_scores(self, scores: list[CitationScore]) -> None:
        # coverage_report is the scorer's own count; summing its chunk reports keeps
        # the two from drifting apart.
        if not scores:
            return
        report = coverage_report(scores)
        self.rows += report["rows"]
        for key, value in report["outcomes"].items():
            self.outcomes[key] += value
        for code, entry in report["reasons"].items():
            self.reasons[code] = self.reasons.get(code, 0) + entry["count"]
        for kind, value in report["citations"].items():
            self.citations[kind] = self.citations.get(kind, 0) + value
        self.deterministic += sum(1 for score in scores if score.is_violation)
        for score in scores:
            findings = score.findings
            classified = findings.sentence_coverage is not None  # None: not scored at all
            structured = findings.structured
            if (
                classified
                and not findings.fabricated_citations
                and not findings.ambiguous_citations
                and "unsent_document" not in findings.deterministic_failures
                and (structured is None or not structured.out_of_range)
            ):
                self.all_resolve += 1
                self.cite_nothing += (
                    not findings.resolved_citations
                    and not findings.provider_citations
                    and (structured is None or not structured.citations)
                )
            for code in findings.deterministic_failures:
                self.violations[code] = self.violations.get(code, 0) + 1
            if findings.unrecognized:
                self.with_unrecognized += 1
                for token in findings.unrecognized:
                    kinds = self.unrecognized_kinds
                    kinds[token.kind] = kinds.get(token.kind, 0) + 1
            if findings.unverifiable_sources:
                self.unverifiable += 1
            if findings.possible_zero_based_numbering:
                self.zero_based += 1
            self.out_from_zero += _out_of_range_from_zero(findings)
            self.provider_rows += count_provider_citations(findings, self.provider_citations)
            self._add_judge(score)
            self._add_headline(score)

    def _add_headline(self, score: CitationScore) -> None:
        """Count the row's `citation_outcome` and, when the judge decided it, its verdict."""
        outcome = citation_outcome(score.findings)
        _count(self.citation_outcomes, outcome)
        if outcome == "unchecked" and score.reason is not None:
            _count(self.unchecked_reasons, score.reason)
        if score.findings.judge_called and outcome != "violation":
            verdict = {"passed": "faithful", "failed": "unfaithful"}.get(score.outcome, "unusable")
            _count(self.judge_verdicts, verdict)

    def _add_judge(self, score: CitationScore) -> None:
        findings = score.findings
        self.judge_calls += findings.judge_called
        self.judge_saved += findings.judge_skipped
        self.judge_truncated += findings.judge_reply_truncated
        failure = findings.judge_error
        if failure is not None:
            _count(self.judge_failures, failure.reason)
            if failure.provider_code is not None:
                _count(self.judge_codes, failure.provider_code)

    def add_grouped(self, row: CheckRow, score: CitationScore | None) -> None:
        """Count a scored row by its group and by its failure's cause."""
        if score is None:
            return
        if score.findings.violated and len(self.violating) < MAX_VIOLATING_LISTED:
            self.violating.append(_violating_row(row, score))
        group = None if self.group_by is None else self.groups.group_of(row.group)
        if group is not None:
            self.groups.add(group, score)
        self.causes.add(score, group)

    def add_malformed(self, item: MalformedLine) -> None:
        self.malformed += 1
        if len(self.malformed_lines) < MAX_MALFORMED_LISTED:
            self.malformed_lines.append(item)

    def merge(self, later: Tally) -> None:
        """Add the counts of ``later``, a tally of the rows that follow this one's in the input.

        What the Ray engine's driver does with each shard's tally, in input order, so that
        the merged tally equals the one a single pass would have kept: integers add,
        counters add key by key (a key first seen in ``later`` after this tally's keys,
        as a single pass would have seen it), the listed malformed and violating rows
        extend up to their bounds, and the group and cause tallies merge group by group,
        after ``later``'s groups past the first `MAX_GROUPS` names are renamed
        ``(other)`` (`GroupTally.past_the_cap`; ``later`` is changed so). A new count
        field is added here too; ``tests/test_ray_parts.py`` compares every field of a
        tally merged into an empty one with the tally itself.

        Raises:
            ValueError: the two tallies group by different fields.
        """
        if later.group_by != self.group_by:
            msg = "tallies of one run group by one field"
            raise ValueError(msg)
        renames = self.groups.past_the_cap(later.groups)
        if renames:
            later.groups.rename(renames)
            later.causes.rename_groups(renames)
        self.groups.merge(later.groups)
        self.causes.merge(later.causes)
        self.rows += later.rows
        add_counts(self.outcomes, later.outcomes)
        add_counts(self.reasons, later.reasons)
        add_counts(self.citations, later.citations)
        self.deterministic += later.deterministic
        self.malformed += later.malformed
        self.malformed_lines = (self.malformed_lines + later.malformed_lines)[:MAX_MALFORMED_LISTED]
        self.judge_calls += later.judge_calls
        self.judge_saved += later.judge_saved
        self.judge_truncated += later.judge_truncated
        add_counts(self.judge_failures, later.judge_failures)
        add_counts(self.judge_codes, later.judge_codes)
        self.with_unrecognized += later.with_unrecognized
        add_counts(self.unrecognized_kinds, later.unrecognized_kinds)
        self.zero_based += later.zero_based
        self.out_from_zero += later.out_from_zero
        self.violating = (self.violating + later.violating)[:MAX_VIOLATING_LISTED]
        self.all_resolve += later.all_resolve
        self.unverifiable += later.unverifiable
        self.cite_nothing += later.cite_nothing
        add_counts(self.violations, later.violations)
        self.provider_rows += later.provider_rows
        add_counts(self.provider_citations, later.provider_citations)
        add_counts(self.citation_outcomes, later.citation_outcomes)
        add_counts(self.unchecked_reasons, later.unchecked_reasons)
        add_counts(self.judge_verdicts, later.judge_verdicts)

    def require_rows(self) -> None:
        """Raise NoRowsError if no row was read, naming the first malformed lines' reasons."""
        if self.rows == 0:
            # Every listed line's reason, grouped: when no line is readable
            # the file is likely another tool's, and the reasons say which --from.
            msg = (
                "the input holds no readable row"
                if self.malformed == 0
                else "no line of the input is a readable row: "
                + describe_unreadable(self.malformed, self.malformed_lines)
            )
            raise NoRowsError(msg)

    def summary(self, scorer: CitationScorer) -> CheckSummary:
        """The run's summary, naming the scorer's judge; NoRowsError if no row was read."""
        self.require_rows()
        judge = None
        if scorer.judge is not None:
            judge = ModelIdentity(
                provider=scorer.judge.provider,
                model=scorer.judge.model_name,
                prompt_sha256=scorer.prompt_sha256,
            )
        return CheckSummary(
            rows=self.rows,
            passed=self.outcomes["passed"],
            failed=self.outcomes["failed"],
            unassessed=self.outcomes["unassessed"],
            deterministic_failures=self.deterministic,
            reasons=dict(sorted(self.reasons.items(), key=lambda item: (-item[1], item[0]))),
            judge=judge,
            malformed=self.malformed,
            malformed_lines=tuple(self.malformed_lines),
            citations=self.citations,
            judge_calls=self.judge_calls,
            judge_calls_saved=self.judge_saved,
            judge_failures=_by_count(self.judge_failures),
            judge_provider_codes=_by_count(self.judge_codes),
            judge_replies_truncated=self.judge_truncated,
            rows_with_unrecognized=self.with_unrecognized,
            unrecognized=dict(
                sorted(self.unrecognized_kinds.items(), key=lambda item: (-item[1], item[0]))
            ),
            possible_zero_based_numbering=self.zero_based,
            out_of_range_numbered_from_zero=self.out_from_zero,
            violating_rows=tuple(self.violating[:MAX_VIOLATING_LISTED]),
            citations_all_resolve=self.all_resolve,
            rows_with_unverifiable_sources=self.unverifiable,
            citations_all_resolve_none_cited=self.cite_nothing,
            violations=dict(sorted(self.violations.items(), key=lambda item: (-item[1], item[0]))),
            rows_with_provider_citations=self.provider_rows,
            provider_citations=_by_count(self.provider_citations),
            failure_causes=self.causes.summary(),
            group_by=self.group_by,
            groups=self.groups.summary() if self.group_by is not None else {},
            headline=self._headline(),
            judge_verdicts=(
                None if judge is None else VerdictCounts.model_validate(self.judge_verdicts)
            ),
        )

    def _headline(self) -> CitationHeadline:
        outcomes = self.citation_outcomes
        return CitationHeadline(
            rows=self.rows,
            cite_only_given_sources=outcomes.get("cited", 0) + outcomes.get("cites_nothing", 0),
            cite_nothing=outcomes.get("cites_nothing", 0),
            violations=outcomes.get("violation", 0),
            unchecked=outcomes.get("unchecked", 0),
            unchecked_reasons=_by_count(self.unchecked_reasons),
            unreadable_lines=self.malformed,
        )


# How many offending markers a named violating row lists, and how long each may be.
_MARKERS_LISTED: Final = 5
_MARKER_CHARS: Final = 32


def _violating_row(row: CheckRow, score: CitationScore) -> ViolatingRow:
    """A row with a violation, named for the terminal: title, line, codes, markers."""
    labels = dict.fromkeys(m.label for m in score.findings.fabricated_citations)
    markers = tuple(printable(label)[:_MARKER_CHARS] for label in labels)
    return ViolatingRow(
        line=row.line,
        title=row_title(row.id, row.question, row.line, opaque=_per_run_id(row)),
        codes=tuple(score.findings.deterministic_failures),
        markers=markers[:_MARKERS_LISTED],
    )


def _per_run_id(row: CheckRow) -> bool:
    """Whether the row's id names one run only (``id_scope`` ``run``, where rows carry it)."""
    return getattr(row, "id_scope", None) == "run"


def _out_of_range_from_zero(findings: ScoreFindings) -> int:
    """1 when a 1-based row, every marker in range, cites its last source's number.

    Numbered from 0, that marker would name no source: the side of the numbering
    hint that ``possible_zero_based_numbering`` does not count. Constant memory: one
    pass over the row's resolved markers.
    """
    if findings.index_base != 1 or findings.sentence_coverage is None:
        return 0
    if findings.fabricated_citations or findings.possible_zero_based_numbering:
        return 0
    last = len(findings.labels) + len(findings.excluded_labels)
    return int(any(c.label.isdigit() and int(c.label) == last for c in findings.resolved_citations))


def _count(counts: dict[str, int], key: str) -> None:
    counts[key] = counts.get(key, 0) + 1


def _by_count(counts: dict[str, int]) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
