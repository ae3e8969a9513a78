"""``citemark check``: score recorded pipeline outputs from a JSONL file, in constant memory.

The input is read one line at a time, never whole: each line's bytes go into the
SHA-256 of the input as they are read, the line is parsed, and rows are scored in
bounded chunks by `citemark.CitationScorer.score_many`. What is kept between chunks
does not grow with the input: the counts, the first malformed lines, and at most
``html_rows`` rendered rows for the page (failed rows first, then un-assessed rows
with a reason other than ``no_judge``, then the rest, each in input order). Every
row's full result is streamed to ``rows.jsonl`` as it is scored.

Lines are read as rows by ``citemark._pipelines.readers.citemark_rows.parse_row``.
A line that is not a row is
*malformed*: it is recorded with its line number and a structural reason (never its
text or its keys, which are untrusted), and the other rows are still scored.

Nothing is half-written, and the files appear as a set. Each run makes one run id
(a UUID4 in hex) that every file names: ``report.json`` (``run_id``), each
``rows.jsonl`` and ``judge-calls.jsonl`` line, ``report.html`` (a ``<meta>``) and
``report.junit.xml`` (a ``<property>``). Every file is written to a hidden temporary
file in the output folder first (`citemark._contract.artifacts.publishing_together`); only
once all of them, ``report.json`` included, are complete are they renamed into
place, ``report.json`` last, since it records the SHA-256 of the others. A failure
before that leaves no temporary file and no new file. A process killed between two
renames leaves new files beside old ones, which ``check_output_set`` detects.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Final, NamedTuple, TypeAlias

from citemark._contract.artifacts import (
    citemark_version,
    publishing_together,
    remove_on_publish,
    remove_stale_temporaries,
    utc_now,
    write_report_atomically,
)
from citemark._contract.errors import NoRowsError
from citemark._judging.scorer.findings import NO_FINDINGS
from citemark._judging.scorer.result import unassessed, with_findings
from citemark._judging.scorer.scorer import CitationScorer, ScoreRow
from citemark._pipelines.check.formats import FORMATS
from citemark._pipelines.check.judge_calls import (
    JUDGE_CALLS_NAME,
    JudgeCallsSink,
    recording,
    recording_verifier,
)
from citemark._pipelines.check.junit import JUNIT_NAME
from citemark._pipelines.check.names import DEFAULT_HTML_ROWS, HTML_NAME, REPORT_NAME, ROWS_NAME
from citemark._pipelines.check.page import HtmlSink
from citemark._pipelines.check.protocol import (
    CheckedRow,
    CheckSink,
    RunFacts,
    SinkOptions,
    opened,
)
from citemark._pipelines.check.sinks import JsonlSink
from citemark._pipelines.check.support import SupportTally, with_support
from citemark._pipelines.check.tally import Tally
from citemark._pipelines.eval_report import (
    CheckSummary,
    EvalReport,
    MalformedLine,
)
from citemark._pipelines.readers import ReadOptions
from citemark._pipelines.readers._hints import file_hint
from citemark._pipelines.readers.citemark_rows import (
    CheckRow,
    RowOptions,
    parse_recorded,
    parse_row,
)
from citemark._pipelines.readers.provider_rows import (
    with_provider_findings,
)
from citemark._pipelines.readers.structured_rows import with_structured_findings
from citemark._pipelines.scale.parts import remove_dead_parts

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence

    from pydantic import JsonValue

    from citemark._judging.replay.recorder import JudgeCallRecorder
    from citemark._judging.scorer.scorer import CitationScore
    from citemark._judging.verifiers.base import Verifier
    from citemark._pipelines.readers import Reader

    # A step run on each chunk's scores before they are counted (the support verifier's).
    _Augment: TypeAlias = Callable[
        [Sequence[CheckRow], Sequence[CitationScore]], list[CitationScore]
    ]

__all__ = [
    "DEFAULT_HTML_ROWS",
    "HTML_NAME",
    "REPORT_NAME",
    "ROWS_NAME",
    "CheckResult",
    "NoRowsError",
    "finish_outputs",
    "is_violation",
    "row_score",
    "run_check",
]

# Rows are scored in chunks: big enough to keep every judge worker busy most of the
# time, small enough that a chunk's rows and scores are a constant amount of memory.
_MIN_CHUNK: Final = 512
# Block size of the line-counting pass that gives the progress bar its total.
_COUNT_BLOCK: Final = 1 << 20
_CHUNK_PER_WORKER: Final = 16


class CheckResult(NamedTuple):
    """What a check produced: the report and where its files are."""

    report: EvalReport
    """The report, as written to ``report.json``; its ``check`` section is set."""
    report_path: Path
    """``report.json``."""
    html_path: Path
    """``report.html``."""
    rows_path: Path
    """``rows.jsonl``: one result per input line, malformed lines included."""
    shown: int
    """How many rows ``report.html`` shows."""

    @property
    def summary(self) -> CheckSummary:
        """The report's check section."""
        assert self.report.check is not None  # noqa: S101 - run_check always sets it
        return self.report.check

    @property
    def violations(self) -> int:
        """Rows failed on a deterministic finding (see `is_violation`)."""
        return self.summary.deterministic_failures


