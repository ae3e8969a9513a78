"""Evaluators for LangSmith's ``evaluate()``, ``aevaluate()`` and its pytest integration.

`citations_valid_evaluator` (and `acitations_valid_evaluator` for ``aevaluate``)
builds a ``(run, example)`` evaluator that returns LangSmith feedback: always
``citations_valid``, the deterministic check, with a boolean score (``None`` when
there is nothing to check, say an answer that cites nothing); and, only when a judge
is configured, a second result, ``citations_judge_advisory``, whose categorical
``value`` is the judge's opinion and which never carries a score, so no dashboard can
average it in. With a support verifier (any `citemark.verifiers.Verifier`), a
third result, ``citation_support``, is advisory too: its score is the row's ALCE
citation recall (so LangSmith's mean of it over rows is the run's recall, as ALCE
reports one), its comment the core's report line with the verifier's identity, and
its metadata the row's `citemark.verifiers.RowSupport` as JSON. It never changes
``citations_valid``. `citation_feedback` computes the same results from an answer and
its documents, for ``langsmith.testing.log_feedback`` in a ``@pytest.mark.langsmith``
test.

Comments are structural facts (counts, marker numbers, reason codes, the judge's or
verifier's identity and hash), never the answer's, the sources' or the judge's words.
The support metadata holds each sentence's claim: the answer's own words, which the
run being evaluated already holds.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import TYPE_CHECKING, Any, Final

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from citemark import CitedAnswer, Source
from citemark.syntax import check_index_base
from citemark.text import counted, is_blank
from langchain_citemark.documents import documents_to_sources

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping, Sequence

    from citemark import ChatModel, CitationScore, CitationScorer
    from citemark.verifiers import SupportRow, SupportRun, Verifier

__all__ = [
    "ADVISORY_KEY",
    "KEY",
    "SUPPORT_KEY",
    "acitations_valid_evaluator",
    "citation_feedback",
    "citations_valid_evaluator",
]

KEY: Final = "citations_valid"
"""The feedback key of the deterministic check."""
ADVISORY_KEY: Final = "citations_judge_advisory"
"""The feedback key of the judge's advisory opinion (a value, never a score)."""
SUPPORT_KEY: Final = "citation_support"
"""The feedback key of a verifier's advisory citation support (score: the row's recall)."""

_ANSWER_KEYS: Final = ("answer", "output", "messages")
_DOCUMENTS_KEYS: Final = ("documents", "context", "source_documents")
_SUPPORTED_BAND: Final = 2


def citation_feedback(  # noqa: PLR0913 - the row, then keyword-only options
    answer: str,
    sources: Sequence[Document] | Sequence[Source],
    question: str = "",
    *,
    judge: ChatModel | None = None,
    index_base: int = 1,
    verifier: Verifier | None = None,
) -> list[dict[str, Any]]:
    """Check ``answer``'s citations and return LangSmith feedback dicts.

    Works with or without a running event loop (in an ``async def`` test it scores
    on a worker thread).

    Args:
        answer: The answer text, markers and all.
        sources: What the answer cites as ``[n]``: ``Document``s or `citemark.Source`s.
        question: The question, shown to the judge.
        judge: Optional `citemark.ChatModel` for the advisory opinion.
        index_base: The number of the first source: 1 (the default), or 0 when the
            prompt numbered them from 0 (``[0]`` then names ``sources[0]``).
        verifier: Optional `citemark.verifiers.Verifier`; adds the advisory
            ``citation_support`` result. The caller keeps it and closes it.

    Returns:
        ``[citations_valid]``, then ``citations_judge_advisory`` with a judge, then
        ``citation_support`` with a verifier (when there are sources to verify
        against); each a dict for ``log_feedback(**item)`` or an evaluator's
        ``{"results": [...]}``.

    Raises:
        ValueError: ``index_base`` is not 0 or 1.
        TypeError: ``verifier`` is not a `citemark.verifiers.Verifier`.

    Example:
        ```python
        from langchain_core.documents import Document
        from langchain_citemark import citation_feedback

        docs = [Document("Keep notices."), Document("Patents end on filing.")]
        (result,) = citation_feedback("Patents end on filing [2]; see [5].", docs)
        print(result["key"], result["score"])
        #> citations_valid False
        print(result["comment"])
        #> marker [5] is outside 1..2 (1 of 2 citations fabricated)
        ```
    """
    # The scorer loads the model side (httpx): on first use, not on import.
    from citemark import CitationScorer  # noqa: PLC0415

    _check_verifier(verifier)
    scorer = CitationScorer(judge, index_base=index_base)
    numbered = _sources(sources)

    def score() -> list[dict[str, Any]]:
        graded = scorer.score_sync(answer, numbered, question)
        feedback = _feedback(scorer, graded, len(numbered), index_base)
        row = _support_row(verifier, graded, answer, numbered, index_base)
        if verifier is not None and row is not None:
            feedback.append(_support_feedback(verifier, _support_sync(verifier, row)))
        return feedback

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return score()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(score).result()


