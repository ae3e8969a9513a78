"""ALCE-comparable citation recall and precision, on citemark's reading of the markers.

This module owns turning an answer and its given sources into one claim per sentence
with the sources that sentence cites, and computing citation recall and precision
from a `Verifier`'s verdicts, per sentence, per row and per run.

Sentences and markers are read exactly as the citation scorer reads them: markers are
classified by `classify_sources` (code, link destinations and raw HTML cite nothing;
``[0]`` cites only under ``index_base=0``), a trailing reference list is left out,
and the answer is split by `split_sentences`, the split sentence coverage measures.
A sentence's *claim* is its text with every marker group it holds removed (with the
spaces before it, and, for a marker that is link text, the link's destination), then
stripped. Its *citations* are the sources its resolved markers name, in the order
first cited, each once; markers that name nothing citable (out of range, a blank
source) are counted beside them and judged on nothing.

The definitions are ALCE's (Gao et al. 2023, section 4), as its ``eval.py`` runs them:

- *citation recall* of a sentence is 1 when its cited passages, joined in citation
  order, entail its claim, else 0; a sentence with no citation has recall 0. A row's
  recall is the mean over its sentences.
- *citation precision*: a citation of a sentence whose recall is 0 is not precise;
  the one citation of a sentence whose recall is 1 is precise; in a sentence with
  several citations and recall 1, a citation is *irrelevant*, hence not precise, when
  its passage alone does not entail the claim and the other citations without it
  still do. A row's precision is its precise citations over all its citations, and 0
  when it has no citation at all.
- Only the first ``at_most_citations`` citations of a sentence are used (3, the
  default of ``eval.py``'s command line; None for all). A run's figures are the means
  of its rows' figures. A row with no sentence has neither figure.

A verdict with ``entailed=None`` decides nothing: the sentence (or citation) it
would have decided is *unjudged*, left out of every mean and counted. Premises are
asked lazily, in the order ALCE asks them (a citation's passage alone only when its
sentence has several citations and recall 1, the others without it only when it
does not entail alone), but batched: each round collects every premise all rows
still need, identical premises once, and makes one `Verifier.verify` call. With
re-attribution on, each citation's passage alone is asked in the first round, and a
citation it does not support gets up to ``max_calls`` other sources tried (see
`citemark._judging.verifiers.reattribution`). Every result here is advisory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Literal

from citemark._contract.sync import run_sync
from citemark._contract.syntax import DEFAULT_INDEX_BASE, check_index_base
from citemark._contract.words import counted
from citemark._judging.scorer.labels import RESOLVED, classify_sources
from citemark._judging.scorer.reflist import find_reference_list
from citemark._judging.scorer.sentences import split_sentences
from citemark._judging.verifiers.base import (
    Premise,
    Verdict,
    Verifier,
    VerifierIdentity,
    support_line,
)
from citemark._judging.verifiers.reattribution import (
    DEFAULT_MAX_CALLS,
    Reattribution,
    closeness_order,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from citemark._contract.models import Source

__all__ = [
    "DEFAULT_AT_MOST_CITATIONS",
    "CitationSupport",
    "RowSupport",
    "SentenceClaim",
    "SentenceSupport",
    "SupportRow",
    "SupportRun",
    "citation_support",
    "citation_support_sync",
    "sentence_claims",
    "support_not_assessed",
]

DEFAULT_AT_MOST_CITATIONS: Final = 3
"""How many of a sentence's citations are judged: ``eval.py --at_most_citations``'s default."""

AloneVerdict = Literal["entailed", "not_entailed", "unjudged", "not_asked"]
"""What the verifier said of a citation's passage alone, if it was asked."""

SentenceStatus = Literal["judged", "uncited", "unjudged"]
"""``uncited``: no resolved citation, recall 0 as ALCE counts it; ``unjudged``: no verdict."""


@dataclass(frozen=True)
class SupportRow:
    """One row: the answer and its given sources, as `citemark.resolve` takes them."""

    answer: str
    """The answer as the model wrote it."""
    sources: Sequence[Source]
    """The numbered sources the model was shown."""
    index_base: int = DEFAULT_INDEX_BASE
    """The number of the first source (1, or 0 for a pipeline numbering from 0)."""


