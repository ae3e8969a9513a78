"""How long the imports users feel take (issue 25, item 3).

Each command runs in a fresh interpreter, many times, interleaved; each one's best
run is printed (a shared machine only ever adds noise) with its median beside it,
and every ratio compares figures measured in the same run:

- ``import citemark`` against ``import httpx`` (target: at most 1.5x);
- ``citemark --help`` against ``python -c "import httpx"`` (target: at most 2x);
- ``import langchain_citemark`` against importing the langchain-core modules it
  builds on plus ``import citemark`` (target: at most 1.2x).

Every command reads cached bytecode, as an installed package does (pip compiles on
install): ``PYTHONDONTWRITEBYTECODE`` is dropped and ``PYTHONPYCACHEPREFIX`` points
at a temporary folder that one untimed run of each command fills, so neither side
pays for compiling source and the working tree gets no ``__pycache__``.

``--where`` also prints where ``import citemark`` spends its time
(``python -X importtime``, the slowest modules by their own time).

Run: ``.venv/bin/python bench/imports.py`` (``--runs N``, default 15).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# What langchain_citemark imports from langchain-core at run time (its modules'
# top-level imports; the agent middleware loads on first use). The packages of
# langchain-core load their names lazily, so the names are imported, not the packages.
LANGCHAIN_CORE = """
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.output_parsers import BaseOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import (
    Runnable, RunnableConfig, RunnableLambda, RunnablePassthrough, RunnableSerializable
)
from langchain_core.runnables.config import patch_config
"""


def commands() -> dict[str, list[str]]:
    """Each measured command, by the name the report gives it."""
    python = sys.executable
    script = Path(python).with_name("citemark")
    cli = [str(script)] if script.is_file() else [python, "-m", "citemark"]
    return {
        "python (nothing)": [python, "-c", "pass"],
        "import httpx": [python, "-c", "import httpx"],
        "from pydantic import BaseModel": [python, "-c", "from pydantic import BaseModel"],
        "import citemark": [python, "-c", "import citemark"],
        "citemark --help": [*cli, "--help"],
        "langchain-core + citemark": [python, "-c", f"{LANGCHAIN_CORE}import citemark"],
        "import langchain_citemark": [python, "-c", "import langchain_citemark"],
    }


def environment(cache: str) -> dict[str, str]:
    """The environment of every run: cached bytecode under ``cache``."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = cache
    return env


def timed(argv: list[str], env: dict[str, str]) -> float:
    """Seconds ``argv`` takes from start to exit."""
    start = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def where(env: dict[str, str], top: int = 12) -> None:
    """Print the modules `import citemark` spends the most own time in."""
    completed = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import citemark"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    rows = []
    for line in completed.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[0].strip().isdigit():  # own | total | name
            rows.append((int(parts[0]), int(parts[1]), parts[2].strip()))
    print(f"where `import citemark` spends its time (top {top} by own time, ms):")
    for own, total, name in sorted(rows, reverse=True)[:top]:
        print(f"  {own / 1000:>7.1f} own {total / 1000:>7.1f} total  {name}")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs of each command")
    parser.add_argument("--where", action="store_true", help="also print -X importtime's top")
    args = parser.parse_args()
    cache = tempfile.mkdtemp(prefix="citemark-bench-pyc-")
    try:
        env = environment(cache)
        measured = commands()
        for argv in measured.values():  # untimed: fills the bytecode cache
            timed(argv, env)
        runs: dict[str, list[float]] = {name: [] for name in measured}
        for _ in range(args.runs):
            for name, argv in measured.items():
                runs[name].append(timed(argv, env))
        if args.where:
            where(env)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    best = {name: min(values) for name, values in runs.items()}
    print(f"best (median) of {args.runs} interleaved runs, fresh interpreter each, seconds:")
    for name, values in runs.items():
        print(f"  {name:<32}{best[name]:>7.3f}  ({statistics.median(values):.3f})")
    print()
    for label, figure, baseline, target in (
        ("import citemark / import httpx", "import citemark", "import httpx", 1.5),
        ("citemark --help / import httpx", "citemark --help", "import httpx", 2.0),
        (
            "import langchain_citemark / (langchain-core + citemark)",
            "import langchain_citemark",
            "langchain-core + citemark",
            1.2,
        ),
    ):
        ratio = best[figure] / best[baseline]
        verdict = "OK" if ratio <= target else "MISSED"
        print(f"{label} = {ratio:.2f}x (target <= {target}x: {verdict})")
    pydantic_share = (best["from pydantic import BaseModel"] - best["python (nothing)"]) / (
        best["import citemark"] - best["python (nothing)"]
    )
    print(f"pydantic's own import is {pydantic_share:.0%} of `import citemark` past startup")


if __name__ == "__main__":
    main()
