"""Benchmark for structured quotes on one long row (issue 38 item 2): seconds, old and new.

A structured answer's quotes were each searched in every source: 600 quotes against
a 10 MiB source line cost 600 scans of it. This script builds such rows, checks them
with `citemark.check_structured` in this process, and with ``citemark check`` on a
JSONL file in a subprocess (the whole command: reading the line, the checks, the
outputs), and prints the seconds of each, best of ``--repeat``, and the command's peak
resident set size (``ru_maxrss`` of the waited child).

With ``--old REF`` (e.g. ``HEAD~1``) the same is measured for the module as it was at
that git revision: ``src/citemark/_sources/structured.py`` from ``git show REF:...`` is loaded
as a second module for the in-process figure, and for the command a copy of
``src/citemark`` with that file swapped in is put first on ``PYTHONPATH``. Both
versions' findings are compared and must be equal.

Rows (each one JSONL line of about 10 MiB, 600 quotes, about 78 KB of answer):

- ``prose``: ten 1 MiB sources of random words; a third of the quotes are cut from
  the source they cite, a third from another source than the one cited, a third are
  made up.
- ``runs``: one 10 MiB source of a single repeated letter; every quote is that
  letter with one other character in it (20 to 119 letters, the other one, 0 to 5
  letters), so each old search matched a long prefix at every position before failing.

Run: ``.venv/bin/python bench/structured_quotes.py [--old HEAD~1] [--rows prose runs]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from citemark import Source

if TYPE_CHECKING:
    from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
QUOTES = 600
SOURCE_CHARS = 10 * 2**20


def prose_row(rng: random.Random) -> dict[str, Any]:
    """Ten 1 MiB sources of words; quotes verified, misattributed and made up."""
    words = [
        "".join(rng.choice("abcdefghijklm") for _ in range(rng.randint(2, 9))) for _ in range(3000)
    ]

    def text(size: int) -> str:
        out: list[str] = []
        total = 0
        while total < size:
            word = rng.choice(words)
            out.append(word)
            total += len(word) + 1
        return " ".join(out)

    texts = [text(SOURCE_CHARS // 10) for _ in range(10)]
    citations = []
    for i in range(QUOTES):
        cited = i % 10
        kind = i % 3
        if kind == 2:
            quote = text(100)
        else:
            holder = texts[cited if kind == 0 else (cited + 1) % 10]
            start = rng.randrange(len(holder) - 200)
            quote = holder[start : start + 100]
        citations.append({"source_id": cited, "quote": quote})
    return _row("prose", texts, citations)


def runs_row(_: random.Random) -> dict[str, Any]:
    """One 10 MiB run of one letter; quotes of that letter with one other in them."""
    shapes = [(before, after) for before in range(20, 120) for after in range(6)]
    citations = [
        {"source_id": 0, "quote": "a" * before + "b" + "a" * after}
        for before, after in shapes[:QUOTES]
    ]
    return _row("runs", ["a" * SOURCE_CHARS], citations)


def _row(name: str, texts: list[str], citations: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": name,
        "question": "q",
        "index_base": 0,
        "answer": {"answer": "An answer.", "citations": citations},
        "sources": [{"text": t, "doc_id": f"d{i}"} for i, t in enumerate(texts)],
    }


ROWS = {"prose": prose_row, "runs": runs_row}


def in_process(module: ModuleType, row: dict[str, Any], repeat: int) -> tuple[float, list[Any]]:
    """Best seconds of ``module.check_structured`` on the row, and its findings."""
    sources = [Source(**s) for s in row["sources"]]
    best = float("inf")
    findings: list[Any] = []
    for _ in range(repeat):
        start = time.perf_counter()
        checked = module.check_structured(row["answer"], sources, index_base=0)
        best = min(best, time.perf_counter() - start)
        findings = [(c.outcome, c.in_other_source) for c in checked.findings.citations]
    return best, findings


def command(path: Path, out: Path, repeat: int, pythonpath: Path | None) -> tuple[float, int]:
    """Best seconds of ``citemark check path --out out`` in a subprocess, and its peak RSS."""
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    best = float("inf")
    peak = 0
    for _ in range(repeat):
        shutil.rmtree(out, ignore_errors=True)
        start = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-m", "citemark", "check", str(path), "--out", str(out)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        _, _, usage = os.wait4(child.pid, 0)
        child.returncode = 0  # waited for above
        best = min(best, time.perf_counter() - start)
        peak = max(peak, usage.ru_maxrss * 1024)
        if not (out / "rows.jsonl").exists():
            msg = f"citemark check wrote no rows.jsonl for {path.name}"
            raise SystemExit(msg)
    return best, peak


def old_version(ref: str, folder: Path) -> tuple[ModuleType, Path]:
    """The module at ``ref`` loaded beside the current one, and a source tree holding it."""
    git = shutil.which("git")
    if git is None:
        raise SystemExit("--old needs git")
    text = subprocess.run(
        [git, "show", f"{ref}:src/citemark/_sources/structured.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    tree = folder / "old-src"
    shutil.copytree(ROOT / "src" / "citemark", tree / "citemark")
    (tree / "citemark" / "_sources" / "structured.py").write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(
        "citemark._sources.structured_old", tree / "citemark" / "_sources" / "structured.py"
    )
    if spec is None or spec.loader is None:
        raise SystemExit("cannot load the old module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the models' annotations there
    spec.loader.exec_module(module)
    return module, tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", metavar="REF", help="also measure _sources/structured.py at REF")
    parser.add_argument("--rows", nargs="+", choices=sorted(ROWS), default=sorted(ROWS))
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    import citemark._sources.structured as new  # noqa: PLC0415 - after the arguments are read

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        old, tree = old_version(args.old, folder) if args.old else (None, None)
        for name in args.rows:
            row = ROWS[name](random.Random(38))
            path = folder / f"{name}.jsonl"
            path.write_text(json.dumps(row) + "\n", encoding="utf-8")
            answer = len(json.dumps(row["answer"]))
            print(
                f"{name}: {path.stat().st_size / 2**20:.1f} MiB line, "
                f"{len(row['answer']['citations'])} quotes, {answer / 1000:.0f} KB of answer"
            )
            seconds, findings = in_process(new, row, args.repeat)
            cli, peak = command(path, folder / "out", args.repeat, None)
            print(
                f"  new: check_structured {seconds:6.2f} s   "
                f"citemark check {cli:6.2f} s, peak RSS {peak / 2**20:.0f} MiB"
            )
            if old is not None and tree is not None:
                before, old_findings = in_process(old, row, args.repeat)
                cli, peak = command(path, folder / "out", args.repeat, tree)
                same = "same findings" if old_findings == findings else "FINDINGS DIFFER"
                print(
                    f"  old: check_structured {before:6.2f} s   "
                    f"citemark check {cli:6.2f} s, peak RSS {peak / 2**20:.0f} MiB ({same})"
                )


if __name__ == "__main__":
    main()
