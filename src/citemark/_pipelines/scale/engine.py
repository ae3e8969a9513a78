"""The Ray engine: workers that read, score and write their own shards; a driver of summaries.

``run_ray_check`` (``citemark check --engine ray``) divides the work so that the
driver touches no row. One Ray task (`_plan`, on a worker) makes one pass over the
input: it cuts it into line-aligned byte ranges of about ``shard_bytes`` (or one
shard per Parquet row group), each with the number of its first line, and takes
the SHA-256 of the input's bytes, the same digest the local engine records. Then
``workers`` actors (``citemark._pipelines.scale.shards.ShardChecker``, spread over the nodes)
each read whole shards, score them exactly as the local check does and write their
part of every output to a hidden parts folder in the output folder
(``citemark._pipelines.scale.parts``). The driver receives one summary per shard: its counts
(a ``Tally``, merged in input order, so groups and malformed lines are what a single
pass would count), the page's candidate rows (the shard's best ``html_rows`` by tier
and line, the only row data the driver receives), and each part's size and SHA-256.
An `Assembler` actor on the driver's node appends the parts to the outputs in input
order, by byte copy, hashing as it copies; the driver writes ``report.html`` from the
rows the page shows and ``report.json`` from the merged counts.

`CheckBatch` and `check_dataset` are the same scoring for any Ray ``Dataset`` with
``line`` and ``raw`` columns (``Dataset.map_batches``): there the caller's
``on_row`` receives every row, so that path does bring rows to the driver.

Judge calls keep their bounded concurrency per worker, and a global concurrency is
split across workers (`split_concurrency`) so an endpoint never sees more calls at
once than asked for.

A run that cannot finish ends as the local engine's does, publishing nothing
(``citemark._pipelines.scale.watch``): a dead worker or node is ``RayRunError``, a worker's full
disk the ``OSError`` the local engine would meet, and every wait of the driver checks
that its node still answers. The actors are stopped before the parts folder goes.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import pickle
import sys
import uuid
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from citemark._contract.artifacts import (
    citemark_version,
    utc_now,
)
from citemark._judging.scorer.scorer import CitationScorer
from citemark._pipelines.check.groups import OTHER_GROUP, GroupNames, group_name
from citemark._pipelines.check.judge_calls import (
    JUDGE_CALLS_NAME,
    recording,
)
from citemark._pipelines.check.junit import JUNIT_NAME, JUnitSink
from citemark._pipelines.check.names import HTML_NAME, ROWS_NAME
from citemark._pipelines.check.page import HtmlSink
from citemark._pipelines.check.protocol import (
    CheckedRow,
    CheckSink,
    RunFacts,
    SinkOptions,
    opened,
)
from citemark._pipelines.check.run import CheckResult, finish_outputs, start_outputs
from citemark._pipelines.check.sinks import row_line
from citemark._pipelines.check.support import SupportTally, merged
from citemark._pipelines.check.tally import Tally
from citemark._pipelines.eval_report import CheckSummary, MalformedLine
from citemark._pipelines.readers.citemark_rows import CheckRow, RowOptions, parse_row
from citemark._pipelines.scale.parts import Assembler, parts_folder
from citemark._pipelines.scale.plan import SHARD_BYTES, Shard, plan_jsonl, plan_parquet, read_shard
from citemark._pipelines.scale.shards import (
    PageCandidate,
    RunPlan,
    ShardChecker,
    ShardSummary,
    WorkerSupport,
    score_rows,
)
from citemark._pipelines.scale.watch import (
    DEFAULT_NODE_TIMEOUT,
    NodeWatch,
    lost_shard,
    ray_failures,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence

    from pydantic import JsonValue
    from ray.data import Dataset

    from citemark._judging.scorer.result import CitationScore
    from citemark._judging.verifiers.base import Verifier
    from citemark._model.completion import ChatModel

__all__ = [
    "CheckBatch",
    "JudgeVerifierSpec",
    "ScorerSpec",
    "ShardFacts",
    "check_dataset",
    "run_ray_check",
    "split_concurrency",
    "start_ray",
]

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

    def judge_chat(self) -> ChatModel | None:
        """The judge's chat: a replay of a recorded run, a live endpoint's, or None."""
        import httpx  # noqa: PLC0415 - only on workers

        from citemark._judging.replay.replay import ReplayChat  # noqa: PLC0415
        from citemark._model.chat import OpenAIChat  # noqa: PLC0415

        if self.replay_judge is not None:
            return ReplayChat.from_run(self.replay_judge)
        if self.judge_model is None:
            return None
        timeout = httpx.Timeout(connect=5.0, read=self.timeout, write=30.0, pool=10.0)
        # The same chat the local check builds: --timeout is the whole call's deadline.
        return OpenAIChat(
            self.judge_base_url,
            self.judge_model,
            self.judge_api_key,
            timeout=timeout,
            deadline=self.timeout,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            seed=self.seed,
        )

    def __call__(self) -> CitationScorer:
        """Build the scorer (called once per worker)."""
        import re  # noqa: PLC0415 - only on workers

        judge = self.judge_chat()
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


@dataclasses.dataclass(frozen=True)
class JudgeVerifierSpec:
    """A picklable recipe for a worker's ``--verifier judge``.

    The worker builds a `JudgeVerifier` over a chat of its own, built from the same
    `ScorerSpec` as its scorer's judge (the same endpoint, or the same recording).
    """

    scorer: ScorerSpec

    def __call__(self) -> Verifier:
        """Build the verifier (called once per worker); `build_verifier`'s errors without a chat."""
        from citemark._judging.verifiers.choose import (  # noqa: PLC0415 - only on workers
            VerifierSpec,
            build_verifier,
        )

        return build_verifier(VerifierSpec("judge"), chat=self.scorer.judge_chat())


