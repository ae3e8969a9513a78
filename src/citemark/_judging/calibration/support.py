"""A support verifier measured against human claim labels: agreement, per class, and kappa.

`measure_support` asks a verifier about every labelled claim (ExpertQA's, read by
`citemark._judging.calibration.expertqa`) in batches, once each, and compares its
verdicts with the labels using the same pure functions as the judge's calibration
(`citemark._judging.calibration.agreement`): ``faithful`` there reads *entailed*
here, ``unfaithful`` *not entailed*. A claim the verifier gave no verdict on is
left out of the agreement and counted (``unjudged``), never guessed.

The claim a verifier reads is the labelled sentence with its citation markers cut
out, found by citemark's own marker grammar (`citemark.parse_markers`), so a bracket
inside code or a link is kept as the text it is. The measurement records what
answered (the verifier's identity), what it was measured on (the file's name and
SHA-256, the mapping) and what the read left out. It is a report, never a gate.

Calibration follows the judge's procedure (``docs/calibration.md``): the labels a
file gives under a mapping are one label set, known by `support_label_set_sha256`;
`register_support_threshold` registers the minimums for it before any measurement
(refused once one exists beside the registration), and `calibrate_support` measures
under that registration, writes the measurement beside it with each minimum checked,
and pins the verifier's identity (`SupportCalibration.applies_to`). Meeting the
threshold changes no exit code; nothing in citemark reads it to decide anything.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from citemark._contract.artifacts import citemark_version, utc_now, write_report_atomically
from citemark._judging.calibration.agreement import Agreement, measure_agreement
from citemark._judging.calibration.expertqa import (
    COMPLETE_VS_INCOMPLETE,
    COMPLETE_VS_MISSING,
    COMPLETE_VS_REST,
    ExpertQAClaim,
    ExpertQACounts,
    SupportMapping,
    iter_expertqa,
)
from citemark._judging.calibration.run import (
    Registration,
    Threshold,
    ThresholdCheck,
    measurement_path,
    read_registration,
    register_sha256,
    threshold_checks,
)
from citemark._judging.verifiers.base import Premise
from citemark._markers.grammar import parse_markers

if TYPE_CHECKING:
    import os
    from collections.abc import Mapping
    from datetime import datetime

    from citemark._judging.verifiers.base import Verifier, VerifierIdentity

__all__ = [
    "MAPPINGS",
    "SupportCalibration",
    "SupportMeasurement",
    "calibrate_support",
    "claim_text",
    "measure_support",
    "register_support_threshold",
    "support_label_set_sha256",
]

MAPPINGS: Final[Mapping[str, SupportMapping]] = {
    "complete-vs-rest": COMPLETE_VS_REST,
    "complete-vs-incomplete": COMPLETE_VS_INCOMPLETE,
    "complete-vs-missing": COMPLETE_VS_MISSING,
}
"""The label mappings by the name ``citemark calibrate support --mapping`` takes."""

_BATCH: Final = 256


@dataclass(frozen=True)
class SupportMeasurement:
    """One verifier against one labelled file."""

    verifier: VerifierIdentity
    """What answered."""
    labels: str
    """The label file's name (its split)."""
    labels_sha256: str
    """The label file's SHA-256."""
    mapping: str
    """The mapping's name (a key of `MAPPINGS`)."""
    counts: ExpertQACounts
    """What the read kept and left out."""
    agreement: Agreement
    """Agreement over the claims the verifier judged (faithful = entailed)."""
    unjudged: int
    """Claims the verifier gave no verdict on, left out of the agreement."""

    def as_dict(self) -> dict[str, object]:
        """The measurement as JSON-ready data."""
        return {
            "advisory": True,
            "verifier": self.verifier.as_dict(),
            "labels": self.labels,
            "labels_sha256": self.labels_sha256,
            "mapping": self.mapping,
            "read": self.counts.as_dict(),
            "unjudged": self.unjudged,
            "agreement": self.agreement.model_dump(mode="json", exclude={"disagreements"}),
        }


def claim_text(claim: str) -> str:
    """``claim`` with each citation marker group cut out, spaces closed up, stripped."""
    cuts = sorted({(m.group_start, m.group_end) for m in parse_markers(claim)})
    pieces, at = [], 0
    for start, end in cuts:
        pieces.append(claim[at:start])
        at = end
    pieces.append(claim[at:])
    text = "".join(pieces)
    return " ".join(text.split()).replace(" .", ".").replace(" ,", ",")


