"""OpenAI Responses ``output_text.annotations`` and Chat Completions annotations.

Read from openai-python's ``types/``: a ``url_citation`` gives a *response* span
(``start_index``/``end_index`` into its ``output_text`` part) plus a URL and title;
a ``file_citation`` gives a ``file_id`` and an ``index``, the insertion point in the
output text (a zero-width response span), and no quote. Only when the request asked
for ``include=["file_search_call.results"]`` does the response carry the retrieved
passages (``file_search_call.results[].text``), and even then an annotation does not
say which passage it used. Chat Completions nests the same ``url_citation`` fields
under ``annotations[].url_citation``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from citemark._contract.errors import ProviderResponseError
from citemark._sources.providers._common import (
    Documents,
    as_dict,
    as_list,
    int_field,
    make_response_span,
    required_text,
    text_field,
)
from citemark._sources.providers._model import ProviderAnswer, ProviderCitation, SentDocument

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["parse_openai_chat", "parse_openai_responses"]

RESPONSES = "openai-responses"
CHAT = "openai-chat"


def parse_openai_responses(
    response: object, documents: Sequence[SentDocument | Mapping[str, Any]]
) -> ProviderAnswer:
    """Parse an OpenAI Responses response (a ``dict`` or an SDK ``Response``).

    The answer's parts are the ``output_text`` parts of its ``message`` items, in
    order. Each ``file_citation`` is given the texts of the ``file_search_call``
    results for the same ``file_id``, when the response holds them.

    Raises:
        ProviderResponseError: the response has no ``output`` list, an
            ``output_text`` part's ``text`` or a file search result's ``file_id`` or
            ``text`` is not a string, or an annotation is malformed (a text field that
            is not a string included) or of a type citemark does not know.

    Example:
        ```python
        from citemark.providers import SentDocument, parse_openai_responses

        docs = [SentDocument(doc_id="faq", provider_id="file-1", text="Refunds: 30 days.")]
        response = {"output": [
            {"type": "file_search_call", "results": [
                {"file_id": "file-1", "text": "Refunds: 30 days."}]},
            {"type": "message", "content": [{"type": "output_text", "text": "30 days.",
             "annotations": [{"type": "file_citation", "file_id": "file-1",
                              "filename": "faq.txt", "index": 8}]}]}]}
        citation = parse_openai_responses(response, docs).citations[0]
        print(citation.doc_id, citation.retrieved_texts, citation.response_span.start)
        #> faq ('Refunds: 30 days.',) 8
        ```
    """
    body = as_dict(response, RESPONSES, "the response")
    if "output" not in body:
        raise ProviderResponseError(RESPONSES, "the response has no output")
    items = [
        as_dict(i, RESPONSES, "an output item")
        for i in as_list(body["output"], RESPONSES, "output")
    ]
    retrieved: dict[str, list[str]] = {}
    texts: list[tuple[str, list[Any]]] = []
    for item in items:
        if item.get("type") == "file_search_call":
            for result in as_list(item.get("results"), RESPONSES, "file_search_call.results"):
                where = "file_search_call.results[]"
                result_dict = as_dict(result, RESPONSES, "a file search result")
                file_id = text_field(result_dict, RESPONSES, where, "file_id")
                text = text_field(result_dict, RESPONSES, where, "text")
                if file_id is not None and text is not None:
                    retrieved.setdefault(file_id, []).append(text)
        elif item.get("type") == "message":
            for content in as_list(item.get("content"), RESPONSES, "message.content"):
                part = as_dict(content, RESPONSES, "a message content part")
                if part.get("type") == "output_text":
                    annotations = as_list(part.get("annotations"), RESPONSES, "annotations")
                    text = required_text(part, RESPONSES, "output_text", "text")
                    texts.append((text, annotations))
    parts = tuple(text for text, _ in texts)
    docs = Documents(documents, RESPONSES)
    citations = [
        _annotation(
            RESPONSES,
            as_dict(raw, RESPONSES, "an annotation"),
            parts,
            index,
            docs=docs,
            retrieved=retrieved,
        )
        for index, (_, annotations) in enumerate(texts)
        for raw in annotations
    ]
    return ProviderAnswer(provider=RESPONSES, parts=parts, citations=tuple(citations))


def parse_openai_chat(
    response: object, documents: Sequence[SentDocument | Mapping[str, Any]], *, choice: int = 0
) -> ProviderAnswer:
    """Parse an OpenAI Chat Completions response (a ``dict`` or a ``ChatCompletion``).

    The answer is ``choices[choice].message.content``; each annotation's
    ``url_citation`` object is read like a Responses ``url_citation``.

    Raises:
        ProviderResponseError: there is no such choice or message, its ``content``
            is neither a string nor ``null``, or an annotation is malformed (a text
            field that is not a string included) or not a ``url_citation``.

    Example:
        ```python
        from citemark.providers import SentDocument, parse_openai_chat

        docs = [SentDocument(doc_id="ex", provider_id="https://example.com", text="...")]
        text = "Yes ([example.com](https://example.com))."
        response = {"choices": [{"message": {"content": text, "annotations": [
            {"type": "url_citation", "url_citation": {"start_index": 4, "end_index": 40,
             "url": "https://example.com", "title": "Example"}}]}}]}
        citation = parse_openai_chat(response, docs).citations[0]
        print(citation.doc_id, text[citation.response_span.start:citation.response_span.end])
        #> ex ([example.com](https://example.com))
        ```
    """
    body = as_dict(response, CHAT, "the response")
    choices = as_list(body.get("choices"), CHAT, "choices")
    if not 0 <= choice < len(choices):
        raise ProviderResponseError(CHAT, f"the response has no choice {choice}")
    message = as_dict(as_dict(choices[choice], CHAT, "a choice").get("message"), CHAT, "message")
    parts = (text_field(message, CHAT, "message", "content") or "",)
    docs = Documents(documents, CHAT)
    citations = []
    for raw in as_list(message.get("annotations"), CHAT, "message.annotations"):
        annotation = as_dict(raw, CHAT, "an annotation")
        if annotation.get("type") != "url_citation":
            raise ProviderResponseError(CHAT, "an annotation is not a url_citation")
        inner = as_dict(annotation.get("url_citation"), CHAT, "annotation.url_citation")
        citation = _annotation(
            CHAT, {"type": "url_citation", **inner}, parts, 0, docs=docs, retrieved={}
        )
        citations.append(citation.model_copy(update={"raw": annotation}))
    return ProviderAnswer(provider=CHAT, parts=parts, citations=tuple(citations))


def _annotation(  # noqa: PLR0913 - one annotation and what it resolves against
    provider: str,
    raw: dict[str, Any],
    parts: Sequence[str],
    part: int,
    *,
    docs: Documents,
    retrieved: Mapping[str, list[str]],
) -> ProviderCitation:
    kind = raw.get("type")
    where = "annotation"
    url = text_field(raw, provider, where, "url")
    if kind in {"url_citation", "container_file_citation"}:
        ref = url if kind == "url_citation" else text_field(raw, provider, where, "file_id")
        # Unit and exclusivity are not documented: read as code points, end exclusive
        # (docs/provider-citations.md says why).
        span, error = make_response_span(
            parts,
            part,
            int_field(raw, provider, where, "start_index"),
            int_field(raw, provider, where, "end_index"),
            "code_point",
        )
        return ProviderCitation(
            provider=provider,
            location=kind,
            document_ref=ref,
            doc_id=docs.by_reference(ref),
            response_span=span,
            url=url,
            title=text_field(raw, provider, where, "title", "filename"),
            unit_error=error,
            raw=raw,
        )
    if kind in {"file_citation", "file_path"}:
        file_id = text_field(raw, provider, where, "file_id")
        index = int_field(raw, provider, where, "index")
        span, error = make_response_span(parts, part, index, index, "code_point")
        return ProviderCitation(
            provider=provider,
            location=kind,
            document_ref=file_id,
            doc_id=docs.by_reference(file_id),
            response_span=span,
            retrieved_texts=tuple(retrieved.get(file_id, ())) if file_id is not None else (),
            title=text_field(raw, provider, where, "filename"),
            unit_error=error,
            raw=raw,
        )
    raise ProviderResponseError(provider, "an annotation type is not one citemark knows")
