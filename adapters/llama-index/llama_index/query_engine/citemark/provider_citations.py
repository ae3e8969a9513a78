"""Provider-native citations from LlamaIndex ``CitationBlock`` blocks, verified by citemark.

llama-index-core 0.14 has two blocks for native citations: ``CitableBlock`` (what
the caller sends: a ``source``, a ``title`` and content blocks) and
``CitationBlock`` (what comes back: the ``cited_content``, the ``source`` and an
``additional_location_info`` dict of integers). llama-index-llms-anthropic fills
the latter from Anthropic's ``search_result_location`` (``search_result_index``,
``start_block_index``, ``end_block_index``). `parse_citation_blocks` rebuilds each
in Anthropic's shape, attached to the text block before it, and parses it with
`citemark.providers`; `citable_documents` turns the ``CitableBlock`` list that was
sent into the `citemark.providers.SentDocument` list it is checked against.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    CitableBlock,
    CitationBlock,
    TextBlock,
)

from citemark.providers import (
    ProviderAnswer,
    ProviderResponseError,
    SentDocument,
    parse_provider_response,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["citable_documents", "parse_citation_blocks"]

# An Anthropic location type, told by the index field the location info holds.
_TYPES = (
    ("search_result_index", "search_result_location"),
    ("start_char_index", "char_location"),
    ("start_page_number", "page_location"),
    ("start_block_index", "content_block_location"),
)


def citable_documents(blocks: Sequence[CitableBlock]) -> list[SentDocument]:
    """The documents a list of sent ``CitableBlock`` blocks is, in the order sent.

    Each becomes a search-result document named by its ``source`` (which must be
    unique), with its text blocks as the blocks a citation's range indexes.
    """
    return [
        SentDocument(
            doc_id=block.source,
            kind="search_result",
            blocks=tuple(b.text for b in block.content if isinstance(b, TextBlock)),
        )
        for block in blocks
    ]


def parse_citation_blocks(
    message: ChatMessage | ChatResponse,
    documents: Sequence[SentDocument | Mapping[str, Any]],
) -> ProviderAnswer:
    """Parse the ``CitationBlock`` blocks of a LlamaIndex chat message or response.

    Verify the result with `citemark.providers.verify_provider_answer`.

    Raises:
        citemark.providers.ProviderResponseError: a ``CitationBlock`` has no location
            fields citemark can read, or cites something other than text.

    Example:
        ```python
        from llama_index.core.base.llms.types import (
            ChatMessage, CitableBlock, CitationBlock, TextBlock)
        from llama_index.query_engine.citemark import citable_documents, parse_citation_blocks
        from citemark.providers import verify_provider_answer

        sent = [CitableBlock(source="kb://1", title="Tea", content=[TextBlock(text="Matcha.")])]
        docs = citable_documents(sent)
        message = ChatMessage(role="assistant", blocks=[
            TextBlock(text="It is matcha."),
            CitationBlock(cited_content="Matcha.", source="kb://1", title="Tea",
                          additional_location_info={"search_result_index": 0,
                                                    "start_block_index": 0, "end_block_index": 1}),
        ])
        answer = parse_citation_blocks(message, docs)
        print([v.outcome for v in verify_provider_answer(answer, docs)])
        #> ['verified']
        ```
    """
    chat = message.message if isinstance(message, ChatResponse) else message
    content: list[dict[str, Any]] = []
    for block in chat.blocks:
        if isinstance(block, TextBlock):
            content.append({"type": "text", "text": block.text, "citations": []})
        elif isinstance(block, CitationBlock):
            if not content or content[-1]["type"] != "text":
                content.append({"type": "text", "text": "", "citations": []})
            content[-1]["citations"].append(_citation(block))
        else:
            content.append({"type": block.block_type})
    return parse_provider_response("anthropic", {"content": content}, documents)


def _citation(block: CitationBlock) -> dict[str, Any]:
    info = dict(block.additional_location_info)
    kind = next((t for key, t in _TYPES if key in info), None)
    if kind is None:
        raise ProviderResponseError("anthropic", "a CitationBlock holds no location fields")
    if not isinstance(block.cited_content, TextBlock):
        raise ProviderResponseError("anthropic", "a CitationBlock cites content that is not text")
    title_field = "title" if kind == "search_result_location" else "document_title"
    return {
        **info,
        "type": kind,
        "cited_text": block.cited_content.text,
        "source": block.source,
        title_field: block.title,
    }