async def acitation_feedback(  # noqa: PLR0913 - the row, then keyword-only options
    answer: str,
    sources: Sequence[Document] | Sequence[Source],
    question: str = "",
    *,
    judge: ChatModel | None = None,
    index_base: int = 1,
    verifier: Verifier | None = None,
) -> list[dict[str, Any]]:
    """`citation_feedback`, awaited on the caller's event loop (the verifier too)."""
    from citemark import CitationScorer  # noqa: PLC0415 - loads httpx: on first use

    _check_verifier(verifier)
    scorer = CitationScorer(judge, index_base=index_base)
    numbered = _sources(sources)
    graded = await scorer.score(answer, numbered, question)
    feedback = _feedback(scorer, graded, len(numbered), index_base)
    row = _support_row(verifier, graded, answer, numbered, index_base)
    if verifier is not None and row is not None:
        feedback.append(_support_feedback(verifier, await _asupport(verifier, row)))
    return feedback


def citations_valid_evaluator(
    judge: ChatModel | None = None,
    *,
    answer_keys: tuple[str, ...] = _ANSWER_KEYS,
    documents_keys: tuple[str, ...] = _DOCUMENTS_KEYS,
    index_base: int = 1,
    verifier: Verifier | None = None,
) -> Callable[[Any, Any], dict[str, Any]]:
    """Build a ``(run, example)`` evaluator for ``langsmith.evaluate``.

    The answer is read from the run's outputs under the first of ``answer_keys``
    that holds one: a string, a message, a `citemark.CitedAnswer` (or its dict), or a
    list of messages (an agent's state: the last AI message is the answer). The
    sources are the ``Document`` list under the first of ``documents_keys`` in the
    outputs, else in the inputs, else the documents of the retriever-tool messages in
    the outputs' ``messages``, numbered in tool order as
    `langchain_citemark.CitationMiddleware` numbers them.

    Args:
        judge: Optional `citemark.ChatModel`; adds the ``citations_judge_advisory`` result.
        answer_keys: Where to look for the answer.
        documents_keys: Where to look for the documents.
        index_base: The number the run's prompt gave its first document: 1 (the
            default), or 0 (see `citation_feedback`).
        verifier: Optional `citemark.verifiers.Verifier`; adds the advisory
            ``citation_support`` result (see `citation_feedback`).

    Returns:
        An evaluator returning ``{"results": [...]}`` (see `citation_feedback`).

    Raises:
        ValueError: ``index_base`` is not 0 or 1 (raised here, not per run).
        TypeError: ``verifier`` is not a `citemark.verifiers.Verifier` (raised here).
    """
    base = check_index_base(index_base)
    _check_verifier(verifier)

    def evaluate(run: Any, example: Any) -> dict[str, Any]:
        found = _read_run(run, answer_keys, documents_keys)
        if isinstance(found, list):
            return {"results": found}
        answer, documents, question = found
        feedback = citation_feedback(
            answer, documents, question, judge=judge, index_base=base, verifier=verifier
        )
        return {"results": feedback}

    evaluate.__name__ = KEY
    return evaluate


