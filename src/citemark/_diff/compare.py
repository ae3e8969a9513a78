"""Comparing two check runs: rows matched by id (or line), each change named.

Rows are matched by their ``id``; a row without one is matched by its line number,
and an id given more than once is matched occurrence by occurrence. A matched row
*changed* when its outcome, its reason or its judge verdict differs, and each change
says why:

- ``new_violation``: the new row fails on a deterministic finding, the old one did not;
- ``violation_resolved``: the other way round;
- ``judge_verdict_changed``: the judge's band or its per-citation verdicts differ;
- ``reason_changed``: the un-assessed reason (or a malformed line's reason) differs;
- ``outcome_changed``: the outcome differs for none of the reasons above.

A row only in the new run is ``added``, one only in the old run ``removed``. Runs over
different inputs (their ``input_sha256`` differ) are refused unless the caller says
to compare them anyway, and a difference in the judge's identity or prompt hash is
reported: two instruments, not one.

The old run's rows are held in memory as small tuples (outcome, reason, verdict); the
new run's are streamed. Both files are read as regular files only, and each line is
parsed strictly (`citemark._strictjson.loads_strict`), so a line nested past the
parser's depth is refused as ``check`` refuses one, with a structural reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, ValidationError

from citemark._artifacts import ModelIdentity, open_regular
from citemark._errors import RunDiffError
from citemark._reports import EvalReport
from citemark._strictjson import StrictJSONError, line_reason, loads_strict

if TYPE_CHECKING:
    import os
    from collections.abc import Iterator

__all__ = ["ChangeKind", "RowChange", "RowState", "RunDiff", "compare_runs"]

ChangeKind = Literal[
    "new_violation",
    "violation_resolved",
    "judge_verdict_changed",
    "reason_changed",
    "outcome_changed",
    "added",
    "removed",
]

_REPORT: Final = "report.json"
_ROWS: Final = "rows.jsonl"


class RowState(BaseModel):
    """What one run says about one row: the facts a comparison looks at."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    line: int
    """The row's line in that run's input."""
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


class RowChange(BaseModel):
    """One row whose result differs between the runs, and why."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    id: str | None
    """The row's id, or None when it is matched by line."""
    old: RowState | None
    """The old run's result; None for an added row."""
    new: RowState | None
    """The new run's result; None for a removed row."""
    why: tuple[ChangeKind, ...]
    """What changed, most telling first."""


class RunDiff(BaseModel):
    """Two runs compared: totals, the judges, and every changed row in the new run's order."""

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
    changes: tuple[RowChange, ...]
    """Every changed, added or removed row: the new run's order, then removed rows."""


class _Key(NamedTuple):
    id: str | None
    nth: int


def compare_runs(
    old_dir: str | os.PathLike[str],
    new_dir: str | os.PathLike[str],
    *,
    allow_different_inputs: bool = False,
) -> RunDiff:
    """Compare the ``citemark check`` outputs in two folders.

    Args:
        old_dir: The earlier run's output folder.
        new_dir: The later run's output folder.
        allow_different_inputs: Compare runs whose inputs differ (rows are then
            matched by id or line all the same).

    Returns:
        The comparison.

    Raises:
        RunDiffError: a folder lacks ``report.json`` or ``rows.jsonl``, a line of
            ``rows.jsonl`` is not a row record, or the inputs differ and
            ``allow_different_inputs`` is false.
    """
    old_report, new_report = _report(Path(old_dir)), _report(Path(new_dir))
    same_input = old_report.input_sha256 == new_report.input_sha256
    if not same_input and not allow_different_inputs:
        msg = (
            f"the runs read different inputs (input_sha256 {old_report.input_sha256[:12]}... "
            f"and {new_report.input_sha256[:12]}...); pass allow_different_inputs "
            "(--allow-different-inputs) to compare them anyway"
        )
        raise RunDiffError(msg)
    old_judge = old_report.check.judge if old_report.check else None
    new_judge = new_report.check.judge if new_report.check else None
    old_rows = dict(_states(Path(old_dir) / _ROWS))
    tally = _Tally()
    changes: list[RowChange] = []
    for key, new in _states(Path(new_dir) / _ROWS):
        old = old_rows.pop(key, None)
        if old is None:
            tally.added += 1
            changes.append(RowChange(id=key.id, old=None, new=new, why=("added",)))
            continue
        tally.compared += 1
        why = _why(old, new)
        if not why:
            continue
        tally.changed += 1
        tally.count(why, old.outcome, new.outcome)
        changes.append(RowChange(id=key.id, old=old, new=new, why=why))
    for key, old in old_rows.items():
        tally.removed += 1
        changes.append(RowChange(id=key.id, old=old, new=None, why=("removed",)))
    for change in changes:
        if change.why in {("added",), ("removed",)}:
            tally.why[change.why[0]] = tally.why.get(change.why[0], 0) + 1
    return RunDiff(
        old_input_sha256=old_report.input_sha256,
        new_input_sha256=new_report.input_sha256,
        same_input=same_input,
        old_judge=old_judge,
        new_judge=new_judge,
        same_judge=old_judge == new_judge,
        compared=tally.compared,
        unchanged=tally.compared - tally.changed,
        changed=tally.changed,
        added=tally.added,
        removed=tally.removed,
        why=dict(sorted(tally.why.items(), key=lambda item: (-item[1], item[0]))),
        transitions=dict(sorted(tally.transitions.items(), key=lambda item: (-item[1], item[0]))),
        changes=tuple(changes),
    )