class CheckBatch:
    """A callable class for ``Dataset.map_batches``: one scorer per worker, one record per row.

    Input columns: ``line`` (the 1-based input line) and ``raw`` (the row's JSON
    bytes or text). Output columns, one row per input row (a blank line gives none):
    ``line``, ``id``, ``record`` (the ``rows.jsonl`` line, as text), ``error`` (None;
    a malformed line's reason; or the class name of the exception the row raised),
    ``judge_calls`` (the row's calls as a JSON list), ``checked`` (the pickled
    checked row, which the driver's sinks read) and ``support`` (with a verifier, the
    batch's pickled support tally on its first row; else, and on every other row,
    empty bytes).

    Args:
        scorer_factory: Builds the worker's scorer; called once, on the worker.
        concurrency: How many rows this worker scores at once.
        group_by: A row field each checked row keeps as its group (``--group-by``).
        verifier_factory: Builds the worker's support verifier; called once, on the
            worker, so a model is loaded once per worker.
    """

    def __init__(
        self,
        scorer_factory: Callable[[], CitationScorer],
        concurrency: int = 32,
        group_by: str | None = None,
        verifier_factory: Callable[[], Verifier] | None = None,
    ) -> None:
        self._scorer, self._recorder = recording(scorer_factory())
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
        support = None
        if self._support is not None:
            support = self._support.tally()
            scores = self._support.add(rows, scores, support)
        out: dict[str, list[Any]] = {
            key: [] for key in ("line", "id", "record", "error", "judge_calls", "checked")
        }
        # Empty bytes, not None: a column of nulls does not come back as None.
        out["support"] = [b""] * len(items)
        if support is not None and items:
            out["support"][0] = pickle.dumps(support, protocol=pickle.HIGHEST_PROTOCOL)
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
        scores, calls = score_rows(
            self._scorer, self._runner, rows, self._concurrency, self._recorder
        )
        return scores, [_scoring_error(score) for score in scores], calls


