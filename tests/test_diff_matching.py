"""citemark diff matches rows by what identifies a question (issue 35, item 2).

A recorded or traced row's id is a run id, new every run: two days of the same
pipeline shared no id, and ``diff`` refused them ("share no row"). Rows whose
records say ``"id_scope": "run"`` are never matched by their id; ids count only
where the two runs share some; otherwise rows are matched by question (repeated
questions in order of occurrence), then by line. ``--match`` forces one rule, and
every output says which rule matched how many rows and what each side left
unmatched.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from diff_helpers import reseal
from fake_openai import run_cli

from citemark import CitationScorer
from citemark._pipelines.check.run import run_check
from citemark._pipelines.eval_report import MalformedLine
from citemark._pipelines.readers import Recorded
from citemark._pipelines.readers.citemark_rows import CheckRow, parse_recorded, parse_row
from citemark.diff import RunDiffError, compare_runs, render_text

SOURCES = [
    {"text": "The late fee is 5% of the unpaid balance.", "doc_id": "fees"},
    {"text": "Members of the credit union pay no late fee.", "doc_id": "members"},
    {"text": "A dispute must be raised within sixty days.", "doc_id": "disputes"},
]
FEE, MEMBERS, DISPUTES = (
    "What is the late fee?",
    "Who pays no late fee?",
    "How long do I have to dispute?",
)


def recorded(question: str, answer: str) -> dict[str, object]:
    """A row as a recorder writes it: a run id, new every run, marked as one."""
    return {
        "id": str(uuid.uuid4()),
        "id_scope": "run",
        "question": question,
        "answer": answer,
        "sources": SOURCES,
    }


def dataset(row_id: str, question: str, answer: str) -> dict[str, object]:
    """A row whose id is the dataset's own: the same question has it every run."""
    return {"id": row_id, "question": question, "answer": answer, "sources": SOURCES}


def checked(tmp_path: Path, name: str, rows: list[dict[str, object]]) -> Path:
    """``run_check`` of ``rows`` (no judge) into ``tmp_path/name``."""
    data = tmp_path / f"{name}.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    run_check(data, tmp_path / name, CitationScorer())
    return tmp_path / name


def records(run: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (run / "rows.jsonl").read_text().splitlines()]


def day(answers: dict[str, str]) -> list[dict[str, object]]:
    return [recorded(question, answer) for question, answer in answers.items()]


DAY1 = {FEE: "The late fee is 5% [1].", MEMBERS: "Members pay none [2].", DISPUTES: "Sixty [3]."}
# The next day the pipeline cites a fifth source it was not given for the members' question.
DAY2 = {**DAY1, MEMBERS: "Members pay none [5]."}


