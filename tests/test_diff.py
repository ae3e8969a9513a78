"""citemark diff: two check runs compared row by row, with the reason for every change."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from diff_helpers import reseal
from fake_openai import run_cli

from citemark import CitationScorer
from citemark._pipelines.check.run import run_check
from citemark.diff import RunDiffError, compare_runs, render_text

CONTEXT = "[doc-1] The late fee is 5% of the unpaid balance.\n[doc-2] Members pay no late fee.\n"


def row(number: int, *, uncited: bool = False) -> dict[str, object]:
    tail = " Rates vary." if uncited else ""
    return {
        "id": f"q{number}",
        "question": "What is the fee?",
        "answer": f"The fee is 5%, Row {number} says so [doc-1].{tail}",
        "context": CONTEXT,
    }


def write_rows(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def verdict(band: int) -> str:
    judged: dict[str, object] = {"occurrence": 1, "outcome": "unsupported"}
    if band >= 2:
        judged = {"occurrence": 1, "outcome": "supported", "context_span": "late fee is 5%"}
    return json.dumps({"score": band, "explanation": "Judged.", "verdicts": [judged]})


class Judge:
    """A judge whose reply depends on the row: band 3 unless told otherwise."""

    provider = "openai-compatible"

    def __init__(self, replies: dict[int, str] | None = None, model_name: str = "judge-1"):
        self.replies = replies or {}
        self.model_name = model_name

    async def complete(self, prompt: str) -> str:
        match = re.search(r"Row (\d+) says so", prompt)
        assert match is not None
        return self.replies.get(int(match.group(1)), verdict(3))


INPUT = [row(1), row(2), row(3), row(4, uncited=True), row(5)]


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    """The same input checked twice; the second judge and the second options differ."""
    data = write_rows(tmp_path / "runs.jsonl", INPUT)
    run_check(data, tmp_path / "old", CitationScorer(Judge()))
    changed = Judge({2: verdict(0), 3: "not a verdict"})
    run_check(data, tmp_path / "new", CitationScorer(changed, min_sentence_coverage=1.0))
    return tmp_path / "old", tmp_path / "new"


class TestCompare:
    def test_each_changed_row_says_why(self, runs):
        """A changed verdict, a changed reason and a new violation, each named on its row."""
        diff = compare_runs(*runs)
        assert (5, 2, 3, 0, 0) == (
            diff.compared,
            diff.unchanged,
            diff.changed,
            diff.added,
            diff.removed,
        )
        why = {change.id: change.why for change in diff.changes}
        assert {
            "q2": ("judge_verdict_changed",),
            "q3": ("judge_verdict_changed", "reason_changed"),
            "q4": ("new_violation",),
        } == why
        assert {"passed->failed": 2, "passed->unassessed": 1} == diff.transitions
        assert diff.same_input
        assert diff.same_judge

    def test_the_reverse_comparison_resolves_the_violation(self, runs):
        """Compared the other way round, the violation is resolved."""
        old, new = runs
        diff = compare_runs(new, old)
        assert ("violation_resolved",) == next(c.why for c in diff.changes if c.id == "q4")

    def test_different_inputs_are_compared_by_the_rows_they_share(self, runs, tmp_path):
        """Another input is compared without being asked: by the rows the two runs share.

        Issue 23 item 3 changed this: runs over different inputs were refused unless
        ``allow_different_inputs`` was passed, which the API no longer takes.
        """
        old, _ = runs
        other = write_rows(tmp_path / "other.jsonl", [row(5), row(1), row(9)])
        run_check(other, tmp_path / "other", CitationScorer(Judge()))
        diff = compare_runs(old, tmp_path / "other")
        assert (False, 2, 0, 1, 3) == (
            diff.same_input,
            diff.compared,
            diff.changed,
            diff.added,
            diff.removed,
        )

    def test_rows_are_matched_by_id_not_by_position(self, tmp_path):
        """Reordered rows with ids are unchanged; matching them by line would see changes."""
        first = write_rows(tmp_path / "a.jsonl", [row(1), row(2, uncited=True)])
        second = write_rows(tmp_path / "b.jsonl", [row(2, uncited=True), row(1)])
        scorer = CitationScorer(min_sentence_coverage=1.0)
        run_check(first, tmp_path / "a", scorer)
        run_check(second, tmp_path / "b", scorer)
        diff = compare_runs(tmp_path / "a", tmp_path / "b")
        assert (2, 0) == (diff.compared, diff.changed)
        # The naive match, by line number, pairs q1 with q2 and reports two changes.
        lines_a = (tmp_path / "a" / "rows.jsonl").read_text().splitlines()
        lines_b = (tmp_path / "b" / "rows.jsonl").read_text().splitlines()
        naive = sum(
            json.loads(a)["outcome"] != json.loads(b)["outcome"]
            for a, b in zip(lines_a, lines_b, strict=True)
        )
        assert 2 == naive

    def test_another_judge_is_another_instrument(self, runs, tmp_path):
        """A different judge model is reported, in the result and in the text."""
        old, _ = runs
        data = tmp_path / "runs.jsonl"
        run_check(data, tmp_path / "j2", CitationScorer(Judge(model_name="judge-2")))
        diff = compare_runs(old, tmp_path / "j2")
        assert (False, "judge-1", "judge-2") == (
            diff.same_judge,
            diff.old_judge.model,
            diff.new_judge.model,
        )
        assert "two instruments, not one" in render_text(diff)
        assert "judge: the same" in render_text(compare_runs(old, old))

    def test_a_folder_that_is_not_a_run_is_refused(self, runs, tmp_path):
        """No report.json, or a rows.jsonl line that is not a record: a RunDiffError."""
        old, new = runs
        with pytest.raises(RunDiffError, match="missing"):
            compare_runs(old, tmp_path / "nothing-here")
        (new / "rows.jsonl").write_text('{"line": 1}\n')
        with pytest.raises(RunDiffError, match="line 1 is not a row record"):
            compare_runs(old, new)


class TestCommand:
    def test_text_json_and_html(self, runs, tmp_path):
        """citemark diff prints totals and rows, --json one object, --html a page."""
        old, new = runs
        text = run_cli("diff", str(old), str(new))
        assert 0 == text.returncode, text.stderr
        assert "rows: 5 compared, 2 unchanged, 3 changed, 0 added, 0 removed" in text.stdout
        assert "q4 (line 4): passed band 3 -> failed band 3 [new_violation]" in text.stdout
        page = tmp_path / "diff.html"
        done = run_cli("diff", str(old), str(new), "--json", "--html", str(page))
        output = json.loads(done.stdout)
        assert (0, 3) == (output["exit_code"], output["diff"]["changed"])
        html = page.read_text()
        assert "Content-Security-Policy" in html
        assert "<script" not in html
        assert html.count("<tr>") == 1 + 3

    def test_runs_that_share_no_row_exit_2(self, runs, tmp_path):
        """The one refusal left, runs sharing no row, is a usage error: one CLI line, exit 2.

        Issue 23 item 3 changed this: different inputs were refused, and the message
        named ``--allow-different-inputs``; now only runs that share no row are. Issue
        35 item 2: ids the runs do not share no longer decide, so the other run's row
        asks another question; the refusal says how rows were matched.
        """
        old, _ = runs
        other = write_rows(tmp_path / "other.jsonl", [{**row(7), "question": "Who pays?"}])
        run_check(other, tmp_path / "other", CitationScorer())
        done = run_cli("diff", str(old), str(tmp_path / "other"))
        assert 2 == done.returncode
        refusal = (
            "citemark: error: old and other share no row (matched by question, else by "
            "line: the runs share no id): there is nothing to compare"
        )
        assert [refusal] == done.stderr.splitlines()
        assert "allow" not in done.stderr

    def test_untrusted_ids_are_escaped(self, tmp_path):
        """A row id is input text: the page escapes it."""
        _, html = diff_page(tmp_path, "<script>alert(1)</script>")
        assert "<script>alert" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html

    def test_an_id_with_a_lone_surrogate_shows_escaped(self, tmp_path):
        """JSON can carry a lone surrogate, which UTF-8 cannot: the page shows it as \\ud800."""
        done, html = diff_page(tmp_path, "a\ud800b")
        assert (0, "") == (done.returncode, done.stderr)
        assert "a\\ud800b (line 1)" in html


def diff_page(tmp_path: Path, row_id: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """`citemark diff --html` of one row with id ``row_id``, failed only by the second run."""
    data = write_rows(tmp_path / "runs.jsonl", [{**row(1, uncited=True), "id": row_id}])
    run_check(data, tmp_path / "a", CitationScorer())
    run_check(data, tmp_path / "b", CitationScorer(min_sentence_coverage=1.0))
    page = tmp_path / "p.html"
    done = run_cli("diff", str(tmp_path / "a"), str(tmp_path / "b"), "--html", str(page))
    return done, page.read_text(encoding="utf-8")


class TestHostileRuns:
    """Issue 26, items 3 and 6: what another run's files can hold cannot crash or paint."""

    def test_a_deeply_nested_line_is_one_structural_refusal(self, runs):
        """100,000 nested arrays: a RunDiffError (exit 2, one line), not a RecursionError."""
        old, new = runs
        (new / "rows.jsonl").write_text("[" * 100_000 + "]" * 100_000 + "\n")
        with pytest.raises(RunDiffError) as caught:
            compare_runs(old, new)
        assert "new/rows.jsonl line 1 is not a row record (not valid JSON: nested too deep)" == str(
            caught.value
        )
        assert caught.value.__cause__ is None
        assert caught.value.__context__ is None
        done = run_cli("diff", str(old), str(new))
        assert 2 == done.returncode
        assert "Traceback" not in done.stderr
        assert [f"citemark: error: {caught.value}"] == done.stderr.splitlines()
        # The naive reader, json.loads, does not bound the nesting.
        with pytest.raises(RecursionError):
            json.loads((new / "rows.jsonl").read_text())

    def test_terminal_escapes_in_a_row_id_are_printed_escaped(self, tmp_path):
        """An id holding OSC, CSI, BEL and C1 controls reaches the terminal as text."""
        hostile = "\x1b]0;pwned\x07q\x1b[2J\x9b31m\n  forged (line 9): failed"
        data = write_rows(tmp_path / "runs.jsonl", [{**row(1, uncited=True), "id": hostile}])
        run_check(data, tmp_path / "a", CitationScorer())
        run_check(data, tmp_path / "b", CitationScorer(min_sentence_coverage=1.0))
        done = run_cli("diff", str(tmp_path / "a"), str(tmp_path / "b"))
        assert 0 == done.returncode, done.stderr
        escaped = r"\x1b]0;pwned\x07q\x1b[2J\x9b31m\n  forged (line 9): failed (line 1)"
        assert escaped in done.stdout
        assert not any(ch in done.stdout for ch in "\x1b\x07\x9b")
        # The id's newline forged no line of its own.
        assert not any(line.startswith("  forged") for line in done.stdout.splitlines())
        # --json keeps the id exactly, every control character a JSON escape.
        listed = run_cli("diff", str(tmp_path / "a"), str(tmp_path / "b"), "--json")
        assert not any(ch in listed.stdout for ch in "\x1b\x07\x9b")
        assert hostile == json.loads(listed.stdout)["diff"]["changes"][0]["id"]

    def test_a_folder_name_in_an_error_is_printed_escaped(self, runs, tmp_path):
        """A file name is untrusted text too: the one-line error escapes it."""
        old, _ = runs
        done = run_cli("diff", str(old), str(tmp_path / "x\x1b[2Jy"))
        assert 2 == done.returncode
        assert "\x1b" not in done.stderr
        assert r"x\x1b[2Jy/report.json is missing" in done.stderr

    def test_check_prints_hostile_file_names_escaped(self, tmp_path):
        """citemark check names its input and outputs: those names reach the terminal escaped."""
        data = write_rows(tmp_path / "in\x1b]0;x\x07.jsonl", [row(1)])
        done = run_cli("check", str(data), "--out", str(tmp_path / "out\x1b[2J"))
        assert 0 == done.returncode, done.stderr
        assert not any(ch in done.stdout + done.stderr for ch in "\x1b\x07")
        unwrapped = done.stdout.replace("\n", "")  # rich wraps long paths
        assert r"in\x1b]0;x\x07.jsonl" in unwrapped
        assert r"out\x1b[2J" in unwrapped


