"""Reading one ``citemark check`` output folder for a comparison, tolerantly and streamed.

``report.json`` is read for the fields a comparison needs only (the input hash, the
check's configuration, the judge, the versions), whatever else it holds, so a report
of schema version 1 or 2, or one with fields this version does not know, is read all
the same. ``rows.jsonl`` is streamed one record at a time: each line is validated
straight from its bytes into a typed record whose findings are a `ScoreFindings`
(never read by string key), and a line that does not validate is parsed again
strictly (`citemark._model.strictjson.loads_strict`) only to say why, in structural terms.

``rows.jsonl`` is read as the run its ``report.json`` describes, or refused: the same
tests `citemark.reports.check_output_set` makes of that file, made on the bytes as
they stream by rather than in a pass of their own. Every record must name the
report's run id, the file's SHA-256 must be the one the report's ``files`` names, and
it must hold as many records as the report counts rows and malformed lines (each test
where the report records what it needs: a report from before run ids names no run).
A record with a duplicated id, another run's file, a record edited after the run: each
is a `RunDiffError`, never a comparison of rows that are not the run's. A record's
input digests that are not 16 lowercase hex digits, or are all zeros, are read as not
recorded.
``report.html`` is read only for which rows its page shows, so a change can link to
the row's record there. `read_ids` streams only the ids a run's rows can be matched
by (not the per-run ones), for the comparison to learn whether two runs share any.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from citemark._contract.artifacts import ModelIdentity, open_regular
from citemark._contract.errors import RunDiffError
from citemark._judging.scorer.findings import ScoreFindings
from citemark._model.strictjson import StrictJSONError, line_reason, loads_strict
from citemark._pipelines.check.names import REPORT_NAME, ROWS_NAME
from citemark._pipelines.diff.digests import DIGEST_CHARS, RowDigests
from citemark._pipelines.diff.support import SupportMarks, SupportVerifier, support_marks

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

__all__ = [
    "REPORT_NAME",
    "ROWS_NAME",
    "MatchKind",
    "RowFacts",
    "RowsSeal",
    "RunInfo",
    "read_ids",
    "read_report",
    "read_rows",
    "read_support",
    "shown_lines",
]

PAGE_NAME: Final = "report.html"
MatchKind = Literal["id", "question", "line"]
"""What a row was matched by: its id, its question's digest, or its line."""
_PER_RUN: Final = "run"

_MAX_REPORT_BYTES: Final = 64 * 1024 * 1024
_MAX_PAGE_BYTES: Final = 64 * 1024 * 1024
_DIGEST: Final = re.compile(f"[0-9a-f]{{{DIGEST_CHARS}}}")
_ZEROS: Final = "0" * DIGEST_CHARS
_DATA_BLOCK: Final = re.compile(
    rb'<script type="application/json" id="data">(.*?)</script>', re.DOTALL
)


class RowsSeal(NamedTuple):
    """What ``report.json`` says its ``rows.jsonl`` is; None where it does not say."""

    run_id: str | None = None
    """The run id every record must name."""
    sha256: str | None = None
    """The SHA-256 of the file's bytes, from the report's ``files``."""
    named: bool = True
    """False when the report lists its files and ``rows.jsonl`` is not among them."""
    records: int | None = None
    """How many records the file holds: the rows the report counts, malformed lines included."""


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
    seal: RowsSeal
    """What the report says its ``rows.jsonl`` holds, for `read_rows` to hold it to."""
    verifier: SupportVerifier | None = None
    """The support verifier of ``check --verifier``, or None when the run had none."""


class _SupportRun(BaseModel):
    """What a comparison reads of ``report.json``'s ``check.support``: the verifier."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    verifier: SupportVerifier


class _Check(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    judge: ModelIdentity | None = None
    support: _SupportRun | None = None
    files: dict[str, str] | None = None
    rows: int | None = None
    malformed: int | None = None


class _Report(BaseModel):
    """The fields of ``report.json`` a comparison reads; every other field is ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    schema_version: int = 1
    citemark_version: str = ""
    config: dict[str, Any] = Field(default_factory=dict)
    input_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    check: _Check
    run_id: str | None = None

    def seal(self) -> RowsSeal:
        """What the report says of its ``rows.jsonl``."""
        files, check = self.check.files, self.check
        records = None
        if check.rows is not None and check.malformed is not None:
            records = check.rows + check.malformed
        return RowsSeal(
            run_id=self.run_id or None,
            sha256=None if files is None else files.get(ROWS_NAME),
            named=files is None or ROWS_NAME in files,
            records=records,
        )


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
    run_id: str | None = None


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
    support: str | None = None
    """The row's support verdicts in short (`SupportMarks.key`), when its record has them."""
    offset: int = 0
    """Where its record starts in ``rows.jsonl``, in bytes, to read its verdicts again."""
    marks: SupportMarks | None = None
    """The verdicts themselves: held for the row being compared only, never indexed."""


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
        seal=report.seal(),
        verifier=None if report.check.support is None else report.check.support.verifier,
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