@dataclass(frozen=True)
class SentenceClaim:
    """One sentence of an answer as a claim, with the sources it cites."""

    index: int
    """The sentence's position in the answer, from 0."""
    start: int
    """Offset of the sentence's first character in the answer."""
    end: int
    """Offset one past the sentence's last character."""
    claim: str
    """The sentence with its markers removed, stripped."""
    cited: tuple[int, ...]
    """The sources its resolved markers name, as the answer numbers them, once each, in
    the order first cited."""
    unresolved_markers: int
    """Marker occurrences in the sentence that name nothing citable."""


def sentence_claims(
    answer: str, sources: Sequence[Source], *, index_base: int = DEFAULT_INDEX_BASE
) -> tuple[SentenceClaim, ...]:
    """Split ``answer`` into sentences and give each its claim and cited sources.

    Never raises on a string answer and a list of `Source`; an answer with no
    sentence gives ``()``.

    Raises:
        ValueError: ``index_base`` is not 0 or 1.
    """
    base = check_index_base(index_base)
    found = classify_sources(answer, sources, base)
    occurrences = found.occurrences
    block = find_reference_list(answer, ((o.start, o.end, o.tag_at) for o in occurrences))
    blanked = [*found.masked, *((o.start, o.end) for o in occurrences)]
    live = occurrences
    if block is not None:
        # Its lines are a bibliography, not claims: blanked, and its markers cite nothing.
        blanked.append((block.start, block.end))
        live = [o for o in occurrences if not block.start <= o.start < block.end]
    split = split_sentences(answer, blanked, [o.start for o in live])
    cited: list[dict[int, None]] = [{} for _ in split.spans]
    unresolved = [0] * len(split.spans)
    for occurrence, owner in zip(live, split.owners, strict=True):
        if owner is None:
            continue
        if occurrence.kind == RESOLVED:
            cited[owner].setdefault(int(occurrence.label))
        else:
            unresolved[owner] += 1
    # Every marker group (whatever it names) leaves the claim; a linked one with its destination.
    cuts = sorted({(o.start, o.tag_at if o.link else o.end) for o in occurrences})
    return tuple(
        SentenceClaim(
            index=index,
            start=start,
            end=end,
            claim=_claim(answer, start, end, cuts),
            cited=tuple(cited[index]),
            unresolved_markers=unresolved[index],
        )
        for index, (start, end) in enumerate(split.spans)
    )


def _claim(answer: str, start: int, end: int, cuts: Sequence[tuple[int, int]]) -> str:
    """``answer[start:end]`` without the cuts inside it, nor the spaces before each."""
    pieces: list[str] = []
    pos = start
    for cut_start, cut_end in cuts:
        if cut_end <= pos or cut_start >= end:
            continue
        begin = max(cut_start, pos)
        pieces.append(answer[pos:begin].rstrip(" \t"))
        pos = min(cut_end, end)
    pieces.append(answer[pos:end])
    return "".join(pieces).strip()


@dataclass(frozen=True)
class CitationSupport:
    """One judged citation of a sentence."""

    source: int
    """The source it names, as the answer numbers it."""
    alone: AloneVerdict
    """What the verifier said of this source's passage alone, if it was asked."""
    precise: bool | None
    """ALCE's precision: True when it counts as correct, None when unjudged."""
    irrelevant: bool
    """ALCE's irrelevant citation: it does not entail alone and the others do without it."""
    problem: str | None
    """The verdict's problem code when the citation is unjudged."""
    reattribution: Reattribution | None
    """The other sources tried when this one does not entail alone; None when not tried."""

    def as_dict(self) -> dict[str, object]:
        """The citation as JSON-ready fields."""
        return {
            "source": self.source,
            "alone": self.alone,
            "precise": self.precise,
            "irrelevant": self.irrelevant,
            "problem": self.problem,
            "reattribution": None if self.reattribution is None else self.reattribution.as_dict(),
        }


@dataclass(frozen=True)
class SentenceSupport:
    """One sentence's citation recall, and its judged citations."""

    sentence: SentenceClaim
    """The sentence, its claim and every source it cites."""
    status: SentenceStatus
    """``judged``, ``uncited`` (recall 0, as ALCE counts it) or ``unjudged``."""
    recall: int | None
    """1 when its judged citations together entail the claim, 0 when not or uncited."""
    problem: str | None
    """The verdict's problem code when the sentence is unjudged."""
    citations: tuple[CitationSupport, ...]
    """The first ``at_most_citations`` citations, judged."""

    def as_dict(self) -> dict[str, object]:
        """The sentence as JSON-ready fields."""
        s = self.sentence
        return {
            "index": s.index,
            "start": s.start,
            "end": s.end,
            "claim": s.claim,
            "cited": list(s.cited),
            "unresolved_markers": s.unresolved_markers,
            "status": self.status,
            "recall": self.recall,
            "problem": self.problem,
            "citations": [c.as_dict() for c in self.citations],
        }


