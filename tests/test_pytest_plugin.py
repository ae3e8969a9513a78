"""assert_cited and the pytest plugin, run through pytest's own pytester."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from citemark import Source
from citemark.testing import CitationAssertionError, assert_cited

pytest_plugins = ["pytester"]

SOURCES = [
    Source(text="Fees rise in May.", doc_id="fees"),
    Source(text="Members pay nothing.", doc_id="members"),
]

USER_TESTS = """
import pytest
from citemark import Source
from citemark.testing import assert_cited

SOURCES = [Source(text="Fees rise in May.", doc_id="fees"), Source(text="Members pay nothing.", doc_id="members")]

def test_good(citemark_check):
    citemark_check.assert_cited("Fees rise in May [1].", SOURCES, question="When?")

def test_fabricated(citemark_check):
    citemark_check.assert_cited("Fees rise [1]; members pay [5].", SOURCES)

def test_direct_call_is_recorded_too():
    assert_cited("Members pay nothing [2].", SOURCES)
    assert_cited("Fees rise [1].", SOURCES)
"""


class TestAssertCited:
    def test_a_valid_answer_returns_its_citations(self):
        """An answer citing only given sources passes and returns the resolved answer."""
        answer = assert_cited("Fees rise [1]; members pay nothing [2].", SOURCES)
        assert ["fees", "members"] == [c.doc_id for c in answer.citations]

    def test_a_fabricated_marker_fails_with_structural_facts(self):
        """[5] of 2 fails; the message names the marker and the counts, and the facts are attributes."""
        with pytest.raises(CitationAssertionError) as info:
            assert_cited("Fees rise [1]; members pay [5] [7] [5].", SOURCES)
        assert (
            "assert_cited: markers [5], [7] are outside 1..2 (the answer was given 2 sources); "
            "2 of 3 distinct markers name no source"
        ) == str(info.value)
        facts = info.value
        assert ((5, 7), 2, 1) == (facts.out_of_range, facts.source_count, facts.cited)
        assert isinstance(info.value, AssertionError)

    def test_an_uncited_answer_fails_unless_abstention_is_accepted(self):
        """No citation fails by default; min_citations=0 accepts an abstention."""
        with pytest.raises(CitationAssertionError, match="cites 0 of 2 sources; at least 1"):
            assert_cited("The sources do not say.", SOURCES)
        assert () == assert_cited("The sources do not say.", SOURCES, min_citations=0).citations

    def test_min_citations_counts_distinct_sources(self):
        """Citing [1] twice is one source."""
        with pytest.raises(CitationAssertionError, match="cites 1 of 2 sources; at least 2"):
            assert_cited("Fees rise [1]. Again [1].", SOURCES, min_citations=2)

    def test_sentence_coverage_minimum(self):
        """Too few cited sentences fail with the counts and the share asked for."""
        with pytest.raises(CitationAssertionError) as info:
            assert_cited(
                "Fees rise [1]. Members pay. Nobody knows.", SOURCES, min_sentence_coverage=0.5
            )
        assert (
            "assert_cited: 1 of 3 sentences carry a citation, below the minimum share of 50%"
            == str(info.value)
        )

    def test_markers_with_no_sources_fail(self):
        """Any marker with an empty source list names nothing."""
        with pytest.raises(CitationAssertionError, match=r"marker \[1\] is cited, but no sources"):
            assert_cited("Fees rise [1].", [], min_citations=0)

    def test_code_is_not_a_citation(self):
        """A bracketed number in inline code is not a marker."""
        assert_cited("Fees rise [1]; see `row[9]`.", SOURCES)

    def test_works_inside_a_running_event_loop(self):
        """assert_cited is usable in an async test: it never calls asyncio.run."""

        async def check():
            return assert_cited("Fees rise [1].", SOURCES)

        assert 1 == len(asyncio.run(check()).citations)

    def test_bad_arguments_are_refused(self):
        """Wrong types and options raise TypeError or ValueError, not an assertion failure."""
        with pytest.raises(TypeError):
            assert_cited("x [1]", "a context string")  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            assert_cited("x [1]", [{"text": "a"}])  # type: ignore[list-item]
        with pytest.raises(ValueError, match="min_citations"):
            assert_cited("x [1]", SOURCES, min_citations=-1)

    def test_a_naive_substring_check_misses_what_assert_cited_catches(self):
        """A check that only looks for '[n]' with n <= N passes '[1]' inside '[12]'; assert_cited does not."""

        def naive(answer, sources):
            assert any(f"[{n}]" in answer for n in range(1, len(sources) + 1))

        answer = "Fees rise [1] and fall [12]."
        naive(answer, SOURCES)  # the naive variant lets the fabricated [12] through
        with pytest.raises(CitationAssertionError, match=r"marker \[12\]"):
            assert_cited(answer, SOURCES)


class TestPlugin:
    def test_fixture_failure_message_is_structural(self, pytester):
        """A failing assertion fails the test, printing markers and counts, never the answer."""
        pytester.makepyfile(USER_TESTS)
        result = pytester.runpytest("-p", "no:cacheprovider")
        result.assert_outcomes(passed=2, failed=1)
        result.stdout.fnmatch_lines(
            ["*CitationAssertionError: assert_cited: marker [[]5[]] is outside 1..2*"]
        )
        assert "members pay [5]" not in result.stdout.str().split("short test summary")[-1]

    def test_report_option_writes_the_check_report(self, pytester, tmp_path):
        """--citemark-report DIR writes assertions.jsonl, rows.jsonl, report.json and report.html."""
        pytester.makepyfile(USER_TESTS)
        out = tmp_path / "report"
        result = pytester.runpytest("-p", "no:cacheprovider", "--citemark-report", str(out))
        result.assert_outcomes(passed=2, failed=1)
        assert ["assertions.jsonl", "report.html", "report.json", "rows.jsonl"] == sorted(
            p.name for p in out.iterdir()
        )
        report = json.loads((out / "report.json").read_text(encoding="utf-8"))
        assert (4, 1) == (report["check"]["rows"], report["check"]["failed"])
        assert report["check"]["deterministic_failures"] == 1
        assert {"source": "pytest", "assertions": 4} == report["config"]
        ids = [json.loads(line)["id"] for line in (out / "rows.jsonl").read_text().splitlines()]
        assert [
            "test_report_option_writes_the_check_report.py::test_good#1",
            "test_report_option_writes_the_check_report.py::test_fabricated#1",
            "test_report_option_writes_the_check_report.py::test_direct_call_is_recorded_too#1",
            "test_report_option_writes_the_check_report.py::test_direct_call_is_recorded_too#2",
        ] == ids
        result.stdout.fnmatch_lines(
            [
                "4 assert_cited recorded: 3 held, 1 failed",
                (
                    "citations: 3 of 4 rows cite only sources they were given; 1 has a "
                    "violation (1 cites a source it was not given); 0 could not be checked; "
                    "0 lines unreadable"
                ),
                "judge: not asked (deterministic findings only)",
                "not checked without a judge: whether a cited source supports its sentence",
                "report in*report.html",
            ]
        )

    def test_an_abstention_follows_the_same_rule_in_the_summary_and_the_report(
        self, pytester, tmp_path
    ):
        """The abstention fails assert_cited (min_citations=1) and says why; the report and
        the summary count it, by the same rule as citemark check, as citing nothing."""
        pytester.makepyfile(
            """
