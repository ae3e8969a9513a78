"""``judge-calls.jsonl``: every judge call a check made, one line per call, in input order.

`recording` gives a check a copy of its scorer whose judge is wrapped in a
``citemark._judging.replay.RecordingChat``; the run closes each scored batch with
``JudgeCallRecorder.end_batch``, and `JudgeCallsSink` writes each row's calls, headed
by the row's ``line`` and ``id``, as the row reaches it. A support verifier's judge
(``--verifier judge``, see `recording_verifier`) is recorded into the same file; its
calls belong to no one row (it asks for the claims of a chunk's rows together), so
they are written with ``line`` and ``id`` null, before the rows of the chunk they
were asked for, and carry the entailment prompt's SHA-256 as ``prompt_sha256``.

The file is written like every other output (`citemark._contract.artifacts.AtomicFile`,
renamed into place at the end), and ``report.json`` records its SHA-256, which a
replay checks.
"""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

from citemark._contract.artifacts import AtomicFile
from citemark._judging.replay.calls import JUDGE_CALLS_NAME
from citemark._judging.replay.recorder import JudgeCallRecorder, RecordingChat
from citemark._judging.verifiers.judge import JudgeVerifier
from citemark._pipelines.readers.citemark_rows import CheckRow

if TYPE_CHECKING:
    from collections.abc import Callable

    from citemark._judging.scorer.scorer import CitationScorer
    from citemark._judging.verifiers.base import Verifier
    from citemark._pipelines.check.protocol import CheckedRow, RunFacts, SinkOptions

__all__ = ["JUDGE_CALLS_NAME", "JudgeCallsSink", "call_line", "recording", "recording_verifier"]


def recording(scorer: CitationScorer) -> tuple[CitationScorer, JudgeCallRecorder | None]:
    """A copy of ``scorer`` whose judge records every call, and the recorder; as is without one.

    The copy shares every setting of the original (a shallow copy), so nothing but
    the judge's wrapper differs; the original scorer is not changed.
    """
    judge = scorer.judge
    if judge is None:
        return scorer, None
    recorder = JudgeCallRecorder()
    clone = copy.copy(scorer)
    clone._judge = RecordingChat(judge, recorder, scorer.prompt_sha256)  # noqa: SLF001 - own package
    return clone, recorder


def recording_verifier(verifier: Verifier, recorder: JudgeCallRecorder | None) -> Verifier:
    """``verifier`` with its calls filed in ``recorder`` when it asks a judge; else as is.

    A `JudgeVerifier` is rebuilt over a `RecordingChat` of its own chat, with the same
    concurrency (its identity is the same: the recording chat names the same provider
    and model). Other verifiers make no call to record.
    """
    if recorder is None or not isinstance(verifier, JudgeVerifier):
        return verifier
    chat = RecordingChat(verifier.chat, recorder, verifier.prompt_sha256)
    return JudgeVerifier(chat, concurrency=verifier.concurrency)


def call_line(
    line: int | None, row_id: str | None, call: dict[str, Any], run_id: str | None = None
) -> bytes:
    """One ``judge-calls.jsonl`` line: the row's line and id, the call's fields, the run id."""
    record = {"line": line, "id": row_id, **call}
    if run_id:
        record["run_id"] = run_id
    return json.dumps(record, allow_nan=False).encode("ascii") + b"\n"


class JudgeCallsSink:
    """``judge-calls.jsonl``: each row's judge calls, written as the row arrives.

    Args:
        options: Where to write.
        take: Returns the next row's calls, in input order (``next_row`` of the
            run's recorder, or what a Ray batch carried back).
        loose: Returns, once, the calls that belong to no row made so far
            (``take_loose`` of the run's recorder); they are written before the next
            row's calls, and the last at the end.
    """

    name = JUDGE_CALLS_NAME

    def __init__(
        self,
        options: SinkOptions,
        take: Callable[[], list[dict[str, Any]]],
        loose: Callable[[], list[dict[str, Any]]] = list,
    ) -> None:
        self._file = AtomicFile(options.out_dir / JUDGE_CALLS_NAME)
        self._run_id = options.run_id
        self._take = take
        self._loose = loose
        self.calls = 0
        """How many calls were written."""

    def add(self, row: CheckedRow) -> None:
        """Write the calls made for no row since the last, then the row's own.

        A malformed line made none, and neither did a row a reader left un-assessed:
        it was never scored, so it takes no place in the recorder's queue.
        """
        self._write_loose()
        item = row.item
        if not isinstance(item, CheckRow) or item.unassessed is not None:
            return
        for call in self._take():
            self._file.write(call_line(item.line, item.id, call, self._run_id))
            self.calls += 1

    def finish(self, facts: RunFacts) -> str:  # noqa: ARG002 - the calls need no summary
        """Write any call that belongs to no row, then publish the file."""
        self._write_loose()
        return self._file.commit()

    def _write_loose(self) -> None:
        for call in self._loose():
            self._file.write(call_line(None, None, call, self._run_id))
            self.calls += 1

    def close(self) -> None:
        """Remove the temporary file if the run did not finish."""
        self._file.__exit__(None, None, None)
