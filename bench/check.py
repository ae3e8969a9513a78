"""Benchmark for ``citemark check`` without a judge (SPEC §7, issue 5): rows/s and peak RSS.

Generates 10,000 and 1,000,000 rows into temporary JSONL files (half with a list of
sources, half with a labelled context; about one row in eight cites a marker or
label that names nothing), runs the real ``citemark check`` entry point on each in
its own subprocess, and prints for each: wall time, rows per second, and the child's
peak resident set size (``ru_maxrss`` of the waited child, from ``os.wait4``).

Target: the peak RSS over 1,000,000 rows is at most 1.5x the peak over 10,000 rows,
which is what "check streams its input in constant memory" means in practice. The
1,000,000-row run takes a minute or two and writes about 1 GB of ``rows.jsonl``
into the temporary folder, which is deleted afterwards.

Run: ``.venv/bin/python bench/check.py`` (``--rows 10000 200000`` for other sizes).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_RATIO = 1.5
PASSAGES = [
    "The late fee is 5% of the unpaid balance.",
    "Members of the credit union pay no late fee.",
    "Notices are sent by mail within ten days.",
    "A dispute must be raised within sixty days of the statement.",
]


def generate(path: Path, rows: int, seed: int = 7) -> None:
    """Write ``rows`` rows to ``path``, printing progress every 100,000."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        for i in range(rows):
            out.write(json.dumps(_row(i, rng)) + "\n")
            if (i + 1) % 100_000 == 0:
                print(f"  generated {i + 1:,} rows", flush=True)


def _row(i: int, rng: random.Random) -> dict[str, object]:
    fabricated = rng.random() < 0.125
    if i % 2 == 0:
        sources = []
        offset = 0
        for k, text in enumerate(PASSAGES, start=1):
            body = f"{text} (record {i})"
            sources.append(
                {
                    "text": body,
                    "doc_id": f"policy-{k}",
                    "chunk_id": f"policy-{k}#{i % 97}",
                    "start": offset,
                    "end": offset + len(body),
                    "uri": f"policies/policy-{k}.md",
                }
            )
            offset += len(body) + 1
        first, second = rng.randint(1, 4), 9 if fabricated else rng.randint(1, 4)
        answer = f"The late fee is 5% [{first}]. Disputes take sixty days [{second}]."
        return {
            "id": f"row-{i}",
            "question": "What are the fees?",
            "answer": answer,
            "sources": sources,
        }
    context = "\n".join(f"[doc-{k}] {text} (record {i})" for k, text in enumerate(PASSAGES, 1))
    label = "doc-9" if fabricated else f"doc-{rng.randint(1, 4)}"
    answer = f"Members pay no late fee [doc-2]. Notices go by mail [{label}]."
    return {"id": i, "question": "Who pays?", "answer": answer, "context": context}


def measure(runs: Path, out: Path) -> tuple[float, int, int]:
    """Run ``citemark check`` once; return wall seconds, exit code and peak RSS in bytes."""
    command = [sys.executable, "-m", "citemark", "check", str(runs), "--out", str(out), "--json"]
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    stdout, stderr = child.communicate()
    if child.returncode != 0:
        sys.stderr.write(stderr.decode("utf-8", "replace"))
        msg = f"citemark check exited {child.returncode}"
        raise SystemExit(msg)
    summary = json.loads(stdout)["check"]
    print(
        f"  rows {summary['rows']:,}: passed {summary['passed']}, failed {summary['failed']}, "
        f"un-assessed {summary['unassessed']}, malformed {summary['malformed']}",
        flush=True,
    )
    # ru_maxrss is in kilobytes on Linux (bytes on macOS).
    scale = 1 if sys.platform == "darwin" else 1024
    return elapsed, child.returncode, usage.ru_maxrss * scale


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 1_000_000])
    args = parser.parse_args()
    peaks: dict[int, int] = {}
    with tempfile.TemporaryDirectory(prefix="citemark-bench-check-") as folder:
        root = Path(folder)
        for rows in args.rows:
            runs = root / f"runs-{rows}.jsonl"
            print(f"generating {rows:,} rows", flush=True)
            generate(runs, rows)
            size = runs.stat().st_size
            print(f"checking {rows:,} rows ({size / 1e6:.1f} MB)", flush=True)
            elapsed, _, peak = measure(runs, root / f"out-{rows}")
            peaks[rows] = peak
            print(
                f"check {rows:>9,} rows: {elapsed:7.1f} s, {rows / elapsed:8,.0f} rows/s, "
                f"peak RSS {peak / 2**20:6.1f} MiB",
                flush=True,
            )
            runs.unlink()
            for name in ("rows.jsonl", "report.html", "report.json"):
                (root / f"out-{rows}" / name).unlink(missing_ok=True)
    if len(peaks) >= 2:
        small, large = min(peaks), max(peaks)
        ratio = peaks[large] / peaks[small]
        verdict = "within" if ratio <= TARGET_RATIO else "OVER"
        print(
            f"peak RSS ratio {large:,} / {small:,} rows: {ratio:.2f}x "
            f"({verdict} the {TARGET_RATIO}x target)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