from citemark import Source
from citemark.testing import assert_cited

SOURCES = [Source(text="Fees rise in May.", doc_id="fees")]

def test_abstains():
    assert_cited("The sources do not say.", SOURCES)

def test_abstention_accepted():
    assert_cited("The sources do not say.", SOURCES, min_citations=0)
"""
        )
        out = tmp_path / "report"
        result = pytester.runpytest("-p", "no:cacheprovider", "--citemark-report", str(out))
        result.assert_outcomes(passed=1, failed=1)
        result.stdout.fnmatch_lines(
            [
                "*it cites nothing, an abstention (min_citations=0 accepts one)*",
                (
                    "2 assert_cited recorded: 1 held, 1 failed "
                    "(1 of them an abstention, which min_citations=0 accepts)"
                ),
                (
                    "citations: 2 of 2 rows cite only sources they were given (2 cite nothing); "
                    "0 have a violation;*"
                ),
            ]
        )
        check = json.loads((out / "report.json").read_text(encoding="utf-8"))["check"]
        assert (2, 2, 0) == (
            check["headline"]["cite_only_given_sources"],
            check["headline"]["cite_nothing"],
            check["headline"]["violations"],
        )
        page = (out / "report.html").read_text(encoding="utf-8")
        assert "--fail-on-violation" not in page

    def test_the_report_equals_citemark_check_on_the_same_rows(self, pytester, tmp_path):
        """The plugin's report.json is the check command's on assertions.jsonl, up to timestamps."""
        from citemark._judging.scorer.scorer import CitationScorer
        from citemark._pipelines.check.run import run_check

        pytester.makepyfile(USER_TESTS)
        out = tmp_path / "plugin"
        pytester.runpytest("-p", "no:cacheprovider", "--citemark-report", str(out))
        again = run_check(
            out / "assertions.jsonl",
            tmp_path / "check",
            CitationScorer(),
            config={"source": "pytest", "assertions": 4},
        )
        plugin = json.loads((out / "report.json").read_text(encoding="utf-8"))
        direct = json.loads(again.report_path.read_text(encoding="utf-8"))
        assert plugin["run_id"] != direct["run_id"]
        for report in (plugin, direct):
            report.pop("created_at")
            report.pop("run_id")  # each run has its own, which every file names
            report["check"].pop("files")
        assert direct == plugin

    def test_no_option_writes_nothing(self, pytester):
        """Without --citemark-report the plugin records nothing and writes no file."""
        pytester.makepyfile(USER_TESTS)
        result = pytester.runpytest("-p", "no:cacheprovider")
        result.assert_outcomes(passed=2, failed=1)
        assert ["test_no_option_writes_nothing.py"] == sorted(
            p.name for p in pytester.path.iterdir() if not p.name.startswith(".")
        )

    def test_a_run_without_assertions_says_so(self, pytester, tmp_path):
        """A run with the option and no assert_cited writes no report and says why."""
        pytester.makepyfile("def test_nothing():\n    pass\n")
        out = tmp_path / "empty"
        result = pytester.runpytest("-p", "no:cacheprovider", "--citemark-report", str(out))
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(["*no assert_cited was made*"])
        assert ["assertions.jsonl"] == sorted(p.name for p in out.iterdir())

    def test_the_plugin_is_registered_by_entry_point(self, pytester):
        """pytest finds the plugin through citemark's pytest11 entry point."""
        result = pytester.runpytest("--trace-config", "-p", "no:cacheprovider")
        result.stdout.fnmatch_lines(["*citemark*pytest_plugin*"])


