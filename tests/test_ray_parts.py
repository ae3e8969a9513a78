"""The Ray engine's driver side without Ray: shard tallies merge to one pass's, parts folders.

A killed Ray run's parts folder is removed by the next run in its folder, local or
Ray, only when no live run holds its lock, and ``check_output_set`` names it.

The driver merges each shard's ``Tally`` in input order; the merged summary must be
the one a single pass over the same rows keeps, groups past the first hundred in
``(other)`` and the first hundred malformed lines included.
"""

from __future__ import annotations

import asyncio
import copy
import fcntl
import hashlib
import itertools
import json

import pytest

from citemark import CitationScorer
from citemark._pipelines.check.groups import MAX_GROUPS, OTHER_GROUP
from citemark._pipelines.check.output_set import ArtifactProblem, check_output_set
from citemark._pipelines.check.run import run_check
from citemark._pipelines.check.tally import MAX_MALFORMED_LISTED, Tally
from citemark._pipelines.readers.citemark_rows import CheckRow, RowOptions, parse_row
from citemark._pipelines.scale.parts import (
    PARTS_PREFIX,
    Assembler,
    PartFacts,
    PartMismatchError,
    leftover_parts,
    parts_folder,
    remove_dead_parts,
)
from citemark._pipelines.scale.shards import score_rows, shard_tally

CONTEXT = "[doc-1] The late fee is 5%.\n[doc-2] Members pay no late fee.\n"


def rows(count: int) -> list[bytes]:
    """Rows in 130 groups (first seen in input order), some fabricated, some malformed."""
    out = []
    for n in range(count):
        if n % 9 == 4:
            out.append(b"{not json\n")
            continue
        label = "doc-7" if n % 5 == 0 else "doc-1"
        row = {
            "id": f"q{n}",
            "g": f"group-{n % 130}",
            "answer": f"Fee [{label}].",
            "context": CONTEXT,
        }
        out.append(json.dumps(row).encode() + b"\n")
    return out


def tally_of(lines: list[bytes], first_line: int, scorer: CitationScorer, tally: Tally) -> Tally:
    """``tally`` after one pass over ``lines`` (a worker's pass over its shard)."""
    parsed = [parse_row(first_line + k, raw, "g", RowOptions()) for k, raw in enumerate(lines)]
    items = [item for item in parsed if item is not None]
    checked = [item for item in items if isinstance(item, CheckRow)]
    with asyncio.Runner() as runner:
        scores, _ = score_rows(scorer, runner, checked, 8, None)
    tally.add_scores(scores)
    by_line = dict(zip((row.line for row in checked), scores, strict=True))
    for item in items:
        if isinstance(item, CheckRow):
            tally.add_grouped(item, by_line[item.line])
        else:
            tally.add_malformed(item)
    return tally


def test_shard_tallies_merged_in_order_equal_one_pass():
    """Groups past the first 100 fall in (other), as in one pass; malformed lines listed alike."""
    scorer = CitationScorer()
    lines = rows(1200)
    whole = tally_of(lines, 1, scorer, Tally("g")).summary(scorer)
    cuts = [0, 70, 71, 400, 980, 1200]  # uneven shards, one of a single row
    merged = Tally("g")
    for start, end in itertools.pairwise(cuts):
        merged.merge(tally_of(lines[start:end], start + 1, scorer, shard_tally("g")))
    summary = merged.summary(scorer)
    assert MAX_GROUPS + 1 == len(summary.groups)
    assert OTHER_GROUP in summary.groups
    assert MAX_MALFORMED_LISTED == len(summary.malformed_lines) < summary.malformed
    assert whole.model_dump() == summary.model_dump()
    assert list(whole.citations) == list(summary.citations)  # first-seen order kept


