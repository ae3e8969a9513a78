"""citemark on real pipelines' outputs (issue 12): recorded rows as pipelines write them.

The rows below are written in the shapes public research pipelines export: passages
numbered from 0, footnote citations, provider markers leaked into answers, semicolon
lists, prose references. Each behaviour is checked against the naive variant it
replaces, in the test itself, so the test is shown to catch the bug it guards.
"""

from __future__ import annotations

import json
import re

import pytest

from citemark import (
    CitationScorer,
    MarkerOutOfRangeError,
    Source,
    StreamingResolver,
    UnrecognizedCitationError,
    find_unrecognized,
    render_sources,
    resolve,
)
from citemark._pipelines.cli.main import main

PASSAGES = [
    Source(text="The Eiffel Tower was completed in 1889.", doc_id="wiki/Eiffel", chunk_id="p0"),
    Source(text="It is 330 metres tall.", doc_id="wiki/Eiffel", chunk_id="p1"),
    Source(text="Gustave Eiffel's company built it.", doc_id="wiki/Eiffel", chunk_id="p2"),
]
ZERO_BASED_ANSWER = (
    "It was completed in 1889 [0] and is 330 metres tall [1]. Eiffel's firm built it [2]."
)

# Each recorded answer with the kinds it must report, in order.
RECORDED = [
    (
        "The tower opened in 1889 (Passage ID 0) and is 330 m tall (Passage ID 1).",
        ["prose_reference"] * 2,
    ),
    (
        "It opened in 1889.[^1] It is 330 m tall.[^2]\n\n[^1]: Passage 1\n[^2]: Passage 2",
        ["footnote", "footnote", "footnote", "prose_reference", "footnote", "prose_reference"],
    ),
    ("It opened in 1889 [0; 1] and Eiffel built it [2].", ["semicolon_list"]),
    (
        "It opened in 1889 [1-3], is tall [1\u20132] and was built [ 2 ].",
        ["range", "range", "spaced"],
    ),
    ("It opened in 1889 [Source 1] and is tall [Doc 2].", ["word_prefixed", "word_prefixed"]),
    ("It opened in 1889\u30101\u3011 and is tall\uff3b2\uff3d.", ["fullwidth_bracket"] * 2),
    ("It opened in 1889 [\u0661] and is tall\u00b2.", ["non_ascii_digits", "superscript"]),
    ("It opened in 1889 &#91;1&#93; and is tall \\[2\\] and [*3*].", ["displays_as_marker"] * 3),
    (
        "Opened in 1889 \ue200cite\ue202turn0search0\ue201 and tall \u30104:0\u2020source\u3011.",
        ["openai_private_use", "openai_file_citation"],
    ),
    ("Opened in 1889 :contentReference[oaicite:0]{index=0}.", ["openai_content_reference"]),
    ("[cite_start]Opened in 1889. [cite: 1, 2]", ["gemini_cite", "gemini_cite"]),
]


def naive_resolve(text: str, sources: list[Source]) -> list[int]:
    """What a pipeline's own parser does: the integers of ``\\[(\\d+)\\]``, 1-based."""
    return [int(m) for m in re.findall(r"\[(\d+)\]", text) if 1 <= int(m) <= len(sources)]


class TestIndexBase:
    def test_zero_based_rows_resolve_to_the_passage_they_name(self):
        answer = resolve(ZERO_BASED_ANSWER, PASSAGES, index_base=0)
        assert [(c.marker, c.chunk_id) for c in answer.citations] == [
            (0, "p0"),
            (1, "p1"),
            (2, "p2"),
        ]
        # The naive 1-based reading drops [0] and shifts every other citation by one.
        naive = [PASSAGES[n - 1].chunk_id for n in naive_resolve(ZERO_BASED_ANSWER, PASSAGES)]
        assert naive != [c.chunk_id for c in answer.citations]

    def test_zero_based_range_is_0_to_n_minus_1(self):
        with pytest.raises(MarkerOutOfRangeError) as caught:
            resolve("Too far [3].", PASSAGES, index_base=0)
        assert (caught.value.marker, caught.value.index_base) == (3, 0)
        assert "0..2" in str(caught.value)

    def test_render_sources_numbers_from_the_base(self):
        assert render_sources(PASSAGES[:2], index_base=0).splitlines()[0].startswith("[0] ")
        with pytest.raises(ValueError, match="index_base"):
            render_sources(PASSAGES, index_base=2)

    def test_stream_uses_the_base(self):
        stream = StreamingResolver(PASSAGES, index_base=0)
        for piece in ["Built [", "0] tall [", "2]."]:
            stream.feed(piece)
        assert [c.marker for c in stream.finish().citations] == [0, 2]
        stream = StreamingResolver(PASSAGES, index_base=0)
        with pytest.raises(MarkerOutOfRangeError):
            for piece in ["Built [", "3", "] and more"]:
                stream.feed(piece)

    def test_scorer_flags_possible_zero_based_numbering_but_still_fails(self):
        score = CitationScorer().score_sync(ZERO_BASED_ANSWER, PASSAGES)
        assert score.outcome == "failed"
        assert score.findings.possible_zero_based_numbering is True
        assert "numbered from 0" in score.explanation
        zero = CitationScorer(index_base=0)
        # The base is an attribute, as every other setting of the scorer is.
        assert (zero.index_base, CitationScorer().index_base) == (0, 1)
        ok = zero.score_sync(ZERO_BASED_ANSWER, PASSAGES)
        assert ok.findings.fabricated_citations == ()
        assert ok.findings.possible_zero_based_numbering is False
        # A genuinely fabricated [9] is not excused as a numbering mismatch.
        bad = CitationScorer().score_sync("Built [0] and tall [9].", PASSAGES)
        assert bad.findings.possible_zero_based_numbering is False

    def test_check_index_base_flag_and_per_row_field(self, tmp_path, capsys):
        rows = tmp_path / "runs.jsonl"
        sources = [s.model_dump() for s in PASSAGES]
        lines = [
            {"id": "zero-row", "answer": ZERO_BASED_ANSWER, "sources": sources, "index_base": 0},
            {"id": "zero-unmarked", "answer": ZERO_BASED_ANSWER, "sources": sources},
            {"id": "bad-base", "answer": "x [1]", "sources": sources, "index_base": 2},
        ]
        rows.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
        out = tmp_path / "out"
        main(["check", str(rows), "--out", str(out), "--json"])
        summary = json.loads(capsys.readouterr().out)["check"]
        assert summary["deterministic_failures"] == 1
        assert summary["possible_zero_based_numbering"] == 1
        assert summary["malformed"] == 1
        main(["check", str(rows), "--out", str(out), "--json", "--index-base", "0"])
        summary = json.loads(capsys.readouterr().out)["check"]
        assert summary["deterministic_failures"] == 0


