"""Evaluation reports (SPEC §3.12): what a run did, and what produced it.

`EvalReport` is the artifact of one evaluation run. It records the run's
configuration, the SHA-256 of the input it read, when and by which citemark version
it was made, and optional sections: `SynthesisReport` for a synthesis run,
`CheckSummary` for a deterministic check of recorded outputs. `schema_version` is
2 (1 still reads: its ``cite_correctly`` is today's ``cite_only_given_sources``), and
it stays 2 while new fields are additive with defaults. That
licence holds only because reports live in a git-ignored results folder
(`citemark.DEFAULT_RESULTS_DIR`) and so never outlive the code that reads them; a
test asserts the folder is ignored, and when that stops being true the next field is
a version bump.

`run_synthesis` runs a `Synthesizer` (and optionally a `FaithfulnessJudge`) over
rows and counts what happened. A row's `SynthesisError` is counted as rejected, a
model call that failed as failed, and neither stops the other rows. Verdicts are
counted, never averaged: there is no score here (SPEC §1, contract 3).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Literal

from pydantic import AliasChoices, AwareDatetime, BaseModel, ConfigDict, Field, JsonValue

from citemark._contract.artifacts import (
    ModelIdentity,
    Sha256,
    citemark_version,
    utc_now,
)
from citemark._contract.errors import ChatError, JudgeError, SynthesisError
from citemark._contract.sync import run_sync
from citemark._contract.words import counted
from citemark._judging.verifiers.base import VerifierIdentity, support_line
from citemark._model.redaction import RedactingChat

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from citemark._contract.models import Source
    from citemark._judging.judge import FaithfulnessJudge
    from citemark._model.synthesis import Synthesizer

__all__ = [
    "MAX_VIOLATING_LISTED",
    "VIOLATION_WORDS",
    "CheckSummary",
    "CitationHeadline",
    "EvalReport",
    "FailureCause",
    "GroupCounts",
    "MalformedLine",
    "SynthesisReport",
    "VerdictCounts",
    "ViolatingRow",
    "cause_outcome_word",
    "counted",
    "headline_text",
    "judge_text",
    "run_synthesis",
    "run_synthesis_sync",
    "unchecked_scope_text",
    "violation_words",
    "zero_based_text",
]

_CONFIG = ConfigDict(
    frozen=True, extra="forbid", use_attribute_docstrings=True, validate_by_name=True
)

# Schema 1 named the rows that cite only sources they were given ``cite_correctly``:
# the same count under a word that claimed more than was checked. A schema 1 report
# still reads, its count under the new name (see docs/reports.md, "Changes").
_CITE_ONLY_GIVEN: Final = AliasChoices("cite_only_given_sources", "cite_correctly")

MAX_VIOLATING_LISTED: Final = 10
"""How many rows with a violation the summary names (``CheckSummary.violating_rows``)."""

VIOLATION_WORDS: Final[dict[str, tuple[str, str]]] = {
    "fabricated_citation": (
        "cites a source it was not given",
        "cite a source they were not given",
    ),
    "sentence_coverage_below_minimum": (
        "cites fewer of its sentences than the minimum",
        "cite fewer of their sentences than the minimum",
    ),
    "span_mismatch": (
        "cites a span that does not match its source",
        "cite a span that does not match its source",
    ),
    "unrecognized_citation": (
        "holds citation-like text that is not a marker (strict)",
        "hold citation-like text that is not a marker (strict)",
    ),
    "unsent_document": (
        "has a provider citation of a document that was not sent",
        "have a provider citation of a document that was not sent",
    ),
    "provider_citation_mismatch": (
        "has a provider citation that does not re-read from its document",
        "have a provider citation that does not re-read from its document",
    ),
    "quote_not_in_source": (
        "quotes text that is not in the source it cites",
        "quote text that is not in the source they cite",
    ),
}
"""Each violation code in words, for one row and for several: what the headline says."""


class VerdictCounts(BaseModel):
    """How many answers the judge found faithful, unfaithful, or gave no usable verdict on.

    Counts only. There is no average and no score: a verdict is an opinion, and a
    rate of opinions from an uncalibrated judge is not a quality metric.
    """

    model_config = _CONFIG

    faithful: int = 0
    """Answers the judge found faithful."""

    unfaithful: int = 0
    """Answers the judge found unfaithful."""

    unusable: int = 0
    """Answers the judge gave no usable verdict on: its reply failed validation
    (`JudgeError`) or its call failed (`ChatError`)."""


class SynthesisReport(BaseModel):
    """What a synthesis run produced, and the models and prompts that produced it.

    Example:
        ```python
        from citemark import Source, Synthesizer, run_synthesis_sync
        from citemark.testing import ScriptedChat

        sources = [Source(text="Fees rise in May.", doc_id="fees")]
        chat = ScriptedChat(["Fees rise in May [1].", "No idea.", "Fees rise [2]."])
        report = run_synthesis_sync(
            Synthesizer(chat), [("When?", sources)] * 3, input_stage="recorded"
        )
        print(report.answered, report.abstained, report.rejected, report.verdicts)
        #> 1 1 1 None
        ```
    """

    model_config = _CONFIG

    input_stage: str
    """What supplied the sources synthesis saw, e.g. ``"bm25"`` or ``"recorded"``."""

    synthesis: ModelIdentity
    """The synthesizing model and the SHA-256 of its prompt template."""

    judge: ModelIdentity | None = None
    """The judging model and its prompt hash; ``None`` when no judge ran."""

    redaction_applied: bool
    """Whether synthesis prompts passed through redaction before leaving the process."""

    answered: int
    """Rows answered with at least one citation."""

    abstained: int
    """Rows answered with no citation: the model said the sources do not answer."""

    rejected: int
    """Rows whose answer broke the synthesis contract (`SynthesisError`); counted,
    never raised out of the run."""

    failed: int = 0
    """Rows whose model call failed (`ChatError`): neither an answer nor a rejection."""

    verdicts: VerdictCounts | None = None
    """The judge's verdicts on answered and abstained rows; ``None`` without a judge."""


