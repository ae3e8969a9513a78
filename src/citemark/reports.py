r"""Artifacts that say what produced them (SPEC §1 contract 4, §3.12).

`EvalReport` (also at the top level) and its sections (`SynthesisReport`,
`CheckSummary`, `VerdictCounts`), the model identity they record (`ModelIdentity`),
the hash of their input (`dataset_sha256`), the atomic writer every artifact goes
through (`write_report_atomically`), `run_synthesis`, which answers a batch of
questions and counts answered, abstained and rejected rows, and `check_output_set`,
which says whether a ``citemark check`` folder is one whole set of one run
(`OutputSetCheck`, `ArtifactProblem`).

Example:
    ```python
    from citemark.reports import dataset_sha256

    print(len(dataset_sha256(b'{"question": "q"}\n')))
    #> 64
    ```
"""

from __future__ import annotations

from citemark._contract.artifacts import (
    DEFAULT_RESULTS_DIR,
    ModelIdentity,
    dataset_sha256,
    write_report_atomically,
)
from citemark._pipelines.check.output_set import ArtifactProblem, OutputSetCheck, check_output_set
from citemark._pipelines.eval_report import (
    CheckSummary,
    EvalReport,
    SynthesisReport,
    VerdictCounts,
    run_synthesis,
    run_synthesis_sync,
)
from citemark._pipelines.live_rows import RecordingWarning, RowRecorder, TextWriter
from citemark._public import publish

__all__ = [
    "DEFAULT_RESULTS_DIR",
    "ArtifactProblem",
    "CheckSummary",
    "EvalReport",
    "ModelIdentity",
    "OutputSetCheck",
    "RecordingWarning",
    "RowRecorder",
    "SynthesisReport",
    "TextWriter",
    "VerdictCounts",
    "check_output_set",
    "dataset_sha256",
    "run_synthesis",
    "run_synthesis_sync",
    "write_report_atomically",
]

publish(globals(), __name__, __all__)
