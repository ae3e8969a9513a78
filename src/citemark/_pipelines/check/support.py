"""``citemark check --verifier``: each row's advisory citation support, and the run's.

After a chunk of rows is scored, the rows that were assessed and hold sources go to
`citation_support` together, so the verifier answers one batch for the whole chunk.
Each row's `RowSupport` is attached to its findings (``support`` in ``rows.jsonl``);
`SupportTally` sums the rows into the run's means, as ALCE reports a run. Nothing
here changes an outcome, a count of the headline or the exit code.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

from citemark._judging.scorer.result import with_findings
from citemark._judging.verifiers.support import SupportRow, citation_support
from citemark._pipelines.eval_report import SupportSummary

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Sequence

    from citemark._judging.scorer.result import CitationScore
    from citemark._judging.verifiers.base import Verifier
    from citemark._judging.verifiers.support import RowSupport
    from citemark._pipelines.readers.citemark_rows import CheckRow

__all__ = ["SupportTally", "merged", "with_support"]


class SupportTally:
    """The run's support figures, summed row by row; mergeable across shards.

    Recalls and precisions are summed exactly (as fractions), so a run's means do not
    depend on how its rows were split into chunks or shards: the Ray engine's equal
    the local engine's to the last bit.
    """

    def __init__(self, verifier: dict[str, str]) -> None:
        self.verifier = verifier
        self.rows = 0
        self.sentences = 0
        self.recall_sum = Fraction(0)
        self.recall_rows = 0
        self.precision_sum = Fraction(0)
        self.precision_rows = 0
        self.unjudged_sentences = 0
        self.unjudged_citations = 0
        self.reattributed = 0
        self.premises = 0

    def add(self, row: RowSupport) -> None:
        """Count one row's figures."""
        self.rows += 1
        self.sentences += len(row.sentences)
        if row.recall is not None:
            self.recall_sum += Fraction(row.recall)
            self.recall_rows += 1
        if row.precision is not None:
            self.precision_sum += Fraction(row.precision)
            self.precision_rows += 1
        self.unjudged_sentences += row.unjudged_sentences
        self.unjudged_citations += row.unjudged_citations
        self.reattributed += sum(
            1
            for sentence in row.sentences
            for citation in sentence.citations
            if citation.reattribution is not None
            and citation.reattribution.supported_by_other_source
        )

    def merge(self, other: SupportTally) -> None:
        """Add another tally's rows (a later chunk's or shard's)."""
        for name in (
            "rows",
            "sentences",
            "recall_sum",
            "recall_rows",
            "precision_sum",
            "precision_rows",
            "unjudged_sentences",
            "unjudged_citations",
            "reattributed",
            "premises",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def summary(self) -> SupportSummary:
        """The run's means and counts."""
        return SupportSummary(
            verifier=self.verifier,
            recall=float(self.recall_sum / self.recall_rows) if self.recall_rows else None,
            precision=(
                float(self.precision_sum / self.precision_rows) if self.precision_rows else None
            ),
            rows=self.rows,
            sentences=self.sentences,
            unjudged_sentences=self.unjudged_sentences,
            unjudged_citations=self.unjudged_citations,
            reattributed=self.reattributed,
            premises=self.premises,
        )


def merged(total: SupportTally | None, part: SupportTally | None) -> SupportTally | None:
    """``total`` with ``part``'s rows added (a shard's or batch's); the first part starts it."""
    if part is None:
        return total
    if total is None:
        return part
    total.merge(part)
    return total


def with_support(  # noqa: PLR0913 - the chunk, then the run's shared state
    rows: Sequence[CheckRow],
    scores: Sequence[CitationScore],
    *,
    verifier: Verifier,
    runner: asyncio.Runner,
    tally: SupportTally,
    index_base: int,
) -> list[CitationScore]:
    """``scores`` with each assessed row's support attached, the chunk asked in one go.

    ``index_base`` is the scorer's, for rows that do not state their own.
    """
    chosen = [
        i for i, (row, score) in enumerate(zip(rows, scores, strict=True)) if _wanted(row, score)
    ]
    if not chosen:
        return list(scores)
    asked = []
    for i in chosen:
        row = rows[i]
        assert not isinstance(row.sources, str)  # noqa: S101 - _wanted keeps source lists only
        base = index_base if row.index_base is None else row.index_base
        asked.append(SupportRow(row.answer, row.sources, base))
    run = runner.run(citation_support(asked, verifier))
    tally.premises += run.premises
    out = list(scores)
    for i, support in zip(chosen, run.rows, strict=True):
        tally.add(support)
        details: dict[str, Any] = support.as_dict()
        out[i] = with_findings(out[i], out[i].findings.model_copy(update={"support": details}))
    return out


def _wanted(row: CheckRow, score: CitationScore) -> bool:
    """A row the verifier can read: checked in code, with a source list.

    A labelled context's blocks are cited by label, which `citation_support` does not read.
    """
    return (
        row.unassessed is None
        and not isinstance(row.sources, str)
        and bool(row.sources)
        and score.findings.error is None
    )
