"""Anthropic Messages: ``citations`` on text blocks, and streamed ``citations_delta``.

A text block's citations carry a *source* span and no response offset: the cited
part of the answer is the whole text block. The five location types (read from
anthropic-sdk-python's ``types/``) are ``char_location`` (0-based, end-exclusive
character offsets into a plain-text document), ``page_location`` (1-based,
end-exclusive page numbers of a PDF), ``content_block_location`` (0-based,
end-exclusive indices into a custom-content document's blocks),
``search_result_location`` (the same, into a ``search_result`` block, counted
separately from documents) and ``web_search_result_location`` (a URL only).
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
from citemark._sources.providers._model import (
    ProviderAnswer,
    ProviderCitation,
    SentDocument,
    SourceSpan,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

__all__ = ["accumulate_anthropic_stream", "parse_anthropic"]

PROVIDER = "anthropic"

# location type -> (document kind, index field, span kind, start field, end field, base)
_LOCATED: dict[str, tuple[str, str, str, str, str, int]] = {
    "char_location": (
        "document",
        "document_index",
        "chars",
        "start_char_index",
        "end_char_index",
        0,
    ),
    "page_location": (
        "document",
        "document_index",
        "pages",
        "start_page_number",
        "end_page_number",
        1,
    ),
    "content_block_location": (
        "document",
        "document_index",
        "blocks",
        "start_block_index",
        "end_block_index",
        0,
    ),
    "search_result_location": (
        "search_result",
        "search_result_index",
        "blocks",
        "start_block_index",
        "end_block_index",
        0,
    ),
}
_UNIT_OF = {"chars": "code_point", "pages": "page", "blocks": "block"}


def parse_anthropic(
    response: object, documents: Sequence[SentDocument | Mapping[str, Any]]
) -> ProviderAnswer:
    """Parse an Anthropic Messages response (a ``dict`` or an SDK ``Message``).

    Raises:
        ProviderResponseError: the response has no ``content`` list, a text block's
            ``text`` or a citation's text field (``cited_text``, ``document_title``,
            ``url``, ``source``) is not a string, a citation is not an object, or its
            ``type`` is not one of the five citemark knows.

    Example:
        ```python
        from citemark.providers import SentDocument, parse_anthropic

        docs = [SentDocument(doc_id="sky", text="The sky is blue. Grass is green.")]
        message = {"content": [{"type": "text", "text": "Blue.", "citations": [{
            "type": "char_location", "cited_text": "The sky is blue.",
            "document_index": 0, "start_char_index": 0, "end_char_index": 16}]}]}
        citation = parse_anthropic(message, docs).citations[0]
        print(citation.doc_id, citation.source_span.stop, citation.response_span.end)
        #> sky 16 5
        ```
    """
    message = as_dict(response, PROVIDER, "the message")
    if "content" not in message:
        raise ProviderResponseError(PROVIDER, "the message has no content")
    blocks = [
        as_dict(b, PROVIDER, "a content block")
        for b in as_list(message["content"], PROVIDER, "content")
    ]
    parts = tuple(
        required_text(b, PROVIDER, f"content[{n}]", "text") if b.get("type") == "text" else ""
        for n, b in enumerate(blocks)
    )
    docs = Documents(documents, PROVIDER)
    citations: list[ProviderCitation] = []
    for position, block in enumerate(blocks):
        if block.get("type") != "text":
            continue
        where = f"content[{position}].citations"
        citations.extend(
            _citation(as_dict(raw, PROVIDER, where), parts, position, docs)
            for raw in as_list(block.get("citations"), PROVIDER, where)
        )
    return ProviderAnswer(provider=PROVIDER, parts=parts, citations=tuple(citations))


def _citation(
    raw: dict[str, Any], parts: Sequence[str], position: int, docs: Documents
) -> ProviderCitation:
    kind = raw.get("type")
    where = f"content[{position}].citations[]"
    span, _ = make_response_span(parts, position, 0, len(parts[position]), "code_point")
    cited_text = text_field(raw, PROVIDER, where, "cited_text")
    common: dict[str, Any] = {
        "provider": PROVIDER,
        "location": kind,
        "response_span": span,
        "title": text_field(raw, PROVIDER, where, "document_title", "title"),
        "raw": raw,
    }
    if kind == "web_search_result_location":
        url = text_field(raw, PROVIDER, where, "url")
        return ProviderCitation(
            **common,
            document_ref=url,
            doc_id=docs.by_reference(url),
            url=url,
            retrieved_texts=(cited_text,) if cited_text else (),
        )
    if not isinstance(kind, str) or kind not in _LOCATED:
        raise ProviderResponseError(PROVIDER, f"{where}.type is not a citation type citemark knows")
    doc_kind, index_field, span_kind, start_field, end_field, base = _LOCATED[kind]
    index = int_field(raw, PROVIDER, where, index_field)
    source_span = SourceSpan.model_validate(
        {
            "kind": span_kind,
            "start": int_field(raw, PROVIDER, where, start_field),
            "end": int_field(raw, PROVIDER, where, end_field),
            "unit": _UNIT_OF[span_kind],
            "base": base,
            "end_inclusive": False,
        }
    )
    return ProviderCitation(
        **common,
        document_ref=index,
        doc_id=docs.by_index(index, doc_kind),
        source_span=source_span,
        cited_text=cited_text,
        url=text_field(raw, PROVIDER, where, "source")
        if kind == "search_result_location"
        else None,
    )


def accumulate_anthropic_stream(events: Iterable[object]) -> dict[str, Any]:
    """Accumulate streamed Messages events into the message they describe.

    Text deltas are appended to their block's ``text`` and every ``citations_delta``
    to its block's ``citations``, in order; the result parses with `parse_anthropic`.
    Other deltas (tool input, thinking) are not accumulated.

    Raises:
        ProviderResponseError: a delta names a block that was never started, a
            ``citations_delta`` arrives for a block that is not text, a text block's
            ``text`` or a ``text_delta``'s is not a string, or no ``message_start``
            came first.

    Example:
        ```python
        from citemark.providers import accumulate_anthropic_stream

        events = [
            {"type": "message_start", "message": {"role": "assistant", "content": []}},
            {"type": "content_block_start", "index": 0,
             "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 0, "delta": {
                "type": "citations_delta", "citation": {"type": "char_location",
                "cited_text": "a", "document_index": 0,
                "start_char_index": 0, "end_char_index": 1}}},
            {"type": "content_block_delta", "index": 0,
             "delta": {"type": "text_delta", "text": "A."}},
            {"type": "message_stop"},
        ]
        block = accumulate_anthropic_stream(events)["content"][0]
        print(block["text"], len(block["citations"]))
        #> A. 1
        ```
    """
    message: dict[str, Any] | None = None
    blocks: dict[int, dict[str, Any]] = {}
    for number, item in enumerate(events):
        event = as_dict(item, PROVIDER, f"stream event {number}")
        kind = event.get("type")
        if kind == "message_start":
            message = dict(as_dict(event.get("message"), PROVIDER, "message_start.message"))
            message["content"] = []
            continue
        if message is None:
            raise ProviderResponseError(PROVIDER, f"stream event {number} precedes message_start")
        if kind == "content_block_start":
            index = int_field(event, PROVIDER, f"stream event {number}", "index")
            block = dict(as_dict(event.get("content_block"), PROVIDER, "content_block"))
            if block.get("type") == "text":
                block["citations"] = list(as_list(block.get("citations"), PROVIDER, "citations"))
            blocks[index] = block
        elif kind == "content_block_delta":
            index = int_field(event, PROVIDER, f"stream event {number}", "index")
            if index not in blocks:
                reason = f"stream event {number} is a delta for block {index}, never started"
                raise ProviderResponseError(PROVIDER, reason)
            _apply_delta(blocks[index], as_dict(event.get("delta"), PROVIDER, "delta"), number)
        elif kind == "message_delta":
            delta = as_dict(event.get("delta") or {}, PROVIDER, "message_delta.delta")
            message.update({k: v for k, v in delta.items() if v is not None})
    if message is None:
        raise ProviderResponseError(PROVIDER, "the stream has no message_start event")
    message["content"] = [blocks[index] for index in sorted(blocks)]
    return message


def _apply_delta(block: dict[str, Any], delta: dict[str, Any], number: int) -> None:
    kind = delta.get("type")
    if kind == "text_delta":
        where = f"stream event {number}"
        text = required_text(block, PROVIDER, f"{where}'s block", "text")
        block["text"] = text + required_text(delta, PROVIDER, f"{where}.delta", "text")
    elif kind == "citations_delta":
        if block.get("type") != "text":
            reason = f"stream event {number} is a citations_delta for a block that is not text"
            raise ProviderResponseError(PROVIDER, reason)
        block["citations"].append(as_dict(delta.get("citation"), PROVIDER, "citation"))
