"""Comparing two check runs: rows matched by id, question or line, each change named.

Rows are matched by their ``id`` where the two runs share ids (a per-run id, a
record's ``"id_scope": "run"``, is never one), else by their question (the digest
their ``rows.jsonl`` records carry), else by their line; ``match`` forces one rule
(`citemark._pipelines.diff.matching` says exactly how). A key given more than once is matched
occurrence by occurrence. Two runs over the same questions are compared whatever
their answers and whatever run ids they carry: that is the comparison a changed
pipeline, or two days of a recorded one, needs. Only two runs that share no row
under the rule are refused.

A matched row *changed* when its outcome, its reason or its judge verdict differs,
and each change says why:

- ``new_violation``: the new row fails on a deterministic finding, the old one did not;
- ``violation_resolved``: the other way round;
- ``judge_verdict_changed``: the judge's band or its per-citation verdicts differ;
- ``reason_changed``: the un-assessed reason (or a malformed line's reason) differs;
- ``outcome_changed``: the outcome differs for none of the reasons above.

A matched row whose advisory support verdicts (``check --verifier``) changed is not a
change of its result: it is listed apart (`SupportRowChange`: each citation, by sentence
and source number, whose verdict alone changed, and each sentence whose recall did),
counted in `SupportDiff`, and compared only when both runs were checked by verifiers of
one identity (`citemark._pipelines.diff.support`).

A row only in the new run is ``added``, one only in the old run ``removed``. Over
every matched row the comparison also counts how many changed answer, sources or
question (from the digests, when both records carry them), and it names every check
option, version and judge field that differs between the two reports, with both
values: two instruments, not one.

Neither run is held in memory: the old run's rows go into an on-disk index
(`citemark._pipelines.diff.index.RowIndex`), the new run's are streamed against it, and the
changes are read back from the index by whatever renders them (`compared`). Every
``rows.jsonl`` line is read through a typed record whose findings are a
`citemark._judging.scorer.findings.ScoreFindings` (`citemark._pipelines.diff.runs`), and each
``rows.jsonl`` is held to its ``report.json`` (the run id of every record, the file's
SHA-256 and its count of records) as it streams: rows that are not the run the report
describes are refused, never compared.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from citemark._contract.artifacts import ModelIdentity
from citemark._contract.errors import RunDiffError
from citemark._pipelines.diff.index import RowIndex
from citemark._pipelines.diff.matching import (
    MATCH_RULES,
    MatchRule,
    RowKeys,
    kind_of,
    row_keys,
    shared_id_key,
)
from citemark._pipelines.diff.runs import (
    MatchKind,
    RowFacts,
    RunInfo,
    read_ids,
    read_report,
    read_rows,
    read_support,
    shown_lines,
)
from citemark._pipelines.diff.support import (
    SupportFlip,
    SupportVerifier,
    flips,
    why_not_compared,
)

if TYPE_CHECKING:
    import os
    from collections.abc import Callable, Iterable, Iterator

__all__ = [
    "ChangeKind",
    "Difference",
    "InputPart",
    "RowChange",
    "RowState",
    "RunDiff",
    "SupportDiff",
    "SupportRowChange",
    "compare_runs",
    "compared",
]

ChangeKind = Literal[
    "new_violation",
    "violation_resolved",
    "judge_verdict_changed",
    "reason_changed",
    "outcome_changed",
    "added",
    "removed",
]
InputPart = Literal["question", "answer", "sources"]
"""A part of a row's input whose change a comparison counts."""

_INPUT_PARTS: Final[tuple[InputPart, ...]] = ("answer", "sources", "question")
# Configuration keys that name where a run read and wrote, not how it checked.
_NOT_OPTIONS: Final = frozenset({"command", "input", "out"})


