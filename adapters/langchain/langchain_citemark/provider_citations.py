"""Provider-native citations from a LangChain message, verified by citemark.

LangChain's standard ``Citation`` content block keeps the response-side fields
(``url``, ``title``, ``cited_text``, ``start_index``/``end_index``) and moves the
rest of the provider's citation, Anthropic's source offsets included, into an
untyped ``extras`` dict, dropping the location ``type``. `parse_provider_message`
reads ``AIMessage.content_blocks``, rebuilds each citation in its provider's own
shape (the location type recovered from which offset fields ``extras`` holds) and
parses it with `citemark.providers`, so a ``ChatAnthropic`` or ``ChatOpenAI``
answer is checked exactly like a raw provider response.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from citemark.providers import (
    ProviderAnswer,
    ProviderResponseError,
    parse_provider_response,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from langchain_core.messages import BaseMessage

    from citemark.providers import SentDocument

__all__ = ["parse_provider_message"]

# An Anthropic location type, told by the offset field LangChain left in extras.
_ANTHROPIC_TYPES = (
    ("start_char_index", "char_location"),
    ("start_page_number", "page_location"),
    ("search_result_index", "search_result_location"),
    ("start_block_index", "content_block_location"),
    ("encrypted_index", "web_search_result_location"),
)


def parse_provider_message(
    message: BaseMessage, documents: Sequence[SentDocument | Mapping[str, Any]]
) -> ProviderAnswer:
    """Parse the provider-native citations of a LangChain message.

    The provider is the message's ``response_metadata["model_provider"]``
    (``"anthropic"``, or ``"openai"`` for the Responses API). Verify the result with
    `citemark.providers.verify_provider_answer`.

    Raises:
        citemark.providers.ProviderResponseError: the message carries citations from
            a provider citemark does not read, or a citation it cannot rebuild.

    Example:
        ```python
        from langchain_core.messages import AIMessage
        from langchain_citemark import parse_provider_message
        from citemark.providers import SentDocument, verify_provider_answer

        docs = [SentDocument(doc_id="sky", text="The sky is blue.")]
        message = AIMessage(
            content=[{"type": "text", "text": "Blue.", "citations": [{
                "type": "char_location", "cited_text": "sky is blue", "document_index": 0,
                "start_char_index": 4, "end_char_index": 15}]}],
            response_metadata={"model_provider": "anthropic"},
        )
        answer = parse_provider_message(message, docs)
        print([v.outcome for v in verify_provider_answer(answer, docs)])
        #> ['verified']
        ```
    """
    provider = message.response_metadata.get("model_provider")
    blocks = [dict(block) for block in message.content_blocks]
    if provider == "anthropic":
        content = [_anthropic_block(block) for block in blocks]
        return parse_provider_response("anthropic", {"content": content}, documents)
    if provider == "openai":
        parts = [_openai_part(block) for block in blocks if block.get("type") == "text"]
        output = [{"type": "message", "content": parts}]
        return parse_provider_response("openai-responses", {"output": output}, documents)
    if any(block.get("annotations") for block in blocks):
        name = provider if isinstance(provider, str) else "langchain"
        raise ProviderResponseError(name, "citations from this model provider are not read")
    texts = tuple(str(b.get("text") or "") if b.get("type") == "text" else "" for b in blocks)
    return ProviderAnswer(provider=str(provider or "langchain"), parts=texts)


def _anthropic_block(block: dict[str, Any]) -> dict[str, Any]:
    if block.get("type") != "text":
        return {"type": str(block.get("type"))}
    citations = [_anthropic_citation(a) for a in block.get("annotations") or []]
    return {"type": "text", "text": block.get("text") or "", "citations": citations}


def _anthropic_citation(annotation: Mapping[str, Any]) -> dict[str, Any]:
    if annotation.get("type") == "non_standard_annotation":
        value = annotation.get("value")
        return dict(value) if isinstance(value, dict) else {}
    extras = dict(annotation.get("extras") or {})
    kind = next((t for key, t in _ANTHROPIC_TYPES if key in extras), None)
    if kind is None:
        raise ProviderResponseError("anthropic", "a citation's extras hold no location fields")
    rebuilt = {**extras, "type": kind, "cited_text": annotation.get("cited_text")}
    if kind == "web_search_result_location":
        rebuilt.update({"url": annotation.get("url"), "title": annotation.get("title")})
    elif kind == "search_result_location":
        rebuilt["title"] = annotation.get("title")
    else:
        rebuilt["document_title"] = annotation.get("title")
    return rebuilt


def _openai_part(block: dict[str, Any]) -> dict[str, Any]:
    annotations = [_openai_annotation(a) for a in block.get("annotations") or []]
    return {"type": "output_text", "text": block.get("text") or "", "annotations": annotations}


def _openai_annotation(annotation: Mapping[str, Any]) -> dict[str, Any]:
    if annotation.get("type") == "non_standard_annotation":
        value = annotation.get("value")
        return dict(value) if isinstance(value, dict) else {}
    extras = dict(annotation.get("extras") or {})
    if "file_id" in extras:
        return {
            "type": "file_citation",
            "file_id": extras["file_id"],
            "index": extras.get("index"),
            "filename": annotation.get("title"),
        }
    return {
        "type": "url_citation",
        "url": annotation.get("url"),
        "title": annotation.get("title"),
        "start_index": annotation.get("start_index"),
        "end_index": annotation.get("end_index"),
    }
