"""The names and defaults of ``citemark check``'s outputs, in a module that imports nothing.

The command line builds its ``--help`` from these before any engine is loaded, and
``citemark diff`` reads a run's files by them, so they live apart from the run.
"""

from __future__ import annotations

from typing import Final

__all__ = ["DEFAULT_HTML_ROWS", "HTML_NAME", "OUTPUT_FORMATS", "REPORT_NAME", "ROWS_NAME"]

REPORT_NAME: Final = "report.json"
"""The run's summary, written last, naming the SHA-256 of every other file."""
ROWS_NAME: Final = "rows.jsonl"
"""One record per non-blank input line."""
HTML_NAME: Final = "report.html"
"""The self-contained page."""
DEFAULT_HTML_ROWS: Final = 500
"""How many rows ``report.html`` shows at most."""
OUTPUT_FORMATS: Final = ("junit",)
"""The optional output formats, by the name ``--format`` takes."""
