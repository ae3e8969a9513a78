"""Benchmark: the deterministic check, local single process vs Ray Data with 2 workers.

Generates N rows (default 1,000,000; bench/check.py's generator), then in one run:
the local engine (``citemark check``) and ``--engine ray --ray-workers 2``, each in its
own subprocess, each on the same file. Prints wall time, rows/s, the ratio
(ray / local), whether ``rows.jsonl`` is byte-identical (apart from the run id every
line names), and the driver's peak RSS (``ru_maxrss`` of the waited child). Ray's workers are not children of the command, so
their peak memory is not measured here.

Then a replay: a judged 10,000-row check against a loopback judge (tests/fake_openai.py),
and the same check replayed with ``--replay-judge``: rows/s of each next to the
deterministic check of the same rows, and whether ``rows.jsonl`` is byte-identical
apart from the run id.

Run: ``.venv/bin/python bench/ray_check.py`` (``--rows 200000`` for a shorter run).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from check import generate
from fake_openai import FakeOpenAI

REPLY = json.dumps(
    {
        "score": 3,
        "explanation": "Stated.",
        "verdicts": [{"occurrence": 1, "outcome": "supported", "context_span": "late fee is 5%"}],
    }
)


def timed(args: list[str]) -> tuple[float, int]:
    """Run the citemark CLI; return the wall seconds and the child's peak RSS in KiB."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "citemark", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in {0, 1}:
        msg = f"citemark {' '.join(args[:1])} failed"
        raise SystemExit(msg)
    return elapsed, usage.ru_maxrss


def rows_without_run_id(folder: Path) -> bytes:
    """``rows.jsonl`` with its run's id (which every line names) blanked out."""
    run_id = json.loads((folder / "report.json").read_text(encoding="utf-8"))["run_id"]
    return (folder / "rows.jsonl").read_bytes().replace(run_id.encode("ascii"), b"")


def ray_vs_local(rows: int, tmp: Path) -> None:
    data = tmp / "rows.jsonl"
    generate(data, rows)
    local_s, local_rss = timed(["check", str(data), "--out", str(tmp / "local")])
    ray_s, ray_rss = timed(
        ["check", str(data), "--out", str(tmp / "ray"), "--engine", "ray", "--ray-workers", "2"]
    )
    same = rows_without_run_id(tmp / "local") == rows_without_run_id(tmp / "ray")
    print(f"deterministic check, {rows:,} rows, {os.cpu_count()} cores")
    print(
        f"  local : {local_s:7.1f} s  {rows / local_s:9,.0f} rows/s  peak RSS {local_rss / 1024:6.0f} MiB"
    )
    print(
        f"  ray x2: {ray_s:7.1f} s  {rows / ray_s:9,.0f} rows/s  driver peak RSS {ray_rss / 1024:6.0f} MiB"
    )
    print(f"  ratio ray/local rows/s: {local_s / ray_s:.2f}; rows.jsonl identical: {same}")


def replay(rows: int, tmp: Path) -> None:
    data = tmp / "judged.jsonl"
    context = "[doc-1] The late fee is 5% of the unpaid balance.\n"
    with data.open("w") as out:
        for n in range(rows):
            out.write(
                json.dumps(
                    {"id": f"q{n}", "answer": f"The fee is 5% [doc-1] ({n}).", "context": context}
                )
                + "\n"
            )
    plain_s, _ = timed(["check", str(data), "--out", str(tmp / "plain")])
    with FakeOpenAI(lambda _prompt: REPLY, latency=0.01) as server:
        judged_s, _ = timed(
            [
                "check",
                str(data),
                "--out",
                str(tmp / "judged"),
                "--judge-model",
                "judge-1",
                "--judge-base-url",
                server.base_url,
            ]
        )
    replay_s, _ = timed(
        ["check", str(data), "--out", str(tmp / "replayed"), "--replay-judge", str(tmp / "judged")]
    )
    same = rows_without_run_id(tmp / "judged") == rows_without_run_id(tmp / "replayed")
    print(f"replay, {rows:,} judged rows (loopback judge, 10 ms per reply, concurrency 32)")
    print(f"  deterministic check: {rows / plain_s:9,.0f} rows/s")
    print(f"  judged (live)      : {rows / judged_s:9,.0f} rows/s")
    print(
        f"  replayed           : {rows / replay_s:9,.0f} rows/s ({plain_s / replay_s:.2f}x the deterministic check)"
    )
    print(f"  rows.jsonl identical to the judged run: {same}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--replay-rows", type=int, default=10_000)
    parser.add_argument("--skip-ray", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        replay(args.replay_rows, Path(tmp))
        if not args.skip_ray:
            ray_vs_local(args.rows, Path(tmp))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
