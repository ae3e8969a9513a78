"""Provider-native citations through the official SDKs, against a loopback server.

Each provider's SDK (anthropic, openai, cohere, google-genai, boto3 for Bedrock)
is pointed with its own base-URL option at a `ProviderServer` on 127.0.0.1 that
answers with that provider's documented response shape. The texts hold CJK, an
emoji with a skin-tone modifier (two astral code points), BMP symbols and a
combining mark, so every unit conversion is exercised. For every provider: a
correct citation verifies, one shifted by one unit fails as ``mismatch`` (or as
``unit_error`` where the shift lands inside a character), a citation of an unsent
document is rejected, and non-ASCII offsets convert exactly, where the naive
reading of the same offsets is shown to give the wrong text.
"""

from __future__ import annotations

import anthropic
import boto3
import cohere
import httpx
import openai
import pytest
from google import genai
from google.genai import types as genai_types
from provider_server import ProviderServer

from citemark.providers import (
    ProviderResponseError,
    SentDocument,
    UnsentDocumentError,
    accumulate_anthropic_stream,
    check_provider_response,
    parse_provider_response,
    verify_provider_answer,
)

DOC = "Intro 🍣. 東京は日本の首都です。 Coffee ☕ costs 3€. Thumbs 👍🏽 up. Café vs cafe\u0301."
SENTENCE = "Thumbs 👍🏽 up."
S = DOC.index(SENTENCE)
E = S + len(SENTENCE)
DOCS = [SentDocument(doc_id="doc", text=DOC)]


def utf16(text: str, index: int) -> int:
    """The UTF-16 offset of code point ``index`` (what a JavaScript tool would send)."""
    return len(text[:index].encode("utf-16-le")) // 2


def utf8(text: str, index: int) -> int:
    """The UTF-8 byte offset of code point ``index``."""
    return len(text[:index].encode("utf-8"))


def outcomes(check):
    return [(v.outcome, v.detail) for v in check.verifications]


def without_raw(answer):
    """The parsed answer without each citation's raw object (an SDK dump adds null fields)."""
    return answer.text, [c.model_dump(exclude={"raw"}) for c in answer.citations]


def covered(answer, citation):
    span = citation.response_span
    return answer.text[span.start : span.end]


def test_the_fixture_text_has_every_kind_of_unit_difference():
    """The shared text makes code points, UTF-16 units and UTF-8 bytes all disagree."""
    assert utf16(DOC, S) != S  # an astral emoji before the sentence
    assert utf8(DOC, S) != utf16(DOC, S)  # and CJK, which is 3 bytes but 1 unit
    assert utf16(DOC, E) - utf16(DOC, S) == len(SENTENCE) + 2  # 👍🏽 is two astral code points
    assert "e\u0301" in DOC  # a combining mark: two code points, one glyph


# --- Anthropic Messages -----------------------------------------------------------------


def anthropic_message(*citations, text="It is 👍🏽 approved."):
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [
            {"type": "text", "text": "Answer 東京: ", "citations": None},
            {"type": "text", "text": text, "citations": list(citations)},
        ],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def char_location(start, end, cited=SENTENCE, index=0):
    return {
        "type": "char_location",
        "cited_text": cited,
        "document_index": index,
        "document_title": "doc",
        "start_char_index": start,
        "end_char_index": end,
    }


def anthropic_create(reply):
    with ProviderServer(reply) as server:
        client = server.own(
            anthropic.Anthropic(api_key="test", base_url=server.base_url, max_retries=0)
        )
        message = client.messages.create(
            model="claude-test",
            max_tokens=64,
            messages=[
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "document",
                            "source": {"type": "text", "media_type": "text/plain", "data": DOC},
                            "citations": {"enabled": True},
                        },
                        {"type": "text", "text": "Approved?"},
                    ],
                }
            ],
        )
        assert "/v1/messages" == server.requests[0][0]
    assert isinstance(message, anthropic.types.Message)
    return message


