"""citemark diff in bounded memory, reading findings through the typed model (issue 25, item 4).

The old run's rows live in an on-disk index, not in a dict, so the memory a
comparison takes does not grow with the rows; every ``rows.jsonl`` record's findings
are validated as a ``ScoreFindings``, so a record whose findings have the wrong shape
is refused instead of being read by string key into a wrong answer.
"""

from __future__ import annotations

import io
import json
import shutil
import tracemalloc
from pathlib import Path

import pytest
from diff_helpers import reseal
from fake_openai import run_cli

from citemark import CitationScorer
from citemark._pipelines.check.run import run_check
from citemark._pipelines.diff.command import run_diff
from citemark.diff import RunDiffError, compare_runs, render_html, render_text

CONTEXT = "[doc-1] The late fee is 5% of the unpaid balance.\n"


def checked_once(tmp_path: Path, name: str, answer: str) -> Path:
    data = tmp_path / f"{name}.jsonl"
    row = {"id": "q", "question": "What is the fee?", "answer": answer, "context": CONTEXT}
    data.write_text(json.dumps(row) + "\n", encoding="utf-8")
    run_check(data, tmp_path / name, CitationScorer())
    return tmp_path / name


def replicated(
    seed: Path, out: Path, rows: int, *, changed_every: int = 0, per_run: str = ""
) -> Path:
    """A run of ``rows`` records made from ``seed``'s one record: real records, new ids.

    With ``changed_every``, every so many rows are taken from a failed variant. With
    ``per_run``, each id is ``per_run`` and the line, marked ``"id_scope": "run"``, and
    each row asks a question of its own (its digest is the line's), as in two days of a
    recorded pipeline: rows are then matched by question.
    """
    shutil.copytree(seed, out)
    record = json.loads((seed / "rows.jsonl").read_text().splitlines()[0])
    with (out / "rows.jsonl").open("w", encoding="utf-8") as handle:
        for line in range(1, rows + 1):
            outcome = "failed" if changed_every and line % changed_every == 0 else None
            ids = {"id": f"q{line}"}
            if per_run:
                digests = {**record["digests"], "question": f"{line:016x}"}
                ids = {"id": f"{per_run}{line}", "id_scope": "run", "digests": digests}
            handle.write(
                json.dumps(
                    {**record, "line": line, **ids}
                    | ({"outcome": outcome, "reason": None} if outcome else {})
                )
                + "\n"
            )
    return reseal(out)


def peak_bytes(old: Path, new: Path) -> int:
    """The Python heap's peak while `compare_runs` compares two runs."""
    tracemalloc.start()
    try:
        diff = compare_runs(old, new)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert diff.compared > 0
    return peak


class TestBoundedMemory:
    def test_the_heap_does_not_grow_with_the_rows(self, tmp_path):
        """4x the rows, about the same peak (0.4-0.5 MB); the old dict of old rows grew 4x.

        tracemalloc sees Python's heap only, not SQLite's page cache (capped at 8 MiB
        by the index); bench/diff.py measures the whole process's peak RSS.
        """
        seed = checked_once(tmp_path, "seed", "The fee is 5% [doc-1].")
        small, large = 3_000, 12_000
        peaks = {}
        for rows in (small, large):
            old = replicated(seed, tmp_path / f"old{rows}", rows)
            new = replicated(seed, tmp_path / f"new{rows}", rows, changed_every=1000)
            peaks[rows] = peak_bytes(old, new)
        assert peaks[large] < 1.2 * peaks[small], peaks

    def test_rows_matched_by_question_keep_the_heap_flat(self, tmp_path):
        """Per-run ids on both sides (issue 35): matched by question, still in bounded memory."""
        seed = checked_once(tmp_path, "seed", "The fee is 5% [doc-1].")
        small, large = 3_000, 12_000
        peaks = {}
        for rows in (small, large):
            old = replicated(seed, tmp_path / f"old{rows}", rows, per_run="monday-")
            new = replicated(
                seed, tmp_path / f"new{rows}", rows, changed_every=1000, per_run="tuesday-"
            )
            assert {"question": rows} == compare_runs(old, new).matched_by
            peaks[rows] = peak_bytes(old, new)
        assert peaks[large] < 1.2 * peaks[small], peaks


class TestTypedFindings:
    @pytest.fixture
    def pair(self, tmp_path: Path) -> tuple[Path, Path]:
        old = checked_once(tmp_path, "old", "The fee is 5% [doc-1].")
        return old, replicated(old, tmp_path / "new", 1)

    def rewrite_details(self, run: Path, **details: object) -> None:
        record = json.loads((run / "rows.jsonl").read_text())
        record["details"].update(details)
        (run / "rows.jsonl").write_text(json.dumps(record) + "\n")

    def test_findings_of_the_wrong_type_are_refused_not_misread(self, pair):
        """A string where the violation codes go: read by key, it was a violation."""
        old, new = pair
        self.rewrite_details(new, deterministic_failures="fabricated_citation")
        with pytest.raises(RunDiffError, match=r"^new/rows.jsonl line 1 is not a row record$"):
            compare_runs(old, new)

    def test_a_finding_the_model_does_not_know_is_refused(self, pair):
        """A renamed finding is not silently missing: the record does not validate."""
        old, new = pair
        self.rewrite_details(new, fabricated_citation_count=3)
        with pytest.raises(RunDiffError, match="line 1 is not a row record"):
            compare_runs(old, new)


class TestStreamedOutputs:
    def test_the_command_writes_what_the_held_comparison_renders(self, tmp_path):
        """--json, the text and the page, streamed from disk, equal the in-memory renderings."""
        seed = checked_once(tmp_path, "seed", "The fee is 5% [doc-1].")
        old = replicated(seed, tmp_path / "old", 400)
        new = replicated(seed, tmp_path / "new", 420, changed_every=7)
        diff = compare_runs(old, new)
        assert (400, 57, 20, 0) == (diff.compared, diff.changed, diff.added, diff.removed)
        listed = run_cli("diff", str(old), str(new), "--json")
        assert {"exit_code": 0, "diff": diff.model_dump(mode="json")} == json.loads(listed.stdout)
        text = io.StringIO()
        run_diff(old, new, html=tmp_path / "d.html", as_json=False, out=text, exit_code=0)
        assert render_text(diff) == text.getvalue()
        assert "  and 27 more (--json lists every row)" in text.getvalue()
        page = render_html(
            diff, old_name=str(old), new_name=str(new), old_href="old/", new_href="new/"
        )
        assert page == (tmp_path / "d.html").read_text(encoding="utf-8")