@dataclass(frozen=True)
class RowSupport:
    """One row's citation recall and precision, with the verifier that judged them."""

    verifier: VerifierIdentity
    """What gave the verdicts."""
    sentences: tuple[SentenceSupport, ...]
    """Every sentence of the answer, in order."""
    recall: float | None
    """Mean recall over the judged sentences; None when none is judged."""
    precision: float | None
    """Precise over judged citations; 0.0 with no citation at all (ALCE); None when
    the row has no sentence or every citation is unjudged."""
    citations: int
    """How many citations were judged or tried (the first ``at_most_citations`` per sentence)."""
    precise_citations: int
    """How many of them count as correct."""
    unjudged_sentences: int
    """Sentences left out of the recall for want of a verdict."""
    unjudged_citations: int
    """Citations left out of the precision for want of a verdict."""

    def as_dict(self) -> dict[str, object]:
        """The row's support findings as JSON-ready fields, for ``rows.jsonl``."""
        return {
            "advisory": True,
            "verifier": self.verifier.as_dict(),
            "recall": self.recall,
            "precision": self.precision,
            "citations": self.citations,
            "precise_citations": self.precise_citations,
            "unjudged_sentences": self.unjudged_sentences,
            "unjudged_citations": self.unjudged_citations,
            "sentences": [s.as_dict() for s in self.sentences],
        }


@dataclass(frozen=True)
class SupportRun:
    """A run's citation recall and precision: means over its rows, as ALCE reports them."""

    verifier: VerifierIdentity
    """What gave the verdicts."""
    rows: tuple[RowSupport, ...]
    """Each row's findings, in the order given."""
    recall: float | None
    """Mean of the rows' recalls (rows without one left out); None when no row has one."""
    precision: float | None
    """Mean of the rows' precisions (rows without one left out); None when no row has one."""
    sentences: int
    """How many sentences the rows hold."""
    unjudged_sentences: int
    """Sentences left out for want of a verdict."""
    unjudged_citations: int
    """Citations left out for want of a verdict."""
    premises: int
    """Distinct premises the verifier was asked."""
    batches: int
    """`Verifier.verify` calls made."""

    def as_dict(self) -> dict[str, object]:
        """The run's figures as JSON-ready fields (rows left out; each has its own)."""
        return {
            "advisory": True,
            "verifier": self.verifier.as_dict(),
            "recall": self.recall,
            "precision": self.precision,
            "rows": len(self.rows),
            "sentences": self.sentences,
            "unjudged_sentences": self.unjudged_sentences,
            "unjudged_citations": self.unjudged_citations,
            "premises": self.premises,
            "batches": self.batches,
        }

    def summary(self) -> str:
        """One report line: ``support, advisory, verifier nli sha256:…: citation recall …``."""
        return support_line(self.verifier, self.recall, self.precision, self.sentences)


def support_not_assessed(identity: VerifierIdentity, error: str) -> tuple[str, dict[str, object]]:
    """The report line and JSON fields of a row whose verifier raised ``error``.

    ``error`` is the exception's class name only, never its message: a verifier's
    exception may carry a passage or a provider's reply. Advisory, as every figure
    here: the row's deterministic result stands.
    """
    line = (
        f"support, advisory, verifier {identity.label()}: not assessed, the verifier raised {error}"
    )
    return line, {"advisory": True, "verifier": identity.as_dict(), "error": error}


