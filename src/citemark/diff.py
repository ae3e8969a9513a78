"""What changed between two ``citemark check`` runs: `compare_runs` and ``citemark diff``.

Rows are matched by id (or line), and every changed row says why: a new violation, a
resolved one, a changed judge verdict, a changed reason. Runs over different inputs
are refused unless asked for, and a change of judge (provider, model or prompt hash)
is reported: two instruments, not one. See ``docs/replay.md``.
"""

from __future__ import annotations

from citemark._diff.compare import ChangeKind, RowChange, RowState, RunDiff, compare_runs
from citemark._diff.render import render_html, render_text
from citemark._errors import RunDiffError
from citemark._public import publish

__all__ = [
    "ChangeKind",
    "RowChange",
    "RowState",
    "RunDiff",
    "RunDiffError",
    "compare_runs",
    "render_html",
    "render_text",
]

publish(globals(), __name__, __all__)
