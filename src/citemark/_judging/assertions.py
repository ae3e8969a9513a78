"""``assert_cited``: citemark's deterministic check as a test assertion.

`assert_cited` runs the citation scorer's deterministic checks (no judge: an opinion
never fails a test) on one answer and raises `CitationAssertionError`, an
``AssertionError``, when a marker names no source, when the answer cites fewer
sources than asked, or when too few of its sentences carry a citation. Its message
is made of structural facts only (marker numbers, counts, shares), so a failing test
never prints the answer, the sources or the question into a CI log.

Each call is offered to the recorders registered with `add_recorder`; the pytest
plugin (``--citemark-report DIR``) is one, and turns the run's assertions into the
same ``report.json`` and ``report.html`` as ``citemark check``.

`citation_outcome` is citemark's one rule for what a row's citations amount to, the
one ``citemark check``'s headline, its report, JUnit file and this assertion all
follow (see docs/reports.md, "The headline"). An *abstention*, an answer that cites
nothing, breaks no citation rule: it is counted with the rows citing only given sources
and named apart (``cites_nothing``). Requiring a citation is the caller's own, extra
demand: `assert_cited` makes it by default (``min_citations=1``) and says so when it
fails a row for it; ``citemark check`` never fails an abstention.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, Literal, NamedTuple

from citemark._contract.models import CitedAnswer, Source
from citemark._judging.scorer.scorer import CitationScorer
from citemark._judging.scorer.sentences import coverage_words
from citemark._markers.resolve import resolve

if TYPE_CHECKING:
    from collections.abc import Callable

    from citemark._judging.scorer.findings import ScoreFindings
    from citemark._judging.scorer.result import CitationScore

__all__ = [
    "CITATION_OUTCOMES",
    "AssertionRecord",
    "CitationAssertionError",
    "CitationOutcome",
    "add_recorder",
    "assert_cited",
    "citation_outcome",
    "remove_recorder",
]

_MAX_LISTED: Final = 10

CitationOutcome = Literal["cited", "cites_nothing", "violation", "unchecked"]
"""What a row's citations amount to, decided in code (see `citation_outcome`)."""

CITATION_OUTCOMES: Final[tuple[CitationOutcome, ...]] = (
    "cited",
    "cites_nothing",
    "violation",
    "unchecked",
)
"""Every `CitationOutcome`, in the order reports list them."""

# The structured-citation outcomes that cite a source correctly.
_STRUCTURED_CITED: Final = frozenset({"resolved", "verified"})


def citation_outcome(findings: ScoreFindings) -> CitationOutcome:
    """What a row's citations amount to, by the checks made in code alone.

    * ``violation``: a finding made in code failed the row (a fabricated citation, a
      provider citation of a document not sent or that does not re-read, a
      structured citation out of range, coverage below a minimum the caller set).
    * ``unchecked``: the row's citations could not all be checked: it was never
      classified (a reader or recorder said it cannot be, or its sources are an
      empty context), a marker is ambiguous, or a provider citation could be
      neither verified nor refuted.
    * ``cited``: every citation is valid and there is at least one: a resolved
      marker, a verified provider citation, or a structured citation in range.
    * ``cites_nothing``: an abstention. Nothing is cited, so nothing is cited
      wrongly: it counts with the rows citing only given sources, named apart.

    The judge's opinion never enters: it is a separate, advisory line.
    """
    if findings.violated:
        return "violation"
    provider_unchecked = any(not v.ok for v in findings.provider_citations)
    if findings.sentence_coverage is None or findings.ambiguous_citations or provider_unchecked:
        return "unchecked"
    structured = findings.structured
    if (
        findings.resolved_citations
        or findings.provider_citations
        or (
            structured is not None
            and any(c.outcome in _STRUCTURED_CITED for c in structured.citations)
        )
    ):
        return "cited"
    return "cites_nothing"