def _scoring_error(score: CitationScore) -> str | None:
    error = score.findings.error if score.reason == "scoring_error" else None
    return error if isinstance(error, str) else None


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
    verifier_factory: Callable[[], Verifier] | None = None,
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
            "verifier_factory": verifier_factory,
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
    verifier_factory: Callable[[], Verifier] | None = None,
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
        verifier_factory: Builds each worker's support verifier once (``--verifier``);
            it must pickle. Each row's ``details.support`` and the summary's
            ``support`` then hold the advisory figures, as the local check's do.

    Returns:
        The summary ``report.json`` holds (its ``files`` left empty).

    Raises:
        NoRowsError: no row of the dataset is a readable row.
    """
    tally = Tally(group_by)
    support: SupportTally | None = None
    for batch in _checked(
        ds,
        scorer_factory,
        concurrency=concurrency,
        workers=workers,
        batch_size=batch_size,
        group_by=group_by,
        verifier_factory=verifier_factory,
    ):
        for blob in batch["support"]:
            if len(blob):
                support = merged(support, pickle.loads(blob))  # noqa: S301 - our own workers
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
    summary = tally.summary(scorer_factory())
    if support is not None:
        summary = summary.model_copy(update={"support": support.summary()})
    return summary


class ShardFacts(NamedTuple):
    """What the driver learnt of one shard (``run_ray_check``'s ``on_shard``): no row data."""

    position: int
    """The shard's position in the input (0 first)."""
    node_id: str
    """The Ray node that scored it."""
    pid: int
    """The worker process that scored it."""
    lines: int
    """Input lines it held (blank lines included)."""
    input_bytes: int
    """Its input bytes."""
    parts: dict[str, tuple[int, str]]
    """Each output's part: byte count and SHA-256, by the output's file name."""
    page_rows: int
    """Rows it offered the page (at most ``html_rows``)."""
    page_bytes: int
    """The pickled bytes of those rows: the only row data that reaches the driver."""
    cpu_seconds: float
    """The worker's CPU time when the shard was done (user and system, whole process)."""
    max_rss_kib: int
    """The worker's peak resident memory when the shard was done, in KiB."""


def start_ray(address: str | None = None, *, verbose: bool = False) -> None:
    """``ray.init`` for a check: Ray's own logs and workers' output silent unless ``verbose``.

    Without ``verbose``, Ray logs only errors (``logging_level``), and what the
    workers print or log is not forwarded to this process (``log_to_driver``), nor
    are Ray's notices of a dead worker; the check's own output is all a terminal
    shows. The dashboard is not started.
    """
    import logging  # noqa: PLC0415

    import ray  # noqa: PLC0415

    ray.init(
        address=address,
        include_dashboard=False,
        log_to_driver=verbose,
        logging_level=logging.INFO if verbose else logging.ERROR,
    )
    if not verbose:
        # Ray prints a dead worker's notice on standard output even so ("(raylet) A
        # worker died..."), which would break --json's one object: the run's own
        # one-line error says what happened. A module flag of Ray's, where it has one.
        worker_module: Any = sys.modules.get("ray._private.worker")
        if hasattr(worker_module, "_worker_logs_enabled"):
            worker_module._worker_logs_enabled = False  # noqa: SLF001


def _plan(path: str, shard_bytes: int) -> tuple[list[Shard], str]:
    """The shards and the input's SHA-256: one pass over the input, on a worker."""
    return plan_parquet(path) if path.endswith(".parquet") else plan_jsonl(path, shard_bytes)


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
    shard_bytes: int = SHARD_BYTES,
    group_by: str | None = None,
    on_shard: Callable[[ShardFacts], None] | None = None,
    node_timeout: float = DEFAULT_NODE_TIMEOUT,
    verifier_factory: Callable[[], Verifier] | None = None,
) -> CheckResult:
    """Run ``citemark check`` over a JSONL or Parquet file on Ray; write the same outputs.

    ``ray.init`` must have been called (`start_ray`). A path ending in ``.parquet``
    is read as Parquet (its rows numbered from 1), anything else as JSONL. The input
    and the output folder must be at the same path on every node. ``group_by``
    breaks every count down by a row field, as ``check --group-by`` does locally;
    ``on_shard`` is called with each shard's `ShardFacts`, in input order.
    ``verifier_factory`` (``--verifier``) builds each worker's support verifier once,
    on the worker (it must pickle); each row's support goes to ``rows.jsonl`` and the
    run's means to the summary, as the local engine writes them.

    A run that cannot finish publishes nothing: the output folder keeps its previous
    files, and no temporary file or parts folder is left. The driver never waits on a
    dead node: while it waits, it checks that the node's GCS and raylet still accept a
    connection, and ends the run once they have not for ``node_timeout`` seconds.

    Returns:
        The report and the paths of the files, as `citemark._pipelines.check.run.run_check` returns.

    Raises:
        NoRowsError: no line of the input is a readable row.
        ValueError: a format this engine cannot write was asked for.
        RayRunError: a worker died, a task failed outside every row's guard, or the
            node stopped answering for ``node_timeout`` seconds (``reason`` says which).
        OSError: the input cannot be read or the output folder cannot be written, on
            the driver or on a worker (a full disk), as the local engine raises it.
        PartMismatchError: a part is not the bytes its worker reported.
    """
    import ray  # noqa: PLC0415

    unknown = [name for name in formats if name != "junit"]
    if unknown:
        msg = f"--engine ray writes the junit format only, not {len(unknown)} other"
        raise ValueError(msg)
    source = os.fspath(path)
    watch = NodeWatch(node_timeout)
    with ray_failures():
        watch.ensure()  # a remote call on a dead node would block in Ray itself
        planned = ray.remote(num_cpus=1)(_plan).remote(source, shard_bytes)
        watch.wait([planned])
        shards, input_sha256 = ray.get(planned)
    out = Path(out_dir)
    created_at = utc_now()
    run_id = uuid.uuid4().hex
    scorer = scorer_factory()
    with contextlib.ExitStack() as stack:
        options = start_outputs(stack, out, scorer, html_rows, group_by, run_id)
        parts_dir = stack.enter_context(parts_folder(out, run_id))
        records = opened(stack, _AssembledSink(options, ROWS_NAME))
        junit = opened(stack, JUnitSink(options)) if formats else None
        calls = None
        if scorer.judge is not None:
            calls = opened(stack, _AssembledSink(options, JUDGE_CALLS_NAME))
        targets = {sink.name: os.fspath(sink.temporary) for sink in (records, calls) if sink}
        if junit is not None:
            targets[JUNIT_NAME] = os.fspath(parts_dir / "junit.body")
        plan = RunPlan(os.fspath(parts_dir), run_id, html_rows, junit=junit is not None)
        run = _ShardRun(shards, plan, html_rows, on_shard)
        with ray_failures():
            run.score(
                scorer_factory,
                targets,
                concurrency,
                workers,
                group_by,
                watch=watch,
                verifier_factory=verifier_factory,
            )
        run.tally.require_rows()
        records.assembled = run.assembled[ROWS_NAME]
        if calls is not None:
            calls.assembled = run.assembled[JUDGE_CALLS_NAME]
        html = HtmlSink(options, groups=_known_groups(run.tally, group_by))
        for row in run.page_rows():
            html.add(row)
        sinks: list[CheckSink] = [records, html]
        if junit is not None:
            _fill_junit(stack, junit, targets[JUNIT_NAME], run.junit_counts)
            sinks.append(junit)
        if calls is not None:
            sinks.append(calls)
        summary = run.tally.summary(scorer)
        if run.support is not None:
            summary = summary.model_copy(update={"support": run.support.summary()})
        facts = RunFacts(summary, source, input_sha256, created_at, citemark_version(), run_id)
        report, report_path = finish_outputs(out, sinks, facts, config)
    return CheckResult(report, report_path, out / HTML_NAME, out / ROWS_NAME, html.count)


