"""Verification: re-read each provider citation from the caller's own documents.

The provider's word is checked, never trusted and never repaired: a source span is
re-read from the document through a citemark `DocumentReader` and compared with the
provider's ``cited_text``; a response span is re-read from the answer and compared
with the text the provider says it covers; a retrieved passage must occur in the
cited document; and a citation of a document that was not sent is
``unknown_document``. `check_provider_response` is the synthesis path: there, an
``unknown_document`` rejects the whole answer with `UnsentDocumentError`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, get_args

from pydantic import BaseModel, ConfigDict

from citemark._contract.errors import OffsetUnitError, UnsentDocumentError
from citemark._sources.providers._common import Documents
from citemark._sources.providers._model import (
    Outcome,
    ProviderAnswer,
    ProviderCitation,
    ProviderVerification,
    SentDocument,
)
from citemark._sources.providers._offsets import Unit, length_in, to_code_points
from citemark._sources.providers.anthropic import parse_anthropic
from citemark._sources.providers.bedrock import parse_bedrock_converse
from citemark._sources.providers.cohere import parse_cohere
from citemark._sources.providers.gemini import parse_gemini
from citemark._sources.providers.openai import parse_openai_chat, parse_openai_responses
from citemark._sources.spans import MappingReader

if TYPE_CHECKING:
    from citemark._sources.spans import DocumentReader

__all__ = [
    "PROVIDERS",
    "ProviderCheck",
    "check_provider_response",
    "parse_provider_response",
    "provider_citations_json",
    "verify_provider_answer",
]

Parser = Callable[[object, Sequence[SentDocument | Mapping[str, Any]]], ProviderAnswer]

PROVIDERS: Mapping[str, Parser] = {
    "anthropic": parse_anthropic,
    "openai-responses": parse_openai_responses,
    "openai-chat": parse_openai_chat,
    "cohere": parse_cohere,
    "gemini": parse_gemini,
    "vertex": parse_gemini,
    "bedrock-converse": parse_bedrock_converse,
}
"""The provider names `parse_provider_response` accepts, and the parser of each.
``vertex`` is Gemini's ``generateContent`` format served by Vertex AI."""

_UNITS: tuple[Unit, ...] = ("code_point", "utf16", "utf8")
# A Markdown link as OpenAI writes url_citation spans: [label](url) or ([label](url)).
_LINK = re.compile(r"\[[^\]\n]*\]\((?P<url>[^()\s]*)\)")


class ProviderCheck(BaseModel):
    """A provider answer and the verification of each of its citations."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    answer: ProviderAnswer
    """The parsed answer."""

    verifications: tuple[ProviderVerification, ...]
    """One verification per citation, in the answer's citation order."""

    @property
    def ok(self) -> bool:
        """Whether every citation verified (an answer with no citations is ok)."""
        return all(v.ok for v in self.verifications)


def parse_provider_response(
    provider: str, response: object, documents: Sequence[SentDocument | Mapping[str, Any]]
) -> ProviderAnswer:
    """Parse ``response`` with the parser `PROVIDERS` names for ``provider``.

    Raises:
        ValueError: ``provider`` is not a name in `PROVIDERS`.
        ProviderResponseError: the response is not of the provider's documented shape
            (a text field that is not a string included), or ``documents`` cannot be
            told apart: two share a ``doc_id`` or a provider reference.
    """
    parser = PROVIDERS.get(provider)
    if parser is None:
        msg = f"unknown provider: expected one of {', '.join(sorted(PROVIDERS))}"
        raise ValueError(msg)
    return parser(response, documents)


def verify_provider_answer(
    answer: ProviderAnswer,
    documents: Sequence[SentDocument | Mapping[str, Any]],
    *,
    reader: DocumentReader | None = None,
) -> tuple[ProviderVerification, ...]:
    """Verify every citation of ``answer`` against the documents the caller sent.

    ``reader`` reads a document's text by its ``doc_id`` (a `citemark.FileReader`
    over the caller's corpus, say); without one, the documents' inline ``text`` is
    read. It never raises for a bad citation: each outcome is reported.

    Raises:
        ProviderResponseError: a document is not a `SentDocument`, or two share a
            ``doc_id`` or a provider reference.

    Example:
        ```python
        from citemark.providers import SentDocument, parse_anthropic, verify_provider_answer

        docs = [SentDocument(doc_id="sky", text="The sky is blue. Grass is green.")]
        def cite(start, end, text):
            return {"type": "char_location", "cited_text": text, "document_index": 0,
                    "start_char_index": start, "end_char_index": end}
        message = {"content": [{"type": "text", "text": "Blue.", "citations": [
            cite(0, 16, "The sky is blue."), cite(1, 17, "The sky is blue.")]}]}
        for v in verify_provider_answer(parse_anthropic(message, docs), docs):
            print(v.outcome, v.detail)
        #> verified cited_text_equal
        #> mismatch cited_text_differs
        ```
    """
    docs = Documents(documents, answer.provider)
    if reader is None:
        reader = MappingReader({d.doc_id: d.text for d in docs.all if d.text is not None})
    return tuple(
        ProviderVerification(citation=c, outcome=outcome, detail=detail)
        for c in answer.citations
        for outcome, detail in [_verify(c, answer, docs, reader)]
    )


