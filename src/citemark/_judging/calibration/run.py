"""Calibration (SPEC §3.11): the only road to ever trusting a judge, and it ends in a report.

The procedure, in the order ADR decision 5 sets:

1. A human-labelled set in its own file (`LabelSet`), with a ``schema_version``, a
   content hash per item and a hash of the whole set, checked on every read.
2. A threshold registered *before* the measurement (`register_threshold`): written
   to its own file with the label set's hash and a timestamp. A threshold chosen
   after seeing the number describes that number, so registering is refused once a
   measurement of the same label set sits next to the registration.
3. The measurement (`run_calibration`): the judge gives one verdict per item, and
   agreement is computed by the pure functions of
   `citemark._judging.calibration.agreement`. The report
   records the judge's provider, model and prompt SHA-256, and is written next to
   the registration as ``<registration stem>.measurement-<UTC time>.json``; that
   file is what makes a later registration of the same label set refusable.
4. Applicability (`CalibrationReport.applicability`): another provider, model or
   prompt is another instrument, and an earlier calibration does not apply to it.

Nothing here returns an exit code or raises because a threshold was missed: a
passing calibration only reports that it passed.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    model_validator,
)

from citemark._contract.artifacts import (
    ModelIdentity,
    Sha256,
    citemark_version,
    utc_now,
    write_report_atomically,
)
from citemark._contract.errors import CalibrationError, ChatError, JudgeError
from citemark._contract.sync import run_sync
from citemark._judging.calibration.agreement import Agreement, Metric, measure_agreement

if TYPE_CHECKING:
    import os
    from datetime import datetime

    from citemark._judging.calibration.labelset import LabelSet
    from citemark._judging.judge import FaithfulnessJudge

__all__ = [
    "Applicability",
    "CalibrationReport",
    "Metric",
    "Registration",
    "Threshold",
    "ThresholdCheck",
    "UnusableVerdict",
    "measurement_path",
    "read_registration",
    "register_sha256",
    "register_threshold",
    "run_calibration",
    "run_calibration_sync",
    "threshold_checks",
]

_MEASUREMENT_GLOB: Final = "*.measurement-*.json"
_CONFIG: Final = ConfigDict(
    frozen=True, extra="forbid", use_attribute_docstrings=True, hide_input_in_errors=True
)


class Threshold(BaseModel):
    """The agreement that would license gating, written down before it is measured.

    Each metric given is a minimum the measurement must reach; a metric that comes
    out undefined (``None``) does not reach it. At least one agreement metric must
    be given. ``coverage``, the share of items the judge gave a usable verdict on,
    defaults to 1: a judge whose replies fail to parse is not measured by the items
    it happened to answer.
    """

    model_config = _CONFIG

    agreement_rate: float | None = None
    """Minimum share of items judged as labelled."""

    kappa: float | None = None
    """Minimum Cohen's kappa, in -1..1."""

    faithful_precision: float | None = None
    """Minimum precision on the faithful class."""

    faithful_recall: float | None = None
    """Minimum recall on the faithful class."""

    unfaithful_precision: float | None = None
    """Minimum precision on the unfaithful class."""

    unfaithful_recall: float | None = None
    """Minimum recall on the unfaithful class: the share of unfaithful answers caught."""

    coverage: float = 1.0
    """Minimum share of items with a usable verdict."""

    @model_validator(mode="after")
    def _check_ranges(self) -> Threshold:
        given = self.minimums()
        if set(given) == {"coverage"}:
            msg = "a threshold needs at least one agreement metric besides coverage"
            raise ValueError(msg)
        for metric, minimum in given.items():
            low = -1.0 if metric == "kappa" else 0.0
            if not (math.isfinite(minimum) and low <= minimum <= 1.0):
                msg = f"{metric} must be a number in {low:g}..1"
                raise ValueError(msg)
        return self

    def minimums(self) -> dict[Metric, float]:
        """The minimums that were given, by metric, in a fixed order."""
        values: dict[Metric, float | None] = {
            "agreement_rate": self.agreement_rate,
            "kappa": self.kappa,
            "faithful_precision": self.faithful_precision,
            "faithful_recall": self.faithful_recall,
            "unfaithful_precision": self.unfaithful_precision,
            "unfaithful_recall": self.unfaithful_recall,
            "coverage": self.coverage,
        }
        return {metric: value for metric, value in values.items() if value is not None}


