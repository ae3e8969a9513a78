"""Build the wheels and sdists of citemark's three distributions, adapters pinned to the core.

``make dist`` runs this script with the development environment's Python: it builds
``citemark`` from the repository root, then ``langchain-citemark`` and
``llama-index-citemark`` from copies of their folders whose ``pyproject.toml`` asks
for exactly the core version being built (``citemark>=0.1.0`` becomes
``citemark==0.1.0``). The copy, not a hatchling hook, carries the pin: the sdist
then holds the pinned ``pyproject.toml`` itself, so a wheel built later from that
sdist, anywhere, pins the same version. The source tree keeps its range, which the
editable development install needs.

Everything is built by hatchling's own command line (``python -m hatchling build``)
in this interpreter, so nothing is downloaded: hatchling must be installed here.

Usage::

    python scripts/dist.py [OUT_DIR]     # default: dist/
"""

# ruff: noqa: INP001 - a script run by path, not a package

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ADAPTERS = (ROOT / "adapters" / "langchain", ROOT / "adapters" / "llama-index")
CORE = "citemark"
# What is left out of an adapter's staged copy: caches and build output only.
_NOT_STAGED = shutil.ignore_patterns(
    "__pycache__", "*.pyc", ".pytest_cache", ".mypy_cache", ".ruff_cache", "dist", "build"
)
# A requirement on the core: the name, then anything but an extra or marker that
# would make it another requirement (a version range, or nothing).
_CORE_REQUIREMENT = re.compile(rf"^{CORE}\s*(?P<range>[<>=!~][^;\[]*)?$")


class DistError(Exception):
    """A project cannot be built as asked; the message names the file and the rule."""


def core_version(root: Path = ROOT) -> str:
    """The version in the core's ``pyproject.toml``."""
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return str(project["version"])


def pin_core(pyproject: str, version: str) -> str:
    """``pyproject`` with its one dependency on the core replaced by ``citemark==version``.

    Raises:
        DistError: the dependencies hold no requirement on the core, or more than one.
    """
    dependencies = tomllib.loads(pyproject)["project"]["dependencies"]
    on_core = [dep for dep in dependencies if _CORE_REQUIREMENT.match(dep.strip())]
    if len(on_core) != 1:
        msg = f"expected one dependency on {CORE} in [project] dependencies, found {len(on_core)}"
        raise DistError(msg)
    quoted = f'"{on_core[0]}"'
    if pyproject.count(quoted) != 1:
        msg = f"the dependency on {CORE} must be written once, as a double-quoted string"
        raise DistError(msg)
    return pyproject.replace(quoted, f'"{CORE}=={version}"')


def build(project: Path, out_dir: Path) -> None:
    """Build ``project``'s sdist and wheel into ``out_dir`` with hatchling, in this Python."""
    subprocess.run(  # noqa: S603 - this interpreter, fixed arguments
        [sys.executable, "-m", "hatchling", "build", "-t", "sdist", "-t", "wheel", "-d", out_dir],
        cwd=project,
        check=True,
    )


def build_all(out_dir: Path) -> list[Path]:
    """Build the three distributions into ``out_dir``; return the files built, sorted."""
    out_dir = out_dir.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    before = set(out_dir.iterdir())
    version = core_version()
    build(ROOT, out_dir)
    with tempfile.TemporaryDirectory(prefix="citemark-dist-") as staging:
        for adapter in ADAPTERS:
            staged = Path(staging) / adapter.name
            shutil.copytree(adapter, staged, ignore=_NOT_STAGED)
            pyproject = staged / "pyproject.toml"
            pyproject.write_text(
                pin_core(pyproject.read_text(encoding="utf-8"), version), encoding="utf-8"
            )
            build(staged, out_dir)
    return sorted(set(out_dir.iterdir()) - before)


def main(argv: list[str]) -> int:
    """Build into ``argv[0]`` (default ``dist/``) and print each file built."""
    out_dir = Path(argv[0]) if argv else ROOT / "dist"
    try:
        built = build_all(out_dir)
    except DistError as exc:
        sys.stderr.write(f"dist: error: {exc}\n")
        return 2
    for path in built:
        sys.stdout.write(f"{path}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
