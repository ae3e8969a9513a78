"""The Ray engine's worker side: a shard read, scored and written where it runs.

A `ShardChecker` (one Ray actor per worker) builds its scorer once; for each shard
it is given (`citemark._pipelines.scale.plan.Shard`: a byte range of a JSONL file with the
number of its first line, or a Parquet row group), it reads the rows, scores them in
bounded chunks exactly as the local check does (rows a reader left un-assessed are
not scored; every score is finished by ``citemark._pipelines.check.run.row_score``), and writes
its part of each output itself, to files in the run's hidden parts folder:
``rows.jsonl`` lines (with the run id), ``judge-calls.jsonl`` lines and, with
``--format junit``, the JUnit test cases. Nothing of a row goes back to the driver
but the page's candidates: the shard's best ``html_rows`` rows by (tier, line), the
only rows ``report.html`` can show, each pickled once (`PageCandidate`).

What goes back is a `ShardSummary`: the shard's counts (a `Tally` the driver
merges in input order), the page's candidates, each part's byte count and SHA-256,
and the worker's node, process, CPU time and peak memory.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import os
import pickle
import resource
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from citemark._judging.scorer.findings import ScoreFindings
from citemark._judging.scorer.result import unassessed
from citemark._judging.scorer.scorer import ScoreRow
from citemark._pipelines.check.html import tier
from citemark._pipelines.check.judge_calls import (
    JUDGE_CALLS_NAME,
    call_line,
    recording,
    recording_verifier,
)
from citemark._pipelines.check.junit import JUNIT_NAME, JUnitSink
from citemark._pipelines.check.names import ROWS_NAME
from citemark._pipelines.check.protocol import CheckedRow, SinkOptions
from citemark._pipelines.check.run import row_score
from citemark._pipelines.check.sinks import line_end, row_line
from citemark._pipelines.check.support import SupportTally, with_support
from citemark._pipelines.check.tally import Tally
from citemark._pipelines.eval_report import MalformedLine
from citemark._pipelines.readers.citemark_rows import CheckRow, RowOptions, parse_row
from citemark._pipelines.scale.parts import PartFacts
from citemark._pipelines.scale.plan import read_shard

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import BinaryIO

    from citemark._judging.replay.recorder import JudgeCallRecorder
    from citemark._judging.scorer.result import CitationScore
    from citemark._judging.scorer.scorer import CitationScorer
    from citemark._judging.verifiers.base import Verifier

__all__ = [
    "CHUNK_ROWS",
    "PageCandidate",
    "RunPlan",
    "ShardChecker",
    "ShardSummary",
    "WorkerSupport",
    "part_path",
    "score_rows",
    "shard_tally",
]

CHUNK_ROWS: Final = 1024
"""How many rows a worker scores at once (its memory per shard is a chunk's rows)."""


@dataclasses.dataclass(frozen=True)
class RunPlan:
    """What every worker of one run is told: where the parts go and what to write."""

    parts_dir: str
    """The run's hidden parts folder (inside the output folder)."""
    run_id: str
    """The run's id, which every line names."""
    html_rows: int
    """How many rows the page shows at most: each shard keeps that many candidates."""
    junit: bool = False
    """Whether the JUnit test cases are written (``--format junit``)."""


class PageCandidate(NamedTuple):
    """A row the page may show: its tier (0 failed, 1 un-assessed, 2 the rest), line, row."""

    tier: int
    line: int
    row: bytes
    """The pickled `CheckedRow` (unpickled by the driver only if the page shows it)."""


class ShardSummary(NamedTuple):
    """What a worker returns for one shard: counts, the page's candidates, the parts."""

    position: int
    """The shard's position in the input (0 first)."""
    tally: Tally
    """The shard's counts (merged by the driver in input order)."""
    page: list[PageCandidate]
    """The shard's best rows for the page, at most ``html_rows``."""
    parts: dict[str, PartFacts]
    """Each output's part, by the output's file name."""
    junit_counts: dict[str, int] | None
    """The JUnit counts of the shard's test cases (with ``--format junit``)."""
    node_id: str
    """The Ray node the shard was scored on."""
    pid: int
    """The worker's process id."""
    lines: int
    """Input lines read (blank lines included)."""
    input_bytes: int
    """The shard's input bytes (JSONL) or its rows' JSON bytes (Parquet)."""
    cpu_seconds: float
    """The worker process's CPU time so far (user and system)."""
    max_rss_kib: int
    """The worker process's peak resident memory so far, in KiB."""
    support: SupportTally | None = None
    """The shard's support figures with ``--verifier`` (merged like ``tally``)."""


def shard_tally(group_by: str | None) -> Tally:
    """A tally for one shard's rows: the summary's counts, groups not yet capped.

    Which values the run counts by name (the first ``MAX_GROUPS`` in input order)
    depends on the shards before this one, so a shard counts every group by name;
    the driver's merge (`Tally.merge`) folds the names past the run's first hundred.
    """
    return Tally(group_by, every_group=True)


def part_path(parts_dir: str | os.PathLike[str], index: int, name: str) -> Path:
    """Where shard ``index`` writes its part of the output ``name``."""
    return Path(parts_dir) / f"{index:07d}.{name}"


class _PartWriter:
    """One part file, hashed and counted as it is written."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: BinaryIO = path.open("xb")
        self._digest = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> None:
        self._handle.write(data)
        self._digest.update(data)
        self.size += len(data)

    def close(self) -> PartFacts:
        self._handle.close()
        return PartFacts(os.fspath(self.path), self.size, self._digest.hexdigest())


class _Page:
    """The shard's best ``limit`` rows by (tier, line): the rows the page may show.

    Rows arrive in line order, so the worst kept row is the last of the worst tier.
    """

    def __init__(self, limit: int) -> None:
        self._limit = max(limit, 0)
        self._tiers: tuple[list[PageCandidate], ...] = ([], [], [])
        self._count = 0

    def add(self, row: CheckedRow) -> None:
        item, score = row
        if score is None or not isinstance(item, CheckRow) or self._limit == 0:
            return
        row_tier = tier(score)
        if self._count >= self._limit:
            worse = next((t for t in (2, 1) if t > row_tier and self._tiers[t]), None)
            if worse is None:
                return
            self._tiers[worse].pop()
            self._count -= 1
        blob = pickle.dumps(row, protocol=pickle.HIGHEST_PROTOCOL)
        self._tiers[row_tier].append(PageCandidate(row_tier, item.line, blob))
        self._count += 1

    def candidates(self) -> list[PageCandidate]:
        return [candidate for kept in self._tiers for candidate in kept]


def score_rows(
    scorer: CitationScorer,
    runner: asyncio.Runner,
    rows: Sequence[CheckRow],
    concurrency: int,
    recorder: JudgeCallRecorder | None,
) -> tuple[list[CitationScore], list[list[dict[str, Any]]]]:
    """Score rows as the local check does; return each row's score and judge calls.

    A row a reader left un-assessed is not scored (``row_score`` gives it its reason).
    If the batch raises as a whole, the rows are scored one by one, and a row that
    raises is that row's ``scoring_error`` (never a failed job).
    """
    try:
        return _score_batch(scorer, runner, rows, concurrency, recorder)
    except Exception:  # noqa: BLE001 - one row's failure never fails the job
        _calls(recorder, _scored_count(rows))  # the failed attempt's calls belong to no row
    scores: list[CitationScore] = []
    calls: list[list[dict[str, Any]]] = []
    for row in rows:
        try:
            (score,), (row_calls,) = _score_batch(scorer, runner, [row], 1, recorder)
        except Exception as exc:  # noqa: BLE001 - recorded against the row
            kind = type(exc).__name__
            score = unassessed("scoring_error", ScoreFindings(error=kind), kind)
            row_calls = _calls(recorder, 1)[0] if row.unassessed is None else []
        scores.append(score)
        calls.append(row_calls)
    return scores, calls


def _scored_count(rows: Sequence[CheckRow]) -> int:
    return sum(1 for row in rows if row.unassessed is None)


def _score_batch(
    scorer: CitationScorer,
    runner: asyncio.Runner,
    rows: Sequence[CheckRow],
    concurrency: int,
    recorder: JudgeCallRecorder | None,
) -> tuple[list[CitationScore], list[list[dict[str, Any]]]]:
    scored = [row for row in rows if row.unassessed is None]
    pending = (ScoreRow(row.answer, row.sources, row.question, row.index_base) for row in scored)
    results = runner.run(scorer.score_many(pending, concurrency=concurrency)) if scored else []
    computed = iter(results)
    made = iter(_calls(recorder, len(scored)))
    scores: list[CitationScore] = []
    calls: list[list[dict[str, Any]]] = []
    for row in rows:
        fresh = row.unassessed is None
        scores.append(row_score(row, next(computed) if fresh else None, scorer.strict_markers))
        calls.append(next(made) if fresh else [])
    return scores, calls


def _calls(recorder: JudgeCallRecorder | None, rows: int) -> list[list[dict[str, Any]]]:
    if recorder is None:
        return [[] for _ in range(rows)]
    return recorder.take_batch(rows)


class WorkerSupport:
    """A worker's support verifier: built once, its judge's calls recorded, asked per chunk.

    Args:
        factory: Builds the verifier (``--verifier``); called here, once.
        recorder: The worker's judge-call recorder: a judge verifier's calls are filed
            there beside the scorer's (loose: they belong to no row).
        runner: The worker's event loop.
        index_base: The scorer's, for rows that do not state their own.
    """

    def __init__(
        self,
        factory: Callable[[], Verifier],
        recorder: JudgeCallRecorder | None,
        runner: asyncio.Runner,
        index_base: int,
    ) -> None:
        self._verifier = recording_verifier(factory(), recorder)
        self._runner = runner
        self._index_base = index_base

    def tally(self) -> SupportTally:
        """An empty tally under this verifier's identity."""
        return SupportTally(self._verifier.identity.as_dict())

    def add(
        self, rows: Sequence[CheckRow], scores: Sequence[CitationScore], tally: SupportTally
    ) -> list[CitationScore]:
        """``scores`` with each row's support attached, the rows counted in ``tally``."""
        return with_support(
            rows,
            scores,
            verifier=self._verifier,
            runner=self._runner,
            tally=tally,
            index_base=self._index_base,
        )


class ShardChecker:
    """A Ray actor's work: check whole shards and write their parts (see the module).

    Args:
        scorer_factory: Builds the worker's scorer; called once, on the worker.
        plan: Where the parts go, the run id and what to write.
        concurrency: How many rows this worker scores at once.
        group_by: A row field each row keeps as its group (``--group-by``).
        verifier_factory: Builds the worker's support verifier (``--verifier``); called
            once, on the worker, so a model is loaded once per worker.
    """

    def __init__(
        self,
        scorer_factory: Callable[[], CitationScorer],
        plan: RunPlan,
        concurrency: int = 32,
        group_by: str | None = None,
        verifier_factory: Callable[[], Verifier] | None = None,
    ) -> None:
        self._scorer, self._recorder = recording(scorer_factory())
        self._plan = plan
        self._concurrency = concurrency
        self._group_by = group_by
        self._row_options = RowOptions(index_base=self._scorer.index_base)
        self._runner = asyncio.Runner()
        self._support = (
            None
            if verifier_factory is None
            else WorkerSupport(
                verifier_factory, self._recorder, self._runner, self._scorer.index_base
            )
        )

    def check(self, shard: Mapping[str, Any], index: int) -> ShardSummary:
        """Read, score and write shard ``index``; return its summary."""
        writers = self._writers(index)
        junit = self._junit()
        tally = shard_tally(self._group_by)
        support = None if self._support is None else self._support.tally()
        page = _Page(self._plan.html_rows)
        lines = size = 0
        try:
            chunk: list[CheckRow | MalformedLine] = []
            for row in read_shard(shard):
                lines += 1
                size += len(row["raw"])
                parsed = parse_row(row["line"], row["raw"], self._group_by, self._row_options)
                if parsed is not None:
                    chunk.append(parsed)
                if len(chunk) >= CHUNK_ROWS:
                    self._chunk(chunk, tally, page, writers, junit, support)
                    chunk = []
            self._chunk(chunk, tally, page, writers, junit, support)
            parts = {name: writer.close() for name, writer in writers.items()}
            counts = None
            if junit is not None:
                parts[JUNIT_NAME] = self._junit_part(index, junit)
                counts = junit.counts()
        finally:
            for writer in writers.values():
                writer.close()
            if junit is not None:
                junit.close()
        return ShardSummary(
            position=index,
            tally=tally,
            page=page.candidates(),
            parts=parts,
            junit_counts=counts,
            node_id=_node_id(),
            pid=os.getpid(),
            lines=lines,
            input_bytes=size,
            cpu_seconds=_cpu_seconds(),
            max_rss_kib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
            support=support,
        )

    def close(self) -> None:
        """Close the worker's event loop (Ray ends the worker's process anyway)."""
        self._runner.close()

    def _writers(self, index: int) -> dict[str, _PartWriter]:
        names = [ROWS_NAME] + ([JUDGE_CALLS_NAME] if self._recorder is not None else [])
        writers: dict[str, _PartWriter] = {}
        try:
            for name in names:
                writers[name] = _PartWriter(part_path(self._plan.parts_dir, index, name))
        except BaseException:
            for writer in writers.values():
                writer.close()
            raise
        return writers

    def _junit(self) -> JUnitSink | None:
        if not self._plan.junit:
            return None
        scorer = self._scorer
        options = SinkOptions(
            Path(self._plan.parts_dir), 0, scorer.label_pattern, scorer.citation_pattern
        )
        return JUnitSink(options)

    def _junit_part(self, index: int, junit: JUnitSink) -> PartFacts:
        writer = _PartWriter(part_path(self._plan.parts_dir, index, JUNIT_NAME))
        try:
            for block in junit.cases():  # the streamed test cases are this shard's part
                writer.write(block)
        finally:
            facts = writer.close()
        return facts

    def _chunk(  # noqa: PLR0913, PLR0917 - the shard's state, passed explicitly
        self,
        chunk: Sequence[CheckRow | MalformedLine],
        tally: Tally,
        page: _Page,
        writers: Mapping[str, _PartWriter],
        junit: JUnitSink | None,
        support: SupportTally | None = None,
    ) -> None:
        rows = [item for item in chunk if isinstance(item, CheckRow)]
        scores, calls = score_rows(
            self._scorer, self._runner, rows, self._concurrency, self._recorder
        )
        if self._support is not None and support is not None:
            scores = self._support.add(rows, scores, support)
        tally.add_scores(scores)
        rows_part = writers[ROWS_NAME]
        calls_part = writers.get(JUDGE_CALLS_NAME)
        run_id = self._plan.run_id
        end = line_end(run_id)
        if calls_part is not None and self._recorder is not None:
            # Calls made for no one row (the support verifier's), before the chunk's
            # rows, as the local engine writes them.
            for call in self._recorder.take_loose():
                calls_part.write(call_line(None, None, call, run_id))
        position = 0
        for item in chunk:
            if isinstance(item, MalformedLine):
                tally.add_malformed(item)
                checked = CheckedRow(item, None)
            else:
                checked = CheckedRow(item, scores[position])
                tally.add_grouped(item, checked.score)
                if calls_part is not None:
                    for call in calls[position]:
                        calls_part.write(call_line(item.line, item.id, call, run_id))
                position += 1
            rows_part.write(row_line(checked, end))
            page.add(checked)
            if junit is not None:
                junit.add(checked)


def _node_id() -> str:
    import ray  # noqa: PLC0415 - only on workers

    return str(ray.get_runtime_context().get_node_id())


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
