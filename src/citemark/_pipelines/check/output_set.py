"""Whether a check's output folder holds one whole set of files, from one run.

``citemark check`` publishes its files as a set, ``report.json`` last (see
``citemark._contract.artifacts.publishing_together``), but POSIX cannot rename several files
at once: a process killed between two renames leaves new files beside old ones.
`check_output_set` tells such a folder from a whole one. ``report.json`` is the
commit record: it carries the run id and names every other file with the SHA-256
of its bytes; each of those files must be there, hash to that SHA-256 and name the
same run id (every ``rows.jsonl`` and ``judge-calls.jsonl`` line, the page's
``<meta name="citemark-run-id">``, the JUnit ``<property name="run_id">``). A file
of a check's own naming that ``report.json`` does not name is a leftover from
another run, and so is the parts folder of a killed Ray run (one whose lock no live
run holds; a running Ray run's folder is not a problem of the set beside it).

The result is typed and structural: file names (as citemark writes them) and
reason codes, never a file's content.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

from pydantic import BaseModel, ConfigDict

from citemark._judging.replay.calls import JUDGE_CALLS_NAME
from citemark._pipelines.check.junit import JUNIT_NAME
from citemark._pipelines.check.names import HTML_NAME, REPORT_NAME, ROWS_NAME
from citemark._pipelines.scale.parts import leftover_parts

if TYPE_CHECKING:
    import os

__all__ = ["ArtifactProblem", "OutputSetCheck", "check_output_set"]

ReportState = Literal["ok", "missing", "unreadable", "no_run_id"]
"""What ``report.json`` itself is: ``ok``; ``missing``; ``unreadable`` (not a JSON
check report naming its files); ``no_run_id`` (a report from before run ids)."""

ArtifactReason = Literal[
    "missing",
    "sha256_mismatch",
    "run_id_mismatch",
    "no_run_id",
    "not_named",
    "bad_name",
    "leftover_parts",
]
"""Why one file does not belong to the set ``report.json`` names."""

_OWN_NAMES: Final = (ROWS_NAME, HTML_NAME, JUNIT_NAME, JUDGE_CALLS_NAME)
# How much of a page or a JUnit file is read for its run id: it is in the header.
_HEAD_BYTES: Final = 1 << 16
_CHUNK: Final = 1 << 20
_RUN_ID_KEY: Final = b'"run_id": '
_MARKUP_RUN_ID: Final = {
    HTML_NAME: re.compile(rb'<meta name="citemark-run-id" content="([^"]*)">'),
    JUNIT_NAME: re.compile(rb'<property name="run_id" value="([^"]*)"/>'),
}


class ArtifactProblem(BaseModel):
    """One file that does not belong to the set: its name and a reason code."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    name: str
    """The file's name in the folder (as ``report.json`` names it, or citemark's own)."""

    reason: ArtifactReason
    """``missing``: named but absent. ``sha256_mismatch``: its bytes are not the ones
    named. ``run_id_mismatch``: it names another run (in any line, for JSONL).
    ``no_run_id``: it names no run. ``not_named``: a file of a check's own naming that
    ``report.json`` does not name (left by another run). ``bad_name``: the name is
    not a plain file name in the folder, so it was not opened. ``leftover_parts``: a
    Ray run's hidden parts folder (``.citemark-parts.<run id>``) that no live run
    holds, left by a killed run (the next check in the folder removes it)."""


class OutputSetCheck(BaseModel):
    """What `check_output_set` found.

    Example:
        ```python
        import tempfile
        from pathlib import Path

        from citemark.reports import check_output_set

        with tempfile.TemporaryDirectory() as folder:
            found = check_output_set(Path(folder))
            print(found.whole, found.report, found.problems)
        #> False missing ()
        ```
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    report: ReportState
    """The state of ``report.json``, the set's commit record."""

    run_id: str | None = None
    """The run id ``report.json`` names, if it was read."""

    files: tuple[str, ...] = ()
    """The files ``report.json`` names, in its order."""

    problems: tuple[ArtifactProblem, ...] = ()
    """Every file that does not belong, with why; empty for a whole set."""

    @property
    def whole(self) -> bool:
        """Whether the folder is one whole set of one run: report ok, no problem."""
        return self.report == "ok" and not self.problems


