"""``citemark diff``: what changed between two ``citemark check`` runs, row by row.

``runs`` reads one run's ``report.json``, ``rows.jsonl`` and page tolerantly and
streamed; ``index`` keeps the old run's rows and the changes on disk; ``compare``
matches and classifies the rows; ``render`` writes the comparison as text, JSON and
an HTML page in the style of ``report.html``; ``command`` is ``citemark diff``;
``digests`` is the per-row input digest ``rows.jsonl`` records.
"""

from citemark._diff.compare import (
    ChangeKind,
    Difference,
    InputPart,
    RowChange,
    RowState,
    RunDiff,
    compare_runs,
)
from citemark._diff.render import render_html, render_text

__all__ = [
    "ChangeKind",
    "Difference",
    "InputPart",
    "RowChange",
    "RowState",
    "RunDiff",
    "compare_runs",
    "render_html",
    "render_text",
]
