"""Recording a judge: every call filed, with its reply or its failure, under the row that made it.

`RecordingChat` wraps any `citemark.ChatModel` and passes each call through
unchanged, reply or exception; it adds nothing and retries nothing. Each call becomes
a `JudgeCall` handed to a `JudgeCallRecorder`, filed under the position of the row
being scored (``citemark._judging.scorer.context.ROW_INDEX``, set by
`citemark.CitationScorer.score_many`), so calls made concurrently still land on their
own rows. After a batch, `JudgeCallRecorder.end_batch` turns the filed calls into one
list per row, in the batch's order, which ``judge-calls.jsonl`` is written from.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from citemark._contract.errors import ChatError
from citemark._judging.replay.calls import CallError, JudgeCall, full_prompt_sha256
from citemark._judging.scorer.context import ROW_INDEX
from citemark._model.completion import finish_reason_of

if TYPE_CHECKING:
    from citemark._model.completion import ChatModel

__all__ = ["JudgeCallRecorder", "RecordingChat"]


class JudgeCallRecorder:
    """Judge calls filed by row position, handed out one row at a time in input order."""

    def __init__(self) -> None:
        self._filed: dict[int | None, list[dict[str, Any]]] = {}
        self._rows: deque[list[dict[str, Any]]] = deque()
        self.loose: list[dict[str, Any]] = []
        """Calls made outside a batch (no row position), kept rather than dropped."""

    def file(self, call: JudgeCall) -> None:
        """File a call under the row being scored (read from the running task's context)."""
        self._filed.setdefault(ROW_INDEX.get(), []).append(call.model_dump(mode="json"))

    def take_batch(self, rows: int) -> list[list[dict[str, Any]]]:
        """Close a batch of ``rows`` rows and return one list of calls per row, in order.

        Calls filed under no position of the batch are kept in `loose`.
        """
        batch = [self._filed.pop(index, []) for index in range(rows)]
        for calls in self._filed.values():
            self.loose.extend(calls)
        self._filed.clear()
        return batch

    def end_batch(self, rows: int) -> None:
        """Close a batch of ``rows`` rows and queue its calls for `next_row`."""
        self._rows.extend(self.take_batch(rows))

    def take_loose(self) -> list[dict[str, Any]]:
        """Every call filed under no row so far, once: `loose` and those made since a batch.

        A support verifier's judge asks its questions outside ``score_many`` (for
        claims of several rows at once), so its calls carry no row position.
        """
        calls = [*self.loose, *self._filed.pop(None, [])]
        self.loose = []
        return calls

    def next_row(self) -> list[dict[str, Any]]:
        """The calls of the next row in input order (empty when it made none)."""
        return self._rows.popleft() if self._rows else []


class RecordingChat:
    """A `ChatModel` that passes every call to ``chat`` and files a `JudgeCall` for it.

    Args:
        chat: The judge's chat, called exactly as before.
        recorder: Where the calls are filed.
        prompt_sha256: The SHA-256 of the prompt template the caller fills.
    """

    def __init__(self, chat: ChatModel, recorder: JudgeCallRecorder, prompt_sha256: str) -> None:
        self._chat = chat
        self._recorder = recorder
        self._template_sha256 = prompt_sha256

    @property
    def provider(self) -> str:
        """The wrapped chat's provider."""
        return self._chat.provider

    @property
    def model_name(self) -> str:
        """The wrapped chat's model name."""
        return self._chat.model_name

    @property
    def chat(self) -> ChatModel:
        """The wrapped chat."""
        return self._chat

    async def complete(self, prompt: str) -> str:
        """Call the wrapped chat once; file the reply or the failure; return or raise it as is."""
        base: dict[str, Any] = {
            "provider": self._chat.provider,
            "model": self._chat.model_name,
            "prompt_sha256": self._template_sha256,
            "full_prompt_sha256": full_prompt_sha256(prompt),
        }
        try:
            reply = await self._chat.complete(prompt)
        except ChatError as exc:
            error = CallError(
                type=type(exc).__name__,
                provider=exc.provider,
                model=exc.model,
                status=exc.status,
                reason=exc.reason,
                detail=exc.detail,
                provider_code=exc.provider_code,
            )
            self._recorder.file(JudgeCall(**base, status="error", error=error))
            raise
        except Exception as exc:
            # Only the type's name: another exception's message may quote the prompt.
            error = CallError(type=type(exc).__name__)
            self._recorder.file(JudgeCall(**base, status="error", error=error))
            raise
        call = JudgeCall(
            **base,
            status="ok",
            reply=str.__str__(reply),
            finish_reason=finish_reason_of(reply),
        )
        self._recorder.file(call)
        return reply
