"""What changed between two ``citemark check`` runs: `compare_runs` and ``citemark diff``.

Rows are matched by id where the two runs share ids (never by a per-run id: a run or
trace id, ``"id_scope": "run"``), else question, else line, or by the one rule
``compare_runs(..., match=...)`` forces; every changed row says why: a
new violation, a resolved one, a changed judge verdict, a changed reason. Two runs of
a changed pipeline over the same questions compare whatever their answers; the
comparison counts the rows whose answer, sources or question changed, and names each
check option, version and judge field that differs (two instruments, not one). Only
runs that share no row are refused. Runs checked with one support verifier
(``check --verifier``) also name each citation whose advisory verdict changed
(`SupportDiff`, `SupportRowChange`). See ``docs/diff.md``.
"""

from __future__ import annotations

from citemark._contract.errors import RunDiffError
from citemark._pipelines.diff.compare import (
    ChangeKind,
    Difference,
    InputPart,
    RowChange,
    RowState,
    RunDiff,
    SupportDiff,
    SupportRowChange,
    compare_runs,
)
from citemark._pipelines.diff.render import render_html, render_text
from citemark._pipelines.diff.support import SupportFlip
from citemark._public import publish

__all__ = [
    "ChangeKind",
    "Difference",
    "InputPart",
    "RowChange",
    "RowState",
    "RunDiff",
    "RunDiffError",
    "SupportDiff",
    "SupportFlip",
    "SupportRowChange",
    "compare_runs",
    "render_html",
    "render_text",
]

publish(globals(), __name__, __all__)
