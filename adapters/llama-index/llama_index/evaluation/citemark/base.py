"""`CitationEvaluator`: deterministic citation checks plus an advisory judge, for LlamaIndex.

It grades a response's ``[n]`` citations with `citemark.CitationScorer` and reports
the result the way LlamaIndex's evaluators do, with one deliberate difference:
``passing`` reflects the deterministic findings only (every marker names a source the
answer was given, and, with a reader, every cited span re-reads from its document).
The judge's opinion, when one is configured, goes into ``feedback`` and ``details``,
never into ``passing`` or ``score``: it is a second model's opinion, not a
measurement (SPEC §1, contract 3).

A support verifier (`citemark.verifiers`), when one is configured, adds ALCE's
citation recall and precision, advisory as the judge is: the core's report line in
``feedback``, the row's `citemark.verifiers.RowSupport` in ``support`` and its JSON
in ``details["support"]``, never in ``passing``, ``score`` or ``invalid_result``.

A row that cannot be assessed comes back as ``invalid_result=True`` with a stable
reason code in ``invalid_reason``, and every error is caught inside, so
``BatchEvalRunner`` (which has no ``return_exceptions``) never loses a batch to one
row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from llama_index.core.async_utils import asyncio_run
from llama_index.core.base.response.schema import Response
from llama_index.core.bridge.pydantic import BaseModel, ConfigDict, Field
from llama_index.core.evaluation import BaseEvaluator, EvaluationResult
from llama_index.core.llms import LLM
from pydantic import InstanceOf  # noqa: TC002 - pydantic reads the field type at runtime

from citemark import (
    ChatModel,
    Citation,
    CitationScorer,
    CitemarkError,
    Source,
    SynthesisError,
    resolve,
    verify_citation,
)
from citemark.evaluation import ScoreFindings, explain
from citemark.text import is_blank
from citemark.verifiers import (
    RowSupport,
    SupportRow,
    Verifier,
    citation_support,
    support_not_assessed,
)
from llama_index.postprocessor.citemark import LlamaIndexChat, nodes_to_sources

if TYPE_CHECKING:
    from collections.abc import Sequence

    from llama_index.core.prompts.mixin import PromptDictType

    from citemark import CitationScore, DocumentReader

__all__ = ["CitationEvaluator", "CitemarkEvaluationResult", "SpanCheck"]

# A verification outcome that shows a citation does not point at what it claims.
_BROKEN = frozenset({"mismatch", "drifted"})


class SpanCheck(BaseModel):
    """One resolved citation re-read from its document by the evaluator's reader."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    marker: int
    """The marker the citation resolved from."""
    outcome: str
    """`citemark.Verification` outcome: ``verified``, ``mismatch``, ``drifted``, ..."""


class CitemarkEvaluationResult(EvaluationResult):
    """An ``EvaluationResult`` with citemark's findings attached.

    ``score`` is always ``None``: nothing here is a number to average. The typed
    facts are ``findings`` (the scorer's), ``citations`` and ``verifications`` (this
    adapter's own); ``details`` is their JSON form.
    """

    findings: ScoreFindings | None = Field(default=None, exclude=True)
    """The scorer's typed findings, or None when the scorer did not run."""
    citations: tuple[Citation, ...] = Field(default=(), exclude=True)
    """The resolved citations (node id as ``chunk_id``, document id, offsets)."""
    verifications: tuple[SpanCheck, ...] | None = Field(default=None, exclude=True)
    """Each citation re-read from its document, when a reader was given."""
    support: InstanceOf[RowSupport] | None = Field(default=None, exclude=True)
    """With a support verifier: the row's advisory citation recall and precision."""
    details: dict[str, Any] = Field(default_factory=dict)
    """Every finding, JSON-safe: for `CitationEvaluator`, the scorer's details (the
    classified markers, sentence coverage, the judge's identity, band and verdicts),
    the resolved ``citations``, with a reader their ``verifications``, and with a
    verifier its ``support`` (`citemark.verifiers.RowSupport.as_dict`)."""


