"""The model of a provider-native citation, and of the documents it may cite.

A `ProviderCitation` says which of the caller's documents a provider cited, where
in that document (a `SourceSpan`, with its unit, base and inclusivity stated) when
the provider says so, where in the answer (a `ResponseSpan`, in code points of the
whole answer text), and what text the provider claims it cited. It is built by
citemark's parsers from the provider's response and the list of documents the
caller sent (`SentDocument`); a citation of a document that is not in that list
keeps ``doc_id=None``, so it cannot pass for a citation of a sent one.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from citemark._sources.providers._offsets import Unit

__all__ = [
    "Outcome",
    "ProviderAnswer",
    "ProviderCitation",
    "ProviderVerification",
    "ResponseSpan",
    "SentDocument",
    "SourceSpan",
]

_CONFIG = ConfigDict(
    frozen=True, extra="forbid", use_attribute_docstrings=True, hide_input_in_errors=True
)

Outcome = Literal[
    "verified",
    "mismatch",
    "drifted",
    "unknown_document",
    "no_source_span",
    "unit_error",
    "unreadable",
]
"""What re-reading a provider citation from the caller's documents found."""


class SentDocument(BaseModel):
    """One document the caller sent to the provider, in the order it was sent.

    Example:
        ```python
        from citemark.providers import SentDocument

        doc = SentDocument(doc_id="apache", text="Grant of Patent License.")
        print(doc.reference, doc.kind)
        #> apache document
        ```
    """

    model_config = _CONFIG

    doc_id: str
    """The caller's identity of the document; also the key a reader reads it by."""

    text: str | None = None
    """The full text, when it is given inline (else a reader supplies it)."""

    provider_id: str | None = None
    """The identity the provider echoes back, when it is not `doc_id`: an OpenAI
    ``file_id``, a Cohere document ``id``, a Gemini chunk ``uri``, an Anthropic search
    result's ``source``, a cited URL. `reference` falls back to `doc_id`."""

    kind: Literal["document", "search_result"] = "document"
    """Anthropic (and Bedrock) count ``document`` blocks and ``search_result`` blocks
    separately; every other provider ignores this."""

    pages: tuple[str, ...] | None = None
    """The text of each page, page 1 first, for page-located citations."""

    blocks: tuple[str, ...] | None = None
    """The text of each content block, for block-located citations (an Anthropic
    custom-content document or search result)."""

    @property
    def reference(self) -> str:
        """The identity a provider names this document by: `provider_id`, else `doc_id`."""
        return self.doc_id if self.provider_id is None else self.provider_id


class SourceSpan(BaseModel):
    """Where in the cited document the provider says the cited text lies.

    The offsets are kept exactly as the provider gave them; `unit`, `base` and
    `end_inclusive` say how to read them. `stop` turns them into a 0-based,
    end-exclusive range in `unit`.
    """

    model_config = _CONFIG

    kind: Literal["chars", "pages", "blocks"]
    """What the offsets count."""

    start: int
    """The first offset, as the provider gave it."""

    end: int
    """The last offset, as the provider gave it."""

    unit: Unit | Literal["page", "block"]
    """For ``chars``, the text unit; ``page`` or ``block`` otherwise."""

    base: Literal[0, 1]
    """The number of the first page, block or character."""

    end_inclusive: bool
    """Whether `end` names the last item itself (else one past it)."""

    @property
    def first(self) -> int:
        """The 0-based index of the first item."""
        return self.start - self.base

    @property
    def stop(self) -> int:
        """The 0-based index one past the last item."""
        return self.end - self.base + (1 if self.end_inclusive else 0)


class ResponseSpan(BaseModel):
    """Where in the answer a citation sits, in code points of the whole answer text.

    `raw_start`, `raw_end`, `unit` and `part` keep what the provider gave; `start`
    and `end` are the converted, 0-based, end-exclusive code-point offsets into
    `ProviderAnswer.text`, or ``None`` when the conversion failed (the citation's
    `ProviderCitation.unit_error` then says why).
    """

    model_config = _CONFIG

    part: int
    """The index of the answer part (text block, content item, Part) the provider's
    offsets are relative to, in `ProviderAnswer.parts`."""

    raw_start: int
    """The start offset as the provider gave it, relative to the part."""

    raw_end: int
    """The end offset as the provider gave it, relative to the part."""

    unit: Unit
    """The unit the provider's offsets count."""

    end_inclusive: bool = False
    """Whether the provider's end names the last unit itself."""

    start: int | None = None
    """The converted start, in code points of the whole answer."""

    end: int | None = None
    """The converted end (exclusive), in code points of the whole answer."""

    text: str | None = None
    """The answer text the provider says lies at the span (Cohere ``text``, Gemini
    ``segment.text``), or ``None`` when it gives none."""


