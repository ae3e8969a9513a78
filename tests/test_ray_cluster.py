"""The Ray engine on a simulated two-node cluster: shards on both nodes, the local outputs.

Two Ray nodes on this machine (``ray.cluster_utils.Cluster``, one CPU each) run one
worker each; the driver receives only per-shard summaries. Every output must be the
local engine's, byte for byte, apart from the run id (and the time each run started).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning:ray"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]

from fake_openai import FakeOpenAI  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402
from ray_sockets import closing_ray_sockets  # noqa: E402

from citemark import CitationScorer, OpenAIChat  # noqa: E402
from citemark._pipelines.check.run import run_check  # noqa: E402
from citemark._pipelines.scale.parts import PARTS_PREFIX  # noqa: E402
from citemark.ray import ScorerSpec, run_ray_check  # noqa: E402
from citemark.reports import check_output_set  # noqa: E402

CONTEXT = "[doc-1] The late fee is 5% of the unpaid balance.\n[doc-2] Members pay no late fee.\n"
REPLY = json.dumps(
    {
        "score": 3,
        "explanation": "Stated.",
        "verdicts": [{"occurrence": 1, "outcome": "supported", "context_span": "late fee is 5%"}],
    }
)


def lines() -> list[str]:
    """Rows over three groups, fabrications, malformed and blank lines, a bare CR."""
    rows = []
    for number in range(1, 91):
        label = "doc-9" if number % 7 == 0 else "doc-1"
        row = {
            "id": f"q{number}",
            "model": f"m{number % 3}",
            "answer": f"Fee {number} [{label}].",
            "context": CONTEXT,
        }
        text = json.dumps(row)
        if number == 20:
            # JSON whitespace may be a bare carriage return: one line, not two.
            text = text.replace(', "model"', ',\r"model"')
        rows.append(text)
        if number % 30 == 0:
            rows.extend(["{not json", ""])
    return rows


@pytest.fixture(scope="module")
def two_nodes():
    with closing_ray_sockets():
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
        cluster = Cluster(
            initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}
        )
        cluster.add_node(num_cpus=1)
        ray.init(address=cluster.address, log_to_driver=False, logging_level="ERROR")
        cluster.wait_for_nodes()
        yield cluster
        ray.shutdown()
        cluster.shutdown()


def without_run(folder: Path, name: str) -> bytes:
    """A file of a run with its run id (and its start time, where it names one) blanked."""
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    data = (folder / name).read_bytes().replace(report["run_id"].encode("ascii"), b"")
    data = re.sub(rb'timestamp="[^"]*"', b"", data)
    stamp = report["created_at"][:19].encode("ascii")
    return data.replace(stamp, b"")


def test_two_nodes_score_shards_and_write_the_local_outputs(two_nodes, tmp_path):
    """Shards are scored on both nodes; every file equals the local engine's."""
    runs = tmp_path / "runs.jsonl"
    runs.write_text("\n".join(lines()) + "\n", encoding="utf-8")
    with FakeOpenAI(lambda _prompt: REPLY) as server:
        chat = OpenAIChat(server.base_url, "judge-1", "key")
        local = run_check(
            runs,
            tmp_path / "local",
            CitationScorer(chat, min_sentence_coverage=0.5),
            group_by="model",
            formats=["junit"],
        )
        spec = ScorerSpec(
            judge_model="judge-1",
            judge_base_url=server.base_url,
            judge_api_key="key",
            min_sentence_coverage=0.5,
        )
        shards = []
        remote = run_ray_check(
            runs,
            tmp_path / "ray",
            spec,
            workers=2,
            concurrency=4,
            shard_bytes=600,
            group_by="model",
            formats=["junit"],
            on_shard=shards.append,
        )
    nodes = {node["NodeID"] for node in ray.nodes() if node["Alive"]}
    assert 2 == len(nodes)
    assert nodes == {shard.node_id for shard in shards}  # each node scored shards
    assert list(range(len(shards))) == [shard.position for shard in shards]
    assert len(shards) > 10
    assert sum(shard.lines for shard in shards) == len(lines())
    assert runs.stat().st_size == sum(shard.input_bytes for shard in shards)
    # The page rows are the only row data the driver received: at most the page per shard.
    assert all(shard.page_rows <= 500 for shard in shards)
    names = ["rows.jsonl", "judge-calls.jsonl", "report.junit.xml", "report.html"]
    assert set(names) <= set(remote.summary.files)
    for name in names:
        assert without_run(tmp_path / "local", name) == without_run(tmp_path / "ray", name), name
    assert local.report.input_sha256 == remote.report.input_sha256
    assert local.summary.model_dump(exclude={"files"}) == remote.summary.model_dump(
        exclude={"files"}
    )
    assert 0 < remote.summary.judge_calls == local.summary.judge_calls
    assert ["m0", "m1", "m2"] == sorted(remote.summary.groups)
    assert (90, 3) == (remote.summary.rows, remote.summary.malformed)
    for run in (local, remote):
        assert check_output_set(run.report_path.parent).whole
    assert not list((tmp_path / "ray").glob(".*"))  # no part, no temporary left
    assert not list((tmp_path / "ray").glob(PARTS_PREFIX + "*"))
