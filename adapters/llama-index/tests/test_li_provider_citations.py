"""LlamaIndex CitationBlock citations, verified against the CitableBlock list sent.

Real llama-index-core 0.14 blocks, shaped as llama-index-llms-anthropic builds
them from Anthropic's search_result_location: a correct block range verifies, one
shifted by one block is a mismatch, a source that was not sent is unknown and
rejected, and the answer span is the text block the citation follows, in exact
code points over non-ASCII text.
"""

from __future__ import annotations

import pytest
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    CitableBlock,
    CitationBlock,
    ImageBlock,
    TextBlock,
)

from citemark.providers import (
    ProviderResponseError,
    UnsentDocumentError,
    check_provider_response,
    verify_provider_answer,
)
from llama_index.query_engine.citemark import citable_documents, parse_citation_blocks

SENT = [
    CitableBlock(
        source="kb://tea",
        title="Tea",
        content=[TextBlock(text="抹茶 is matcha."), TextBlock(text="👍🏽 for tea.")],
    ),
    CitableBlock(source="kb://cafe", title="Café", content=[TextBlock(text="Cafe\u0301 au lait.")]),
]
DOCS = citable_documents(SENT)


def cite(start, end, text, source="kb://tea", index=0):
    return CitationBlock(
        cited_content=text,
        source=source,
        title="Tea",
        additional_location_info={
            "search_result_index": index,
            "start_block_index": start,
            "end_block_index": end,
        },
    )


def response(*citations):
    return ChatResponse(
        message=ChatMessage(
            role="assistant",
            blocks=[TextBlock(text="Intro 🍣. "), TextBlock(text="抹茶 👍🏽."), *citations],
        )
    )


def outcomes(answer):
    return [(v.outcome, v.detail) for v in verify_provider_answer(answer, DOCS)]


class TestCitationBlocks:
    def test_a_correct_range_verifies_and_spans_its_text_block(self):
        answer = parse_citation_blocks(response(cite(0, 2, "抹茶 is matcha.👍🏽 for tea.")), DOCS)
        assert [("verified", "cited_text_equals_blocks")] == outcomes(answer)
        span = answer.citations[0].response_span
        assert "抹茶 👍🏽." == answer.text[span.start : span.end]
        assert (len("Intro 🍣. "), len("Intro 🍣. 抹茶 👍🏽.")) == (span.start, span.end)

    def test_a_range_shifted_by_one_block_is_a_mismatch(self):
        answer = parse_citation_blocks(response(cite(1, 2, "抹茶 is matcha.")), DOCS)
        assert [("mismatch", "cited_text_differs_from_blocks")] == outcomes(answer)

    def test_the_second_search_result_is_found_by_its_own_index(self):
        answer = parse_citation_blocks(
            response(cite(0, 1, "Cafe\u0301 au lait.", source="kb://cafe", index=1)), DOCS
        )
        assert [("verified", "cited_text_equals_blocks")] == outcomes(answer)
        assert "kb://cafe" == answer.citations[0].doc_id

    def test_a_search_result_that_was_not_sent_is_rejected(self):
        answer = parse_citation_blocks(
            response(cite(0, 1, "x", source="kb://other", index=2)), DOCS
        )
        assert [("unknown_document", "document_not_sent")] == outcomes(answer)
        rebuilt = {
            "content": [
                {"type": "text", "text": answer.text, "citations": [answer.citations[0].raw]}
            ]
        }
        with pytest.raises(UnsentDocumentError):
            check_provider_response("anthropic", rebuilt, DOCS)

    def test_a_citation_block_without_location_is_refused_not_dropped(self):
        block = CitationBlock(
            cited_content="x", source="kb://tea", title="Tea", additional_location_info={}
        )
        with pytest.raises(ProviderResponseError):
            parse_citation_blocks(response(block), DOCS)

    def test_an_image_citation_is_refused(self):
        image = ImageBlock(url="https://example.invalid/a.png")
        block = CitationBlock(
            cited_content=image,
            source="kb://tea",
            title="Tea",
            additional_location_info={
                "search_result_index": 0,
                "start_block_index": 0,
                "end_block_index": 1,
            },
        )
        with pytest.raises(ProviderResponseError):
            parse_citation_blocks(response(block), DOCS)