class _Tally:
    def __init__(self) -> None:
        self.compared = self.changed = self.added = self.removed = 0
        self.why: dict[str, int] = {}
        self.transitions: dict[str, int] = {}

    def count(self, why: tuple[ChangeKind, ...], old: str, new: str) -> None:
        for kind in why:
            self.why[kind] = self.why.get(kind, 0) + 1
        if old != new:
            transition = f"{old}->{new}"
            self.transitions[transition] = self.transitions.get(transition, 0) + 1


def _why(old: RowState, new: RowState) -> tuple[ChangeKind, ...]:
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


def _report(folder: Path) -> EvalReport:
    path = folder / _REPORT
    try:
        with open_regular(path) as handle:
            data = handle.read()
    except OSError:
        msg = f"{folder.name}/{_REPORT} is missing or cannot be read: is it a check output folder?"
        raise RunDiffError(msg) from None
    try:
        report = EvalReport.model_validate_json(data)
    except ValidationError:
        report = None
    if report is None or report.check is None:
        msg = f"{folder.name}/{_REPORT} is not the report of a citemark check"
        raise RunDiffError(msg)
    return report


def _states(path: Path) -> Iterator[tuple[_Key, RowState]]:
    seen: dict[str, int] = {}
    try:
        handle = open_regular(path)
    except OSError:
        msg = f"{path.parent.name}/{_ROWS} is missing or cannot be read"
        raise RunDiffError(msg) from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            state, row_id = _state(path, number, raw)
            if row_id is None:
                yield _Key(None, state.line), state
            else:
                nth = seen[row_id] = seen.get(row_id, 0) + 1
                yield _Key(row_id, nth), state


def _state(path: Path, number: int, raw: bytes) -> tuple[RowState, str | None]:
    record: Any = None
    problem: str | None = None
    try:
        record = loads_strict(raw.decode("utf-8"), max_bytes=None)
    except StrictJSONError as exc:
        problem = line_reason(exc)
    except UnicodeDecodeError:
        problem = "not UTF-8"
    if problem is not None:
        # Raised outside the except block: the refusal chains nothing.
        msg = f"{path.parent.name}/{_ROWS} line {number} is not a row record ({problem})"
        raise RunDiffError(msg)
    try:
        line = record["line"]
        outcome = record["outcome"]
        if not isinstance(line, int) or not isinstance(outcome, str):
            raise TypeError  # noqa: TRY301 - one refusal for every shape problem
        if outcome == "malformed":
            return RowState(
                line=line,
                outcome=outcome,
                reason=str(record.get("error")),
                violation=False,
                judge_band=None,
                verdicts=(),
            ), None
        details = record["details"]
        row_id = record.get("id")
        band = details.get("raw_score")
        verdicts = tuple(str(v.get("outcome")) for v in details.get("verdicts") or ())
        state = RowState(
            line=line,
            outcome=outcome,
            reason=record.get("reason"),
            violation=outcome == "failed" and bool(details.get("deterministic_failures")),
            judge_band=band if isinstance(band, int) and not isinstance(band, bool) else None,
            verdicts=verdicts,
        )
    except (ValueError, KeyError, TypeError, AttributeError, ValidationError):
        state = None
    if state is None:
        msg = f"{path.parent.name}/{_ROWS} line {number} is not a row record"
        raise RunDiffError(msg)
    return state, row_id if isinstance(row_id, str) else None