def check_provider_response(
    provider: str,
    response: object,
    documents: Sequence[SentDocument | Mapping[str, Any]],
    *,
    reader: DocumentReader | None = None,
) -> ProviderCheck:
    """Parse and verify a provider response, rejecting a citation of an unsent document.

    This is the synthesis path's rule for provider citations, as `citemark.resolve`
    is for markers: the answer is rejected whole, once, and nothing is repaired.
    Other outcomes (``mismatch``, ``unit_error``, ...) are reported, not raised.

    Raises:
        UnsentDocumentError: a citation names a document that is not in ``documents``.
        ProviderResponseError: the response is not of the provider's documented shape
            (a text field that is not a string included), or ``documents`` cannot be
            told apart: two share a ``doc_id`` or a provider reference.
        ValueError: ``provider`` is not a name in `PROVIDERS`.

    Example:
        ```python
        from citemark import SynthesisError
        from citemark.providers import SentDocument, check_provider_response

        docs = [SentDocument(doc_id="only", text="One document.")]
        message = {"content": [{"type": "text", "text": "Claim.", "citations": [
            {"type": "char_location", "cited_text": "Two", "document_index": 1,
             "start_char_index": 0, "end_char_index": 3}]}]}
        try:
            check_provider_response("anthropic", message, docs)
        except SynthesisError as exc:
            print(type(exc).__name__, exc.unsent_count, exc.sent_count)
        #> UnsentDocumentError 1 1
        ```
    """
    answer = parse_provider_response(provider, response, documents)
    verifications = verify_provider_answer(answer, documents, reader=reader)
    unsent = [i for i, v in enumerate(verifications) if v.outcome == "unknown_document"]
    if unsent:
        raise UnsentDocumentError(
            answer.provider,
            citation_index=unsent[0],
            unsent_count=len(unsent),
            sent_count=len(documents),
        )
    return ProviderCheck(answer=answer, verifications=verifications)


def provider_citations_json(
    provider: str,
    response: object,
    documents: Sequence[SentDocument | Mapping[str, Any]],
    *,
    reader: DocumentReader | None = None,
) -> dict[str, Any]:
    """Parse and verify a provider response into JSON-safe data, for report rows.

    Unlike `check_provider_response` it does not raise for an unsent document: the
    citation's outcome is ``unknown_document`` and ``rejected`` is true, so a
    batch can record the row as a deterministic failure.

    Raises:
        ProviderResponseError: the response is not of the provider's documented shape
            (a text field that is not a string included), or ``documents`` cannot be
            told apart: two share a ``doc_id`` or a provider reference.
        ValueError: ``provider`` is not a name in `PROVIDERS`.

    Example:
        ```python
        import json

        from citemark.providers import provider_citations_json

        docs = [{"doc_id": "sky", "text": "The sky is blue."}]
        message = {"content": [{"type": "text", "text": "Blue.", "citations": [
            {"type": "char_location", "cited_text": "The sky is blue.",
             "document_index": 0, "start_char_index": 0, "end_char_index": 16}]}]}
        data = provider_citations_json("anthropic", message, docs)
        print(data["counts"], data["rejected"], json.loads(json.dumps(data)) == data)
        #> {'verified': 1} False True
        ```
    """
    answer = parse_provider_response(provider, response, documents)
    verifications = verify_provider_answer(answer, documents, reader=reader)
    counts = Counter(v.outcome for v in verifications)
    return {
        "provider": answer.provider,
        "text": answer.text,
        "rejected": counts["unknown_document"] > 0,
        "counts": {o: counts[o] for o in get_args(Outcome) if counts[o]},
        "citations": [
            {
                "outcome": v.outcome,
                "detail": v.detail,
                **v.citation.model_dump(mode="json", exclude={"raw", "provider"}),
            }
            for v in verifications
        ],
    }


