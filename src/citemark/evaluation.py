"""Grading recorded answers: the citation scorer, its typed findings and the reason vocabulary.

This is the public home of everything about evaluating answers a pipeline already
wrote: `CitationScorer` and the `CitationScore` it returns, the typed
`ScoreFindings` behind ``CitationScore.details``, `coverage_report` over a batch,
and the un-assessed reason codes with their sentences (`REASONS`, `explain`), which
the core and both adapters share so that one input gets one code everywhere.

Example:
    ```python
    from citemark import Source
    from citemark.evaluation import CitationScorer

    score = CitationScorer().score_sync("Fees rise [2].", [Source(text="Fees rise.", doc_id="a")])
    print(score.outcome, score.is_violation, score.findings.fabricated_citations[0].label)
    #> failed True 2
    ```
"""

from __future__ import annotations

from citemark._contract.reasons import (
    ADAPTER_REASONS,
    CHAT_REASONS,
    REASONS,
    RECORDED_REASONS,
    REJECTION_REASONS,
    SCORER_REASONS,
    explain,
)
from citemark._judging.scorer.findings import (
    CitedMarker,
    ExcludedLabel,
    JudgeCallFailure,
    JudgeIdentity,
    MarkerClass,
    ResolvedCitation,
    ScoreFindings,
    SentenceCoverage,
    UnresolvedMarker,
    ViolationCode,
)
from citemark._judging.scorer.result import CitationScore, coverage_report
from citemark._judging.scorer.scorer import CitationScorer, ScoreRow
from citemark._public import publish

__all__ = [
    "ADAPTER_REASONS",
    "CHAT_REASONS",
    "REASONS",
    "RECORDED_REASONS",
    "REJECTION_REASONS",
    "SCORER_REASONS",
    "CitationScore",
    "CitationScorer",
    "CitedMarker",
    "ExcludedLabel",
    "JudgeCallFailure",
    "JudgeIdentity",
    "MarkerClass",
    "ResolvedCitation",
    "ScoreFindings",
    "ScoreRow",
    "SentenceCoverage",
    "UnresolvedMarker",
    "ViolationCode",
    "coverage_report",
    "explain",
]

publish(globals(), __name__, __all__)
