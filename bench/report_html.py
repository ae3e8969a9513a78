"""Benchmark for ``report.html`` at scale (issue 12, item 5): its size, and how fast it opens.

Builds a run of ``--rows`` rows (10,000 by default) from the bundled demo rows
(``examples/data/example-runs.jsonl``) repeated with varied ids, checks it with
``--html-rows`` equal to the row count (so the page shows every row), and prints:

- the page's bytes against the bytes of the distinct text it embeds (every row's
  question and answer, each distinct source text once), and their ratio
  (target: at most 1.5);
- how long headless Chromium takes to open the page and run its script to the
  end (the script stamps ``data-ready-ms``, ``performance.now()`` when it is done,
  on the root element; read from ``--dump-dom``), and the wall time of that Chromium
  run next to the wall time of opening a page of one paragraph (the baseline: the
  browser's own start-up), both measured in this process, interleaved
  (target: ready in under 3 s).

Run: ``.venv/bin/python bench/report_html.py`` (``--rows 2000`` for another size).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "data" / "example-runs.jsonl"
TARGET_RATIO = 1.5
TARGET_READY_S = 3.0


def build(path: Path, rows: int) -> tuple[int, int]:
    """Write ``rows`` demo rows to ``path``; return the bytes of distinct text they embed.

    The first figure counts every row's question and answer and each distinct source
    text once (the issue's definition); the second counts each distinct question once
    too, since the page stores a repeated question once.
    """
    demo = [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines()]
    answers = 0
    questions = 0
    distinct: set[str] = set()
    asked: set[str] = set()
    with path.open("w", encoding="utf-8") as out:
        for i in range(rows):
            row = dict(demo[i % len(demo)])
            row["id"] = f"{row.get('id', 'row')}#{i}"
            out.write(json.dumps(row) + "\n")
            answers += len(row["answer"].encode())
            questions += len(row.get("question", "").encode())
            asked.add(row.get("question", ""))
            if isinstance(row.get("context"), str):
                distinct.add(row["context"])
            for source in row.get("sources", []):
                distinct.add(source["text"])
    sources = sum(len(t.encode()) for t in distinct)
    once = sum(len(q.encode()) for q in asked)
    return answers + questions + sources, answers + once + sources


def chromium_run(chromium: str, url: str, profile: Path) -> tuple[float, str]:
    """Open ``url`` headless, dump the DOM; return the wall time and the DOM."""
    began = time.perf_counter()
    done = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return time.perf_counter() - began, done.stdout


def main() -> None:
    """Build, check, measure, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        runs = folder / "runs.jsonl"
        embedded, embedded_once = build(runs, args.rows)
        out = folder / "out"
        began = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "citemark",
                "check",
                str(runs),
                "--out",
                str(out),
                "--html-rows",
                str(args.rows),
                "--json",
            ],
            check=True,
            capture_output=True,
        )
        check_s = time.perf_counter() - began
        page = out / "report.html"
        size = page.stat().st_size
        ratio = size / embedded
        print(f"rows: {args.rows}; check took {check_s:.1f} s")
        print(f"report.html: {size:,} bytes; distinct text embedded: {embedded:,} bytes")
        verdict = "met" if ratio <= TARGET_RATIO else "MISSED"
        print(f"ratio: {ratio:.2f}x (target <= {TARGET_RATIO}x: {verdict})")
        print(
            f"ratio with each distinct question counted once too: {size / embedded_once:.2f}x "
            f"({embedded_once:,} bytes)"
        )
        if chromium is None:
            print("chromium not found: load time not measured")
            return
        tiny = folder / "tiny.html"
        tiny.write_text("<!DOCTYPE html><p>baseline</p>", encoding="utf-8")
        readies: list[float] = []
        walls: list[float] = []
        bases: list[float] = []
        for n in range(args.repeat):
            base, _ = chromium_run(chromium, tiny.as_uri(), folder / f"p{n}a")
            wall, dom = chromium_run(chromium, page.as_uri(), folder / f"p{n}b")
            found = re.search(r'data-ready-ms="([0-9.]+)"', dom)
            readies.append(float(found.group(1)) / 1000 if found else float("nan"))
            walls.append(wall)
            bases.append(base)
        ready = min(readies)
        verdict = "met" if ready < TARGET_READY_S else "MISSED"
        print(
            f"chromium: script done at {ready:.2f} s after navigation start "
            f"(best of {args.repeat}; all {', '.join(f'{r:.2f}' for r in readies)}); "
            f"target < {TARGET_READY_S} s: {verdict}"
        )
        print(
            f"chromium wall: page {min(walls):.2f} s vs one-paragraph baseline "
            f"{min(bases):.2f} s (difference {min(walls) - min(bases):.2f} s)"
        )


if __name__ == "__main__":
    main()