async def citation_support(
    rows: Iterable[SupportRow],
    verifier: Verifier,
    *,
    at_most_citations: int | None = DEFAULT_AT_MOST_CITATIONS,
    reattribute: bool = True,
    max_calls: int = DEFAULT_MAX_CALLS,
) -> SupportRun:
    """Compute ALCE's citation recall and precision for ``rows`` with ``verifier``.

    Args:
        rows: The answers and their given sources.
        verifier: What answers the entailment questions.
        at_most_citations: How many of a sentence's citations are judged (None: all).
        reattribute: Whether a citation its source does not support alone gets other
            sources tried.
        max_calls: At most this many other sources tried per such citation.

    Raises:
        ValueError: ``at_most_citations`` is below 1, ``max_calls`` below 0, an
            ``index_base`` is not 0 or 1, or the verifier answered a batch with the
            wrong number of verdicts.
    """
    if at_most_citations is not None and (
        isinstance(at_most_citations, bool) or at_most_citations < 1
    ):
        msg = "at_most_citations must be a positive int or None"
        raise ValueError(msg)
    if isinstance(max_calls, bool) or max_calls < 0:
        msg = "max_calls must be an int of 0 or more"
        raise ValueError(msg)
    prepared = [_Row.of(row) for row in rows]
    options = _Options(at_most_citations, reattribute and max_calls > 0, max_calls)
    asker = _Asker()
    batches = 0
    while True:
        results = [row.evaluate(asker, options) for row in prepared]
        if not asker.wanted:
            break
        premises = list(asker.wanted)
        asker.wanted.clear()
        verdicts = await verifier.verify(premises)
        batches += 1
        if len(verdicts) != len(premises):
            got, asked = counted(len(verdicts), "verdict"), counted(len(premises), "premise")
            msg = f"the verifier returned {got} for {asked}"
            raise ValueError(msg)
        asker.known.update(zip(premises, verdicts, strict=True))
    identity = verifier.identity
    done = tuple(
        _row_support(identity, sentences) for sentences in results if sentences is not None
    )
    recalls = [r.recall for r in done if r.recall is not None]
    precisions = [r.precision for r in done if r.precision is not None]
    return SupportRun(
        verifier=identity,
        rows=done,
        recall=sum(recalls) / len(recalls) if recalls else None,
        precision=sum(precisions) / len(precisions) if precisions else None,
        sentences=sum(len(r.sentences) for r in done),
        unjudged_sentences=sum(r.unjudged_sentences for r in done),
        unjudged_citations=sum(r.unjudged_citations for r in done),
        premises=len(asker.known),
        batches=batches,
    )


def citation_support_sync(
    rows: Iterable[SupportRow],
    verifier: Verifier,
    *,
    at_most_citations: int | None = DEFAULT_AT_MOST_CITATIONS,
    reattribute: bool = True,
    max_calls: int = DEFAULT_MAX_CALLS,
) -> SupportRun:
    """`citation_support` for synchronous callers."""
    return run_sync(
        lambda: citation_support(
            rows,
            verifier,
            at_most_citations=at_most_citations,
            reattribute=reattribute,
            max_calls=max_calls,
        )
    )


@dataclass(frozen=True)
class _Options:
    at_most: int | None
    reattribute: bool
    max_calls: int


class _Asker:
    """The verdicts known so far, and the premises still wanted for the next batch."""

    __slots__ = ("known", "wanted")

    def __init__(self) -> None:
        self.known: dict[Premise, Verdict] = {}
        self.wanted: dict[Premise, None] = {}

    def __call__(self, premise: Premise) -> Verdict | None:
        verdict = self.known.get(premise)
        if verdict is None:
            self.wanted[premise] = None
        return verdict