class MalformedLine(BaseModel):
    """An input line that could not be read as a row, and why, in structural terms.

    The reason names what was wrong (``not valid JSON``, ``answer is missing``)
    and never quotes the line: recorded outputs are untrusted text.
    """

    model_config = _CONFIG

    line: int
    """The line's 1-based number in the input file."""

    reason: str
    """What was wrong with it, without quoting it."""


class GroupCounts(BaseModel):
    """One group's counts in a check run with ``--group-by``: the summary's, per group."""

    model_config = _CONFIG

    rows: int = 0
    """Rows in the group."""
    passed: int = 0
    """Rows assessed and passed."""
    failed: int = 0
    """Rows assessed and failed."""
    unassessed: int = 0
    """Rows that could not be assessed."""
    deterministic_failures: int = 0
    """Failed rows whose failure was found in code."""
    citations_all_resolve: int = 0
    """Rows in which every citation resolves (rows citing nothing included)."""
    rows_with_unrecognized: int = 0
    """Rows holding citation-like text that is not a marker."""
    rows_with_unverifiable_sources: int = 0
    """Rows given a source with no text or only a URL."""
    possible_zero_based_numbering: int = 0
    """Rows checked 1-based that would be in range numbered from 0."""
    violations: dict[str, int] = Field(default_factory=dict)
    """Rows with each deterministic violation, by code."""
    reasons: dict[str, int] = Field(default_factory=dict)
    """Un-assessed rows per reason code."""
    cite_only_given_sources: int = Field(default=0, validation_alias=_CITE_ONLY_GIVEN)
    """Rows that cite only sources they were given and have no violation, abstentions
    included (`CitationHeadline`); ``cite_correctly`` in schema 1."""
    cite_nothing: int = 0
    """Of those, the rows that cite nothing."""
    unchecked: int = 0
    """Rows whose citations could not all be checked."""


