"""``citemark check --engine ray --quiet`` prints nothing of Ray's own: no log line, no progress.

Run as a real subprocess, since Ray writes to the process's own stderr (its logging
handlers and its C++ core), which pytest's capture does not see.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parent.parent
CONTEXT = "[doc-1] The late fee is 5%.\n"


def runs(path: Path) -> Path:
    rows = (
        json.dumps({"id": f"q{n}", "answer": f"Fee [doc-{n % 3}].", "context": CONTEXT})
        for n in range(40)
    )
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def quiet_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if not key.startswith("RAY_")}


def test_quiet_ray_check_prints_no_ray_log(tmp_path):
    """With --quiet, stderr is empty and stdout holds only citemark's own lines."""
    out = tmp_path / "out"
    command = [
        sys.executable,
        "-m",
        "citemark",
        "check",
        str(runs(tmp_path / "runs.jsonl")),
        "--out",
        str(out),
        "--engine",
        "ray",
        "--ray-workers",
        "1",
        "--quiet",
    ]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=quiet_env(),
        timeout=300,
        check=False,
    )
    assert 0 == done.returncode, done.returncode
    assert "" == done.stderr, done.stderr.splitlines()[:3]
    assert "INFO" not in done.stdout
    assert "Ray" not in done.stdout
    assert 40 == json.loads((out / "report.json").read_text())["check"]["rows"]