class RowState(BaseModel):
    """What one run says about one row: the facts a comparison looks at."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    line: int
    """The row's line in that run's input (the ``N`` of ``report.html#row-N``)."""
    outcome: str
    """``passed``, ``failed``, ``unassessed`` or ``malformed``."""
    reason: str | None
    """The un-assessed reason code, or a malformed line's reason; None otherwise."""
    violation: bool
    """Whether the row failed on a deterministic finding."""
    judge_band: int | None
    """The judge's band (0-3) as it replied, or None."""
    verdicts: tuple[str, ...]
    """The judge's per-citation outcomes, in occurrence order."""
    record: int = 0
    """The row's line in that run's ``rows.jsonl``."""
    on_page: bool | None = None
    """Whether that run's ``report.html`` shows the row; None when the page could not be read."""


class RowChange(BaseModel):
    """One row whose result differs between the runs, and why."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    id: str | None
    """The row's id (the new run's, else the old run's), or None when it has none; a
    per-run id is shown, never matched by."""
    old: RowState | None
    """The old run's result; None for an added row."""
    new: RowState | None
    """The new run's result; None for a removed row."""
    why: tuple[ChangeKind, ...]
    """What changed, most telling first."""
    matched_by: MatchKind | None = None
    """What the two records were matched by; None for an added or removed row."""
    inputs_changed: tuple[InputPart, ...] = ()
    """Which of the row's answer, sources and question changed (when both records say)."""


class Difference(BaseModel):
    """One setting that differs between the two runs, with both values."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    name: str
    """The setting: a ``report.json`` ``config`` key, a version, or a judge field."""
    old: JsonValue
    """The old run's value (None when it does not record it)."""
    new: JsonValue
    """The new run's value (None when it does not record it)."""


class SupportRowChange(BaseModel):
    """One matched row whose advisory support verdicts changed: each citation that did."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    id: str | None
    """The row's id (the new run's), or None; as `RowChange.id`."""
    old_line: int
    """The row's line in the old run's input."""
    new_line: int
    """The row's line in the new run's input."""
    flips: tuple[SupportFlip, ...]
    """Each citation whose verdict alone changed and each sentence whose recall did."""


class SupportDiff(BaseModel):
    """The two runs' advisory support compared: whether, why not, and how many changed."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    compared: bool
    """Whether the verdicts were compared: both runs checked by one verifier identity."""
    why_not: str | None
    """Why not, in structural words; None when they were compared."""
    old_verifier: SupportVerifier | None
    """The old run's verifier, or None."""
    new_verifier: SupportVerifier | None
    """The new run's verifier, or None."""
    rows: int = 0
    """Matched rows with verdicts from that verifier in both runs."""
    rows_changed: int = 0
    """Of those, rows whose verdicts changed."""
    citations_changed: int = 0
    """Citations whose verdict alone changed, over those rows."""
    recalls_changed: int = 0
    """Sentences whose recall changed, over those rows."""


class RunDiff(BaseModel):
    """Two runs compared: totals, the instruments, and every changed row."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    old_input_sha256: str
    """The old run's input hash."""
    new_input_sha256: str
    """The new run's input hash."""
    same_input: bool
    """Whether both runs read the same bytes."""
    old_judge: ModelIdentity | None
    """The old run's judge, or None."""
    new_judge: ModelIdentity | None
    """The new run's judge, or None."""
    same_judge: bool
    """Whether the judges (provider, model and prompt hash) are one instrument."""
    compared: int
    """Rows found in both runs."""
    unchanged: int
    """Of those, rows with the same outcome, reason and verdict."""
    changed: int
    """Of those, rows that differ."""
    added: int
    """Rows only in the new run."""
    removed: int
    """Rows only in the old run."""
    why: dict[str, int]
    """How many rows carry each change kind (a row may carry several)."""
    transitions: dict[str, int]
    """How many rows went from one outcome to another, as ``"old->new"``."""
    matched_by: dict[str, int] = Field(default_factory=dict)
    """How many compared rows were matched by ``id``, ``question`` and ``line`` (a rule
    that matched no row is left out)."""
    match: MatchRule = "auto"
    """The rule asked for: ``auto``, or the one rule ``--match`` forced."""
    ids_compared: bool = False
    """Whether rows were matched by their ids: under ``auto``, whether the two runs
    share at least one id (per-run ids not counted); under ``id``, always."""
    per_run_ids: dict[str, int] = Field(default_factory=dict)
    """How many rows of the ``old`` and the ``new`` run have a per-run id (a run,
    trace or span id), which no row is matched by."""
    inputs_recorded: int = 0
    """Compared rows whose records both carry input digests (what ``inputs_changed``
    counts over); 0 for runs whose ``rows.jsonl`` records none."""
    inputs_changed: dict[str, int] = Field(default_factory=dict)
    """Of those, how many changed ``answer``, ``sources`` and ``question``."""
    option_differences: tuple[Difference, ...] = ()
    """Each check option (a ``report.json`` ``config`` key) whose values differ."""
    version_differences: tuple[Difference, ...] = ()
    """``citemark_version`` and ``schema_version``, where they differ."""
    judge_differences: tuple[Difference, ...] = ()
    """Each judge field (``provider``, ``model``, ``prompt_sha256``) that differs, or
    ``judge`` itself when only one run had one."""
    changes: tuple[RowChange, ...]
    """Every changed, added or removed row: the new run's order, then removed rows."""
    support: SupportDiff | None = None
    """The advisory support verdicts compared (``check --verifier``); advisory only."""
    support_changes: tuple[SupportRowChange, ...] = ()
    """Every matched row whose support verdicts changed, in the new run's order."""


