"""A scripted LlamaIndex LLM for testing citation pipelines offline.

`ScriptedLLM` is a small ``CustomLLM``: it returns scripted replies in order and
records every prompt, for ``complete``, ``chat``, their streaming forms and the async
methods alike. Use it instead of LlamaIndex's ``MockLLM`` for anything about
citations: ``MockLLM`` echoes its prompt, and a prompt shows every source's marker,
so its "answer" cites whatever it was shown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.llms import (
    CompletionResponse,
    CompletionResponseGen,
    CustomLLM,
    LLMMetadata,
)
from llama_index.core.llms.callbacks import llm_completion_callback

from citemark.testing import ScriptExhaustedError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ["Reply", "ScriptedLLM"]

Reply: TypeAlias = "str | Sequence[str] | Callable[[str], str]"
"""One scripted reply: a string, the exact chunks a stream yields (joined when not
streaming), or a function of the prompt that returns the reply."""


class ScriptedLLM(CustomLLM):
    """A LlamaIndex LLM that replies from a script and records every prompt.

    Example:
        ```python
        from llama_index.postprocessor.citemark.testing import ScriptedLLM

        llm = ScriptedLLM(replies=["It ends [1].", ["It ", "ends [", "2]."]])
        print(llm.complete("first").text)
        #> It ends [1].
        print([chunk.delta for chunk in llm.stream_complete("second")])
        #> ['It ', 'ends [', '2].']
        print(llm.prompts)
        #> ['first', 'second']
        ```
    """

    replies: list[Any] = Field(default_factory=list)
    """The replies, one per call, in order (see `Reply`)."""

    model_name: str = "scripted-llm"
    """The model name the LLM's metadata reports."""

    context_window: int = 4096
    """The context window the metadata reports; make it small to force refine passes."""

    num_output: int = 256
    """The output budget the metadata reports."""

    _prompts: list[str] = PrivateAttr(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        """The serialization key, ``"ScriptedLLM"``."""
        return "ScriptedLLM"

    @property
    def metadata(self) -> LLMMetadata:
        """The scripted model name and window sizes."""
        return LLMMetadata(
            model_name=self.model_name,
            context_window=self.context_window,
            num_output=self.num_output,
        )

    @property
    def prompts(self) -> list[str]:
        """Every prompt received, in order, including one that exhausted the script."""
        return list(self._prompts)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """Record ``prompt`` and return the next reply, whole.

        Raises:
            ScriptExhaustedError: every scripted reply has been used.
        """
        return CompletionResponse(text="".join(self._next(prompt)))

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        """Record ``prompt`` and stream the next reply, one scripted chunk at a time.

        Raises:
            ScriptExhaustedError: every scripted reply has been used.
        """
        chunks = self._next(prompt)

        def stream() -> CompletionResponseGen:
            text = ""
            for chunk in chunks:
                text += chunk
                yield CompletionResponse(text=text, delta=chunk)

        return stream()

    def _next(self, prompt: str) -> list[str]:
        index = len(self._prompts)
        self._prompts.append(prompt)
        if index >= len(self.replies):
            msg = (
                f"ScriptedLLM has no reply left: it was scripted with "
                f"{len(self.replies)} replies and asked for reply {index + 1}"
            )
            raise ScriptExhaustedError(msg)
        reply = self.replies[index]
        if isinstance(reply, str):
            return [reply]
        if callable(reply):
            return [str(reply(prompt))]
        return [str(chunk) for chunk in reply]
