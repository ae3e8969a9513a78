"""Amazon Bedrock Converse: ``citationsContent`` blocks with document locations.

Read from botocore's ``bedrock-runtime`` service model: a ``citationsContent``
block holds the generated ``content[].text`` and its ``citations[]``, each with
``sourceContent[].text`` (the cited source text) and a ``location`` that is one of
``documentChar``, ``documentPage``, ``documentChunk`` (each ``documentIndex``,
``start``, ``end``), ``searchResultLocation`` (``searchResultIndex``, ``start``,
``end`` over the result's content blocks) or ``web`` (a URL). The service model
says only "starting/ending character position"; citemark reads the offsets as
Anthropic's (0-based, end exclusive, code points; pages 1-based), which serves these
citations, and says so in docs/provider-citations.md.
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
    SentDocument,
    SourceSpan,
)

__all__ = ["parse_bedrock_converse"]

PROVIDER = "bedrock-converse"

# location key -> (document kind, index field, span kind, unit, base)
_LOCATED: dict[str, tuple[str, str, str, str, int]] = {
    "documentChar": ("document", "documentIndex", "chars", "code_point", 0),
    "documentPage": ("document", "documentIndex", "pages", "page", 1),
    "documentChunk": ("document", "documentIndex", "blocks", "block", 0),
    "searchResultLocation": ("search_result", "searchResultIndex", "blocks", "block", 0),
}


def parse_bedrock_converse(
    response: object, documents: Sequence[SentDocument | Mapping[str, Any]]
) -> ProviderAnswer:
    """Parse a Converse response (the ``dict`` boto3's ``converse`` returns).

    Raises:
        ProviderResponseError: there is no ``output.message.content`` list, a text
            field (a block's or generated content's ``text``, a citation's ``title``,
            ``sourceContent`` text or ``web.url``) is not a string, or a citation has
            no location citemark knows.

    Example:
        ```python
        from citemark.providers import SentDocument, parse_bedrock_converse

        docs = [SentDocument(doc_id="policy", text="Leave: 25 days. Notice: 1 month.")]
        response = {"output": {"message": {"role": "assistant", "content": [
            {"citationsContent": {"content": [{"text": "25 days."}], "citations": [
                {"sourceContent": [{"text": "Leave: 25 days."}],
                 "location": {"documentChar": {"documentIndex": 0, "start": 0, "end": 15}}}]}}]}}}
        citation = parse_bedrock_converse(response, docs).citations[0]
        print(citation.doc_id, citation.cited_text, citation.source_span.stop)
        #> policy Leave: 25 days. 15
        ```
    """
    body = as_dict(response, PROVIDER, "the response")
    output = as_dict(body.get("output") or {}, PROVIDER, "output")
    message = as_dict(output.get("message") or {}, PROVIDER, "output.message")
    if "content" not in message:
        raise ProviderResponseError(PROVIDER, "output.message has no content")
    blocks = [
        as_dict(b, PROVIDER, "a content block")
        for b in as_list(message["content"], PROVIDER, "content")
    ]
    parts: list[str] = []
    cited: list[tuple[int, list[Any]]] = []
    for number, block in enumerate(blocks):
        text = text_field(block, PROVIDER, f"content[{number}]", "text")
        if text is not None:
            parts.append(text)
        elif isinstance(field(block, "citationsContent"), Mapping):
            inner = block["citationsContent"]
            where = f"content[{number}].citationsContent.content[]"
            generated = as_list(inner.get("content"), PROVIDER, "citationsContent.content")
            text = "".join(
                text_field(as_dict(g, PROVIDER, "generated content"), PROVIDER, where, "text") or ""
                for g in generated
            )
            cited.append((len(parts), as_list(inner.get("citations"), PROVIDER, "citations")))
            parts.append(text)
        else:
            parts.append("")
    docs = Documents(documents, PROVIDER)
    citations = [
        _citation(as_dict(raw, PROVIDER, "a citation"), parts, part, docs)
        for part, raws in cited
        for raw in raws
    ]
    return ProviderAnswer(provider=PROVIDER, parts=tuple(parts), citations=tuple(citations))


def _citation(
    raw: dict[str, Any], parts: Sequence[str], part: int, docs: Documents
) -> ProviderCitation:
    span, _ = make_response_span(parts, part, 0, len(parts[part]), "code_point")
    source_texts = [
        text_field(as_dict(s, PROVIDER, "sourceContent"), PROVIDER, "sourceContent[]", "text")
        for s in as_list(raw.get("sourceContent"), PROVIDER, "sourceContent")
    ]
    cited_text = "".join(t for t in source_texts if t is not None) if source_texts else None
    location = as_dict(raw.get("location") or {}, PROVIDER, "citation.location")
    common: dict[str, Any] = {
        "provider": PROVIDER,
        "response_span": span,
        "title": text_field(raw, PROVIDER, "citation", "title"),
        "raw": raw,
    }
    web = location.get("web")
    if isinstance(web, Mapping):
        url = text_field(web, PROVIDER, "citation.location.web", "url")
        return ProviderCitation(
            **common,
            location="web",
            document_ref=url,
            doc_id=docs.by_reference(url),
            url=url,
            retrieved_texts=(cited_text,) if cited_text else (),
        )
    for key, (doc_kind, index_field, span_kind, unit, base) in _LOCATED.items():
        located = location.get(key)
        if not isinstance(located, Mapping):
            continue
        index = int_field(located, PROVIDER, key, index_field)
        source_span = SourceSpan.model_validate(
            {
                "kind": span_kind,
                "start": int_field(located, PROVIDER, key, "start"),
                "end": int_field(located, PROVIDER, key, "end"),
                "unit": unit,
                "base": base,
                "end_inclusive": False,
            }
        )
        return ProviderCitation(
            **common,
            location=key,
            document_ref=index,
            doc_id=docs.by_index(index, doc_kind),
            source_span=source_span,
            cited_text=cited_text,
        )
    raise ProviderResponseError(PROVIDER, "a citation has no location citemark knows")
