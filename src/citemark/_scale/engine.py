"""The Ray engine: per-row records from workers, outputs written by the driver in input order.

A worker builds its scorer once (`CheckBatch`, a callable class for
``Dataset.map_batches``), reads each row exactly as ``citemark check`` does
(``citemark._runs.parse_row`` over the row's JSON bytes) and returns, for every input
row, the ``rows.jsonl`` record (``citemark._check.sinks.row_record``, the same function
the local run uses), an ``error`` column, the row's judge calls, and the checked row
itself for the driver's sinks. A row that raises inside a worker becomes that row's
error (an un-assessed ``scoring_error`` score), never a failed job.

Row identity travels with the row: the readers here (`plan_jsonl`, `plan_parquet`)
hand each worker a byte range (or a row group) with the number of its first line, so
every row carries its input line, and the driver reads the results with Ray Data's
``preserve_order`` so the files are written in input order. The driver hashes the
input itself, as the local run does.

Judge calls keep their bounded concurrency per worker, and a global concurrency is
split across workers (`split_concurrency`) so an endpoint never sees more calls at
once than asked for.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import os
import pickle
import uuid
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from citemark._artifacts import (
    citemark_version,
    utc_now,
)
from citemark._check.html import HTML_NAME
from citemark._check.judge_calls import JudgeCallsSink, recording
from citemark._check.page import HtmlSink
from citemark._check.run import CheckResult, _Tally, finish_outputs, row_score, start_outputs
from citemark._check.sinks import (
    FORMATS,
    ROWS_NAME,
    CheckedRow,
    CheckSink,
    RunFacts,
    SinkOptions,
    opened,
    row_line,
    with_run_id,
)
from citemark._reports import CheckSummary, MalformedLine
from citemark._runs import CheckRow, RowOptions, parse_row
from citemark._scorer.findings import ScoreFindings
from citemark._scorer.result import unassessed
from citemark._scorer.scorer import CitationScorer, ScoreRow

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence

    from pydantic import JsonValue
    from ray.data import Dataset

    from citemark._scorer.result import CitationScore

__all__ = [
    "CheckBatch",
    "ScorerSpec",
    "check_dataset",
    "plan_jsonl",
    "plan_parquet",
    "run_ray_check",
    "split_concurrency",
]

_SHARD_BYTES: Final = 8 << 20
"""About how many input bytes one read task takes."""
DEFAULT_BATCH_SIZE: Final = 1024


def split_concurrency(total: int, workers: int) -> tuple[int, int]:
    """Split a global concurrency over workers: ``(workers, per_worker)``, never above ``total``.

    With fewer calls allowed than workers, only ``total`` workers run, one call each.
    """
    if total < 1 or workers < 1:
        msg = "concurrency and workers must be positive integers"
        raise ValueError(msg)
    used = min(workers, total)
    return used, total // used


@dataclasses.dataclass(frozen=True)
class ScorerSpec:
    """A picklable recipe for the scorer a worker builds: the check's options, not objects."""

    judge_model: str | None = None
    judge_base_url: str | None = None
    judge_api_key: str | None = None
    timeout: float = 120.0
    replay_judge: str | None = None
    min_sentence_coverage: float | None = None
    label_pattern: str | None = None
    citation_pattern: str | None = None
    judge_violations: bool = True
    index_base: int = 1
    strict_markers: bool = False
    max_tokens: int | None = None
    temperature: float | None = None
    seed: int | None = None

    def __call__(self) -> CitationScorer:
        """Build the scorer (called once per worker)."""
        import re  # noqa: PLC0415 - only on workers

        import httpx  # noqa: PLC0415

        from citemark._chat import ChatModel, OpenAIChat  # noqa: PLC0415
        from citemark._replay.replay import ReplayChat  # noqa: PLC0415

        judge: ChatModel | None = None
        if self.replay_judge is not None:
            judge = ReplayChat.from_run(self.replay_judge)
        elif self.judge_model is not None:
            timeout = httpx.Timeout(connect=5.0, read=self.timeout, write=30.0, pool=10.0)
            # The same chat the local check builds: --timeout is the whole call's deadline.
            judge = OpenAIChat(
                self.judge_base_url,
                self.judge_model,
                self.judge_api_key,
                timeout=timeout,
                deadline=self.timeout,
                max_tokens=self.max_tokens,
                temperature=self.temperature,
                seed=self.seed,
            )
        options: dict[str, Any] = {
            "min_sentence_coverage": self.min_sentence_coverage,
            "judge_violations": self.judge_violations,
            "index_base": self.index_base,
            "strict_markers": self.strict_markers,
        }
        if self.label_pattern is not None:
            options["label_pattern"] = re.compile(self.label_pattern, re.MULTILINE)
        if self.citation_pattern is not None:
            options["citation_pattern"] = re.compile(self.citation_pattern)
        return CitationScorer(judge, **options)