class _AssembledSink:
    """An output the workers wrote in parts and the `Assembler` joined into its temporary file.

    The digest it reports is the assembler's, taken over every byte it appended.
    """

    def __init__(self, options: SinkOptions, name: str) -> None:
        from citemark._contract.artifacts import AtomicFile  # noqa: PLC0415

        self.name = name
        self._file = AtomicFile(options.out_dir / name)
        self.assembled: tuple[int, str] | None = None

    @property
    def temporary(self) -> Path:
        """The hidden file the assembler appends to."""
        return self._file.temporary

    def add(self, row: CheckedRow) -> None:
        """Rows never reach this sink: the workers wrote them."""
        del row

    def finish(self, facts: RunFacts) -> str:
        """Publish the assembled file; return the SHA-256 of the bytes appended to it."""
        del facts
        if self.assembled is None:
            msg = "an output was published before its parts were joined"
            raise RuntimeError(msg)
        self._file.commit()
        return self.assembled[1]

    def close(self) -> None:
        """Remove the temporary file if the run did not finish."""
        self._file.__exit__(None, None, None)


def _fill_junit(
    stack: contextlib.ExitStack, junit: JUnitSink, body: str, counts: dict[str, int]
) -> None:
    """Give the driver's JUnit sink the joined test cases and their counts."""
    handle = Path(body).open("rb")  # noqa: SIM115 - closed by the sink's close
    junit.take_cases(handle, counts)  # the cases were streamed by the workers instead
    stack.callback(handle.close)