def is_violation(score: CitationScore) -> bool:
    """Whether a score is a deterministic violation: `CitationScore.is_violation`.

    Kept for callers of the check module; the score owns the definition.
    """
    return score.is_violation


def run_check(  # noqa: PLR0913 - the options of the command, each with a default
    path: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    scorer: CitationScorer,
    *,
    concurrency: int = 32,
    html_rows: int = DEFAULT_HTML_ROWS,
    config: Mapping[str, JsonValue] | None = None,
    progress: Callable[[int, int], None] | None = None,
    formats: Sequence[str] = (),
    group_by: str | None = None,
    row_options: RowOptions | None = None,
    reader: Reader | None = None,
    read_options: ReadOptions | None = None,
    verifier: Verifier | None = None,
) -> CheckResult:
    """Check every row of a JSONL file; write ``rows.jsonl``, ``report.html``, ``report.json``.

    The file is read here, synchronously; each chunk of rows is scored on one
    event loop kept for the whole run (an `asyncio.Runner`), so a judge's HTTP
    connections are reused from chunk to chunk and closed at the end.

    Args:
        path: The input file, one JSON object per line.
        out_dir: The folder the three files are written to (created if missing).
        scorer: The scorer; its judge, if any, is advisory.
        concurrency: How many rows the scorer grades at once.
        html_rows: How many rows ``report.html`` shows at most (0 for none).
        config: The run's configuration, recorded in the report as given.
        progress: Called with rows done and the expected total (the input's line
            count, counted first in one pass of constant memory): once as each row
            is scored, and once per malformed line.
        formats: Optional extra outputs by name (see ``citemark._pipelines.check.formats.FORMATS``),
            e.g. ``("junit",)`` for ``report.junit.xml``.
        group_by: A row field (e.g. ``model``) to break every count down by; see
            ``citemark._pipelines.check.groups``.
        row_options: The numbering base and a structured answer's field pointers
            (default: the scorer's base, ``/answer`` and ``/citations``).
        reader: A reader of another tool's format (``citemark._pipelines.readers``) that turns
            the file into rows; None for citemark's own JSONL. The input's SHA-256 is
            then taken in a first pass over its bytes.
        read_options: What the reader is told (``--index-base``, ``--map``).
        verifier: A support verifier (``--verifier``): each assessed row's citation
            recall and precision go to ``rows.jsonl`` and the run's means to the
            summary, all advisory. The caller closes it.

    Returns:
        The report and the paths of the files.

    Raises:
        NoRowsError: no line of the input is a readable row; nothing is written.
        OSError: the input cannot be read or the output folder cannot be written.
    """
    source = Path(path)
    out = Path(out_dir)
    # With a judge, every call is recorded to judge-calls.jsonl (see judge_calls.py).
    scorer, recorder = recording(scorer)
    if verifier is not None:
        verifier = recording_verifier(verifier, recorder)
    created_at = utc_now()
    run_id = uuid.uuid4().hex
    digest = hashlib.sha256()
    tally = Tally(group_by)
    chunk_size = max(_MIN_CHUNK, concurrency * _CHUNK_PER_WORKER)
    options = row_options or RowOptions(index_base=scorer.index_base)
    support = None if verifier is None else SupportTally(verifier.identity.as_dict())
    with source.open("rb") as handle, asyncio.Runner() as runner, contextlib.ExitStack() as stack:
        augment: _Augment | None = None
        if verifier is not None and support is not None:

            def augment(
                rows: Sequence[CheckRow], scores: Sequence[CitationScore]
            ) -> list[CitationScore]:
                return with_support(
                    rows,
                    scores,
                    verifier=verifier,
                    runner=runner,
                    tally=support,
                    index_base=scorer.index_base,
                )

        total = _count_lines(handle) if progress is not None else 0
        if reader is not None:
            digest = hashlib.file_digest(handle, "sha256")
            handle.seek(0)
        ticker = _Ticker(progress, total)
        sink_options = start_outputs(stack, out, scorer, html_rows, group_by, run_id)
        # Each sink is closed from the moment it exists (see `opened`).
        sinks: list[CheckSink] = [opened(stack, JsonlSink(sink_options))]
        html = opened(stack, HtmlSink(sink_options))
        sinks.append(html)
        sinks.extend(opened(stack, FORMATS[name](sink_options)) for name in formats)
        if recorder is not None:
            calls = JudgeCallsSink(sink_options, recorder.next_row, recorder.take_loose)
            sinks.append(opened(stack, calls))
        chunk: list[CheckRow | MalformedLine] = []
        if reader is None:
            rows = _native_rows(handle, digest, group_by, options)
        else:
            records = reader(handle, read_options or _NO_READ_OPTIONS)
            rows = (parse_recorded(record, group_by, options) for record in records)
        for parsed in rows:
            chunk.append(parsed)
            if len(chunk) >= chunk_size:
                _score_chunk(
                    chunk, scorer, runner, concurrency, tally, sinks, ticker, recorder, augment
                )
                chunk = []
        _score_chunk(chunk, scorer, runner, concurrency, tally, sinks, ticker, recorder, augment)
        ticker.finish()
        summary = tally.summary(scorer)
        if support is not None:
            summary = summary.model_copy(update={"support": support.summary()})
        input_sha256 = digest.hexdigest()
        facts = RunFacts(
            summary, os.fspath(path), input_sha256, created_at, citemark_version(), run_id
        )
        report, report_path = finish_outputs(out, sinks, facts, config)
    return CheckResult(report, report_path, out / HTML_NAME, out / ROWS_NAME, html.count)


