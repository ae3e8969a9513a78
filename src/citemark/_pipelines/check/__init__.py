"""``citemark check`` as a private subpackage: the run, its output sinks and its page.

``run`` reads the input and scores it in bounded chunks; ``sinks`` holds the sink
protocol, ``rows.jsonl`` and the registry of optional formats; ``page`` writes
``report.html`` (rows as data drawn by its script), from the markers ``html`` places
(style and script are package data under ``assets/``); ``junit`` writes
``report.junit.xml``. ``report.json`` is written last by the run, naming the
SHA-256 of every other file. ``names`` holds the outputs' names and defaults.

Importing the package loads nothing: the run (and with it the scorer and the HTTP
client) loads on first use of a name below, so ``citemark --help`` and the readers
of a finished run do not pay for it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from citemark._pipelines.check.names import DEFAULT_HTML_ROWS, HTML_NAME, REPORT_NAME, ROWS_NAME

if TYPE_CHECKING:
    from citemark._pipelines.check.run import (
        MAX_MALFORMED_LISTED,
        CheckResult,
        NoRowsError,
        is_violation,
        run_check,
    )

__all__ = [
    "DEFAULT_HTML_ROWS",
    "HTML_NAME",
    "MAX_MALFORMED_LISTED",
    "REPORT_NAME",
    "ROWS_NAME",
    "CheckResult",
    "NoRowsError",
    "is_violation",
    "run_check",
]

_FROM_RUN = frozenset(
    {"MAX_MALFORMED_LISTED", "CheckResult", "NoRowsError", "is_violation", "run_check"}
)


def __getattr__(name: str) -> Any:  # noqa: ANN401 - whatever the named object is
    """Load ``run`` on first use of one of its names."""
    if name in _FROM_RUN:
        value = getattr(importlib.import_module("citemark._pipelines.check.run"), name)
        globals()[name] = value
        return value
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)
