"""The chat seam's contract: the `ChatModel` protocol and the `Completion` a chat returns.

Everything here is plain Python, so the modules that only talk *about* a chat (the
scorer, the judge, synthesis, replay, redaction) load without the HTTP client.
`citemark._model.chat` holds `OpenAIChat`, the one implementation that needs httpx, and
re-exports these names.
"""

from __future__ import annotations

import re
from typing import Final, Protocol, Self, runtime_checkable

__all__ = [
    "DEFAULT_MAX_REPLY_BYTES",
    "MACHINE_CODE",
    "ChatModel",
    "Completion",
    "finish_reason_of",
    "is_truncated",
]

# The most bytes of decoded body a reply may have. A chat reply is text; 8 MiB is
# far above any model's output and far below what hurts the process.
DEFAULT_MAX_REPLY_BYTES: Final = 8 * 1024 * 1024

# What is kept of a provider's own words: a short machine code (``finish_reason``,
# ``error.code``, ``error.type``), never a message, which may quote the prompt.
MACHINE_CODE: Final = re.compile(r"[a-z0-9_.-]{1,64}")


class Completion(str):
    """A completion's text, plus how the generation ended.

    `OpenAIChat.complete` returns one. It *is* the text (a `str` subclass), so the
    `ChatModel` protocol stays ``complete(prompt) -> str`` and every caller that
    treats it as a string keeps working; callers that care read `finish_reason`
    through `finish_reason_of`, which gives ``None`` for a plain `str` (a chat
    that does not report it). Any `ChatModel` may return one, and
    `citemark.testing.ScriptedChat` returns a scripted one as it is.

    The side channel lasts only as long as the object: string operations
    (``strip``, ``replace``, concatenation) return a plain `str`, so read it where
    the completion arrives.

    Example:
        ```python
        from citemark import Completion
        from citemark._model.completion import finish_reason_of, is_truncated

        reply = Completion("The fee is", finish_reason="length")
        print(reply, finish_reason_of(reply), is_truncated(reply), is_truncated("done"))
        #> The fee is length True False
        ```
    """

    __slots__ = ("finish_reason",)

    finish_reason: str | None
    """The provider's ``finish_reason`` (``stop``, ``length``, ...), or None when
    it sent none or one that is not a short machine code."""

    def __new__(cls, text: str, finish_reason: str | None = None) -> Self:
        """Wrap ``text``; ``finish_reason`` is kept only when it is a short machine code."""
        completion = super().__new__(cls, text)
        completion.finish_reason = (
            finish_reason
            if isinstance(finish_reason, str) and MACHINE_CODE.fullmatch(finish_reason)
            else None
        )
        return completion

    def __reduce__(self) -> tuple[object, ...]:
        """Pickle as the text and the finish reason."""
        return (type(self), (str(self), self.finish_reason))


def finish_reason_of(completion: str) -> str | None:
    """The finish reason a chat reported with ``completion``, or None."""
    return completion.finish_reason if isinstance(completion, Completion) else None


def is_truncated(completion: str) -> bool:
    """Whether the model stopped at its token limit (``finish_reason == "length"``)."""
    return finish_reason_of(completion) == "length"


@runtime_checkable
class ChatModel(Protocol):
    """A model citemark can ask for one completion at a time."""

    @property
    def provider(self) -> str:
        """Who serves the model, e.g. ``"openai-compatible"``; recorded in reports."""

    @property
    def model_name(self) -> str:
        """The model's name as the provider knows it; recorded in reports."""

    async def complete(self, prompt: str) -> str:
        """Return the completion for ``prompt``.

        Raises:
            ChatError: the transport or the provider failed. Implementations make
                one attempt and never retry.
        """