class CheckBatch:
    """A callable class for ``Dataset.map_batches``: one scorer per worker, one record per row.

    Input columns: ``line`` (the 1-based input line) and ``raw`` (the row's JSON
    bytes or text). Output columns, one row per input row (a blank line gives none):
    ``line``, ``id``, ``record`` (the ``rows.jsonl`` line, as text), ``error`` (None;
    a malformed line's reason; or the class name of the exception the row raised),
    ``judge_calls`` (the row's calls as a JSON list) and ``checked`` (the pickled
    checked row, which the driver's sinks read).

    Args:
        scorer_factory: Builds the worker's scorer; called once, on the worker.
        concurrency: How many rows this worker scores at once.
        group_by: A row field each checked row keeps as its group (``--group-by``).
    """

    def __init__(
        self,
        scorer_factory: Callable[[], CitationScorer],
        concurrency: int = 32,
        group_by: str | None = None,
    ) -> None:
        self._scorer, self._recorder = recording(scorer_factory())
        self._concurrency = concurrency
        self._group_by = group_by
        self._row_options = RowOptions(index_base=self._scorer.index_base)
        self._runner = asyncio.Runner()

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, list[Any]]:
        """Check one batch of rows."""
        items: list[CheckRow | MalformedLine] = []
        if "raw" not in batch:
            # A batch of shards (the engine's own plan): read them here, in the worker.
            keys = Shard._fields
            shards = [
                dict(zip(keys, values, strict=True))
                for values in zip(*(batch[k] for k in keys), strict=True)
            ]
            lines = [row for shard in shards for row in read_shard(shard)]
            batch = {"line": [row["line"] for row in lines], "raw": [row["raw"] for row in lines]}
        for line, raw in zip(batch["line"], batch["raw"], strict=True):
            data = raw.encode("utf-8") if isinstance(raw, str) else bytes(raw)
            parsed = parse_row(int(line), data, self._group_by, self._row_options)
            if parsed is not None:
                items.append(parsed)
        rows = [item for item in items if isinstance(item, CheckRow)]
        scores, errors, calls = self._score(rows)
        out: dict[str, list[Any]] = {
            key: [] for key in ("line", "id", "record", "error", "judge_calls", "checked")
        }
        position = 0
        for item in items:
            if isinstance(item, MalformedLine):
                checked = CheckedRow(item, None)
                error: str | None = item.reason
                row_calls: list[dict[str, Any]] = []
                row_id = None
            else:
                checked = CheckedRow(item, scores[position])
                error = errors[position]
                row_calls = calls[position]
                row_id = item.id
                position += 1
            out["line"].append(item.line)
            out["id"].append(row_id)
            out["record"].append(row_line(checked).decode("ascii").rstrip("\n"))
            out["error"].append(error)
            out["judge_calls"].append(json.dumps(row_calls, allow_nan=False))
            out["checked"].append(pickle.dumps(checked, protocol=pickle.HIGHEST_PROTOCOL))
        return out

    def close(self) -> None:
        """Close the worker's event loop (Ray ends the worker's process anyway)."""
        self._runner.close()

    def _score(
        self, rows: list[CheckRow]
    ) -> tuple[list[CitationScore], list[str | None], list[list[dict[str, Any]]]]:
        try:
            scores = self._runner.run(
                self._scorer.score_many(_pending(rows), concurrency=self._concurrency)
            )
        except Exception:  # noqa: BLE001 - one row's failure never fails the job
            return self._one_by_one(rows)
        scores = _finished(rows, scores, self._scorer.strict_markers)
        return scores, [_scoring_error(score) for score in scores], self._calls(len(rows))

    def _one_by_one(
        self, rows: list[CheckRow]
    ) -> tuple[list[CitationScore], list[str | None], list[list[dict[str, Any]]]]:
        """The batch raised as a whole: score row by row; a row that raises is its error."""
        self._calls(len(rows))  # the failed attempt's calls belong to no result
        scores: list[CitationScore] = []
        errors: list[str | None] = []
        calls: list[list[dict[str, Any]]] = []
        for row in rows:
            try:
                (score,) = _finished(
                    [row],
                    self._runner.run(self._scorer.score_many(_pending([row]))),
                    self._scorer.strict_markers,
                )
                errors.append(_scoring_error(score))
            except Exception as exc:  # noqa: BLE001 - recorded against the row
                kind = type(exc).__name__
                score = unassessed("scoring_error", ScoreFindings(error=kind), kind)
                errors.append(kind)
            scores.append(score)
            calls.extend(self._calls(1))
        return scores, errors, calls

    def _calls(self, rows: int) -> list[list[dict[str, Any]]]:
        if self._recorder is None:
            return [[] for _ in range(rows)]
        return self._recorder.take_batch(rows)