class TestTwoDaysOfARecordedPipeline:
    def test_per_run_ids_diff_row_by_row(self, tmp_path):
        """Two `citemark check` outputs of recorded rows (fresh run ids) compare row by row.

        The old code matched by id first: three fresh UUIDs a side, no row shared, exit 2.
        """
        for name, answers in (("day1", DAY1), ("day2", DAY2)):
            data = tmp_path / f"{name}.jsonl"
            data.write_text("".join(json.dumps(r) + "\n" for r in day(answers)), encoding="utf-8")
            done = run_cli("check", str(data), "--out", str(tmp_path / name), "--quiet")
            assert done.returncode in (0, 1), done.stderr
            assert ["run"] * 3 == [r["id_scope"] for r in records(tmp_path / name)]
        done = run_cli("diff", str(tmp_path / "day1"), str(tmp_path / "day2"))
        assert (0, "") == (done.returncode, done.stderr)
        lines = done.stdout.splitlines()
        assert "rows: 3 compared, 2 unchanged, 1 changed, 0 added, 0 removed" in lines
        assert (
            "matched by: id 0, question 3, line 0; left unmatched: old 0, new 0 (rule: "
            "question, else line; ids not compared: the runs share none; per-run ids, never "
            "matched by: old 3, new 3)"
        ) in lines
        changed = [line for line in lines if line.startswith("  ")]
        assert 1 == len(changed)
        assert "(line 2): unassessed (no_judge) -> failed [new_violation" in changed[0]

    def test_per_run_ids_never_block_matching_where_dataset_ids_are_shared(self, tmp_path):
        """Dataset ids shared, run ids not: dataset rows by id, recorded rows by question.

        Without the ``id_scope`` mark (the naive variant: the same records with the
        field taken out), the run ids count as ids the runs do not share, and the two
        recorded rows are reported removed and added.
        """

        def rows(answers: dict[str, str]) -> list[dict[str, object]]:
            return [
                dataset("q1", FEE, answers[FEE]),
                dataset("q2", MEMBERS, answers[MEMBERS]),
                *day({DISPUTES: answers[DISPUTES], "Is there a fee?": "Yes [1]."}),
            ]

        old, new = checked(tmp_path, "old", rows(DAY1)), checked(tmp_path, "new", rows(DAY2))
        diff = compare_runs(old, new)
        assert (4, 1, 0, 0) == (diff.compared, diff.changed, diff.added, diff.removed)
        assert ({"id": 2, "question": 2}, True) == (diff.matched_by, diff.ids_compared)
        assert {"old": 2, "new": 2} == diff.per_run_ids
        for run in (old, new):
            lines = [{k: v for k, v in r.items() if k != "id_scope"} for r in records(run)]
            (run / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
            reseal(run)
        naive = compare_runs(old, new)
        assert (2, 2, 2) == (naive.compared, naive.added, naive.removed)

    def test_repeated_questions_are_matched_in_order_of_occurrence(self, tmp_path):
        """The first old row asking a question goes with the first new one, and so on.

        The new run asks a new question first, so every line moves down by one: by
        line, every pair would be two different questions.
        """
        old_rows = [
            recorded(FEE, "The fee is 5% [1]."),
            recorded(FEE, "The fee is 5% [9]."),
            recorded(MEMBERS, "Members pay none [2]."),
            recorded(FEE, "Five percent [1]."),
        ]
        new_rows = [
            recorded("Is there a grace period?", "No [1]."),
            recorded(FEE, "The fee is 5% [1]."),
            recorded(FEE, "The fee is 5% [1]."),
            recorded(MEMBERS, "Members pay none [2]."),
            recorded(FEE, "Five percent [7]."),
        ]
        old, new = checked(tmp_path, "old", old_rows), checked(tmp_path, "new", new_rows)
        diff = compare_runs(old, new)
        assert {"question": 4} == diff.matched_by
        assert [
            (("added",), None, 1),
            (("violation_resolved", "reason_changed"), 2, 3),
            (("new_violation", "reason_changed"), 4, 5),
        ] == [(c.why, c.old and c.old.line, c.new and c.new.line) for c in diff.changes]
        by_line = compare_runs(old, new, match="line")
        assert ({"line": 4}, 1, 0) == (by_line.matched_by, by_line.added, by_line.removed)
        # Paired by line, three of the four pairs are two different questions.
        assert 3 == by_line.inputs_changed["question"]


class TestForcedRules:
    @pytest.fixture
    def reordered(self, tmp_path: Path) -> tuple[Path, Path]:
        """Dataset ids, the same questions, the second run in the reverse order."""
        rows = [
            dataset("q1", FEE, "The fee is 5% [1]."),
            dataset("q2", MEMBERS, "Members pay none [9]."),
        ]
        return checked(tmp_path, "old", rows), checked(tmp_path, "new", rows[::-1])

    def test_match_line_forces_lines(self, reordered):
        """--match line pairs line 1 with line 1 though the ids say otherwise."""
        old, new = reordered
        auto = run_cli("diff", str(old), str(new), "--json")
        assert {"id": 2} == json.loads(auto.stdout)["diff"]["matched_by"]
        assert 0 == json.loads(auto.stdout)["diff"]["changed"]
        done = run_cli("diff", str(old), str(new), "--match", "line")
        assert 0 == done.returncode, done.stderr
        assert (
            "matched by: id 0, question 0, line 2; left unmatched: old 0, new 0 "
            "(rule: line only (--match line))"
        ) in done.stdout.splitlines()
        assert "rows: 2 compared, 0 unchanged, 2 changed, 0 added, 0 removed" in done.stdout
        diff = compare_runs(old, new, match="line")
        assert ("line", False) == (diff.match, diff.ids_compared)

    def test_match_question_ignores_ids_the_runs_share(self, tmp_path):
        """The ids were renumbered: auto pairs them by id; --match question by question."""
        old = checked(
            tmp_path, "old", [dataset("1", FEE, "5% [1]."), dataset("2", MEMBERS, "No [2].")]
        )
        new = checked(
            tmp_path, "new", [dataset("1", MEMBERS, "No [2]."), dataset("2", FEE, "5% [1].")]
        )
        auto = compare_runs(old, new)
        assert ({"id": 2}, 2) == (auto.matched_by, auto.inputs_changed["question"])
        hint = (
            "; 2 rows matched by id ask another question: if these runs' ids do not name the "
            "same questions, --match question pairs rows by question"
        )
        assert render_text(auto).splitlines()[3].endswith(hint)
        assert hint not in render_text(compare_runs(old, new, match="question"))
        forced = compare_runs(old, new, match="question")
        assert ({"question": 2}, 0) == (forced.matched_by, forced.inputs_changed["question"])

    def test_match_id_never_uses_per_run_ids(self, tmp_path):
        """The same recorded rows checked twice: per-run ids, so --match id matches nothing."""
        data = day(DAY1)
        old, new = checked(tmp_path, "old", data), checked(tmp_path, "new", data)
        assert {"question": 3} == compare_runs(old, new).matched_by
        done = run_cli("diff", str(old), str(new), "--match", "id")
        assert 2 == done.returncode
        refusal = (
            "citemark: error: old and new share no row (matched by id only, as asked): there "
            "is nothing to compare"
        )
        assert [refusal] == done.stderr.splitlines()

    def test_ids_the_runs_do_not_share_do_not_decide(self, tmp_path):
        """Two exports numbering the same questions differently share no id: by question."""
        old = checked(
            tmp_path, "old", [dataset("a-1", FEE, "5% [1]."), dataset("a-2", MEMBERS, "No [2].")]
        )
        new = checked(
            tmp_path, "new", [dataset("b-1", FEE, "5% [1]."), dataset("b-2", MEMBERS, "No [2].")]
        )
        diff = compare_runs(old, new)
        assert ({"question": 2}, False, {"old": 0, "new": 0}) == (
            diff.matched_by,
            diff.ids_compared,
            diff.per_run_ids,
        )

    def test_an_unknown_rule_is_refused(self, reordered):
        with pytest.raises(ValueError, match="match must be one of: auto, id, question, line"):
            compare_runs(*reordered, match="position")  # type: ignore[arg-type]
        done = run_cli("diff", *map(str, reordered), "--match", "position")
        assert 2 == done.returncode
        assert "--match" in done.stderr


class TestTheOutputSaysHowRowsWereMatched:
    def test_text_json_and_html(self, tmp_path):
        """Each form names the rule, the count per rule and what each side left unmatched."""
        old = checked(tmp_path, "old", day(DAY1))
        new = checked(
            tmp_path, "new", [*day(DAY2), recorded("Is there a grace period?", "No [1].")]
        )
        page = tmp_path / "diff.html"
        done = run_cli("diff", str(old), str(new), "--json", "--html", str(page))
        summary = json.loads(done.stdout)["diff"]
        assert {
            "match": "auto",
            "ids_compared": False,
            "matched_by": {"question": 3},
            "per_run_ids": {"old": 3, "new": 4},
            "added": 1,
            "removed": 0,
        } == {
            key: summary[key]
            for key in ("match", "ids_compared", "matched_by", "per_run_ids", "added", "removed")
        }
        note = (
            "matched by: id 0, question 3, line 0; left unmatched: old 0, new 1 (rule: "
            "question, else line; ids not compared: the runs share none; per-run ids, never "
            "matched by: old 3, new 4)"
        )
        assert note in render_text(compare_runs(old, new)).splitlines()
        assert note in page.read_text()

    def test_shared_ids_are_named_as_the_rule(self, tmp_path):
        rows = [dataset("q1", FEE, "5% [1]."), dataset("q2", MEMBERS, "No [2].")]
        old, new = checked(tmp_path, "old", rows), checked(tmp_path, "new", rows[:1])
        assert (
            "matched by: id 1, question 0, line 0; left unmatched: old 1, new 0 (rule: id "
            "where the row has one (the runs share ids), else question, else line)"
        ) in render_text(compare_runs(old, new)).splitlines()

    def test_the_refusal_names_the_per_run_ids_it_did_not_compare(self, tmp_path):
        old = checked(tmp_path, "old", day({FEE: "5% [1]."}))
        new = checked(tmp_path, "new", day({MEMBERS: "No [2]."}))
        with pytest.raises(RunDiffError) as caught:
            compare_runs(old, new)
        assert (
            "old and new share no row (matched by question, else by line: the runs share no "
            "id; 2 per-run ids not compared): there is nothing to compare"
        ) == str(caught.value)


class TestIdScopeIsRead:
    def row(self, **fields: object) -> CheckRow | MalformedLine | None:
        value = {"id": "r-1", "answer": "Fees [1].", "sources": SOURCES[:1], **fields}
        return parse_row(1, json.dumps(value).encode())

    def test_run_and_row(self):
        """ "run" is kept; "row" (or no field) means the id identifies the question."""
        assert "run" == self.row(id_scope="run").id_scope  # type: ignore[union-attr]
        assert self.row(id_scope="row").id_scope is None  # type: ignore[union-attr]
        assert self.row().id_scope is None  # type: ignore[union-attr]
        assert self.row(id=None, id_scope="run").id_scope is None  # type: ignore[union-attr]
        unassessed = self.row(id_scope="run", unassessed="chain_error")
        assert ("run", "chain_error") == (unassessed.id_scope, unassessed.unassessed)  # type: ignore[union-attr]

    def test_a_reader_row_keeps_its_mark(self):
        """A ``--from`` reader's row (checked, or un-assessed) keeps its ``id_scope``."""
        row = {"id": "trace-1", "id_scope": "run", "answer": "Fees [1].", "sources": SOURCES}
        checked_row = parse_recorded(Recorded(line=1, row=row))
        unassessed = parse_recorded(Recorded(line=2, row=row, unassessed="contexts_joined"))
        assert ["run", "run"] == [checked_row.id_scope, unassessed.id_scope]  # type: ignore[union-attr]
        bad = parse_recorded(Recorded(line=3, row={**row, "id_scope": "trace"}))
        assert 'id_scope must be "run" or "row"' == bad.reason  # type: ignore[union-attr]

    def test_anything_else_is_a_malformed_line_saying_why(self):
        for value in ("trace", 1, ["run"]):
            item = self.row(id_scope=value)
            assert isinstance(item, MalformedLine)
            assert 'id_scope must be "run" or "row"' == item.reason

    def test_only_per_run_records_carry_the_field(self, tmp_path):
        run = checked(
            tmp_path,
            "run",
            [
                dataset("q1", FEE, "5% [1]."),
                recorded(MEMBERS, "No [2]."),
                {**dataset("q3", DISPUTES, "60 [3]."), "id_scope": "row"},
            ],
        )
        assert [None, "run", None] == [r.get("id_scope") for r in records(run)]