class FailureCause(BaseModel):
    """Identical failures collapsed: rows failed, or un-assessed, for the same cause."""

    model_config = _CONFIG

    outcome: Literal["failed", "unassessed"]
    """Whether the rows failed or could not be assessed."""
    cause: str
    """The violation codes joined with ``+`` (``fabricated_citation``), the un-assessed
    reason code, or ``judge_score_below_threshold`` for a row the judge failed."""
    rows: int
    """How many rows share it."""
    groups: dict[str, int] = Field(default_factory=dict)
    """With ``--group-by``, how many of them are in each group."""


class CitationHeadline(BaseModel):
    """What the rows' citations amount to, decided in code: the headline of a check.

    Every row is in exactly one of ``cite_only_given_sources``, ``violations`` and
    ``unchecked`` (see `citemark._judging.assertions.citation_outcome`, the one rule); the
    judge's verdicts are apart (`CheckSummary.judge_verdicts`). Code checks that each
    citation names a source the row was given (and, where asked, coverage, quotes and
    provider spans); whether a cited source supports its sentence is only a judge's
    advice, so nothing here says a row cites *correctly*.
    """

    model_config = _CONFIG

    rows: int = 0
    """Rows read (``CheckSummary.rows``)."""

    cite_only_given_sources: int = Field(default=0, validation_alias=_CITE_ONLY_GIVEN)
    """Rows in which every citation names a source the row was given (a resolved
    marker, a verified provider citation, a structured citation in range) and no
    check made in code failed, abstentions included. Schema 1 called this count
    ``cite_correctly``; it never meant more than this."""

    cite_nothing: int = 0
    """Of those, the abstentions: rows that cite nothing, so cite nothing wrongly."""

    violations: int = 0
    """Rows a check made in code failed (``CheckSummary.violations`` has the codes)."""

    unchecked: int = 0
    """Rows whose citations could not all be checked: never classified (a reader's or
    recorder's reason), an ambiguous marker, a provider citation neither verified nor
    refuted."""

    unchecked_reasons: dict[str, int] = Field(default_factory=dict)
    """Unchecked rows per reason code, for those that have one."""

    unreadable_lines: int = 0
    """Input lines that could not be read as a row (``CheckSummary.malformed``)."""


class ViolatingRow(BaseModel):
    """A row with a violation, named: where it is, what it is called, what failed."""

    model_config = _CONFIG

    line: int
    """The row's line (or position) in the input."""

    title: str
    """The row's title (`citemark._pipelines.check.titles.row_title`): its id when readable,
    else its question cut short; printable, at most 80 characters."""

    codes: tuple[str, ...]
    """The violation codes, in the scorer's order."""

    markers: tuple[str, ...] = ()
    """The offending markers as written (those naming no source, first ones), at most 5."""


def _verb(count: int, one: str, many: str) -> str:
    return one if count == 1 else many


def violation_words(code: str, count: int) -> str:
    """A violation code in words, for ``count`` rows; an unknown code is named as is.

    Example:
        ```python
        from citemark._pipelines.eval_report import violation_words

        print(violation_words("fabricated_citation", 3))
        #> cite a source they were not given
        ```
    """
    words = VIOLATION_WORDS.get(code)
    if words is None:
        return code
    return words[0] if count == 1 else words[1]