class TestAnthropic:
    def test_a_correct_char_location_verifies(self):
        message = anthropic_create(anthropic_message(char_location(S, E)))
        check = check_provider_response("anthropic", message, DOCS)
        assert [("verified", "cited_text_equal")] == outcomes(check)
        # The cited part of the answer is the whole text block, in whole-answer code points.
        assert "It is 👍🏽 approved." == covered(check.answer, check.answer.citations[0])

    def test_a_shifted_char_location_is_a_mismatch(self):
        message = anthropic_create(anthropic_message(char_location(S + 1, E + 1)))
        check = check_provider_response("anthropic", message, DOCS)
        assert [("mismatch", "cited_text_differs")] == outcomes(check)

    def test_utf16_offsets_are_caught_as_a_unit_error(self):
        """Offsets a JavaScript tool computed (UTF-16) are not taken for code points."""
        start, end = utf16(DOC, S), utf16(DOC, E)
        assert SENTENCE != DOC[start:end]  # the naive reading gives other text
        message = anthropic_create(anthropic_message(char_location(start, end)))
        check = check_provider_response("anthropic", message, DOCS)
        assert [("unit_error", "source_matches_as_utf16")] == outcomes(check)

    def test_a_citation_of_an_unsent_document_is_rejected(self):
        message = anthropic_create(
            anthropic_message(char_location(S, E), char_location(0, 5, index=1))
        )
        with pytest.raises(UnsentDocumentError) as info:
            check_provider_response("anthropic", message, DOCS)
        assert (1, 1, 1) == (
            info.value.citation_index,
            info.value.unsent_count,
            info.value.sent_count,
        )
        assert SENTENCE not in str(info.value)

    @pytest.mark.parametrize("text", [5, ["CANARY-sdk-26"], {"t": "CANARY-sdk-26"}, True, None])
    def test_a_text_block_whose_text_is_not_a_string_is_refused(self, text):
        """Issue 26: the SDK keeps what the server sent; citemark refuses it, quietly.

        The naive parse gave the ``str()`` as the answer (``None`` as ""), and dumping the
        SDK object warned with the value quoted (pydantic's serializer warning).
        """
        reply = anthropic_message(char_location(S, E))
        reply["content"][1]["text"] = text
        message = anthropic_create(reply)
        assert text == message.content[1].text  # the SDK did not refuse it
        with pytest.raises(ProviderResponseError) as info:
            check_provider_response("anthropic", message, DOCS)
        assert "content[1].text is not a string" == info.value.reason
        assert "CANARY" not in str(info.value)

    def test_the_sdk_object_and_its_json_parse_alike(self):
        reply = anthropic_message(char_location(S, E))
        message = anthropic_create(reply)
        assert without_raw(parse_provider_response("anthropic", reply, DOCS)) == without_raw(
            parse_provider_response("anthropic", message, DOCS)
        )

    def test_all_five_location_types(self):
        pages = ("Page one text.", "Page two: 東京 👍🏽.", "Page three.")
        blocks = ("Block A ☕.", "Block B 3€.", "Block C.")
        docs = [
            *DOCS,
            SentDocument(doc_id="pdf", pages=pages),
            SentDocument(doc_id="custom", blocks=blocks),
            SentDocument(
                doc_id="hit", kind="search_result", provider_id="https://kb/1", blocks=blocks
            ),
            SentDocument(doc_id="web", provider_id="https://web.example/", text="Web 👍🏽 page."),
        ]
        citations = [
            char_location(S, E),
            {
                "type": "page_location",
                "cited_text": "Page two: 東京 👍🏽.",
                "document_index": 1,
                "start_page_number": 2,
                "end_page_number": 3,
            },
            {
                "type": "page_location",
                "cited_text": "Page two: 東京 👍🏽.",
                "document_index": 1,
                "start_page_number": 1,
                "end_page_number": 2,
            },
            {
                "type": "content_block_location",
                "cited_text": "Block B 3€.Block C.",
                "document_index": 2,
                "start_block_index": 1,
                "end_block_index": 3,
            },
            {
                "type": "search_result_location",
                "cited_text": "Block A ☕.",
                "source": "https://kb/1",
                "search_result_index": 0,
                "start_block_index": 0,
                "end_block_index": 1,
            },
            {
                "type": "search_result_location",
                "cited_text": "Block A ☕.",
                "source": "https://kb/1",
                "search_result_index": 0,
                "start_block_index": 1,
                "end_block_index": 2,
            },
            {
                "type": "web_search_result_location",
                "cited_text": "Web 👍🏽 page.",
                "encrypted_index": "x",
                "url": "https://web.example/",
                "title": "Web",
            },
            {
                "type": "page_location",
                "cited_text": "Page two",
                "document_index": 1,
                "start_page_number": 3,
                "end_page_number": 5,
            },
        ]
        message = anthropic_create(anthropic_message(*citations))
        check = check_provider_response("anthropic", message, docs)
        assert [
            ("verified", "cited_text_equal"),
            ("verified", "cited_text_in_pages"),  # pages are 1-based, end exclusive
            ("mismatch", "cited_text_not_in_pages"),  # the same text, one page early
            ("verified", "cited_text_equals_blocks"),
            ("verified", "cited_text_equals_blocks"),  # counted among search results only
            ("mismatch", "cited_text_differs_from_blocks"),  # one block late
            ("verified", "retrieved_text_found"),
            ("drifted", "range_past_last_page"),
        ] == outcomes(check)

    def test_streamed_citations_deltas_accumulate_like_the_sdk(self):
        """Raw stream events accumulate into the message the SDK's own stream builds."""
        block = {"type": "text", "text": "", "citations": None}
        events = [
            {"type": "message_start", "message": {**anthropic_message(), "content": []}},
            {"type": "content_block_start", "index": 0, "content_block": block},
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "It is "},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "citations_delta", "citation": char_location(S, E)},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "👍🏽."},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "citations_delta", "citation": char_location(S + 1, E + 1)},
            },
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
            {"type": "message_stop"},
        ]
        with ProviderServer(events, events) as server:
            client = server.own(
                anthropic.Anthropic(api_key="test", base_url=server.base_url, max_retries=0)
            )
            request = {
                "model": "claude-test",
                "max_tokens": 64,
                "messages": [{"role": "user", "content": "q"}],
            }
            raw_events = [
                event.model_dump() for event in client.messages.create(**request, stream=True)
            ]
            with client.messages.stream(**request) as stream:
                final = stream.get_final_message()
        accumulated = accumulate_anthropic_stream(raw_events)
        ours = parse_provider_response("anthropic", accumulated, DOCS)
        assert without_raw(parse_provider_response("anthropic", final, DOCS)) == without_raw(ours)
        assert "It is 👍🏽." == ours.text
        assert ["verified", "mismatch"] == [v.outcome for v in verify_provider_answer(ours, DOCS)]