class TestUnrecognized:
    @pytest.mark.parametrize(("answer", "kinds"), RECORDED)
    def test_each_form_is_reported_with_kind_and_offsets(self, answer, kinds):
        result = resolve(answer, PASSAGES)
        assert [t.kind for t in result.unrecognized] == kinds
        for token in result.unrecognized:
            assert answer[token.start : token.end] == token.text
        assert result.text == answer  # nothing is stripped
        # The naive reading drops such tokens silently (or misreads [\u0661] as [1]).
        tokens = result.unrecognized
        assert sum(len(naive_resolve(t.text, PASSAGES)) for t in tokens) < len(tokens)

    def test_markers_and_code_are_not_reported(self):
        text = "Fine [1], [1, 2] and `arr[1-3]` and\n\n```\n[^1] [1; 2]\n```\n[PERSON_1] [x] (1)"
        assert find_unrecognized(text) == ()

    def test_scorer_and_rows_report_them(self, tmp_path):
        answer, kinds = RECORDED[1]
        score = CitationScorer().score_sync(answer, PASSAGES)
        assert [t.kind for t in score.findings.unrecognized] == kinds
        assert score.details["unrecognized"][0]["kind"] == "footnote"
        rows = tmp_path / "runs.jsonl"
        rows.write_text(
            json.dumps({"answer": answer, "sources": [s.model_dump() for s in PASSAGES]}) + "\n"
        )
        out = tmp_path / "out"
        main(["check", str(rows), "--out", str(out), "--json"])
        record = json.loads((out / "rows.jsonl").read_text().splitlines()[0])
        assert [t["kind"] for t in record["unrecognized"]] == kinds
        report = json.loads((out / "report.json").read_text())["check"]
        assert report["rows_with_unrecognized"] == 1
        assert report["unrecognized"] == {"footnote": 4, "prose_reference": 2}

    def test_strict_rejects_naming_kind_and_offset_never_text(self):
        answer = "Opened in 1889 [1-2] CANARY-TEXT."
        with pytest.raises(UnrecognizedCitationError) as caught:
            resolve(answer, PASSAGES, strict=True)
        assert (caught.value.kind, caught.value.start) == ("range", 15)
        assert "CANARY" not in str(caught.value)
        assert "[1-2]" not in str(caught.value)
        stream = StreamingResolver(PASSAGES, strict=True)
        for piece in ["Opened [1", "-", "2] in 1889."]:  # split across chunks
            stream.feed(piece)
        with pytest.raises(UnrecognizedCitationError):
            stream.finish()
        score = CitationScorer(strict_markers=True).score_sync(answer, PASSAGES)
        assert score.findings.deterministic_failures == ("unrecognized_citation",)
        assert CitationScorer().score_sync(answer, PASSAGES).outcome != "failed"

    def test_allow_ranges_expands_bounded(self):
        answer = resolve("Facts [1-3].", PASSAGES, allow_ranges=True)
        assert [c.marker for c in answer.citations] == [1, 2, 3]
        assert answer.unrecognized == ()
        with pytest.raises(MarkerOutOfRangeError) as caught:
            resolve("Facts [1-99999999].", PASSAGES, allow_ranges=True)
        assert caught.value.marker == 99999999
        with pytest.raises(MarkerOutOfRangeError):
            resolve("Facts [0-2].", PASSAGES, allow_ranges=True)
        assert [
            c.marker
            for c in resolve("F [0-2].", PASSAGES, index_base=0, allow_ranges=True).citations
        ] == [0, 1, 2]

    def test_the_detector_never_raises_and_stays_in_text(self):
        hostile = (
            "[" * 5000 + "(source " * 2000 + "\ue200" * 3000 + "&#91;" * 2000 + "<https://" * 1000
        )
        for token in find_unrecognized(hostile):
            assert 0 <= token.start < token.end <= len(hostile)


