"""Verification of provider citations against the caller's documents, outcome by outcome.

The SDK round trips live in test_providers_sdk.py; this file pins each outcome and
detail code, the use of citemark's own readers, the JSON data for report rows,
and the typed errors for responses that are not of the documented shape.
"""

from __future__ import annotations

import json
import pickle

import pytest

from citemark import CitemarkError, FileReader, MappingReader, SynthesisError
from citemark.providers import (
    PROVIDERS,
    ProviderResponseError,
    SentDocument,
    UnsentDocumentError,
    accumulate_anthropic_stream,
    check_provider_response,
    parse_anthropic,
    parse_gemini,
    parse_provider_response,
    provider_citations_json,
    verify_provider_answer,
)

DOC = "Grass is green. The sky is blue. 東京 👍🏽."


def char(start, end, cited, index=0):
    return {
        "type": "char_location",
        "cited_text": cited,
        "document_index": index,
        "start_char_index": start,
        "end_char_index": end,
    }


def message(*citations):
    return {"content": [{"type": "text", "text": "Answer.", "citations": list(citations)}]}


def outcomes(answer, docs, reader=None):
    return [(v.outcome, v.detail) for v in verify_provider_answer(answer, docs, reader=reader)]


class TestReaders:
    def test_a_file_reader_is_the_source_of_truth(self, tmp_path):
        (tmp_path / "doc.txt").write_text(DOC, encoding="utf-8")
        docs = [SentDocument(doc_id="doc.txt")]  # no inline text: the reader reads it
        answer = parse_anthropic(message(char(16, 32, "The sky is blue.")), docs)
        assert [("verified", "cited_text_equal")] == outcomes(answer, docs, FileReader(tmp_path))

    def test_an_edited_file_is_a_mismatch_and_a_truncated_one_drifted(self, tmp_path):
        docs = [SentDocument(doc_id="doc")]
        answer = parse_anthropic(message(char(16, 32, "The sky is blue.")), docs)
        edited = MappingReader({"doc": DOC.replace("blue", "grey")})
        assert [("mismatch", "cited_text_differs")] == outcomes(answer, docs, edited)
        assert [("drifted", "span_past_document_end")] == outcomes(
            answer, docs, MappingReader({"doc": DOC[:20]})
        )
        assert [("unreadable", "document_unreadable")] == outcomes(
            answer, docs, FileReader(tmp_path)
        )

    def test_the_naive_check_slices_the_response_and_misses_the_fabrication(self):
        """Public code often slices the *answer* with start_char_index; citemark reads the source."""
        docs = [SentDocument(doc_id="doc", text=DOC)]
        fabricated = char(0, 7, "Answer.")  # the answer's own text, claimed as the source
        answer = parse_anthropic(message(fabricated), docs)
        assert answer.text[0:7] == fabricated["cited_text"]  # the naive check passes
        assert [("mismatch", "cited_text_differs")] == outcomes(answer, docs)


class TestItems:
    def test_blocks_joined_with_whitespace_verify_and_other_text_does_not(self):
        docs = [SentDocument(doc_id="d", blocks=("One.", "Two 東京.", "Three."))]

        def block(start, end, cited):
            return {
                "type": "content_block_location",
                "cited_text": cited,
                "document_index": 0,
                "start_block_index": start,
                "end_block_index": end,
            }

        answer = parse_anthropic(
            message(
                block(0, 2, "One.Two 東京."),
                block(0, 2, "One. Two 東京."),
                block(0, 2, "One. Two."),
                block(1, 1, ""),
            ),
            docs,
        )
        assert [
            ("verified", "cited_text_equals_blocks"),
            ("verified", "cited_text_equals_blocks"),
            ("mismatch", "cited_text_differs_from_blocks"),
            ("unit_error", "negative_or_empty_range"),
        ] == outcomes(answer, docs)

    def test_a_page_citation_needs_the_pages(self):
        docs = [SentDocument(doc_id="d", text="whole text")]
        page = {
            "type": "page_location",
            "cited_text": "x",
            "document_index": 0,
            "start_page_number": 1,
            "end_page_number": 2,
        }
        assert [("unreadable", "no_pages_given")] == outcomes(
            parse_anthropic(message(page), docs), docs
        )

    def test_vertex_page_spans_are_inclusive(self):
        """RagChunk.pageSpan is 1-based and inclusive: pages 2..3 are two pages."""
        pages = ("p1", "p2 first half", "second half p3")
        docs = [SentDocument(doc_id="d", provider_id="gs://d", pages=pages)]
        text = "first half\nsecond half"
        response = {
            "candidates": [
                {
                    "content": {"parts": [{"text": "Claim."}]},
                    "groundingMetadata": {
                        "groundingChunks": [
                            {
                                "retrievedContext": {
                                    "uri": "gs://d",
                                    "text": text,
                                    "ragChunk": {
                                        "text": text,
                                        "pageSpan": {"firstPage": 2, "lastPage": 3},
                                    },
                                }
                            }
                        ],
                        "groundingSupports": [
                            {
                                "segment": {"endIndex": 6, "text": "Claim."},
                                "groundingChunkIndices": [0],
                            }
                        ],
                    },
                }
            ]
        }
        answer = parse_gemini(response, docs)
        span = answer.citations[0].source_span
        assert (1, 3) == (span.first, span.stop)
        assert text not in "\n".join(pages[span.start - 1 : span.end - 1])  # naive: end exclusive
        assert [("verified", "cited_text_in_pages")] == outcomes(answer, docs)


