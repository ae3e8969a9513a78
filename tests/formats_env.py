"""Run a producer in the "formats" environment (``.venv-formats``) and get back what it wrote.

Ragas, DeepEval and Phoenix conflict with the main environment's pins, so the tests
that read their files run the real libraries in a virtual environment of their own
(``requirements-formats.txt``): ``tests/producers/*.py`` write the files there and the
tests read them here. Without that environment the tests *fail*, saying how to build
it: a skip would hide them in CI.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FORMATS_PYTHON = ROOT / ".venv-formats" / "bin" / "python"
FORMATS_STAMP = ROOT / ".venv-formats" / ".installed"
PRODUCERS = Path(__file__).resolve().parent / "producers"
# Importing ragas, deepeval and phoenix takes seconds each on two cores.
PRODUCER_TIMEOUT_S = 300
# What each producer wrote for a spec in this test session, kept in a private copy:
# several modules read the same files (the reader tests, the format hints), and each
# producer run spends most of its time importing its library.
_PRODUCED: dict[tuple[str, str], Path] = {}
_ROOT: list[Path] = []


def formats_python() -> Path:
    """The formats environment's Python; fails the test when it is not built."""
    if not FORMATS_PYTHON.exists() or not FORMATS_STAMP.exists():
        pytest.fail(
            "the formats environment is missing: run `make .venv-formats/.installed` "
            "(it holds Ragas, DeepEval and Phoenix, which write the files these tests read)",
            pytrace=False,
        )
    return FORMATS_PYTHON


def produce(producer: str, spec: object, out: Path, workdir: Path) -> None:
    """Run ``tests/producers/<producer>.py SPEC OUT`` with the formats environment's Python.

    Args:
        producer: The producer script's name, without ``.py``.
        spec: What to produce, written to a JSON file for the producer.
        out: The output path (a directory or a file, as the producer takes it).
        workdir: The producer's working directory (DeepEval writes a ``.deepeval``
            folder into it), so nothing lands in the repository.
    """
    key = (producer, json.dumps(spec, sort_keys=True))
    kept = _PRODUCED.get(key)
    if kept is not None:
        _copy(kept, out)
        return
    python = formats_python()
    spec_path = workdir / f"{producer}-spec.json"
    spec_path.write_text(json.dumps(spec), encoding="utf-8")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTHON", "VIRTUAL_ENV", "PYTEST"))
    }
    env["DEEPEVAL_TELEMETRY_OPT_OUT"] = "YES"
    env["HOME"] = str(workdir)
    result = subprocess.run(
        [str(python), str(PRODUCERS / f"{producer}.py"), str(spec_path), str(out)],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=PRODUCER_TIMEOUT_S,
        check=False,
    )
    if result.returncode != 0:
        pytest.fail(
            f"producer {producer} failed ({result.returncode}):\n{result.stderr[-4000:]}",
            pytrace=False,
        )
    kept = _cache_root() / str(len(_PRODUCED)) / out.name
    _copy(out, kept)
    _PRODUCED[key] = kept


def _cache_root() -> Path:
    """The session's private folder of produced files, removed when the session ends."""
    if not _ROOT:
        root = Path(tempfile.mkdtemp(prefix="citemark-produced-"))
        atexit.register(shutil.rmtree, root, ignore_errors=True)
        _ROOT.append(root)
    return _ROOT[0]


def _copy(source: Path, target: Path) -> None:
    """Copy a producer's output, a folder or a file, to ``target``.

    A file comes with the files a producer writes beside it under longer names
    (``runs.parquet.otlp.jsonl`` beside ``runs.parquet``).
    """
    if source.is_dir():
        shutil.copytree(source, target, dirs_exist_ok=True)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    for path in source.parent.glob(f"{source.name}*"):
        shutil.copyfile(path, target.parent / (target.name + path.name[len(source.name) :]))
