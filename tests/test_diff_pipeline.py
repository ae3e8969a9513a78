"""citemark diff for a changed pipeline (issue 23, item 3): same questions, other answers.

Two recordings of the same questions by two versions of a pipeline differ in their
answers, so their input hashes differ: they compare all the same, and the comparison
says how many rows changed answer, sources or question, which check options, versions
and judge fields differ (each with both values), and links every row to its record in
both reports. Only runs that share no row are refused.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from pathlib import Path

import pytest
from diff_helpers import reseal
from fake_openai import run_cli

from citemark._pipelines.diff.digests import row_digests
from citemark._pipelines.readers.citemark_rows import CheckRow, parse_row
from citemark.diff import RunDiffError, compare_runs, render_text

SOURCES = [
    {"text": "The late fee is 5% of the unpaid balance.", "doc_id": "fees"},
    {"text": "Members pay no late fee.", "doc_id": "members"},
]


def answer_row(number: int, answer: str, *, with_id: bool = True, sources=None) -> dict:
    row = {
        "question": f"Question {number}: what is the fee?",
        "answer": answer,
        "sources": sources if sources is not None else SOURCES,
    }
    return {"id": f"q{number}", **row} if with_id else row


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def record_digests(data: Path, out: Path) -> Path:
    """Give each ``rows.jsonl`` record of ``out`` the ``digests`` of its input row.

    What the row record itself carries once ``citemark._pipelines.check.sinks.row_record`` adds
    ``row_digests`` (see the lead's integration note); a record that already has them
    is left as it is, so this is a no-op then.
    """
    rows: dict[int, CheckRow] = {}
    for number, raw in enumerate(data.read_bytes().splitlines(), start=1):
        item = parse_row(number, raw)
        if isinstance(item, CheckRow):
            rows[item.line] = item
    lines, added = [], False
    for raw in (out / "rows.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(raw)
        item = rows.get(record["line"])
        if "digests" not in record and item is not None and record["outcome"] != "malformed":
            digests = row_digests(item.question, item.answer, item.sources)
            head = {key: record.pop(key) for key in ("line", "id")}
            record, added = {**head, "digests": digests, **record}, True
        lines.append(json.dumps(record) + "\n")
    if added:
        (out / "rows.jsonl").write_text("".join(lines), encoding="utf-8")
        reseal(out)
    return out


def checked(tmp_path: Path, name: str, rows: list[dict], *args: str) -> Path:
    """``citemark check`` of ``rows`` into ``tmp_path/name``, with the input digests."""
    (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
    data = write_rows(tmp_path / f"{name}.jsonl", rows)
    done = run_cli("check", str(data), "--out", str(tmp_path / name), "--quiet", *args)
    assert 0 == done.returncode, done.stderr
    return record_digests(data, tmp_path / name)


V1 = [
    answer_row(1, "The late fee is 5% of the unpaid balance [1]."),
    answer_row(2, "Members pay no late fee [2]."),
    answer_row(3, "The fee is 5% [1]."),
]
# Version 2 of the pipeline: answer 2 rephrased, answer 3 now cites a source it was not given.
V2 = [
    V1[0],
    answer_row(2, "Members of the club pay no late fee [2]."),
    answer_row(3, "The fee is 5% [3]."),
]


@pytest.fixture
def versions(tmp_path: Path) -> tuple[Path, Path]:
    return checked(tmp_path, "v1", V1), checked(tmp_path, "v2", V2)


class TestChangedPipeline:
    def test_two_versions_over_the_same_questions_compare_without_a_flag(self, versions):
        """The comparison diff exists for: old code refused it (exit 2) for its input hash."""
        done = run_cli("diff", *map(str, versions))
        assert (0, "") == (done.returncode, done.stderr)
        assert "rows: 3 compared, 2 unchanged, 1 changed, 0 added, 0 removed" in done.stdout
        assert "input: DIFFERENT" in done.stdout
        assert "q3 (line 3): unassessed (no_judge) -> failed [new_violation" in done.stdout
        assert "(answer changed)" in done.stdout

    def test_it_counts_the_rows_whose_answer_sources_or_question_changed(self, tmp_path):
        """Answers 2 and 3 changed, the sources of row 3, no question; row 2's result did not."""
        v2 = [V2[0], V2[1], answer_row(3, "The fee is 5% [3].", sources=[*SOURCES, SOURCES[0]])]
        diff = compare_runs(checked(tmp_path, "v1", V1), checked(tmp_path, "v2", v2))
        assert (3, {"answer": 2, "sources": 1, "question": 0}) == (
            diff.inputs_recorded,
            diff.inputs_changed,
        )
        # Row 3 now cites its third source, which it was given: no result changed.
        assert (0, ()) == (diff.changed, diff.changes)
        assert "inputs: of 3 compared rows, answer changed in 2, sources in 1, question in 0" in (
            render_text(diff)
        )

    def test_rows_without_ids_are_matched_by_question(self, tmp_path):
        """Reordered rows with no id are found by their question, not paired by line."""
        first = [
            answer_row(1, "The fee is 5% [1].", with_id=False),
            answer_row(2, "The fee is 5% [9].", with_id=False),
        ]
        diff = compare_runs(checked(tmp_path, "a", first), checked(tmp_path, "b", first[::-1]))
        assert (2, 0, {"question": 2}) == (diff.compared, diff.changed, diff.matched_by)
        # Paired by line, as the old code did, both rows would change outcome.
        old = [json.loads(r) for r in (tmp_path / "a" / "rows.jsonl").read_text().splitlines()]
        new = [json.loads(r) for r in (tmp_path / "b" / "rows.jsonl").read_text().splitlines()]
        assert ["unassessed", "failed"] == [r["outcome"] for r in old]
        assert ["failed", "unassessed"] == [r["outcome"] for r in new]

    def test_options_and_versions_that_differ_are_named_with_both_values(self, tmp_path):
        """--index-base, --strict-markers, --min-sentence-coverage: each named, old and new."""
        old = checked(tmp_path, "old", V1)
        new = checked(
            tmp_path, "new", V1, "--index-base", "0", "--strict-markers",
            "--min-sentence-coverage", "0.5",
        )  # fmt: skip
        report = json.loads((new / "report.json").read_text())
        report["citemark_version"] = "9.9.9"
        (new / "report.json").write_text(json.dumps(report))
        diff = compare_runs(old, new)
        assert [
            ("min_sentence_coverage", None, 0.5),
            ("index_base", 1, 0),
            ("strict_markers", False, True),
        ] == [(d.name, d.old, d.new) for d in diff.option_differences]
        assert [("citemark_version", "9.9.9")] == [
            (d.name, d.new) for d in diff.version_differences
        ]
        text = render_text(diff)
        assert (
            "options: DIFFERENT: min_sentence_coverage null -> 0.5; index_base 1 -> 0; "
            "strict_markers false -> true"
        ) in text
        assert 'versions: DIFFERENT: citemark_version "' in text
        assert "options: the same" in render_text(compare_runs(old, old))

    def test_a_judge_field_that_differs_is_named(self, tmp_path):
        """Another judge model: the judge difference names the field and both values."""
        old, new = checked(tmp_path, "old", V1), checked(tmp_path, "new", V1)
        report = json.loads((old / "report.json").read_text())
        judge = {"provider": "openai-compatible", "model": "judge-1", "prompt_sha256": "a" * 64}
        report["check"]["judge"] = judge
        (old / "report.json").write_text(json.dumps(report))
        report = json.loads((new / "report.json").read_text())
        report["check"]["judge"] = {**judge, "model": "judge-2"}
        (new / "report.json").write_text(json.dumps(report))
        diff = compare_runs(old, new)
        assert [("model", "judge-1", "judge-2")] == [
            (d.name, d.old, d.new) for d in diff.judge_differences
        ]
        assert '(model "judge-1" -> "judge-2")' in render_text(diff)

    def test_runs_that_share_no_row_are_refused(self, tmp_path):
        """The one refusal: no id, question or line in common.

        Issue 35 item 2: an id the runs do not share no longer decides, so the new
        row asks a question of its own.
        """
        old = checked(tmp_path, "old", V1)
        new = checked(tmp_path, "new", [{**V1[0], "id": "other", "question": "Who pays?"}])
        with pytest.raises(RunDiffError, match=r"^old and new share no row"):
            compare_runs(old, new)

    def test_the_old_flag_is_accepted_with_a_note(self, versions):
        """--allow-different-inputs is no longer needed: accepted, ignored, and said so."""
        done = run_cli("diff", *map(str, versions), "--allow-different-inputs")
        assert 0 == done.returncode
        note = (
            "citemark: note: --allow-different-inputs is no longer needed and has no "
            "effect: runs over different inputs are compared"
        )
        assert [note] == done.stderr.splitlines()
        assert "--allow-different-inputs" not in run_cli("diff", "--help").stdout


class TestLinks:
    def test_each_row_links_to_its_record_in_both_reports(self, tmp_path):
        """report.html#row-N where the page shows the row, else its line of rows.jsonl."""
        rows = [answer_row(n, "The fee is 5% [1].") for n in range(1, 5)]
        old = checked(tmp_path, "old", rows, "--html-rows", "1")
        new_rows = [{**r, "answer": "The fee is 5% [9]."} for r in rows]
        newer = checked(tmp_path, "runs/newer", new_rows)
        page = tmp_path / "pages" / "diff.html"
        done = run_cli("diff", str(old), str(newer), "--html", str(page))
        assert 0 == done.returncode, done.stderr
        html = page.read_text(encoding="utf-8")
        links = [urllib.parse.unquote(href) for href in re.findall(r'<a href="([^"]+)">', html)]
        assert 8 == len(links)  # four rows, two links each
        old_shown = [link for link in links if link.startswith("../old/report.html#row-")]
        old_not_shown = [link for link in links if link == "../old/rows.jsonl"]
        assert (1, 3) == (len(old_shown), len(old_not_shown))
        assert 4 == sum(link.startswith("../runs/newer/report.html#row-") for link in links)
        for link in links:
            target = (page.parent / link.split("#")[0]).resolve()
            assert target.is_file(), link
        # The anchor is the one the page's script follows: the row's input line.
        shown_line = int(old_shown[0].rsplit("-", 1)[1])
        data = (old / "report.html").read_text(encoding="utf-8")
        assert f"[{shown_line}," in data.split('id="data">', 1)[1]
        assert "rows.jsonl line " in html


class TestReportVersions:
    def test_a_report_of_a_later_schema_version_with_new_fields_is_read(self, versions):
        """A newer report.json (schema 3, fields this version does not know) is read."""
        old, new = versions
        report = json.loads((new / "report.json").read_text())
        report["schema_version"] = 3
        report["check"]["headline"] = {"cite_only_given_sources": 2, "violations": 1}
        report["added_later"] = [1, 2]
        (new / "report.json").write_text(json.dumps(report))
        diff = compare_runs(old, new)
        assert (3, 1) == (diff.compared, diff.changed)
        assert [("schema_version", 2, 3)] == [
            (d.name, d.old, d.new) for d in diff.version_differences
        ]
