"""An evaluator for LangSmith-style ``evaluate()``: ``(run, example) -> dict``.

Deterministic findings are the score: 1 when every marker names a document the run
was given (or the run abstained), 0 when a marker names none, ``None`` when the run
cannot be assessed. An optional judge contributes an opinion to the comment, never
to the score.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage

from citemark import (
    ChatError,
    CitedAnswer,
    FaithfulnessJudge,
    JudgeError,
    MarkerOutOfRangeError,
    NoSourcesError,
    SynthesisError,
    resolve,
)
from langchain_citemark.documents import documents_to_sources

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from citemark import ChatModel, Source

__all__ = ["make_citation_evaluator"]

KEY = "citation_validity"


def make_citation_evaluator(
    judge: ChatModel | None = None,
    *,
    answer_keys: tuple[str, ...] = ("answer", "output"),
    documents_keys: tuple[str, ...] = ("documents", "context", "source_documents"),
) -> Callable[[Any, Any], dict[str, Any]]:
    """Build a ``(run, example) -> dict`` evaluator.

    The answer is read from the run's outputs (a `citemark.CitedAnswer`, its dict
    form, a string or a message, under one of ``answer_keys``); the documents from
    the run's outputs or inputs (a list of ``Document`` under one of
    ``documents_keys``), numbered in that order.

    Args:
        judge: Optional `citemark.ChatModel` for an advisory faithfulness opinion,
            reported in ``comment`` only.
        answer_keys: Where to look for the answer.
        documents_keys: Where to look for the documents.

    Example:
        ```python
        from langchain_core.documents import Document
        from langchain_citemark import make_citation_evaluator

        class Run:  # what LangSmith passes: inputs and outputs
            inputs = {"question": "q", "documents": [Document("Keep notices.")]}
            outputs = {"answer": "Keep them [2]."}

        result = make_citation_evaluator()(Run(), None)
        print(result["key"], result["score"])
        #> citation_validity 0
        print(result["comment"])
        #> out_of_range: marker [2] names no document (1 given)
        ```
    """

    def evaluate(run: Any, example: Any) -> dict[str, Any]:
        outputs = _mapping(getattr(run, "outputs", None))
        inputs = _mapping(getattr(run, "inputs", None))
        answer = _answer(outputs, answer_keys)
        documents = _documents(outputs, documents_keys) or _documents(inputs, documents_keys)
        if answer is None:
            return {"key": KEY, "score": None, "comment": "unassessed: no answer in the outputs"}
        if documents is None:
            return {"key": KEY, "score": None, "comment": "unassessed: no documents in the run"}
        sources = documents_to_sources(documents)
        try:
            resolved = resolve(answer, sources)
        except MarkerOutOfRangeError as exc:
            comment = (
                f"out_of_range: marker [{exc.marker}] names no document ({exc.valid_count} given)"
            )
            return {"key": KEY, "score": 0, "comment": comment}
        except NoSourcesError:
            return {"key": KEY, "score": None, "comment": "unassessed: no documents in the run"}
        except SynthesisError:
            return {"key": KEY, "score": None, "comment": "unassessed: the answer is blank"}
        outcome = "resolved" if resolved.citations else "abstained"
        comment = f"{outcome}: {len(resolved.citations)} distinct citation(s)"
        if judge is not None:
            question = inputs.get("question") if isinstance(inputs.get("question"), str) else ""
            comment += "; " + _opinion(judge, str(question), answer, sources)
        return {"key": KEY, "score": 1, "comment": comment}

    return evaluate


def _opinion(chat: ChatModel, question: str, answer: str, sources: list[Source]) -> str:
    judge = FaithfulnessJudge(chat)
    identity = f"{judge.provider}/{judge.model_name}, prompt {judge.prompt_sha256[:12]}"
    try:
        verdict = asyncio.run(judge.judge(question, answer, sources))
    except (ChatError, JudgeError) as exc:
        return f"advisory judge ({identity}) gave no usable opinion: {type(exc).__name__}"
    claims = len(verdict.unsupported_claims)
    opinion = "faithful" if verdict.faithful else f"not faithful ({claims} unsupported claim(s))"
    return f"advisory judge ({identity}): {opinion}"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _answer(outputs: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = outputs.get(key)
        if isinstance(value, CitedAnswer):
            return value.text
        if isinstance(value, BaseMessage):
            return value.text
        if isinstance(value, dict) and isinstance(value.get("text"), str):
            return str(value["text"])
        if isinstance(value, str):
            return str(value)
    return None


def _documents(values: Mapping[str, Any], keys: tuple[str, ...]) -> list[Document] | None:
    for key in keys:
        value = values.get(key)
        if isinstance(value, list) and all(isinstance(d, Document) for d in value):
            return value
    return None