# --- OpenAI Responses and Chat Completions ----------------------------------------------

LINK = "([shop.example](https://shop.example/menu))"
PART_A = "Refunds take 30 days 👍🏽."
PART_B = "Menu 東京 ☕ 🍣 " + LINK + "."
LINK_AT = PART_B.index(LINK)
RETRIEVED = "東京は日本の首都です。"
OPENAI_DOCS = [
    SentDocument(doc_id="doc", provider_id="file-doc", text=DOC),
    SentDocument(doc_id="menu", provider_id="https://shop.example/menu", text="Menu page."),
]


def url_citation(start, end, url="https://shop.example/menu"):
    return {
        "type": "url_citation",
        "start_index": start,
        "end_index": end,
        "url": url,
        "title": "Menu",
    }


def openai_response(url_cite, file_id="file-doc", retrieved=RETRIEVED, include_results=True):
    file_cite = {
        "type": "file_citation",
        "file_id": file_id,
        "filename": "doc.txt",
        "index": len(PART_A),
    }
    search = {"type": "file_search_call", "id": "fs_1", "status": "completed", "queries": ["q"]}
    if include_results:
        search["results"] = [
            {"file_id": "file-doc", "filename": "doc.txt", "score": 0.9, "text": retrieved}
        ]
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": "gpt-test",
        "status": "completed",
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "output": [
            search,
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [
                    {"type": "output_text", "text": PART_A, "annotations": [file_cite]},
                    {"type": "output_text", "text": PART_B, "annotations": [url_cite]},
                ],
            },
        ],
    }


