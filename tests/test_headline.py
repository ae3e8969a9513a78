"""The headline of a check (issue 23, item 2): what held, decided in code, everywhere.

One rule (`citation_outcome`) puts every row in one of: cites only sources it was
given (an abstention included, counted apart), has a violation, could not be checked
(issue 35 renamed "cites correctly", which claimed more than code checks). It leads
the terminal summary, ``--json``, ``report.json``, and the judge's verdicts are a
separate line, "not asked" without a judge. Output that is not a terminal is never
wrapped, and a count of one is singular.
"""

from __future__ import annotations

import json
import subprocess
import sys
import typing
from pathlib import Path

import pydantic
import pytest
from scorer_helpers import CONTEXT, passing, reply, unsupported

from citemark import CitationScorer, Source
from citemark._judging.assertions import citation_outcome
from citemark._pipelines.check.run import run_check
from citemark.reports import EvalReport
from citemark.testing import CitationAssertionError, ScriptedChat, assert_cited

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_RUNS = ROOT / "examples" / "data" / "example-runs.jsonl"
SOURCES = [Source(text="Fees rise in May.", doc_id="fees")]


def write_rows(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """The real entry point, its standard output a pipe (not a terminal)."""
    return subprocess.run(
        [sys.executable, "-m", "citemark", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def findings_of(answer: str, sources: object = SOURCES) -> object:
    scorer = CitationScorer()
    return scorer.score_sync(answer, sources).findings  # type: ignore[arg-type]


class TestOneRule:
    @pytest.mark.parametrize(
        ("answer", "sources", "expected"),
        [
            ("Fees rise in May [1].", SOURCES, "cited"),
            ("The sources do not say.", SOURCES, "cites_nothing"),
            ("Fees rise in May [4].", SOURCES, "violation"),
            ("Fees rise [doc-1] [DOC-1].", CONTEXT, "unchecked"),
        ],
        ids=["cited", "abstention", "fabricated", "ambiguous"],
    )
    def test_each_row_has_one_outcome(self, answer, sources, expected):
        """A resolved marker cites; nothing cited is an abstention; [4] of 1 violates."""
        assert expected == citation_outcome(findings_of(answer, sources))

    def test_assert_cited_follows_it_and_names_its_own_demand(self):
        """An abstention breaks no citation rule: assert_cited fails it only for min_citations."""
        assert "cites_nothing" == citation_outcome(findings_of("The sources do not say."))
        with pytest.raises(CitationAssertionError) as info:
            assert_cited("The sources do not say.", SOURCES)
        assert str(info.value).endswith(
            "it cites nothing, an abstention (min_citations=0 accepts one)"
        )
        assert_cited("The sources do not say.", SOURCES, min_citations=0)


class TestReportJson:
    def test_the_demo_reads_13_of_16_cite_only_given_sources_3_fabricate(self, tmp_path):
        """The bundled runs' headline: 13 cite only given sources (2 abstain), 3 violations."""
        result = run_check(EXAMPLE_RUNS, tmp_path, CitationScorer())
        saved = EvalReport.model_validate_json(result.report_path.read_bytes()).check
        assert saved is not None
        headline = saved.headline
        assert (16, 13, 2, 3, 0, 0) == (
            headline.rows,
            headline.cite_only_given_sources,
            headline.cite_nothing,
            headline.violations,
            headline.unchecked,
            headline.unreadable_lines,
        )
        assert saved.judge_verdicts is None
        # The judge era's outcomes are still there, under their own names.
        assert (0, 3, 13) == (saved.passed, saved.failed, saved.unassessed)

    def test_every_row_is_counted_once(self, tmp_path):
        """cite_only_given_sources + violations + unchecked is the row count; reasons named."""
        rows = [
            {"answer": "Fees rise [1].", "sources": [s.model_dump() for s in SOURCES]},
            {"answer": "Fees rise [9].", "sources": [s.model_dump() for s in SOURCES]},
            {"answer": "Fees rise.", "sources": [], "unassessed": "no_retrieval_recorded"},
        ]
        path = write_rows(tmp_path / "runs.jsonl", rows)
        headline = run_check(path, tmp_path / "out", CitationScorer()).summary.headline
        assert (3, 1, 1, 1) == (
            headline.rows,
            headline.cite_only_given_sources,
            headline.violations,
            headline.unchecked,
        )
        assert {"no_retrieval_recorded": 1} == headline.unchecked_reasons

    def test_the_judge_is_a_separate_line_of_verdicts(self, tmp_path):
        """With a judge the headline is the same; its verdicts are counted apart."""
        rows = [
            {"answer": "The late fee is 5% [doc-1].", "context": CONTEXT},
            {"answer": "The late fee is 5% [doc-1].", "context": CONTEXT},
            {"answer": "The late fee is 5% [doc-9].", "context": CONTEXT},
        ]
        path = write_rows(tmp_path / "runs.jsonl", rows)
        judge = ScriptedChat([passing("doc-1"), reply(0, unsupported(1))])
        result = run_check(path, tmp_path / "out", CitationScorer(judge), concurrency=1)
        summary = result.summary
        assert (2, 1) == (summary.headline.cite_only_given_sources, summary.headline.violations)
        assert summary.judge_verdicts is not None
        assert (1, 1, 0) == (
            summary.judge_verdicts.faithful,
            summary.judge_verdicts.unfaithful,
            summary.judge_verdicts.unusable,
        )


class TestTerminal:
    # The demo's terminal headline and judge line: tests/test_examples.py, on make demo's
    # own command line.

    def test_json_carries_the_headline(self, tmp_path):
        """--json's check object holds the same headline and a null judge_verdicts."""
        done = cli("check", "examples/data/example-runs.jsonl", "--out", str(tmp_path), "--json")
        check = json.loads(done.stdout)["check"]
        assert 13 == check["headline"]["cite_only_given_sources"]
        assert "cite_correctly" not in check["headline"]
        assert 2 == check["headline"]["cite_nothing"]
        assert check["judge_verdicts"] is None

    def test_piped_output_is_not_wrapped_at_80_columns(self, tmp_path):
        """A long output path stays on one line when standard output is a pipe."""
        out = tmp_path / ("deep-" * 20) / "out"
        done = cli("check", "examples/data/example-runs.jsonl", "--out", str(out))
        wrote = [line for line in done.stdout.splitlines() if line.startswith("wrote ")]
        assert 1 == len(wrote)
        assert wrote[0].endswith(f"{out / 'rows.jsonl'}")
        assert len(wrote[0]) > 80  # the width rich wraps a pipe at

    def test_one_of_a_thing_is_singular(self, tmp_path):
        """One row, one unrecognized token, one row shown: never '1 rows'."""
        rows = [
            {"answer": "Fees rise [1]. See [1-3].", "sources": [s.model_dump() for s in SOURCES]}
        ]
        path = write_rows(tmp_path / "runs.jsonl", rows)
        done = cli("check", str(path), "--out", str(tmp_path / "out"))
        assert 0 == done.returncode, done.stderr
        assert "1 rows" not in done.stdout
        assert f"citemark check: 1 row of {path}" in done.stdout
        assert "1 of 1 row cites only sources it was given" in done.stdout
        assert "(1 row shown)" in done.stdout
        assert "citation-like text that is not a marker: 1 row (" in done.stdout


def _models(model: type[pydantic.BaseModel]) -> typing.Iterator[type[pydantic.BaseModel]]:
    """``model`` and every model its fields hold, through optionals, tuples and dicts."""
    seen: list[type[pydantic.BaseModel]] = []
    todo = [model]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.append(current)
        for field in current.model_fields.values():
            stack = [field.annotation]
            while stack:
                hint = stack.pop()
                if isinstance(hint, type) and issubclass(hint, pydantic.BaseModel):
                    todo.append(hint)
                stack.extend(typing.get_args(hint))
    yield from seen


class TestEveryKeyIsDocumented:
    def test_every_report_json_field_is_in_the_docs(self):
        """Each field of report.json's models, recursively, is named in reports.md or cli.md."""
        docs = "".join(
            (ROOT / "docs" / name).read_text(encoding="utf-8") for name in ("reports.md", "cli.md")
        )
        missing = sorted(
            f"{model.__name__}.{name}"
            for model in _models(EvalReport)
            for name in model.model_fields
            if f"`{name}`" not in docs
        )
        assert [] == missing

    def test_the_walk_finds_the_nested_models(self):
        """The test above reaches the headline, malformed lines, causes and groups."""
        names = {model.__name__ for model in _models(EvalReport)}
        assert {
            "CheckSummary",
            "CitationHeadline",
            "MalformedLine",
            "FailureCause",
            "GroupCounts",
            "VerdictCounts",
            "ModelIdentity",
            "SynthesisReport",
            "ViolatingRow",
        } <= names