def _pending(rows: list[CheckRow]) -> list[ScoreRow]:
    # The same rows the local check scores (citemark._check.run._score_chunk).
    return [ScoreRow(row.answer, row.sources, row.question, row.index_base) for row in rows]


def _finished(
    rows: list[CheckRow], scores: list[CitationScore], strict: bool
) -> list[CitationScore]:
    """Each score with its row's provider and structured citations, as the local check has it."""
    return [row_score(row, s, strict) for row, s in zip(rows, scores, strict=True)]


def _scoring_error(score: CitationScore) -> str | None:
    error = score.details.get("error") if score.reason == "scoring_error" else None
    return error if isinstance(error, str) else None


class Shard(NamedTuple):
    """One read task: a byte range of a JSONL file, or a row group of a Parquet file."""

    path: str
    start: int
    """The first byte (JSONL) or the row group's index (Parquet)."""
    end: int
    """One past the last byte (JSONL); unused for Parquet."""
    first_line: int
    """The 1-based line (or row) number of the shard's first row."""
    kind: str
    """``"jsonl"`` or ``"parquet"``."""


def plan_jsonl(
    path: str | os.PathLike[str], shard_bytes: int = _SHARD_BYTES
) -> tuple[list[Shard], str]:
    """Cut a JSONL file into line-aligned shards; return them and the SHA-256 of its bytes."""
    digest = hashlib.sha256()
    shards: list[Shard] = []
    name = os.fspath(path)
    start = offset = 0
    line = first = 1
    with Path(path).open("rb") as handle:
        for raw in handle:
            digest.update(raw)
            offset += len(raw)
            line += 1
            if offset - start >= shard_bytes:
                shards.append(Shard(name, start, offset, first, "jsonl"))
                start, first = offset, line
    if offset > start:
        shards.append(Shard(name, start, offset, first, "jsonl"))
    return shards, digest.hexdigest()


def plan_parquet(path: str | os.PathLike[str]) -> tuple[list[Shard], str]:
    """One shard per row group of a Parquet file; return them and the SHA-256 of its bytes."""
    import pyarrow.parquet as pq  # noqa: PLC0415 - optional, only for Parquet input

    name = os.fspath(path)
    metadata = pq.ParquetFile(name).metadata
    shards: list[Shard] = []
    first = 1
    for group in range(metadata.num_row_groups):
        shards.append(Shard(name, group, 0, first, "parquet"))
        first += metadata.row_group(group).num_rows
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return shards, digest.hexdigest()


