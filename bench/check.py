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

``--instructions`` (issue 25): instead, a leaner-check measure. Target: per row,
``citemark check`` spends at most 4x the instructions of the honest floor, the
script ``FLOOR`` below: it parses each line with ``json.loads``, takes the answer
and either the sources (``text``/``doc_id``) or the ``[doc-k] text`` passages of a
labelled context, finds the markers with one precompiled regex, range-checks them,
builds the citation records and writes one ``json.dumps`` line per row, with no
citemark import. Both programs are counted the same way: the ``summary:`` Ir total
of ``valgrind --tool=callgrind`` (deterministic: ``PYTHONHASHSEED=0``, bytecode
cached), on the rows
of ``generate`` at ``--count`` rows (2,000) and at one row; per row is
``(Ir(N) - Ir(1)) / (N - 1)`` and the one-row run is the start-up. Paired in the
same run, without valgrind: the rows/s of both on ``--wall`` rows (20,000), best of
three, interleaved. The floor's resolved and fabricated counts must equal check's.
``--keep DIR`` keeps the callgrind files (``callgrind_annotate --inclusive=yes``).
At 2,000 rows the figure also carries ``report.html``'s bounded page (its first 500
rows and the failed rows that displace them), which a longer run spreads thinner.

Run: ``.venv/bin/python bench/check.py --instructions`` (a few minutes; needs valgrind).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_RATIO = 1.5
TARGET_INSTRUCTIONS = 4.0
# The honest floor: the cheapest plain code doing check's deterministic job.
FLOOR = r"""
import json, re, sys
NUMBER = re.compile(r"\[(\d+)\]")
LABEL = re.compile(r"\[([^\[\]\s]+)\]")
PASSAGE = re.compile(r"^\[([^\[\]\s]+)\] (.*)$", re.MULTILINE)
resolved = fabricated = 0
with open(sys.argv[1], encoding="utf-8") as lines, open(sys.argv[2], "w", encoding="utf-8") as out:
    for number, line in enumerate(lines, 1):
        row = json.loads(line)
        answer, context = row["answer"], row.get("context")
        citations, missing = [], []
        if isinstance(context, str):
            passages = dict(PASSAGE.findall(context))
            for match in LABEL.finditer(answer):
                label = match[1]
                text = passages.get(label)
                if text is None:
                    missing.append(label)
                else:
                    citations.append({"marker": label, "doc_id": label, "text": text})
        else:
            sources = row["sources"]
            for match in NUMBER.finditer(answer):
                n = int(match[1])
                if 1 <= n <= len(sources):
                    source = sources[n - 1]
                    citations.append({"marker": n, "doc_id": source.get("doc_id"), "text": source["text"]})
                else:
                    missing.append(n)
        resolved += len(citations)
        fabricated += len(missing)
        record = {"line": number, "id": row.get("id"), "passed": not missing, "citations": citations, "fabricated": missing}
        out.write(json.dumps(record) + "\n")
print(json.dumps({"resolved": resolved, "fabricated": fabricated}))
"""
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


def _commands(root: Path, tag: str) -> dict[str, list[str]]:
    """The floor and ``citemark check``, each on ``runs-{tag}.jsonl`` in ``root``."""
    runs = str(root / f"runs-{tag}.jsonl")
    floor = [sys.executable, str(root / "floor.py"), runs, str(root / f"floor-{tag}.jsonl")]
    out = str(root / f"out-{tag}")
    check = [sys.executable, "-m", "citemark", "check", runs, "--out", out, "--json"]
    return {"floor": floor, "check": check}


