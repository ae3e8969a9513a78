"""``citemark diff``: what changed between two ``citemark check`` runs, row by row.

``compare`` reads both runs' ``report.json`` and ``rows.jsonl`` and classifies every
changed row; ``render`` writes the comparison as text and as an HTML page in the
style of ``report.html``.
"""

from citemark._diff.compare import ChangeKind, RowChange, RowState, RunDiff, compare_runs
from citemark._diff.render import render_html, render_text

__all__ = [
    "ChangeKind",
    "RowChange",
    "RowState",
    "RunDiff",
    "compare_runs",
    "render_html",
    "render_text",
]