def openai_responses_create(reply):
    with ProviderServer(reply) as server:
        client = server.own(
            openai.OpenAI(api_key="test", base_url=server.base_url + "/v1", max_retries=0)
        )
        response = client.responses.create(
            model="gpt-test",
            input="Refunds?",
            tools=[{"type": "file_search", "vector_store_ids": ["vs_1"]}],
            include=["file_search_call.results"],
        )
        assert "/v1/responses" == server.requests[0][0]
        assert ["file_search_call.results"] == server.requests[0][1]["include"]
    return response


class TestOpenAIResponses:
    def test_a_file_citation_with_retrieved_text_verifies(self):
        response = openai_responses_create(
            openai_response(url_citation(LINK_AT, LINK_AT + len(LINK)))
        )
        check = check_provider_response("openai-responses", response, OPENAI_DOCS)
        assert [
            ("verified", "retrieved_text_found"),
            ("no_source_span", "document_resolved"),
        ] == outcomes(check)

    def test_part_relative_offsets_convert_to_the_whole_answer(self):
        response = openai_responses_create(
            openai_response(url_citation(LINK_AT, LINK_AT + len(LINK)))
        )
        answer = parse_provider_response("openai-responses", response, OPENAI_DOCS)
        file_cite, url_cite = answer.citations
        assert LINK == covered(answer, url_cite)
        assert (
            LINK != answer.text[LINK_AT : LINK_AT + len(LINK)]
        )  # naive: offsets into the whole text
        assert len(PART_A) == file_cite.response_span.start == file_cite.response_span.end

    def test_a_shifted_url_citation_is_a_mismatch(self):
        response = openai_responses_create(
            openai_response(url_citation(LINK_AT + 1, LINK_AT + len(LINK) + 1))
        )
        check = check_provider_response("openai-responses", response, OPENAI_DOCS)
        assert ("mismatch", "response_link_differs") == outcomes(check)[1]

    def test_utf16_url_offsets_are_a_mismatch(self):
        start, end = utf16(PART_B, LINK_AT), utf16(PART_B, LINK_AT + len(LINK))
        assert (start, end) != (LINK_AT, LINK_AT + len(LINK))
        check = check_provider_response(
            "openai-responses",
            openai_responses_create(openai_response(url_citation(start, end))),
            OPENAI_DOCS,
        )
        assert "mismatch" == outcomes(check)[1][0]

    def test_retrieved_text_not_in_the_document_is_a_mismatch(self):
        reply = openai_response(
            url_citation(LINK_AT, LINK_AT + len(LINK)), retrieved="東京は日本の首都でした。"
        )
        check = check_provider_response(
            "openai-responses", openai_responses_create(reply), OPENAI_DOCS
        )
        assert ("mismatch", "retrieved_text_not_in_document") == outcomes(check)[0]

    def test_a_file_citation_without_retrieved_text_cannot_be_checked(self):
        reply = openai_response(url_citation(LINK_AT, LINK_AT + len(LINK)), include_results=False)
        check = check_provider_response(
            "openai-responses", openai_responses_create(reply), OPENAI_DOCS
        )
        assert ("no_source_span", "document_resolved") == outcomes(check)[0]

    def test_a_citation_of_an_unsent_file_is_rejected(self):
        reply = openai_response(url_citation(LINK_AT, LINK_AT + len(LINK)), file_id="file-other")
        with pytest.raises(UnsentDocumentError) as info:
            check_provider_response("openai-responses", openai_responses_create(reply), OPENAI_DOCS)
        assert (0, 1) == (info.value.citation_index, info.value.unsent_count)
        assert "file-other" not in str(info.value)

    def test_output_text_that_is_not_a_string_is_refused(self):
        """Issue 26: an ``output_text`` part holding a list is not read as its str()."""
        reply = openai_response(url_citation(LINK_AT, LINK_AT + len(LINK)))
        reply["output"][1]["content"][0]["text"] = ["CANARY-sdk-26"]
        response = openai_responses_create(reply)
        with pytest.raises(ProviderResponseError) as info:
            check_provider_response("openai-responses", response, OPENAI_DOCS)
        assert "openai-responses" == info.value.provider
        assert "CANARY" not in str(info.value)