class TestRejection:
    def test_only_unknown_documents_raise(self):
        docs = [SentDocument(doc_id="d", text=DOC)]
        check = check_provider_response("anthropic", message(char(1, 5, "nope")), docs)
        assert not check.ok  # a mismatch is reported, not raised
        with pytest.raises(SynthesisError):
            check_provider_response("anthropic", message(char(0, 5, "Grass", index=3)), docs)

    def test_the_error_pickles_and_names_no_document(self):
        exc = UnsentDocumentError("cohere", citation_index=2, unsent_count=1, sent_count=4)
        copy = pickle.loads(pickle.dumps(exc))  # noqa: S301 - our own bytes
        assert (2, 1, 4) == (copy.citation_index, copy.unsent_count, copy.sent_count)
        assert str(exc) == str(copy)

    def test_unknown_location_types_are_refused_not_dropped(self):
        with pytest.raises(ProviderResponseError) as info:
            parse_anthropic(message({"type": "novel_location", "cited_text": "secret"}), [])
        assert "secret" not in str(info.value)

    @pytest.mark.parametrize(
        ("provider", "response"),
        [
            ("anthropic", {"id": "x"}),
            ("openai-responses", {"id": "x"}),
            ("openai-chat", {"choices": []}),
            ("cohere", {"id": "x"}),
            ("gemini", {"candidates": []}),
            ("bedrock-converse", {"output": {}}),
            ("anthropic", "not an object"),
        ],
    )
    def test_a_response_of_another_shape_is_a_typed_error(self, provider, response):
        with pytest.raises(ProviderResponseError) as info:
            parse_provider_response(provider, response, [])
        assert provider == info.value.provider

    def test_an_unknown_provider_is_a_value_error(self):
        with pytest.raises(ValueError, match="unknown provider"):
            parse_provider_response("acme", {}, [])
        assert {
            "anthropic",
            "openai-responses",
            "openai-chat",
            "cohere",
            "gemini",
            "vertex",
            "bedrock-converse",
        } == set(PROVIDERS)

    def test_two_documents_with_one_reference_are_refused(self):
        docs = [
            SentDocument(doc_id="a", provider_id="f"),
            SentDocument(doc_id="b", provider_id="f"),
        ]
        with pytest.raises(ProviderResponseError, match="share one provider reference"):
            parse_anthropic(message(), docs)


class TestJson:
    def test_rows_get_json_safe_data_and_unsent_documents_do_not_raise(self):
        docs = [{"doc_id": "d", "text": DOC}]
        data = provider_citations_json(
            "anthropic", message(char(16, 32, "The sky is blue."), char(0, 1, "G", index=9)), docs
        )
        assert data == json.loads(json.dumps(data))
        assert data["rejected"]
        assert {"verified": 1, "unknown_document": 1} == data["counts"]
        first = data["citations"][0]
        assert ("verified", "d", "chars", 16, 32) == (
            first["outcome"],
            first["doc_id"],
            first["source_span"]["kind"],
            first["source_span"]["start"],
            first["source_span"]["end"],
        )
        assert {"start": 0, "end": 7} == {k: first["response_span"][k] for k in ("start", "end")}


# --- Issue 26, item 1: a text field that is not a string is a malformed response --------

CANARY = "CANARY-text-26a"
ANSWER = "The sky is blue."
# Each value a naive parser would turn into text (str()) or let pass as a title or URL.
NOT_TEXT = [5, 1.5, True, [CANARY], {"t": CANARY}]


