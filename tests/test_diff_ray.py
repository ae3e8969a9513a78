"""The ``id_scope`` mark through the Ray engine (issue 35, item 2).

``citemark check --engine ray`` writes ``rows.jsonl`` from its workers' shards: a
row whose id names one run keeps ``"id_scope": "run"`` there as the local engine
writes it, so two Ray runs of a recorded pipeline diff row by row, by question.
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING

import pytest

ray = pytest.importorskip("ray")

# Ray Data's own internals raise DeprecationWarnings about its settings.
pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning:ray"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]

from ray_sockets import local_ray  # noqa: E402

from citemark import CitationScorer  # noqa: E402
from citemark._pipelines.check.run import run_check  # noqa: E402
from citemark.diff import compare_runs  # noqa: E402
from citemark.ray import ScorerSpec, run_ray_check  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

CONTEXT = "[doc-1] The late fee is 5% of the unpaid balance.\n[doc-2] Members pay no late fee.\n"


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    with local_ray(__name__):
        yield


def recorded_day(path: Path, broken: int) -> Path:
    """Twelve recorded rows, fresh run ids; row ``broken`` cites a label it was not given."""
    rows = []
    for number in range(1, 13):
        label = "doc-9" if number == broken else "doc-1"
        rows.append(
            {
                "id": str(uuid.uuid4()),
                "id_scope": "run",
                "question": f"Question {number}: the fee?",
                "answer": f"Fee {number} [{label}].",
                "context": CONTEXT,
            }
        )
        if number % 5 == 0:  # a row whose id is the dataset's own
            rows[-1] = {k: v for k, v in rows[-1].items() if k != "id_scope"} | {"id": f"d{number}"}
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_ray_runs_keep_the_mark_and_diff_by_question(cluster, tmp_path):
    """The Ray engine writes the mark as the local engine does; two Ray days compare by question."""
    monday = recorded_day(tmp_path / "monday.jsonl", broken=3)
    tuesday = recorded_day(tmp_path / "tuesday.jsonl", broken=8)
    spec = ScorerSpec()
    for name, data in (("monday", monday), ("tuesday", tuesday)):
        run_ray_check(data, tmp_path / name, spec, workers=2, concurrency=2, shard_bytes=400)
    local = run_check(monday, tmp_path / "local", CitationScorer())
    ray_records = [
        json.loads(line) for line in (tmp_path / "monday" / "rows.jsonl").read_text().splitlines()
    ]
    local_records = [
        json.loads(line) for line in (tmp_path / "local" / "rows.jsonl").read_text().splitlines()
    ]
    assert [r.get("id_scope") for r in local_records] == [r.get("id_scope") for r in ray_records]
    assert 10 == sum(r.get("id_scope") == "run" for r in ray_records)
    assert local.report.run_id != ray_records[0]["run_id"]
    diff = compare_runs(tmp_path / "monday", tmp_path / "tuesday")
    # The dataset ids d5 and d10 are shared: those rows by id, the run-id rows by question.
    assert ({"id": 2, "question": 10}, {"old": 10, "new": 10}) == (
        diff.matched_by,
        diff.per_run_ids,
    )
    assert [
        (3, ("violation_resolved", "reason_changed")),
        (8, ("new_violation", "reason_changed")),
    ] == sorted((c.new.line, c.why) for c in diff.changes if c.new is not None)