class _KnownGroups(GroupNames):
    """The page's group names: the summary's, every other value in ``(other)``."""

    def __init__(self, names: frozenset[str]) -> None:
        super().__init__()
        self._names = names

    def group_of(self, value: object) -> str:
        name = group_name(value)
        return name if name in self._names else OTHER_GROUP


def _known_groups(tally: Tally, group_by: str | None) -> GroupNames | None:
    if group_by is None:
        return None
    return _KnownGroups(frozenset(tally.groups.summary()))


class _ShardRun:
    """The driver's side of a run: hand out shards, merge what comes back, in input order."""

    def __init__(
        self,
        shards: Sequence[Shard],
        plan: RunPlan,
        html_rows: int,
        on_shard: Callable[[ShardFacts], None] | None,
    ) -> None:
        self._shards = shards
        self._plan = plan
        self._limit = max(html_rows, 0)
        self._on_shard = on_shard
        self.tally = Tally(None)
        self.support: SupportTally | None = None
        self.page: list[PageCandidate] = []
        self.junit_counts: dict[str, int] = {}
        self.assembled: dict[str, tuple[int, str]] = {}

    def score(  # noqa: PLR0913 - the run's options, passed on
        self,
        scorer_factory: Callable[[], CitationScorer],
        targets: dict[str, str],
        concurrency: int,
        workers: int,
        group_by: str | None,
        *,
        watch: NodeWatch,
        verifier_factory: Callable[[], Verifier] | None = None,
    ) -> None:
        """Score every shard on ``workers`` actors; join the parts as their turn comes.

        However it ends, the actors are stopped before the parts folder is removed,
        and every result still in flight is collected (a failed one is not logged).
        """
        import ray  # noqa: PLC0415
        from ray.util.scheduling_strategies import (  # noqa: PLC0415
            NodeAffinitySchedulingStrategy,
        )

        self.tally = Tally(group_by)
        used, per_worker = split_concurrency(concurrency, workers)
        here = ray.get_runtime_context().get_node_id()
        on_driver = NodeAffinitySchedulingStrategy(here, soft=False)
        actors: list[Any] = []
        in_flight: dict[Any, Any] = {}
        try:
            assembler: Any = (
                ray.remote(Assembler)
                .options(num_cpus=0, scheduling_strategy=on_driver)
                .remote(targets)
            )
            actors.append(assembler)
            checker: Any = ray.remote(ShardChecker).options(
                num_cpus=1, scheduling_strategy="SPREAD"
            )
            actors.extend(
                checker.remote(scorer_factory, self._plan, per_worker, group_by, verifier_factory)
                for _ in range(used)
            )
            self._join(assembler, actors[1:], in_flight, watch)
        finally:
            _stop(actors, in_flight, watch)

    def _join(
        self,
        assembler: Any,  # noqa: ANN401 - a Ray actor handle
        actors: Sequence[Any],
        in_flight: dict[Any, Any],
        watch: NodeWatch,
    ) -> None:
        """Merge each shard's summary in input order and have its parts appended."""
        import ray  # noqa: PLC0415

        appended = []
        waiting: dict[int, ShardSummary] = {}
        turn = 0
        for summary in self._summaries(actors, in_flight, watch):
            self._take_page(summary)
            waiting[summary.position] = summary
            while turn in waiting:
                ready = waiting.pop(turn)
                self.tally.merge(ready.tally)
                self.support = merged(self.support, ready.support)
                _add_counts(self.junit_counts, ready.junit_counts or {})
                joined = assembler.append.remote(turn, ready.parts)
                in_flight[joined] = turn
                appended.append(joined)
                if self._on_shard is not None:
                    self._on_shard(_facts(ready))
                turn += 1
        watch.wait(appended)
        for joined in appended:
            ray.get(joined)
            del in_flight[joined]
        finished = assembler.finish.remote()
        in_flight[finished] = None
        watch.wait([finished])
        self.assembled = ray.get(finished)
        del in_flight[finished]

    def _summaries(
        self, actors: Sequence[Any], in_flight: dict[Any, Any], watch: NodeWatch
    ) -> Iterator[ShardSummary]:
        """Each shard's summary as it is done; two shards queued per worker at most."""
        import ray  # noqa: PLC0415
        import ray.exceptions  # noqa: PLC0415

        pending: dict[Any, Any] = {}
        todo = iter(enumerate(self._shards))

        def submit(actor: Any) -> None:  # noqa: ANN401 - a Ray actor handle
            step = next(todo, None)
            if step is not None:
                index, shard = step
                ref = actor.check.remote(shard._asdict(), index)
                pending[ref] = actor
                in_flight[ref] = index

        for actor in actors:
            submit(actor)
            submit(actor)
        while pending:
            (done,) = watch.wait(list(pending), num_returns=1)[:1]
            actor = pending.pop(done)
            index = in_flight.pop(done)
            try:
                summary = ray.get(done)
            except ray.exceptions.RayActorError:
                raise lost_shard(index) from None
            submit(actor)
            yield summary

    def _take_page(self, summary: ShardSummary) -> None:
        """Keep the run's best rows for the page by (tier, line): the page's choice."""
        merged = sorted([*self.page, *summary.page], key=lambda c: (c.tier, c.line))
        self.page = merged[: self._limit]

    def page_rows(self) -> list[CheckedRow]:
        """The rows the page shows, in input order (only these are unpickled)."""
        ordered = sorted(self.page, key=lambda candidate: candidate.line)
        return [pickle.loads(candidate.row) for candidate in ordered]  # noqa: S301 - our workers'


