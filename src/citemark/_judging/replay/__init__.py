"""Recorded judge calls and their replay: what the judge was asked, what it said, and again.

``calls`` holds the record of one judge call (`JudgeCall`) and the prompt hash both
sides compute; ``recording`` wraps a judge so that every call is filed under the row
that made it; ``replay`` serves recorded replies by prompt hash (`ReplayChat`) and
refuses a prompt it never saw with `citemark.JudgeReplyNotRecordedError`, so nothing
reaches a live model.
"""

from citemark._judging.replay.calls import (
    JUDGE_CALLS_NAME,
    CallError,
    JudgeCall,
    full_prompt_sha256,
)
from citemark._judging.replay.recorder import JudgeCallRecorder, RecordingChat
from citemark._judging.replay.replay import ReplayChat

__all__ = [
    "JUDGE_CALLS_NAME",
    "CallError",
    "JudgeCall",
    "JudgeCallRecorder",
    "RecordingChat",
    "ReplayChat",
    "full_prompt_sha256",
]
