"""Provider-cited rows for ``citemark check``: a provider's raw response plus the documents sent.

A recorded row may carry, instead of (or beside) ``answer``, the provider's raw
response and the documents the pipeline sent with it::

    {"id": "q1", "question": "...", "provider": "anthropic",
     "provider_response": {...the Messages API response...},
     "documents": [{"doc_id": "tea", "text": "..."}, ...]}

``provider`` is one of `citemark.providers.PROVIDERS`; ``provider_response`` is the
response body as the provider returned it (an SDK object's ``model_dump()``);
``documents`` lists the documents in the order they were sent, each a
`citemark.providers.SentDocument` (``id`` is accepted for ``doc_id``, and a
``metadata`` object is kept out of the way). The row's answer is the response's
text; an ``answer`` given beside it must be that text exactly. Without ``sources``
or ``context``, the documents are also the row's numbered source list, in sent
order, so a ``[n]`` marker in the answer is resolved against them as in any row.

Every provider citation is re-read from the documents by
``citemark._sources.providers._spans`` when the row is read, and `with_provider_findings`
records the verifications on the row's score. The rule is the markers' rule: the
provider's citation is never repaired, and one that names a document that was not
sent (``unknown_document``) fails the row (``unsent_document``), as does one whose
span or text does not re-read from its document (``mismatch``, ``drifted``,
``unit_error``: ``provider_citation_mismatch``). ``no_source_span`` and
``unreadable`` citations are recorded and counted, never failed: there is nothing
to compare them with. A reason here is structural (field names, positions, counts);
it never quotes the row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, NamedTuple

from pydantic import ValidationError

from citemark._contract.errors import ProviderResponseError
from citemark._contract.validation import describe_validation_error
from citemark._judging.scorer.result import failed_after, unassessed, with_findings
from citemark._judging.scorer.sentences import cite_spans
from citemark._sources.providers._model import SentDocument
from citemark._sources.providers._spans import (
    PROVIDERS,
    parse_provider_response,
    verify_provider_answer,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

    from citemark._judging.scorer.findings import ScoreFindings, ViolationCode
    from citemark._judging.scorer.result import CitationScore
    from citemark._sources.providers._model import Outcome, ProviderVerification

__all__ = [
    "FAILING_OUTCOMES",
    "ProviderRow",
    "ProviderRowError",
    "count_provider_citations",
    "read_provider_row",
    "with_provider_findings",
]

FAILING_OUTCOMES: Final[Mapping[Outcome, ViolationCode]] = {
    "unknown_document": "unsent_document",
    "mismatch": "provider_citation_mismatch",
    "drifted": "provider_citation_mismatch",
    "unit_error": "provider_citation_mismatch",
}
"""The provider-citation outcomes that fail a row, and the violation code of each."""

_DOCUMENT_FIELDS: Final = frozenset(SentDocument.model_fields) | {"id"}
_NOT_A_FIELD: Final = "a field SentDocument does not define"


class ProviderRowError(ValueError):
    """A provider row is not readable; the message is a structural reason written here."""


class ProviderRow(NamedTuple):
    """What a provider-cited row holds beside its answer text."""

    provider: str
    """The provider name, a key of `citemark.providers.PROVIDERS`."""
    documents: tuple[SentDocument, ...]
    """The documents sent, in sent order."""
    verifications: tuple[ProviderVerification, ...]
    """Each provider citation, re-read from `documents`, in response order."""
    answer: str
    """The response's text: the answer the citations' response spans point into."""


def read_provider_row(value: Mapping[str, Any]) -> tuple[dict[str, Any], ProviderRow]:
    """Read a row's provider fields: the row as a marker row sees it, and the citations.

    Args:
        value: The row's JSON object; it holds ``provider_response``.

    Returns:
        The row with ``answer`` set to the response's text (and ``sources`` set to
        the documents when the row gives neither ``sources`` nor ``context``), and
        the provider part of the row with every citation verified.

    Raises:
        ProviderRowError: the provider fields are not of the documented shape.
    """
    provider = value.get("provider")
    if not isinstance(provider, str) or provider not in PROVIDERS:
        names = ", ".join(PROVIDERS)
        msg = f"provider must be one of: {names}"
        raise ProviderRowError(msg)
    documents = _documents(value.get("documents"))
    response = value["provider_response"]
    try:
        answer = parse_provider_response(provider, response, documents)
        verifications = verify_provider_answer(answer, documents)
    except ProviderResponseError as exc:
        msg = f"provider_response is not of the documented shape: {exc.reason}"
        raise ProviderRowError(msg) from None
    except Exception as exc:  # noqa: BLE001 - a bad response must not stop the check
        msg = f"provider_response could not be read ({type(exc).__name__})"
        raise ProviderRowError(msg) from None
    given = value.get("answer")
    if given is not None and given != answer.text:
        msg = "answer differs from the provider response's text; give one or make them equal"
        raise ProviderRowError(msg)
    row = {**value, "answer": answer.text}
    if "sources" not in row and "context" not in row:
        row["sources"] = [{"doc_id": d.doc_id, "text": _document_text(d)} for d in documents]
    return row, ProviderRow(provider, documents, verifications, answer.text)


def _documents(value: object) -> tuple[SentDocument, ...]:
    if value is None:
        msg = "documents is missing; a provider row lists the documents sent"
        raise ProviderRowError(msg)
    if not isinstance(value, list):
        msg = "documents must be a list"
        raise ProviderRowError(msg)
    documents: list[SentDocument] = []
    for number, item in enumerate(value, start=1):
        if not isinstance(item, dict):
            msg = f"document {number} is not a JSON object"
            raise ProviderRowError(msg)
        fields = {k: v for k, v in item.items() if k != "metadata"}
        if "id" in fields:
            if "doc_id" in fields:
                msg = f"document {number} gives both id and doc_id; give one"
                raise ProviderRowError(msg)
            fields["doc_id"] = fields.pop("id")
        for key in ("pages", "blocks"):
            if isinstance(fields.get(key), list):
                fields[key] = tuple(fields[key])
        try:
            documents.append(SentDocument.model_validate(fields))
        except ValidationError as exc:
            reason = describe_validation_error(exc, _DOCUMENT_FIELDS, unknown=_NOT_A_FIELD)
            msg = f"document {number} does not fit the SentDocument schema: {reason}"
            raise ProviderRowError(msg) from None
    ids = [d.doc_id for d in documents]
    if len(set(ids)) != len(ids):
        msg = "two documents share one doc_id; each must be unique"
        raise ProviderRowError(msg)
    _unique_references(documents)
    return tuple(documents)


def _unique_references(documents: list[SentDocument]) -> None:
    """Refuse two documents a provider names alike (``provider_id``, else ``doc_id``)."""
    first: dict[str, int] = {}
    for number, document in enumerate(documents, start=1):
        seen = first.setdefault(document.reference, number)
        if seen != number:
            msg = (
                f"documents {seen} and {number} share one provider reference "
                "(provider_id, else doc_id); each must be unique"
            )
            raise ProviderRowError(msg)


def _document_text(document: SentDocument) -> str:
    if document.text is not None:
        return document.text
    return "\n".join(document.pages or document.blocks or ())


def with_provider_findings(score: CitationScore, row: ProviderRow | None) -> CitationScore:
    """The row's score with its provider citations recorded, failed on a failing one.

    A row without provider fields (``row`` is ``None``) keeps its score. Otherwise
    the verifications go into ``findings.provider_citations``; a citation whose
    outcome is in `FAILING_OUTCOMES` adds its violation code and fails the row
    (score 0, whatever the marker findings or the judge said); a row whose only
    citations are the provider's and all pass is un-assessed with
    ``provider_citations_not_graded`` (no judge grades provider citations).
    """
    if row is None:
        return score
    checked = row.verifications
    codes: list[ViolationCode] = []
    failures: list[str] = []
    for outcome_code in dict.fromkeys(FAILING_OUTCOMES.values()):
        numbers = [
            i
            for i, v in enumerate(checked, start=1)
            if FAILING_OUTCOMES.get(v.outcome) == outcome_code
        ]
        if not numbers:
            continue
        codes.append(outcome_code)
        failures.append(_failure(outcome_code, numbers, checked, len(row.documents)))
    update: dict[str, object] = {"provider_citations": checked}
    coverage = score.findings.sentence_coverage
    if coverage is not None:
        # A verified citation supports the stretch of the answer it names.
        update["sentence_coverage"] = cite_spans(coverage, row.answer, _verified_spans(checked))
    findings = score.findings.model_copy(update=update)
    if failures:
        return failed_after(score, findings, codes, failures)
    if checked and score.reason == "no_resolved_citations":
        return unassessed("provider_citations_not_graded", findings, _tally(checked))
    return with_findings(score, findings)


def _verified_spans(checked: tuple[ProviderVerification, ...]) -> list[tuple[int, int]]:
    spans = []
    for v in checked:
        span = v.citation.response_span
        if v.ok and span is not None and span.start is not None and span.end is not None:
            spans.append((span.start, span.end))
    return spans


def _failure(
    code: ViolationCode, numbers: list[int], checked: tuple[ProviderVerification, ...], sent: int
) -> str:
    listed = ", ".join(f"{n} ({checked[n - 1].outcome})" for n in numbers[:10])
    if len(numbers) > 10:  # noqa: PLR2004 - the listing's length
        listed += f" and {len(numbers) - 10} more"
    many = len(numbers) != 1
    noun = "citations" if many else "citation"
    if code == "unsent_document":
        docs = "document" if sent == 1 else "documents"
        return (
            f"{len(numbers)} provider {noun} of {len(checked)} "
            f"{'name' if many else 'names'} a document that was not sent "
            f"({sent} {docs} sent): {listed}"
        )
    return (
        f"{len(numbers)} provider {noun} of {len(checked)} "
        f"{'do' if many else 'does'} not re-read from the document sent: {listed}"
    )


def _tally(checked: tuple[ProviderVerification, ...]) -> str:
    counts: dict[str, int] = {}
    for v in checked:
        counts[v.outcome] = counts.get(v.outcome, 0) + 1
    return ", ".join(f"{n} {outcome}" for outcome, n in counts.items())


def count_provider_citations(findings: ScoreFindings, counts: dict[str, int]) -> bool:
    """Add a row's provider citations to ``counts`` by outcome; whether it had any."""
    for v in findings.provider_citations:
        counts[v.outcome] = counts.get(v.outcome, 0) + 1
    return bool(findings.provider_citations)