class Registration(BaseModel):
    """A threshold registered for one label set, before any measurement of it."""

    model_config = _CONFIG

    schema_version: Literal[1] = 1
    """The registration file format's version."""

    label_set_sha256: Sha256
    """The hash of the label set the threshold is registered for."""

    threshold: Threshold
    """The registered threshold."""

    registered_at: AwareDatetime = Field(default_factory=utc_now)
    """When the threshold was registered, in UTC."""

    citemark_version: str = Field(default_factory=citemark_version)
    """The citemark version that registered it."""


class ThresholdCheck(BaseModel):
    """One registered minimum against what was measured."""

    model_config = _CONFIG

    metric: Metric
    """The metric."""

    minimum: float
    """The registered minimum."""

    observed: float | None
    """The measured value; ``None`` when undefined."""

    met: bool
    """Whether ``observed`` is defined and at least ``minimum``."""


class UnusableVerdict(BaseModel):
    """An item the judge gave no usable verdict on."""

    model_config = _CONFIG

    id: str
    """The item's id."""

    error: Literal["JudgeError", "ChatError"]
    """Why: the reply failed validation, or the call failed."""

    reason: str | None = None
    """The stable code: `citemark.ChatError.reason` for a failed call (``timeout``,
    ``http_status``, ...), ``invalid_judge_output`` or ``judge_reply_truncated`` for a
    reply; None in measurements written before it was recorded."""


class Applicability(BaseModel):
    """Whether a calibration describes a given judge."""

    model_config = _CONFIG

    applicable: bool
    """True when provider, model and prompt hash are all the calibrated ones."""

    changed: tuple[Literal["provider", "model", "prompt_sha256"], ...]
    """What differs from the calibrated judge."""

    explanation: str
    """The same, in a sentence."""


class CalibrationReport(BaseModel):
    """One measurement of one judge against one label set, under a registered threshold.

    A report, never a gate: ``threshold_met`` says whether the registered minimums
    were reached, and nothing in citemark reads it to decide an exit code.
    """

    model_config = _CONFIG

    schema_version: Literal[1] = 1
    """The calibration report format's version."""

    citemark_version: str = Field(default_factory=citemark_version)
    """The citemark version that measured."""

    measured_at: AwareDatetime = Field(default_factory=utc_now)
    """When the measurement finished, in UTC."""

    label_set_sha256: Sha256
    """The hash of the label set measured against."""

    rubric_versions: tuple[str, ...]
    """The rubric versions the labels follow, sorted."""

    registration: Registration
    """The registration the measurement was made under, as read."""

    judge: ModelIdentity
    """The judge measured: provider, model and prompt SHA-256."""

    items: int
    """Items in the label set."""

    unusable: tuple[UnusableVerdict, ...]
    """Items without a usable verdict; left out of the agreement figures."""

    agreement: Agreement
    """Agreement over the items with a usable verdict."""

    checks: tuple[ThresholdCheck, ...]
    """Each registered minimum against what was measured, coverage included."""

    threshold_met: bool
    """Whether every registered minimum was met."""

    @model_validator(mode="after")
    def _check_consistent(self) -> CalibrationReport:
        if self.threshold_met != all(check.met for check in self.checks):
            msg = "threshold_met must equal whether every check was met"
            raise ValueError(msg)
        return self

    def applicability(self, judge: FaithfulnessJudge | ModelIdentity) -> Applicability:
        """Say whether this calibration applies to ``judge``, and if not, why.

        Args:
            judge: A `FaithfulnessJudge`, or the identity of one.

        Returns:
            Applicable only when provider, model and prompt hash all equal the
            calibrated judge's; otherwise the fields that changed, and a sentence.
        """
        current = judge if isinstance(judge, ModelIdentity) else ModelIdentity.of(judge)
        fields: tuple[Literal["provider", "model", "prompt_sha256"], ...] = (
            "provider",
            "model",
            "prompt_sha256",
        )
        changed = tuple(f for f in fields if getattr(current, f) != getattr(self.judge, f))
        if not changed:
            explanation = "the calibration applies: same provider, model and prompt_sha256"
        else:
            verb = "differs" if len(changed) == 1 else "differ"
            explanation = f"the calibration does not apply: the judge's {', '.join(changed)} {verb}"
        return Applicability(applicable=not changed, changed=changed, explanation=explanation)