def headline_text(summary: CheckSummary) -> str:
    """The headline as one sentence: what code checked, row by row, with or without a judge.

    Rows that cite only sources they were given (abstentions named apart), rows with a
    violation (each code in words), rows that could not be checked, unreadable lines.
    The same words lead the terminal, the page, the pytest summary; the keys of
    ``report.json`` are these words (`CitationHeadline`). A judge's verdicts are
    never part of it (`judge_text`).

    Example:
        ```python
        from citemark._pipelines.eval_report import CheckSummary, CitationHeadline, headline_text

        counts = CitationHeadline(
            rows=16, cite_only_given_sources=13, cite_nothing=2, violations=3
        )
        summary = CheckSummary(
            rows=16, passed=0, failed=3, unassessed=13, headline=counts,
            violations={"fabricated_citation": 3},
        )
        for part in headline_text(summary).split("; "):
            print(part)
        #> 13 of 16 rows cite only sources they were given (2 cite nothing)
        #> 3 have a violation (3 cite a source they were not given)
        #> 0 could not be checked
        #> 0 lines unreadable
        ```
    """
    h = summary.headline
    verb = _verb(h.cite_only_given_sources, "cites", "cite")
    pronoun = _verb(h.cite_only_given_sources, "it was", "they were")
    given = (
        f"{h.cite_only_given_sources} of {counted(h.rows, 'row')} {verb} only sources "
        f"{pronoun} given"
    )
    if h.cite_nothing:
        given += f" ({h.cite_nothing} {_verb(h.cite_nothing, 'cites', 'cite')} nothing)"
    violated = f"{h.violations} {_verb(h.violations, 'has', 'have')} a violation"
    if summary.violations:
        violated += (
            " ("
            + ", ".join(f"{n} {violation_words(code, n)}" for code, n in summary.violations.items())
            + ")"
        )
    unchecked = f"{h.unchecked} could not be checked"
    if h.unchecked_reasons:
        unchecked += (
            " (" + ", ".join(f"{n} {code}" for code, n in h.unchecked_reasons.items()) + ")"
        )
    unreadable = f"{counted(h.unreadable_lines, 'line')} unreadable"
    return f"{given}; {violated}; {unchecked}; {unreadable}"


def judge_text(summary: CheckSummary) -> str:
    """The judge's line, apart from the headline: ``not asked``, or its advisory verdicts.

    Example:
        ```python
        from citemark._pipelines.eval_report import CheckSummary, judge_text

        print(judge_text(CheckSummary(rows=1, passed=0, failed=0, unassessed=1)))
        #> judge: not asked (deterministic findings only)
        ```
    """
    verdicts = summary.judge_verdicts
    if summary.judge is None or verdicts is None:
        return "judge: not asked (deterministic findings only)"
    judge = summary.judge
    parts = [
        f"{verdicts.faithful} faithful",
        f"{verdicts.unfaithful} unfaithful",
        f"{verdicts.unusable} without a usable verdict",
    ]
    if summary.judge_calls_saved:
        parts.append(f"{summary.judge_calls_saved} not asked (already failed in code)")
    return f"judge (advisory, never gates) {judge.provider} {judge.model}: " + ", ".join(parts)


def cause_outcome_word(outcome: str, *, judged: bool) -> str:
    """A failure cause's outcome in the run's words: the judge era's, or the headline's.

    Without a judge a failed row is one with a violation, and an un-assessed one was
    not graded (it cites nothing, or could not be checked).

    Example:
        ```python
        from citemark._pipelines.eval_report import cause_outcome_word

        print(cause_outcome_word("failed", judged=False), cause_outcome_word("failed", judged=True))
        #> violation failed
        ```
    """
    if judged:
        return {"unassessed": "un-assessed"}.get(outcome, outcome)
    return {"failed": "violation", "unassessed": "not graded"}.get(outcome, outcome)


def unchecked_scope_text(summary: CheckSummary) -> str | None:
    """Without a judge, what was not checked: ``None`` when a judge ran.

    With a support verifier and no judge, the line is the verifier's advisory figures.

    Example:
        ```python
        from citemark._pipelines.eval_report import CheckSummary, unchecked_scope_text

        print(unchecked_scope_text(CheckSummary(rows=1, passed=0, failed=0, unassessed=1)))
        #> not checked without a judge: whether a cited source supports its sentence
        ```
    """
    if summary.judge is not None:
        return None
    if summary.support is not None:
        return summary.support.text()
    return "not checked without a judge: whether a cited source supports its sentence"


