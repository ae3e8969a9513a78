"""One honest vocabulary (issue 35, items 4, 5, 6 and 9).

Without a judge, code checks that each citation names a source the row was given, so
the headline says that ("cite only sources they were given"), never "correct", in the
terminal, ``--json``, ``report.json``, ``report.html``, JUnit and the pytest plugin
(the plugin's lines: tests/test_pytest_plugin.py). The page's judge-era tiles appear
only when a judge ran. The terminal names the first rows with a violation; the
numbering-base hint counts both sides and suggests ``--index-base 0`` only when it
lowers the violations; a row with no readable id is titled by its question.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import typing
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from formats_env import produce
from scorer_helpers import CONTEXT, passing, reply, unsupported

from citemark import CitationScorer
from citemark._judging.scorer.findings import ViolationCode
from citemark._pipelines.check.run import run_check
from citemark._pipelines.eval_report import CheckSummary, CitationHeadline, headline_text
from citemark.reports import EvalReport
from citemark.testing import ScriptedChat

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_RUNS = ROOT / "examples" / "data" / "example-runs.jsonl"
TWO = [{"text": "Fees rise in May.", "doc_id": "a"}, {"text": "Fees fall in June.", "doc_id": "b"}]
_DATA = re.compile(r'<script type="application/json" id="data">(.*?)</script>', re.DOTALL)
_CARD = re.compile(r'<dt>([^<]*)</dt><dd data-card="([a-z]+)">')


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """The real entry point, its standard output a pipe."""
    return subprocess.run(
        [sys.executable, "-m", "citemark", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def write_rows(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def page_data(out: Path) -> dict[str, typing.Any]:
    found = _DATA.search((out / "report.html").read_text(encoding="utf-8"))
    assert found is not None
    data: dict[str, typing.Any] = json.loads(found.group(1))
    return data


def page_cards(out: Path) -> dict[str, str]:
    """Each count card's label, by key."""
    page = (out / "report.html").read_text(encoding="utf-8")
    return {key: label for label, key in _CARD.findall(page)}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path_factory.mktemp("demo")
    done = cli("check", "examples/data/example-runs.jsonl", "--out", out, "--format", "junit")
    assert 0 == done.returncode, done.stderr
    return done, out


class TestWordsWithoutAJudge:
    def test_the_demo_says_what_was_checked_never_correct(self, demo):
        """13 of 16 rows cite only given sources; 3 cite one they were not given; no 'correct'."""
        done, _ = demo
        assert (
            "13 of 16 rows cite only sources they were given (2 cite nothing); 3 have a "
            "violation (3 cite a source they were not given); 0 could not be checked; "
            "0 lines unreadable"
        ) in done.stdout.splitlines()
        assert "not checked without a judge: whether a cited source supports its sentence" in (
            done.stdout.splitlines()
        )
        assert "correct" not in done.stdout.split("rows with a violation")[0]
        # All 3 are named, so the list says so rather than "first 3 of 3".
        lines = done.stdout.splitlines()
        at = lines.index("rows with a violation:")
        assert [
            "  line 4: gpl3-cure-30-days/out_of_range \u2014 fabricated_citation [5]",
            "  line 5: gpl3-60-days/out_of_range_in_list \u2014 fabricated_citation [9]",
            "  line 14: gpl3-cure-30-days/fabricated_label \u2014 fabricated_citation [gpl-3-9]",
        ] == lines[at + 1 : at + 4]
        assert lines[at + 4].startswith("  every row with a violation is listed; details in ")

    @pytest.mark.parametrize("code", typing.get_args(ViolationCode))
    def test_every_violation_code_has_words_for_one_and_many(self, code):
        """The violation part of the headline is true for every code, not just fabrications."""
        from citemark._pipelines.eval_report import violation_words

        one, many = violation_words(code, 1), violation_words(code, 2)
        assert code not in (one, many)
        assert one != many

    def test_a_coverage_violation_is_not_called_a_fabrication(self, tmp_path):
        """A row below --min-sentence-coverage, every marker in range: its words say so."""
        runs = write_rows(
            tmp_path / "runs.jsonl",
            [{"answer": "Fees rise in May [1]. Fees fall in June.", "sources": TWO}],
        )
        done = cli("check", runs, "--out", tmp_path / "out", "--min-sentence-coverage", "1")
        headline = done.stdout.splitlines()[1]
        assert (
            "0 of 1 row cite only sources they were given; 1 has a violation (1 cites fewer of "
            "its sentences than the minimum); 0 could not be checked; 0 lines unreadable"
        ) == headline
        assert "not given" not in headline

    def test_the_headline_counts_are_the_keys(self):
        """The sentence reads the renamed key: the words and the keys say the same thing."""
        summary = CheckSummary(
            rows=3,
            passed=0,
            failed=0,
            unassessed=3,
            headline=CitationHeadline(rows=3, cite_only_given_sources=3),
        )
        assert headline_text(summary).startswith("3 of 3 rows cite only sources they were given")


