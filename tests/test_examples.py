"""Every file in examples/ runs, offline, in the test suite (SPEC §9)."""

from __future__ import annotations

import itertools
import json
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


class TestExamples:
    def test_there_are_examples(self):
        """The examples folder is not empty, so the parametrized test below runs."""
        assert EXAMPLES

    @pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
    def test_example_runs(self, path, capsys):
        """The example runs as a script, exits cleanly (if it exits) and prints something."""
        code = None
        try:
            runpy.run_path(str(path), run_name="__main__")
        except SystemExit as exc:
            code = exc.code
        assert code in (0, None)
        assert capsys.readouterr().out.strip()


class TestResolveRecordedRuns:
    def test_resolves_rejects_and_abstains(self, capsys):
        """The example shows verified citations, a rejection and an abstention."""
        path = next(p for p in EXAMPLES if p.name == "resolve_recorded_runs.py")
        with pytest.raises(SystemExit):
            runpy.run_path(str(path), run_name="__main__")
        out = capsys.readouterr().out
        assert "verified" in out
        assert "rejected" in out
        assert "marker [5] of 4" in out
        assert "abstained" in out
        assert "mismatch" not in out


def demo_command() -> list[str]:
    """The command line of the Makefile's demo recipe, split into words."""
    lines = (ROOT / "Makefile").read_text(encoding="utf-8").splitlines()
    start = lines.index("demo: $(STAMP)")
    recipe = list(itertools.takewhile(lambda line: line.startswith("\t"), lines[start + 1 :]))
    assert 1 == len(recipe)
    return recipe[0].split()


class TestDemo:
    def test_make_demo_runs_citemark_check_on_the_bundled_runs(self):
        """make demo's recipe is citemark check on examples/data/example-runs.jsonl."""
        assert [
            "$(BIN)/citemark",
            "check",
            "examples/data/example-runs.jsonl",
            "--out",
            "results/demo",
        ] == demo_command()

    def test_the_demo_command_prints_the_summary_and_writes_the_reports(self, tmp_path):
        """The demo's command, run through the real entry point, summarizes and writes reports."""
        _, *args = demo_command()
        out = tmp_path / "demo"
        args[args.index("--out") + 1] = str(out)
        done = subprocess.run(
            [sys.executable, "-m", "citemark", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert (0, "") == (done.returncode, done.stderr)
        assert "citemark check: 16 rows of examples/data/example-runs.jsonl" in done.stdout
        # The headline leads, decided in code, in the words of what code checked: 13 of 16
        # rows cite only sources they were given, 3 cite one they were not given; the
        # judge's line comes after it, apart, and what no judge checked is said.
        lines = done.stdout.splitlines()
        assert (
            "13 of 16 rows cite only sources they were given (2 cite nothing); 3 have a "
            "violation (3 cite a source they were not given); 0 could not be checked; "
            "0 lines unreadable"
        ) == lines[1]
        assert "judge: not asked (deterministic findings only)" == lines[2]
        assert (
            "not checked without a judge: whether a cited source supports its sentence"
        ) == lines[3]
        assert "correctly" not in done.stdout
        assert "passed" not in done.stdout
        assert ["report.html", "report.json", "rows.jsonl"] == sorted(p.name for p in out.iterdir())
        report = json.loads((out / "report.json").read_bytes())
        assert (16, 3) == (report["check"]["rows"], report["check"]["failed"])
