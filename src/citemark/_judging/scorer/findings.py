"""What the scorer found in one row, as typed, frozen models.

`ScoreFindings` is the one record of a row's findings: the classified marker
occurrences, sentence coverage, the deterministic failures, and the judge's audit
fields. Everything that reads findings (the scorer's own predicates, ``citemark
check`` and its report sinks, both adapters) reads these attributes, so a renamed
finding is a type error, not a silently missing key. `CitationScore.details` is
produced from it once, by ``model_dump(mode="json")``, which is the JSON shape SPEC
§3.9 promises and ``rows.jsonl`` stores.

A row the scorer could not score at all (its input raised, or its judge call failed
before any finding was kept) sets only ``error`` or ``judge_error``; the dump leaves
out every field that was not set, so such a row's details are just that fact.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Literal

from pydantic import BaseModel, ConfigDict, JsonValue

from citemark._contract.models import UnrecognizedToken
from citemark._sources.providers._model import ProviderVerification
from citemark._sources.structured import StructuredFindings

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "CitedMarker",
    "ExcludedLabel",
    "JudgeCallFailure",
    "JudgeIdentity",
    "MarkerClass",
    "ReferenceList",
    "ResolvedCitation",
    "ScoreFindings",
    "SentenceCoverage",
    "UnresolvedMarker",
    "ViolationCode",
]

MarkerClass = Literal["resolved", "fabricated", "ambiguous", "ignored"]
"""The class the scorer gives a marker occurrence."""

ViolationCode = Literal[
    "fabricated_citation",
    "sentence_coverage_below_minimum",
    "span_mismatch",
    "unrecognized_citation",
    "unsent_document",
    "provider_citation_mismatch",
    "quote_not_in_source",
]
"""A deterministic violation: a finding made in code that fails a row.

``unsent_document``: a provider-native citation names a document the row's
``documents`` do not hold; ``provider_citation_mismatch``: one's span or text does
not re-read from the document sent (``mismatch``, ``drifted`` or ``unit_error``);
``quote_not_in_source``: a structured answer's quote does not occur in the source it
cites (an out-of-range structured id is a ``fabricated_citation``, like a marker)."""


class _Finding(BaseModel):
    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        strict=True,
        allow_inf_nan=False,
        hide_input_in_errors=True,
        use_attribute_docstrings=True,
    )


class ResolvedCitation(_Finding):
    """A marker occurrence that names a citable block."""

    occurrence: int
    """Its number among the row's resolved occurrences, from 1: the judge's tag."""
    label: str
    """The block it names: a label, or an integer marker's digits."""
    start: int
    """Offset of the marker group's opening bracket in the response."""
    end: int
    """Offset one past the marker group's closing bracket."""
    link: bool
    """Whether the marker is the text of a Markdown link."""


class CitedMarker(_Finding):
    """A fabricated marker occurrence: it names nothing the row was given."""

    label: str
    """What it names: a label, or an integer marker's digits."""
    start: int
    """Offset of the marker group's opening bracket in the response."""
    end: int
    """Offset one past the marker group's closing bracket."""
    link: bool
    """Whether the marker is the text of a Markdown link."""


class UnresolvedMarker(_Finding):
    """An ambiguous or ignored marker occurrence, with the code saying why."""

    label: str
    """What it names."""
    start: int
    """Offset of the marker group's opening bracket in the response."""
    end: int
    """Offset one past the marker group's closing bracket."""
    link: bool
    """Whether the marker is the text of a Markdown link."""
    why: str
    """A fixed code: ``names_excluded_label``, ``not_label_shaped``, ..."""


class ExcludedLabel(_Finding):
    """A block the context declares that cannot be cited."""

    label: str
    """The block's label."""
    why: Literal["empty", "duplicate"]
    """Whether the block is empty or its label is declared twice."""