def _verify(
    citation: ProviderCitation, answer: ProviderAnswer, docs: Documents, reader: DocumentReader
) -> tuple[Outcome, str]:
    if citation.unit_error is not None:
        rs = citation.response_span
        if rs is not None and rs.text is not None and 0 <= rs.part < len(answer.parts):
            part = answer.parts[rs.part]
            other = _other_unit(part, rs.raw_start, rs.raw_end, rs.unit, rs.text)
            if other is not None:
                return "unit_error", f"response_matches_as_{other}"
        return "unit_error", citation.unit_error
    if citation.doc_id is None:
        return "unknown_document", "document_not_sent"
    response = _check_response(citation, answer)
    if response is not None:
        return response
    span = citation.source_span
    if span is not None:
        if span.kind == "chars":
            return _check_chars(citation, reader)
        return _check_items(citation, docs.get(citation.doc_id))
    if citation.retrieved_texts:
        document = reader.read(citation.doc_id)
        if document is None:
            return "unreadable", "document_unreadable"
        if all(text in document for text in citation.retrieved_texts):
            return "verified", "retrieved_text_found"
        return "mismatch", "retrieved_text_not_in_document"
    return "no_source_span", "document_resolved"


def _check_response(
    citation: ProviderCitation, answer: ProviderAnswer
) -> tuple[Outcome, str] | None:
    span = citation.response_span
    if span is None or span.start is None or span.end is None:
        return None
    covered = answer.text[span.start : span.end]
    if span.text is not None and covered != span.text:
        part = answer.parts[span.part]
        other = _other_unit(part, span.raw_start, span.raw_end, span.unit, span.text)
        if other is not None:
            return "unit_error", f"response_matches_as_{other}"
        return "mismatch", "response_text_differs"
    if citation.location == "url_citation" and citation.url and "](" in covered:
        link = _LINK.fullmatch(covered.removeprefix("(").removesuffix(")"))
        balanced = covered.startswith("(") == covered.endswith(")")
        if link is None or not balanced or link.group("url") != citation.url:
            return "mismatch", "response_link_differs"
    return None


def _check_chars(citation: ProviderCitation, reader: DocumentReader) -> tuple[Outcome, str]:
    span = citation.source_span
    assert span is not None  # noqa: S101 - the caller checked
    assert citation.doc_id is not None  # noqa: S101 - the caller checked
    document = reader.read(citation.doc_id)
    if document is None:
        return "unreadable", "document_unreadable"
    unit: Unit = span.unit if span.unit in _UNITS else "code_point"
    first, stop = span.first, span.stop
    if first < 0 or stop < first:
        return "unit_error", "negative_or_reversed_span"
    if stop > length_in(document, unit):
        return "drifted", "span_past_document_end"
    try:
        start, end = to_code_points(document, first, unit), to_code_points(document, stop, unit)
    except OffsetUnitError as exc:
        return "unit_error", exc.reason
    if citation.cited_text is None:
        return "no_source_span", "span_without_cited_text"
    if document[start:end] == citation.cited_text:
        return "verified", "cited_text_equal"
    other = _other_unit(document, first, stop, unit, citation.cited_text)
    if other is not None:
        return "unit_error", f"source_matches_as_{other}"
    return "mismatch", "cited_text_differs"


def _check_items(citation: ProviderCitation, document: SentDocument) -> tuple[Outcome, str]:
    span = citation.source_span
    assert span is not None  # noqa: S101 - the caller checked
    items = document.pages if span.kind == "pages" else document.blocks
    if items is None:
        return "unreadable", f"no_{span.kind}_given"
    first, stop = span.first, span.stop
    if first < 0 or stop <= first:
        return "unit_error", "negative_or_empty_range"
    if stop > len(items):
        return "drifted", f"range_past_last_{span.kind[:-1]}"
    chosen = items[first:stop]
    if span.kind == "blocks":
        if citation.cited_text is None:
            return "no_source_span", "span_without_cited_text"
        # cited_text is the blocks "joined together"; the separator is not documented,
        # so whitespace (and only whitespace) is allowed between and around them.
        pattern = r"\s*" + r"\s*".join(re.escape(block) for block in chosen) + r"\s*"
        if re.fullmatch(pattern, citation.cited_text):
            return "verified", "cited_text_equals_blocks"
        return "mismatch", "cited_text_differs_from_blocks"
    texts = [citation.cited_text] if citation.cited_text is not None else citation.retrieved_texts
    if not texts:
        return "no_source_span", "span_without_cited_text"
    pages = "\n".join(chosen)
    if all(text in pages for text in texts):
        return "verified", "cited_text_in_pages"
    return "mismatch", "cited_text_not_in_pages"


def _other_unit(text: str, start: int, end: int, declared: Unit, expected: str) -> Unit | None:
    """The unit other than ``declared`` in which ``text[start:end]`` reads ``expected``."""
    for unit in _UNITS:
        if unit == declared:
            continue
        try:
            a, b = to_code_points(text, start, unit), to_code_points(text, end, unit)
        except OffsetUnitError:
            continue
        if text[a:b] == expected:
            return unit
    return None