CHAT_TEXT = "Tokyo 東京 👍🏽: " + LINK
CHAT_AT = CHAT_TEXT.index(LINK)


def chat_completion(start, end, url="https://shop.example/menu"):
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-test-search",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {
                    "role": "assistant",
                    "content": CHAT_TEXT,
                    "annotations": [
                        {
                            "type": "url_citation",
                            "url_citation": {
                                "start_index": start,
                                "end_index": end,
                                "url": url,
                                "title": "Menu",
                            },
                        }
                    ],
                },
            }
        ],
    }


def openai_chat_create(reply):
    with ProviderServer(reply) as server:
        client = server.own(
            openai.OpenAI(api_key="test", base_url=server.base_url + "/v1", max_retries=0)
        )
        completion = client.chat.completions.create(
            model="gpt-test-search", messages=[{"role": "user", "content": "Menu?"}]
        )
        assert "/v1/chat/completions" == server.requests[0][0]
    return completion


class TestOpenAIChat:
    def test_a_correct_url_citation_resolves_and_its_span_checks(self):
        """A URL citation has no source text, so the best it can be is no_source_span."""
        completion = openai_chat_create(chat_completion(CHAT_AT, CHAT_AT + len(LINK)))
        check = check_provider_response("openai-chat", completion, OPENAI_DOCS)
        assert [("no_source_span", "document_resolved")] == outcomes(check)
        assert LINK == covered(check.answer, check.answer.citations[0])
        assert LINK != CHAT_TEXT[utf16(CHAT_TEXT, CHAT_AT) : utf16(CHAT_TEXT, CHAT_AT + len(LINK))]

    def test_a_shifted_url_citation_is_a_mismatch(self):
        completion = openai_chat_create(chat_completion(CHAT_AT - 1, CHAT_AT + len(LINK) - 1))
        check = check_provider_response("openai-chat", completion, OPENAI_DOCS)
        assert [("mismatch", "response_link_differs")] == outcomes(check)

    def test_a_citation_of_an_unsent_url_is_rejected(self):
        completion = openai_chat_create(
            chat_completion(CHAT_AT, CHAT_AT + len(LINK), url="https://other/")
        )
        with pytest.raises(UnsentDocumentError):
            check_provider_response("openai-chat", completion, OPENAI_DOCS)


# --- Cohere v2 --------------------------------------------------------------------------

COHERE_TEXT = "東京 is the capital; ☕ costs 3€ 👍🏽, said the café."
CITED = "the café"
C_AT = COHERE_TEXT.index(CITED)


def cohere_response(start, end, source_id="doc", echoed=RETRIEVED):
    return {
        "id": "c-1",
        "finish_reason": "COMPLETE",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": COHERE_TEXT}],
            "citations": [
                {
                    "start": start,
                    "end": end,
                    "text": CITED,
                    "content_index": 0,
                    "type": "TEXT_CONTENT",
                    "sources": [
                        {
                            "type": "document",
                            "id": source_id,
                            "document": {"id": source_id, "text": echoed},
                        }
                    ],
                }
            ],
        },
        "usage": {"billed_units": {"input_tokens": 1, "output_tokens": 1}},
    }


def cohere_chat(reply):
    with ProviderServer(reply) as server:
        http = server.own(httpx.Client())
        client = cohere.ClientV2(api_key="test", base_url=server.base_url, httpx_client=http)
        response = client.chat(
            model="command-test",
            messages=[{"role": "user", "content": "Capital?"}],
            documents=[{"id": "doc", "data": {"text": DOC}}],
        )
        assert "/v2/chat" == server.requests[0][0]
    return response