def acitations_valid_evaluator(
    judge: ChatModel | None = None,
    *,
    answer_keys: tuple[str, ...] = _ANSWER_KEYS,
    documents_keys: tuple[str, ...] = _DOCUMENTS_KEYS,
    index_base: int = 1,
    verifier: Verifier | None = None,
) -> Callable[[Any, Any], Awaitable[dict[str, Any]]]:
    """`citations_valid_evaluator` for ``langsmith.aevaluate``: judge and verifier awaited."""
    base = check_index_base(index_base)
    _check_verifier(verifier)

    async def evaluate(run: Any, example: Any) -> dict[str, Any]:
        found = _read_run(run, answer_keys, documents_keys)
        if isinstance(found, list):
            return {"results": found}
        answer, documents, question = found
        feedback = await acitation_feedback(
            answer, documents, question, judge=judge, index_base=base, verifier=verifier
        )
        return {"results": feedback}

    evaluate.__name__ = KEY
    return evaluate


def _feedback(
    scorer: CitationScorer, graded: CitationScore, count: int, base: int
) -> list[dict[str, Any]]:
    findings = graded.findings
    passed = graded.deterministic_passed
    fabricated = [entry.label for entry in findings.fabricated_citations if entry.label.isdigit()]
    resolved = len(findings.resolved_citations)
    total = resolved + len(findings.fabricated_citations)
    if passed is False and fabricated:
        shown = ", ".join(f"[{label}]" for label in dict.fromkeys(fabricated))
        noun = "marker" if len(set(fabricated)) == 1 else "markers"
        verb = "is" if noun == "marker" else "are"
        comment = (
            f"{noun} {shown} {verb} outside {base}..{count - 1 + base} "
            f"({len(fabricated)} of {total} citations fabricated)"
        )
    elif passed is False:
        failures = ", ".join(findings.deterministic_failures)
        comment = f"failed on {failures}"
    elif passed:
        comment = (
            f"{counted(resolved, 'citation')} resolved to the {count} given "
            f"{'source' if count == 1 else 'sources'}"
        )
    else:
        comment = f"not assessed: {graded.reason}"
    results: list[dict[str, Any]] = [{"key": KEY, "score": passed, "comment": comment}]
    judge = scorer.judge
    if judge is None:
        return results
    identity = {
        "judge_provider": judge.provider,
        "judge_model": judge.model_name,
        "prompt_sha256": scorer.prompt_sha256,
        "advisory": True,
    }
    prompt = scorer.prompt_sha256[:12]
    who = f"advisory opinion of {judge.provider}/{judge.model_name} (prompt {prompt})"
    band = graded.judge_band
    if not findings.judge_called:
        value, why = (
            "not_assessed",
            f"the judge was not asked ({graded.reason or 'failed in code'})",
        )
    elif findings.judge_error is not None or band is None or findings.judge_rejection:
        reason = findings.judge_rejection or graded.reason or "invalid_judge_output"
        value, why = "not_assessed", f"the judge gave no usable opinion ({reason})"
    else:
        value = "supported" if band >= _SUPPORTED_BAND else "unsupported"
        why = f"band {band} of 0..3 over {counted(resolved, 'citation')}"
    results.append(
        {
            "key": ADVISORY_KEY,
            "value": value,
            "comment": f"{who}: {why}; not a score",
            "metadata": identity,
        }
    )
    return results


def _check_verifier(verifier: object) -> None:
    if verifier is None:
        return
    # citemark.verifiers loads with the first verifier, so the adapter's import stays light.
    from citemark.verifiers import Verifier  # noqa: PLC0415

    if not isinstance(verifier, Verifier):
        msg = "verifier must be a citemark.verifiers.Verifier or None"
        raise TypeError(msg)


def _support_row(
    verifier: Verifier | None,
    graded: CitationScore,
    answer: str,
    sources: Sequence[Source],
    base: int,
) -> SupportRow | None:
    """The row a verifier reads, as ``citemark check --verifier`` picks one; None for none.

    A row whose scoring raised, or with no source to verify against, has no support.
    """
    if verifier is None or not sources or graded.findings.error is not None:
        return None
    from citemark.verifiers import SupportRow  # noqa: PLC0415 - see _check_verifier

    return SupportRow(answer, sources, base)


