"""Test doubles for code that uses citemark, shipped with the library.

`ScriptedChat` stands in for a model: it returns scripted replies in order and
records every prompt it receives, so a test can assert both what the model was
asked and how many times. Use it to test your own chains offline, the way
``httpx.MockTransport`` or ``structlog.testing`` are used.

`assert_cited` is citemark's deterministic check as a test assertion, and
`citation_outcome` the one rule it, the pytest plugin's report and ``citemark
check`` share for what a row's citations amount to (`CITATION_OUTCOMES`); with the
pytest plugin citemark installs, ``--citemark-report DIR`` writes a ``citemark
check`` report of every assertion in the run.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, TypeAlias

from citemark._judging.assertions import (
    CITATION_OUTCOMES,
    CitationAssertionError,
    CitationOutcome,
    assert_cited,
    citation_outcome,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

__all__ = [
    "CITATION_OUTCOMES",
    "CitationAssertionError",
    "CitationOutcome",
    "Reply",
    "ScriptExhaustedError",
    "ScriptedChat",
    "assert_cited",
    "citation_outcome",
]

Reply: TypeAlias = "str | BaseException | type[BaseException] | Callable[[str], str]"
"""One scripted reply: a string to return, an exception (instance or class) to
raise, or a function of the prompt that returns the reply (which is how a test
scripts a model that leaks or echoes what it was shown)."""


class ScriptExhaustedError(AssertionError):
    """Raised when a `ScriptedChat` is asked for more replies than it was given.

    An ``AssertionError`` on purpose: it is a broken test, not a model failure, so
    no citemark error handler (which catches `citemark.CitemarkError`) absorbs it.
    """


class ScriptedChat:
    """A `citemark.ChatModel` that replies from a script.

    Example:
        ```python
        import asyncio

        from citemark.testing import ScriptedChat

        chat = ScriptedChat(["The license terminates [1].", lambda prompt: prompt.upper()])
        print(asyncio.run(chat.complete("first")))
        #> The license terminates [1].
        print(asyncio.run(chat.complete("second")))
        #> SECOND
        print(chat.prompts)
        #> ['first', 'second']
        ```
    """

    def __init__(
        self,
        replies: Iterable[Reply],
        *,
        provider: str = "scripted",
        model_name: str = "scripted-chat",
        delay: float = 0.0,
    ) -> None:
        """Script the replies.

        Args:
            replies: Returned in order, one per call. A string is returned as is; an
                exception instance is raised; a callable is called with the prompt
                and its result returned.
            provider: The provider name reported to citemark.
            model_name: The model name reported to citemark.
            delay: Seconds to sleep before each reply, to simulate latency.
        """
        self._replies = list(replies)
        self._provider = provider
        self._model_name = model_name
        self._delay = delay
        self.prompts: list[str] = []
        """Every prompt received, in order, including the one that exhausted the script."""

    @property
    def provider(self) -> str:
        """The scripted provider name."""
        return self._provider

    @property
    def model_name(self) -> str:
        """The scripted model name."""
        return self._model_name

    @property
    def remaining(self) -> int:
        """How many scripted replies have not been used yet."""
        return max(0, len(self._replies) - len(self.prompts))

    async def complete(self, prompt: str) -> str:
        """Record ``prompt`` and return (or raise) the next scripted reply.

        Raises:
            ScriptExhaustedError: every scripted reply has been used.
        """
        index = len(self.prompts)
        self.prompts.append(prompt)
        if self._delay:
            await asyncio.sleep(self._delay)
        if index >= len(self._replies):
            msg = (
                f"ScriptedChat has no reply left: it was scripted with "
                f"{len(self._replies)} replies and asked for reply {index + 1}"
            )
            raise ScriptExhaustedError(msg)
        reply = self._replies[index]
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, type):
            raise reply
        if isinstance(reply, str):
            return reply
        return reply(prompt)
