"""Counts by group (``--group-by FIELD``) and failures collapsed by cause, for ``check``.

A run over many pipelines' rows is read by model or by origin: `GroupTally` keeps the
summary's counts per value of one row field, and `CauseTally` collapses identical
failures (the same violation codes, or the same un-assessed reason) into one line with
a count, so a hundred identical fabrications are one cause, not a hundred rows.

Both are bounded: a group's name is the field's value cut to `MAX_GROUP_CHARS`
characters (with characters that are not printable replaced, so a name is safe in a
terminal); a missing or non-string value is the group ``(none)``; past `MAX_GROUPS`
distinct groups, later values are counted in ``(other)``. Causes are drawn from a
fixed vocabulary of codes, so there are few of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from citemark._judging.assertions import citation_outcome
from citemark._pipelines.eval_report import FailureCause, GroupCounts

if TYPE_CHECKING:
    from citemark._judging.scorer.scorer import CitationScore

__all__ = [
    "MAX_GROUPS",
    "MAX_GROUP_CHARS",
    "NO_GROUP",
    "OTHER_GROUP",
    "CauseTally",
    "GroupNames",
    "GroupTally",
    "failure_cause",
    "group_name",
]

MAX_GROUPS: Final = 100
"""How many distinct groups are counted by name; the rest go to `OTHER_GROUP`."""
MAX_GROUP_CHARS: Final = 64
"""How many characters of a field's value name its group."""
NO_GROUP: Final = "(none)"
"""The group of a row whose field is missing or not a string."""
OTHER_GROUP: Final = "(other)"
"""The group of every row past the first `MAX_GROUPS` distinct values."""
BELOW_THRESHOLD: Final = "judge_score_below_threshold"
"""The cause of a row that was assessed and failed without a deterministic violation."""
_REPLACEMENT: Final = "\ufffd"


def group_name(value: object) -> str:
    """The group a row's field value names: the value cut short, made printable."""
    if not isinstance(value, str):
        return NO_GROUP
    cut = value[:MAX_GROUP_CHARS]
    # Control characters and lone surrogates would reach a terminal or a JSON file.
    cleaned = "".join(
        ch if ch.isprintable() and not "\ud800" <= ch <= "\udfff" else _REPLACEMENT for ch in cut
    )
    return cleaned + ("\u2026" if len(value) > MAX_GROUP_CHARS else "")


def failure_cause(score: CitationScore) -> tuple[str, str] | None:
    """A row's failure as ``(outcome, cause)``, or None for a row that is no failure.

    A failed row's cause is its violation codes joined with ``+`` (or
    ``judge_score_below_threshold``); an un-assessed row's is its reason, except
    ``no_judge``, which is the run's choice, not the row's failure.
    """
    if score.assessed and score.passed:
        return None
    codes = score.findings.deterministic_failures
    if codes:
        return "failed", "+".join(codes)
    if score.assessed:
        return "failed", BELOW_THRESHOLD
    reason = score.reason or "unknown"
    if reason == "no_judge":
        return None
    return "unassessed", reason


class GroupNames:
    """The group of each row, named in input order.

    The first `MAX_GROUPS` distinct names are kept; every later value is in
    `OTHER_GROUP`. The summary's tally and the page name rows with it alike.
    """

    def __init__(self) -> None:
        self._seen: set[str] = set()

    def group_of(self, value: object) -> str:
        """The group a row with field value ``value`` is counted in."""
        name = group_name(value)
        if name not in self._seen:
            if len(self._seen) >= MAX_GROUPS:
                return OTHER_GROUP
            self._seen.add(name)
        return name


class GroupTally:
    """The summary's counts per group, bounded by `MAX_GROUPS`."""

    def __init__(self) -> None:
        self._names = GroupNames()
        self._counts: dict[str, dict[str, int]] = {}
        self._violations: dict[str, dict[str, int]] = {}
        self._reasons: dict[str, dict[str, int]] = {}

    def group_of(self, value: object) -> str:
        """The group a row with field value ``value`` is counted in (see `GroupNames`)."""
        return self._names.group_of(value)

    def add(self, group: str, score: CitationScore) -> None:
        """Count one scored row in ``group`` (a name from `group_of`)."""
        counts = self._counts.setdefault(group, {})
        findings = score.findings
        outcome = "unassessed" if not score.assessed else "passed" if score.passed else "failed"
        resolves = (
            findings.sentence_coverage is not None
            and not findings.fabricated_citations
            and not findings.ambiguous_citations
        )
        cited = citation_outcome(findings)
        for key, hit in (
            ("rows", True),
            (outcome, True),
            ("cite_only_given_sources", cited in {"cited", "cites_nothing"}),
            ("cite_nothing", cited == "cites_nothing"),
            ("unchecked", cited == "unchecked"),
            ("deterministic_failures", score.is_violation),
            ("citations_all_resolve", resolves),
            ("rows_with_unrecognized", bool(findings.unrecognized)),
            ("rows_with_unverifiable_sources", bool(findings.unverifiable_sources)),
            ("possible_zero_based_numbering", findings.possible_zero_based_numbering),
        ):
            if hit:
                counts[key] = counts.get(key, 0) + 1
        violations = self._violations.setdefault(group, {})
        for code in findings.deterministic_failures:
            violations[code] = violations.get(code, 0) + 1
        if not score.assessed and score.reason is not None:
            reasons = self._reasons.setdefault(group, {})
            reasons[score.reason] = reasons.get(score.reason, 0) + 1

    def summary(self) -> dict[str, GroupCounts]:
        """Each group's counts, most rows first, then by name."""
        order = sorted(self._counts, key=lambda name: (-self._counts[name]["rows"], name))
        return {
            name: GroupCounts(
                **self._counts[name],
                violations=_by_count(self._violations.get(name, {})),
                reasons=_by_count(self._reasons.get(name, {})),
            )
            for name in order
        }


class CauseTally:
    """Failures collapsed by cause, each with its count and, when grouping, per group."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str], int] = {}
        self._groups: dict[tuple[str, str], dict[str, int]] = {}

    def add(self, score: CitationScore, group: str | None) -> None:
        """Count one scored row's failure, if it is one."""
        cause = failure_cause(score)
        if cause is None:
            return
        self._rows[cause] = self._rows.get(cause, 0) + 1
        if group is not None:
            groups = self._groups.setdefault(cause, {})
            groups[group] = groups.get(group, 0) + 1

    def summary(self) -> tuple[FailureCause, ...]:
        """The causes, most rows first, failures before un-assessed rows on a tie."""
        order = sorted(self._rows, key=lambda key: (-self._rows[key], key))
        return tuple(
            FailureCause(
                outcome="failed" if outcome == "failed" else "unassessed",
                cause=cause,
                rows=self._rows[outcome, cause],
                groups=_by_count(self._groups.get((outcome, cause), {})),
            )
            for outcome, cause in order
        )


def _by_count(counts: dict[str, int]) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