class ProviderCitation(BaseModel):
    """One provider-native citation, resolved against the documents the caller sent.

    Built only by citemark's parsers. A provider citation that names several
    documents (Cohere ``sources``, Gemini ``groundingChunkIndices``) becomes one
    `ProviderCitation` per document.
    """

    model_config = _CONFIG

    provider: str
    """The provider name, e.g. ``"anthropic"``."""

    location: str
    """The provider's own name for the citation's kind, e.g. ``"char_location"``,
    ``"url_citation"``, ``"grounding_support"``, ``"documentChar"``."""

    document_ref: int | str | None
    """What the provider named the document by, as it gave it: an index (Anthropic
    ``document_index``, Bedrock ``documentIndex``, a Gemini chunk index) or an
    identity (a file id, a document id, a URL)."""

    doc_id: str | None
    """The caller's `SentDocument.doc_id` that `document_ref` resolves to, or
    ``None`` when it names no document that was sent."""

    source_span: SourceSpan | None = None
    """Where in the document, when the provider says (Anthropic, Bedrock, Vertex
    RAG page spans)."""

    response_span: ResponseSpan | None = None
    """Where in the answer, when the provider says."""

    cited_text: str | None = None
    """The source text the provider says `source_span` holds (Anthropic
    ``cited_text``, Bedrock ``sourceContent``)."""

    retrieved_texts: tuple[str, ...] = ()
    """Retrieved passages the provider says it used, with no offsets (OpenAI
    file-search results, Gemini chunk text, the document a Cohere source echoes).
    Each must occur in the cited document."""

    url: str | None = None
    """The cited URL, when the provider gives one."""

    title: str | None = None
    """The cited document's title, when the provider gives one."""

    unit_error: str | None = None
    """Why an offset of this citation could not be converted (an `OffsetUnitError`
    reason, such as ``inside_utf8_sequence``), or ``None``."""

    raw: dict[str, Any] = Field(default_factory=dict)
    """The provider's citation object exactly as it came; data, never shown in an
    error message."""


class ProviderAnswer(BaseModel):
    """A provider's answer text and the citations parsed from it."""

    model_config = _CONFIG

    provider: str
    """The provider name."""

    parts: tuple[str, ...]
    """The answer's text parts in order (text blocks, content items, Parts); a part
    that holds no answer text (a tool call, a thought) is ``""``."""

    citations: tuple[ProviderCitation, ...] = ()
    """Every citation in the response, in response order; none is dropped."""

    @property
    def text(self) -> str:
        """The whole answer text: the parts joined with nothing between them."""
        return "".join(self.parts)

    def part_start(self, part: int) -> int:
        """The code-point offset of part ``part`` in `text`."""
        return sum(len(p) for p in self.parts[:part])


class ProviderVerification(BaseModel):
    """The result of re-reading one provider citation from the caller's documents."""

    model_config = _CONFIG

    citation: ProviderCitation
    """The citation that was checked."""

    outcome: Outcome
    """``verified``: every span and text the provider gave matches the caller's
    document (and the answer); ``mismatch``: some of it does not; ``drifted``: a
    source span runs past the end of the document; ``unknown_document``: the
    citation names a document that was not sent; ``no_source_span``: the citation
    resolves to a sent document but gives nothing to compare with it;
    ``unit_error``: an offset is not a character boundary in its stated unit, lies
    outside its text, or matches only when read in another unit; ``unreadable``:
    the document's text (or its pages or blocks) could not be had."""

    detail: str
    """A fixed code saying which check decided the outcome, e.g.
    ``cited_text_equal`` or ``response_text_differs``."""

    @property
    def ok(self) -> bool:
        """Whether the outcome is ``verified``."""
        return self.outcome == "verified"