def compare_runs(
    old_dir: str | os.PathLike[str],
    new_dir: str | os.PathLike[str],
    *,
    match: MatchRule = "auto",
) -> RunDiff:
    """Compare the ``citemark check`` outputs in two folders.

    The result holds every changed row; ``citemark diff`` streams them instead, in
    memory that does not grow with the runs (`compared`).

    Args:
        old_dir: The earlier run's output folder.
        new_dir: The later run's output folder.
        match: How rows are paired: ``auto`` (by id where the runs share ids, per-run
            ids never; else by question, else by line), or ``id``, ``question`` or
            ``line`` alone.

    Returns:
        The comparison.

    Raises:
        RunDiffError: a folder lacks ``report.json`` or ``rows.jsonl``, a line of
            ``rows.jsonl`` is not a row record, a ``rows.jsonl`` is not the one its
            ``report.json`` describes (a record of another run, another SHA-256 or
            another count of records), or the runs share no row.
        ValueError: ``match`` is not one of the rules.
    """
    with compared(old_dir, new_dir, match=match) as (summary, changes, support_changes):
        return summary.model_copy(
            update={"changes": tuple(changes()), "support_changes": tuple(support_changes())}
        )


@contextlib.contextmanager
def compared(
    old_dir: str | os.PathLike[str],
    new_dir: str | os.PathLike[str],
    *,
    match: MatchRule = "auto",
) -> Iterator[
    tuple[RunDiff, Callable[[], Iterator[RowChange]], Callable[[], Iterator[SupportRowChange]]]
]:
    """Compare two runs on disk; yield the totals (lists empty), the changes and support's.

    The second value reads the changes back from the on-disk index, in order, each
    time it is called, while the block lasts; the third reads the rows whose support
    verdicts changed the same way; leaving the block removes the index.

    Raises:
        RunDiffError: as `compare_runs`.
        ValueError: as `compare_runs`.
    """
    if match not in MATCH_RULES:
        msg = f"match must be one of: {', '.join(MATCH_RULES)}"
        raise ValueError(msg)
    old_path, new_path = Path(old_dir), Path(new_dir)
    old_run, new_run = read_report(old_path), read_report(new_path)
    with RowIndex() as index:
        old_page, new_page = shown_lines(old_path), shown_lines(new_path)
        tally = _Tally(match)
        support = _SupportTally(old_run, new_run, old_path)
        index.load(tally.keyed("old", read_rows(old_path, old_run.seal)))
        tally.ids_compared = match == "id" or (
            match == "auto" and tally.old_ids > 0 and _share_an_id(index, new_path)
        )
        # Only old rows with an id the new run does not share have two different keys.
        without_ids = match == "auto" and tally.old_ids > 0 and not tally.ids_compared
        if without_ids:
            index.index_without_ids()
        for new, keys in tally.keyed("new", read_rows(new_path, new_run.seal)):
            key = keys.with_ids if tally.ids_compared else keys.without_ids
            old = None if key is None else index.take(key, without_ids=without_ids)
            if old is None or key is None:
                tally.added += 1
                tally.note("added")
                index.record(
                    _dump(RowChange(id=new.id, old=None, new=_state(new, new_page), why=("added",)))
                )
                continue
            support_change = support.compare(old, new)
            if support_change is not None:
                index.record(_dump(support_change), table="support")
            change = tally.compare(old, new, kind_of(key))
            if change is not None:
                why, inputs = change
                index.record(
                    _dump(
                        RowChange(
                            id=new.id,
                            old=_state(old, old_page),
                            new=_state(new, new_page),
                            why=why,
                            matched_by=kind_of(key),
                            inputs_changed=inputs,
                        )
                    )
                )
        if tally.compared == 0:
            msg = (
                f"{old_run.name} and {new_run.name} share no row ({_rule_words(tally)}): "
                "there is nothing to compare"
            )
            raise RunDiffError(msg)
        for old in index.left():
            tally.removed += 1
            tally.note("removed")
            index.record(
                _dump(RowChange(id=old.id, old=_state(old, old_page), new=None, why=("removed",)))
            )
        summary = _summary(old_run, new_run, tally).model_copy(
            update={"support": support.summary()}
        )
        yield (
            summary,
            lambda: (RowChange.model_validate(json.loads(t)) for t in index.changes()),
            lambda: (
                SupportRowChange.model_validate(json.loads(t)) for t in index.changes("support")
            ),
        )


