"""``check --verifier`` on the Ray engine: a verifier per worker, the local engine's outputs."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning:ray"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]

from ray_sockets import local_ray  # noqa: E402

from citemark import CitationScorer  # noqa: E402
from citemark._pipelines.check.run import run_check  # noqa: E402
from citemark._pipelines.scale.plan import plan_jsonl  # noqa: E402
from citemark._pipelines.scale.shards import RunPlan, ShardChecker  # noqa: E402
from citemark.ray import JudgeVerifierSpec, ScorerSpec, run_ray_check  # noqa: E402
from citemark.verifiers import LexicalVerifier  # noqa: E402

SOURCES = [
    {"doc_id": "tower", "text": "The Eiffel Tower is 330 metres tall and stands in Paris."},
    {"doc_id": "peak", "text": "Mount Everest rises 8849 metres above sea level."},
    {"doc_id": "fruit", "text": "Bananas are berries that grow in tropical climates."},
]
ANSWERS = [
    "The Eiffel Tower is 330 metres tall [1]. Bananas are berries [3].",
    "Mount Everest rises 8849 metres [3].",
    "Bananas grow in tropical climates [3]. Everest is in Paris [1].",
    "Nothing cited here.",
    "A fabricated one [9].",
]


def write_runs(path: Path, rows: int = 60) -> Path:
    lines = [
        json.dumps({"id": f"r{n}", "answer": ANSWERS[n % len(ANSWERS)], "sources": SOURCES})
        for n in range(rows)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def on_ray(runs: Path, out: Path, scorer, verifier_factory):
    """``run_ray_check`` as every test here runs it: 2 workers, small shards."""
    return run_ray_check(
        runs,
        out,
        scorer,
        workers=2,
        concurrency=4,
        shard_bytes=400,
        verifier_factory=verifier_factory,
    )


def figures(summary) -> dict[str, object]:
    """A run's support figures, but how many questions were asked (each shard asks its own)."""
    assert summary.support is not None
    return summary.support.model_dump(exclude={"premises"})


class CountingFactory:
    """Builds a lexical verifier and counts how often it was asked to."""

    def __init__(self) -> None:
        self.built = 0

    def __call__(self) -> LexicalVerifier:
        self.built += 1
        return LexicalVerifier()


@pytest.fixture(scope="module")
def cluster():
    with local_ray(__name__):
        yield


def test_a_worker_builds_its_verifier_once_for_every_shard(cluster, tmp_path):
    """The model is loaded once per worker, never per shard, batch or row.

    The actor's class is driven in this process (it names its Ray node, hence the
    cluster), so the factory's count is readable.
    """
    runs = write_runs(tmp_path / "runs.jsonl")
    shards, _ = plan_jsonl(runs, shard_bytes=400)
    assert len(shards) > 3
    parts = tmp_path / "parts"
    parts.mkdir()
    factory = CountingFactory()
    checker = ShardChecker(CitationScorer, RunPlan(str(parts), "run", 0), 4, None, factory)
    summaries = [checker.check(shard._asdict(), index) for index, shard in enumerate(shards)]
    checker.close()
    assert 1 == factory.built
    assert all(summary.support is not None for summary in summaries)
    assert 60 == sum(summary.support.rows for summary in summaries)  # uncited rows too (ALCE)


def test_local_and_ray_give_the_same_support(cluster, tmp_path):
    """Same input and verifier: rows.jsonl byte-identical, the support summaries equal."""
    runs = write_runs(tmp_path / "runs.jsonl")
    local = run_check(runs, tmp_path / "local", CitationScorer(), verifier=LexicalVerifier())
    remote = on_ray(runs, tmp_path / "ray", ScorerSpec(), LexicalVerifier)
    assert remote.summary.support is not None
    # Every figure is equal; only how many questions were asked differs, as each
    # shard asks its own (the local engine dedupes over a whole chunk).
    assert figures(local.summary) == figures(remote.summary)
    assert 0 < local.summary.support.premises <= remote.summary.support.premises
    local_rows = (tmp_path / "local" / "rows.jsonl").read_bytes()
    remote_rows = (tmp_path / "ray" / "rows.jsonl").read_bytes()
    assert local_rows.replace(local.report.run_id.encode(), b"") == remote_rows.replace(
        remote.report.run_id.encode(), b""
    )
    assert b'"support"' in remote_rows