def provider_responses() -> dict[str, dict[str, object]]:
    """One documented response per provider, every text field it has filled in."""
    return {
        "anthropic": {
            "content": [
                {
                    "type": "text",
                    "text": ANSWER,
                    "citations": [{**char(16, 32, "The sky is blue."), "document_title": "t"}],
                },
                {
                    "type": "text",
                    "text": "w",
                    "citations": [
                        {
                            "type": "web_search_result_location",
                            "url": "https://x.example",
                            "title": "t",
                            "cited_text": "c",
                        }
                    ],
                },
                {
                    "type": "text",
                    "text": "s",
                    "citations": [
                        {
                            "type": "search_result_location",
                            "source": "s",
                            "title": "t",
                            "cited_text": "c",
                            "search_result_index": 0,
                            "start_block_index": 0,
                            "end_block_index": 1,
                        }
                    ],
                },
            ]
        },
        "openai-responses": {
            "output": [
                {"type": "file_search_call", "results": [{"file_id": "f", "text": "The sky"}]},
                {
                    "type": "message",
                    "content": [
                        {
                            "type": "output_text",
                            "text": ANSWER,
                            "annotations": [
                                {
                                    "type": "file_citation",
                                    "file_id": "f",
                                    "filename": "n",
                                    "index": 3,
                                },
                                {
                                    "type": "url_citation",
                                    "url": "https://x.example",
                                    "title": "t",
                                    "start_index": 0,
                                    "end_index": 3,
                                },
                            ],
                        }
                    ],
                },
            ]
        },
        "openai-chat": {
            "choices": [
                {
                    "message": {
                        "content": ANSWER,
                        "annotations": [
                            {
                                "type": "url_citation",
                                "url_citation": {
                                    "url": "https://x.example",
                                    "title": "t",
                                    "start_index": 0,
                                    "end_index": 3,
                                },
                            }
                        ],
                    }
                }
            ]
        },
        "cohere": {
            "message": {
                "content": [{"type": "text", "text": ANSWER}],
                "citations": [
                    {
                        "start": 0,
                        "end": 3,
                        "text": "The",
                        "content_index": 0,
                        "sources": [
                            {
                                "type": "document",
                                "id": "d",
                                "document": {"id": "d", "title": "t", "text": "The sky"},
                            }
                        ],
                    }
                ],
            }
        },
        "gemini": {
            "candidates": [
                {
                    "content": {"parts": [{"text": ANSWER}]},
                    "groundingMetadata": {
                        "groundingChunks": [
                            {
                                "retrievedContext": {
                                    "uri": "gs://d",
                                    "title": "t",
                                    "documentName": "n",
                                    "text": "The sky",
                                    "ragChunk": {"text": "The sky"},
                                }
                            },
                            {"web": {"uri": "https://x.example", "title": "t"}},
                        ],
                        "groundingSupports": [
                            {
                                "segment": {"startIndex": 0, "endIndex": 3, "text": "The"},
                                "groundingChunkIndices": [0, 1],
                            }
                        ],
                    },
                }
            ]
        },
        "bedrock-converse": {
            "output": {
                "message": {
                    "content": [
                        {"text": "Lead: "},
                        {
                            "citationsContent": {
                                "content": [{"text": ANSWER}],
                                "citations": [
                                    {
                                        "title": "t",
                                        "sourceContent": [{"text": "The sky is blue."}],
                                        "location": {
                                            "documentChar": {
                                                "documentIndex": 0,
                                                "start": 16,
                                                "end": 32,
                                            }
                                        },
                                    },
                                    {
                                        "sourceContent": [{"text": "c"}],
                                        "location": {"web": {"url": "https://x.example"}},
                                    },
                                ],
                            }
                        },
                    ]
                }
            }
        },
    }


