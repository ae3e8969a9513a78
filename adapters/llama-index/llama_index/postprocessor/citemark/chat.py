"""A bridge from any LlamaIndex LLM to citemark's `ChatModel` protocol.

With `LlamaIndexChat`, the strict judge, the scorer and the echo check run on the
model the user already configured. A failure inside the LLM becomes a
`citemark.ChatError` naming only the exception's type: its message may quote the
provider's response, which citemark never lets into an error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from citemark import ChatError

if TYPE_CHECKING:
    from llama_index.core.llms import LLM

__all__ = ["LlamaIndexChat"]


class LlamaIndexChat:
    """Use a LlamaIndex LLM as a `citemark.ChatModel`.

    One ``acomplete`` per ``complete``. The LLM's own retry settings (for example
    ``max_retries`` on a provider client) still apply inside it; set them to 0 for
    citemark's one-attempt contract.

    Example:
        ```python
        import asyncio

        from llama_index.postprocessor.citemark import LlamaIndexChat
        from llama_index.postprocessor.citemark.testing import ScriptedLLM

        chat = LlamaIndexChat(ScriptedLLM(replies=["It ends on filing [1]."]))
        print(asyncio.run(chat.complete("When does it end?")), chat.provider, chat.model_name)
        #> It ends on filing [1]. ScriptedLLM scripted-llm
        ```
    """

    def __init__(self, llm: LLM, *, model_name: str | None = None) -> None:
        """Wrap ``llm``; ``model_name`` overrides the name its metadata reports."""
        self.llm = llm
        self._model_name = model_name or llm.metadata.model_name

    @property
    def provider(self) -> str:
        """The LLM's class name, as LlamaIndex serializes it (e.g. ``"openai_llm"``)."""
        return self.llm.class_name()

    @property
    def model_name(self) -> str:
        """The model's name, as the LLM's metadata reports it."""
        return self._model_name

    async def complete(self, prompt: str) -> str:
        """Ask the LLM once and return its text.

        Raises:
            ChatError: the LLM raised, or returned a completion without text.
        """
        failed: str | None = None
        try:
            completion = await self.llm.acomplete(prompt)
        except Exception as exc:  # noqa: BLE001 - any provider failure is a ChatError
            failed = type(exc).__name__
        if failed is not None:
            # Raised outside the handler: ``from None`` would only hide the provider's
            # exception, which would stay reachable as ``__context__``.
            reason = f"the LlamaIndex LLM raised {failed}"
            raise ChatError(reason, provider=self.provider, model=self.model_name)
        text = getattr(completion, "text", None)
        if not isinstance(text, str):
            reason = "the LlamaIndex LLM returned a completion without text"
            raise ChatError(reason, provider=self.provider, model=self.model_name)
        return text
