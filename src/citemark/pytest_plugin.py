"""citemark's pytest plugin: the ``citemark_check`` fixture and ``--citemark-report DIR``.

Installed with citemark (a ``pytest11`` entry point), so nothing needs enabling. The
``citemark_check`` fixture is a `CitationChecker` whose ``assert_cited`` is
`citemark.testing.assert_cited` labelled with the test's node id. With
``--citemark-report DIR``, every ``assert_cited`` made during the run (through the
fixture or called directly) is written to ``DIR/assertions.jsonl`` as a
``citemark check`` row, and at the end of the session the check pipeline turns that
file into ``DIR/report.json``, ``DIR/report.html`` and ``DIR/rows.jsonl``, exactly as
``citemark check DIR/assertions.jsonl --out DIR`` would. The report is data: it holds
the answers and sources, which is why it is written only when asked for.

A ``DIR`` that cannot be written (a file, a path under a file, a read-only folder)
does not stop the session: the tests run, nothing is recorded, and the summary says
``ERROR: --citemark-report: ...`` in one line; a session that would have exited 0
exits 4, pytest's usage error, so a missing report is never silent.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final

import pytest

from citemark._judging.assertions import (
    AssertionRecord,
    add_recorder,
    assert_cited,
    remove_recorder,
)
from citemark._pipelines.check.terminal import printable
from citemark._pipelines.eval_report import headline_text, judge_text, unchecked_scope_text

if TYPE_CHECKING:
    from collections.abc import Generator, Sequence

    from pydantic import JsonValue

    from citemark._contract.models import CitedAnswer, Source
    from citemark._pipelines.check.run import CheckResult

__all__ = ["ASSERTIONS_NAME", "CitationChecker", "citemark_check"]

ASSERTIONS_NAME: Final = "assertions.jsonl"
"""The file of recorded assertions, one ``citemark check`` row per line."""

_REPORTER: Final = "citemark-reporter"


class CitationChecker:
    """What the ``citemark_check`` fixture gives a test: ``assert_cited`` with its id."""

    def __init__(self, node_id: str) -> None:
        self.node_id = node_id
        """The test's node id; each assertion is labelled with it."""
        self.count = 0
        """How many assertions this test made through the fixture."""

    def assert_cited(
        self,
        answer: str,
        sources: Sequence[Source],
        *,
        question: str = "",
        min_citations: int = 1,
        min_sentence_coverage: float | None = None,
    ) -> CitedAnswer:
        """`citemark.testing.assert_cited`, labelled ``<node id>#<n>`` in the report."""
        __tracebackhide__ = True
        self.count += 1
        return assert_cited(
            answer,
            sources,
            question=question,
            min_citations=min_citations,
            min_sentence_coverage=min_sentence_coverage,
            label=f"{self.node_id}#{self.count}",
        )