def refusal(old: Path, new: Path) -> str:
    """``citemark diff``'s one line on standard error, asserted to be a refusal (exit 2)."""
    done = run_cli("diff", str(old), str(new))
    assert (2, "") == (done.returncode, done.stdout), done.stderr
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.splitlines()
    return line


class TestRowsHeldToTheirReport:
    """Issue 38 item 7: ``rows.jsonl`` is read as the run its ``report.json`` describes, or refused."""

    def test_a_duplicated_record_is_refused_not_added(self, runs):
        """A record repeated in rows.jsonl: refused by its SHA-256 and count, not one row added.

        The naive reading (the same file with its report sealed to it, as today's diff
        read any file) counts the copy as an added row beside the five compared.
        """
        old, new = runs
        lines = (new / "rows.jsonl").read_text().splitlines(keepends=True)
        (new / "rows.jsonl").write_text("".join([*lines, lines[4]]))
        message = (
            "new/rows.jsonl is not the file new/report.json names (its SHA-256 differs): "
            "it holds 6 records where the report counts 5"
        )
        with pytest.raises(RunDiffError) as caught:
            compare_runs(old, new)
        assert message == str(caught.value)
        assert (None, None) == (caught.value.__cause__, caught.value.__context__)
        assert f"citemark: error: {message}" == refusal(old, new)
        naive = compare_runs(old, reseal(new))
        assert (5, 1) == (naive.compared, naive.added)

    def test_the_same_line_twice_is_refused_in_the_old_run_too(self, runs):
        """The old run is held to its report as the new one is: a copied record is refused."""
        old, new = runs
        lines = (old / "rows.jsonl").read_text().splitlines(keepends=True)
        (old / "rows.jsonl").write_text("".join([lines[0], *lines]))
        assert refusal(old, new).startswith(
            "citemark: error: old/rows.jsonl is not the file old/report.json names "
            "(its SHA-256 differs): it holds 6 records"
        )

    def test_zeroed_digests_are_refused_and_never_compared(self, runs):
        """Digests zeroed in rows.jsonl: refused; sealed into a report, read as not recorded.

        Today's diff compared the zeros: every row's answer, sources and question
        "changed", printed beside "input: the same".
        """
        old, new = runs
        zeros = {"question": "0" * 16, "answer": "0" * 16, "sources": "0" * 16}
        records = [json.loads(line) for line in (new / "rows.jsonl").read_text().splitlines()]
        (new / "rows.jsonl").write_text(
            "".join(json.dumps({**r, "digests": zeros}) + "\n" for r in records)
        )
        assert refusal(old, new).startswith(
            "citemark: error: new/rows.jsonl is not the file new/report.json names"
        )
        diff = compare_runs(old, reseal(new))
        assert (True, 5, 0, {}) == (
            diff.same_input,
            diff.compared,
            diff.inputs_recorded,
            diff.inputs_changed,
        )
        assert all(change.inputs_changed == () for change in diff.changes)
        text = render_text(diff)
        assert "input: the same" in text
        assert "inputs: not recorded" in text

    @pytest.mark.parametrize("digest", ["0" * 16, "ABCDEF0123456789", "abc", "g" * 16])
    def test_a_digest_that_is_not_one_is_not_recorded(self, runs, digest):
        """One record whose answer digest is not 16 lowercase hex digits: its digests are not compared."""
        old, new = runs
        records = [json.loads(line) for line in (new / "rows.jsonl").read_text().splitlines()]
        records[0]["digests"]["answer"] = digest
        (new / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
        diff = compare_runs(old, reseal(new))
        assert (5, 4, 0) == (diff.compared, diff.inputs_recorded, diff.inputs_changed["answer"])

    def test_rows_of_another_run_are_refused(self, runs, tmp_path):
        """A rerun's rows.jsonl put beside this run's report: refused at its first line.

        The rerun read the same input with the same options, so its rows are
        identical but for their run id: today's diff compared them without comment
        (the naive variant below, the same rows under a report sealed to them).
        """
        old, new = runs
        run_check(tmp_path / "runs.jsonl", tmp_path / "rerun", CitationScorer(Judge()))
        (new / "rows.jsonl").write_bytes((tmp_path / "rerun" / "rows.jsonl").read_bytes())
        message = (
            "new/rows.jsonl line 1 is not from the run new/report.json describes "
            "(its run_id differs)"
        )
        with pytest.raises(RunDiffError, match=re.escape(message)):
            compare_runs(old, new)
        assert f"citemark: error: {message}" == refusal(old, new)
        report = json.loads((new / "report.json").read_text())
        report["run_id"] = json.loads((tmp_path / "rerun" / "report.json").read_text())["run_id"]
        (new / "report.json").write_text(json.dumps(report))
        naive = compare_runs(old, reseal(new))
        assert (5, 0, 0, 0) == (naive.compared, naive.changed, naive.added, naive.removed)

    def test_a_record_without_the_run_id_is_refused(self, runs):
        """A record that names no run, beside a report that names one, is not that run's."""
        old, new = runs
        lines = (new / "rows.jsonl").read_text().splitlines()
        last = json.loads(lines[-1])
        del last["run_id"]
        (new / "rows.jsonl").write_text("\n".join([*lines[:-1], json.dumps(last)]) + "\n")
        assert refusal(old, new) == (
            "citemark: error: new/rows.jsonl line 5 is not from the run new/report.json "
            "describes (its run_id differs)"
        )

    def test_a_report_that_names_no_rows_file_is_refused(self, runs):
        """A report whose files leave rows.jsonl out does not describe the rows beside it."""
        old, new = runs
        report = json.loads((new / "report.json").read_text())
        del report["check"]["files"]["rows.jsonl"]
        (new / "report.json").write_text(json.dumps(report))
        assert refusal(old, new) == (
            "citemark: error: new/report.json does not name a rows.jsonl: "
            "it is not the report of these rows"
        )

    def test_a_report_without_files_or_run_id_still_counts_its_rows(self, runs):
        """A report from before run ids and file hashes: the count is what is left to hold to."""
        old, new = runs
        report = json.loads((new / "report.json").read_text())
        del report["check"]["files"], report["run_id"]
        (new / "report.json").write_text(json.dumps(report))
        assert 5 == compare_runs(old, new).compared
        lines = (new / "rows.jsonl").read_text().splitlines(keepends=True)
        (new / "rows.jsonl").write_text("".join(lines[:4]))
        assert refusal(old, new) == (
            "citemark: error: new/rows.jsonl is not the file new/report.json describes: "
            "it holds 4 records where the report counts 5"
        )

    def test_malformed_lines_are_counted_with_the_rows(self, tmp_path):
        """A run with an unreadable input line: its malformed record is one the report counts."""
        data = tmp_path / "runs.jsonl"
        data.write_text(json.dumps(row(1)) + "\nnot json\n" + json.dumps(row(2)) + "\n")
        run_check(data, tmp_path / "a", CitationScorer())
        run_check(data, tmp_path / "b", CitationScorer(min_sentence_coverage=1.0))
        diff = compare_runs(tmp_path / "a", tmp_path / "b")
        assert (3, 0) == (diff.compared, diff.changed)