class TestCohere:
    def test_a_correct_citation_verifies(self):
        check = check_provider_response(
            "cohere", cohere_chat(cohere_response(C_AT, C_AT + len(CITED))), DOCS
        )
        assert [("verified", "retrieved_text_found")] == outcomes(check)
        assert CITED == covered(check.answer, check.answer.citations[0])

    def test_a_shifted_citation_is_a_mismatch(self):
        check = check_provider_response(
            "cohere", cohere_chat(cohere_response(C_AT + 1, C_AT + len(CITED) + 1)), DOCS
        )
        assert [("mismatch", "response_text_differs")] == outcomes(check)

    def test_utf16_offsets_are_caught_as_a_unit_error(self):
        start, end = utf16(COHERE_TEXT, C_AT), utf16(COHERE_TEXT, C_AT + len(CITED))
        assert CITED != COHERE_TEXT[start:end]
        check = check_provider_response("cohere", cohere_chat(cohere_response(start, end)), DOCS)
        assert [("unit_error", "response_matches_as_utf16")] == outcomes(check)

    def test_an_echoed_document_that_differs_is_a_mismatch(self):
        reply = cohere_response(C_AT, C_AT + len(CITED), echoed="東京は日本の首都でした。")
        check = check_provider_response("cohere", cohere_chat(reply), DOCS)
        assert [("mismatch", "retrieved_text_not_in_document")] == outcomes(check)

    def test_a_citation_of_an_unsent_document_is_rejected(self):
        with pytest.raises(UnsentDocumentError):
            check_provider_response(
                "cohere", cohere_chat(cohere_response(C_AT, C_AT + 8, source_id="x")), DOCS
            )


# --- Gemini / Vertex groundingMetadata --------------------------------------------------

P0 = "東京 is Japan's capital. "
P1 = "Coffee ☕ costs 3€ 👍🏽 here."
SEG0 = "東京 is Japan's capital."
SEG1 = "costs 3€ 👍🏽"
G_AT = P1.index(SEG1)
GEMINI_DOCS = [SentDocument(doc_id="doc", provider_id="gs://kb/doc.txt", text=DOC)]


def segment0(end_extra=0):
    # partIndex and startIndex are 0 here, so proto3 JSON leaves them out.
    return {"endIndex": utf8(P0, len(SEG0)) + end_extra, "text": SEG0}


def segment1(start_extra=0):
    return {
        "partIndex": 1,
        "startIndex": utf8(P1, G_AT) + start_extra,
        "endIndex": utf8(P1, G_AT + len(SEG1)),
        "text": SEG1,
    }


def gemini_response(seg0, seg1, uri="gs://kb/doc.txt", indices=(0,)):
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": P0}, {"text": P1}]},
                "finishReason": "STOP",
                "groundingMetadata": {
                    "groundingChunks": [
                        {"retrievedContext": {"uri": uri, "title": "doc", "text": RETRIEVED}}
                    ],
                    "groundingSupports": [
                        {"segment": seg0, "groundingChunkIndices": [0], "confidenceScores": [0.9]},
                        {
                            "segment": seg1,
                            "groundingChunkIndices": list(indices),
                            "confidenceScores": [0.8],
                        },
                    ],
                },
            }
        ],
        "modelVersion": "gemini-test",
    }


def gemini_generate(reply):
    with ProviderServer(reply) as server:
        client = server.own(
            genai.Client(
                api_key="test", http_options=genai_types.HttpOptions(base_url=server.base_url)
            )
        )
        response = client.models.generate_content(model="gemini-test", contents="Capital?")
        assert server.requests[0][0].endswith("models/gemini-test:generateContent")
    return response


