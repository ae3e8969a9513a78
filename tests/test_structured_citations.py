"""Structured-output citations: source ids and quotes beside the answer, checked as markers are.

LangChain's citation guide has the model return ``{"answer": ..., "citations": [0, 2]}``
or quote objects. The naive reading trusts the model's ids (``docs[i]``, where ``-1``
wraps around to the last document) and takes quotes on faith; each test below shows
the difference on the same input.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from citemark import (
    MarkerOutOfRangeError,
    NoSourcesError,
    QuoteNotInSourceError,
    Source,
    StructuredAnswerError,
    UnrecognizedCitationError,
    check_structured,
    resolve_structured,
)
from citemark._sources.structured import json_pointer, normalize_quote

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [
    Source(text="Lions live in prides and hunt at night.", doc_id="lion", chunk_id="lion#0"),
    Source(text='Cheetahs run at "93 to 104 km/h".', doc_id="cheetah", chunk_id="cheetah#0"),
    Source(text="The cheetah lives in Africa and Iran.", doc_id="cheetah", chunk_id="cheetah#1"),
]


def naive_ids(answer: dict, documents: list) -> list:
    """What a chain that trusts the model's ids does: index the retrieved list."""
    return [documents[i] for i in answer["citations"]]


def naive_quotes(answer: dict, documents: list) -> bool:
    """A check that takes each quote on faith as long as its id indexes a document."""
    return all(documents[c["source_id"]] is not None for c in answer["citations"])


class QuotedAnswer(BaseModel):
    class Citation(BaseModel):
        source_id: int
        quote: str

    answer: str
    citations: list[Citation]


class TestIds:
    def test_ids_resolve_to_citations_built_from_the_sources_own_fields(self):
        checked = resolve_structured(
            {"answer": "Fast.", "citations": [1, 2, 1]}, SOURCES, index_base=0
        )
        assert [("cheetah#0", 1), ("cheetah#1", 2)] == [
            (c.chunk_id, c.marker) for c in checked.citations
        ]
        assert SOURCES[1].text == checked.citations[0].text
        assert ["resolved"] * 3 == [c.outcome for c in checked.findings.citations]

    @pytest.mark.parametrize("wrong", [3, -1, 10**40])
    def test_an_out_of_range_id_rejects_where_the_naive_reading_accepts(self, wrong):
        answer = {"answer": "Fast.", "citations": [0, wrong]}
        if wrong == -1:  # the naive reading silently cites the last document
            assert SOURCES[-1] is naive_ids(answer, SOURCES)[1]
        with pytest.raises(MarkerOutOfRangeError) as caught:
            resolve_structured(answer, SOURCES, index_base=0)
        assert (wrong, 3, 0) == (
            caught.value.marker,
            caught.value.valid_count,
            caught.value.index_base,
        )
        found = check_structured(answer, SOURCES, index_base=0).findings
        assert (wrong,) == found.out_of_range
        assert "/citations/1" == found.citations[1].pointer

    def test_the_base_decides_the_range(self):
        answer = {"answer": "Fast.", "citations": [3]}
        assert ("cheetah#1",) == tuple(
            c.chunk_id for c in resolve_structured(answer, SOURCES).citations
        )
        with pytest.raises(MarkerOutOfRangeError):
            resolve_structured(answer, SOURCES, index_base=0)
        with pytest.raises(MarkerOutOfRangeError):
            resolve_structured({"answer": "x", "citations": [0]}, SOURCES)

    @pytest.mark.parametrize(
        "entry",
        ["1", True, 1.0, None, {"quote": "Lions"}, {"source_id": "0"}, {"source_id": False}],
    )
    def test_an_entry_that_is_not_an_integer_id_is_refused_never_read_as_a_guess(self, entry):
        with pytest.raises(StructuredAnswerError) as caught:
            check_structured({"answer": "x", "citations": [0, entry]}, SOURCES, index_base=0)
        assert str(caught.value).startswith("citation 2")

    def test_missing_citations_and_empty_sources_are_refused(self):
        with pytest.raises(StructuredAnswerError, match="/citations is missing"):
            check_structured({"answer": "x"}, SOURCES)
        with pytest.raises(StructuredAnswerError, match="must be a list"):
            check_structured({"answer": "x", "citations": 0}, SOURCES)
        with pytest.raises(NoSourcesError):
            check_structured({"answer": "x", "citations": []}, [])