def read_rows(folder: Path, seal: RowsSeal) -> Iterator[RowFacts]:
    """Stream ``folder/rows.jsonl``, one `RowFacts` per record, in file order.

    The file is held to what its report says (``seal``, `RunInfo.seal`): each
    record's run id as it is read, the SHA-256 and the number of records once the
    last one is (so a refusal may come after every record was yielded).

    Raises:
        RunDiffError: the file is missing, a line is not a row record, or the file is
            not the one ``seal`` describes.
    """
    path = folder / ROWS_NAME
    if not seal.named:
        msg = (
            f"{folder.name}/{REPORT_NAME} does not name a {ROWS_NAME}: "
            "it is not the report of these rows"
        )
        raise RunDiffError(msg)
    try:
        handle = open_regular(path)
    except OSError:
        msg = f"{folder.name}/{ROWS_NAME} is missing or cannot be read"
        raise RunDiffError(msg) from None
    hasher = hashlib.sha256()
    records = offset = 0
    with handle:
        for number, raw in enumerate(handle, start=1):
            start, offset = offset, offset + len(raw)
            hasher.update(raw)
            records = number
            record = _record(folder, number, raw)
            if seal.run_id is not None and record.run_id != seal.run_id:
                msg = (
                    f"{folder.name}/{ROWS_NAME} line {number} is not from the run "
                    f"{folder.name}/{REPORT_NAME} describes (its run_id differs)"
                )
                raise RunDiffError(msg)
            yield _facts(number, record, start)
    _hold_to(folder, seal, hasher.hexdigest(), records)


def _hold_to(folder: Path, seal: RowsSeal, sha256: str, records: int) -> None:
    """Refuse a ``rows.jsonl`` whose bytes or record count are not the ones its report names."""
    rows, report = f"{folder.name}/{ROWS_NAME}", f"{folder.name}/{REPORT_NAME}"
    counted = ""
    if seal.records is not None and seal.records != records:
        counted = f": it holds {records} records where the report counts {seal.records}"
    if seal.sha256 is not None and sha256 != seal.sha256:
        msg = f"{rows} is not the file {report} names (its SHA-256 differs){counted}"
        raise RunDiffError(msg)
    if counted:
        msg = f"{rows} is not the file {report} describes{counted}"
        raise RunDiffError(msg)


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


def _facts(number: int, record: _Record, offset: int) -> RowFacts:
    findings = record.details
    malformed = record.outcome == "malformed"
    if malformed:
        findings = None
    row_id = None if malformed else record.id
    digests = None if malformed or not _recorded(record.digests) else record.digests
    marks = None if findings is None else support_marks(findings.support)
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
        support=None if marks is None else marks.key,
        offset=offset,
        marks=marks,
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


def _recorded(digests: RowDigests | None) -> bool:
    """Whether a record's digests are digests: 16 lowercase hex digits each, not all zeros."""
    if digests is None:
        return False
    return (
        _is_digest(digests.answer)
        and _is_digest(digests.sources)
        and (digests.question is None or _is_digest(digests.question))
    )


def _is_digest(value: str) -> bool:
    return _DIGEST.fullmatch(value) is not None and value != _ZEROS


def _verdict_outcomes(findings: ScoreFindings) -> tuple[str, ...]:
    return tuple(str(verdict.get("outcome")) for verdict in findings.verdicts)


def read_support(folder: Path, offset: int, key: str) -> SupportMarks:
    """The support verdicts of the record at ``offset`` of ``folder/rows.jsonl``, read again.

    A comparison indexes each old row's verdicts in short (``key``) and reads them
    whole only for a row whose verdicts changed; the record read must still give
    ``key``.

    Raises:
        RunDiffError: the file cannot be read, or the record there no longer gives ``key``
            (the file changed while it was compared).
    """
    where = f"{folder.name}/{ROWS_NAME}"
    try:
        with open_regular(folder / ROWS_NAME) as handle:
            handle.seek(offset)
            raw = handle.readline()
    except OSError:
        msg = f"{where} cannot be read again"
        raise RunDiffError(msg) from None
    record: _Record | None = None
    try:
        record = _Record.model_validate_json(raw)
    except ValidationError:
        with contextlib.suppress(ValueError, RecursionError, ValidationError):
            # JSON the fast reader cannot take (a lone surrogate escape) but Python's can.
            record = _Record.model_validate(json.loads(raw.decode("utf-8")), strict=False)
    marks = None
    if record is not None and record.details is not None:
        marks = support_marks(record.details.support)
    if marks is None or marks.key != key:
        msg = f"{where} changed while it was compared"
        raise RunDiffError(msg)
    return marks
