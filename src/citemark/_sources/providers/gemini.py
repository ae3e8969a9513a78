"""Gemini and Vertex AI ``groundingMetadata``: supports, segments and chunks.

Read from python-genai's ``types.py``: a ``groundingSupport`` has a ``segment``
whose ``startIndex`` (inclusive) and ``endIndex`` (exclusive) are **UTF-8 byte**
offsets into ``content.parts[partIndex]``, not into the whole answer and not in
characters, plus ``segment.text``, and ``groundingChunkIndices`` into
``groundingChunks``. proto3 JSON drops zero values, so a missing ``startIndex`` or
``partIndex`` is 0. A chunk is ``web`` (a URL) or ``retrievedContext`` (a URI or
document name, and the retrieved ``text``; on Vertex RAG a ``ragChunk.pageSpan``
whose ``firstPage``/``lastPage`` are 1-based and **inclusive**). One
`ProviderCitation` is made per chunk index.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from citemark._contract.errors import ProviderResponseError
from citemark._sources.providers._common import (
    Documents,
    as_dict,
    as_list,
    field,
    int_field,
    make_response_span,
    text_field,
)
from citemark._sources.providers._model import (
    ProviderAnswer,
    ProviderCitation,
    ResponseSpan,
    SentDocument,
    SourceSpan,
)

__all__ = ["parse_gemini"]

PROVIDER = "gemini"


def parse_gemini(
    response: object,
    documents: Sequence[SentDocument | Mapping[str, Any]],
    *,
    candidate: int = 0,
) -> ProviderAnswer:
    """Parse a ``generateContent`` response (a ``dict`` or an SDK response).

    Both the REST names (``groundingMetadata``, ``startIndex``) and the SDK's dumped
    names (``grounding_metadata``, ``start_index``) are read. Thought parts count as
    empty parts, so ``partIndex`` still lines up.

    Raises:
        ProviderResponseError: there is no such candidate, a part's ``text`` is not
            a string, or a support or chunk is malformed (a ``segment.text``, URI,
            title or retrieved text that is not a string included).

    Example:
        ```python
        from citemark.providers import SentDocument, parse_gemini

        docs = [SentDocument(doc_id="tea", provider_id="gs://kb/tea.txt",
                             text="Matcha is powdered green tea.")]
        response = {"candidates": [{"content": {"parts": [{"text": "Café: matcha."}]},
            "groundingMetadata": {
                "groundingChunks": [{"retrievedContext": {"uri": "gs://kb/tea.txt",
                    "text": "Matcha is powdered green tea."}}],
                "groundingSupports": [{"segment": {"startIndex": 7, "endIndex": 14,
                    "text": "matcha."}, "groundingChunkIndices": [0]}]}}]}
        citation = parse_gemini(response, docs).citations[0]
        print(citation.doc_id, citation.response_span.start, citation.response_span.end)
        #> tea 6 13
        ```
    """
    body = as_dict(response, PROVIDER, "the response")
    candidates = as_list(body.get("candidates"), PROVIDER, "candidates")
    if not 0 <= candidate < len(candidates):
        raise ProviderResponseError(PROVIDER, f"the response has no candidate {candidate}")
    chosen = as_dict(candidates[candidate], PROVIDER, "a candidate")
    content = as_dict(chosen.get("content") or {}, PROVIDER, "candidate.content")
    parts_raw = [
        as_dict(p, PROVIDER, "a part")
        for p in as_list(content.get("parts"), PROVIDER, "content.parts")
    ]
    parts = tuple(
        "" if p.get("thought") else text_field(p, PROVIDER, f"content.parts[{n}]", "text") or ""
        for n, p in enumerate(parts_raw)
    )
    metadata = as_dict(
        field(chosen, "groundingMetadata", "grounding_metadata") or {},
        PROVIDER,
        "groundingMetadata",
    )
    chunks = [
        as_dict(c, PROVIDER, "a grounding chunk")
        for c in as_list(
            field(metadata, "groundingChunks", "grounding_chunks"), PROVIDER, "groundingChunks"
        )
    ]
    supports = as_list(
        field(metadata, "groundingSupports", "grounding_supports"), PROVIDER, "groundingSupports"
    )
    docs = Documents(documents, PROVIDER)
    citations: list[ProviderCitation] = []
    for number, item in enumerate(supports):
        where = f"groundingSupports[{number}]"
        support = as_dict(item, PROVIDER, where)
        segment = as_dict(field(support, "segment") or {}, PROVIDER, f"{where}.segment")
        text = text_field(segment, PROVIDER, f"{where}.segment", "text")
        span, error = make_response_span(
            parts,
            int_field(segment, PROVIDER, where, "partIndex", "part_index", default=0),
            int_field(segment, PROVIDER, where, "startIndex", "start_index", default=0),
            int_field(segment, PROVIDER, where, "endIndex", "end_index", default=0),
            "utf8",
            text=text,
        )
        indices = as_list(
            field(support, "groundingChunkIndices", "grounding_chunk_indices"), PROVIDER, where
        )
        if not indices:
            raise ProviderResponseError(PROVIDER, f"{where} has no groundingChunkIndices")
        for index in indices:
            if isinstance(index, bool) or not isinstance(index, int):
                raise ProviderResponseError(
                    PROVIDER, f"{where} has a chunk index that is not an integer"
                )
            citations.append(_citation(support, span, error, index=index, chunks=chunks, docs=docs))
    return ProviderAnswer(provider=PROVIDER, parts=parts, citations=tuple(citations))


def _citation(  # noqa: PLR0913 - one support, one chunk, and what they resolve against
    support: dict[str, Any],
    span: ResponseSpan,
    error: str | None,
    *,
    index: int,
    chunks: Sequence[dict[str, Any]],
    docs: Documents,
) -> ProviderCitation:
    common: dict[str, Any] = {
        "provider": PROVIDER,
        "response_span": span,
        "unit_error": error,
        "raw": support,
    }
    if not 0 <= index < len(chunks):
        # A support pointing past groundingChunks names nothing that was sent.
        return ProviderCitation(
            **common, location="grounding_support", document_ref=index, doc_id=None
        )
    chunk = chunks[index]
    where = f"groundingChunks[{index}]"
    web = field(chunk, "web")
    if isinstance(web, Mapping):
        uri = text_field(web, PROVIDER, f"{where}.web", "uri")
        return ProviderCitation(
            **common,
            location="web",
            document_ref=index,
            doc_id=docs.by_reference(uri),
            url=uri,
            title=text_field(web, PROVIDER, f"{where}.web", "title"),
        )
    context = field(chunk, "retrievedContext", "retrieved_context")
    if not isinstance(context, Mapping):
        return ProviderCitation(
            **common, location="grounding_chunk", document_ref=index, doc_id=None
        )
    where += ".retrievedContext"
    names = {
        key: text_field(context, PROVIDER, where, *keys)
        for key, keys in (
            ("uri", ("uri",)),
            ("documentName", ("documentName", "document_name")),
            ("title", ("title",)),
        )
    }
    doc_id = next(
        (found for name in names.values() if (found := docs.by_reference(name)) is not None),
        None,
    )
    rag = field(context, "ragChunk", "rag_chunk")
    rag = rag if isinstance(rag, Mapping) else {}
    text = text_field(context, PROVIDER, where, "text")
    rag_text = text_field(rag, PROVIDER, f"{where}.ragChunk", "text")
    text = text or rag_text
    page_span = field(rag, "pageSpan", "page_span")
    source_span = None
    if isinstance(page_span, Mapping):
        source_span = SourceSpan(
            kind="pages",
            start=int_field(page_span, PROVIDER, "pageSpan", "firstPage", "first_page"),
            end=int_field(page_span, PROVIDER, "pageSpan", "lastPage", "last_page"),
            unit="page",
            base=1,
            end_inclusive=True,
        )
    return ProviderCitation(
        **common,
        location="retrieved_context",
        document_ref=index,
        doc_id=doc_id,
        source_span=source_span,
        retrieved_texts=(text,) if text is not None else (),
        url=names["uri"],
        title=names["title"],
    )