def check_output_set(folder: str | os.PathLike[str]) -> OutputSetCheck:
    r"""Say whether a ``citemark check`` output folder is one whole set from one run.

    ``report.json`` must be a check report with a run id; each file it names must
    be present, hash to the SHA-256 it records and name the same run id; no other
    file of a check's naming (``rows.jsonl``, ``report.html``, ``report.junit.xml``,
    ``judge-calls.jsonl``) may be there, nor a killed Ray run's parts folder. Every
    file is read in constant memory.

    Args:
        folder: The ``--out`` folder of a check.

    Returns:
        The findings; ``.whole`` is the verdict.

    Example:
        ```python
        import json
        import subprocess
        import sys
        import tempfile
        from pathlib import Path

        from citemark.reports import check_output_set

        with tempfile.TemporaryDirectory() as folder:
            runs = Path(folder) / "runs.jsonl"
            source = {"text": "Fees are 5%.", "doc_id": "fees"}
            row = {"answer": "Fees are 5% [1].", "sources": [source]}
            runs.write_text(json.dumps(row) + "\n", encoding="utf-8")
            out = Path(folder) / "out"
            command = [sys.executable, "-m", "citemark", "check", str(runs), "--out", str(out)]
            subprocess.run(command, check=True, capture_output=True)
            print(check_output_set(out).whole)
            (out / "rows.jsonl").write_bytes(b"{}\n")  # as if from another run
            print([(p.name, p.reason) for p in check_output_set(out).problems])
        #> True
        #> [('rows.jsonl', 'sha256_mismatch'), ('rows.jsonl', 'no_run_id')]
        ```
    """
    root = Path(folder)
    try:
        raw = (root / REPORT_NAME).read_bytes()
    except FileNotFoundError:
        return OutputSetCheck(report="missing", problems=_strays(root, ()))
    except OSError:
        return OutputSetCheck(report="unreadable")
    named = _named_files(raw)
    if named is None:
        return OutputSetCheck(report="unreadable")
    run_id, files = named
    problems: list[ArtifactProblem] = []
    for name, digest in files.items():
        problems.extend(
            ArtifactProblem(name=name, reason=r) for r in _check_file(root, name, digest, run_id)
        )
    problems.extend(_strays(root, tuple(files)))
    return OutputSetCheck(
        report="ok" if run_id else "no_run_id",
        run_id=run_id,
        files=tuple(files),
        problems=tuple(problems),
    )


def _named_files(raw: bytes) -> tuple[str | None, dict[str, str]] | None:
    """The run id and the named files of a check report; None if it is not one."""
    try:
        report = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):  # nested too deep: not a report
        return None
    check = report.get("check") if isinstance(report, dict) else None
    files = check.get("files") if isinstance(check, dict) else None
    if not isinstance(files, dict) or not all(
        isinstance(name, str) and isinstance(digest, str) for name, digest in files.items()
    ):
        return None
    run_id = report.get("run_id")
    return (run_id if isinstance(run_id, str) and run_id else None), files


def _check_file(root: Path, name: str, digest: str, run_id: str | None) -> list[ArtifactReason]:
    """The reasons one named file does not belong (empty when it does)."""
    if Path(name).name != name or name in {"", ".", ".."}:
        return ["bad_name"]
    try:
        actual, ids = _digest_and_run_ids(root / name, run_id)
    except OSError:  # absent, or not a readable file
        return ["missing"]
    reasons: list[ArtifactReason] = []
    if actual != digest:
        reasons.append("sha256_mismatch")
    if None in ids:
        reasons.append("no_run_id")
    if False in ids:
        reasons.append("run_id_mismatch")
    return reasons


def _digest_and_run_ids(path: Path, run_id: str | None) -> tuple[str, set[bool | None]]:
    """A file's SHA-256, and how the run ids it names compare with ``run_id``.

    The set holds True for a matching id, False for another run's, None for a line
    or file naming none; it is empty where the file's kind names no run, or there
    is no ``run_id`` to compare with. Its size is bounded whatever the file holds.
    """
    hasher = hashlib.sha256()
    seen: set[bool | None] = set()
    if path.suffix == ".jsonl":
        with path.open("rb") as handle:
            for line in handle:
                hasher.update(line)
                if run_id is not None and line.strip():
                    found = _line_run_id(line)
                    seen.add(None if found is None else found == run_id)
        return hasher.hexdigest(), seen
    pattern = _MARKUP_RUN_ID.get(path.name)
    with path.open("rb") as handle:
        head = handle.read(_HEAD_BYTES)
        hasher.update(head)
        while chunk := handle.read(_CHUNK):
            hasher.update(chunk)
    if pattern is not None and run_id is not None:
        match = pattern.search(head)
        seen.add(None if match is None else match.group(1) == run_id.encode("ascii", "replace"))
    return hasher.hexdigest(), seen


def _line_run_id(line: bytes) -> str | None:
    """The run id a JSONL line names: its last key, as citemark writes it."""
    body = line.rstrip()
    at = body.rfind(_RUN_ID_KEY)
    if at >= 0:
        try:
            value = json.loads(body[at + len(_RUN_ID_KEY) : -1])
        except (ValueError, UnicodeDecodeError, RecursionError):
            value = None
        if isinstance(value, str):
            return value
    return None


def _strays(root: Path, named: tuple[str, ...]) -> tuple[ArtifactProblem, ...]:
    """Files of a check's own naming that ``report.json`` does not name; dead parts folders."""
    files = tuple(
        ArtifactProblem(name=name, reason="not_named")
        for name in _OWN_NAMES
        if name not in named and (root / name).exists()
    )
    parts = tuple(
        ArtifactProblem(name=name, reason="leftover_parts") for name in leftover_parts(root)
    )
    return files + parts
