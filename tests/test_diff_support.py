"""``citemark diff`` names the citations whose advisory support changed (issue 36 part 7).

Both runs are real ``citemark check --verifier`` runs, made in this process through
the command line's own ``main``; between them one row's second source is replaced by
an unrelated text, so the lexical verifier's verdict on the citation of it flips.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from nli_checkpoint import build_checkpoint

from citemark._contract.errors import RunDiffError
from citemark._pipelines.cli.main import main
from citemark._pipelines.diff.compare import compare_runs
from citemark._pipelines.diff.runs import read_support
from citemark._pipelines.diff.support import support_marks

if TYPE_CHECKING:
    from pathlib import Path

FEE = "The annual fee is due in May each year."
LATE = "Late payers owe a penalty of ten dollars."
ROWS = [
    {
        "id": "fees",
        "question": "When is the fee due?",
        "answer": f"{FEE[:-1]} [1]. {LATE[:-1]} [2].",
        "sources": [{"doc_id": "fee", "text": FEE}, {"doc_id": "late", "text": LATE}],
    },
    {
        "id": "cheques",
        "question": "Who signs?",
        "answer": "The treasurer signs every cheque [1].",
        "sources": [{"doc_id": "sign", "text": "The treasurer signs every cheque."}],
    },
]
# The new run: the first row's second source no longer says what the answer cites it for.
UNRELATED = "Parking is free on Sundays near the hall."


def _runs(folder: Path, *, changed: bool) -> Path:
    rows = json.loads(json.dumps(ROWS))
    if changed:
        rows[0]["sources"][1]["text"] = UNRELATED
    path = folder / ("new.jsonl" if changed else "old.jsonl")
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _check(runs: Path, out: Path, *flags: str) -> Path:
    assert 0 == main(["check", str(runs), "--out", str(out), *flags])
    return out


@pytest.fixture(scope="module")
def lexical_pair(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("support-diff")
    old = _check(_runs(folder, changed=False), folder / "old", "--verifier", "lexical")
    new = _check(_runs(folder, changed=True), folder / "new", "--verifier", "lexical")
    return old, new


class TestSupportChanges:
    def test_the_flipped_citation_is_named_and_counted(self, lexical_pair):
        diff = compare_runs(*lexical_pair)
        support = diff.support
        assert support is not None
        assert support.compared
        assert support.why_not is None
        assert (2, 1, 1, 1) == (
            support.rows,
            support.rows_changed,
            support.citations_changed,
            support.recalls_changed,
        )
        [change] = diff.support_changes
        assert ("fees", 1, 1) == (change.id, change.old_line, change.new_line)
        assert [
            "sentence 2 recall 1 -> 0",
            "sentence 2, [2] supported -> not supported",
        ] == [flip.text() for flip in change.flips]
        # Advisory: the row's result did not change, and the diff counts no change.
        assert (0, 2) == (diff.changed, diff.unchanged)

    def test_text_json_and_page_say_it_and_exit_zero(self, lexical_pair, tmp_path, capsys):
        old, new = lexical_pair
        page = tmp_path / "diff.html"
        assert 0 == main(["diff", str(old), str(new), "--html", str(page)])
        text = capsys.readouterr().out
        assert "of 2 rows judged in both runs, 1 changed: 1 citation verdicts" in text
        assert "fees (line 1): sentence 2 recall 1 -> 0; sentence 2, [2] supported -> " in text
        assert 0 == main(["diff", str(old), str(new), "--json"])
        record = json.loads(capsys.readouterr().out)
        assert 0 == record["exit_code"]
        assert 1 == record["diff"]["support"]["citations_changed"]
        [flipped] = [f for f in record["diff"]["support_changes"][0]["flips"] if f["source"]]
        assert {"sentence": 2, "source": 2, "old": "supported", "new": "not supported"} == flipped
        html = page.read_text(encoding="utf-8")
        assert "sentence 2, [2] supported -&gt; not supported" in html

    def test_the_same_runs_compare_unchanged(self, lexical_pair):
        old, _ = lexical_pair
        support = compare_runs(old, old).support
        assert support is not None
        assert (True, 2, 0) == (support.compared, support.rows, support.rows_changed)

    def test_old_verdicts_read_again_must_be_the_ones_indexed(self, lexical_pair):
        """The old verdicts are indexed in short and read again by offset: a record
        that no longer gives the indexed key is refused, never compared."""
        old, _ = lexical_pair
        data = (old / "rows.jsonl").read_bytes()
        first, second = data.splitlines(keepends=True)[:2]
        record = json.loads(second)
        marks = support_marks(record["details"]["support"])
        assert marks is not None
        assert marks == read_support(old, len(first), marks.key)
        with pytest.raises(RunDiffError, match=r"rows.jsonl changed while it was compared$"):
            read_support(old, 0, marks.key)


class TestNotCompared:
    def test_a_run_without_a_verifier_is_said_once(self, lexical_pair, tmp_path, capsys):
        folder = tmp_path
        plain = _check(_runs(folder, changed=True), folder / "plain")
        old, _ = lexical_pair
        diff = compare_runs(old, plain)
        assert diff.support is not None
        assert not diff.support.compared
        assert "the new run was not checked with --verifier" == diff.support.why_not
        assert () == diff.support_changes
        capsys.readouterr()
        assert 0 == main(["diff", str(old), str(plain)])
        text = capsys.readouterr().out
        assert 1 == text.count("support (advisory): not compared")

    def test_different_verifiers_are_two_instruments(self, lexical_pair, tmp_path, capsys):
        checkpoint = build_checkpoint(tmp_path / "tiny-nli", triggers={"fee": "entailment"})
        nli = _check(
            _runs(tmp_path, changed=True),
            tmp_path / "nli",
            "--verifier",
            f"nli:{checkpoint.folder}",
        )
        old, _ = lexical_pair
        diff = compare_runs(old, nli)
        assert diff.support is not None
        assert not diff.support.compared
        assert diff.support.why_not is not None
        assert diff.support.why_not.startswith("the runs' verifiers differ (old lexical sha256:")
        assert ", new nli sha256:" in diff.support.why_not
        assert () == diff.support_changes
        assert (0, 0) == (diff.support.rows, diff.support.rows_changed)
        capsys.readouterr()
        assert 0 == main(["diff", str(old), str(nli), "--json"])
        record = json.loads(capsys.readouterr().out)
        assert [] == record["diff"]["support_changes"]
        assert record["diff"]["support"]["why_not"] == diff.support.why_not

    def test_neither_run_with_a_verifier_says_nothing(self, tmp_path, capsys):
        old = _check(_runs(tmp_path, changed=False), tmp_path / "a")
        new = _check(_runs(tmp_path, changed=True), tmp_path / "b")
        capsys.readouterr()
        assert 0 == main(["diff", str(old), str(new)])
        assert "support" not in capsys.readouterr().out