def _native_rows(
    handle: BinaryIO, digest: hashlib._Hash, group_by: str | None, options: RowOptions
) -> Iterator[CheckRow | MalformedLine]:
    """The rows of citemark's own JSONL, each line's bytes hashed as it is read.

    When the first line is not a row, the file's content says which ``--from`` reads
    it (`file_hint`), and that line's reason says so.
    """
    hinted = False  # the file is looked at once, at most: at its first line
    for number, raw in enumerate(handle, start=1):
        digest.update(raw)
        parsed = parse_row(number, raw, group_by, options)
        if parsed is None:
            continue
        if not hinted and isinstance(parsed, MalformedLine) and handle.seekable():
            hint = file_hint(handle)
            if hint is not None:
                parsed = parse_row(number, raw, group_by, options, file_hint=hint) or parsed
        hinted = True
        yield parsed


def start_outputs(  # noqa: PLR0913, PLR0917 - what every sink is built from
    stack: contextlib.ExitStack,
    out: Path,
    scorer: CitationScorer,
    html_rows: int,
    group_by: str | None,
    run_id: str,
) -> SinkOptions:
    """Open the output folder for a run and say what its sinks are built from.

    What an earlier, killed run left half-written is removed before this run opens
    its own temporary files (each AtomicFile also does so for its own name; this
    covers the formats this run does not write), and so is the parts folder of a
    killed Ray run (one whose lock no live run holds). Then `publishing_together` is
    entered on ``stack``, first so that it is left last: every file of the run is
    published when its sinks are closed and ``report.json`` is sealed, or none is.
    Both engines start a run here and end it with `finish_outputs`.
    """
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(out, _OUTPUT_NAMES)
    remove_dead_parts(out)  # a killed Ray run's parts folder, whichever engine runs now
    stack.enter_context(publishing_together())
    return SinkOptions(
        out, html_rows, scorer.label_pattern, scorer.citation_pattern, group_by, run_id=run_id
    )


