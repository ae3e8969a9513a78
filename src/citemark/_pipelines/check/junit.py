"""``report.junit.xml``: a check as JUnit XML, so CI systems show failed rows as failed tests.

Each input line is one ``<testcase>`` named by the row's title (its readable id, else
``line N:`` and its question cut short, `citemark._pipelines.check.titles.row_title`), in input
order, and its outcome is the deterministic one, the headline's
(`citemark._judging.assertions.citation_outcome`): a row with a violation is a ``<failure>``
(type ``deterministic_violation``); a row that cites only sources it was given passes,
an abstention included; a row whose citations could not be checked is ``<skipped>`` with its reason
code; a malformed line is an ``<error>``. The judge's verdict is advice and never
fails a test case: it is the case's ``judge`` property (``faithful``, ``unfaithful``,
``unusable``, ``not_asked``, or ``recorded`` on a row failed in code, whose outcome
the verdict did not decide), beside its ``citations`` property (the outcome above).
The suite's properties carry the headline's counts. Messages carry the reason codes
and the scorer's explanation, escaped; the explanation is built from structural facts
and the judge's own words, as in ``rows.jsonl``. Row ids and judge text are untrusted
and only ever appear escaped as XML text or attribute values.

The test cases are streamed to a temporary file as rows arrive (memory stays
constant), and the document is assembled at the end, once the counts its
``<testsuite>`` element carries are known.
"""

from __future__ import annotations

import re
import tempfile
from typing import IO, TYPE_CHECKING, Final
from xml.sax.saxutils import escape, quoteattr

from citemark._contract.artifacts import AtomicFile
from citemark._judging.assertions import citation_outcome
from citemark._pipelines.check.titles import has_readable_id, row_title
from citemark._pipelines.readers.citemark_rows import CheckRow

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from citemark._judging.scorer.result import CitationScore
    from citemark._pipelines.check.protocol import CheckedRow, RunFacts, SinkOptions
    from citemark._pipelines.eval_report import MalformedLine

__all__ = ["JUNIT_NAME", "JUnitSink"]

JUNIT_NAME: Final = "report.junit.xml"
_COPY_CHUNK: Final = 1 << 20
# What XML 1.0 cannot hold: C0 controls but tab, newline and return; U+FFFE and U+FFFF.
_FORBIDDEN: Final = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


class JUnitSink:
    """One ``<testcase>`` per input line; failures, skips and errors as CI reads them."""

    name = JUNIT_NAME

    def __init__(self, options: SinkOptions) -> None:
        self._path = options.out_dir / JUNIT_NAME
        self._body: IO[bytes] = tempfile.TemporaryFile(dir=options.out_dir)  # noqa: SIM115 - closed in close
        self._counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}

    def add(self, row: CheckedRow) -> None:
        """Stream the row's test case."""
        item, score = row
        self._counts["tests"] += 1
        name = quoteattr(_clean(_case_name(item)))
        opening = f'<testcase classname="citemark.check" name={name}>'
        if score is None:
            self._counts["errors"] += 1
            reason = _clean(getattr(item, "reason", ""))
            inner = f'<error type="malformed_line" message={quoteattr(reason)}/>'
            self._body.write(f"{opening}{inner}</testcase>\n".encode())
            return
        outcome = citation_outcome(score.findings)
        properties = (
            f'<properties><property name="citations" value="{outcome}"/>'
            f'<property name="judge" value="{_judge_verdict(score)}"/></properties>'
        )
        if outcome == "violation":
            self._counts["failures"] += 1
            codes = ",".join(score.findings.deterministic_failures)
            inner = (
                f'<failure type="deterministic_violation" message={quoteattr(codes)}>'
                f"{escape(_clean(score.explanation))}</failure>"
            )
        elif outcome == "unchecked":
            self._counts["skipped"] += 1
            inner = f"<skipped message={quoteattr(score.reason or 'unchecked')}/>"
        else:
            inner = ""
        self._body.write(f"{opening}{properties}{inner}</testcase>\n".encode())

    def counts(self) -> dict[str, int]:
        """The counts of the test cases so far: ``tests``, ``failures``, ``errors``, ``skipped``."""
        return dict(self._counts)

    def cases(self) -> Iterator[bytes]:
        """The test cases streamed so far, from the first, in blocks (one shard's part)."""
        self._body.seek(0)
        while chunk := self._body.read(_COPY_CHUNK):
            yield chunk

    def take_cases(self, cases: IO[bytes], counts: Mapping[str, int]) -> None:
        """Finish with ``cases`` and their ``counts`` in place of the cases added here.

        The Ray engine's driver adds no row: its workers streamed the test cases, which
        their parts joined into ``cases`` (read from its start). The sink now closes
        ``cases`` and no longer holds its own.
        """
        self._body.close()
        self._body = cases
        self._counts = dict(counts)

    def finish(self, facts: RunFacts) -> str:
        """Assemble the document with its counts; publish it atomically."""
        counts = " ".join(f'{key}="{value}"' for key, value in self._counts.items())
        header = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<testsuites {counts}>\n<testsuite name="citemark check" {counts} '
            f"timestamp={quoteattr(facts.created_at.isoformat())}>\n"
            "<properties>"
            f'<property name="input_sha256" value="{facts.input_sha256}"/>'
            f'<property name="run_id" value={quoteattr(facts.run_id)}/>'
            f'<property name="citemark_version" value={quoteattr(facts.version)}/>'
            + "".join(
                f'<property name="{name}" value="{value}"/>'
                for name, value in _headline_properties(facts)
            )
            + "</properties>\n"
        )
        with AtomicFile(self._path) as out:
            out.write(header.encode())
            for chunk in self.cases():
                out.write(chunk)
            out.write(b"</testsuite>\n</testsuites>\n")
            return out.commit()

    def close(self) -> None:
        """Drop the streamed test cases."""
        self._body.close()


def _case_name(item: CheckRow | MalformedLine) -> str:
    """The test case's name: the row's readable id, else ``line N: question`` cut short."""
    if not isinstance(item, CheckRow):
        return f"line {item.line}"
    opaque = getattr(item, "id_scope", None) == "run"
    title = row_title(item.id, item.question, item.line, opaque=opaque)
    if has_readable_id(item.id, opaque=opaque) or not item.question.strip():
        return title
    return f"line {item.line}: {title}"


def _judge_verdict(score: CitationScore) -> str:
    """The judge's verdict on a row, as the case's ``judge`` property."""
    findings = score.findings
    if not findings.judge_called:
        return "not_asked"
    if findings.violated or not score.assessed:
        # On a row failed in code the judge's band did not decide the outcome.
        return "unusable" if findings.raw_score is None else "recorded"
    return "faithful" if score.passed else "unfaithful"


def _headline_properties(facts: RunFacts) -> list[tuple[str, int | str]]:
    """The suite's headline: rows by citation outcome, unreadable lines, the judge."""
    headline = facts.summary.headline
    return [
        ("cite_only_given_sources", headline.cite_only_given_sources),
        ("cite_nothing", headline.cite_nothing),
        ("violations", headline.violations),
        ("unchecked", headline.unchecked),
        ("unreadable_lines", headline.unreadable_lines),
        ("judge", "not_asked" if facts.summary.judge is None else "advisory"),
    ]


def _clean(text: str) -> str:
    r"""Text XML 1.0 can hold: a lone surrogate shows as ``\ud800``, a forbidden control ``?``."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return _FORBIDDEN.sub("?", text)