@dataclass(frozen=True)
class _Row:
    claims: tuple[SentenceClaim, ...]
    texts: dict[int, str]
    """Every citable source's text by its number."""
    tried: dict[int, tuple[int, ...]] = field(default_factory=dict)
    """Per sentence index, the other sources re-attribution tries, once worked out."""
    finished: dict[int, SentenceSupport] = field(default_factory=dict)
    """Per sentence index, its support once every premise it needs is answered."""

    @classmethod
    def of(cls, row: SupportRow) -> _Row:
        base = check_index_base(row.index_base)
        texts = {
            number: source.text
            for number, source in enumerate(row.sources, start=base)
            if source.text.strip()
        }
        return cls(sentence_claims(row.answer, row.sources, index_base=base), texts)

    def evaluate(
        self, ask: Callable[[Premise], Verdict | None], options: _Options
    ) -> tuple[SentenceSupport, ...] | None:
        """Every sentence's support, or None while some premise is still unanswered."""
        finished = self.finished
        complete = True
        for claim in self.claims:
            if claim.index in finished:
                continue
            done = self._sentence(claim, ask, options)
            if done is None:
                complete = False
            else:
                finished[claim.index] = done
        return tuple(finished[c.index] for c in self.claims) if complete else None

    def _sentence(
        self,
        sentence: SentenceClaim,
        ask: Callable[[Premise], Verdict | None],
        options: _Options,
    ) -> SentenceSupport | None:
        used = sentence.cited if options.at_most is None else sentence.cited[: options.at_most]
        if not used:
            return SentenceSupport(sentence, "uncited", 0, None, ())
        claim = sentence.claim
        passages = tuple(self.texts[n] for n in used)
        joint = ask(Premise(claim, passages))
        several = len(used) > 1
        precision_needs_alone = joint is not None and joint.entailed is True and several
        alone: list[Verdict | None] = [
            ask(Premise(claim, (self.texts[n],)))
            if options.reattribute or precision_needs_alone
            else None
            for n in used
        ]
        if joint is None or any(
            verdict is None for verdict in alone if options.reattribute or precision_needs_alone
        ):
            return None
        recall = joint.entailed
        citations: list[CitationSupport] = []
        complete = True
        for i, number in enumerate(used):
            single = alone[i]
            without = Premise(claim, passages[:i] + passages[i + 1 :])
            precise, irrelevant, problem, ready = _precision(recall, single, several, without, ask)
            reattribution = None
            if options.reattribute and single is not None and single.entailed is False:
                reattribution = self._reattribute(sentence, ask, options.max_calls)
                ready = ready and reattribution is not None
            if not ready:
                complete = False
                continue
            if recall is None:
                problem = joint.problem
            citations.append(
                CitationSupport(
                    source=number,
                    alone=_alone(single),
                    precise=precise,
                    irrelevant=irrelevant,
                    problem=problem,
                    reattribution=reattribution,
                )
            )
        if not complete:
            return None
        if recall is None:
            return SentenceSupport(sentence, "unjudged", None, joint.problem, tuple(citations))
        return SentenceSupport(sentence, "judged", int(recall), None, tuple(citations))

    def _reattribute(
        self,
        sentence: SentenceClaim,
        ask: Callable[[Premise], Verdict | None],
        max_calls: int,
    ) -> Reattribution | None:
        tried = self.tried.get(sentence.index)
        if tried is None:  # worked out once, not again in each round
            cited = set(sentence.cited)
            candidates = [(n, text) for n, text in self.texts.items() if n not in cited]
            tried = self.tried[sentence.index] = tuple(
                closeness_order(sentence.claim, candidates)[:max_calls]
            )
        verdicts = [ask(Premise(sentence.claim, (self.texts[n],))) for n in tried]
        if any(verdict is None for verdict in verdicts):
            return None
        return Reattribution(
            tried=tried,
            supported_by_other_source=tuple(
                n for n, v in zip(tried, verdicts, strict=True) if v is not None and v.entailed
            ),
            unjudged=sum(1 for v in verdicts if v is not None and v.entailed is None),
        )


def _precision(
    recall: bool | None,
    single: Verdict | None,
    several: bool,
    without: Premise,
    ask: Callable[[Premise], Verdict | None],
) -> tuple[bool | None, bool, str | None, bool]:
    """``(precise, irrelevant, problem, ready)`` of one citation, by ALCE's rule.

    ``ready`` is False while a premise it needs is unanswered.
    """
    if recall is None:
        return None, False, None, True
    if recall is False:
        return False, False, None, True
    if not several or single is None or single.entailed is True:
        return True, False, None, True
    others = ask(without)
    if others is None:
        return None, False, None, False
    if others.entailed is False:  # needed after all: not irrelevant, whatever it says alone
        return True, False, None, True
    if others.entailed is None:
        return None, False, others.problem, True
    if single.entailed is False:
        return False, True, None, True
    return None, False, single.problem, True  # unjudged alone, and the others suffice


def _alone(verdict: Verdict | None) -> AloneVerdict:
    if verdict is None:
        return "not_asked"
    if verdict.entailed is None:
        return "unjudged"
    return "entailed" if verdict.entailed else "not_entailed"


def _row_support(identity: VerifierIdentity, sentences: tuple[SentenceSupport, ...]) -> RowSupport:
    judged = [s.recall for s in sentences if s.recall is not None]
    citations = [c for s in sentences for c in s.citations]
    decided = [c.precise for c in citations if c.precise is not None]
    precise = sum(1 for p in decided if p)
    if not sentences:
        precision: float | None = None
    elif not citations:
        precision = 0.0  # ALCE: a row with no citation has precision 0
    elif not decided:
        precision = None
    else:
        precision = precise / len(decided)
    return RowSupport(
        verifier=identity,
        sentences=sentences,
        recall=sum(judged) / len(judged) if judged else None,
        precision=precision,
        citations=len(citations),
        precise_citations=precise,
        unjudged_sentences=sum(1 for s in sentences if s.status == "unjudged"),
        unjudged_citations=len(citations) - len(decided),
    )