class CitationEvaluator(BaseEvaluator):
    """Check a response's ``[n]`` citations; optionally ask an advisory judge about them.

    ``passing`` is deterministic: ``False`` when a marker names no source (or, with a
    ``reader``, a cited span no longer re-reads from its document), ``True`` when
    every citation resolves. It never depends on the judge: with a judge, its band
    (0-3) and explanation are in ``feedback`` and ``details``. A judge call that
    fails, or a reply that fails validation, makes the row ``invalid_result=True``
    with the scorer's code (``judge_call_failed``, ``invalid_judge_output``, ...)
    in ``invalid_reason``, while ``passing`` stays what the citation checks decided.

    ``invalid_result=True`` marks a row that could not be assessed, with one of the
    scorer's reason codes (``empty_context``, ``no_resolved_citations`` for an answer
    that cites nothing, ``judge_call_failed``, ``invalid_judge_output``, ...) or
    ``no_answer``, ``numbering_unknown`` or ``evaluation_error``.

    With a ``verifier``, a row that was scored and has sources also gets ALCE's
    citation recall and precision from it, advisory: the core's report line ends
    ``feedback``, the `citemark.verifiers.RowSupport` is ``support`` and its JSON
    ``details["support"]``. ``passing``, ``score`` and ``invalid_result`` are what
    they are without it; a verifier that raises leaves them so too, and is recorded
    by its exception's class name only.

    `aevaluate_response` reads the source nodes themselves (node ids, offsets), and
    the plain `aevaluate` numbers ``contexts`` by position.

    Example:
        ```python
        from llama_index.core.base.response.schema import Response
        from llama_index.core.schema import NodeWithScore, TextNode
        from llama_index.evaluation.citemark import CitationEvaluator
        from llama_index.postprocessor.citemark import number_nodes

        nodes = number_nodes([NodeWithScore(node=TextNode(text="Fees are 5%.", id_="fees-1"))])
        evaluator = CitationEvaluator()
        good = evaluator.evaluate_response(response=Response("It is 5% [1].", source_nodes=nodes))
        print(good.passing, good.invalid_result, good.citations[0].chunk_id)
        #> True False fees-1
        bad = evaluator.evaluate_response(response=Response("It is 5% [2].", source_nodes=nodes))
        print(bad.passing, bad.feedback)
        #> False Failed: the response cites a marker outside the 1 source it was given: 2.
        none = evaluator.evaluate_response(response=Response("No idea.", source_nodes=nodes))
        print(none.invalid_result, none.invalid_reason)
        #> True no_resolved_citations
        ```
    """

    def __init__(
        self,
        judge: LLM | ChatModel | None = None,
        *,
        reader: DocumentReader | None = None,
        index_base: int = 1,
        verifier: Verifier | None = None,
    ) -> None:
        """Create the evaluator.

        Args:
            judge: An advisory judge: a LlamaIndex LLM (bridged with `LlamaIndexChat`)
                or a `citemark.ChatModel`. ``None`` (the default, unlike LlamaIndex's
                evaluators, which fall back to ``Settings.llm``) runs the
                deterministic checks only.

            reader: Optional `citemark.DocumentReader` by document id; each resolved
                citation is then re-read from its document, and a ``mismatch`` or
                ``drifted`` span fails the row.

            index_base: The number of the first source node: 1 (the default), or 0
                for a pipeline that numbers its sources from 0.

            verifier: Optional `citemark.verifiers.Verifier` (`LexicalVerifier`,
                `NliVerifier`, `JudgeVerifier` or your own) for advisory citation
                support. The caller keeps it and closes it (``await verifier.aclose()``).

        Raises:
            TypeError: ``judge`` is neither an LLM nor a `citemark.ChatModel`, or
                ``verifier`` is not a `citemark.verifiers.Verifier`.
            ValueError: ``index_base`` is not 0 or 1.
        """
        if verifier is not None and not isinstance(verifier, Verifier):
            msg = "verifier must be a citemark.verifiers.Verifier or None"
            raise TypeError(msg)
        self._scorer = CitationScorer(_chat(judge), index_base=index_base)
        self._index_base = index_base
        self._reader = reader
        self._verifier = verifier

    @property
    def judge(self) -> ChatModel | None:
        """The advisory judge, as a `citemark.ChatModel`, or ``None``."""
        return self._scorer.judge

    @property
    def verifier(self) -> Verifier | None:
        """The advisory support verifier, or ``None``."""
        return self._verifier

    def _get_prompts(self) -> PromptDictType:
        # The judge prompt is citemark's own, fixed and recorded by its SHA-256.
        return {}

    def _update_prompts(self, prompts_dict: PromptDictType) -> None:
        return None

    async def aevaluate(
        self,
        query: str | None = None,
        response: str | None = None,
        contexts: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> CitemarkEvaluationResult:
        """Check ``response``'s markers against ``contexts``, numbered from ``index_base``."""
        try:
            sources = [
                Source(text=context, doc_id=f"context-{number}")
                for number, context in enumerate(contexts or (), start=1)
            ]
            return await self._evaluate(query, response, sources)
        except Exception as exc:  # noqa: BLE001 - one row never stops a batch
            return _error(query, response, contexts, exc)

    async def aevaluate_response(
        self,
        query: str | None = None,
        response: Response | None = None,
        **kwargs: Any,
    ) -> CitemarkEvaluationResult:
        """Check a response's markers against its own source nodes, ids and offsets kept."""
        text = response.response if isinstance(response, Response) else None
        try:
            if response is None:
                return _invalid("no_answer", query, None, None)
            try:
                sources = nodes_to_sources(response.source_nodes, index_base=self._index_base)
            except SynthesisError:
                return _invalid("numbering_unknown", query, text, None)
            return await self._evaluate(query, text, sources)
        except Exception as exc:  # noqa: BLE001 - one row never stops a batch
            return _error(query, text, None, exc)

    def evaluate_response(
        self,
        query: str | None = None,
        response: Response | None = None,
        **kwargs: Any,
    ) -> CitemarkEvaluationResult:
        """Synchronous `aevaluate_response` (LlamaIndex's own flattens the nodes to strings)."""
        result: CitemarkEvaluationResult = asyncio_run(
            self.aevaluate_response(query=query, response=response, **kwargs)
        )
        return result

    async def _evaluate(
        self, query: str | None, answer: str | None, sources: list[Source]
    ) -> CitemarkEvaluationResult:
        contexts = [source.text for source in sources]
        if not isinstance(answer, str) or is_blank(answer):
            return _invalid("no_answer", query, answer, contexts)
        score = await self._scorer.score(answer, sources, query or "")
        support = await self._support(answer, sources, score)
        # passing is the deterministic outcome alone: a judge that fails, or whose
        # reply is unusable, changes the feedback, never passing or validity; nor
        # does a verifier.
        deterministic = score.deterministic_passed
        if deterministic is None:
            return CitemarkEvaluationResult(
                query=query,
                response=answer,
                contexts=contexts,
                invalid_result=True,
                invalid_reason=score.reason or "no_resolved_citations",
                feedback=support.after(score.explanation),
                findings=score.findings,
                support=support.row,
                details=support.into(score.details),
            )
        citations: tuple[Citation, ...] = ()
        checks: tuple[SpanCheck, ...] | None = None
        failures = [] if deterministic else [score.explanation]
        if not failures:
            citations = resolve(answer, sources, index_base=self._index_base).citations
            checks = self._verify(citations)
            broken = [f"[{c.marker}] {c.outcome}" for c in checks or () if c.outcome in _BROKEN]
            if broken:
                failures = [
                    f"Failed: cited spans do not re-read from their documents: {', '.join(broken)}."
                ]
        # A judge that failed or replied unusably makes the row invalid as a graded
        # row (invalid_reason says why), while passing keeps the deterministic result.
        judge_problem = None if score.assessed or score.reason == "no_judge" else score.reason
        return CitemarkEvaluationResult(
            query=query,
            response=answer,
            contexts=contexts,
            passing=not failures,
            invalid_result=judge_problem is not None and not failures,
            invalid_reason=judge_problem if not failures else None,
            feedback=support.after(" ".join(failures) or _passed(score, len(citations))),
            findings=score.findings,
            citations=citations,
            verifications=checks,
            support=support.row,
            details=support.into(_details(score, citations, checks)),
        )

    async def _support(self, answer: str, sources: list[Source], score: CitationScore) -> _Support:
        """The row's advisory support, as ``citemark check --verifier`` picks rows.

        Empty without a verifier, without sources, or when scoring raised. A
        verifier that raises is recorded by its exception's class name, never its
        message.
        """
        verifier = self._verifier
        if verifier is None or not sources or score.findings.error is not None:
            return _Support()
        identity = verifier.identity
        try:
            run = await citation_support([SupportRow(answer, sources, self._index_base)], verifier)
        except Exception as exc:  # noqa: BLE001 - advisory: a failing verifier never costs the check
            line, details = support_not_assessed(identity, type(exc).__name__)
            return _Support(line=line, details=details)
        (row,) = run.rows
        return _Support(row=row, line=run.summary(), details=row.as_dict())

    def _verify(self, citations: Sequence[Citation]) -> tuple[SpanCheck, ...] | None:
        """Re-read each citation from its document; None without a reader."""
        if self._reader is None:
            return None
        reader = self._reader
        return tuple(
            SpanCheck(marker=c.marker, outcome=verify_citation(c, reader).outcome)
            for c in citations
        )


@dataclass(frozen=True)
class _Support:
    """A row's advisory support as the result carries it; empty without a verifier."""

    row: RowSupport | None = None
    line: str | None = None
    details: dict[str, Any] | None = None

    def after(self, feedback: str) -> str:
        """``feedback``, then the support's report line on a line of its own."""
        return feedback if self.line is None else f"{feedback}\n{self.line}"

    def into(self, details: dict[str, Any]) -> dict[str, Any]:
        """``details`` with ``support`` added, when there is support."""
        return details if self.details is None else {**details, "support": self.details}


def _chat(judge: LLM | ChatModel | None) -> ChatModel | None:
    if isinstance(judge, LLM):
        return LlamaIndexChat(judge)
    if judge is not None and not isinstance(judge, ChatModel):
        msg = "judge must be a LlamaIndex LLM, a citemark.ChatModel or None"
        raise TypeError(msg)
    return judge


def _details(
    score: CitationScore, citations: Sequence[Citation], checks: Sequence[SpanCheck] | None
) -> dict[str, Any]:
    """The JSON form of a graded row: the scorer's details, then this adapter's facts."""
    failures: list[str] = list(score.findings.deterministic_failures)
    extra: dict[str, Any] = {"citations": [citation.model_dump() for citation in citations]}
    if checks is not None:
        extra["verifications"] = [check.model_dump() for check in checks]
        if any(check.outcome in _BROKEN for check in checks):
            failures.append("span_mismatch")
    return {**score.details, "deterministic_failures": failures, **extra}


def _passed(score: CitationScore, count: int) -> str:
    noun = "citation names a source" if count == 1 else "citations name sources"
    found = f"{count} {noun} the answer was given."
    judge = score.findings.judge
    if judge is None:
        return f"{found} No judge was configured."
    if not score.assessed:
        return f"{found} The advisory judge gave no usable opinion ({score.reason})."
    opinion = (
        f"{found} Advisory judge {judge.provider}/{judge.model} "
        f"(prompt {judge.prompt_sha256[:12]}) gave band {score.judge_band}/3"
    )
    said = score.findings.judge_explanation
    return f"{opinion}: {said}" if said else f"{opinion}."


def _invalid(
    code: str, query: str | None, answer: str | None, contexts: Sequence[str] | None
) -> CitemarkEvaluationResult:
    return CitemarkEvaluationResult(
        query=query,
        response=answer,
        contexts=contexts,
        invalid_result=True,
        invalid_reason=code,
        feedback=explain(code),
    )


def _error(
    query: str | None, answer: str | None, contexts: Sequence[str] | None, exc: Exception
) -> CitemarkEvaluationResult:
    result = _invalid("evaluation_error", query, answer, contexts)
    # Only the type's name: an exception's message may quote the row.
    kind = type(exc).__name__
    detail = "a citemark error" if isinstance(exc, CitemarkError) else "an exception"
    result.feedback = f"Not assessed: evaluating this row raised {detail} ({kind})."
    result.details = {"error": kind}
    return result
