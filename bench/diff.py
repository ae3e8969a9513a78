"""Benchmark for ``citemark diff`` (issue 25, item 4): peak RSS at 100,000 and 1,000,000 rows.

Two versions of a pipeline are recorded over the same 2,000 generated questions and
checked by the real ``citemark check`` (the second version answers one row in five
differently, some with a marker that names nothing, and is checked with
``--min-sentence-coverage 1``). Their ``rows.jsonl`` records are then repeated, each
with a fresh line and id, to each size: real records, byte for byte, as a check of
that many rows writes them (with the ``digests`` key a row record carries). For each
size the real ``citemark diff OLD NEW --json --html PAGE`` runs in its own
subprocess, and the bench prints its wall time, rows per second (per side) and peak
resident set size (the child's own ``VmHWM``, which it reports as it exits; the
``ru_maxrss`` of ``os.wait4`` would include this process's peak, kept across exec).

The runs are checked by this tree, or with ``--baseline`` by the baseline (whose
``citemark diff`` may not read a newer report; this tree's reads either).

Target: the peak RSS at 1,000,000 rows per side is at most 1.2x the peak at 100,000,
which is what "diff compares in bounded memory" means. ``--baseline SRC`` also runs
another citemark source tree (``SRC/src`` on ``PYTHONPATH``, e.g. a ``git archive``
of the last release) on the same files, for the same figures before the change.
The 1,000,000-row pair takes a few minutes and about 3 GB of temporary disk.

Run: ``.venv/bin/python bench/diff.py`` (``--rows 100000 1000000`` are the defaults).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_RATIO = 1.2
TEMPLATE_ROWS = 2_000
PASSAGES = [
    "The late fee is 5% of the unpaid balance.",
    "Members of the credit union pay no late fee.",
    "Notices are sent by mail within ten days.",
    "A dispute must be raised within sixty days of the statement.",
]


def _row(i: int, rng: random.Random, *, version: int) -> dict[str, object]:
    sources = [{"text": f"{text} (record {i})", "doc_id": f"policy-{k}"} for k, text in
               enumerate(PASSAGES, start=1)]  # fmt: skip
    first, second = rng.randint(1, 4), rng.randint(1, 4)
    if version == 2 and i % 5 == 0:
        second = 9 if i % 10 == 0 else second
        answer = f"Disputes take sixty days [{second}]. The late fee is 5% [{first}]."
    else:
        answer = f"The late fee is 5% [{first}]. Disputes take sixty days [{second}]."
    return {"id": f"row-{i}", "question": f"Question {i}: the fees?", "answer": answer,
            "sources": sources}  # fmt: skip


def _env(source: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    if source is not None:
        env["PYTHONPATH"] = str(source / "src")
    return env


def checked_template(root: Path, version: int, *options: str, source: Path | None) -> Path:
    """``citemark check`` of the template rows of one pipeline version; its output folder.

    With a baseline, the baseline's check writes the run: an older ``citemark diff``
    may not read a newer report, and this tree's reads both.
    """
    rng = random.Random(7)
    data = root / f"v{version}.jsonl"
    with data.open("w", encoding="utf-8") as out:
        for i in range(TEMPLATE_ROWS):
            out.write(json.dumps(_row(i, rng, version=version)) + "\n")
    folder = root / f"v{version}"
    command = [sys.executable, "-m", "citemark", "check", str(data), "--out", str(folder)]
    subprocess.run(
        [*command, "--quiet", *options], check=True, capture_output=True, env=_env(source)
    )
    _with_digests(data, folder)
    return folder


def _with_digests(data: Path, folder: Path) -> None:
    """Give each record its ``digests``, as ``rows.jsonl`` records carry them."""
    from citemark._pipelines.diff.digests import row_digests  # noqa: PLC0415 - the tree under test
    from citemark._pipelines.readers.citemark_rows import CheckRow, parse_row  # noqa: PLC0415

    rows = {}
    for number, raw in enumerate(data.read_bytes().splitlines(), start=1):
        item = parse_row(number, raw)
        if isinstance(item, CheckRow):
            rows[item.line] = row_digests(item.question, item.answer, item.sources)
    lines = []
    for raw in (folder / "rows.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(raw)
        if "digests" not in record:
            head = {key: record.pop(key) for key in ("line", "id")}
            record = {**head, "digests": rows[head["line"]], **record}
        lines.append(json.dumps(record) + "\n")
    (folder / "rows.jsonl").write_text("".join(lines), encoding="utf-8")


def repeated(template: Path, out: Path, rows: int) -> Path:
    """``template``'s run with its records repeated to ``rows``, each with its own line and id.

    Its ``report.json`` names the file it now holds (SHA-256, rows counted), as the
    check of that many rows writes it: ``citemark diff`` holds ``rows.jsonl`` to it.
    """
    out.mkdir()
    (out / "report.html").write_bytes((template / "report.html").read_bytes())
    tails = []
    for raw in (template / "rows.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(raw)
        del record["line"], record["id"]
        tails.append(json.dumps(record)[1:])
    digest = hashlib.sha256()
    with (out / "rows.jsonl").open("wb") as handle:
        for i in range(rows):
            line = f'{{"line": {i + 1}, "id": "row-{i}", {tails[i % len(tails)]}\n'.encode()
            digest.update(line)
            handle.write(line)
    report = json.loads((template / "report.json").read_text(encoding="utf-8"))
    report["check"]["files"]["rows.jsonl"] = digest.hexdigest()
    report["check"].update(rows=rows, malformed=0)
    (out / "report.json").write_text(json.dumps(report), encoding="utf-8")
    return out


# The child reports its own peak, VmHWM, as it exits: the ru_maxrss os.wait4 gives
# includes this process's peak, which Linux carries across exec (reading one diff's
# JSON here would then show as the next diff's peak).
_REPORTING = """
import atexit, os, runpy, sys
def _peak():
    with open("/proc/self/status") as status:
        kib = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    sys.stderr.write(f"bench-peak-kib: {kib}\\n")