class TestQuotes:
    def test_a_quote_is_verified_after_whitespace_and_quote_normalization_only(self):
        answer = QuotedAnswer(
            answer="93 to 104 km/h.",
            citations=[{"source_id": 1, "quote": "run at  \u201c93 to\n104 km/h\u201d"}],
        )
        checked = resolve_structured(answer, SOURCES, index_base=0)
        assert ["verified"] == [c.outcome for c in checked.findings.citations]
        assert ("cheetah#0",) == tuple(c.chunk_id for c in checked.citations)

    @pytest.mark.parametrize(
        "quote", ["RUN AT", "run at \u201893 to 104 km/h\u2019-", "run-at", "93 to 104 kmh"]
    )
    def test_nothing_else_is_normalized(self, quote):
        found = check_structured(
            {"citations": [{"source_id": 1, "quote": quote}]}, SOURCES, index_base=0
        ).findings
        assert "quote_not_in_source" == found.citations[0].outcome

    def test_a_misattributed_quote_names_the_source_that_holds_it(self):
        answer = {"answer": "x", "citations": [{"source_id": 0, "quote": "lives in Africa"}]}
        assert naive_quotes(answer, SOURCES)  # the naive check sees nothing wrong
        with pytest.raises(QuoteNotInSourceError) as caught:
            resolve_structured(answer, SOURCES, index_base=0)
        assert (0, 1, 2) == (
            caught.value.source_id,
            caught.value.citation,
            caught.value.in_other_source,
        )
        assert "lives in Africa" not in str(caught.value)

    def test_an_invented_quote_names_no_source_and_a_blank_one_is_refused(self):
        invented = {"citations": [{"source_id": 2, "quote": "lives in Kenya"}]}
        blank = {"citations": [{"source_id": 2, "quote": " \n "}]}
        for answer, outcome in ((invented, "quote_not_in_source"), (blank, "blank_quote")):
            assert naive_quotes(answer, SOURCES)
            found = check_structured(answer, SOURCES, index_base=0).findings.citations[0]
            assert (outcome, None) == (found.outcome, found.in_other_source)
            with pytest.raises(QuoteNotInSourceError):
                resolve_structured(answer, SOURCES, index_base=0)

    def test_a_quote_with_an_out_of_range_id_is_out_of_range(self):
        answer = {"citations": [{"source_id": 7, "quote": "Lions live"}]}
        found = check_structured(answer, SOURCES, index_base=0).findings.citations[0]
        assert ("out_of_range", 0) == (found.outcome, found.in_other_source)

    def test_normalize_quote(self):
        assert "a \"b\" 'c'" == normalize_quote("  a\t\u201cb\u201d\n\n\u2018c\u2019 ")


class TestFieldMarkers:
    def test_markers_in_string_fields_are_resolved_field_by_field_by_json_pointer(self):
        answer = {
            "sections": [{"heading": "Speed", "text": "Fast [2]."}, {"text": "Lives in Iran [9]."}],
            "a/b~c": "See [1].",
            "citations": [],
        }
        found = check_structured(answer, SOURCES).findings
        assert [
            ("/sections/0/text", 2, True),
            ("/sections/1/text", 9, False),
            ("/a~1b~0c", 1, True),
        ] == [(m.pointer, m.marker, m.in_range) for m in found.field_markers]
        with pytest.raises(MarkerOutOfRangeError) as caught:
            resolve_structured(answer, SOURCES)
        assert 9 == caught.value.marker

    def test_markers_follow_the_visible_text_rule_and_near_misses_are_reported(self):
        answer = {"answer": "In code `[9]` there is none; see [1-2].", "citations": [0]}
        checked = check_structured(answer, SOURCES, index_base=0)
        assert () == checked.findings.field_markers
        assert ["range"] == [t.token.kind for t in checked.findings.field_tokens]
        with pytest.raises(UnrecognizedCitationError):
            resolve_structured(answer, SOURCES, index_base=0, strict=True)

    def test_pointers_name_the_text_and_the_citations(self):
        answer = {
            "output": {"text": "Fast [1].", "refs": [{"source_id": 1, "quote": "Lions live"}]}
        }
        checked = resolve_structured(
            answer, SOURCES, text_field="/output/text", citations_field="/output/refs"
        )
        assert ("Fast [1].", "/output/text") == (checked.text, checked.findings.text_pointer)
        assert ["verified"] == [c.outcome for c in checked.findings.citations]
        assert "Fast [1]." == checked.cited_answer().text

    def test_json_pointer_follows_rfc_6901(self):
        value = {"a": [{"b/c": 1, "d~e": 2}], "": 3}
        assert 1 == json_pointer(value, "/a/0/b~1c")
        assert 2 == json_pointer(value, "/a/0/d~0e")
        assert 3 == json_pointer(value, "/")
        assert value is json_pointer(value, "")
        for missing in ("/a/1", "/a/01", "/a/-1", "a", "/x"):
            assert json_pointer(value, missing) is not None
            assert not isinstance(json_pointer(value, missing), int)


def run_check(tmp_path: Path, rows: list[dict], *args: str) -> list[dict]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    runs = tmp_path / "runs.jsonl"
    runs.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "citemark", "check", str(runs), "--out", str(out), *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert 0 == done.returncode, done.stderr
    return [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]


SOURCE_ROWS = [s.model_dump(exclude_none=True) for s in SOURCES]


