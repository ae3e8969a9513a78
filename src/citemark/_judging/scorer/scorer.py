"""The citation correctness scorer: grading the citations of answers pipelines already wrote.

`CitationScorer` takes a recorded answer and what it was written from, either a list
of `citemark.Source` (the answer cites ``[n]``) or a context string of labelled blocks
(``[doc-1] text`` at the start of a line), and returns a `CitationScore`. The
deterministic part decides what each marker occurrence names (see
``citemark._judging.scorer.labels``): a fabricated citation fails the row with score 0, whatever
else happens; a row the scorer cannot grade honestly is *un-assessed*, with a stable
reason code and a human sentence, before any model is called. An optional judge
(any `citemark.ChatModel`) then grades each resolved occurrence, and its reply is
validated field by field (see ``citemark._judging.scorer.reply``); a reply that fails is an
un-assessed row, never a default score.

The judge is advisory, as everywhere in citemark: the score is its opinion, recorded
with its identity and prompt hash. `coverage_report` counts outcomes and reasons over
many rows, and `CitationScorer.score_many` scores a batch concurrently, recording a
failing row instead of raising it.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, NamedTuple, TypeAlias

from citemark._contract.errors import ChatError, JudgeReplyNotRecordedError, NoRowsError
from citemark._contract.models import Source, UnrecognizedToken
from citemark._contract.sync import run_sync
from citemark._contract.syntax import DEFAULT_INDEX_BASE, check_index_base
from citemark._judging.observe import observed_score
from citemark._judging.scorer.context import ROW_INDEX
from citemark._judging.scorer.findings import (
    CitedMarker,
    ExcludedLabel,
    JudgeCallFailure,
    JudgeIdentity,
    ReferenceList,
    ResolvedCitation,
    ScoreFindings,
    SentenceCoverage,
    UnresolvedMarker,
    ViolationCode,
)
from citemark._judging.scorer.labels import (
    AMBIGUOUS,
    DEFAULT_CITATION_PATTERN,
    DEFAULT_LABEL_PATTERN,
    FABRICATED,
    RESOLVED,
    Classified,
    Occurrence,
    classify_labelled,
    classify_sources,
    compile_pattern,
    render_blocks,
)
from citemark._judging.scorer.prompt import (
    SCORER_PROMPT_SHA256,
    annotate,
    choose_delimiters,
    remove_tags,
    render_scorer_prompt,
)
from citemark._judging.scorer.reflist import find_reference_list
from citemark._judging.scorer.reply import check_reply
from citemark._judging.scorer.result import (
    REASONS,
    CitationScore,
    coverage_report,
    failed,
    result,
    unassessed,
)
from citemark._judging.scorer.sentences import coverage_words, sentence_coverage
from citemark._markers.nearmiss import find_unrecognized
from citemark._model.completion import ChatModel, is_truncated

if TYPE_CHECKING:
    from types import MappingProxyType

__all__ = ["CitationScore", "CitationScorer", "ScoreRow", "coverage_report"]

Sources: TypeAlias = "Sequence[Source] | str"

_MAX_LISTED: Final = 10
_URL_ONLY: Final = re.compile(r"\s*+<?(?:https?|ftp)://\S++>?\s*+")
_THIRDS: Final = 3


class ScoreRow(NamedTuple):
    """One row for `CitationScorer.score_many`; a plain 2- or 3-tuple works too."""

    response: str
    """The answer as the pipeline wrote it."""

    sources: Sequence[Source] | str
    """A list of sources the answer cites as ``[n]``, or a labelled context string."""

    question: str = ""
    """The question the answer responds to; may be empty."""

    index_base: int | None = None
    """This row's numbering base (0 or 1), or None for the scorer's own."""


RowLike: TypeAlias = (
    "ScoreRow | tuple[str, Sequence[Source] | str] | tuple[str, Sequence[Source] | str, str]"
    " | Mapping[str, Any]"
)


class _RowShapeError(TypeError):
    """A row of a shape the scorer cannot read; the message names fields, never values."""


class CitationScorer:
    r"""Grade the citations of recorded answers, deterministically first, then by a judge.

    Each `score` call classifies every marker occurrence (resolved, fabricated,
    ambiguous or ignored), measures sentence coverage, and then, only when the row
    can be graded, makes exactly one judge call. A fabricated citation fails the row
    with score 0 whatever the judge says; an ambiguous citation, no resolved
    citation, or no judge leaves the row un-assessed without a call. The judge's
    band (0-3) divided by 3 is the score, and the row passes when it reaches
    ``threshold``.

    Args:
        judge: The model that grades resolved citations, or None for the
            deterministic findings only.

        threshold: The lowest score (0..1) that passes; the default 2/3 passes bands 2
            and 3.

        label_pattern: How a labelled context names its blocks: a regular expression
            (compiled with ``re.MULTILINE`` when given as a string) whose match at the
            start of a line is a label, with the label in group 1 or a group named
            ``label``.

        citation_pattern: How a response cites a label: a regular expression whose
            group 1 (or group ``label``) holds one label, or several separated by
            commas.

        min_sentence_coverage: If given (0..1), a row whose share of sentences
            carrying a resolved citation is lower fails deterministically, like a
            fabrication. By default coverage is only reported.

        judge_violations: Whether to call the judge on a row that already failed in
            code (a fabrication, coverage below the minimum). Its verdict cannot change
            such a row's outcome; it is only recorded for audit. With False the call
            is saved and the row's findings say ``judge_skipped``. ``citemark check``
            defaults to False (``--judge-violations`` turns it on).

        index_base: The number of the first source of a source list: 1 (the
            default) or 0; a row may override it (`score`'s ``index_base``).

        strict_markers: Fail a row (``unrecognized_citation``) that holds
            citation-like text that is not a marker, instead of only reporting it.

    Raises:
        TypeError: ``judge`` is not a `ChatModel`, or a pattern is not a string or a
            compiled ``str`` pattern.
        ValueError: a threshold is not a number in 0..1, or a pattern does not compile
            or has no group.

    Example:
        ```python
        import json

        from citemark import CitationScorer
        from citemark.testing import ScriptedChat

        context = "[doc-1] The fee is 5%.\n[doc-2] The fee is waived for members.\n"
        reply = json.dumps({
            "score": 3,
            "explanation": "The fee is stated in doc-1.",
            "verdicts": [{"occurrence": 1, "outcome": "supported", "context_span": "fee is 5%"}],
        })
        judge = ScriptedChat([reply])
        result = CitationScorer(judge).score_sync("The fee is 5% [doc-1].", context)
        print(result.assessed, result.passed, result.score)
        #> True True 1.0
        print(len(judge.prompts))
        #> 1
        ```
    """

    REASONS: ClassVar[MappingProxyType[str, str]] = REASONS
    """Each un-assessed reason code and the sentence that explains it."""

    def __init__(  # noqa: PLR0913 - keyword-only options, each with a default
        self,
        judge: ChatModel | None = None,
        *,
        threshold: float = 2 / 3,
        label_pattern: str | re.Pattern[str] = DEFAULT_LABEL_PATTERN,
        citation_pattern: str | re.Pattern[str] = DEFAULT_CITATION_PATTERN,
        min_sentence_coverage: float | None = None,
        judge_violations: bool = True,
        index_base: int = DEFAULT_INDEX_BASE,
        strict_markers: bool = False,
    ) -> None:
        if judge is not None and not isinstance(judge, ChatModel):
            msg = "judge must be a citemark.ChatModel or None"
            raise TypeError(msg)
        self._judge = judge
        # The same for every row: built once.
        self._judge_identity = (
            None
            if judge is None
            else JudgeIdentity(
                provider=judge.provider, model=judge.model_name, prompt_sha256=SCORER_PROMPT_SHA256
            )
        )
        self._threshold = _unit_interval(threshold, "threshold")
        self._min_coverage = (
            None
            if min_sentence_coverage is None
            else _unit_interval(min_sentence_coverage, "min_sentence_coverage")
        )
        self._index_base = check_index_base(index_base)
        self._strict = bool(strict_markers)
        self._label_pattern = compile_pattern(label_pattern, "label_pattern")
        self._citation_pattern = compile_pattern(citation_pattern, "citation_pattern")
        self._judge_violations = bool(judge_violations)

    @property
    def judge(self) -> ChatModel | None:
        """The judging model, or None."""
        return self._judge

    @property
    def threshold(self) -> float:
        """The lowest passing score, in 0..1."""
        return self._threshold

    @property
    def min_sentence_coverage(self) -> float | None:
        """The sentence coverage below which a row fails, or None (report only)."""
        return self._min_coverage

    @property
    def judge_violations(self) -> bool:
        """Whether rows that already failed in code are still sent to the judge."""
        return self._judge_violations

    @property
    def index_base(self) -> int:
        """The number of the first source, unless a row says otherwise."""
        return self._index_base

    @property
    def strict_markers(self) -> bool:
        """Whether citation-like text that is not a marker fails a row."""
        return self._strict

    @property
    def label_pattern(self) -> re.Pattern[str]:
        """The compiled label pattern."""
        return self._label_pattern

    @property
    def citation_pattern(self) -> re.Pattern[str]:
        """The compiled citation pattern."""
        return self._citation_pattern

    @property
    def prompt_sha256(self) -> str:
        """The SHA-256 hex digest of the judge prompt template."""
        return SCORER_PROMPT_SHA256

    @observed_score
    async def score(
        self,
        response: str,
        sources: Sources,
        question: str = "",
        *,
        index_base: int | None = None,
    ) -> CitationScore:
        """Score one response: classify its citations, then ask the judge once if it can.

        Args:
            response: The answer as the pipeline wrote it, markers and all.

            sources: A list of `Source` that the answer cites as ``[n]``, or a context
                string of labelled blocks.

            question: The question the answer responds to, shown to the judge.

            index_base: This row's numbering base (0 or 1); None for the scorer's.

        Returns:
            The score. A failed judge call (`ChatError`) is an un-assessed row with
            reason ``judge_call_failed``, not an exception.

        Raises:
            TypeError: ``response`` or ``question`` is not a string, or ``sources``
                is neither a string nor a sequence of `Source`.
            ValueError: ``index_base`` is not 0, 1 or None.
        """
        base = self._index_base if index_base is None else check_index_base(index_base)
        found = self._classify(response, sources, question, base)
        findings, failures = self._findings(found, response, sources)
        if found.empty:
            return unassessed("empty_context", findings)
        unverifiable = set(findings.unverifiable_sources)
        refs = findings.reference_list
        cited = [occ for occ in found.occurrences if occ.kind == RESOLVED]
        if refs is not None:
            # A reference list's entries are a bibliography, not claims to grade.
            cited = [occ for occ in cited if not refs.start <= occ.start < refs.end]
        resolved = [occ for occ in cited if occ.label not in unverifiable]
        if not failures:
            ambiguous = len(findings.ambiguous_citations)
            if ambiguous:
                noun = "citation" if ambiguous == 1 else "citations"
                return unassessed(
                    "partial_citation_coverage",
                    findings,
                    f"{ambiguous} {noun} could not be resolved to exactly one block",
                )
            if cited and not resolved:
                return unassessed("unverifiable_sources_only", findings)
            if not resolved:
                unstructured = found.labelled and not found.accusable and findings.ignored_markers
                code = "unsupported_label_style" if unstructured else "no_resolved_citations"
                return unassessed(code, findings)
            if self._judge is None:
                return unassessed("no_judge", findings)
        if not resolved or self._judge is None:
            return failed(failures, findings)
        if failures and not self._judge_violations:
            return failed(failures, findings.model_copy(update={"judge_skipped": True}))
        return await self._judged(
            self._judge,
            response=response,
            sources=sources,
            question=question,
            found=found,
            resolved=resolved,
            failures=failures,
            findings=findings,
        )

    def score_sync(
        self,
        response: str,
        sources: Sources,
        question: str = "",
        *,
        index_base: int | None = None,
    ) -> CitationScore:
        """Run `score` to completion with `asyncio.run`, for code without an event loop.

        Args:
            response: The answer as the pipeline wrote it.

            sources: A list of `Source`, or a labelled context string.

            question: The question the answer responds to.

            index_base: This row's numbering base, or None for the scorer's.

        Returns:
            The score.

        Raises:
            TypeError: as `score`.
        """
        # run_sync keeps the result out of the main task: Python 3.11's asyncio.run
        # reprs that task, and the repr of a score whose details list a hundred
        # thousand markers takes longer than scoring.
        return run_sync(lambda: self.score(response, sources, question, index_base=index_base))

    async def score_many(
        self,
        rows: Iterable[RowLike],
        *,
        concurrency: int = 32,
        on_scored: Callable[[], None] | None = None,
    ) -> list[CitationScore]:
        """Score many rows, at most ``concurrency`` at a time, in input order.

        A row that raises (a `ChatError`, a malformed row, a judge double that runs
        out of replies) becomes an un-assessed score for that row, with reason
        ``judge_call_failed`` for a `ChatError` and ``scoring_error`` otherwise, and
        never stops the others. ``rows`` is read lazily, one row per free worker; an
        exception raised by ``rows`` itself is raised once the rows in flight finish.

        Args:
            rows: `ScoreRow` values, ``(response, sources)`` or ``(response,
                sources, question)`` tuples, or mappings as users write rows:
                ``{"response" | "answer": ..., "sources" | "context": ...,
                "question": ...}`` (and optionally ``"index_base"``). A row of an
                unknown shape is a ``scoring_error`` whose explanation names the
                missing field.

            concurrency: How many rows are scored at once; at least 1.

            on_scored: Called once as each row's score is ready, in completion
                order (a progress bar's tick).

        Returns:
            One score per row, in the order of ``rows``.

        Raises:
            ValueError: ``concurrency`` is not a positive integer.
            NoRowsError: ``rows`` is not empty and not one row has a usable shape;
                a column of ``scoring_error`` would hide a caller's mistake.
        """
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            msg = "concurrency must be a positive integer"
            raise ValueError(msg)
        results: dict[int, CitationScore] = {}
        numbered = enumerate(rows)
        broken: list[Exception] = []
        shape_errors: list[str] = []

        async def worker() -> None:
            # One shared iterator: each free worker takes the next row, so a huge
            # input is never turned into a task per row.
            while not broken:
                try:
                    index, row = next(numbered)
                except StopIteration:
                    return
                except Exception as exc:  # noqa: BLE001 - re-raised once the others finish
                    broken.append(exc)
                    return
                # Each worker is its own task: the index it sets is seen by this row's
                # judge call only (a recording judge files the call under it).
                ROW_INDEX.set(index)
                results[index] = await self._score_row(row, shape_errors)
                if on_scored is not None:
                    on_scored()

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        if broken:
            # The iterable itself failed, not a row: there is no row to record it
            # against. It is raised after the rows in flight have finished.
            raise broken[0]
        scores = [results[index] for index in range(len(results))]
        if scores and len(shape_errors) == len(scores):
            msg = f"no row of the batch has a usable shape (row 1: {shape_errors[0]})"
            raise NoRowsError(msg)
        return scores

    async def _score_row(self, row: object, shape_errors: list[str]) -> CitationScore:
        try:
            response, sources, question, index_base = _unpack(row)
        except _RowShapeError as exc:
            shape_errors.append(str(exc))
            return unassessed("scoring_error", ScoreFindings(error=type(exc).__name__), str(exc))
        try:
            return await self.score(response, sources, question, index_base=index_base)
        except ChatError as exc:
            return unassessed("judge_call_failed", ScoreFindings(judge_error=_chat_error(exc)))
        except Exception as exc:  # noqa: BLE001 - one row's failure never stops the batch
            # Only the type's name: an exception's message may quote the row.
            kind = type(exc).__name__
            return unassessed("scoring_error", ScoreFindings(error=kind), kind)

    def _classify(
        self, response: object, sources: object, question: object, base: int
    ) -> Classified:
        if not isinstance(response, str):
            msg = "response must be a str"
            raise TypeError(msg)
        if not isinstance(question, str):
            msg = "question must be a str"
            raise TypeError(msg)
        if isinstance(sources, str):
            return classify_labelled(response, sources, self._label_pattern, self._citation_pattern)
        if not isinstance(sources, Sequence):
            msg = "sources must be a labelled context string or a sequence of Source"
            raise TypeError(msg)
        for number, source in enumerate(sources, start=1):
            if not isinstance(source, Source):
                msg = f"sources must hold only Source objects (item {number} is not one)"
                raise TypeError(msg)
        return classify_sources(response, sources, base)

    def _findings(
        self, found: Classified, response: str, sources: object
    ) -> tuple[ScoreFindings, list[str]]:
        """A row's deterministic findings and its failures as sentences, built once.

        The judge fields are at their defaults; the violation codes are set.
        """
        entries = _entries(found)
        block = find_reference_list(
            response, ((occ.start, occ.end, occ.tag_at) for occ in found.occurrences)
        )
        refs = None
        if block is None:
            coverage = sentence_coverage(response, entries.blanked, entries.cited)
        else:
            refs = ReferenceList(start=block.start, end=block.end, entries=block.entries)
            # Its lines are not claims: blanked, and its markers carry no sentence.
            coverage = sentence_coverage(
                response,
                [*entries.blanked, (block.start, block.end)],
                [at for at in entries.cited if not block.start <= at < block.end],
            )
        # With nothing to cite the row is un-assessed (empty_context), never failed.
        if found.numbered:
            unrecognized = find_unrecognized(
                response, count=found.source_count, index_base=found.base
            )
        else:
            spans = [(o.start, o.end) for o in found.occurrences]
            unrecognized = find_unrecognized(response, spans)
        zero_based = _looks_zero_based(found)
        # With nothing to cite the row is un-assessed (empty_context), never failed.
        codes, failures = (
            ((), [])
            if found.empty
            else self._failures(
                found, entries.fabricated, coverage, sources, unrecognized, zero_based=zero_based
            )
        )
        # Every field is set explicitly (error aside), so the dump keeps them all;
        # validated from a dict, which is cheaper than keyword arguments for a model this wide.
        findings = ScoreFindings.model_validate(
            {
                "labels": tuple(found.blocks),
                "excluded_labels": tuple(
                    ExcludedLabel(label=label, why=why) for label, why in found.excluded
                ),
                "resolved_citations": tuple(entries.resolved),
                "fabricated_citations": tuple(entries.fabricated),
                "ambiguous_citations": tuple(entries.ambiguous),
                "ignored_markers": tuple(entries.ignored),
                "markers_in_code": found.in_code,
                "unrecognized": unrecognized,
                "unverifiable_sources": _unverifiable(found),
                "index_base": found.base if found.numbered else None,
                "possible_zero_based_numbering": zero_based,
                "reference_list": refs,
                "sentence_coverage": coverage,
                "deterministic_failures": codes,
                "judge": self._judge_identity,
                "judge_called": False,
                "judge_error": None,
                "raw_score": None,
                "rejected_raw_score": None,
                "judge_explanation": None,
                "judge_reply_type": None,
                "judge_rejection": None,
                "judge_reply_truncated": False,
                "judge_raw_reply": None,
                "judge_skipped": False,
                "verdicts": (),
                "verified_verdicts": (),
                "discarded_verdicts": 0,
                "discarded_verdict_reasons": (),
            }
        )
        return findings, failures

    def _failures(  # noqa: PLR0913 - the row's findings, computed once by _findings
        self,
        found: Classified,
        fabricated_entries: Sequence[CitedMarker],
        coverage: SentenceCoverage,
        sources: object,
        unrecognized: Sequence[UnrecognizedToken],
        *,
        zero_based: bool,
    ) -> tuple[tuple[ViolationCode, ...], list[str]]:
        """The deterministic violations of a row, as codes and as sentences."""
        codes: list[ViolationCode] = []
        failures: list[str] = []
        fabricated = list(dict.fromkeys(e.label for e in fabricated_entries))
        if fabricated:
            codes.append("fabricated_citation")
            shown = _listing(fabricated)
            if isinstance(sources, str):
                what = (
                    "a label that names no block"
                    if len(fabricated) == 1
                    else "labels that name no block"
                )
                failures.append(f"the response cites {what} in the context: {shown}")
            else:
                what = "a marker" if len(fabricated) == 1 else "markers"
                given = len(found.blocks) + len(found.excluded)
                noun = "source" if given == 1 else "sources"
                failures.append(
                    f"the response cites {what} outside the {given} {noun} it was given: {shown}"
                )
                if zero_based:
                    failures.append(
                        "every marker would be in range if the sources were numbered from 0: "
                        "the pipeline may number from 0 (try index_base=0; on the command line, "
                        "--index-base 0)"
                    )
        if self._strict and unrecognized:
            first = unrecognized[0]
            codes.append("unrecognized_citation")
            many = len(unrecognized)
            failures.append(
                f"strict markers: the response holds {many} citation-like "
                f"{'token' if many == 1 else 'tokens'} that {'is' if many == 1 else 'are'} "
                f"not a marker, the first of kind {first.kind} at offset {first.start}"
            )
        # An honest abstention: nothing cited, nothing citation-like. Coverage is 0 by
        # construction there, and failing it would punish the contract's own answer.
        abstention = not found.occurrences and not unrecognized
        if (
            not abstention
            and self._min_coverage is not None
            and coverage.coverage is not None
            and coverage.coverage < self._min_coverage
        ):
            codes.append("sentence_coverage_below_minimum")
            failures.append(
                f"{coverage_words(coverage.cited_sentences, coverage.sentences)}, "
                f"below the minimum share of {self._min_coverage:.0%}"
            )
        return tuple(codes), failures

    async def _judged(  # noqa: PLR0913 - the row's parts, computed once by score
        self,
        judge: ChatModel,
        *,
        response: str,
        sources: Sources,
        question: str,
        found: Classified,
        resolved: list[Occurrence],
        failures: list[str],
        findings: ScoreFindings,
    ) -> CitationScore:
        reserved = self._label_pattern.pattern + self._citation_pattern.pattern
        delimiters = choose_delimiters(response, reserved)
        annotated = annotate(response, [occ.tag_at for occ in resolved], *delimiters)
        # Checked, not assumed: the tags must come off leaving the response exactly.
        restored, count = remove_tags(annotated, *delimiters)
        if restored != response or count != len(resolved):
            if failures:
                return failed(failures, findings)
            return unassessed("occurrence_tagging_failed", findings)
        graded = [occ.label for occ in resolved]
        fabricated = list(dict.fromkeys(e.label for e in findings.fabricated_citations))
        example = next((label for label in found.blocks if label != graded[0]), graded[0])
        prompt = render_scorer_prompt(
            context=render_blocks(found, sources),
            question=question,
            annotated=annotated,
            delimiters=delimiters,
            graded=graded,
            fabricated=fabricated,
            example_label=example,
        )
        findings = findings.model_copy(update={"judge_called": True})
        try:
            reply = await judge.complete(prompt)
        except ChatError as exc:
            findings = findings.model_copy(update={"judge_error": _chat_error(exc)})
            if failures:
                return failed(failures, findings)
            # A replayed judge that holds no reply for this prompt is not a failed call.
            not_recorded = isinstance(exc, JudgeReplyNotRecordedError)
            return unassessed(
                "judge_reply_not_recorded" if not_recorded else "judge_call_failed", findings
            )
        if is_truncated(reply):
            # A cut-off reply is not read at all: a verdict list missing its end may
            # still parse, and would be graded as if it were the judge's whole opinion.
            findings = findings.model_copy(
                update={"judge_reply_truncated": True, "judge_raw_reply": str(reply)}
            )
            if failures:
                findings = findings.model_copy(update={"judge_rejection": "judge_reply_truncated"})
                return failed(failures, findings)
            return unassessed("judge_reply_truncated", findings)
        check = check_reply(reply, graded, found.blocks, response)
        kept = tuple(check.verdicts)
        findings = findings.model_copy(
            update={
                "raw_score": check.score,
                "rejected_raw_score": check.rejected_score,
                "judge_explanation": check.explanation,
                "judge_reply_type": check.reply_type,
                "discarded_verdicts": len(check.discarded),
                "discarded_verdict_reasons": tuple(check.discarded),
                "verified_verdicts" if check.reason else "verdicts": kept,
                "judge_raw_reply": None if check.reason is None else str(reply),
            }
        )
        if failures:
            findings = findings.model_copy(update={"judge_rejection": check.reason})
            return failed(failures, findings, check.explanation)
        if check.reason is not None:
            return unassessed(check.reason, findings, check.problem)
        band = check.score if check.score is not None else 0
        return result(
            assessed=True,
            passed=band / _THIRDS >= self._threshold,
            score=band / _THIRDS,
            reason=None,
            explanation=check.explanation or "",
            findings=findings,
        )


def _unverifiable(found: Classified) -> tuple[str, ...]:
    """Labels of sources with no text (excluded as empty) or whose text is only a URL."""
    labels = [label for label, why in found.excluded if why == "empty"]
    labels.extend(label for label, text in found.blocks.items() if _URL_ONLY.fullmatch(text))
    return tuple(labels)


class _Entries(NamedTuple):
    """A row's classified occurrences as findings, and what sentence coverage needs."""

    resolved: list[ResolvedCitation]
    fabricated: list[CitedMarker]
    ambiguous: list[UnresolvedMarker]
    ignored: list[UnresolvedMarker]
    blanked: list[tuple[int, int]]
    cited: list[int]


def _entries(found: Classified) -> _Entries:
    entries = _Entries([], [], [], [], list(found.masked), [])
    for occ in found.occurrences:
        entries.blanked.append((occ.start, occ.end))
        if occ.kind == RESOLVED:
            entries.cited.append(occ.start)
            entries.resolved.append(
                ResolvedCitation(
                    occurrence=len(entries.resolved) + 1,
                    label=occ.label,
                    start=occ.start,
                    end=occ.end,
                    link=occ.link,
                )
            )
        elif occ.kind == FABRICATED:
            entries.fabricated.append(
                CitedMarker(label=occ.label, start=occ.start, end=occ.end, link=occ.link)
            )
        else:
            entry = UnresolvedMarker(
                label=occ.label, start=occ.start, end=occ.end, link=occ.link, why=occ.why or ""
            )
            (entries.ambiguous if occ.kind == AMBIGUOUS else entries.ignored).append(entry)
    return entries


def _looks_zero_based(found: Classified) -> bool:
    """A 1-based source list cited with ``[0]``, every marker in range if based at 0."""
    if not found.numbered or found.base != 1 or not found.occurrences:
        return False
    count = len(found.blocks) + len(found.excluded)
    numbers = []
    for occ in found.occurrences:
        digits = occ.label.lstrip("0") or "0"
        if len(digits) > 9:  # noqa: PLR2004 - far out of range either way
            return False
        numbers.append(int(digits))
    return 0 in numbers and all(0 <= n < count for n in numbers)


def _chat_error(exc: ChatError) -> JudgeCallFailure:
    return JudgeCallFailure(
        type=type(exc).__name__,
        provider=exc.provider,
        model=exc.model,
        status=exc.status,
        reason=exc.reason,
        detail=exc.detail,
        provider_code=exc.provider_code,
    )


def _unpack(row: object) -> tuple[Any, Any, Any, Any]:
    if isinstance(row, ScoreRow):
        return row.response, row.sources, row.question, row.index_base
    if isinstance(row, Mapping):
        return _unpack_mapping(row)
    if not isinstance(row, tuple) or len(row) not in (2, 3):
        msg = "a row must be a ScoreRow, a (response, sources[, question]) tuple or a mapping"
        raise _RowShapeError(msg)
    if len(row) == 2:  # noqa: PLR2004 - the short form has no question
        return row[0], row[1], "", None
    return row[0], row[1], row[2], None


def _unpack_mapping(row: Mapping[Any, Any]) -> tuple[Any, Any, Any, Any]:
    """Read ``{"response"|"answer", "sources"|"context", "question"}`` as users write rows."""
    response = next((row[key] for key in ("response", "answer") if key in row), None)
    if response is None:
        msg = "the row has no 'response' (or 'answer') field"
        raise _RowShapeError(msg)
    sources = next((row[key] for key in ("sources", "context") if key in row), None)
    if sources is None:
        msg = "the row has no 'sources' (or 'context') field"
        raise _RowShapeError(msg)
    question = row.get("question")
    return response, sources, "" if question is None else question, row.get("index_base")


def _listing(labels: list[str]) -> str:
    shown = ", ".join(labels[:_MAX_LISTED])
    if len(labels) > _MAX_LISTED:
        shown += f" and {len(labels) - _MAX_LISTED} more"
    return shown


def _unit_interval(value: object, name: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 <= value <= 1
    ):
        msg = f"{name} must be a number in 0..1"
        raise ValueError(msg)
    return float(value)