# (provider, path to a text field, whether null is refused too: the field is required)
TEXT_FIELDS: list[tuple[str, tuple[str | int, ...], bool]] = [
    ("anthropic", ("content", 0, "text"), True),
    ("anthropic", ("content", 0, "citations", 0, "cited_text"), False),
    ("anthropic", ("content", 0, "citations", 0, "document_title"), False),
    ("anthropic", ("content", 1, "citations", 0, "url"), False),
    ("anthropic", ("content", 1, "citations", 0, "title"), False),
    ("anthropic", ("content", 1, "citations", 0, "cited_text"), False),
    ("anthropic", ("content", 2, "citations", 0, "source"), False),
    ("openai-responses", ("output", 1, "content", 0, "text"), True),
    ("openai-responses", ("output", 0, "results", 0, "text"), False),
    ("openai-responses", ("output", 0, "results", 0, "file_id"), False),
    ("openai-responses", ("output", 1, "content", 0, "annotations", 0, "file_id"), False),
    ("openai-responses", ("output", 1, "content", 0, "annotations", 0, "filename"), False),
    ("openai-responses", ("output", 1, "content", 0, "annotations", 1, "url"), False),
    ("openai-responses", ("output", 1, "content", 0, "annotations", 1, "title"), False),
    ("openai-chat", ("choices", 0, "message", "content"), False),
    ("openai-chat", ("choices", 0, "message", "annotations", 0, "url_citation", "url"), False),
    ("openai-chat", ("choices", 0, "message", "annotations", 0, "url_citation", "title"), False),
    ("cohere", ("message", "content", 0, "text"), True),
    ("cohere", ("message", "citations", 0, "text"), False),
    ("cohere", ("message", "citations", 0, "sources", 0, "id"), False),
    ("cohere", ("message", "citations", 0, "sources", 0, "type"), False),
    ("cohere", ("message", "citations", 0, "sources", 0, "document", "text"), False),
    ("cohere", ("message", "citations", 0, "sources", 0, "document", "title"), False),
    ("gemini", ("candidates", 0, "content", "parts", 0, "text"), False),
    (
        "gemini",
        ("candidates", 0, "groundingMetadata", "groundingSupports", 0, "segment", "text"),
        False,
    ),
    *[
        (
            "gemini",
            ("candidates", 0, "groundingMetadata", "groundingChunks", 0, "retrievedContext", key),
            False,
        )
        for key in ("uri", "title", "documentName", "text")
    ],
    (
        "gemini",
        (
            "candidates",
            0,
            "groundingMetadata",
            "groundingChunks",
            0,
            "retrievedContext",
            "ragChunk",
            "text",
        ),
        False,
    ),
    ("gemini", ("candidates", 0, "groundingMetadata", "groundingChunks", 1, "web", "uri"), False),
    ("gemini", ("candidates", 0, "groundingMetadata", "groundingChunks", 1, "web", "title"), False),
    ("bedrock-converse", ("output", "message", "content", 0, "text"), False),
    (
        "bedrock-converse",
        ("output", "message", "content", 1, "citationsContent", "content", 0, "text"),
        False,
    ),
    (
        "bedrock-converse",
        ("output", "message", "content", 1, "citationsContent", "citations", 0, "title"),
        False,
    ),
    (
        "bedrock-converse",
        (
            "output",
            "message",
            "content",
            1,
            "citationsContent",
            "citations",
            0,
            "sourceContent",
            0,
            "text",
        ),
        False,
    ),
    (
        "bedrock-converse",
        (
            "output",
            "message",
            "content",
            1,
            "citationsContent",
            "citations",
            1,
            "location",
            "web",
            "url",
        ),
        False,
    ),
]


def replaced(
    response: dict[str, object], path: tuple[str | int, ...], value: object
) -> dict[str, object]:
    """``response`` with the field at ``path`` set to ``value``."""
    holder: object = response
    for step in path[:-1]:
        holder = holder[step]  # type: ignore[index]
    holder[path[-1]] = value  # type: ignore[index]
    return response


