"""An evaluator for LangSmith-style ``evaluate()``: ``(run, example) -> dict``.

It grades the run with `citemark.CitationScorer`, the same engine as the LlamaIndex
`CitationEvaluator`, and reports the deterministic findings as the score: 1 when
every marker names a document the run was given, 0 when one names none, ``None``
when the run cannot be assessed (no answer, no documents, or an answer that cites
nothing). An optional judge contributes an opinion to the comment, never to the
score; so does an optional support verifier (`citemark.verifiers`): its advisory
citation recall and precision are appended to the comment, and the row's
`citemark.verifiers.RowSupport` is in ``metadata["citation_support"]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from citemark.text import is_blank
from langchain_citemark.documents import documents_to_sources
from langchain_citemark.langsmith_evaluators import (
    _answer,
    _check_verifier,
    _documents,
    _mapping,
    _support_feedback,
    _support_row,
    _support_sync,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from citemark import ChatModel, CitationScore, CitationScorer
    from citemark.verifiers import Verifier

__all__ = ["make_citation_evaluator"]

KEY = "citation_validity"


def make_citation_evaluator(
    judge: ChatModel | None = None,
    *,
    answer_keys: tuple[str, ...] = ("answer", "output"),
    documents_keys: tuple[str, ...] = ("documents", "context", "source_documents"),
    index_base: int = 1,
    verifier: Verifier | None = None,
) -> Callable[[Any, Any], dict[str, Any]]:
    """Build a ``(run, example) -> dict`` evaluator.

    The answer is read from the run's outputs (a `citemark.CitedAnswer`, its dict
    form, a string or a message, under one of ``answer_keys``); the documents from
    the run's outputs or inputs (a list of ``Document`` under one of
    ``documents_keys``), numbered in that order.

    Args:
        judge: Optional `citemark.ChatModel` for the scorer's advisory judge; its
            band and explanation are reported in ``comment`` only.
        answer_keys: Where to look for the answer.
        documents_keys: Where to look for the documents.
        index_base: The number the run's prompt gave its first document: 1 (the
            default), or 0 for a pipeline that numbers from 0.
        verifier: Optional `citemark.verifiers.Verifier`. Each scored run with
            documents then also gets ALCE's citation recall and precision, advisory:
            the core's report line is appended to ``comment`` and the row's
            `citemark.verifiers.RowSupport` (as JSON) is ``metadata["citation_support"]``;
            ``score`` never changes. A verifier that raises is recorded by its
            exception's class name only. The caller keeps the verifier and closes it.

    Raises:
        ValueError: ``index_base`` is not 0 or 1 (raised here, not per run).
        TypeError: ``verifier`` is not a `citemark.verifiers.Verifier` (raised here).

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
        #> Failed: the response cites a marker outside the 1 source it was given: 2.
        ```
    """
    # The scorer loads the model side (httpx): on first use, not on import.
    from citemark import CitationScorer  # noqa: PLC0415
    from citemark.evaluation import explain  # noqa: PLC0415

    scorer = CitationScorer(judge, index_base=index_base)
    _check_verifier(verifier)

    def evaluate(run: Any, example: Any) -> dict[str, Any]:
        outputs = _mapping(getattr(run, "outputs", None))
        inputs = _mapping(getattr(run, "inputs", None))
        answer = _answer(outputs, answer_keys)
        # The run's own outputs win; the inputs are read only when the outputs hold
        # no documents at all (an empty list there is the run's answer, not a gap).
        documents = _documents(outputs, documents_keys)
        if documents is None:
            documents = _documents(inputs, documents_keys)
        if answer is None or is_blank(answer):
            return _unassessed("no_answer", explain("no_answer"))
        if documents is None:
            # What the scorer says of an empty source list: the same input, the same code.
            return _unassessed("empty_context", explain("empty_context"))
        question = inputs.get("question")
        question = question if isinstance(question, str) else ""
        sources = documents_to_sources(documents)
        found = scorer.score_sync(answer, sources, question)
        result = _graded(scorer, found)
        row = _support_row(verifier, found, answer, sources, index_base)
        if verifier is None or row is None:
            return result
        # Advisory: the support joins the comment and the metadata, never the score.
        support = _support_feedback(verifier, _support_sync(verifier, row))
        result["comment"] += "; " + support["comment"]
        result["metadata"] = {"citation_support": support["metadata"]}
        return result

    return evaluate


def _graded(scorer: CitationScorer, found: CitationScore) -> dict[str, Any]:
    """The deterministic result of a scored run: 1, 0 or unassessed, with its comment."""
    passed = found.deterministic_passed
    if passed is None:
        return _unassessed(found.reason or "no_resolved_citations", found.explanation)
    if passed:
        resolved = len(found.findings.resolved_citations)
        comment = f"every marker names a given document ({resolved} resolved)"
        if scorer.judge is not None:
            comment += "; " + _opinion(scorer, found)
    else:
        comment = found.explanation
    return {"key": KEY, "score": int(passed), "comment": comment}


def _opinion(scorer: CitationScorer, graded: CitationScore) -> str:
    judge = scorer.judge
    who = f"{judge.provider}/{judge.model_name}" if judge is not None else "none"
    identity = f"advisory judge {who}, prompt {scorer.prompt_sha256[:12]}"
    if not graded.assessed:
        return f"{identity} gave no usable opinion ({graded.reason})"
    return f"{identity}, band {graded.judge_band}/3: {graded.explanation}"


def _unassessed(code: str, explanation: str) -> dict[str, Any]:
    return {"key": KEY, "score": None, "comment": f"unassessed ({code}): {explanation}"}
