"""Ray Data: the same input checked locally and on a local Ray cluster gives the same records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

# Ray Data's own internals raise DeprecationWarnings about its settings.
pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning:ray"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]

from ray_sockets import local_ray  # noqa: E402

from citemark import CitationScorer, ScoreRow  # noqa: E402
from citemark._pipelines.check.run import run_check  # noqa: E402
from citemark.ray import (  # noqa: E402
    CheckBatch,
    ScorerSpec,
    check_dataset,
    read_jsonl,
    run_ray_check,
    split_concurrency,
)
from citemark.reports import check_output_set  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CONTEXT = "[doc-1] The late fee is 5% of the unpaid balance.\n[doc-2] Members pay no late fee.\n"


def lines() -> list[str]:
    rows = []
    for number in range(1, 121):
        label = "doc-9" if number % 7 == 0 else "doc-1"
        rows.append(
            json.dumps(
                {
                    "id": f"q{number}",
                    "model": f"m{number % 3}",
                    "answer": f"Fee {number} [{label}].",
                    "context": CONTEXT,
                }
            )
        )
        if number % 40 == 0:
            rows.extend(["{not json", ""])
    return rows


class Exploding:
    """A scorer factory whose scorer raises on one row, outside the scorer's own guard."""

    def __call__(self) -> CitationScorer:
        return _ExplodingScorer()


class _ExplodingScorer(CitationScorer):
    async def score_many(self, rows, *, concurrency=32):
        rows = list(rows)
        if any("Fee 13 " in row.response for row in rows):
            raise LookupError("boom")
        return await super().score_many(rows, concurrency=concurrency)


@pytest.fixture(scope="module")
def cluster():
    with local_ray(__name__):
        yield


def test_split_concurrency_never_exceeds_the_global_bound():
    """Workers times per-worker calls never exceeds the global concurrency."""
    for total in range(1, 40):
        for workers in range(1, 9):
            used, each = split_concurrency(total, workers)
            assert used * each <= total
            assert used >= 1
            assert each >= 1
    assert (2, 16) == split_concurrency(32, 2)
    assert (3, 1) == split_concurrency(3, 8)


def test_local_and_ray_give_identical_records_and_summaries(cluster, tmp_path):
    """Same input: rows.jsonl byte-identical, summaries (groups included) equal."""
    runs = tmp_path / "runs.jsonl"
    runs.write_text("\n".join(lines()) + "\n", encoding="utf-8")
    # What a killed run left for a format these runs do not write: both engines remove it.
    for folder in ("local", "ray"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / ".report.junit.xml.k1ll3d00.tmp").write_text("<testsu")
    scorer = CitationScorer(min_sentence_coverage=0.5)
    local = run_check(runs, tmp_path / "local", scorer, group_by="model")
    spec = ScorerSpec(min_sentence_coverage=0.5)
    remote = run_ray_check(
        runs, tmp_path / "ray", spec, workers=2, concurrency=4, shard_bytes=300, group_by="model"
    )
    assert ["m0", "m1", "m2"] == list(remote.summary.groups)
    # Each run's lines end with its own run id; the records are otherwise the same bytes.
    assert local.report.run_id != remote.report.run_id
    for folder in ("local", "ray"):  # each a whole set of one run, no temporary left
        assert check_output_set(tmp_path / folder).whole
        assert not list((tmp_path / folder).glob(".*.tmp"))
    local_rows = (tmp_path / "local" / "rows.jsonl").read_bytes()
    assert local_rows.replace(str(local.report.run_id).encode(), b"") == (
        tmp_path / "ray" / "rows.jsonl"
    ).read_bytes().replace(str(remote.report.run_id).encode(), b"")
    assert local.report.input_sha256 == remote.report.input_sha256
    assert local.summary.model_dump(exclude={"files"}) == remote.summary.model_dump(
        exclude={"files"}
    )
    assert (123, 3) == (len(local_rows.splitlines()), remote.summary.malformed)


def test_a_row_that_raises_in_a_worker_is_that_rows_error(cluster, tmp_path):
    """One row's exception becomes its error column; the job and the other rows go on."""
    runs = tmp_path / "runs.jsonl"
    runs.write_text("\n".join(lines()[:30]) + "\n", encoding="utf-8")
    results: dict[int, tuple[dict, object]] = {}

    def keep(checked, columns):
        results[checked.item.line] = (json.loads(columns["record"]), checked)

    summary = check_dataset(read_jsonl(runs), Exploding(), workers=1, concurrency=2, on_row=keep)
    record, _ = results[13]
    assert ("unassessed", "scoring_error", "LookupError") == (
        record["outcome"],
        record["reason"],
        record["details"]["error"],
    )
    assert 30 == summary.rows == len(results)
    assert 1 == summary.reasons.get("scoring_error")
    # The naive batch step, scoring the batch without the per-row guard, raises instead.
    batch = CheckBatch(Exploding())
    try:
        with pytest.raises(LookupError):
            batch._runner.run(batch._scorer.score_many([ScoreRow("Fee 13 [doc-1].", CONTEXT)]))
    finally:
        batch.close()