class TestTextFields:
    @pytest.mark.parametrize("provider", sorted({p for p, _, _ in TEXT_FIELDS}))
    def test_each_documented_response_parses(self, provider):
        """The fixtures are well formed: a refusal below is the bad field's doing."""
        answer = parse_provider_response(provider, provider_responses()[provider], [])
        assert ANSWER in answer.text
        assert answer.citations

    @pytest.mark.parametrize(("provider", "path", "required"), TEXT_FIELDS)
    def test_a_text_field_that_is_not_a_string_is_refused(self, provider, path, required):
        """A number, list, object or boolean where text belongs is a ProviderResponseError.

        The naive parser turned it into its ``str()`` (an answer of ``"5"``, a title of
        ``"['CANARY…']"``), dropped it, or let pydantic raise a bare ValidationError.
        """
        bad = [*NOT_TEXT, *([None] if required else [])]
        for value in bad:
            response = replaced(provider_responses()[provider], path, value)
            with pytest.raises(ProviderResponseError) as info:
                parse_provider_response(provider, response, [])
            assert provider == info.value.provider, value
            assert "is not a string" in info.value.reason, (value, info.value.reason)
            assert CANARY not in str(info.value)

    @pytest.mark.parametrize(
        "delta", [{"type": "text_delta", "text": 5}, {"type": "text_delta", "text": [CANARY]}]
    )
    def test_a_streamed_text_delta_that_is_not_a_string_is_refused(self, delta):
        events = [
            {"type": "message_start", "message": {"role": "assistant", "content": []}},
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            {"type": "content_block_delta", "index": 0, "delta": delta},
        ]
        with pytest.raises(ProviderResponseError) as info:
            accumulate_anthropic_stream(events)
        assert "stream event 2" in info.value.reason
        assert CANARY not in str(info.value)

    def test_a_started_text_block_that_is_not_a_string_is_refused(self):
        events = [
            {"type": "message_start", "message": {"role": "assistant", "content": []}},
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": 7},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "a"},
            },
        ]
        with pytest.raises(ProviderResponseError):
            parse_anthropic(accumulate_anthropic_stream(events), [])

    def test_a_number_answer_does_not_verify_against_its_str(self):
        """The issue's case: text 5 with a citation that verifies against "5" is refused."""
        docs = [SentDocument(doc_id="d", text="Count: 5 apples.")]
        response = {"content": [{"type": "text", "text": 5, "citations": [char(7, 8, "5")]}]}
        with pytest.raises(ProviderResponseError):
            check_provider_response("anthropic", response, docs)


# --- Issue 26, item 2: two sent documents with one id are a citemark error ---------------


class TestDuplicateDocuments:
    def test_two_documents_with_one_doc_id_are_refused(self):
        """Different provider ids, one doc_id: the naive index kept the last one silently."""
        docs = [
            SentDocument(doc_id="d", provider_id="file-a", text="Alpha text."),
            SentDocument(doc_id="d", provider_id="file-b", text="Beta text."),
        ]
        response = {
            "output": [
                {"type": "file_search_call", "results": [{"file_id": "file-a", "text": "Alpha"}]},
                {
                    "type": "message",
                    "content": [
                        {
                            "type": "output_text",
                            "text": "A.",
                            "annotations": [
                                {"type": "file_citation", "file_id": "file-a", "index": 2}
                            ],
                        }
                    ],
                },
            ]
        }
        # The naive reading: file-a's passage is checked against file-b's text.
        by_id = {doc.doc_id: doc for doc in docs}
        assert "Alpha" not in (by_id["d"].text or "")
        for call in (
            lambda: parse_provider_response("openai-responses", response, docs),
            lambda: check_provider_response("openai-responses", response, docs),
        ):
            with pytest.raises(ProviderResponseError) as info:
                call()
            assert isinstance(info.value, CitemarkError)
            assert "share one doc_id" in info.value.reason
            assert "file-" not in str(info.value)

    @pytest.mark.parametrize(
        "docs",
        [
            [SentDocument(doc_id="a", provider_id="f"), SentDocument(doc_id="b", provider_id="f")],
            [SentDocument(doc_id="a"), SentDocument(doc_id="b", provider_id="a")],
            [{"doc_id": "a"}, {"doc_id": "a"}],
        ],
    )
    def test_two_documents_with_one_reference_are_a_citemark_error(self, docs):
        for provider in ("anthropic", "gemini", "cohere", "bedrock-converse"):
            with pytest.raises(ProviderResponseError) as info:
                parse_provider_response(provider, provider_responses()[provider], docs)
            assert (provider, True) == (info.value.provider, isinstance(info.value, CitemarkError))
            assert "documents 1 and 2 share one" in info.value.reason

    def test_verification_refuses_them_too(self):
        docs = [SentDocument(doc_id="a", text=DOC)]
        answer = parse_anthropic(message(char(16, 32, "The sky is blue.")), docs)
        with pytest.raises(ProviderResponseError):
            verify_provider_answer(answer, [*docs, SentDocument(doc_id="a", text="other")])

    def test_a_document_that_is_not_a_sent_document_is_a_citemark_error(self):
        """A mapping that does not fit SentDocument: typed, and its keys are not quoted."""
        with pytest.raises(ProviderResponseError) as info:
            parse_anthropic(message(), [{"doc_id": "a"}, {"doc_id": 5, CANARY: 1}])
        assert "sent document 2 does not fit the SentDocument schema" in info.value.reason
        assert CANARY not in str(info.value)
