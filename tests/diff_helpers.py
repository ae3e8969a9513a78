"""Test helper: a check output folder whose ``rows.jsonl`` a test wrote, sealed again.

``citemark diff`` holds ``rows.jsonl`` to its ``report.json`` (the SHA-256 the report
names, the rows it counts, its run id). A test that builds a run's records itself
(thousands of copies of one real record, or the records as an older citemark wrote
them) calls `reseal` so the report describes the file it now holds, as ``citemark
check`` would have written it for those records.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["reseal"]


def reseal(folder: Path) -> Path:
    """Make ``folder/report.json`` name ``folder/rows.jsonl`` as it now is; return ``folder``."""
    data = (folder / "rows.jsonl").read_bytes()
    outcomes = [json.loads(line)["outcome"] for line in data.splitlines() if line.strip()]
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    check = report["check"]
    check["files"]["rows.jsonl"] = hashlib.sha256(data).hexdigest()
    check["malformed"] = outcomes.count("malformed")
    check["rows"] = len(outcomes) - check["malformed"]
    (folder / "report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    return folder
