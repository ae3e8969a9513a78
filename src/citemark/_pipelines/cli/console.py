"""What the command line shows people: rich tables on standard output, a progress bar on error.

Machines get ``--json`` instead (see ``citemark._pipelines.cli.main``). Tables are
built from counts,
outcomes, identities and paths; untrusted text here is file names (the input's, the
outputs'), group names, and the judge's names (a replay takes them from a recorded
report). Data cells are `rich.text.Text`, never markup, so a bracket in a value is
printed as it is, and every control character is escaped
(`citemark._pipelines.check.terminal.printable`), so a terminal escape is shown, never obeyed.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Final

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from citemark._contract.reasons import REASONS
from citemark._pipelines.check.terminal import printable
from citemark._pipelines.eval_report import (
    cause_outcome_word,
    counted,
    headline_text,
    judge_text,
    unchecked_scope_text,
    violation_words,
    zero_based_text,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from citemark._judging.calibration.run import CalibrationReport, ThresholdCheck
    from citemark._judging.calibration.support import SupportCalibration, SupportMeasurement
    from citemark._judging.echo.run import EchoReport
    from citemark._pipelines.check.run import CheckResult
    from citemark._pipelines.eval_report import CheckSummary

__all__ = ["CheckProgress", "output_console", "print_calibration", "print_check", "print_echo"]

# How many malformed lines are named on standard error; the rest are counted.
_WARNED_LINES: Final = 20
# How many failure causes the summary names; report.json and report.html list all.
_CAUSES_SHOWN: Final = 5
# The width lines are laid out to when standard output is not a terminal: no wrapping.
_PIPE_WIDTH: Final = 100_000


class _RowRate(ProgressColumn):
    """Rows per second, from rich's own moving estimate."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("-- rows/s" if speed is None else f"{speed:.1f} rows/s")