atexit.register(_peak)
sys.argv = ["citemark", *sys.argv[1:]]
runpy.run_module("citemark", run_name="__main__", alter_sys=True)
"""


def measure(old: Path, new: Path, page: Path, source: Path | None) -> tuple[float, int, dict]:
    """Run ``citemark diff`` once; return wall seconds, peak RSS in bytes and the totals."""
    env = _env(source)
    command = [sys.executable, "-c", _REPORTING, "diff", str(old), str(new), "--json",
               "--html", str(page), "--allow-different-inputs"]  # fmt: skip
    started = time.perf_counter()
    with tempfile.TemporaryFile() as stdout:
        child = subprocess.Popen(command, stdout=stdout, stderr=subprocess.PIPE, env=env)
        _, status, _ = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - started
        code = os.waitstatus_to_exitcode(status)
        stderr = child.stderr.read() if child.stderr else b""
        if code != 0:
            sys.stderr.write(stderr.decode("utf-8", "replace"))
            msg = f"citemark diff exited {code}"
            raise SystemExit(msg)
        stdout.seek(0)
        totals = {k: v for k, v in json.load(stdout)["diff"].items() if k != "changes"}
    reported = [line for line in stderr.splitlines() if line.startswith(b"bench-peak-kib: ")]
    if not reported:
        raise SystemExit("citemark diff did not report its peak (it needs /proc)")
    return elapsed, int(reported[-1].split()[1]) * 1024, totals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--baseline", type=Path, help="another citemark source tree to run too")
    args = parser.parse_args()
    trees: list[tuple[str, Path | None]] = [("this tree", None)]
    if args.baseline is not None:
        trees.append(("baseline", args.baseline))
    peaks: dict[tuple[str, int], int] = {}
    with tempfile.TemporaryDirectory(prefix="citemark-bench-diff-") as folder:
        root = Path(folder)
        old_template = checked_template(root, 1, source=args.baseline)
        new_template = checked_template(
            root, 2, "--min-sentence-coverage", "1", source=args.baseline
        )
        for rows in args.rows:
            old = repeated(old_template, root / f"old-{rows}", rows)
            new = repeated(new_template, root / f"new-{rows}", rows)
            mb = ((old / "rows.jsonl").stat().st_size + (new / "rows.jsonl").stat().st_size) / 1e6
            for name, source in trees:
                elapsed, peak, totals = measure(old, new, root / "diff.html", source)
                peaks[name, rows] = peak
                print(
                    f"{name:>9}: diff {rows:>9,} rows per side ({mb:,.0f} MB): {elapsed:6.1f} s, "
                    f"{rows / elapsed:7,.0f} rows/s, peak RSS {peak / 2**20:6.1f} MiB; "
                    f"{totals['compared']:,} compared, {totals['changed']:,} changed",
                    flush=True,
                )
            for name in ("old", "new"):
                for path in (root / f"{name}-{rows}").iterdir():
                    path.unlink()
    small, large = min(args.rows), max(args.rows)
    for name, _ in trees:
        if small != large:
            ratio = peaks[name, large] / peaks[name, small]
            verdict = "within" if ratio <= TARGET_RATIO else "OVER"
            print(
                f"{name}: peak RSS ratio {large:,} / {small:,} rows: {ratio:.2f}x "
                f"({verdict} the {TARGET_RATIO}x target)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