def _share_an_id(index: RowIndex, new_path: Path) -> bool:
    """Whether a row of the new run has an id (not a per-run one) an old row has."""
    return any(index.has(shared_id_key(row_id)) for row_id in read_ids(new_path))


def _rule_words(tally: _Tally) -> str:
    """How rows were matched, for the refusal: the rule, and why ids were or were not used."""
    if tally.match != "auto":
        return f"matched by {tally.match} only, as asked"
    if tally.ids_compared:
        return "matched by id where a row has one, else by question, else by line"
    per_run = tally.per_run["old"] + tally.per_run["new"]
    why = "the runs share no id" + (f"; {per_run} per-run ids not compared" if per_run else "")
    return f"matched by question, else by line: {why}"


def _dump(change: RowChange | SupportRowChange) -> str:
    return json.dumps(change.model_dump(mode="json"), ensure_ascii=True, separators=(",", ":"))


def _state(facts: RowFacts, page: frozenset[int] | None) -> RowState:
    return RowState(
        line=facts.line,
        outcome=facts.outcome,
        reason=facts.reason,
        violation=facts.violation,
        judge_band=facts.judge_band,
        verdicts=facts.verdicts,
        record=facts.record,
        on_page=None if page is None else (facts.outcome != "malformed" and facts.line in page),
    )


class _SupportTally:
    """The support verdicts of matched rows, compared when one verifier judged both runs."""

    def __init__(self, old: RunInfo, new: RunInfo, old_path: Path) -> None:
        self.old, self.new, self.old_path = old.verifier, new.verifier, old_path
        self.why_not = why_not_compared(old.verifier, new.verifier)
        self.rows = self.rows_changed = self.citations = self.recalls = 0

    def compare(self, old: RowFacts, new: RowFacts) -> SupportRowChange | None:
        """The pair's changed verdicts, or None when none changed or they are not compared."""
        if self.why_not is not None or old.support is None or new.marks is None:
            return None
        if new.support is None or old.support.split("|")[0] != new.support.split("|")[0]:
            return None  # a row judged by another verifier than its run's: not compared
        self.rows += 1
        if old.support == new.support:
            return None
        found = flips(read_support(self.old_path, old.offset, old.support), new.marks)
        if not found:
            return None
        self.rows_changed += 1
        for flip in found:
            if flip.source is None:
                self.recalls += 1
            else:
                self.citations += 1
        return SupportRowChange(id=new.id, old_line=old.line, new_line=new.line, flips=found)

    def summary(self) -> SupportDiff:
        return SupportDiff(
            compared=self.why_not is None,
            why_not=self.why_not,
            old_verifier=self.old,
            new_verifier=self.new,
            rows=self.rows,
            rows_changed=self.rows_changed,
            citations_changed=self.citations,
            recalls_changed=self.recalls,
        )


