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
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

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
from citemark._judging.verifiers.base import Premise
from citemark._markers.grammar import parse_markers

if TYPE_CHECKING:
    import os
    from collections.abc import Mapping

    from citemark._judging.verifiers.base import Verifier, VerifierIdentity

__all__ = ["MAPPINGS", "SupportMeasurement", "claim_text", "measure_support"]

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