def test_an_nli_model_on_ray_gives_the_local_figures(cluster, tmp_path):
    """``--verifier nli:PATH`` on Ray: each worker loads the folder; the local engine's rows."""
    from nli_checkpoint import build_checkpoint

    from citemark._judging.verifiers.choose import build_verifier, parse_verifier_spec

    folder = tmp_path / "tiny-nli"
    build_checkpoint(folder, triggers={"tower": "entailment"}, default="not_entailment")
    spec = parse_verifier_spec(f"nli:{folder}")
    runs = write_runs(tmp_path / "runs.jsonl", rows=20)
    local = run_check(runs, tmp_path / "local", CitationScorer(), verifier=build_verifier(spec))
    remote = on_ray(runs, tmp_path / "ray", ScorerSpec(), functools.partial(build_verifier, spec))
    assert remote.summary.support is not None
    assert "nli" == remote.summary.support.verifier["kind"]
    assert figures(local.summary) == figures(remote.summary)
    assert 0 < (remote.summary.support.recall or 0) < 1


def test_a_judge_verifier_on_ray_is_recorded_and_replayed(cluster, tmp_path):
    """``--verifier judge`` on Ray: the local engine's figures, its calls recorded, a replay equal.

    Each worker builds its verifier's chat from the scorer's spec; the entailment
    questions go to a loopback server, and land in judge-calls.jsonl as the local
    engine writes them (no row), so a replay of the Ray run asks no server.
    """
    from fake_openai import FakeOpenAI
    from test_check_verifier import entailment_or_judge

    from citemark import OpenAIChat
    from citemark._judging.verifiers.judge import PROMPT_SHA256, JudgeVerifier
    from citemark.replay import JUDGE_CALLS_NAME

    runs = write_runs(tmp_path / "runs.jsonl", rows=20)
    with FakeOpenAI(entailment_or_judge) as server:
        local = run_check(
            runs,
            tmp_path / "local",
            CitationScorer(OpenAIChat(server.base_url, "m-1")),
            verifier=JudgeVerifier(OpenAIChat(server.base_url, "m-1")),
        )
        spec = ScorerSpec(judge_model="m-1", judge_base_url=server.base_url)
        remote = on_ray(runs, tmp_path / "ray", spec, JudgeVerifierSpec(spec))
    assert remote.summary.support is not None
    assert "judge" == remote.summary.support.verifier["kind"]
    assert figures(local.summary) == figures(remote.summary)
    assert 0 < (remote.summary.support.recall or 0) < 1
    lines = (tmp_path / "ray" / JUDGE_CALLS_NAME).read_text().splitlines()
    asked = [call for call in map(json.loads, lines) if call["prompt_sha256"] == PROMPT_SHA256]
    assert len(asked) == remote.summary.support.premises
    assert all(call["line"] is None for call in asked)
    replay = ScorerSpec(replay_judge=str(tmp_path / "ray"))
    again = on_ray(runs, tmp_path / "again", replay, JudgeVerifierSpec(replay))
    first = (
        (tmp_path / "ray" / "rows.jsonl").read_bytes().replace(remote.report.run_id.encode(), b"")
    )
    second = (tmp_path / "again" / "rows.jsonl").read_bytes()
    assert first == second.replace(again.report.run_id.encode(), b"")


def test_check_dataset_takes_a_verifier_and_gives_the_local_figures(cluster, tmp_path):
    """The Python API over a Dataset: each worker's verifier, the rows' support, the run's means."""
    from citemark.ray import check_dataset, read_jsonl

    runs = write_runs(tmp_path / "runs.jsonl")
    local = run_check(runs, tmp_path / "local", CitationScorer(), verifier=LexicalVerifier())
    records: list[str] = []
    summary = check_dataset(
        read_jsonl(runs),
        CitationScorer,
        workers=1,  # a CPU left for the read tasks (see KNOWN_LIMITATIONS.md)
        concurrency=4,
        batch_size=7,
        verifier_factory=LexicalVerifier,
        on_row=lambda _checked, columns: records.append(columns["record"]),
    )
    assert summary.support is not None
    assert figures(local.summary) == figures(summary)
    local_records = [
        json.loads(line) for line in (tmp_path / "local" / "rows.jsonl").read_text().splitlines()
    ]
    supports = [json.loads(record)["details"].get("support") for record in records]
    assert [row["details"].get("support") for row in local_records] == supports