class _Tally:
    def __init__(self, match: MatchRule) -> None:
        self.match: MatchRule = match
        self.ids_compared = False
        self.old_ids = 0
        self.per_run: dict[str, int] = {"old": 0, "new": 0}
        self.compared = self.changed = self.added = self.removed = 0
        self.why: dict[str, int] = {}
        self.transitions: dict[str, int] = {}
        self.matched_by: dict[str, int] = {}
        self.inputs_recorded = 0
        self.inputs_changed: dict[str, int] = dict.fromkeys(_INPUT_PARTS, 0)

    def note(self, kind: str) -> None:
        self.why[kind] = self.why.get(kind, 0) + 1

    def keyed(self, side: str, rows: Iterable[RowFacts]) -> Iterator[tuple[RowFacts, RowKeys]]:
        """Each row of one run with its keys, counting its per-run (and, old, other) ids."""
        for facts in rows:
            if facts.per_run:
                self.per_run[side] += 1
            elif facts.id is not None and side == "old":
                self.old_ids += 1
            yield facts, row_keys(facts, self.match)

    def compare(
        self, old: RowFacts, new: RowFacts, kind: MatchKind
    ) -> tuple[tuple[ChangeKind, ...], tuple[InputPart, ...]] | None:
        """Count one pair matched by ``kind``; what changed and which inputs changed, or None."""
        self.compared += 1
        self.matched_by[kind] = self.matched_by.get(kind, 0) + 1
        inputs = self._inputs(old, new)
        why = _why(old, new)
        if not why:
            return None
        self.changed += 1
        for change in why:
            self.note(change)
        if old.outcome != new.outcome:
            transition = f"{old.outcome}->{new.outcome}"
            self.transitions[transition] = self.transitions.get(transition, 0) + 1
        return why, inputs

    def _inputs(self, old: RowFacts, new: RowFacts) -> tuple[InputPart, ...]:
        if old.digests is None or new.digests is None:
            return ()
        self.inputs_recorded += 1
        changed = tuple(
            part
            for part in _INPUT_PARTS
            if getattr(old.digests, part) != getattr(new.digests, part)
        )
        for part in changed:
            self.inputs_changed[part] += 1
        return changed


def _why(old: RowFacts, new: RowFacts) -> tuple[ChangeKind, ...]:
    why: list[ChangeKind] = []
    if new.violation and not old.violation:
        why.append("new_violation")
    if old.violation and not new.violation:
        why.append("violation_resolved")
    if (old.judge_band, old.verdicts) != (new.judge_band, new.verdicts):
        why.append("judge_verdict_changed")
    if old.reason != new.reason:
        why.append("reason_changed")
    if not why and old.outcome != new.outcome:
        why.append("outcome_changed")
    return tuple(why)


def _ranked(counts: dict[str, int]) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def _summary(old: RunInfo, new: RunInfo, tally: _Tally) -> RunDiff:
    return RunDiff(
        old_input_sha256=old.input_sha256,
        new_input_sha256=new.input_sha256,
        same_input=old.input_sha256 == new.input_sha256,
        old_judge=old.judge,
        new_judge=new.judge,
        same_judge=old.judge == new.judge,
        compared=tally.compared,
        unchanged=tally.compared - tally.changed,
        changed=tally.changed,
        added=tally.added,
        removed=tally.removed,
        why=_ranked(tally.why),
        transitions=_ranked(tally.transitions),
        matched_by=_ranked(tally.matched_by),
        match=tally.match,
        ids_compared=tally.ids_compared,
        per_run_ids=dict(tally.per_run),
        inputs_recorded=tally.inputs_recorded,
        inputs_changed=tally.inputs_changed if tally.inputs_recorded else {},
        option_differences=_option_differences(old, new),
        version_differences=_differences(
            {"citemark_version": old.citemark_version, "schema_version": old.schema_version},
            {"citemark_version": new.citemark_version, "schema_version": new.schema_version},
        ),
        judge_differences=_judge_differences(old.judge, new.judge),
        changes=(),
    )


def _differences(old: dict[str, JsonValue], new: dict[str, JsonValue]) -> tuple[Difference, ...]:
    names = [*old, *(name for name in new if name not in old)]
    return tuple(
        Difference(name=name, old=old.get(name), new=new.get(name))
        for name in names
        if old.get(name) != new.get(name) or (name in old) != (name in new)
    )


def _option_differences(old: RunInfo, new: RunInfo) -> tuple[Difference, ...]:
    return _differences(
        {key: value for key, value in old.config.items() if key not in _NOT_OPTIONS},
        {key: value for key, value in new.config.items() if key not in _NOT_OPTIONS},
    )


def _judge_differences(
    old: ModelIdentity | None, new: ModelIdentity | None
) -> tuple[Difference, ...]:
    if old is None or new is None:
        if old == new:
            return ()
        return (
            Difference(
                name="judge",
                old=None if old is None else old.model_dump(mode="json"),
                new=None if new is None else new.model_dump(mode="json"),
            ),
        )
    return _differences(old.model_dump(mode="json"), new.model_dump(mode="json"))