class SentenceCoverage(_Finding):
    """How many of the answer's sentences carry a resolved citation: information, not a gate."""

    sentences: int
    """How many sentences the answer has (code, link destinations and markers excluded)."""
    cited_sentences: int
    """How many of them carry at least one resolved citation."""
    coverage: float | None
    """Their share, or None when there is no sentence."""
    uncited_sentences: tuple[str, ...]
    """Each uncited sentence's text, stripped, in order."""


class ReferenceList(_Finding):
    """The trailing block of an answer that lists its sources (``[1] Title`` lines).

    Its markers are classified like any other (a fabricated one still fails the row),
    but its lines are not claims: they are left out of sentence coverage and the judge
    is not asked to grade them.
    """

    start: int
    """Offset of its first line (its heading's, when it has one)."""
    end: int
    """Offset one past its last entry's text."""
    entries: int
    """How many entry lines it has."""


class JudgeIdentity(_Finding):
    """Which judge graded the row, and with which prompt template."""

    provider: str
    """The judge's provider, e.g. ``openai``."""
    model: str
    """The judge's model name."""
    prompt_sha256: str
    """The SHA-256 of the scorer's judge prompt template."""


class JudgeCallFailure(_Finding):
    """A judge call that failed in transport: structural facts of the `citemark.ChatError`."""

    type: str
    """The error's class name."""
    provider: str
    """The judge's provider."""
    model: str
    """The judge's model name."""
    status: int | None
    """The HTTP status, or None when no response came."""
    reason: str
    """The stable code of `citemark.ChatError.reason` (``timeout``, ``connect``,
    ``http_status``, ``bad_envelope``, ``null_content``, ...)."""
    detail: str = ""
    """What went wrong, as citemark's structural sentence (`citemark.ChatError.detail`)."""
    provider_code: str | None = None
    """The provider's machine error code (``error.code`` / ``error.type``), if it sent one."""


