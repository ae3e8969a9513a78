"""Benchmark: the deterministic check, local single process vs the Ray engine with 2 workers.

For each row count (default 100,000 and 1,000,000; bench/check.py's generator), in
one run: the local engine (``citemark check``, a subprocess) and the Ray engine
(``run_ray_check`` with 2 workers, in a driver subprocess that starts a local Ray
with `citemark.ray.start_ray`), on the same file. Prints, per count:

- wall time and rows/s of each, and the ratio (Ray / local), both for the whole
  command (Ray's start included) and for ``run_ray_check`` alone;
- the driver's peak RSS (``VmHWM`` of the driver process) and CPU time
  (``getrusage(RUSAGE_SELF)``: the driver process and its threads, not Ray's own
  processes; whole, and within ``run_ray_check``), against the workers' total CPU
  time (each worker reports its own ``getrusage`` in every shard summary);
- each worker's peak RSS (from the same reports: the workers are not children of
  the command);
- the row data through the driver: the pickled page candidates it received
  (at most ``html_rows`` per shard), with the shard count;
- whether ``rows.jsonl`` is byte-identical (apart from the run id every line names).

Then, across counts: the driver's peak RSS at the largest count over the smallest.

Then a replay: a judged 10,000-row check against a loopback judge (tests/fake_openai.py),
and the same check replayed with ``--replay-judge``: rows/s of each next to the
deterministic check of the same rows, and whether ``rows.jsonl`` is byte-identical
apart from the run id.

Run: ``.venv/bin/python bench/ray_check.py`` (``--rows 20000 100000`` for other counts,
``--skip-replay`` to leave the replay out).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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


def rows_without_run_id(folder: Path) -> str:
    """The SHA-256 of ``rows.jsonl`` with its run's id blanked, read a line at a time.

    Streamed, so that this process stays small: a child forked from it would report
    this process's peak as its own ``ru_maxrss`` (Linux keeps it across ``exec``).
    """
    run_id = json.loads((folder / "report.json").read_text(encoding="utf-8"))["run_id"]
    digest = hashlib.sha256()
    with (folder / "rows.jsonl").open("rb") as rows:
        for line in rows:
            digest.update(line.replace(run_id.encode("ascii"), b""))
    return digest.hexdigest()


DRIVER = """
import json, resource, sys, time
from citemark.ray import ScorerSpec, run_ray_check, start_ray
import ray

path, out = sys.argv[1], sys.argv[2]
started = time.perf_counter()
start_ray()
facts = []
began = time.perf_counter()
before = resource.getrusage(resource.RUSAGE_SELF)
run_ray_check(path, out, ScorerSpec(), workers=2, on_shard=facts.append)
checked = time.perf_counter() - began
usage = resource.getrusage(resource.RUSAGE_SELF)
in_check = usage.ru_utime + usage.ru_stime - before.ru_utime - before.ru_stime
# VmHWM: this process's own peak (ru_maxrss would include the parent's, kept across exec).
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
ray.shutdown()
workers = {}
for shard in facts:
    cpu, rss = workers.get(shard.pid, (0.0, 0))
    workers[shard.pid] = (max(cpu, shard.cpu_seconds), max(rss, shard.max_rss_kib))
print(json.dumps({
    "check_s": checked,
    "driver_cpu_s": usage.ru_utime + usage.ru_stime,
    "driver_check_cpu_s": in_check,
    "driver_rss_kib": peak,
    "workers": sorted(workers.values()),
    "shards": len(facts),
    "nodes": len({shard.node_id for shard in facts}),
    "page_bytes": sum(shard.page_bytes for shard in facts),
    "page_rows": sum(shard.page_rows for shard in facts),
}))
"""


def ray_driver(data: Path, out: Path) -> tuple[float, dict[str, Any]]:
    """Run the Ray engine in a driver subprocess; return the wall seconds and its report."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(data), str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    return time.perf_counter() - start, json.loads(done.stdout.strip().splitlines()[-1])


def ray_vs_local(rows: int, tmp: Path) -> int:
    """Measure one row count; return the driver's peak RSS in KiB."""
    data = tmp / f"rows-{rows}.jsonl"
    generate(data, rows)
    local_s, local_rss = timed(["check", str(data), "--out", str(tmp / "local")])
    ray_s, report = ray_driver(data, tmp / "ray")
    same = rows_without_run_id(tmp / "local") == rows_without_run_id(tmp / "ray")
    check_s = float(report["check_s"])
    workers = report["workers"]
    worker_cpu = sum(cpu for cpu, _ in workers)
    driver_cpu = float(report["driver_cpu_s"])
    driver_rss = int(report["driver_rss_kib"])
    print(f"deterministic check, {rows:,} rows, {os.cpu_count()} cores")
    print(
        f"  local : {local_s:7.1f} s  {rows / local_s:9,.0f} rows/s  peak RSS {local_rss / 1024:6.0f} MiB"
    )
    print(
        f"  ray x2: {ray_s:7.1f} s  {rows / ray_s:9,.0f} rows/s (whole command, Ray's start included); "
        f"run_ray_check {check_s:.1f} s, {rows / check_s:,.0f} rows/s"
    )
    print(
        f"  ratio ray/local rows/s: {local_s / ray_s:.2f} (command), {local_s / check_s:.2f} "
        f"(run_ray_check); rows.jsonl identical: {same}"
    )
    in_check = float(report["driver_check_cpu_s"])
    print(
        f"  driver: peak RSS {driver_rss / 1024:.0f} MiB, CPU {driver_cpu:.2f} s = "
        f"{100 * driver_cpu / worker_cpu:.1f} % of the workers' {worker_cpu:.1f} s "
        f"(Python and Ray's start included; in run_ray_check: {in_check:.2f} s = "
        f"{100 * in_check / worker_cpu:.1f} %)"
    )
    print(
        "  workers: "
        + ", ".join(f"CPU {cpu:.1f} s, peak RSS {rss / 1024:.0f} MiB" for cpu, rss in workers)
    )
    print(
        f"  row data through the driver: {report['page_bytes']:,} bytes "
        f"({report['page_rows']:,} pickled page candidates from {report['shards']} shards, "
        f"at most 500 per shard); input {data.stat().st_size:,} bytes"
    )
    return driver_rss


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
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--replay-rows", type=int, default=10_000)
    parser.add_argument("--skip-ray", action="store_true")
    parser.add_argument("--skip-replay", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_replay:
            replay(args.replay_rows, Path(tmp))
        if not args.skip_ray:
            peaks = [ray_vs_local(rows, Path(tmp)) for rows in args.rows]
            if len(peaks) > 1:
                print(
                    f"driver peak RSS at {args.rows[-1]:,} rows / at {args.rows[0]:,} rows: "
                    f"{peaks[-1] / peaks[0]:.2f}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