class TestKeys:
    def test_report_json_and_json_output_use_the_new_key(self, demo, tmp_path):
        """report.json is schema 2 with cite_only_given_sources; --json's check is the same."""
        _, out = demo
        report = json.loads((out / "report.json").read_text(encoding="utf-8"))
        assert 2 == report["schema_version"]
        headline = report["check"]["headline"]
        assert 13 == headline["cite_only_given_sources"]
        assert "cite_correctly" not in headline
        done = cli("check", "examples/data/example-runs.jsonl", "--out", tmp_path, "--json")
        assert headline == json.loads(done.stdout)["check"]["headline"]

    def test_a_schema_1_report_reads_its_old_key_under_the_new_name(self):
        """An old report's cite_correctly (the same count) reads as cite_only_given_sources."""
        old = {
            "schema_version": 1,
            "input_sha256": "0" * 64,
            "check": {
                "rows": 2,
                "passed": 0,
                "failed": 0,
                "unassessed": 2,
                "headline": {"rows": 2, "cite_correctly": 2},
                "groups": {"x": {"rows": 2, "cite_correctly": 2}},
            },
        }
        check = EvalReport.model_validate(old).check
        assert check is not None
        assert (1, 2, 2) == (
            EvalReport.model_validate(old).schema_version,
            check.headline.cite_only_given_sources,
            check.groups["x"].cite_only_given_sources,
        )


class TestPage:
    def test_without_a_judge_no_judge_era_tile_and_the_filters_are_the_headline(self, demo):
        """No passed/failed/un-assessed tile; the filters count 3 violations, 0, 13."""
        _, out = demo
        cards = page_cards(out)
        assert "cite only sources they were given" == cards["given"]
        assert not {"failed", "unassessed", "passed"} & set(cards)
        data = page_data(out)
        assert {"failed": 3, "unassessed": 0, "passed": 13} == data["totals"][""]
        assert "violation" == data["names"]["failed"]
        assert "cites only sources it was given" == data["names"]["passed"]
        # Each row sits under its headline category: the 3 violations, the 13 others.
        places = [data["rows"][i][2] for i in range(len(data["rows"]))]
        assert (3, 0, 13) == (places.count(0), places.count(1), places.count(2))
        page = (out / "report.html").read_text(encoding="utf-8")
        assert "un-assessed" not in page
        assert "correctly" not in page.split('<script type="application/json"')[0]

    def test_with_a_judge_its_tiles_stand_beside_labelled_advisory(self, tmp_path):
        """A judge ran: its outcomes are tiles too, labelled, and the filters are its outcomes."""
        rows = [
            {"answer": "The late fee is 5% [doc-1].", "context": CONTEXT},
            {"answer": "The late fee is 5% [doc-1].", "context": CONTEXT},
            {"answer": "The late fee is 5% [doc-9].", "context": CONTEXT},
        ]
        runs = write_rows(tmp_path / "runs.jsonl", rows)
        judge = ScriptedChat([passing("doc-1"), reply(0, unsupported(1))])
        out = tmp_path / "out"
        run_check(runs, out, CitationScorer(judge), concurrency=1)
        cards = page_cards(out)
        assert "advisory" in cards["passed"]
        assert {"given", "violations", "failed", "unassessed", "passed"} <= set(cards)
        data = page_data(out)
        assert {"failed": 2, "unassessed": 0, "passed": 1} == data["totals"][""]
        assert "failed" == data["names"]["failed"]


class TestJUnit:
    def test_the_suite_property_is_the_headline_key(self, demo):
        """report.junit.xml's suite carries cite_only_given_sources, not cite_correctly."""
        _, out = demo
        suite = ET.parse(out / "report.junit.xml").getroot().find("testsuite")  # noqa: S314
        assert suite is not None
        facts = {p.get("name"): p.get("value") for p in suite.iter("property")}
        assert "13" == facts["cite_only_given_sources"]
        assert "cite_correctly" not in facts