class TestAdaptersIndexBase:
    def test_langchain_output_parser_reads_zero_based_prompts(self):
        from langchain_core.documents import Document

        from langchain_citemark import CitationOutputParser

        docs = [Document(page_content=s.text, metadata={"source": s.doc_id}) for s in PASSAGES]
        parsed = CitationOutputParser(documents=docs, index_base=0).parse(ZERO_BASED_ANSWER)
        assert [c.marker for c in parsed.citations] == [0, 1, 2]
        with pytest.raises(MarkerOutOfRangeError):  # the default stays 1-based
            CitationOutputParser(documents=docs).parse(ZERO_BASED_ANSWER)

    def test_llama_index_evaluator_reads_zero_based_contexts(self):
        from llama_index.evaluation.citemark import CitationEvaluator

        contexts = [s.text for s in PASSAGES]
        zero = CitationEvaluator(index_base=0).evaluate(
            query="q", response=ZERO_BASED_ANSWER, contexts=contexts
        )
        one = CitationEvaluator().evaluate(query="q", response=ZERO_BASED_ANSWER, contexts=contexts)
        assert zero.passing is not False
        assert one.passing is False


class TestRowsAsUsersWriteThem:
    def test_mappings_score_like_tuples(self):
        scorer = CitationScorer()
        rows = [
            {"response": "Built by Eiffel's firm [3].", "sources": PASSAGES, "question": "Who?"},
            {"answer": "Built by Eiffel's firm [3].", "sources": PASSAGES},
            {"answer": "Opened [1] [doc-9].", "context": "[doc-1] Opened in 1889.\n"},
            {"answer": ZERO_BASED_ANSWER, "sources": PASSAGES, "index_base": 0},
            ("Built by Eiffel's firm [3].", PASSAGES),
        ]
        scores = scorer.score_many_sync(rows) if hasattr(scorer, "score_many_sync") else None
        if scores is None:
            import asyncio

            scores = asyncio.run(scorer.score_many(rows))
        assert [s.reason for s in scores] == ["no_judge", "no_judge", None, "no_judge", "no_judge"]
        assert scores[2].findings.deterministic_failures == ("fabricated_citation",)

    def test_unknown_shape_names_the_missing_field(self):
        import asyncio

        scores = asyncio.run(
            CitationScorer().score_many(
                [{"answer": "Opened [1].", "sources": PASSAGES}, {"answer": "x"}]
            )
        )
        assert scores[1].reason == "scoring_error"
        assert "'sources' (or 'context')" in scores[1].explanation

    def test_a_batch_of_only_unusable_rows_is_loud(self):
        import asyncio

        from citemark import NoRowsError

        with pytest.raises(NoRowsError, match="'response'"):
            asyncio.run(CitationScorer().score_many([{"text": "a", "docs": []}] * 3))
        # The naive behaviour (a column of scoring_error) is what the check replaces.
        assert asyncio.run(CitationScorer().score_many([])) == []


class TestUnverifiableSourcesAndAbstentions:
    def test_url_only_and_blank_sources_are_flagged_and_never_graded(self):
        import json as _json

        from citemark.testing import ScriptedChat

        sources = [
            Source(text="https://example.com/eiffel", doc_id="url"),
            Source(text="   ", doc_id="blank"),
            Source(text="It is 330 metres tall.", doc_id="text"),
        ]
        reply = _json.dumps(
            {
                "score": 3,
                "explanation": "ok",
                "verdicts": [
                    {"occurrence": 1, "outcome": "supported", "context_span": "330 metres tall"}
                ],
            }
        )
        judge = ScriptedChat([reply])
        score = CitationScorer(judge).score_sync("Tall [3], see [1].", sources, "How tall?")
        assert score.findings.unverifiable_sources == ("2", "1")
        assert len(judge.prompts) == 1
        assert score.passed is True  # only [3] was graded
        only_url = CitationScorer(ScriptedChat([])).score_sync("See [1].", sources)
        assert only_url.reason == "unverifiable_sources_only"
        # The naive scorer would grade [1] against a URL: the judge is never called here.

    def test_min_coverage_never_fails_an_honest_abstention(self):
        scorer = CitationScorer(min_sentence_coverage=0.5)
        abstain = scorer.score_sync("The sources do not say when it opened.", PASSAGES)
        assert abstain.findings.deterministic_failures == ()
        hidden = scorer.score_sync("It opened in 1889.[^1] It is tall.", PASSAGES)
        assert hidden.findings.deterministic_failures == ("sentence_coverage_below_minimum",)
        uncited = scorer.score_sync(
            "It opened in 1889 [1]. It is tall. It is old. It is iron.", PASSAGES
        )
        assert uncited.findings.deterministic_failures == ("sentence_coverage_below_minimum",)
