"""LangChainChat: any LangChain model as a citemark ChatModel."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.language_models import FakeListChatModel, FakeListLLM

from citemark import ChatError, ChatModel, FaithfulnessJudge, Source
from langchain_citemark import LangChainChat

CANARY = "CANARY-lc-bridge-5e1"


class TestLangChainChat:
    def test_chat_model(self):
        """A chat model's reply text is returned; identity comes from the model."""
        chat = LangChainChat(FakeListChatModel(responses=["yes [1]"]))
        assert isinstance(chat, ChatModel)
        assert "yes [1]" == asyncio.run(chat.complete("q"))
        assert ("fake-list-chat-model", "FakeListChatModel") == (chat.provider, chat.model_name)

    def test_text_llm(self):
        """A text LLM works too."""
        assert "ok" == asyncio.run(LangChainChat(FakeListLLM(responses=["ok"])).complete("q"))

    def test_model_name_override(self):
        """model_name can be set explicitly for reports."""
        assert "m-1" == LangChainChat(FakeListLLM(responses=["ok"]), model_name="m-1").model_name

    def test_failure_is_a_chat_error_without_the_message(self):
        """An exception inside the model becomes a ChatError naming only its type."""

        class Exploding(FakeListChatModel):
            async def ainvoke(self, *args, **kwargs):
                raise ValueError(CANARY)

        chat = LangChainChat(Exploding(responses=["x"]))
        with pytest.raises(ChatError) as info:
            asyncio.run(chat.complete("q"))
        assert CANARY not in str(info.value)
        assert CANARY not in repr(info.value)
        assert "ValueError" in str(info.value)

    def test_failure_keeps_no_provider_exception_in_its_context(self):
        """Neither __cause__ nor __context__ reaches the model's exception (issue 17, item 9)."""

        class Exploding(FakeListChatModel):
            async def ainvoke(self, *args, **kwargs):
                raise ValueError(CANARY)

        def reachable(exc):
            seen = []
            while exc is not None and exc not in seen:
                seen.append(exc)
                exc = exc.__cause__ or exc.__context__
            return seen

        def naive():
            # The shape the bridge had: ``from None`` inside the handler.
            try:
                raise ValueError(CANARY)  # noqa: TRY301 - the naive shape, on purpose
            except ValueError:
                raise ChatError("x", provider="p", model="m") from None

        with pytest.raises(ChatError) as info:
            asyncio.run(LangChainChat(Exploding(responses=["x"])).complete("q"))
        with pytest.raises(ChatError) as naive_info:
            naive()
        assert [] == [e for e in reachable(info.value) if CANARY in str(e)]
        assert [] != [e for e in reachable(naive_info.value) if CANARY in str(e)]

    def test_judge_runs_on_the_users_model(self):
        """The strict judge runs on a LangChain model through the bridge."""
        reply = '{"faithful": true, "unsupported_claims": [], "reasoning": "supported"}'
        judge = FaithfulnessJudge(LangChainChat(FakeListChatModel(responses=[reply])))
        verdict = judge.judge_sync("q", "It ends [1].", [Source(text="It ends.", doc_id="a")])
        assert verdict.faithful
