"""A random-seed hunt over the two streaming properties (issue 37).

CI runs ``tests/test_stream_properties.py`` (the stream equals ``resolve`` for every
chunking, and never raises early) and ``tests/test_stream_certainty.py`` (it raises
exactly in the chunk that makes a marker certain) derandomized: the same cases each
time. This script runs both with ``derandomize`` off, one seed after another, so
that new cases are drawn: it copies each test module into a temporary folder with
its property's ``@settings`` changed to ``max_examples=N, derandomize=False,
database=None`` and only the generate and shrink phases (the pinned ``@example``
cases are CI's), imports the copies (the ``tests`` folder on the path, for the
shared strategies and oracles), and calls each property once per seed through
``hypothesis.seed``. Seeds alternate between the two properties, so that a hunt cut
short has covered both alike.

Usage, from the repository root (one process; ``nice`` on a shared machine)::

    nice .venv/bin/python bench/stream_hunt.py --first 1 --seeds 40 --examples 700

It prints one line a seed and property (the seconds it took, ``ok`` or ``FAILED``),
the shrunk failing example of each failure with its seed, and a summary; it exits 1
when any seed failed. ``--only equality`` or ``--only certainty`` runs one property.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Final

from hypothesis import seed

if TYPE_CHECKING:
    from collections.abc import Callable

ROOT: Final = Path(__file__).resolve().parent.parent
TESTS: Final = ROOT / "tests"
# Each property: its module, class and test.
PROPERTIES: Final = {
    "equality": (
        "test_stream_properties",
        "TestStreamingEqualsResolve",
        "test_same_result_and_never_early",
    ),
    "certainty": (
        "test_stream_certainty",
        "TestCertaintyIsExact",
        "test_raises_exactly_when_certain",
    ),
}
_SETTINGS: Final = re.compile(r"max_examples=\d+, deadline=None, derandomize=True")


def hunted_copy(module: str, examples: int, folder: Path) -> str:
    """Write ``module`` with its derandomized ``@settings`` turned into a hunt's; its name."""
    source = (TESTS / f"{module}.py").read_text(encoding="utf-8")
    hunt = (
        f"max_examples={examples}, deadline=None, derandomize=False, database=None, "
        "phases=[Phase.generate, Phase.shrink]"
    )
    changed, count = _SETTINGS.subn(hunt, source)
    if count != 1:
        message = f"{module}: expected one derandomized @settings, found {count}"
        raise SystemExit(message)
    changed = changed.replace(
        "from __future__ import annotations\n",
        "from __future__ import annotations\n\nfrom hypothesis import Phase\n",
        1,
    )
    name = f"_hunt_{module}"
    (folder / f"{name}.py").write_text(changed, encoding="utf-8")
    return name


def load(names: list[str], examples: int, folder: Path) -> dict[str, Callable[[int], None]]:
    """One callable a property: it runs the property's hunted copy under a seed."""
    sys.path[:0] = [str(folder), str(TESTS)]
    runs: dict[str, Callable[[int], None]] = {}
    for name in names:
        module, cls_name, test_name = PROPERTIES[name]
        copy = importlib.import_module(hunted_copy(module, examples, folder))
        cls = getattr(copy, cls_name)

        def run(number: int, cls: type = cls, test_name: str = test_name) -> None:
            seed(number)(getattr(cls, test_name))
            getattr(cls(), test_name)()

        runs[name] = run
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first", type=int, default=1, help="the first seed")
    parser.add_argument("--seeds", type=int, default=40, help="how many seeds, from --first on")
    parser.add_argument("--examples", type=int, default=700, help="examples a seed")
    parser.add_argument("--only", choices=sorted(PROPERTIES), help="one property only")
    args = parser.parse_args()
    names = [args.only] if args.only else list(PROPERTIES)
    failures: list[tuple[str, int]] = []
    done = dict.fromkeys(names, 0)
    with tempfile.TemporaryDirectory(prefix="stream_hunt_") as tmp:
        runs = load(names, args.examples, Path(tmp))
        for number in range(args.first, args.first + args.seeds):
            for name in names:
                start = time.monotonic()
                try:
                    runs[name](number)
                except Exception:  # noqa: BLE001 - a failing property is the finding
                    failures.append((name, number))
                    print(f"seed {number} {name}: FAILED", flush=True)
                    traceback.print_exc(file=sys.stdout)
                else:
                    took = time.monotonic() - start
                    print(f"seed {number} {name}: ok in {took:.1f} s", flush=True)
                done[name] += 1
    covered = ", ".join(f"{name} {count} seeds" for name, count in done.items())
    print(
        f"seeds {args.first}..{args.first + args.seeds - 1} x {args.examples} examples: {covered}"
    )
    print(f"failures: {failures or 'none'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
