"""Verification of provider citations against the caller's documents, outcome by outcome.

The SDK round trips live in test_providers_sdk.py; this file pins each outcome and
detail code, the use of citemark's own readers, the JSON data for report rows,
and the typed errors for responses that are not of the documented shape.
"""

from __future__ import annotations

import json
import pickle

import pytest

from citemark import FileReader, MappingReader, SynthesisError
from citemark.providers import (
    PROVIDERS,
    ProviderResponseError,
    SentDocument,
    UnsentDocumentError,
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
        with pytest.raises(ValueError, match="share one provider reference"):
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