@pytest.fixture
def citemark_check(request: pytest.FixtureRequest) -> CitationChecker:
    """A `CitationChecker` for this test (see `citemark.testing.assert_cited`)."""
    return CitationChecker(request.node.nodeid)


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--citemark-report DIR``."""
    group = parser.getgroup("citemark")
    group.addoption(
        "--citemark-report",
        metavar="DIR",
        default=None,
        help="write a citemark check report (report.json, report.html) of every "
        "assert_cited made in the run to DIR",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Start recording when ``--citemark-report`` is given."""
    out = config.getoption("--citemark-report")
    if out is not None:
        config.pluginmanager.register(_Reporter(Path(out)), _REPORTER)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop recording."""
    reporter = config.pluginmanager.get_plugin(_REPORTER)
    if isinstance(reporter, _Reporter):
        reporter.close()
        config.pluginmanager.unregister(reporter, _REPORTER)


class _Reporter:
    """Write each assertion as a row; run the check pipeline once the session ends."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.path = out / ASSERTIONS_NAME
        self.rows = 0
        self.held = 0
        self.abstentions_failed = 0
        self.current: str | None = None
        self.per_test: dict[str, int] = {}
        self.summary: str | None = None
        self.error: str | None = None
        self._handle: IO[str] | None = None
        try:
            out.mkdir(parents=True, exist_ok=True)
            self._handle = self.path.open("w", encoding="utf-8")
        except OSError as exc:
            self.error = _cannot_write(exc)
            return
        add_recorder(self.record)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        self.current = item.nodeid
        try:
            return (yield)
        finally:
            self.current = None

    def record(self, record: AssertionRecord) -> None:
        if self._handle is None:
            return
        label = record.label
        if label is None:
            base = self.current or "outside-a-test"
            self.per_test[base] = self.per_test.get(base, 0) + 1
            label = f"{base}#{self.per_test[base]}"
        row: dict[str, Any] = {
            "id": label,
            "question": record.question,
            "answer": record.answer,
            "sources": [source.model_dump(mode="json") for source in record.sources],
        }
        try:
            self._handle.write(json.dumps(row, allow_nan=False) + "\n")
            self._handle.flush()
        except OSError as exc:  # e.g. the disk filled during the session
            self.error = _cannot_write(exc)
            self.close()
            return
        self.rows += 1
        self.held += record.passed
        # An abstention breaks no citation rule (the report counts it as citing
        # correctly); it fails assert_cited only because the test asked for a citation.
        self.abstentions_failed += not record.passed and record.outcome == "cites_nothing"

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.close()
        if self.error is None and self.rows:
            try:
                result = _write_report(self.path, self.out, self.rows)
            except OSError as exc:
                self.error = _cannot_write(exc)
            else:
                self.summary = self._summary(result)
        elif self.error is None:
            self.summary = f"no assert_cited was made; nothing written but {self.path}"
        if self.error is not None and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.USAGE_ERROR

    def _summary(self, result: CheckResult) -> str:
        """The assertions' outcome, then the report's own headline and judge line."""
        failed = f"{self.rows - self.held} failed"
        if self.abstentions_failed:
            failed += (
                f" ({self.abstentions_failed} of them "
                f"{'an abstention' if self.abstentions_failed == 1 else 'abstentions'}, "
                "which min_citations=0 accepts)"
            )
        summary = result.summary
        scope = unchecked_scope_text(summary)
        return (
            f"{self.rows} assert_cited recorded: {self.held} held, {failed}\n"
            f"citations: {headline_text(summary)}\n"
            f"{judge_text(summary)}\n"
            + (f"{scope}\n" if scope is not None else "")
            + f"report in {result.html_path}"
        )

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.error is not None:
            terminalreporter.write_sep("-", "citemark")
            terminalreporter.write_line(f"ERROR: {self.error}", red=True)
        elif self.summary is not None:
            terminalreporter.write_sep("-", "citemark")
            for line in self.summary.splitlines():
                terminalreporter.write_line(printable(line))

    def close(self) -> None:
        remove_recorder(self.record)
        if self._handle is not None and not self._handle.closed:
            with contextlib.suppress(OSError):  # a failed flush was reported already
                self._handle.close()


def _cannot_write(error: OSError) -> str:
    """The one line for a report folder that cannot be written: the option and why."""
    why = error.strerror or type(error).__name__
    return (
        f"--citemark-report: cannot write the report to that folder ({why}); no report is written"
    )


def _write_report(rows: Path, out: Path, count: int) -> CheckResult:
    """The one call into the check pipeline: ``rows`` in, ``report.json`` and ``report.html`` out.

    The same function as ``citemark check``, with the deterministic scorer (no judge:
    a test run reports what code decided). Its headline counts the rows exactly as
    ``citemark check`` does (`citemark._judging.assertions.citation_outcome`): an abstention
    cites only the sources it was given (none), named apart; the judge's line says
    ``not asked``, and the next one what was therefore not checked.
    """
    from citemark._judging.scorer.scorer import CitationScorer  # noqa: PLC0415
    from citemark._pipelines.check.run import run_check  # noqa: PLC0415 - only when a report is asked for

    config: dict[str, JsonValue] = {"source": "pytest", "assertions": count}
    return run_check(rows, out, CitationScorer(), config=config)
