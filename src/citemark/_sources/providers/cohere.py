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

from citemark._contract.errors import ProviderResponseError
from citemark._sources.providers._common import (
    Documents,
    as_dict,
    as_list,
    field,
    int_field,
    make_response_span,
    required_text,
    text_field,
)
from citemark._sources.providers._model import ProviderAnswer, ProviderCitation, SentDocument

__all__ = ["parse_cohere"]

PROVIDER = "cohere"
# The fields of an echoed document that hold its text, in the order they are tried.
_TEXT_FIELDS = ("text", "snippet", "content")


def parse_cohere(
    response: object, documents: Sequence[SentDocument | Mapping[str, Any]]
) -> ProviderAnswer:
    """Parse a Cohere v2 chat response (a ``dict`` or an SDK ``V2ChatResponse``).

    Raises:
        ProviderResponseError: the response has no ``message``, a text content
            item's ``text`` is not a string, or a citation is malformed: its ``text``,
            a source's ``id`` or ``type``, or an echoed document's text or title is
            not a string, among others.

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
        required_text(item, PROVIDER, f"message.content[{n}]", "text")
        if item.get("type") == "text"
        else ""
        for n, item in enumerate(content)
    )
    docs = Documents(documents, PROVIDER)
    citations: list[ProviderCitation] = []
    for number, item in enumerate(as_list(message.get("citations"), PROVIDER, "citations")):
        raw = as_dict(item, PROVIDER, f"citations[{number}]")
        where = f"citations[{number}]"
        part = int_field(raw, PROVIDER, where, "content_index", default=0)
        span, error = make_response_span(
            parts,
            part,
            int_field(raw, PROVIDER, where, "start"),
            int_field(raw, PROVIDER, where, "end"),
            "code_point",
            text=text_field(raw, PROVIDER, where, "text"),
        )
        sources = as_list(raw.get("sources"), PROVIDER, f"{where}.sources")
        if not sources:
            raise ProviderResponseError(PROVIDER, f"{where} has no sources")
        for source_item in sources:
            source = as_dict(source_item, PROVIDER, f"{where}.sources[]")
            ref = text_field(source, PROVIDER, f"{where}.sources[]", "id")
            retrieved, title = _echoed(source, f"{where}.sources[]")
            citations.append(
                ProviderCitation(
                    provider=PROVIDER,
                    location=text_field(source, PROVIDER, f"{where}.sources[]", "type")
                    or "document",
                    document_ref=ref,
                    doc_id=docs.by_reference(ref),
                    response_span=span,
                    retrieved_texts=retrieved,
                    title=title,
                    unit_error=error,
                    raw=raw,
                )
            )
    return ProviderAnswer(provider=PROVIDER, parts=parts, citations=tuple(citations))


def _echoed(source: Mapping[str, Any], where: str) -> tuple[tuple[str, ...], str | None]:
    """The text and title a source echoes: a document's must be strings.

    A ``document`` echo is the document the caller sent, whose fields are text; a
    ``tool_output`` is whatever the tool returned, so only a string text is taken
    from it and anything else there is no text, not a malformed response.
    """
    document = field(source, "document")
    if isinstance(document, Mapping):
        found = text_field(document, PROVIDER, f"{where}.document", *_TEXT_FIELDS)
        title = text_field(document, PROVIDER, f"{where}.document", "title")
        return ((found,) if found is not None else ()), title
    output = field(source, "tool_output")
    if isinstance(output, Mapping):
        found, title = field(output, *_TEXT_FIELDS), field(output, "title")
        return (
            (found,) if isinstance(found, str) else (),
            title if isinstance(title, str) else None,
        )
    return (), None
