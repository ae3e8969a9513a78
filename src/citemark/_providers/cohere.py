"""Cohere Chat v2: ``message.citations`` with response spans and source ids.

Read from cohere-python's ``types/``: a citation's ``start``/``end`` index the text
of content item ``content_index`` of the answer (0-based, end exclusive, as
Cohere's documented examples show; the SDK docstring's "in the original source
text" contradicts them), ``text`` is the answer text at that span, and ``sources``
name documents by the ``id`` the caller gave them, echoing the document
(``DocumentSource.document``) or a tool's output (``ToolSource``). There is no
source offset. One `ProviderCitation` is made per source.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from citemark._errors import ProviderResponseError
from citemark._providers._common import (
    Documents,
    as_dict,
    as_list,
    field,
    int_field,
    make_response_span,
)
from citemark._providers._model import ProviderAnswer, ProviderCitation, SentDocument

__all__ = ["parse_cohere"]

PROVIDER = "cohere"
# The fields of an echoed document that hold its text, in the order they are tried.
_TEXT_FIELDS = ("text", "snippet", "content")


def parse_cohere(
    response: object, documents: Sequence[SentDocument | Mapping[str, Any]]
) -> ProviderAnswer:
    """Parse a Cohere v2 chat response (a ``dict`` or an SDK ``V2ChatResponse``).

    Raises:
        ProviderResponseError: the response has no ``message``, or a citation is
            malformed.

    Example:
        ```python
        from citemark.providers import SentDocument, parse_cohere

        docs = [SentDocument(doc_id="peng", text="Emperor penguins are the tallest.")]
        response = {"message": {"content": [{"type": "text", "text": "Emperor penguins."}],
            "citations": [{"start": 0, "end": 16, "text": "Emperor penguins",
                "content_index": 0, "sources": [{"type": "document", "id": "peng",
                "document": {"id": "peng", "text": "Emperor penguins are the tallest."}}]}]}}
        citation = parse_cohere(response, docs).citations[0]
        print(citation.doc_id, citation.response_span.end, citation.response_span.text)
        #> peng 16 Emperor penguins
        ```
    """
    body = as_dict(response, PROVIDER, "the response")
    if body.get("message") is None:
        raise ProviderResponseError(PROVIDER, "the response has no message")
    message = as_dict(body["message"], PROVIDER, "message")
    content = [
        as_dict(c, PROVIDER, "a content item")
        for c in as_list(message.get("content"), PROVIDER, "message.content")
    ]
    parts = tuple(
        str(field(item, "text") or "") if item.get("type") == "text" else "" for item in content
    )
    docs = Documents(documents)
    citations: list[ProviderCitation] = []
    for number, item in enumerate(as_list(message.get("citations"), PROVIDER, "citations")):
        raw = as_dict(item, PROVIDER, f"citations[{number}]")
        where = f"citations[{number}]"
        part = int_field(raw, PROVIDER, where, "content_index", default=0)
        text = field(raw, "text")
        span, error = make_response_span(
            parts,
            part,
            int_field(raw, PROVIDER, where, "start"),
            int_field(raw, PROVIDER, where, "end"),
            "code_point",
            text=text if isinstance(text, str) else None,
        )
        sources = as_list(raw.get("sources"), PROVIDER, f"{where}.sources")
        if not sources:
            raise ProviderResponseError(PROVIDER, f"{where} has no sources")
        for source_item in sources:
            source = as_dict(source_item, PROVIDER, f"{where}.sources[]")
            ref = field(source, "id")
            echoed = field(source, "document", "tool_output")
            retrieved: tuple[str, ...] = ()
            if isinstance(echoed, Mapping):
                found = field(echoed, *_TEXT_FIELDS)
                retrieved = (found,) if isinstance(found, str) else ()
            citations.append(
                ProviderCitation(
                    provider=PROVIDER,
                    location=str(field(source, "type") or "document"),
                    document_ref=ref,
                    doc_id=docs.by_reference(ref),
                    response_span=span,
                    retrieved_texts=retrieved,
                    title=field(echoed, "title") if isinstance(echoed, Mapping) else None,
                    unit_error=error,
                    raw=raw,
                )
            )
    return ProviderAnswer(provider=PROVIDER, parts=parts, citations=tuple(citations))
