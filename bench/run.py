"""Run every benchmark in bench/ and print its figures (`make bench`).

Each benchmark runs in its own process: a child's peak RSS (bench/check.py reads it
with os.wait4) starts from its parent's at fork time, so one shared parent that had
run the other benchmarks first would inflate it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDER = [
    "markers.py",
    "langchain_chain.py",
    "langchain_agent.py",
    "scorer.py",
    "llama_index_eval.py",
    "check.py",
    "formats.py",
]


def main() -> int:
    failed = 0
    for name in ORDER:
        path = HERE / name
        if path.exists():
            print(f"== {name}", flush=True)
            failed |= subprocess.run([sys.executable, str(path)], check=False).returncode
    return failed


if __name__ == "__main__":
    sys.exit(main())
