"""``citemark check`` as a private subpackage: the run, its output sinks and its page.

``run`` reads the input and scores it in bounded chunks; ``sinks`` holds the sink
protocol, ``rows.jsonl`` and the registry of optional formats; ``page`` writes
``report.html`` (rows as data drawn by its script), from the markers ``html`` places
(style and script are package data under ``assets/``); ``junit`` writes
``report.junit.xml``. ``report.json`` is written last by the run, naming the
SHA-256 of every other file.
"""

from citemark._check.run import (
    DEFAULT_HTML_ROWS,
    HTML_NAME,
    MAX_MALFORMED_LISTED,
    REPORT_NAME,
    ROWS_NAME,
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