class AssertionRecord(NamedTuple):
    """One `assert_cited` call, as a recorder receives it."""

    answer: str
    """The answer checked."""
    sources: tuple[Source, ...]
    """The sources it was checked against."""
    question: str
    """The question, possibly empty."""
    passed: bool
    """Whether the assertion held."""
    label: str | None
    """The caller's label for the assertion (the pytest fixture passes the test id)."""
    outcome: CitationOutcome | None = None
    """What the answer's citations amount to (`citation_outcome`)."""


class CitationAssertionError(AssertionError):
    """Raised by `assert_cited` when an answer's citations fail the assertion.

    The message names only marker numbers and counts.

    Attributes:
        out_of_range: The markers that name no source, distinct, in order.
        source_count: How many sources the answer was given.
        cited: How many distinct sources the answer cites.
        sentences: How many sentences the answer has.
        cited_sentences: How many of them carry a resolved citation.
    """

    def __init__(  # noqa: PLR0913 - the facts the message is made of
        self,
        message: str,
        *,
        out_of_range: tuple[int, ...],
        source_count: int,
        cited: int,
        sentences: int,
        cited_sentences: int,
    ) -> None:
        super().__init__(message)
        self.out_of_range = out_of_range
        self.source_count = source_count
        self.cited = cited
        self.sentences = sentences
        self.cited_sentences = cited_sentences


# Shown as citemark.testing.CitationAssertionError in pytest's failure lines.
CitationAssertionError.__module__ = "citemark.testing"

_recorders: list[Callable[[AssertionRecord], None]] = []


def add_recorder(recorder: Callable[[AssertionRecord], None]) -> None:
    """Call ``recorder`` with an `AssertionRecord` after every `assert_cited`."""
    _recorders.append(recorder)


def remove_recorder(recorder: Callable[[AssertionRecord], None]) -> None:
    """Stop calling ``recorder``; unknown recorders are ignored."""
    if recorder in _recorders:
        _recorders.remove(recorder)


