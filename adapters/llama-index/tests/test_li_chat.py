"""The LlamaIndex LLM bridge and the scripted LLM test double."""

from __future__ import annotations

import asyncio
import re
import textwrap

import pytest
from llama_index.core.llms import ChatMessage

from citemark import ChatError, ChatModel, FaithfulnessJudge, Source
from citemark.testing import ScriptExhaustedError
from llama_index.postprocessor.citemark import LlamaIndexChat
from llama_index.postprocessor.citemark.testing import ScriptedLLM

CANARY = "CANARY-93be0d provider body"


class FailingLLM(ScriptedLLM):
    """A scripted LLM whose completions fail the way a provider client does."""

    def complete(self, prompt, formatted=False, **kwargs):
        raise ValueError(CANARY)


class TestLlamaIndexChat:
    def test_is_a_chat_model(self):
        """The bridge satisfies citemark's ChatModel protocol."""
        assert isinstance(LlamaIndexChat(ScriptedLLM()), ChatModel)

    def test_identity_comes_from_the_llm(self):
        """provider is the LLM's class name, model_name its metadata's (or the override)."""
        llm = ScriptedLLM(model_name="m-1")
        assert ("ScriptedLLM", "m-1", "other") == (
            LlamaIndexChat(llm).provider,
            LlamaIndexChat(llm).model_name,
            LlamaIndexChat(llm, model_name="other").model_name,
        )

    def test_one_call_per_complete(self):
        """complete makes exactly one LLM call with the prompt as given."""
        llm = ScriptedLLM(replies=["one", "two"])
        assert "one" == asyncio.run(LlamaIndexChat(llm).complete("p"))
        assert ["p"] == llm.prompts

    def test_failures_become_chat_errors_without_text(self):
        """An exception inside the LLM is a ChatError naming its type, never its message."""
        with pytest.raises(ChatError) as info:
            asyncio.run(LlamaIndexChat(FailingLLM()).complete("p"))
        assert ("ScriptedLLM", "scripted-llm", None) == (
            info.value.provider,
            info.value.model,
            info.value.status,
        )
        assert "the LlamaIndex LLM raised ValueError" == info.value.detail
        assert CANARY not in str(info.value)
        assert info.value.__cause__ is None

    def test_failures_keep_no_provider_exception_in_their_context(self):
        """Neither __cause__ nor __context__ reaches the LLM's exception (issue 17, item 9)."""

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
            asyncio.run(LlamaIndexChat(FailingLLM()).complete("p"))
        with pytest.raises(ChatError) as naive_info:
            naive()
        assert [] == [e for e in reachable(info.value) if CANARY in str(e)]
        assert [] != [e for e in reachable(naive_info.value) if CANARY in str(e)]

    def test_the_judge_runs_on_a_llama_index_llm(self):
        """FaithfulnessJudge works on any LlamaIndex LLM through the bridge."""
        reply = '{"faithful": true, "unsupported_claims": [], "reasoning": "ok"}'
        judge = FaithfulnessJudge(LlamaIndexChat(ScriptedLLM(replies=[reply])))
        verdict = judge.judge_sync(
            "q", "Fees are 5% [1].", [Source(text="Fees are 5%.", doc_id="f")]
        )
        assert verdict.faithful


class TestScriptedLLM:
    def test_docstring_example(self):
        """The example in ScriptedLLM's docstring prints what it shows."""
        block = re.search(r"```python\n(.*?)```", ScriptedLLM.__doc__, re.DOTALL).group(1)
        code = textwrap.dedent(block)
        expected = [line.split("#> ", 1)[1] for line in code.splitlines() if "#> " in line]
        printed = []
        exec(code, {"print": lambda *a: printed.append(" ".join(map(str, a)))})  # noqa: S102
        assert expected == printed

    def test_every_entry_point_reads_the_same_script(self):
        """complete, chat, acomplete and astream_complete take replies in order."""
        llm = ScriptedLLM(replies=["a", "b", "c", ["d", "e"]])

        async def rest():
            third = (await llm.acomplete("3")).text
            fourth = [chunk.delta async for chunk in await llm.astream_complete("4")]
            return third, fourth

        first = llm.complete("1").text
        second = llm.chat([ChatMessage(role="user", content="2")]).message.content
        assert ("a", "b", ("c", ["d", "e"])) == (first, second, asyncio.run(rest()))

    def test_a_callable_reply_sees_the_prompt(self):
        """A callable reply is called with the prompt."""
        assert "P!" == ScriptedLLM(replies=[lambda p: p + "!"]).complete("P").text

    def test_an_exhausted_script_fails_the_test(self):
        """Asking for more replies than scripted raises ScriptExhaustedError."""
        with pytest.raises(ScriptExhaustedError):
            ScriptedLLM().complete("p")
