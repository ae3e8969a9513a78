"""Reading one ``citemark check`` output folder for a comparison, tolerantly and streamed.

``report.json`` is read for the fields a comparison needs only (the input hash, the
check's configuration, the judge, the versions), whatever else it holds, so a report
of schema version 1 or 2, or one with fields this version does not know, is read all
the same. ``rows.jsonl`` is streamed one record at a time: each line is validated
straight from its bytes into a typed record whose findings are a `ScoreFindings`
(never read by string key), and a line that does not validate is parsed again
strictly (`citemark._strictjson.loads_strict`) only to say why, in structural terms.
``report.html`` is read only for which rows its page shows, so a change can link to
the row's record there. `read_ids` streams only the ids a run's rows can be matched
by (not the per-run ones), for the comparison to learn whether two runs share any.
"""

from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from citemark._artifacts import ModelIdentity, open_regular
from citemark._check.names import REPORT_NAME, ROWS_NAME
from citemark._diff.digests import RowDigests
from citemark._errors import RunDiffError
from citemark._scorer.findings import ScoreFindings
from citemark._strictjson import StrictJSONError, line_reason, loads_strict

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

__all__ = [
    "REPORT_NAME",
    "ROWS_NAME",
    "MatchKind",
    "RowFacts",
    "RunInfo",
    "read_ids",
    "read_report",
    "read_rows",
    "shown_lines",
]

PAGE_NAME: Final = "report.html"
MatchKind = Literal["id", "question", "line"]
"""What a row was matched by: its id, its question's digest, or its line."""
_PER_RUN: Final = "run"

_MAX_REPORT_BYTES: Final = 64 * 1024 * 1024
_MAX_PAGE_BYTES: Final = 64 * 1024 * 1024
_DATA_BLOCK: Final = re.compile(
    rb'<script type="application/json" id="data">(.*?)</script>', re.DOTALL
)


class RunInfo(NamedTuple):
    """What a comparison reads from one run's ``report.json``."""

    name: str
    """The folder's name, for messages."""
    input_sha256: str
    """The input's SHA-256 as the report states it."""
    schema_version: int
    """The report's schema version."""
    citemark_version: str
    """The citemark version that made the report."""
    config: dict[str, Any]
    """The check's configuration as recorded."""
    judge: ModelIdentity | None
    """The check's judge, or None."""