def fields(value: object) -> object:
    """Every field of a tally, its group and cause tallies' included, dicts in their order."""
    if isinstance(value, dict):
        return [(key, fields(inner)) for key, inner in value.items()]
    if isinstance(value, (list, tuple)):
        return [fields(inner) for inner in value]
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if type(value).__module__.startswith("citemark._pipelines.check."):
        return {name: fields(inner) for name, inner in vars(value).items()}
    return value


TWO_SOURCES = [
    {"text": "The late fee is 5%.", "doc_id": "fees"},
    {"text": "Members pay no late fee.", "doc_id": "members"},
]
ODD_ROWS = [
    {"answer": "Fee [0].", "sources": TWO_SOURCES},  # numbered from zero, perhaps
    {"answer": "Fee [2].", "sources": TWO_SOURCES},  # the last source's number
    {"answer": "No citation at all.", "sources": TWO_SOURCES},
    {"answer": "Fee [1].", "sources": [{"text": "https://example.com/fees", "doc_id": "url"}]},
    {"answer": "Fee [^1] and [1].", "sources": TWO_SOURCES},  # an unrecognized marker
    {"answer": "Fee [1].", "sources": TWO_SOURCES, "unassessed": "no_retrieval_recorded"},
    {
        "provider": "anthropic",
        "provider_response": {
            "role": "assistant",
            "content": [
                {
                    "type": "text",
                    "text": "The fee is 5%.",
                    "citations": [
                        {
                            "type": "char_location",
                            "cited_text": "The late fee is 5%.",
                            "document_index": 0,
                            "document_title": None,
                            "start_char_index": 0,
                            "end_char_index": 19,
                        }
                    ],
                }
            ],
        },
        "documents": [{"id": "fees", "text": "The late fee is 5%."}],
    },
]


def test_a_tally_merged_into_an_empty_one_keeps_every_field():
    """Each field a tally counts is merged: a field `Tally.merge` forgets stays empty here.

    Every field but the judge's is set by these rows (no judge is called).
    """
    scorer = CitationScorer()
    odd = [json.dumps({"g": "odd", **row}).encode() + b"\n" for row in ODD_ROWS]
    one_pass = tally_of(rows(90) + odd, 1, scorer, Tally("g"))  # under MAX_GROUPS
    unset = sorted(name for name, value in vars(one_pass).items() if not value)
    assert [name for name in unset if not name.startswith("judge_")] == []
    merged = Tally("g")
    merged.merge(copy.deepcopy(one_pass))
    assert fields(one_pass) == fields(merged)


def test_merging_tallies_of_other_groupings_is_refused():
    with pytest.raises(ValueError, match="group by one field"):
        Tally("g").merge(Tally(None))


def test_a_dead_runs_parts_folder_is_removed_a_live_one_kept(tmp_path):
    dead = tmp_path / f"{PARTS_PREFIX}dead"
    dead.mkdir()
    (dead / ".lock").write_bytes(b"")
    (dead / "0000000.rows.jsonl").write_bytes(b"{}\n")
    live = tmp_path / f"{PARTS_PREFIX}live"
    live.mkdir()
    with (live / ".lock").open("wb") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        with parts_folder(tmp_path, "mine") as folder:
            assert folder.is_dir()
            assert not dead.exists()
            assert live.exists()
        assert not folder.exists()


def test_the_assembler_joins_parts_in_order_and_refuses_a_changed_one(tmp_path):
    target = tmp_path / "joined"
    target.write_bytes(b"")
    parts = []
    for k, data in enumerate((b"a\n", b"bb\n")):
        path = tmp_path / f"part{k}"
        path.write_bytes(data)
        parts.append(PartFacts(str(path), len(data), hashlib.sha256(data).hexdigest()))
    assembler = Assembler({"out": str(target)})
    assembler.append(0, {"out": parts[0]})
    assembler.append(1, {"out": parts[1]})
    size, digest = assembler.finish()["out"]
    assert (b"a\nbb\n", 5) == (target.read_bytes(), size)
    assert hashlib.sha256(b"a\nbb\n").hexdigest() == digest
    assert not any(tmp_path.glob("part*"))  # joined parts are removed
    changed = tmp_path / "changed"
    changed.write_bytes(b"c\n")
    other = Assembler({"out": str(target)})
    with pytest.raises(PartMismatchError, match="part 0 of out"):
        other.append(0, {"out": PartFacts(str(changed), 2, "0" * 64)})
    other.finish()


