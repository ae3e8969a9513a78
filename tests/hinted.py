"""Run ``citemark check FILE`` without ``--from``, then with the reader its error names.

The contract of a file hint (``citemark._pipelines.readers._hints``) is that the reader it names
reads the file: `check_as_hinted` takes the ``--from`` out of the error of a plain
check and runs the check again with it, through the real entry point.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

_NAMED = re.compile(r"read it with (--from [a-z]+)\)")


def check(path: Path, out: Path, *options: str) -> subprocess.CompletedProcess[str]:
    """``python -m citemark check PATH --out OUT OPTIONS``."""
    return subprocess.run(
        [sys.executable, "-m", "citemark", "check", str(path), "--out", str(out), *options],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def hinted_reader(path: Path, work: Path) -> tuple[str, str]:
    """The ``--from`` a plain check's error names for PATH, and that error."""
    done = check(path, work / "plain")
    assert 2 == done.returncode, done.stdout + done.stderr
    found = _NAMED.findall(done.stderr)
    assert len(found) == 1, done.stderr
    return found[0], done.stderr


def check_as_hinted(path: Path, work: Path) -> tuple[str, list[dict[str, Any]]]:
    """The reader the hint names, and the rows.jsonl records of the check it runs."""
    option, _ = hinted_reader(path, work)
    out = work / "hinted"
    done = check(path, out, *option.split())
    assert done.returncode in (0, 1), done.stderr
    assert "malformed" not in done.stdout + done.stderr
    lines = (out / "rows.jsonl").read_text(encoding="utf-8").splitlines()
    return option, [json.loads(line) for line in lines]