def _run(command: list[str], root: Path, prefix: tuple[str, ...] = ()) -> tuple[float, str]:
    """Run ``prefix + command`` with a fixed hash seed; return wall seconds and stdout.

    Bytecode is cached under ``root`` (``PYTHONPYCACHEPREFIX``; the warm-up writes
    it), so start-up is measured as an installed package starts, even where
    ``PYTHONDONTWRITEBYTECODE`` is set.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONHASHSEED="0", PYTHONPYCACHEPREFIX=str(root / "pycache"))
    started = time.perf_counter()
    done = subprocess.run([*prefix, *command], capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        msg = f"{command[:4]} exited {done.returncode}"
        raise SystemExit(msg)
    return elapsed, done.stdout


def callgrind(command: list[str], root: Path, out_file: Path) -> int:
    """Instructions (Ir) that ``command`` executes, from callgrind's ``summary:`` line."""
    _run(command, root, ("valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}"))
    found = re.search(r"^summary: (\d+)", out_file.read_text(encoding="utf-8"), re.MULTILINE)
    if found is None:
        msg = f"no summary line in {out_file}"
        raise SystemExit(msg)
    return int(found[1])


def _counts(stdout: str, name: str) -> tuple[int, int]:
    """Resolved and fabricated citations from a program's printed summary."""
    data = json.loads(stdout)
    counts = data if name == "floor" else data["check"]["citations"]
    return counts["resolved"], counts["fabricated"]


def instructions(count: int, wall: int, keep: Path | None) -> int:
    """Per-row instructions of check and the floor, their ratio, and paired rows/s."""
    with tempfile.TemporaryDirectory(prefix="citemark-bench-ir-") as folder:
        root = Path(folder)
        grind = keep or root
        grind.mkdir(parents=True, exist_ok=True)
        (root / "floor.py").write_text(FLOOR, encoding="utf-8")
        sizes = {"1": 1, str(count): count, str(wall): wall}
        for tag, rows in sizes.items():
            generate(root / f"runs-{tag}.jsonl", rows)
        for tag in sizes:  # warm-up: byte-compiled caches, and the two must agree
            seen = {
                name: _counts(_run(cmd, root)[1], name)
                for name, cmd in _commands(root, tag).items()
            }
            if seen["floor"] != seen["check"]:
                msg = f"floor and check disagree on {tag} rows: {seen}"
                raise SystemExit(msg)
        per_row: dict[str, float] = {}
        for name in ("floor", "check"):
            ir = {
                tag: callgrind(
                    _commands(root, tag)[name],
                    root,
                    grind / f"callgrind.{name}.{tag}",
                )
                for tag in ("1", str(count))
            }
            per_row[name] = (ir[str(count)] - ir["1"]) / (count - 1)
            print(
                f"{name:>5}: {per_row[name]:>12,.0f} Ir/row over {count:,} rows, "
                f"start-up (1 row) {ir['1'] / 1e6:8,.1f} M Ir",
                flush=True,
            )
        ratio = per_row["check"] / per_row["floor"]
        verdict = "within" if ratio <= TARGET_INSTRUCTIONS else "OVER"
        print(
            f"instructions per row, check / floor: {ratio:.2f}x ({verdict} the {TARGET_INSTRUCTIONS}x target)"
        )
        best: dict[str, dict[str, float]] = {"floor": {}, "check": {}}
        for tag in ("1", str(wall)):
            for _ in range(3):
                for name, cmd in _commands(root, tag).items():
                    elapsed = _run(cmd, root)[0]
                    best[name][tag] = min(best[name].get(tag, elapsed), elapsed)
        for name, times in best.items():
            whole, start = times[str(wall)], times["1"]
            print(
                f"{name:>5}: {wall / whole:>9,.0f} rows/s over {wall:,} rows (best of 3, {whole:.2f} s), "
                f"{(wall - 1) / (whole - start):>9,.0f} rows/s less the 1-row run ({start:.3f} s)"
            )
        slower = best["check"][str(wall)] / best["floor"][str(wall)]
        print(f"wall time on {wall:,} rows, check / floor: {slower:.2f}x")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000, 1_000_000])
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="issue 25: instructions per row against the floor",
    )
    parser.add_argument("--count", type=int, default=2_000, help="rows counted under callgrind")
    parser.add_argument("--wall", type=int, default=20_000, help="rows timed for rows/s")
    parser.add_argument("--keep", type=Path, help="folder to keep the callgrind files in")
    args = parser.parse_args()
    if args.instructions:
        return instructions(args.count, args.wall, args.keep)
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