def register_threshold(
    label_set: LabelSet, threshold: Threshold, path: str | os.PathLike[str]
) -> Registration:
    """Register ``threshold`` for ``label_set`` in its own file, before any measurement.

    Args:
        label_set: The label set the threshold is for; its hash is recorded.

        threshold: The minimums a measurement must reach.

        path: The registration file. Measurements are written next to it, which is
            where this function looks for earlier ones.

    Returns:
        The registration, as written.

    Raises:
        CalibrationError: a file already exists at ``path`` (remove it deliberately to
            register again), or a measurement of the same label set already exists
            in the same folder: a threshold registered after a measurement is
            refused.

    Example:
        ```python
        import tempfile
        from pathlib import Path

        from citemark import LabelledItem, LabelSet, Source, Threshold, register_threshold

        item = LabelledItem(
            id="q1", question="When?", answer="In May [1].",
            sources=[Source(text="Fees rise in May.", doc_id="fees")],
            faithful=True, labeller="ana", rubric_version="1",
        )
        labels = LabelSet(items=[item])
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "threshold.json"
            registration = register_threshold(labels, Threshold(kappa=0.6), path)
            print(registration.label_set_sha256 == labels.sha256, path.exists())
        #> True True
        ```
    """
    return register_sha256(label_set.sha256, threshold, path)


def register_sha256(
    label_set_sha256: str, threshold: Threshold, path: str | os.PathLike[str]
) -> Registration:
    """`register_threshold` for a label set known by its hash (a support verifier's labels).

    Raises:
        CalibrationError: as `register_threshold`.
    """
    destination = Path(path)
    if destination.exists():
        msg = "a registration already exists at this path; remove it deliberately to register again"
        raise CalibrationError(msg)
    if _measured(destination.parent, label_set_sha256):
        msg = (
            "this label set has already been measured next to this registration: "
            "a threshold registered after a measurement describes it, it does not test it"
        )
        raise CalibrationError(msg)
    registration = Registration(label_set_sha256=label_set_sha256, threshold=threshold)
    write_report_atomically(destination, registration)
    return registration


