"""Provider-native citations from real ChatAnthropic and ChatOpenAI results.

langchain-anthropic and langchain-openai (with their official SDKs underneath) are
pointed at a loopback server that answers with citations over non-ASCII text. The
messages they return keep Anthropic's source offsets only in the untyped
``extras`` of LangChain's standard ``Citation`` block; `parse_provider_message`
recovers them, and citemark verifies, rejects and catches shifts as it does for
raw responses. The naive reading (the standard fields alone) is shown to have no
source offset to check.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from langchain_anthropic import ChatAnthropic
from langchain_core.messages import AIMessage, HumanMessage
from langchain_openai import ChatOpenAI

from citemark.providers import (
    ProviderResponseError,
    SentDocument,
    UnsentDocumentError,
    verify_provider_answer,
)
from langchain_citemark import parse_provider_message

DOC = "Intro 🍣. 東京は日本の首都です。 Thumbs 👍🏽 up. Café vs cafe\u0301."
SENTENCE = "Thumbs 👍🏽 up."
S = DOC.index(SENTENCE)
E = S + len(SENTENCE)
DOCS = [
    SentDocument(doc_id="doc", text=DOC),
    SentDocument(doc_id="menu", provider_id="https://shop.example/menu", text="Menu."),
]
LINK = "([shop.example](https://shop.example/menu))"


class Server:
    """Answer every POST with one JSON reply; record the paths."""

    def __init__(self, reply):
        self.reply, self.paths = reply, []

    def __enter__(self):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                """Quiet: a test reads what the server got, not its log."""

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.paths.append(self.path)
                payload = json.dumps(outer.reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        host, port = self.server.server_address[:2]
        self.url = f"http://{host}:{port}"
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def anthropic_reply(start, end, index=0):
    citation = {
        "type": "char_location",
        "cited_text": SENTENCE,
        "document_index": index,
        "document_title": "doc",
        "start_char_index": start,
        "end_char_index": end,
    }
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": "Yes 👍🏽.", "citations": [citation]}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def chat_anthropic(reply) -> AIMessage:
    with Server(reply) as server:
        model = ChatAnthropic(
            model="claude-test", api_key="test", base_url=server.url, max_retries=0
        )
        try:
            message = model.invoke(
                [
                    HumanMessage(
                        content=[
                            {
                                "type": "document",
                                "source": {"type": "text", "media_type": "text/plain", "data": DOC},
                                "citations": {"enabled": True},
                            },
                            {"type": "text", "text": "Approved?"},
                        ]
                    )
                ]
            )
        finally:
            model._client.close()
        assert ["/v1/messages"] == server.paths
    return message


def chat_openai(start, end, url="https://shop.example/menu") -> AIMessage:
    text = "Menu 東京 🍣 " + LINK + "."
    reply = {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": "gpt-test",
        "status": "completed",
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [
                    {
                        "type": "output_text",
                        "text": text,
                        "annotations": [
                            {
                                "type": "url_citation",
                                "start_index": start,
                                "end_index": end,
                                "url": url,
                                "title": "Menu",
                            }
                        ],
                    }
                ],
            }
        ],
    }
    with Server(reply) as server:
        model = ChatOpenAI(
            model="gpt-test",
            api_key="test",
            base_url=server.url + "/v1",
            use_responses_api=True,
            max_retries=0,
        )
        try:
            message = model.invoke("Menu?")
        finally:
            model.root_client.close()
        assert ["/v1/responses"] == server.paths
    return message


class TestChatAnthropic:
    def test_extras_offsets_are_recovered_and_verify(self):
        message = chat_anthropic(anthropic_reply(S, E))
        annotation = message.content_blocks[0]["annotations"][0]
        assert "start_index" not in annotation  # the standard fields have no source span
        assert S == annotation["extras"]["start_char_index"]
        answer = parse_provider_message(message, DOCS)
        assert [("verified", "cited_text_equal")] == [
            (v.outcome, v.detail) for v in verify_provider_answer(answer, DOCS)
        ]

    def test_a_shifted_citation_is_a_mismatch(self):
        answer = parse_provider_message(chat_anthropic(anthropic_reply(S + 1, E + 1)), DOCS)
        assert ["mismatch"] == [v.outcome for v in verify_provider_answer(answer, DOCS)]

    def test_utf16_offsets_are_a_unit_error(self):
        start = len(DOC[:S].encode("utf-16-le")) // 2
        end = len(DOC[:E].encode("utf-16-le")) // 2
        answer = parse_provider_message(chat_anthropic(anthropic_reply(start, end)), DOCS)
        assert [("unit_error", "source_matches_as_utf16")] == [
            (v.outcome, v.detail) for v in verify_provider_answer(answer, DOCS)
        ]

    def test_a_citation_of_an_unsent_document_is_unknown(self):
        answer = parse_provider_message(chat_anthropic(anthropic_reply(S, E, index=7)), DOCS)
        assert ["unknown_document"] == [v.outcome for v in verify_provider_answer(answer, DOCS)]


class TestChatOpenAI:
    AT = len("Menu 東京 🍣 ")

    def test_a_url_citation_resolves_with_its_exact_span(self):
        answer = parse_provider_message(chat_openai(self.AT, self.AT + len(LINK)), DOCS)
        span = answer.citations[0].response_span
        assert LINK == answer.text[span.start : span.end]
        assert [("no_source_span", "document_resolved")] == [
            (v.outcome, v.detail) for v in verify_provider_answer(answer, DOCS)
        ]

    def test_a_shifted_url_citation_is_a_mismatch(self):
        answer = parse_provider_message(chat_openai(self.AT + 1, self.AT + len(LINK) + 1), DOCS)
        assert ["mismatch"] == [v.outcome for v in verify_provider_answer(answer, DOCS)]

    def test_a_citation_of_an_unsent_url_is_unknown(self):
        answer = parse_provider_message(
            chat_openai(self.AT, self.AT + len(LINK), url="https://x/"), DOCS
        )
        verifications = verify_provider_answer(answer, DOCS)
        assert ["unknown_document"] == [v.outcome for v in verifications]


class TestOtherMessages:
    def test_citations_of_an_unread_provider_are_refused_not_dropped(self):
        message = AIMessage(
            content=[
                {"type": "text", "text": "x", "annotations": [{"type": "citation", "url": "u"}]}
            ],
            response_metadata={"model_provider": "acme"},
        )
        with pytest.raises(ProviderResponseError):
            parse_provider_message(message, DOCS)

    def test_a_message_without_citations_has_none(self):
        answer = parse_provider_message(AIMessage(content="plain"), DOCS)
        assert ("plain", ()) == (answer.text, answer.citations)

    def test_an_unknown_document_rejects_in_the_synthesis_path(self):
        """The same rejection as for raw responses, through the public check."""
        from citemark.providers import check_provider_response

        message = chat_anthropic(anthropic_reply(S, E, index=7))
        rebuilt = {
            "content": [
                {
                    "type": "text",
                    "text": message.text,
                    "citations": [
                        {
                            **message.content_blocks[0]["annotations"][0]["extras"],
                            "type": "char_location",
                            "cited_text": SENTENCE,
                        }
                    ],
                }
            ]
        }
        with pytest.raises(UnsentDocumentError):
            check_provider_response("anthropic", rebuilt, DOCS)