def zero_based_text(summary: CheckSummary) -> str | None:
    """The numbering-base hint, both sides counted; ``None`` when no row cites ``[0]``.

    ``--index-base 0`` is suggested only when it would lower the rows citing a
    source they were not given: more rows come into range than go out of it.

    Example:
        ```python
        from citemark._pipelines.eval_report import CheckSummary, zero_based_text

        summary = CheckSummary(
            rows=24, passed=0, failed=2, unassessed=22,
            possible_zero_based_numbering=2, out_of_range_numbered_from_zero=22,
        )
        for part in zero_based_text(summary).split("; "):
            print(part)
        #> 2 rows would be in range numbered from 0
        #> 22 rows would then be out of range (keep the 1-based numbering)
        ```
    """
    into = summary.possible_zero_based_numbering
    if not into:
        return None
    out = summary.out_of_range_numbered_from_zero
    text = (
        f"{counted(into, 'row')} would be in range numbered from 0; "
        f"{counted(out, 'row')} would then be out of range"
    )
    if into > out:
        return text + " (try --index-base 0)"
    return text + " (keep the 1-based numbering)"


class SupportSummary(BaseModel):
    """A check's advisory citation support: ALCE's recall and precision, with what judged.

    Means over the rows that have a figure, as ALCE reports a run. Never part of the
    headline or the exit code: a verifier gates nothing without a calibration.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    verifier: dict[str, str]
    """The verifier's identity: kind, name, version, digest."""
    recall: float | None
    """Mean citation recall over the rows with one; None when no row has one."""
    precision: float | None
    """Mean citation precision over the rows with one; None when no row has one."""
    rows: int
    """Rows the verifier looked at."""
    sentences: int
    """Sentences in those rows."""
    unjudged_sentences: int = 0
    """Sentences left out for want of a verdict."""
    unjudged_citations: int = 0
    """Citations left out for want of a verdict."""
    reattributed: int = 0
    """Citations not supported by their source for which another given source was."""
    premises: int = 0
    """Entailment questions asked: distinct within each batch, so it depends on how the
    rows were batched (the local engine's chunks, the Ray engine's shards)."""

    def text(self) -> str:
        """The report line: ``support, advisory, verifier lexical sha256:…: citation …``."""
        identity = VerifierIdentity(**self.verifier)
        return support_line(identity, self.recall, self.precision, self.sentences)