def dead_parts_folder(out, run_id="k1ll3d"):
    """What a Ray run killed mid-run leaves: its parts folder, lock free, parts inside."""
    folder = out / f"{PARTS_PREFIX}{run_id}"
    folder.mkdir(parents=True)
    (folder / ".lock").write_bytes(b"")
    (folder / "0000003.rows.jsonl").write_bytes(b'{"line": 9}\n')
    return folder


def test_a_local_run_removes_a_dead_ray_runs_parts_folder_and_keeps_a_live_one(tmp_path):
    """A later local check removes the folder no live run holds; a live run's stays."""
    runs = tmp_path / "runs.jsonl"
    runs.write_text(json.dumps({"answer": "Fee [doc-1].", "context": CONTEXT}) + "\n")
    out = tmp_path / "out"
    dead = dead_parts_folder(out)
    live = out / f"{PARTS_PREFIX}live"
    live.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_bytes(b"not ours")
    (out / f"{PARTS_PREFIX}link").symlink_to(elsewhere)
    with (live / ".lock").open("wb") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        run_check(runs, out, CitationScorer())
        assert not dead.exists()
        assert live.is_dir()
        found = check_output_set(out)
        assert found.whole, found.problems  # a running run's folder is not a leftover
    assert (elsewhere / "keep.txt").exists()  # a link of that naming is not followed
    assert [ArtifactProblem(name=live.name, reason="leftover_parts")] == list(
        check_output_set(out).problems
    )


def test_check_output_set_reports_a_dead_ray_runs_parts_folder(tmp_path):
    """A whole set beside a killed Ray run's parts folder is not whole: the folder is named."""
    runs = tmp_path / "runs.jsonl"
    runs.write_text(json.dumps({"answer": "Fee [doc-1].", "context": CONTEXT}) + "\n")
    out = tmp_path / "out"
    run_check(runs, out, CitationScorer())
    assert check_output_set(out).whole
    dead = dead_parts_folder(out)
    found = check_output_set(out)
    assert not found.whole
    assert [ArtifactProblem(name=dead.name, reason="leftover_parts")] == list(found.problems)
    assert dead.exists()  # reported, not removed: check_output_set only reads
    (dead / ".lock").unlink()  # a removal cut short: no lock left, still a dead run's
    assert ["leftover_parts"] == [p.reason for p in check_output_set(out).problems]


def test_a_runs_own_parts_folder_is_never_taken_for_a_dead_ones(tmp_path):
    """While the run lasts its folder is neither reported nor removed; at its end nothing is left.

    Nothing is left under the names the folder passes through either (made, then
    renamed into place once locked, then renamed away before it is removed).
    """
    with parts_folder(tmp_path, "mine") as folder:
        assert [] == leftover_parts(tmp_path)
        assert 0 == remove_dead_parts(tmp_path)
        assert folder.is_dir()
    assert [] == sorted(p.name for p in tmp_path.iterdir())


def test_a_folder_being_made_is_kept_until_its_lock_is_named(tmp_path):
    """A folder whose lock is not yet named may be a starting run's: kept, not reported."""
    starting = tmp_path / ".citemark-making-parts.starting"
    starting.mkdir()
    (starting / ".lock.new").write_bytes(b"")
    killed = tmp_path / ".citemark-making-parts.killed"
    killed.mkdir()
    (killed / ".lock").write_bytes(b"")  # named, so locked once; free now: its run died
    assert [killed.name] == leftover_parts(tmp_path)
    assert 1 == remove_dead_parts(tmp_path)
    assert starting.is_dir()
    assert not killed.exists()
