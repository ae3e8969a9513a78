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

from typing import TYPE_CHECKING, Final, TypeVar

from citemark._judging.assertions import citation_outcome
from citemark._pipelines.eval_report import FailureCause, GroupCounts

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from citemark._judging.scorer.scorer import CitationScore

__all__ = [
    "MAX_GROUPS",
    "MAX_GROUP_CHARS",
    "NO_GROUP",
    "OTHER_GROUP",
    "CauseTally",
    "GroupNames",
    "GroupTally",
    "add_counts",
    "add_nested",
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
_K = TypeVar("_K")
_V = TypeVar("_V", int, dict[str, int])


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

    Args:
        every_group: Keep every distinct name, none in `OTHER_GROUP`: a Ray shard's
            names, since which ones the run counts by name depends on the shards
            before it (the driver's merge, `GroupTally.past_the_cap`, decides).
    """

    def __init__(self, *, every_group: bool = False) -> None:
        self._seen: set[str] = set()
        self._every_group = every_group

    def group_of(self, value: object) -> str:
        """The group a row with field value ``value`` is counted in."""
        name = group_name(value)
        if name not in self._seen:
            if not self._every_group and len(self._seen) >= MAX_GROUPS:
                return OTHER_GROUP
            self._seen.add(name)
        return name

    def named(self) -> frozenset[str]:
        """The names counted by name so far."""
        return frozenset(self._seen)

    def merge(self, later: GroupNames) -> None:
        """Count ``later``'s names by name too."""
        self._seen.update(later.named())

    def forget(self, names: Iterable[str]) -> None:
        """Stop counting ``names`` by name (they were folded into `OTHER_GROUP`)."""
        self._seen.difference_update(names)


class GroupTally:
    """The summary's counts per group, bounded by `MAX_GROUPS`.

    Args:
        every_group: Count every group by name (see `GroupNames`): a Ray shard's tally.
    """

    def __init__(self, *, every_group: bool = False) -> None:
        self._names = GroupNames(every_group=every_group)
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

    def past_the_cap(self, later: GroupTally) -> dict[str, str]:
        """``later``'s groups a single pass would count in `OTHER_GROUP`, each to `OTHER_GROUP`.

        ``later`` counted the rows that follow this tally's. A single pass counts the
        first `MAX_GROUPS` distinct names in input order by name: this tally's, then
        ``later``'s new ones in the order it first counted them, until there are
        `MAX_GROUPS`; every other name of ``later`` is renamed.
        """
        seen = set(self._names.named())
        renames: dict[str, str] = {}
        for name in later._counts:
            if name in seen or name == OTHER_GROUP:
                continue
            if len(seen) < MAX_GROUPS:
                seen.add(name)
            else:
                renames[name] = OTHER_GROUP
        return renames

    def rename(self, renames: Mapping[str, str]) -> None:
        """Count each group of ``renames`` under its new name, adding where names meet."""
        self._counts = _renamed(self._counts, renames)
        self._violations = _renamed(self._violations, renames)
        self._reasons = _renamed(self._reasons, renames)
        self._names.forget(renames)

    def merge(self, later: GroupTally) -> None:
        """Add ``later``'s counts, group by group (its groups past the cap renamed first)."""
        self._names.merge(later._names)
        add_nested(self._counts, later._counts)
        add_nested(self._violations, later._violations)
        add_nested(self._reasons, later._reasons)

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

    def rename_groups(self, renames: Mapping[str, str]) -> None:
        """Count each cause's groups of ``renames`` under their new name (see `GroupTally`)."""
        self._groups = {cause: _renamed(groups, renames) for cause, groups in self._groups.items()}

    def merge(self, later: CauseTally) -> None:
        """Add ``later``'s causes and their groups' counts."""
        add_counts(self._rows, later._rows)
        add_nested(self._groups, later._groups)

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


# --- merging tallies (the Ray engine's shards, in input order) ---
def add_counts(into: dict[_K, int], counts: Mapping[_K, int]) -> None:
    """Add ``counts`` into ``into`` key by key; a new key keeps its place after ``into``'s.

    That is the order a single pass over both tallies' rows would have seen the keys in.
    """
    for key, value in counts.items():
        into[key] = into.get(key, 0) + value


def add_nested(into: dict[_K, dict[str, int]], counts: Mapping[_K, dict[str, int]]) -> None:
    """`add_counts` one level down: each key's counter added key by key."""
    for key, inner in counts.items():
        add_counts(into.setdefault(key, {}), inner)


def _renamed(counts: dict[str, _V], renames: Mapping[str, str]) -> dict[str, _V]:
    """``counts`` with keys renamed; the counters of keys that meet are added (`add_counts`)."""
    out: dict[str, _V] = {}
    for key, value in counts.items():
        new = renames.get(key, key)
        if new not in out:
            out[new] = value
        elif isinstance(value, int):
            out[new] += value
        else:
            add_counts(out[new], value)
    return out
