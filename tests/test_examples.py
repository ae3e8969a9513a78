"""Every file in examples/ runs, offline, in the test suite (SPEC §9)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.py"))


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


class TestDemo:
    def test_demo_resolves_rejects_and_abstains(self, capsys):
        """The demo shows verified citations, a rejection and an abstention."""
        path = next(p for p in EXAMPLES if p.name == "demo.py")
        with pytest.raises(SystemExit):
            runpy.run_path(str(path), run_name="__main__")
        out = capsys.readouterr().out
        assert "verified" in out
        assert "rejected" in out
        assert "marker [5] of 4" in out
        assert "abstained" in out
        assert "mismatch" not in out