class TestGemini:
    def test_correct_supports_verify(self):
        response = gemini_generate(gemini_response(segment0(), segment1()))
        check = check_provider_response("gemini", response, GEMINI_DOCS)
        assert [("verified", "retrieved_text_found")] * 2 == outcomes(check)

    def test_part_relative_byte_offsets_convert_exactly(self):
        answer = parse_provider_response(
            "gemini", gemini_generate(gemini_response(segment0(), segment1())), GEMINI_DOCS
        )
        first, second = answer.citations
        assert (SEG0, SEG1) == (covered(answer, first), covered(answer, second))
        # The naive readings: bytes as code points, and part offsets applied to the whole text.
        start, end = segment1()["startIndex"], segment1()["endIndex"]
        assert SEG1 != P1[start:end]
        assert SEG1 != answer.text[start:end]

    def test_a_segment_shifted_by_one_byte_is_a_mismatch(self):
        check = check_provider_response(
            "gemini", gemini_generate(gemini_response(segment0(1), segment1())), GEMINI_DOCS
        )
        assert ("mismatch", "response_text_differs") == outcomes(check)[0]

    def test_an_offset_inside_a_utf8_sequence_is_a_unit_error(self):
        reply = gemini_response(
            segment0(), {**segment1(), "startIndex": utf8(P1, P1.index("€")) + 1}
        )
        check = check_provider_response("gemini", gemini_generate(reply), GEMINI_DOCS)
        assert ("unit_error", "inside_utf8_sequence") == outcomes(check)[1]

    def test_a_chunk_of_an_unsent_document_is_rejected(self):
        with pytest.raises(UnsentDocumentError):
            check_provider_response(
                "gemini",
                gemini_generate(gemini_response(segment0(), segment1(), uri="gs://other")),
                GEMINI_DOCS,
            )

    def test_a_chunk_index_past_the_chunks_is_an_unknown_document(self):
        reply = gemini_response(segment0(), segment1(), indices=(3,))
        answer = parse_provider_response("gemini", gemini_generate(reply), GEMINI_DOCS)
        assert ["verified", "unknown_document"] == [
            v.outcome for v in verify_provider_answer(answer, GEMINI_DOCS)
        ]

    def test_the_sdk_object_and_the_wire_json_parse_alike(self):
        reply = gemini_response(segment0(), segment1())
        sdk = parse_provider_response("gemini", gemini_generate(reply), GEMINI_DOCS)
        wire = parse_provider_response("gemini", reply, GEMINI_DOCS)
        assert [c.response_span for c in sdk.citations] == [c.response_span for c in wire.citations]


# --- Bedrock Converse -------------------------------------------------------------------


def converse_response(start, end, index=0):
    citation = {
        "title": "doc",
        "sourceContent": [{"text": SENTENCE}],
        "location": {"documentChar": {"documentIndex": index, "start": start, "end": end}},
    }
    return {
        "output": {
            "message": {
                "role": "assistant",
                "content": [
                    {"text": "Answer 東京: "},
                    {
                        "citationsContent": {
                            "content": [{"text": "It is 👍🏽 approved."}],
                            "citations": [citation],
                        }
                    },
                ],
            }
        },
        "stopReason": "end_turn",
        "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
        "metrics": {"latencyMs": 1},
    }


def bedrock_converse(reply):
    with ProviderServer(reply) as server:
        client = server.own(
            boto3.client(
                "bedrock-runtime",
                endpoint_url=server.base_url,
                region_name="us-east-1",
                aws_access_key_id="test",
                aws_secret_access_key="test",  # noqa: S106 - a loopback fake
            )
        )
        response = client.converse(
            modelId="anthropic.claude-test",
            messages=[
                {
                    "role": "user",
                    "content": [
                        {
                            "document": {
                                "format": "txt",
                                "name": "doc",
                                "source": {"text": DOC},
                                "citations": {"enabled": True},
                            }
                        },
                        {"text": "Approved?"},
                    ],
                }
            ],
        )
        assert "/model/anthropic.claude-test/converse" == server.requests[0][0]
    return response


class TestBedrockConverse:
    def test_a_correct_document_char_citation_verifies(self):
        check = check_provider_response(
            "bedrock-converse", bedrock_converse(converse_response(S, E)), DOCS
        )
        assert [("verified", "cited_text_equal")] == outcomes(check)
        assert "It is 👍🏽 approved." == covered(check.answer, check.answer.citations[0])

    def test_a_shifted_citation_is_a_mismatch(self):
        check = check_provider_response(
            "bedrock-converse", bedrock_converse(converse_response(S - 1, E - 1)), DOCS
        )
        assert [("mismatch", "cited_text_differs")] == outcomes(check)

    def test_utf16_offsets_are_caught_as_a_unit_error(self):
        reply = converse_response(utf16(DOC, S), utf16(DOC, E))
        check = check_provider_response("bedrock-converse", bedrock_converse(reply), DOCS)
        assert [("unit_error", "source_matches_as_utf16")] == outcomes(check)

    def test_a_citation_of_an_unsent_document_is_rejected(self):
        with pytest.raises(UnsentDocumentError):
            check_provider_response(
                "bedrock-converse", bedrock_converse(converse_response(S, E, index=2)), DOCS
            )