class TestUnwritableReportFolder:
    """Issue 26, item 5: a --citemark-report that cannot be written is a usage error, not a crash."""

    @pytest.mark.parametrize("where", ["a-file", "under-a-file", "read-only"])
    def test_the_tests_run_and_the_option_is_named(self, pytester, tmp_path, where):
        """The session runs every test, then reports the option in one line."""
        a_file = tmp_path / "a-file.txt"
        a_file.write_text("not a folder", encoding="utf-8")
        out = {
            "a-file": a_file,
            "under-a-file": a_file / "report",
            # Read-only even for root (the suite runs as root in CI, where a chmod would
            # not stop it): sysfs refuses a new folder to everyone.
            "read-only": Path("/sys") / "citemark-report",
        }[where]
        pytester.makepyfile(USER_TESTS)
        result = pytester.runpytest("-p", "no:cacheprovider", "--citemark-report", str(out))
        assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
        result.assert_outcomes(passed=2, failed=1)
        assert pytest.ExitCode.TESTS_FAILED == result.ret
        result.stdout.fnmatch_lines(
            ["*ERROR: --citemark-report: cannot write the report to that folder (*); no report*"]
        )
        assert "not a folder" == a_file.read_text(encoding="utf-8")

    def test_an_unwritable_folder_with_passing_tests_exits_as_a_usage_error(
        self, pytester, tmp_path
    ):
        """Tests that pass cannot hide the missing report: the exit status is 4."""
        pytester.makepyfile(
            "from citemark import Source\nfrom citemark.testing import "
            "assert_cited\n\ndef test_ok():\n    assert_cited('Fees [1].', "
            "[Source(text='Fees.', doc_id='f')])\n"
        )
        a_file = tmp_path / "a-file.txt"
        a_file.write_text("x", encoding="utf-8")
        result = pytester.runpytest("-p", "no:cacheprovider", "--citemark-report", str(a_file))
        result.assert_outcomes(passed=1)
        assert pytest.ExitCode.USAGE_ERROR == result.ret
        assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