class ScoreFindings(_Finding):
    """Every finding of one row, deterministic first, then the judge's audit fields."""

    labels: tuple[str, ...] = ()
    """The citable blocks' labels, in context order (integers' digits for a source list)."""
    excluded_labels: tuple[ExcludedLabel, ...] = ()
    """Declared blocks that cannot be cited; a marker naming one is ambiguous."""
    resolved_citations: tuple[ResolvedCitation, ...] = ()
    """Occurrences that name a citable block, in order."""
    fabricated_citations: tuple[CitedMarker, ...] = ()
    """Occurrences that name nothing the row was given, in order."""
    ambiguous_citations: tuple[UnresolvedMarker, ...] = ()
    """Occurrences that cannot be resolved to exactly one block, in order."""
    ignored_markers: tuple[UnresolvedMarker, ...] = ()
    """Bracketed tokens that are not citations under this row's label style, in order."""
    markers_in_code: int = 0
    """Marker-shaped groups skipped inside code or link destinations."""
    unrecognized: tuple[UnrecognizedToken, ...] = ()
    """Citation-like text that is not a marker (``[1-3]``, ``[^1]``, ``【1】``, a leaked
    provider marker...), with kind and offsets; it cites nothing, and fails the row
    (``unrecognized_citation``) only in strict mode."""
    unverifiable_sources: tuple[str, ...] = ()
    """Labels of the sources that have no text or only a URL: a citation of one resolves,
    but there is nothing to grade it against, so the judge is never asked about it."""
    index_base: int | None = None
    """The numbering base the row's integer markers were read with (0 or 1); None for a
    labelled context."""
    possible_zero_based_numbering: bool = False
    """A 1-based row cites ``[0]`` and every marker would be in range numbered from 0:
    the pipeline probably numbers from 0 (check with ``index_base=0``). The row still
    fails; this says why it may be a numbering mismatch, never a guess acted on."""
    reference_list: ReferenceList | None = None
    """The answer's trailing reference list, or None when it has none."""
    sentence_coverage: SentenceCoverage | None = None
    """Sentence coverage; None only for a row that could not be scored."""
    deterministic_failures: tuple[ViolationCode, ...] = ()
    """The findings made in code that fail the row; empty when none did."""
    judge: JudgeIdentity | None = None
    """The configured judge, or None."""
    judge_called: bool = False
    """Whether the judge was asked (a call that failed counts)."""
    judge_error: JudgeCallFailure | None = None
    """The judge call's transport failure, if it failed."""
    raw_score: int | None = None
    """The judge's band (0-3) when it was a valid one, even in a rejected reply."""
    rejected_raw_score: str | None = None
    """An invalid band as JSON text (cut to 64 characters), for audit."""
    judge_explanation: str | None = None
    """The judge's explanation, when it was a string."""
    judge_reply_type: str | None = None
    """The reply's JSON type (``object``, ``array``, ..., ``not JSON``)."""
    judge_rejection: str | None = None
    """The reason code a reply was rejected with, on a row already failed in code."""
    judge_reply_truncated: bool = False
    """Whether the judge's reply was cut off at its token limit (``finish_reason`` length);
    such a row is un-assessed with ``judge_reply_truncated``, its reply unread."""
    judge_raw_reply: str | None = None
    """The judge's reply as it came, kept only when it was truncated or failed
    validation, so a person can read it and the verdict can be re-derived. It is data
    for artifacts (``rows.jsonl``): untrusted text, never put in a message or a log."""
    judge_skipped: bool = False
    """Whether the judge was deliberately not called because the row had already failed
    in code, whose outcome no verdict can change (``judge_violations=False``)."""
    verdicts: tuple[dict[str, JsonValue], ...] = ()
    """The verified verdicts of a usable reply: occurrence, cited block, outcome, evidence."""
    verified_verdicts: tuple[dict[str, JsonValue], ...] = ()
    """The verdicts that verified in a reply rejected as a whole."""
    discarded_verdicts: int = 0
    """How many well-formed verdicts were discarded because their evidence failed."""
    discarded_verdict_reasons: tuple[dict[str, JsonValue], ...] = ()
    """Each discarded verdict's occurrence and why."""
    error: str | None = None
    """For a row whose scoring raised: the exception's class name only."""
    provider_citations: tuple[ProviderVerification, ...] = ()
    """For a row recorded with a provider's raw response: each provider-native citation
    in response order, re-read from the documents the row says were sent, with its
    outcome (``verified``, ``mismatch``, ``unknown_document``, ...). Empty otherwise."""
    structured: StructuredFindings | None = None
    """For a row whose answer is a structured object: each of its citations (source
    ids, quotes) and the markers in its other string fields, checked; None otherwise."""
    index_base_from_prompt: bool = False
    """Whether ``index_base`` was read off the numbering the row's recorded prompt shows
    (``citemark check --from``), rather than given by an option or a row field."""
    support: dict[str, JsonValue] | None = None
    """With ``citemark check --verifier``: the row's advisory citation support (ALCE
    recall and precision, each sentence's and citation's verdict, re-attributions and
    the verifier's identity); None otherwise. It never changes the row's outcome."""

    @property
    def violated(self) -> bool:
        """Whether a finding made in code failed the row."""
        return bool(self.deterministic_failures)

    def classified(
        self,
    ) -> Iterator[tuple[MarkerClass, ResolvedCitation | CitedMarker | UnresolvedMarker]]:
        """Every classified occurrence with its class, class by class, each in order."""
        yield from (("resolved", entry) for entry in self.resolved_citations)
        yield from (("fabricated", entry) for entry in self.fabricated_citations)
        yield from (("ambiguous", entry) for entry in self.ambiguous_citations)
        yield from (("ignored", entry) for entry in self.ignored_markers)

    @property
    def marker_counts(self) -> dict[MarkerClass, int]:
        """How many occurrences of each class the row has, by class name."""
        return {
            "resolved": len(self.resolved_citations),
            "fabricated": len(self.fabricated_citations),
            "ambiguous": len(self.ambiguous_citations),
            "ignored": len(self.ignored_markers),
        }


NO_FINDINGS: Final = ScoreFindings()
"""The findings of a row that was never classified (only ``error`` or ``judge_error`` set)."""