class CheckProgress:
    """A progress bar for ``check`` on standard error, or nothing when that is not a terminal.

    The bar counts rows, not bytes: it advances as each row is read and scored (a
    judge call included), with the rate and an estimate of the time left. Used as
    ``with CheckProgress(enabled=...) as update``, where ``update`` is ``None`` or a
    callable of rows done and the expected total. ``--quiet`` and a standard error
    that is not a terminal disable it, so nothing is written there.
    """

    def __init__(self, *, enabled: bool) -> None:
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        if enabled:
            self._bar = Progress(
                TextColumn("checking"),
                BarColumn(),
                TaskProgressColumn(),
                MofNCompleteColumn(),
                TextColumn("rows"),
                _RowRate(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self._task = self._bar.add_task("check", total=None)

    def __enter__(self) -> Callable[[int, int], None] | None:
        bar, task = self._bar, self._task
        if bar is None or task is None:
            return None
        bar.start()

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        return update

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()


def _text(text: str, style: str = "") -> Text:
    """A cell or a line: never markup, every control character escaped (see `printable`).

    Paths, ids, group names and a recorded judge's names are untrusted; escaping the
    whole line costs nothing for citemark's own words, which hold no control character.
    """
    return Text(printable(text), style=style)


def output_console() -> Console:
    """The console for standard output: never markup highlighting, never wrapped when piped.

    On a terminal rich fits lines to its width; into a pipe or a file there is no
    width to fit, and a line cut at 80 columns would break a ``grep``, so lines are
    written whole.
    """
    if sys.stdout.isatty():
        return Console(highlight=False)
    return Console(highlight=False, soft_wrap=True, width=_PIPE_WIDTH)


def print_check(result: CheckResult, runs: Path) -> None:
    """Print the summary of a check: malformed lines on standard error, the headline first."""
    summary = result.summary
    for bad in summary.malformed_lines[:_WARNED_LINES]:
        sys.stderr.write(f"citemark: warning: line {bad.line}: {bad.reason}\n")
    if summary.malformed > _WARNED_LINES:
        more = summary.malformed - _WARNED_LINES
        sys.stderr.write(
            f"citemark: warning: {counted(more, 'more malformed line')} (see rows.jsonl)\n"
        )
    console = output_console()
    console.print(_text(f"citemark check: {counted(summary.rows, 'row')} of {runs}", style="bold"))
    console.print(_text(headline_text(summary), style="bold"))
    console.print(_text(judge_text(summary)))
    scope = unchecked_scope_text(summary)
    if scope is not None:
        console.print(_text(scope))
    console.print(_headline_table(summary))
    for code in summary.headline.unchecked_reasons:
        console.print(_text(f"{code}: {REASONS.get(code, code)}"))
    _print_violating_rows(console, result)
    _print_judge_calls(console, summary)
    citations = ", ".join(f"{count} {kind}" for kind, count in summary.citations.items())
    console.print(_text(f"citation markers: {citations}"))
    if summary.provider_citations:
        outcomes = ", ".join(f"{n} {o}" for o, n in summary.provider_citations.items())
        holding = counted(summary.rows_with_provider_citations, "row")
        console.print(_text(f"provider citations in {holding}: {outcomes}"))
    if summary.rows_with_unrecognized:
        kinds = ", ".join(f"{count} {kind}" for kind, count in summary.unrecognized.items())
        console.print(
            _text(
                "citation-like text that is not a marker: "
                f"{counted(summary.rows_with_unrecognized, 'row')} ({kinds}); "
                "see rows.jsonl 'unrecognized'"
            )
        )
    if summary.rows_with_unverifiable_sources:
        console.print(
            _text(
                "unverifiable sources (no text, or only a URL): "
                f"{counted(summary.rows_with_unverifiable_sources, 'row')}; "
                "their citations are not graded"
            )
        )
    zero_based = zero_based_text(summary)
    if zero_based is not None:
        console.print(_text(f"possible 0-based numbering: {zero_based}"))
    _print_causes(console, summary)
    _print_groups(console, summary)
    console.print(
        _text(
            f"wrote {result.report_path}, {result.html_path} "
            f"({counted(result.shown, 'row')} shown) and {result.rows_path}"
        )
    )


def _headline_table(summary: CheckSummary) -> Table:
    """The headline's counts, one line each, with the violation codes and reasons under them."""
    headline = summary.headline
    table = Table()
    table.add_column("citations")
    table.add_column("rows", justify="right")
    table.add_row(
        _text("cite only sources they were given", style="green"),
        str(headline.cite_only_given_sources),
    )
    table.add_row("  of which cite nothing", str(headline.cite_nothing))
    table.add_row(_text("violation", style="red"), str(headline.violations))
    for code, count in summary.violations.items():
        table.add_row(_text(f"  {violation_words(code, count)} ({code})"), str(count))
    table.add_row(_text("could not be checked", style="yellow"), str(headline.unchecked))
    for code, count in headline.unchecked_reasons.items():
        table.add_row(_text(f"  {code}"), str(count))
    table.add_row("unreadable lines", str(headline.unreadable_lines))
    return table


def _print_violating_rows(console: Console, result: CheckResult) -> None:
    """The first rows with a violation, one line each, and where the rest are.

    Each line: the row's line, its title (a readable id or its question cut short,
    escaped), the violation codes and the offending markers.
    """
    summary = result.summary
    listed = summary.violating_rows
    if not listed:
        return
    total = summary.headline.violations
    first = f" (first {len(listed)} of {total})" if len(listed) < total else ""
    console.print(_text(f"rows with a violation{first}:"))
    for row in listed:
        markers = " ".join(f"[{m}]" for m in row.markers)
        console.print(
            _text(
                f"  line {row.line}: {row.title} \u2014 {', '.join(row.codes)}"
                + (f" {markers}" if markers else "")
            )
        )
    more = summary.headline.violations - len(listed)
    where = f"{result.rows_path} and {result.html_path}"
    if more > 0:
        console.print(_text(f"  and {counted(more, 'more row')}: see {where}"))
    else:
        console.print(_text(f"  every row with a violation is listed; details in {where}"))


def _print_causes(console: Console, summary: CheckSummary) -> None:
    """The top failure causes, identical failures collapsed, with their counts."""
    if not summary.failure_causes:
        return
    shown = summary.failure_causes[:_CAUSES_SHOWN]
    judged = summary.judge is not None
    causes = ", ".join(
        f"{c.rows} {cause_outcome_word(c.outcome, judged=judged)} {c.cause}" for c in shown
    )
    more = len(summary.failure_causes) - len(shown)
    console.print(_text(f"top failure causes: {causes}" + (f" (+{more} more)" if more else "")))


def _print_groups(console: Console, summary: CheckSummary) -> None:
    """Every count broken down by the ``--group-by`` field, one row per group."""
    if summary.group_by is None:
        return
    # Group names are the rows' own values, made printable and cut short by the
    # check; Text keeps a bracket in one from being read as markup.
    table = Table(title=_text(f"by {summary.group_by}"))
    judged = summary.judge is not None
    columns = ["group", "rows", "cite only given sources", "violations", "could not be checked"]
    if judged:
        columns += ["passed", "failed", "un-assessed"]
    for number, column in enumerate(columns):
        table.add_column(column, justify="left" if number == 0 else "right")
    for name, group in summary.groups.items():
        counts = [group.cite_only_given_sources, group.deterministic_failures, group.unchecked]
        if judged:
            counts += [group.passed, group.failed, group.unassessed]
        table.add_row(_text(name), str(group.rows), *(str(n) for n in counts))
    console.print(table)


def _print_judge_calls(console: Console, summary: CheckSummary) -> None:
    """The judge's calls: made, saved, failed per reason code, truncated."""
    if summary.judge is None:
        return
    parts = [f"{summary.judge_calls} made"]
    if summary.judge_calls_saved:
        parts.append(f"{summary.judge_calls_saved} saved on rows already failed in code")
    if summary.judge_failures:
        failed = ", ".join(f"{count} {code}" for code, count in summary.judge_failures.items())
        parts.append(f"failed: {failed}")
    if summary.judge_provider_codes:
        codes = ", ".join(f"{count} {code}" for code, count in summary.judge_provider_codes.items())
        parts.append(f"provider codes: {codes}")
    if summary.judge_replies_truncated:
        parts.append(f"{summary.judge_replies_truncated} replies cut off at the token limit")
    console.print(_text(f"judge calls: {'; '.join(parts)}"))


def print_echo(report: EchoReport, path: Path) -> None:
    """Print one line per echo case, the outcome counts, and a warning for any leak."""
    console = output_console()
    console.print(_text(f"echo check: {len(report.cases)} cases", style="bold"))
    table = Table()
    for column in ("case", "outcome", "positive source", "citations", "leaked in"):
        table.add_column(column)
    for case in report.cases:
        cited = ", ".join(
            f"[{c.marker}] {c.document or 'neither'} {c.verification}" for c in case.citations
        )
        table.add_row(
            str(case.case),
            _text(case.outcome, style="green" if case.outcome == "pass" else "red"),
            _text(f"[{case.positive_source}]"),
            _text(cited or "-"),
            _text(", ".join(case.leaked_in) or "-"),
        )
    console.print(table)
    counts = ", ".join(f"{count} {outcome}" for outcome, count in report.counts.items() if count)
    console.print(_text(f"outcomes: {counts}; report: {path}"))
    if report.failure_reasons:
        reasons = ", ".join(f"{count} {code}" for code, count in report.failure_reasons.items())
        console.print(_text(f"failure reasons: {reasons}"))
    leaks = report.counts["leak"]
    if leaks:
        sys.stderr.write(
            f"citemark: warning: {leaks} of {len(report.cases)} echo cases leaked a marker "
            "the model was never given\n"
        )


def print_calibration(report: CalibrationReport, measurement: Path | None) -> None:
    """Print each registered minimum against what was measured, and whether all were met."""
    console = output_console()
    _print_checks(console, report.checks)
    judge, disagreements = report.judge, report.agreement.disagreements
    console.print(
        _text(
            f"judge: {judge.provider} {judge.model} (prompt {judge.prompt_sha256[:12]}); "
            f"items: {report.items}, unusable: {len(report.unusable)}; disagreements: "
            f"{len(disagreements.faithful)} labelled faithful, "
            f"{len(disagreements.unfaithful)} labelled unfaithful"
        )
    )
    verdict = "met" if report.threshold_met else "not met"
    console.print(_text(f"threshold {verdict} (a report, not a gate); measurement: {measurement}"))


def print_support_measurement(measured: SupportMeasurement) -> None:
    """Print a verifier's agreement with human claim labels, per class, with its identity."""
    console = output_console()
    agreement, read = measured.agreement, measured.counts
    console.print(
        _text(
            f"support verifier, advisory: {measured.verifier.label()} on {measured.labels} "
            f"(mapping {measured.mapping})",
            style="bold",
        )
    )
    left_out = read.claims - read.entailed - read.not_entailed
    console.print(
        _text(
            f"claims: {read.claims} read, {read.entailed} labelled entailed, "
            f"{read.not_entailed} not, {left_out} left out by the mapping or for want of "
            f"evidence text; {measured.unjudged} unjudged by the verifier"
        )
    )
    table = Table()
    for column in ("class", "precision", "recall"):
        table.add_column(column)
    for name, figures in (("entailed", agreement.faithful), ("not entailed", agreement.unfaithful)):
        table.add_row(name, _figure(figures.precision), _figure(figures.recall))
    console.print(table)
    console.print(
        _text(
            f"agreement {_figure(agreement.agreement_rate)}, Cohen's kappa "
            f"{_figure(agreement.kappa)} over {agreement.items} claims (a report, not a gate)"
        )
    )


def print_support_calibration(calibration: SupportCalibration) -> None:
    """Print a support measurement's registered minimums, met or not, and where it went."""
    console = output_console()
    _print_checks(console, calibration.checks)
    verdict = "met" if calibration.threshold_met else "not met"
    console.print(
        _text(
            f"threshold {verdict} (a report, not a gate) for verifier "
            f"{calibration.measurement.verifier.label()}; measurement: {calibration.path}"
        )
    )


def _print_checks(console: Console, checks: Sequence[ThresholdCheck]) -> None:
    console.print(_text("calibration: registered minimums against the measurement", style="bold"))
    table = Table()
    for column in ("metric", "minimum", "observed", "met"):
        table.add_column(column)
    for check in checks:
        observed = "undefined" if check.observed is None else f"{check.observed:.3f}"
        met = _text("yes", style="green") if check.met else _text("no", style="red")
        table.add_row(check.metric, f"{check.minimum:g}", observed, met)
    console.print(table)


def _figure(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"
