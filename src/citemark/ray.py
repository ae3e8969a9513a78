"""``citemark check`` on Ray Data: one record and an error column per row, on many workers.

Needs the ``ray`` extra (``pip install citemark[ray]``); importing ``citemark`` never
imports ray, this module does when a function here runs. Call ``ray.init`` first
(``ray.init(address="auto")`` or ``ray.init(address="ray://HEAD:10001")`` on a cluster).

- `CheckBatch`: the callable class for ``Dataset.map_batches``; it builds the scorer
  once per worker and returns, for every input row, the ``rows.jsonl`` record and an
  ``error`` column.
- `read_jsonl`, `read_parquet`: datasets whose every row carries its input ``line``.
- `check_dataset`: a whole check over such a dataset, returning the summary
  ``report.json`` holds.
- `run_ray_check`: the same outputs as ``citemark check`` (``citemark check --engine ray``).
- `ScorerSpec`: a picklable recipe for the scorer each worker builds.
- `JudgeVerifierSpec`: the same for a ``judge`` support verifier (``--verifier judge``),
  over a chat built from a `ScorerSpec`.
- `start_ray`: ``ray.init`` with Ray's own logs silent unless asked for.
- `ShardFacts`: what ``run_ray_check`` learns of each shard (its node, parts, worker usage).
- `split_concurrency`: how a global concurrency is split across workers.
- `RayRunError`: what ``run_ray_check`` raises when a worker or the node is lost.

See ``docs/scale.md``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from citemark._contract.errors import RayRunError
from citemark._pipelines.scale.engine import (
    CheckBatch,
    JudgeVerifierSpec,
    ScorerSpec,
    ShardFacts,
    check_dataset,
    run_ray_check,
    split_concurrency,
    start_ray,
)
from citemark._pipelines.scale.engine import _dataset as _shards_dataset
from citemark._pipelines.scale.plan import plan_jsonl, plan_parquet
from citemark._public import publish

if TYPE_CHECKING:
    from ray.data import Dataset

__all__ = [
    "CheckBatch",
    "JudgeVerifierSpec",
    "RayRunError",
    "ScorerSpec",
    "ShardFacts",
    "check_dataset",
    "read_jsonl",
    "read_parquet",
    "run_ray_check",
    "split_concurrency",
    "start_ray",
]


def read_jsonl(path: str | os.PathLike[str]) -> Dataset:
    """A dataset of a JSONL file's lines: ``line`` (1-based) and ``raw`` (the line's bytes).

    The file is cut into line-aligned byte ranges here, and each range is read by a
    Ray task, so every worker must be able to open ``path`` (a shared file system on a
    cluster).
    """
    shards, _ = plan_jsonl(path)
    return _shards_dataset(shards)


def read_parquet(path: str | os.PathLike[str]) -> Dataset:
    """A dataset of a Parquet file's rows: ``line`` (the 1-based row number) and ``raw`` (JSON).

    Each row group is read by one Ray task; a row's columns (``answer``, ``question``,
    ``id``, ``sources`` or ``context``) become the JSON object ``citemark check``
    reads, with null columns left out.
    """
    shards, _ = plan_parquet(os.fspath(path))
    return _shards_dataset(shards)


publish(globals(), __name__, __all__)
