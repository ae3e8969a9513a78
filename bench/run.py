"""Run every benchmark in bench/ and print its figures (`make bench`)."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDER = ["markers.py", "langchain_chain.py", "scorer.py", "llama_index_eval.py", "check.py"]


def main() -> int:
    sys.path.insert(0, str(HERE))
    for name in ORDER:
        path = HERE / name
        if path.exists():
            print(f"== {name}", flush=True)
            runpy.run_path(str(path), run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
