"""The record of one judge call, as ``judge-calls.jsonl`` holds it, one per line.

A record names the judge (provider and model as its chat reports them), the SHA-256
of the prompt template the scorer filled, the SHA-256 of the whole prompt that was
sent, and what came back: the raw reply and, where the chat tells it, the finish
reason; or, for a call that failed, the error's type and its structural facts. In
the file each record is preceded by the ``line`` and ``id`` of the row that made the
call. The raw reply is data, like ``rows.jsonl``: it is written to the artifact and
never to a message, a log record or a span.
"""

from __future__ import annotations

import hashlib
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from citemark._contract.artifacts import Sha256

__all__ = ["JUDGE_CALLS_NAME", "CallError", "JudgeCall", "full_prompt_sha256"]

JUDGE_CALLS_NAME: Final = "judge-calls.jsonl"
"""The file a check writes its judge calls to, beside ``rows.jsonl``."""


def full_prompt_sha256(prompt: str) -> str:
    """The SHA-256 of a whole prompt's UTF-8 bytes (a lone surrogate passes as itself)."""
    return hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()


class CallError(BaseModel):
    """Why a recorded call failed: the exception's type and, for a `ChatError`, its facts."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    type: str
    """The exception's class name, e.g. ``"ChatError"``."""
    provider: str | None = None
    """The provider the `ChatError` names; None for another exception."""
    model: str | None = None
    """The model the `ChatError` names; None for another exception."""
    status: int | None = None
    """The HTTP status, or None when no response arrived (or for another exception)."""
    reason: str | None = None
    """The `ChatError`'s stable reason code; None for another exception."""
    detail: str | None = None
    """The `ChatError`'s fixed sentence, written by citemark; None for another exception."""
    provider_code: str | None = None
    """The provider's machine error code the `ChatError` kept, if any."""


class JudgeCall(BaseModel):
    """One judge call: who was asked, which prompt, and the raw answer or the failure."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    provider: str
    """The judge's provider, as its chat reports it."""
    model: str
    """The judge's model name, as its chat reports it."""
    prompt_sha256: Sha256
    """The SHA-256 of the prompt template (the scorer's ``prompt_sha256``)."""
    full_prompt_sha256: Sha256
    """The SHA-256 of the whole prompt sent; the key a replay looks the reply up by."""
    status: Literal["ok", "error"]
    """``"ok"`` when a reply came back, ``"error"`` when the call raised."""
    reply: str | None = None
    """The raw reply, exactly as the chat returned it; None for a failed call."""
    finish_reason: str | None = None
    """Why the model stopped, when the chat exposes it; None when unknown."""
    error: CallError | None = None
    """Why the call failed; None for a reply."""