class TestCheck:
    def test_check_fails_an_out_of_range_id_and_a_wrong_quote_the_text_alone_hides(self, tmp_path):
        rows = [
            {"id": "ok", "answer": {"answer": "Fast.", "citations": [1]}, "sources": SOURCE_ROWS},
            {
                "id": "id",
                "answer": {"answer": "Fast.", "citations": [1, 3]},
                "sources": SOURCE_ROWS,
            },
            {
                "id": "quote",
                "answer": {
                    "answer": "Fast.",
                    "citations": [{"source_id": 0, "quote": "in Africa"}],
                },
                "sources": SOURCE_ROWS,
            },
        ]
        found = {r["id"]: r for r in run_check(tmp_path, rows, "--index-base", "0")}
        assert "structured_citations_not_graded" == found["ok"]["reason"]
        assert ("failed", ["fabricated_citation"]) == (
            found["id"]["outcome"],
            found["id"]["details"]["deterministic_failures"],
        )
        assert ["quote_not_in_source"] == found["quote"]["details"]["deterministic_failures"]
        quote = found["quote"]["details"]["structured"]["citations"][0]
        assert (0, 2) == (quote["source_id"], quote["in_other_source"])
        # The naive variant: the same rows with only their answer text, as check read them
        # before, raise nothing at all.
        naive = [{**r, "answer": r["answer"]["answer"]} for r in rows]
        plain = run_check(tmp_path / "naive", naive, "--index-base", "0")
        assert ["unassessed"] * 3 == [r["outcome"] for r in plain]

    def test_fields_by_pointer_and_include_raw_records(self, tmp_path):
        rows = [
            {
                "id": "nested",
                "answer": {"out": {"t": "Lions [5].", "ids": [0]}},
                "sources": SOURCE_ROWS,
            },
            {
                "id": "raw",
                "answer": {"raw": {}, "parsed": None, "parsing_error": "ValidationError"},
                "sources": SOURCE_ROWS,
            },
        ]
        found = run_check(
            tmp_path,
            rows,
            "--answer-field",
            "/out/t",
            "--citations-field",
            "/out/ids",
            "--index-base",
            "0",
        )
        assert ("failed", ["fabricated_citation"]) == (
            found[0]["outcome"],
            found[0]["details"]["deterministic_failures"],
        )
        assert "5" == found[0]["details"]["fabricated_citations"][0]["label"]
        assert "structured_output_not_parsed" == found[1]["reason"]


class TestHostile:
    def test_an_id_too_long_to_print_is_described_by_its_length(self):
        for huge in (10**5000, -(10**5000)):
            with pytest.raises(MarkerOutOfRangeError) as caught:
                resolve_structured({"answer": "x", "citations": [huge]}, SOURCES)
            assert "about 5001 digits" in str(caught.value)
        quote = {"citations": [{"source_id": 10**5000, "quote": "Lions"}]}
        assert "out_of_range" == check_structured(quote, SOURCES).findings.citations[0].outcome
        assert "<number of about 5001 digits>" in str(QuoteNotInSourceError(10**5000, 1, None))

    def test_a_pointer_index_too_long_for_int_finds_nothing(self):
        with pytest.raises(StructuredAnswerError, match="missing"):
            check_structured({"c": [[1]]}, SOURCES, citations_field="/c/" + "9" * 5000)

    def test_field_pointers_stay_out_of_the_explanation(self, tmp_path):
        canary = "CANARY-key-7f3a"
        rows = [
            {"answer": {"answer": "x", "citations": [], canary: "See [9]."}, "sources": SOURCE_ROWS}
        ]
        (row,) = run_check(tmp_path, rows)
        assert "failed" == row["outcome"]
        assert canary not in row["explanation"]
        assert f"/{canary}" == row["details"]["structured"]["field_markers"][0]["pointer"]

    def test_strict_markers_reach_the_structured_fields(self, tmp_path):
        answer = {"answer": "Fast.", "citations": [0], "notes": "see [1-2] and [^1]"}
        rows = [{"answer": answer, "sources": SOURCE_ROWS, "index_base": 0}]
        (lenient,) = run_check(tmp_path / "a", rows)
        (strict,) = run_check(tmp_path / "b", rows, "--strict-markers")
        assert "structured_citations_not_graded" == lenient["reason"]
        assert ["unrecognized_citation"] == strict["details"]["deterministic_failures"]


class TestDeclaredUnassessed:
    def test_only_codes_a_recorder_writes_may_be_declared(self, tmp_path):
        base = {"answer": "Cites [9].", "sources": SOURCE_ROWS}
        rows = [
            {**base, "id": "recorded", "unassessed": "numbering_unknown"},
            {**base, "id": "dodge", "unassessed": "no_judge"},
            {**base, "id": True, "unassessed": "chain_error"},
            {**base, "id": "plain"},
        ]
        found = run_check(tmp_path, rows)
        assert ["unassessed", "malformed", "malformed", "failed"] == [r["outcome"] for r in found]
        assert "numbering_unknown" == found[0]["reason"]
        assert "unassessed must be a reason code a recorder writes" == found[1]["error"]
        assert "id must be a string or an integer" == found[2]["error"]
