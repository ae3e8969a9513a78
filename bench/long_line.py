"""Benchmark: one very long line through each ``--from`` reader (issue 38, item 5).

A trace file can hold one record of hundreds of megabytes on one line (a retriever
that returned a whole book). The readers must cut and parse it in time linear in its
size: the old MLflow path grew a buffer with ``+=`` and searched it again from its
start at every 64 KiB read, 102 s for a 100 MB line where the other readers took 2 to
4 s. For each reader this writes one row whose first source is long enough to make
the reader's line about ``--mb`` megabytes (in that reader's own shape, as
``bench/formats.py`` writes it), then times the real ``citemark check FILE --from
READER`` on it with ``/usr/bin/time -v`` and prints the wall time, the peak RSS and
how many rows and malformed rows the check counted.

Run: ``.venv/bin/python bench/long_line.py --mb 100`` (``--readers mlflow langsmith``,
``--mb 25 50 100``, ``--array`` for the line as ``[record]``). Set ``PYTHONPATH`` to another checkout's ``src`` to time that code.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import formats  # the readers' own benchmark: each format's shape

WRITERS = {
    "mlflow": lambda row: formats.mlflow(row, 0),
    "langsmith": lambda row: formats.langsmith(row, 0),
    "openinference": lambda row: formats.openinference(row, 0),
    "ragas": formats.ragas,
    "map": formats.mapped,
}
_MAXRSS = re.compile(r"Maximum resident set size \(kbytes\): (\d+)")
_WALL = re.compile(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)")


def line_of(reader: str, megabytes: float) -> str:
    """One row in ``reader``'s shape whose line is about ``megabytes`` MB."""
    row = formats.logical_row(0, random.Random(7), small=False)
    sources = formats._sources(row)  # noqa: SLF001 - the bench's own helper
    base = len(WRITERS[reader](row))
    probe = 1 << 20
    sources[0]["text"] = "word " * (probe // 5)
    per_byte = (len(WRITERS[reader](row)) - base) / probe
    wanted = int((megabytes * 1e6 - base) / per_byte)
    sources[0]["text"] = "word " * (wanted // 5)
    return WRITERS[reader](row)


def timed_check(reader: str, path: Path, out: Path) -> dict[str, object]:
    """Wall seconds, peak RSS in MiB and the check's counts for ``citemark check``."""
    command = ["/usr/bin/time", "-v", *formats.check_command(reader, path, out)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = _WALL.search(done.stderr)
    rss = _MAXRSS.search(done.stderr)
    seconds = 0.0
    if wall is not None:
        hours, minutes, rest = wall.groups()
        seconds = int(hours or 0) * 3600 + int(minutes) * 60 + float(rest)
    result: dict[str, object] = {
        "exit": done.returncode,
        "seconds": round(seconds, 2),
        "peak_mib": round(int(rss.group(1)) / 1024, 1) if rss else None,
    }
    if done.returncode == 0:
        check = json.loads(done.stdout)["check"]
        result["rows"] = check.get("rows")
        result["malformed"] = check.get("malformed")
    else:
        said = [x for x in done.stderr.splitlines() if x.startswith("citemark")]
        result["error"] = said[-1][:160] if said else done.stderr[-160:]
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, nargs="+", default=[100.0])
    parser.add_argument("--readers", nargs="+", default=list(WRITERS), choices=list(WRITERS))
    parser.add_argument("--array", action="store_true", help="the line as a one-element JSON array")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="citemark-long-line-") as name:
        root = Path(name)
        for megabytes in args.mb:
            for reader in args.readers:
                path = root / f"{reader}.jsonl"
                line = line_of(reader, megabytes)
                array = "[" + ",".join(line.splitlines()) + "]"
                path.write_text(array + "\n" if args.array else line + "\n", encoding="utf-8")
                size = path.stat().st_size
                result = timed_check(reader, path, root / f"out-{reader}")
                shape = "array" if args.array else "jsonl"
                facts = {"reader": reader, "shape": shape, "line_mb": round(size / 1e6, 1)}
                print(json.dumps({**facts, **result}), flush=True)
                path.unlink()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