class _Check(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    judge: ModelIdentity | None = None


class _Report(BaseModel):
    """The fields of ``report.json`` a comparison reads; every other field is ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    schema_version: int = 1
    citemark_version: str = ""
    config: dict[str, Any] = Field(default_factory=dict)
    input_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    check: _Check


class _Record(BaseModel):
    """A ``rows.jsonl`` record, typed: what a comparison reads of it."""

    # Only keys are cached: the parser's string cache would otherwise fill with ids.
    model_config = ConfigDict(extra="ignore", frozen=True, strict=True, cache_strings="keys")

    line: int
    id: str | None = None
    id_scope: str | None = None
    outcome: str
    reason: str | None = None
    error: str | None = None
    details: ScoreFindings | None = None
    digests: RowDigests | None = None


class RowFacts(NamedTuple):
    """One record of ``rows.jsonl`` as a comparison sees it."""

    record: int
    """Its line in ``rows.jsonl`` (1-based)."""
    line: int
    """The row's line in the run's input."""
    id: str | None
    """The row's id, or None."""
    per_run: bool
    """Whether the id names one run only (the record's ``"id_scope": "run"``), so rows
    are never matched by it."""
    outcome: str
    """``passed``, ``failed``, ``unassessed`` or ``malformed``."""
    reason: str | None
    """The un-assessed reason, or a malformed line's reason."""
    violation: bool
    """Whether the row failed on a deterministic finding."""
    judge_band: int | None
    """The judge's band, or None."""
    verdicts: tuple[str, ...]
    """The judge's per-citation outcomes, in order."""
    digests: RowDigests | None
    """The row's input digests, when its record carries them."""


def _refuse_report(folder: Path) -> RunDiffError:
    return RunDiffError(f"{folder.name}/{REPORT_NAME} is not the report of a citemark check")


def _read_capped(path: Path, most: int) -> bytes | None:
    """The bytes of a regular file, or None when it holds more than ``most``."""
    with open_regular(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > most:
            return None
        # At most one byte past the size stated: a file growing as it is read is not
        # read past its cap (a read of the cap itself would allocate all of it).
        data = handle.read(size + 1)
    return None if len(data) > most else data


def read_report(folder: Path) -> RunInfo:
    """Read what a comparison needs from ``folder/report.json``.

    Raises:
        RunDiffError: the file is missing, unreadable, or not a check's report.
    """
    path = folder / REPORT_NAME
    try:
        data = _read_capped(path, _MAX_REPORT_BYTES)
    except OSError:
        msg = (
            f"{folder.name}/{REPORT_NAME} is missing or cannot be read: "
            "is it a check output folder?"
        )
        raise RunDiffError(msg) from None
    if data is None:
        raise _refuse_report(folder)
    try:
        report = _Report.model_validate_json(data)
    except ValidationError:
        report = None
    if report is None:
        raise _refuse_report(folder)
    return RunInfo(
        name=folder.name,
        input_sha256=report.input_sha256,
        schema_version=report.schema_version,
        citemark_version=report.citemark_version,
        config=report.config,
        judge=report.check.judge,
    )


def shown_lines(folder: Path) -> frozenset[int] | None:
    """The input lines of the rows ``folder/report.html`` shows, or None when unknown.

    The page's data block lists its rows, each led by its input line (the ``N`` of
    ``report.html#row-N``); a page that is missing, too large or not in that shape
    gives None.
    """
    try:
        data = _read_capped(folder / PAGE_NAME, _MAX_PAGE_BYTES)
    except OSError:
        return None
    found = None if data is None else _DATA_BLOCK.search(data)
    if found is None:
        return None
    try:
        rows = json.loads(found.group(1))["rows"]
        return frozenset(r[0] for r in rows if isinstance(r[0], int))
    except (ValueError, KeyError, TypeError, IndexError, RecursionError):
        return None


def read_rows(folder: Path) -> Iterator[RowFacts]:
    """Stream ``folder/rows.jsonl``, one `RowFacts` per record, in file order.

    Raises:
        RunDiffError: the file is missing or a line is not a row record.
    """
    path = folder / ROWS_NAME
    try:
        handle = open_regular(path)
    except OSError:
        msg = f"{folder.name}/{ROWS_NAME} is missing or cannot be read"
        raise RunDiffError(msg) from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            yield _facts(number, _record(folder, number, raw))


def _record(folder: Path, number: int, raw: bytes) -> _Record:
    record: _Record | None
    try:
        record = _Record.model_validate_json(raw)
    except ValidationError:
        record = None
    if record is not None:
        return _whole(folder, number, record)
    # The fast reader refused the line: read it again, strictly, to say why.
    parsed: object = None
    problem: str | None = None
    try:
        parsed = loads_strict(raw.decode("utf-8"), max_bytes=None)
    except StrictJSONError as exc:
        problem = line_reason(exc)
    except UnicodeDecodeError:
        problem = "not UTF-8"
    where = f"{folder.name}/{ROWS_NAME} line {number} is not a row record"
    if problem is not None:
        msg = f"{where} ({problem})"
        raise RunDiffError(msg)
    try:
        # JSON the fast reader cannot take (a lone surrogate escape) but Python's can.
        fallback = _Record.model_validate(parsed, strict=False)
    except ValidationError:
        fallback = None
    if fallback is None:
        # Raised outside the except block: the refusal chains nothing.
        raise RunDiffError(where)
    return _whole(folder, number, fallback)


def _whole(folder: Path, number: int, record: _Record) -> _Record:
    """The record, unless it is a row's and lacks its findings."""
    if record.outcome != "malformed" and record.details is None:
        msg = f"{folder.name}/{ROWS_NAME} line {number} is not a row record"
        raise RunDiffError(msg)
    return record


def _facts(number: int, record: _Record) -> RowFacts:
    findings = record.details
    malformed = record.outcome == "malformed"
    if malformed:
        findings = None
    row_id = None if malformed else record.id
    digests = None if malformed else record.digests
    return RowFacts(
        record=number,
        line=record.line,
        id=row_id,
        per_run=row_id is not None and record.id_scope == _PER_RUN,
        outcome=record.outcome,
        reason=record.error if malformed else record.reason,
        violation=(record.outcome == "failed" and findings is not None and findings.violated),
        judge_band=None if findings is None else findings.raw_score,
        verdicts=() if findings is None else _verdict_outcomes(findings),
        digests=digests,
    )


class _Ids(BaseModel):
    """What `read_ids` reads of a record: its id and whether it names one run only."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True, cache_strings="keys")

    id: str | None = None
    id_scope: str | None = None
    outcome: str


def read_ids(folder: Path) -> Iterator[str]:
    """Stream the ids of ``folder/rows.jsonl`` that rows can be matched by, in file order.

    A per-run id (``"id_scope": "run"``) and a malformed line's are left out; so is a
    line that is not a record, which `read_rows` refuses with its reason.

    Raises:
        RunDiffError: the file is missing.
    """
    path = folder / ROWS_NAME
    try:
        handle = open_regular(path)
    except OSError:
        msg = f"{folder.name}/{ROWS_NAME} is missing or cannot be read"
        raise RunDiffError(msg) from None
    with handle:
        for raw in handle:
            record = _ids(raw)
            if (
                record is not None
                and record.id is not None
                and record.id_scope != _PER_RUN
                and record.outcome != "malformed"
            ):
                yield record.id


def _ids(raw: bytes) -> _Ids | None:
    try:
        return _Ids.model_validate_json(raw)
    except ValidationError:
        pass
    try:
        # JSON the fast reader cannot take (a lone surrogate escape) but Python's can.
        return _Ids.model_validate(json.loads(raw.decode("utf-8")), strict=False)
    except (ValueError, RecursionError):
        return None


def _verdict_outcomes(findings: ScoreFindings) -> tuple[str, ...]:
    return tuple(str(verdict.get("outcome")) for verdict in findings.verdicts)
