"""A bridge from any LangChain model to citemark's `ChatModel` protocol.

With `LangChainChat`, the judge, the scorer and the echo check run on the model the
user already configured. A failure inside the LangChain model becomes a
`citemark.ChatError` naming only the exception's type: its message may quote the
provider's response, which citemark never lets into an error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage

from citemark import ChatError

if TYPE_CHECKING:
    from langchain_core.runnables import Runnable

__all__ = ["LangChainChat"]


class LangChainChat:
    """Use a LangChain chat model or LLM as a `citemark.ChatModel`.

    One ``ainvoke`` per ``complete``. LangChain's own retry settings (for example a
    provider client's ``max_retries``) still apply inside the model; set them to 0
    for citemark's one-attempt contract.

    Example:
        ```python
        import asyncio

        from langchain_core.language_models import FakeListChatModel
        from langchain_citemark import LangChainChat

        chat = LangChainChat(FakeListChatModel(responses=["It ends on filing [1]."]))
        print(asyncio.run(chat.complete("When does it end?")), chat.provider)
        #> It ends on filing [1]. fake-list-chat-model
        ```
    """

    def __init__(self, model: Runnable[Any, Any], *, model_name: str | None = None) -> None:
        """Wrap ``model``; ``model_name`` overrides the name read from the model."""
        self.model = model
        self._model_name = model_name or _name_of(model)

    @property
    def provider(self) -> str:
        """The model's LangChain type, e.g. ``"openai-chat"``."""
        llm_type = getattr(self.model, "_llm_type", None)
        return llm_type if isinstance(llm_type, str) else type(self.model).__name__

    @property
    def model_name(self) -> str:
        """The model's name, as its ``model_name`` or ``model`` field says."""
        return self._model_name

    async def complete(self, prompt: str) -> str:
        """Ask the model once and return its text.

        Raises:
            ChatError: the model raised, or returned something without text.
        """
        failed: str | None = None
        try:
            output = await self.model.ainvoke(prompt)
        except Exception as exc:  # noqa: BLE001 - any provider failure is a ChatError
            failed = type(exc).__name__
        if failed is not None:
            # Raised outside the handler: ``from None`` would only hide the provider's
            # exception, which would stay reachable as ``__context__``.
            reason = f"the LangChain model raised {failed}"
            raise ChatError(reason, provider=self.provider, model=self.model_name)
        if isinstance(output, BaseMessage):
            return output.text
        if isinstance(output, str):
            return str(output)
        reason = "the LangChain model returned neither text nor a message"
        raise ChatError(reason, provider=self.provider, model=self.model_name)


def _name_of(model: object) -> str:
    for attribute in ("model_name", "model", "model_id"):
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__