class CheckSummary(BaseModel):
    """Counts from a deterministic check of recorded pipeline outputs.

    What ``citemark check`` records; fields follow `citemark.coverage_report`. A
    passed row is one that was assessed and met the threshold, never one the judge
    merely liked. A malformed input line is not a row: it is counted apart, with its
    line number, and the rows around it are still checked.
    """

    model_config = _CONFIG

    rows: int
    """Rows read."""

    passed: int
    """Rows assessed and passed."""

    failed: int
    """Rows assessed and failed."""

    unassessed: int
    """Rows that could not be assessed."""

    deterministic_failures: int = 0
    """Failed rows whose failure was found in code: a fabricated citation, or
    sentence coverage below a minimum the caller set."""

    reasons: dict[str, int] = Field(default_factory=dict)
    """Un-assessed rows per stable reason code."""

    judge: ModelIdentity | None = None
    """The advisory judge and its prompt hash; ``None`` when none ran."""

    malformed: int = 0
    """Input lines that could not be read as a row; they are not counted in ``rows``."""

    malformed_lines: tuple[MalformedLine, ...] = ()
    """The first malformed lines (at most 100), each with its line number and reason."""

    citations: dict[str, int] = Field(default_factory=dict)
    """Marker occurrences over all rows, by class: ``resolved``, ``fabricated``,
    ``ambiguous`` and ``ignored``."""

    citations_all_resolve: int = 0
    """Rows in which every citation resolves to a source it was given: no fabricated
    and no ambiguous marker, and no provider citation of a document that was not
    sent (rows citing nothing included; see the next field). A
    deterministic fact, whatever a judge thinks."""

    citations_all_resolve_none_cited: int = 0
    """Of those, the rows that cite nothing at all (abstentions, or uncited answers)."""

    violations: dict[str, int] = Field(default_factory=dict)
    """Rows with each deterministic violation, by code (a row may have several)."""

    rows_with_unrecognized: int = 0
    """Rows holding citation-like text that is not a marker (``[1-3]``, ``[^1]``...)."""

    unrecognized: dict[str, int] = Field(default_factory=dict)
    """Unrecognized citation-like tokens over all rows, by kind."""

    rows_with_unverifiable_sources: int = 0
    """Rows given at least one source with no text or only a URL (never graded)."""

    possible_zero_based_numbering: int = 0
    """Rows checked 1-based that cite ``[0]`` and would be in range numbered from 0."""

    out_of_range_numbered_from_zero: int = 0
    """Rows checked 1-based, every marker in range, that cite their last source's
    number and so would be out of range numbered from 0: the other side of
    ``possible_zero_based_numbering`` (`zero_based_text`)."""

    violating_rows: tuple[ViolatingRow, ...] = ()
    """The first rows with a violation (at most `MAX_VIOLATING_LISTED`), in input
    order, named; ``rows.jsonl`` and ``report.html`` hold them all."""

    files: dict[str, Sha256] = Field(default_factory=dict)
    """The files written beside the report (e.g. ``rows.jsonl``, ``report.html``),
    each with the SHA-256 of its bytes, so a reader can tell they belong together."""

    judge_calls: int = 0
    """Rows the judge was asked about (a call that failed counts)."""

    judge_calls_saved: int = 0
    """Rows that had already failed in code and were not sent to the judge, whose
    verdict could not change their outcome (``--no-judge-violations``, the default)."""

    judge_failures: dict[str, int] = Field(default_factory=dict)
    """Failed judge calls per `citemark.ChatError.reason` code (``timeout``,
    ``connect``, ``http_status``, ...)."""

    judge_provider_codes: dict[str, int] = Field(default_factory=dict)
    """Failed judge calls per provider machine code (``rate_limit_exceeded``, ...),
    for the failures whose error body carried one."""

    judge_replies_truncated: int = 0
    """Judge replies cut off at the token limit (``finish_reason`` length), failed rows
    included; each such reply was not read."""

    rows_with_provider_citations: int = 0
    """Rows recorded with a provider's raw response that holds at least one
    provider-native citation (see docs/provider-citations.md)."""

    provider_citations: dict[str, int] = Field(default_factory=dict)
    """Provider-native citations over all rows, by verification outcome
    (``verified``, ``mismatch``, ``unknown_document``, ``no_source_span``, ...)."""

    failure_causes: tuple[FailureCause, ...] = ()
    """Failed rows, and rows un-assessed for a reason other than ``no_judge``, collapsed
    by cause, most rows first."""

    group_by: str | None = None
    """The row field the counts are broken down by (``--group-by``), or None."""

    groups: dict[str, GroupCounts] = Field(default_factory=dict)
    """With ``group_by``, each group's counts, most rows first. A row whose field is
    missing or not a string is in ``(none)``; a value is cut to 64 characters; past
    100 groups, the rest are counted in ``(other)``."""

    headline: CitationHeadline = Field(default_factory=CitationHeadline)
    """The headline, decided in code: how many rows cite only sources they were given
    (abstentions included and counted apart), have a violation, or could not be
    checked, and how many lines could not be read. It leads every summary of a check."""

    judge_verdicts: VerdictCounts | None = None
    """The judge's verdicts on the rows whose outcome it decided (those no check made
    in code failed): ``faithful`` passed, ``unfaithful`` failed, ``unusable`` left
    un-assessed. ``None`` when no judge was asked."""

    support: SupportSummary | None = None
    """With ``--verifier``: the advisory citation support (ALCE recall and precision)
    and the verifier's identity; ``None`` when no verifier was asked. It never changes
    the headline or the exit code."""