async def measure_support(
    path: str | os.PathLike[str],
    verifier: Verifier,
    *,
    mapping: str = "complete-vs-rest",
    batch: int = _BATCH,
) -> SupportMeasurement:
    """Measure ``verifier`` on ExpertQA's labelled claims in ``path``.

    Raises:
        KeyError: ``mapping`` is not a key of `MAPPINGS`.
        LabelSetError, OSError: the file cannot be read as ExpertQA's (see
            `iter_expertqa`).
        ValueError: the verifier answered a batch with the wrong number of verdicts.
    """
    chosen = MAPPINGS[mapping]
    counts = ExpertQACounts()
    ids: list[str] = []
    human: list[bool] = []
    judged: list[bool] = []
    unjudged = 0
    pending: list[ExpertQAClaim] = []

    async def flush() -> None:
        nonlocal unjudged
        premises = [Premise(claim_text(c.claim), c.passages) for c in pending]
        verdicts = await verifier.verify(premises)
        if len(verdicts) != len(premises):
            msg = f"the verifier returned {len(verdicts)} verdicts for {len(premises)} premises"
            raise ValueError(msg)
        for claim, verdict in zip(pending, verdicts, strict=True):
            if verdict.entailed is None:
                unjudged += 1
                continue
            ids.append(claim.id)
            human.append(claim.entailed)
            judged.append(verdict.entailed)
        pending.clear()

    for claim in iter_expertqa(path, mapping=chosen, counts=counts):
        pending.append(claim)
        if len(pending) >= batch:
            await flush()
    if pending:
        await flush()
    digest = _file_sha256(path)
    return SupportMeasurement(
        verifier=verifier.identity,
        labels=Path(path).name,
        labels_sha256=digest,
        mapping=mapping,
        counts=counts,
        agreement=measure_agreement(ids, human, judged),
        unjudged=unjudged,
    )


def _file_sha256(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as file:
        while block := file.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def support_label_set_sha256(labels_sha256: str, mapping: str) -> str:
    """The hash of the label set an ExpertQA file gives under ``mapping``.

    The same file read under another mapping is another label set, so a threshold
    registered for one does not cover a measurement of the other.
    """
    text = f"citemark support labels\nmapping {mapping}\nfile sha256 {labels_sha256}\n"
    return hashlib.sha256(text.encode()).hexdigest()


def register_support_threshold(
    labels: str | os.PathLike[str],
    mapping: str,
    threshold: Threshold,
    path: str | os.PathLike[str],
) -> Registration:
    """Register ``threshold`` for ``labels`` read under ``mapping``, before any measurement.

    Raises:
        KeyError: ``mapping`` is not a key of `MAPPINGS`.
        CalibrationError: as `citemark.register_threshold` (a registration at ``path``,
            or a measurement of the same label set beside it).
        OSError: the file cannot be read or the registration written.
    """
    if mapping not in MAPPINGS:  # refused before anything is written
        raise KeyError(mapping)
    sha256 = support_label_set_sha256(_file_sha256(labels), mapping)
    return register_sha256(sha256, threshold, path)


@dataclass(frozen=True)
class SupportCalibration:
    """A support measurement under a registration: each minimum checked, the verifier pinned."""

    measurement: SupportMeasurement
    """What was measured."""
    registration: Registration
    """The registration it was measured under, as read."""
    checks: tuple[ThresholdCheck, ...]
    """Each registered minimum against the measured figure (coverage: judged claims
    of those the read kept)."""
    path: Path
    """Where the measurement was written (beside the registration)."""
    measured_at: datetime
    """When the measurement was checked and written, in UTC."""

    @property
    def threshold_met(self) -> bool:
        """Whether every registered minimum was met; advisory, it decides nothing."""
        return all(check.met for check in self.checks)

    def applies_to(self, verifier: VerifierIdentity) -> bool:
        """Whether this calibration describes ``verifier``: kind, name, version and digest equal."""
        return verifier == self.measurement.verifier

    def as_dict(self) -> dict[str, Any]:
        """The measurement file's JSON object."""
        return {
            "schema_version": 1,
            "citemark_version": citemark_version(),
            "measured_at": self.measured_at.isoformat(),
            "label_set_sha256": self.registration.label_set_sha256,
            **self.measurement.as_dict(),
            "registration": self.registration.model_dump(mode="json"),
            "checks": [check.model_dump(mode="json") for check in self.checks],
            "threshold_met": self.threshold_met,
        }


def calibrate_support(
    measurement: SupportMeasurement, registration: str | os.PathLike[str]
) -> SupportCalibration:
    """Check ``measurement`` against the registration, and write it beside the registration.

    Raises:
        CalibrationError: the registration was made for another label set (another
            file, or the same file under another mapping).
        OSError: the registration cannot be read or the measurement written.
    """
    path = Path(registration)
    sha256 = support_label_set_sha256(measurement.labels_sha256, measurement.mapping)
    registered = read_registration(path, sha256)
    judged = measurement.agreement.items
    kept = judged + measurement.unjudged
    checks = threshold_checks(registered.threshold, measurement.agreement, judged, kept)
    now = utc_now()
    written = measurement_path(path, now)
    calibration = SupportCalibration(measurement, registered, checks, written, now)
    write_report_atomically(written, json.dumps(calibration.as_dict(), indent=2) + "\n")
    return calibration