_DRAIN_SECONDS: Final = 5.0
"""How long a failed run waits for its killed actors' results before it goes on."""


def _stop(actors: Sequence[Any], in_flight: Mapping[Any, Any], watch: NodeWatch) -> None:
    """Kill the run's actors and collect what they still owed, if the node answers.

    Each result is fetched and its error dropped, so that Ray does not log a failed
    result no one asked for (its message could name a path). On a node that does not
    answer nothing is asked of Ray, which could block.
    """
    import ray  # noqa: PLC0415

    if not actors or not watch.answering():
        return
    for actor in actors:
        with contextlib.suppress(Exception):
            ray.kill(actor, no_restart=True)
    refs = list(in_flight)
    if not refs:
        return
    with contextlib.suppress(Exception):
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=_DRAIN_SECONDS)
        for ref in ready:
            with contextlib.suppress(Exception):
                ray.get(ref)


def _facts(summary: ShardSummary) -> ShardFacts:
    return ShardFacts(
        position=summary.position,
        node_id=summary.node_id,
        pid=summary.pid,
        lines=summary.lines,
        input_bytes=summary.input_bytes,
        parts={name: (part.size, part.sha256) for name, part in summary.parts.items()},
        page_rows=len(summary.page),
        page_bytes=sum(len(candidate.row) for candidate in summary.page),
        cpu_seconds=summary.cpu_seconds,
        max_rss_kib=summary.max_rss_kib,
    )


def _add_counts(into: dict[str, int], counts: Mapping[str, int]) -> None:
    for key, value in counts.items():
        into[key] = into.get(key, 0) + value