class EvalReport(BaseModel):
    """The artifact of one evaluation run.

    Example:
        ```python
        from citemark import dataset_sha256
        from citemark.reports import EvalReport

        data = b'{"question": "When?", "answer": "In May [1]."}'
        report = EvalReport(config={"judge": None}, input_sha256=dataset_sha256(data))
        print(report.schema_version, report.synthesis, report.created_at.tzname())
        #> 2 None UTC
        ```
    """

    model_config = _CONFIG

    schema_version: Literal[1, 2] = 2
    """The report format's version: 2 since the headline's ``cite_correctly`` was
    renamed ``cite_only_given_sources`` (the same count; docs/reports.md, "Changes").
    A schema 1 report still reads. A new field with a default keeps the version,
    which is sound only while reports stay in a git-ignored results folder."""

    citemark_version: str = Field(default_factory=citemark_version)
    """The citemark version that made the report."""

    created_at: AwareDatetime = Field(default_factory=utc_now)
    """When the report was made, timezone-aware (UTC by default)."""

    config: dict[str, JsonValue] = Field(default_factory=dict)
    """The run's configuration as given: options, paths, thresholds; JSON values."""

    input_sha256: Sha256
    """The SHA-256 of the input bytes the run read (see `citemark.dataset_sha256`)."""

    synthesis: SynthesisReport | None = None
    """The synthesis section, when the run synthesized answers."""

    check: CheckSummary | None = None
    """The check section, when the run checked recorded outputs."""

    run_id: str | None = None
    """The id of the run that made the report (``citemark check``: a fresh UUID4 in
    hex), which every file the run wrote names too (see ``check_output_set``)."""


async def run_synthesis(
    synthesizer: Synthesizer,
    rows: Iterable[tuple[str, Sequence[Source]]],
    *,
    input_stage: str,
    judge: FaithfulnessJudge | None = None,
    redaction_applied: bool | None = None,
) -> SynthesisReport:
    """Synthesize an answer for each row, optionally judge it, and count the outcomes.

    Rows run one after another, each with exactly one synthesis call (and one judge
    call for an answered or abstained row). A row's `SynthesisError` counts as
    ``rejected`` and a synthesis `ChatError` as ``failed``; a judge's `JudgeError`
    or `ChatError` counts as an ``unusable`` verdict. None of them stops the run.
    Any other exception is a bug and is raised.

    Args:
        synthesizer: The synthesizer to run; its identity goes into the report.

        rows: ``(question, sources)`` pairs, read once, in order.

        input_stage: What supplied the sources, recorded as is.

        judge: An advisory judge whose verdicts are counted; ``None`` for none.

        redaction_applied: Whether prompts were redacted; when ``None``, true
            exactly when the synthesizer's chat is a `RedactingChat`.

    Returns:
        The counts, with the identities of the models and prompts.
    """
    counts = {"answered": 0, "abstained": 0, "rejected": 0, "failed": 0}
    verdicts = {"faithful": 0, "unfaithful": 0, "unusable": 0}
    for question, sources in rows:
        try:
            answer = await synthesizer.synthesize(question, sources)
        except SynthesisError:
            counts["rejected"] += 1
            continue
        except ChatError:
            counts["failed"] += 1
            continue
        counts["answered" if answer.citations else "abstained"] += 1
        if judge is None:
            continue
        try:
            verdict = await judge.judge(question, answer.text, sources)
        except (JudgeError, ChatError):
            verdicts["unusable"] += 1
        else:
            verdicts["faithful" if verdict.faithful else "unfaithful"] += 1
    if redaction_applied is None:
        redaction_applied = isinstance(synthesizer.chat, RedactingChat)
    return SynthesisReport(
        input_stage=input_stage,
        synthesis=ModelIdentity.of(synthesizer),
        judge=ModelIdentity.of(judge) if judge is not None else None,
        redaction_applied=redaction_applied,
        verdicts=VerdictCounts(**verdicts) if judge is not None else None,
        **counts,
    )


def run_synthesis_sync(
    synthesizer: Synthesizer,
    rows: Iterable[tuple[str, Sequence[Source]]],
    *,
    input_stage: str,
    judge: FaithfulnessJudge | None = None,
    redaction_applied: bool | None = None,
) -> SynthesisReport:
    """Run `run_synthesis` to completion with `asyncio.run`, for code without an event loop."""
    return run_sync(
        lambda: run_synthesis(
            synthesizer,
            rows,
            input_stage=input_stage,
            judge=judge,
            redaction_applied=redaction_applied,
        )
    )
