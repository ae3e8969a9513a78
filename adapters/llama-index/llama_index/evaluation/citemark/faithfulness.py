"""`StrictFaithfulnessEvaluator`: LlamaIndex's faithfulness check, with a strict judge.

LlamaIndex's ``FaithfulnessEvaluator`` reads its judge with ``"yes" in reply.lower()``,
so "No. The eyes of the reader..." passes, and a reply it cannot read becomes
``passing=False``, indistinguishable from a real "no". This evaluator has the same
interface (``llm``, ``raise_error``, ``eval_template``; ``aevaluate(query, response,
contexts, sleep_time_in_seconds)``) but asks `citemark.FaithfulnessJudge`, whose reply
is one strict JSON verdict (SPEC §3.8). A reply that fails validation comes back as
``invalid_result=True``, never read as a verdict either way.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from llama_index.core.evaluation import BaseEvaluator
from llama_index.core.llms import LLM
from llama_index.core.prompts import BasePromptTemplate, PromptTemplate
from llama_index.core.settings import Settings

from citemark import (
    DEFAULT_JUDGE_PROMPT,
    ChatError,
    ChatModel,
    FaithfulnessJudge,
    JudgeError,
    Source,
)
from citemark.evaluation import explain
from citemark.text import is_blank
from llama_index.evaluation.citemark.base import CitemarkEvaluationResult
from llama_index.postprocessor.citemark import LlamaIndexChat

if TYPE_CHECKING:
    from collections.abc import Sequence

    from llama_index.core.prompts.mixin import PromptDictType

__all__ = ["StrictFaithfulnessEvaluator"]


class StrictFaithfulnessEvaluator(BaseEvaluator):
    """A drop-in for LlamaIndex's ``FaithfulnessEvaluator`` that never coerces its judge.

    ``passing`` is the judge's ``faithful``, and ``feedback`` its reasoning and the
    unsupported claims it quoted from the answer; ``score`` stays ``None`` (a
    verdict is a boolean, not a score). A reply that is not exactly one strict-JSON
    verdict, or that quotes claims the answer never made, is ``invalid_result=True``
    with ``invalid_reason="invalid_judge_output"``; a failed call is
    ``judge_call_failed``. ``details`` records the judge's provider, model and prompt
    SHA-256 beside the verdict.

    ``raise_error=True`` raises the `citemark.JudgeError` or `citemark.ChatError`
    instead of returning an invalid result. Unlike LlamaIndex's, it never raises for
    an unfaithful verdict: a verdict is advisory and gates nothing. Missing inputs
    are invalid results too, not ``ValueError``, so a batch keeps going.

    Example:
        ```python
        from llama_index.core.evaluation import FaithfulnessEvaluator
        from llama_index.evaluation.citemark import StrictFaithfulnessEvaluator
        from llama_index.postprocessor.citemark.testing import ScriptedLLM

        reply = "No. The eyes of the reader may deceive, but the context says nothing."
        row = {"response": "The license is perpetual.", "contexts": ["Fees are 5%."]}
        builtin = FaithfulnessEvaluator(llm=ScriptedLLM(replies=[reply])).evaluate(**row)
        strict = StrictFaithfulnessEvaluator(llm=ScriptedLLM(replies=[reply])).evaluate(**row)
        print(builtin.passing, strict.passing, strict.invalid_result, strict.invalid_reason)
        #> True None True invalid_judge_output
        ```
    """

    def __init__(
        self,
        llm: LLM | ChatModel | None = None,
        raise_error: bool = False,
        eval_template: str | BasePromptTemplate | None = None,
    ) -> None:
        """Create the evaluator.

        Args:
            llm: The judge: a LlamaIndex LLM (``Settings.llm`` when omitted, as in
                LlamaIndex) or a `citemark.ChatModel`.

            raise_error: Raise the judge's error instead of returning an invalid
                result.

            eval_template: A judge prompt with ``{question}``, ``{answer}`` and
                ``{sources}`` (default `citemark.DEFAULT_JUDGE_PROMPT`). LlamaIndex's
                YES/NO templates do not fit: the reply must be a JSON verdict.

        Raises:
            ValueError: the template does not use exactly those three fields.
        """
        judge = llm if llm is not None else Settings.llm
        self._chat: ChatModel = LlamaIndexChat(judge) if isinstance(judge, LLM) else judge
        self._raise_error = raise_error
        self._judge = FaithfulnessJudge(self._chat, _template(eval_template))

    @property
    def judge(self) -> FaithfulnessJudge:
        """The strict judge, with its ``provider``, ``model_name`` and ``prompt_sha256``."""
        return self._judge

    def _get_prompts(self) -> PromptDictType:
        return {"eval_template": PromptTemplate(self._judge.prompt_template)}

    def _update_prompts(self, prompts_dict: PromptDictType) -> None:
        if "eval_template" in prompts_dict:
            template = _template(prompts_dict["eval_template"])
            self._judge = FaithfulnessJudge(self._chat, template)

    async def aevaluate(
        self,
        query: str | None = None,
        response: str | None = None,
        contexts: Sequence[str] | None = None,
        sleep_time_in_seconds: int = 0,
        **kwargs: Any,
    ) -> CitemarkEvaluationResult:
        """Ask the judge once whether ``response`` is faithful to ``contexts``.

        Raises:
            JudgeError: with ``raise_error=True``, the reply failed validation.
            ChatError: with ``raise_error=True``, the judge call failed.
        """
        await asyncio.sleep(sleep_time_in_seconds)
        judge = self._judge
        identity = {
            "provider": judge.provider,
            "model": judge.model_name,
            "prompt_sha256": judge.prompt_sha256,
        }
        row: dict[str, Any] = {"query": query, "response": response, "contexts": contexts}
        if not isinstance(response, str) or is_blank(response):
            return _invalid("no_answer", row, identity)
        if not contexts:
            return _invalid("empty_context", row, identity)
        sources = [
            Source(text=context, doc_id=f"context-{number}")
            for number, context in enumerate(contexts, start=1)
        ]
        try:
            verdict = await judge.judge(query or "", response, sources)
        except (ChatError, JudgeError) as exc:
            if self._raise_error:
                raise
            code = "judge_call_failed" if isinstance(exc, ChatError) else "invalid_judge_output"
            # citemark's messages are structural: no reply, answer or source text.
            return _invalid(code, row, identity, str(exc))
        except Exception as exc:  # noqa: BLE001 - one row never stops a batch
            return _invalid("evaluation_error", row, identity, type(exc).__name__)
        feedback = verdict.reasoning
        if verdict.unsupported_claims:
            claims = "; ".join(verdict.unsupported_claims)
            feedback = f"{feedback} Unsupported claims: {claims}".strip()
        return CitemarkEvaluationResult(
            **row,
            passing=verdict.faithful,
            feedback=feedback,
            details={"judge": identity, "verdict": verdict.model_dump(mode="json")},
        )


def _template(template: str | BasePromptTemplate | None) -> str:
    if template is None:
        return DEFAULT_JUDGE_PROMPT
    if isinstance(template, BasePromptTemplate):
        return template.get_template()
    return template


def _invalid(
    code: str, row: dict[str, Any], identity: dict[str, str], why: str = ""
) -> CitemarkEvaluationResult:
    return CitemarkEvaluationResult(
        **row,
        invalid_result=True,
        invalid_reason=code,
        feedback=explain(code, why),
        details={"judge": identity, "verdict": None},
    )
