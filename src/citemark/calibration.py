"""Calibration, the only road to a gate (SPEC §3.11): label sets, agreement, thresholds.

A human-labelled set (`LabelSet`, `LabelledItem`) with its integrity checks; pure
agreement functions that need no model (`agreement_rate`, `precision_recall`,
`cohen_kappa`, `confusion_matrix`, `measure_agreement`); a threshold registered
before the measurement (`register_threshold`); and the measurement itself
(`run_calibration`), whose `CalibrationReport` says whether an earlier calibration
still applies to this judge. Nothing here changes an exit code.

Example:
    ```python
    from citemark.calibration import cohen_kappa

    print(round(cohen_kappa([True, True, False, False], [True, False, False, False]), 2))
    #> 0.5
    ```
"""

from __future__ import annotations

from citemark._contract.errors import CalibrationError, LabelSetError
from citemark._judging.calibration.agreement import (
    Agreement,
    ConfusionMatrix,
    agreement_rate,
    cohen_kappa,
    confusion_matrix,
    measure_agreement,
    precision_recall,
)
from citemark._judging.calibration.labelset import LabelledItem, LabelSet
from citemark._judging.calibration.run import (
    Applicability,
    CalibrationReport,
    Registration,
    Threshold,
    register_threshold,
    run_calibration,
    run_calibration_sync,
)
from citemark._public import publish

__all__ = [
    "Agreement",
    "Applicability",
    "CalibrationError",
    "CalibrationReport",
    "ConfusionMatrix",
    "LabelSet",
    "LabelSetError",
    "LabelledItem",
    "Registration",
    "Threshold",
    "agreement_rate",
    "cohen_kappa",
    "confusion_matrix",
    "measure_agreement",
    "precision_recall",
    "register_threshold",
    "run_calibration",
    "run_calibration_sync",
]

publish(globals(), __name__, __all__)