def finish_outputs(
    out: Path,
    sinks: Sequence[CheckSink],
    facts: RunFacts,
    config: Mapping[str, JsonValue] | None,
) -> tuple[EvalReport, Path]:
    """Seal every sink's file, then ``report.json``, which names them all.

    Inside `publishing_together` the renames wait for the end of the block, in this
    order, so ``report.json`` appears last; first, the block removes what another
    run left under a name this run does not write. Both engines end a run here.
    """
    files = {sink.name: sink.finish(facts) for sink in sinks}
    # The run owns every name a run can write: another run's extra files go with it.
    remove_on_publish(out / n for n in _OUTPUT_NAMES if n != REPORT_NAME and n not in files)
    report = EvalReport(
        created_at=facts.created_at,
        config=dict(config or {}),
        input_sha256=facts.input_sha256,
        check=facts.summary.model_copy(update={"files": files}),
        run_id=facts.run_id,
    )
    return report, write_report_atomically(out / REPORT_NAME, report)


# Every file a run may write, so a later run can remove what a killed one left.
# A new sink adds its file's name here.
_OUTPUT_NAMES: Final = (REPORT_NAME, ROWS_NAME, HTML_NAME, JUNIT_NAME, JUDGE_CALLS_NAME)
_NO_READ_OPTIONS: Final = ReadOptions()


def _score_chunk(  # noqa: PLR0913, PLR0917 - the run's shared state, passed explicitly
    chunk: Sequence[CheckRow | MalformedLine],
    scorer: CitationScorer,
    runner: asyncio.Runner,
    concurrency: int,
    tally: Tally,
    sinks: Sequence[CheckSink],
    ticker: _Ticker,
    recorder: JudgeCallRecorder | None = None,
    augment: _Augment | None = None,
) -> None:
    rows = [item for item in chunk if isinstance(item, CheckRow)]
    scored = [row for row in rows if row.unassessed is None]
    ticker.add(len(chunk) - len(scored))
    results = (
        runner.run(
            scorer.score_many(
                (ScoreRow(row.answer, row.sources, row.question, row.index_base) for row in scored),
                concurrency=concurrency,
                on_scored=ticker.tick,
            )
        )
        if scored
        else []
    )
    if recorder is not None:
        recorder.end_batch(len(scored))
    computed = iter(results)
    results = [
        row_score(
            row, None if row.unassessed is not None else next(computed), scorer.strict_markers
        )
        for row in rows
    ]
    if augment is not None:
        results = augment(rows, results)
    tally.add_scores(results)
    scores = iter(results)
    for item in chunk:
        if isinstance(item, MalformedLine):
            tally.add_malformed(item)
            checked = CheckedRow(item, None)
        else:
            checked = CheckedRow(item, next(scores))
            tally.add_grouped(item, checked.score)
        for sink in sinks:
            sink.add(checked)


def row_score(row: CheckRow, score: CitationScore | None, strict: bool = False) -> CitationScore:
    """A row's score with what the scorer does not see: provider, structured, reader facts.

    ``score`` is the scorer's, or None for a row a reader left un-assessed; ``strict``
    is the scorer's ``strict_markers``. Both engines finish every row here.
    """
    if score is None:
        assert row.unassessed is not None  # noqa: S101 - only such rows go unscored
        return unassessed(row.unassessed, NO_FINDINGS)
    score = with_provider_findings(score, row.provider)
    score = with_structured_findings(score, row.structured, strict=strict)
    if not row.index_base_from_prompt:
        return score
    return with_findings(score, score.findings.model_copy(update={"index_base_from_prompt": True}))


def _count_lines(handle: BinaryIO) -> int:
    """How many lines the file holds (a last line without a newline counts), read in blocks."""
    lines = 0
    last = b"\n"
    while block := handle.read(_COUNT_BLOCK):
        lines += block.count(b"\n")
        last = block[-1:]
    handle.seek(0)
    return lines + (last != b"\n")


class _Ticker:
    """Advances the progress callback in rows: one tick per scored row or malformed line.

    Blank lines are neither, so the total (the line count) can exceed what is ticked;
    `finish` reports the final count as the total so a bar ends full.
    """

    def __init__(self, progress: Callable[[int, int], None] | None, total: int) -> None:
        self._progress = progress
        self._total = total
        self._done = 0

    def tick(self) -> None:
        self.add(1)

    def add(self, rows: int) -> None:
        if self._progress is None or rows == 0:
            return
        self._done += rows
        self._progress(self._done, self._total)

    def finish(self) -> None:
        if self._progress is not None:
            self._progress(self._done, self._done)