class TestFailingRows:
    def test_the_first_ten_are_named_and_the_rest_pointed_at(self, tmp_path):
        """12 rows cite [7] of 2 sources: 10 named (line, title, code, marker), 2 pointed at."""
        rows: list[dict[str, object]] = [
            {"question": "Fine?", "answer": "Yes [1].", "sources": TWO}
        ]
        rows += [
            {"question": f"When do fees rise, case {n}?", "answer": "In May [7].", "sources": TWO}
            for n in range(12)
        ]
        runs = write_rows(tmp_path / "runs.jsonl", rows)
        out = tmp_path / "out"
        done = cli("check", runs, "--out", out)
        lines = done.stdout.splitlines()
        at = lines.index("rows with a violation (first 10 of 12):")
        assert [
            f"  line {n + 2}: When do fees rise, case {n}? \u2014 fabricated_citation [7]"
            for n in range(10)
        ] == lines[at + 1 : at + 11]
        assert (
            f"  and 2 more rows: see {out / 'rows.jsonl'} and {out / 'report.html'}"
            == lines[at + 11]
        )
        report = json.loads((out / "report.json").read_text(encoding="utf-8"))
        listed = report["check"]["violating_rows"]
        assert 10 == len(listed)
        assert {"line": 2, "title": "When do fees rise, case 0?", "codes": [
            "fabricated_citation"
        ], "markers": ["7"]} == listed[0]  # fmt: skip

    def test_a_terminal_escape_in_an_id_is_shown_not_obeyed(self, tmp_path):
        """The title is untrusted: its control characters are printed as escapes."""
        runs = write_rows(
            tmp_path / "runs.jsonl",
            [{"id": "q1\x1b[2J", "answer": "In May [7].", "sources": TWO}],
        )
        done = cli("check", runs, "--out", tmp_path / "out")
        assert "  line 1: q1\\x1b[2J \u2014 fabricated_citation [7]" in done.stdout.splitlines()
        assert "\x1b" not in done.stdout


def mixed_rows(zero_based: int, one_based: int) -> list[dict[str, object]]:
    """Rows citing [0] and [1] of two sources (0-based), then rows citing [1] and [2]."""
    return [{"answer": "Fees rise [0]. Fees fall [1].", "sources": TWO}] * zero_based + [
        {"answer": "Fees rise [1]. Fees fall [2].", "sources": TWO}
    ] * one_based


class TestBaseHint:
    def test_a_mixed_file_counts_both_sides_and_keeps_the_base(self, tmp_path):
        """2 of 24 rows count from 0: 2 would come into range, 22 go out; no --index-base 0."""
        runs = write_rows(tmp_path / "runs.jsonl", mixed_rows(2, 22))
        done = cli("check", runs, "--out", tmp_path / "one", "--json")
        check = json.loads(done.stdout)["check"]
        assert (2, 22, 2) == (
            check["possible_zero_based_numbering"],
            check["out_of_range_numbered_from_zero"],
            check["headline"]["violations"],
        )
        printed = cli("check", runs, "--out", tmp_path / "one").stdout
        assert (
            "possible 0-based numbering: 2 rows would be in range numbered from 0; 22 rows "
            "would then be out of range (keep the 1-based numbering)"
        ) in printed.splitlines()
        assert "--index-base 0" not in printed
        # The count is true: numbered from 0, the file has 22 violations, not 2.
        zero = cli("check", runs, "--out", tmp_path / "zero", "--index-base", "0", "--json")
        assert 22 == json.loads(zero.stdout)["check"]["headline"]["violations"]

    def test_a_zero_based_file_is_told_to_try_index_base_0(self, tmp_path):
        """Every row counts from 0: 3 come into range, none go out, so the switch is named."""
        runs = write_rows(tmp_path / "runs.jsonl", mixed_rows(3, 0))
        printed = cli("check", runs, "--out", tmp_path / "one").stdout
        assert (
            "possible 0-based numbering: 3 rows would be in range numbered from 0; 0 rows "
            "would then be out of range (try --index-base 0)"
        ) in printed.splitlines()
        zero = cli("check", runs, "--out", tmp_path / "zero", "--index-base", "0", "--json")
        assert 0 == json.loads(zero.stdout)["check"]["headline"]["violations"]


def ragas_spec(zero_based: int, one_based: int) -> list[dict[str, object]]:
    """Ragas samples: some cite [0] and [1] of two contexts, the rest [1] and [2]."""
    contexts = ["Fees rise in May.", "Fees fall in June."]
    return [
        {
            "user_input": f"Fees, case {n}?",
            "retrieved_contexts": contexts,
            "response": "Fees rise [0]. Fees fall [1]."
            if n < zero_based
            else "Fees rise [1]. Fees fall [2].",
        }
        for n in range(zero_based + one_based)
    ]


