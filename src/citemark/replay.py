"""Recorded judge calls, and runs re-derived from them without a live model.

Every judge call ``citemark check`` makes is recorded to ``judge-calls.jsonl`` beside
``rows.jsonl`` (a `JudgeCall` per line, headed by the row's ``line`` and ``id``), and
``report.json`` records the file's SHA-256. `ReplayChat` is a `citemark.ChatModel`
that answers from such a recording by the SHA-256 of the whole prompt, and refuses a
prompt it does not hold with `JudgeReplyNotRecordedError`, so the row is un-assessed
(``judge_reply_not_recorded``) instead of being sent to a model.
``citemark check --replay-judge DIR`` builds one with `ReplayChat.from_run`.

See ``docs/replay.md``.
"""

from __future__ import annotations

from citemark._contract.errors import JudgeReplyNotRecordedError, ReplayError
from citemark._judging.replay.calls import (
    JUDGE_CALLS_NAME,
    CallError,
    JudgeCall,
    full_prompt_sha256,
)
from citemark._judging.replay.recorder import JudgeCallRecorder, RecordingChat
from citemark._judging.replay.replay import ReplayChat
from citemark._public import publish

__all__ = [
    "JUDGE_CALLS_NAME",
    "CallError",
    "JudgeCall",
    "JudgeCallRecorder",
    "JudgeReplyNotRecordedError",
    "RecordingChat",
    "ReplayChat",
    "ReplayError",
    "full_prompt_sha256",
]

publish(globals(), __name__, __all__)