def read_shard(item: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The rows of one shard, each with its line number and JSON bytes (a ``flat_map`` step)."""
    shard = Shard(**{key: item[key] for key in Shard._fields})
    if shard.kind == "parquet":
        import pyarrow.parquet as pq  # noqa: PLC0415

        table = pq.ParquetFile(shard.path).read_row_group(shard.start)
        for number, row in enumerate(table.to_pylist(), start=shard.first_line):
            present = {key: value for key, value in row.items() if value is not None}
            yield {"line": number, "raw": json.dumps(present).encode("utf-8")}
        return
    with Path(shard.path).open("rb") as handle:
        handle.seek(shard.start)
        data = handle.read(shard.end - shard.start)
    for number, raw in enumerate(data.splitlines(keepends=True), start=shard.first_line):
        yield {"line": number, "raw": raw}


def _dataset(shards: Sequence[Shard], *, read: bool = True) -> Dataset:
    import ray.data  # noqa: PLC0415

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Ray Data's own settings
        plan = ray.data.from_items(
            [shard._asdict() for shard in shards], override_num_blocks=max(1, len(shards))
        )
        return plan.flat_map(read_shard) if read else plan


def _checked(  # noqa: PLR0913 - the options of a check, passed on
    ds: Dataset,
    scorer_factory: Callable[[], CitationScorer],
    *,
    concurrency: int,
    workers: int,
    batch_size: int,
    group_by: str | None = None,
) -> Iterator[dict[str, Any]]:
    """Map ``ds`` through `CheckBatch` and yield result batches in input order."""
    import ray.data  # noqa: PLC0415

    used, per_worker = split_concurrency(concurrency, workers)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Ray Data's own settings
        context = ray.data.DataContext.get_current()
        context.execution_options.preserve_order = True
    mapped = ds.map_batches(
        CheckBatch,
        fn_constructor_kwargs={
            "scorer_factory": scorer_factory,
            "concurrency": per_worker,
            "group_by": group_by,
        },
        batch_size=batch_size,
        batch_format="default",
        compute=ray.data.ActorPoolStrategy(size=used),
    )
    with warnings.catch_warnings():
        # Ray Data warns about its own deprecated settings while it executes.
        warnings.simplefilter("ignore", DeprecationWarning)
        # A dataset keeps the context it was made with: order is asked of that one.
        mapped.context.execution_options.preserve_order = True
        yield from mapped.iter_batches(batch_size=None, batch_format="default")


def check_dataset(  # noqa: PLR0913 - the options of a check, each with a default
    ds: Dataset,
    scorer_factory: Callable[[], CitationScorer],
    *,
    concurrency: int = 32,
    workers: int = 2,
    batch_size: int = DEFAULT_BATCH_SIZE,
    on_row: Callable[[CheckedRow, dict[str, Any]], None] | None = None,
    group_by: str | None = None,
) -> CheckSummary:
    """Check every row of a Ray ``Dataset`` with ``line`` and ``raw`` columns; return the summary.

    Args:
        ds: The rows: ``line`` (int) and ``raw`` (the row's JSON), e.g. from
            ``citemark.ray.read_jsonl``.
        scorer_factory: Builds each worker's scorer, once per worker; it must pickle.
        concurrency: How many rows are scored at once across all workers.
        workers: How many workers (actors) score rows.
        batch_size: Rows per batch handed to a worker.
        on_row: Called in input order with each checked row and its output columns.
        group_by: A row field to break every count down by, as ``check --group-by``.

    Returns:
        The summary ``report.json`` holds (its ``files`` left empty).

    Raises:
        NoRowsError: no row of the dataset is a readable row.
    """
    tally = _Tally(group_by)
    for batch in _checked(
        ds,
        scorer_factory,
        concurrency=concurrency,
        workers=workers,
        batch_size=batch_size,
        group_by=group_by,
    ):
        checked_rows = [pickle.loads(blob) for blob in batch["checked"]]  # noqa: S301 - our own workers
        scores = [row.score for row in checked_rows if row.score is not None]
        tally.add_scores(scores)
        for index, checked in enumerate(checked_rows):
            if isinstance(checked.item, MalformedLine):
                tally.add_malformed(checked.item)
            else:
                tally.add_grouped(checked.item, checked.score)
            if on_row is not None:
                on_row(checked, {key: batch[key][index] for key in ("record", "judge_calls")})
    tally.require_rows()  # before the driver builds a scorer (a replayed judge reads its run)
    return tally.summary(scorer_factory())


class _RecordSink:
    """``rows.jsonl`` from the records the workers built (the same bytes `JsonlSink` writes)."""

    name = ROWS_NAME

    def __init__(self, options: SinkOptions) -> None:
        from citemark._artifacts import AtomicFile  # noqa: PLC0415

        self._file = AtomicFile(options.out_dir / ROWS_NAME)
        self._run_id = options.run_id
        self.pending = ""

    def add(self, row: CheckedRow) -> None:
        del row
        self._file.write(with_run_id(self.pending.encode("ascii") + b"\n", self._run_id))

    def finish(self, facts: RunFacts) -> str:
        del facts
        return self._file.commit()

    def close(self) -> None:
        self._file.__exit__(None, None, None)


def run_ray_check(  # noqa: PLR0913 - the options of the command, each with a default
    path: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    scorer_factory: Callable[[], CitationScorer],
    *,
    concurrency: int = 32,
    workers: int = 2,
    html_rows: int = 500,
    config: Mapping[str, JsonValue] | None = None,
    formats: Sequence[str] = (),
    shard_bytes: int = _SHARD_BYTES,
    group_by: str | None = None,
) -> CheckResult:
    """Run ``citemark check`` over a JSONL or Parquet file on Ray; write the same outputs.

    ``ray.init`` must have been called. A path ending in ``.parquet`` is read as
    Parquet (its rows numbered from 1), anything else as JSONL. ``group_by`` breaks
    every count down by a row field, as ``check --group-by`` does locally.

    Returns:
        The report and the paths of the files, as `citemark._check.run_check` returns.
    """
    source = os.fspath(path)
    shards, input_sha256 = (
        plan_parquet(source) if source.endswith(".parquet") else plan_jsonl(source, shard_bytes)
    )
    out = Path(out_dir)
    created_at = utc_now()
    run_id = uuid.uuid4().hex
    scorer = scorer_factory()
    pending_calls: list[list[dict[str, Any]]] = []
    with contextlib.ExitStack() as stack:
        options = start_outputs(stack, out, scorer, html_rows, group_by, run_id)
        records = opened(stack, _RecordSink(options))
        html = opened(stack, HtmlSink(options))
        sinks: list[CheckSink] = [records, html]
        sinks.extend(opened(stack, FORMATS[name](options)) for name in formats)
        if scorer.judge is not None:
            sinks.append(opened(stack, JudgeCallsSink(options, pending_calls.pop)))

        def on_row(checked: CheckedRow, columns: dict[str, Any]) -> None:
            records.pending = columns["record"]
            pending_calls.append(json.loads(columns["judge_calls"]))
            for sink in sinks:
                sink.add(checked)
            pending_calls.clear()

        summary = check_dataset(
            _dataset(shards, read=False),
            scorer_factory,
            concurrency=concurrency,
            workers=workers,
            batch_size=1,
            on_row=on_row,
            group_by=group_by,
        )
        facts = RunFacts(summary, source, input_sha256, created_at, citemark_version(), run_id)
        report, report_path = finish_outputs(out, sinks, facts, config)
    return CheckResult(report, report_path, out / HTML_NAME, out / ROWS_NAME, html.count)