def assert_cited(  # noqa: PLR0913 - the assertion's options, all keyword-only
    answer: str,
    sources: Sequence[Source],
    *,
    question: str = "",
    min_citations: int = 1,
    min_sentence_coverage: float | None = None,
    label: str | None = None,
) -> CitedAnswer:
    """Assert that ``answer`` cites only ``sources``, and enough of them.

    Deterministic: the same checks as `citemark.CitationScorer` without a judge.
    Markers inside code, link destinations and the like are not citations (see the
    marker grammar).

    Args:
        answer: The answer text, markers and all.

        sources: The numbered sources the answer cites as ``[n]``.

        question: The question, recorded in the report (never in a message).

        min_citations: The fewest distinct sources the answer must cite; 0 accepts
            an abstention.

        min_sentence_coverage: If given (0..1), the lowest share of sentences that
            must carry a resolved citation.

        label: A name for this assertion in recorders and reports.

    Returns:
        The resolved answer, when the assertion holds.

    Raises:
        CitationAssertionError: a marker is outside ``1..len(sources)``, fewer than
            ``min_citations`` sources are cited, or sentence coverage is below
            ``min_sentence_coverage``.
        TypeError: ``answer`` is not a string or ``sources`` is not a sequence of
            `citemark.Source`.
        ValueError: ``min_citations`` is negative, or ``min_sentence_coverage`` is
            not in 0..1.

    Example:
        ```python
        from citemark import Source
        from citemark.testing import assert_cited

        sources = [Source(text="Fees rise in May.", doc_id="a"), Source(text="No.", doc_id="b")]
        print([c.doc_id for c in assert_cited("Fees rise [1].", sources).citations])
        #> ['a']
        try:
            assert_cited("Fees rise [1]. Then they fall [4].", sources)
        except AssertionError as exc:
            print(exc.out_of_range, exc.source_count)
        #> (4,) 2
        ```
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this function's
    if not isinstance(answer, str):
        msg = "answer must be a str"
        raise TypeError(msg)
    if isinstance(sources, str) or not isinstance(sources, Sequence):
        msg = "sources must be a sequence of citemark.Source"
        raise TypeError(msg)
    given = tuple(sources)
    for number, source in enumerate(given, start=1):
        if not isinstance(source, Source):
            msg = f"sources must hold only citemark.Source objects (item {number} is not one)"
            raise TypeError(msg)
    if isinstance(min_citations, bool) or not isinstance(min_citations, int) or min_citations < 0:
        msg = "min_citations must be a non-negative integer"
        raise ValueError(msg)
    scorer = CitationScorer(min_sentence_coverage=min_sentence_coverage)
    result = _score_now(scorer, answer, given, question)
    failure = _failure(result, len(given), min_citations, scorer.min_sentence_coverage)
    outcome = citation_outcome(result.findings)
    for recorder in _recorders:
        recorder(AssertionRecord(answer, given, question, failure is None, label, outcome))
    if failure is not None:
        raise failure
    if not given:
        # Nothing cited and nothing given: an abstention the caller accepted.
        return CitedAnswer(text=answer, citations=())
    return resolve(answer, given)


def _score_now(
    scorer: CitationScorer, answer: str, sources: tuple[Source, ...], question: str
) -> CitationScore:
    """Run the judge-less scorer to completion, with or without a running event loop.

    Without a judge, `CitationScorer.score` never waits on anything, so its
    coroutine finishes on the first step; this works inside an ``async def`` test,
    where ``asyncio.run`` would refuse.
    """
    coroutine = scorer.score(answer, sources, question)
    try:
        coroutine.send(None)
    except StopIteration as done:
        result: CitationScore = done.value
        return result
    coroutine.close()
    msg = "the judge-less scorer suspended; this is a citemark bug"
    raise RuntimeError(msg)


def _failure(
    result: CitationScore, count: int, min_citations: int, min_coverage: float | None
) -> CitationAssertionError | None:
    findings = result.findings
    fabricated = list(dict.fromkeys(int(entry.label) for entry in findings.fabricated_citations))
    resolved = {entry.label for entry in findings.resolved_citations}
    coverage = findings.sentence_coverage
    sentences = coverage.sentences if coverage is not None else 0
    cited_sentences = coverage.cited_sentences if coverage is not None else 0
    problems: list[str] = []
    noun = "source" if count == 1 else "sources"
    if fabricated:
        shown = ", ".join(f"[{number}]" for number in fabricated[:_MAX_LISTED])
        if len(fabricated) > _MAX_LISTED:
            shown += f" and {len(fabricated) - _MAX_LISTED} more"
        what = "marker" if len(fabricated) == 1 else "markers"
        verb = "is" if len(fabricated) == 1 else "are"
        distinct = len(fabricated) + len(resolved)
        names = "names" if len(fabricated) == 1 else "name"
        where = (
            f"outside 1..{count} (the answer was given {count} {noun})"
            if count
            else "cited, but no sources were given"
        )
        problems.append(
            f"{what} {shown} {verb} {where}; "
            f"{len(fabricated)} of {distinct} distinct markers {names} no source"
        )
    elif len(resolved) < min_citations:
        abstained = citation_outcome(findings) == "cites_nothing"
        problems.append(
            f"the answer cites {len(resolved)} of {count} {noun}; at least {min_citations} expected"
            + (
                "; it cites nothing, an abstention (min_citations=0 accepts one)"
                if abstained
                else ""
            )
        )
    if "sentence_coverage_below_minimum" in findings.deterministic_failures:
        problems.append(
            f"{coverage_words(cited_sentences, sentences)}, "
            f"below the minimum share of {min_coverage:.0%}"
        )
    if not problems:
        return None
    return CitationAssertionError(
        "assert_cited: " + "; ".join(problems),
        out_of_range=tuple(fabricated),
        source_count=count,
        cited=len(resolved),
        sentences=sentences,
        cited_sentences=cited_sentences,
    )