async def run_calibration(
    label_set: LabelSet,
    judge: FaithfulnessJudge,
    registration: str | os.PathLike[str],
) -> CalibrationReport:
    """Measure ``judge`` against ``label_set`` under a registered threshold.

    The judge is asked once per item, in order; a `JudgeError` or `ChatError` makes
    the item unusable, is recorded, and is not retried. The report is written next
    to the registration as ``<stem>.measurement-<UTC time>.json`` and returned. It
    never raises because the threshold was missed.

    Args:
        label_set: The human labels.

        judge: The judge to measure; its provider, model and prompt hash are
            recorded.

        registration: The registration file `register_threshold` wrote.

    Returns:
        The calibration report.

    Raises:
        CalibrationError: the registration is for another label set (its hash differs).
        OSError: the registration cannot be read.
    """
    path = Path(registration)
    registered = read_registration(path, label_set.sha256)
    identity = ModelIdentity.of(judge)
    ids: list[str] = []
    human: list[bool] = []
    verdicts: list[bool] = []
    unusable: list[UnusableVerdict] = []
    for item in label_set.items:
        try:
            verdict = await judge.judge(item.question, item.answer, item.sources)
        except (JudgeError, ChatError) as exc:
            error: Literal["JudgeError", "ChatError"] = (
                "JudgeError" if isinstance(exc, JudgeError) else "ChatError"
            )
            unusable.append(UnusableVerdict(id=item.id, error=error, reason=exc.reason))
            continue
        ids.append(item.id)
        human.append(item.faithful)
        verdicts.append(verdict.faithful)
    agreement = measure_agreement(ids, human, verdicts)
    checks = threshold_checks(registered.threshold, agreement, len(ids), len(label_set.items))
    report = CalibrationReport(
        label_set_sha256=label_set.sha256,
        rubric_versions=tuple(sorted({item.rubric_version for item in label_set.items})),
        registration=registered,
        judge=identity,
        items=len(label_set.items),
        unusable=tuple(unusable),
        agreement=agreement,
        checks=checks,
        threshold_met=all(check.met for check in checks),
    )
    write_report_atomically(measurement_path(path, report.measured_at), report)
    return report


def run_calibration_sync(
    label_set: LabelSet,
    judge: FaithfulnessJudge,
    registration: str | os.PathLike[str],
) -> CalibrationReport:
    """Run `run_calibration` to completion with `asyncio.run`, for code without an event loop."""
    return run_sync(lambda: run_calibration(label_set, judge, registration))


def threshold_checks(
    threshold: Threshold, agreement: Agreement, assessed: int, total: int
) -> tuple[ThresholdCheck, ...]:
    """Each registered minimum against the measured figure (coverage: assessed of total)."""
    observed: dict[Metric, float | None] = {
        "agreement_rate": agreement.agreement_rate,
        "kappa": agreement.kappa,
        "faithful_precision": agreement.faithful.precision,
        "faithful_recall": agreement.faithful.recall,
        "unfaithful_precision": agreement.unfaithful.precision,
        "unfaithful_recall": agreement.unfaithful.recall,
        "coverage": assessed / total if total else None,
    }
    return tuple(
        ThresholdCheck(
            metric=metric,
            minimum=minimum,
            observed=observed[metric],
            met=_reaches(observed[metric], minimum),
        )
        for metric, minimum in threshold.minimums().items()
    )


def read_registration(path: Path, label_set_sha256: str) -> Registration:
    """The registration at ``path``, refused unless it was made for this label set.

    Raises:
        CalibrationError: the registration is for another label set (its hash differs).
        OSError: it cannot be read.
    """
    registered = Registration.model_validate_json(path.read_bytes())
    if registered.label_set_sha256 != label_set_sha256:
        msg = "the registration was made for another label set: its label_set_sha256 differs"
        raise CalibrationError(msg)
    return registered


def _reaches(observed: float | None, minimum: float) -> bool:
    return observed is not None and observed >= minimum


def _measured(folder: Path, label_set_sha256: str) -> bool:
    """Whether a measurement of this label set exists in ``folder``.

    A measurement file that cannot be read counts as one: the refusal errs towards
    refusing, and the file can be removed deliberately.
    """
    for candidate in folder.glob(_MEASUREMENT_GLOB):
        try:
            recorded = json.loads(candidate.read_bytes()).get("label_set_sha256")
        except (OSError, ValueError, AttributeError):
            return True
        if recorded == label_set_sha256:
            return True
    return False


def measurement_path(registration: Path, measured_at: datetime) -> Path:
    """Where a measurement made under ``registration`` is written: beside it, stamped."""
    stamp = measured_at.strftime("%Y%m%dT%H%M%S%fZ")
    candidate = registration.with_name(f"{registration.stem}.measurement-{stamp}.json")
    number = 1
    while candidate.exists():
        number += 1
        candidate = registration.with_name(f"{registration.stem}.measurement-{stamp}-{number}.json")
    return candidate
