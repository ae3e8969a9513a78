"""assert_cited in a test suite, with the plugin's --citemark-report.

Writes a two-test file to a temporary folder and runs pytest on it, as your CI would.
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

TESTS = """
from citemark import Source

SOURCES = [Source(text="Fees rise in May.", doc_id="fees"), Source(text="No fee.", doc_id="m")]


def test_cites_its_source(citemark_check):
    citemark_check.assert_cited("Fees rise in May [1].", SOURCES)


def test_fabricated_citation(citemark_check):
    citemark_check.assert_cited("Fees rise [1]; members pay nothing [3].", SOURCES)
"""

with tempfile.TemporaryDirectory() as folder:
    root = Path(folder)
    (root / "test_answers.py").write_text(TESTS, encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--citemark-report",
            "report",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    for line in done.stdout.splitlines():
        if "assert_cited" in line and ("recorded" in line or "Error" in line):
            print(line.replace(folder, "<tmp>"))
    report = json.loads((root / "report" / "report.json").read_text(encoding="utf-8"))
    print("report.json rows:", report["check"]["rows"], "failed:", report["check"]["failed"])
    print("pytest exit code:", done.returncode)