def _support_sync(verifier: Verifier, row: SupportRow) -> SupportRun | str:
    """The row's advisory support, or the class name of what the verifier raised.

    Called with no running event loop (`citation_support_sync`).
    """
    from citemark.verifiers import citation_support_sync  # noqa: PLC0415 - see _check_verifier

    try:
        return citation_support_sync([row], verifier)
    except Exception as exc:  # noqa: BLE001 - advisory: a failing verifier never costs the check
        return type(exc).__name__


async def _asupport(verifier: Verifier, row: SupportRow) -> SupportRun | str:
    """`_support_sync`, awaited on the caller's event loop."""
    from citemark.verifiers import citation_support  # noqa: PLC0415 - see _check_verifier

    try:
        return await citation_support([row], verifier)
    except Exception as exc:  # noqa: BLE001 - advisory: a failing verifier never costs the check
        return type(exc).__name__


def _support_feedback(verifier: Verifier, found: SupportRun | str) -> dict[str, Any]:
    """The ``citation_support`` feedback: the row's recall as score, advisory, identified.

    ``found`` is the one-row run, or the class name of what the verifier raised (then
    the score is None and only that name is recorded, never the exception's message).
    """
    identity = verifier.identity
    if isinstance(found, str):
        from citemark.verifiers import support_not_assessed  # noqa: PLC0415

        comment, details = support_not_assessed(identity, found)
        return {"key": SUPPORT_KEY, "score": None, "comment": comment, "metadata": details}
    (row,) = found.rows
    return {
        "key": SUPPORT_KEY,
        "score": row.recall,
        "comment": found.summary(),
        "metadata": row.as_dict(),
    }


def _sources(sources: Sequence[Document] | Sequence[Source]) -> list[Source]:
    items = list(sources)
    if all(isinstance(item, Source) for item in items):
        return [item for item in items if isinstance(item, Source)]
    if all(isinstance(item, Document) for item in items):
        return documents_to_sources([item for item in items if isinstance(item, Document)])
    msg = "sources must be a list of Documents or of citemark Sources"
    raise TypeError(msg)


def _read_run(
    run: Any, answer_keys: tuple[str, ...], documents_keys: tuple[str, ...]
) -> tuple[str, list[Document], str] | list[dict[str, Any]]:
    """The run's answer, documents and question, or the not-assessed feedback."""
    outputs = _mapping(getattr(run, "outputs", None))
    inputs = _mapping(getattr(run, "inputs", None))
    answer = _answer(outputs, answer_keys)
    documents = _documents(outputs, documents_keys)
    if documents is None:
        documents = _documents(inputs, documents_keys)
    if documents is None:
        documents = _tool_documents(outputs.get("messages"))
    if answer is None or is_blank(answer):
        return [{"key": KEY, "score": None, "comment": "not assessed: no_answer"}]
    if documents is None:
        # What the scorer says of an empty source list: the same input, the same code.
        return [{"key": KEY, "score": None, "comment": "not assessed: empty_context"}]
    question = inputs.get("question")
    return answer, documents, question if isinstance(question, str) else ""


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _answer(outputs: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = outputs.get(key)
        if isinstance(value, CitedAnswer | BaseMessage):
            return value.text
        if isinstance(value, str):
            return value
        if isinstance(value, dict) and isinstance(value.get("text"), str):
            return str(value["text"])
        if isinstance(value, list):
            replies = [m for m in value if isinstance(m, AIMessage)]
            if replies:
                return replies[-1].text
    return None


def _documents(values: Mapping[str, Any], keys: tuple[str, ...]) -> list[Document] | None:
    for key in keys:
        value = values.get(key)
        if isinstance(value, list) and all(isinstance(d, Document) for d in value):
            return value
    return None


def _tool_documents(messages: object) -> list[Document] | None:
    if not isinstance(messages, list):
        return None
    found: list[Document] | None = None
    for message in messages:
        artifact = message.artifact if isinstance(message, ToolMessage) else None
        if (
            isinstance(artifact, list)
            and artifact
            and all(isinstance(d, Document) for d in artifact)
        ):
            found = [*(found or []), *artifact]
    return found