def test_a_ragas_file_where_2_of_24_rows_count_from_0(tmp_path_factory):
    """The issue's file, written by Ragas: the hint counts 2 in and 22 out, and keeps base 1."""
    work = tmp_path_factory.mktemp("ragas")
    produce("ragas_dataset", ragas_spec(2, 22), work / "out", work)
    ragas = work / "out" / "ragas.jsonl"
    printed = cli("check", ragas, "--from", "ragas", "--out", work / "one").stdout
    assert (
        "possible 0-based numbering: 2 rows would be in range numbered from 0; 22 rows "
        "would then be out of range (keep the 1-based numbering)"
    ) in printed.splitlines()
    assert "try --index-base 0" not in printed
    zero = cli(
        "check", ragas, "--from", "ragas", "--out", work / "zero", "--index-base", "0", "--json"
    )
    assert 22 == json.loads(zero.stdout)["check"]["headline"]["violations"]


DEEPEVAL_SPEC = [
    {
        "input": "Where do lions live?",
        "actual_output": "In prides [1].",
        "retrieval_context": ["left | right", "Lions live in prides."],
    },
    {
        "input": "What do lions eat?",
        "actual_output": "Meat [1].",
        "retrieval_context": ["Lions eat meat."],
    },
]


@pytest.fixture(scope="module")
def deepeval_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """DeepEval's own JSON and JSONL of `DEEPEVAL_SPEC`, test cases without a name."""
    work = tmp_path_factory.mktemp("deepeval")
    produce("deepeval_dataset", DEEPEVAL_SPEC, work / "out", work)
    return work / "out"


class TestTitles:
    def test_a_deepeval_row_is_titled_by_its_question(self, deepeval_files, tmp_path):
        """No name: the page titles the row by its question, and JUnit names it so."""
        out = tmp_path / "out"
        done = cli(
            "check", deepeval_files / "deepeval.json", "--from", "deepeval", "--out", out,
            "--format", "junit",
        )  # fmt: skip
        assert 0 == done.returncode, done.stderr
        data = page_data(out)
        titles = {row[0]: data["texts"][row[13]] for row in data["rows"]}
        assert {1: "Where do lions live?", 2: "What do lions eat?"} == titles
        suite = ET.parse(out / "report.junit.xml").getroot()  # noqa: S314
        names = [case.get("name") for case in suite.iter("testcase")]
        assert ["line 1: Where do lions live?", "line 2: What do lions eat?"] == names

    def test_a_joined_row_says_to_save_the_dataset_as_json(self, deepeval_files, tmp_path):
        """DeepEval's JSONL joins the contexts: the row is contexts_joined, and says what to do."""
        out = tmp_path / "out"
        done = cli("check", deepeval_files / "deepeval.jsonl", "--from", "deepeval", "--out", out)
        assert 0 == done.returncode, done.stderr
        said = [line for line in done.stdout.splitlines() if line.startswith("contexts_joined: ")]
        assert 1 == len(said)
        assert "save the dataset as JSON" in said[0]
        record = json.loads((out / "rows.jsonl").read_text(encoding="utf-8").splitlines()[0])
        assert "contexts_joined" == record["reason"]
        assert "save the dataset as JSON" in record["explanation"]

    def test_a_trace_row_with_an_opaque_id_is_titled_by_its_question(self, tmp_path):
        """A UUID or a hex trace id is no title: the question is, the id stays beside it."""
        rows = [
            {
                "id": "0f8fad5b-d9cb-469f-a165-70867728950e",
                "question": "When do fees rise?",
                "answer": "In May [7].",
                "sources": TWO,
            },
            {"id": "tr-" + "ab" * 16, "question": "", "answer": "In May [9].", "sources": TWO},
        ]
        out = tmp_path / "out"
        done = cli("check", write_rows(tmp_path / "runs.jsonl", rows), "--out", out)
        assert "  line 1: When do fees rise? \u2014 fabricated_citation [7]" in done.stdout
        assert "  line 2: line 2 \u2014 fabricated_citation [9]" in done.stdout
        data = page_data(out)
        row = next(r for r in data["rows"] if r[0] == 1)
        assert ("0f8fad5b-d9cb-469f-a165-70867728950e", "When do fees rise?") == (
            row[1],
            data["texts"][row[13]],
        )
