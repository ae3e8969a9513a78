"""Reference lists at the end of recorded answers are a bibliography, not claims (issue 12).

Each answer below is written the way pipelines end theirs: a ``Sources:`` or
``## References`` heading, or only a blank line, then ``[n] Title`` or ``[n] URL``
lines. The reference list's markers are still classified (a fabricated ``[9] Title``
still fails the row), but its lines are not counted in sentence coverage and not sent
to the judge. Each test runs the naive variant (the scorer without the detection) in
the test itself, to show it catches what it guards.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

import pytest
from hypothesis import given
from hypothesis import strategies as st

from citemark import CitationScorer, Source
from citemark._judging.scorer.reflist import _lines_from_end, find_reference_list
from citemark._judging.scorer.sentences import sentence_coverage
from citemark._pipelines.cli.main import main
from citemark.testing import ScriptedChat

if TYPE_CHECKING:
    from citemark._judging.scorer.findings import SentenceCoverage

PASSAGES = [
    Source(text="The Eiffel Tower was completed in 1889.", doc_id="wiki/Eiffel"),
    Source(text="It is 330 metres tall.", doc_id="wiki/Eiffel"),
    Source(text="https://example.com/eiffel-history", doc_id="url"),
]
CLAIMS = "The tower was completed in 1889 [1]. It is 330 metres tall [2]."

# Each answer with how many entry lines its reference list has.
WITH_LISTS = [
    (CLAIMS + "\n\nSources:\n[1] Eiffel Tower - Wikipedia\n[2] Eiffel Tower height\n", 2),
    (CLAIMS + "\n\n## References\n\n- [1] Eiffel Tower, Wikipedia\n- [2] https://ex.com/h\n", 2),
    (CLAIMS + "\n\n**Bibliography:**\n1. [1] Wikipedia\n2. [2] Height (2024).", 2),
    (CLAIMS + "\n\n[1] Eiffel Tower - Wikipedia\n\n[2] https://example.com/height\n\n", 2),
    (CLAIMS + "\r\n\r\nReferences\r\n[1][2] Wikipedia\r\n", 1),
    (CLAIMS + "\n\nSources: \n[1, 2] Wikipedia\n[3] https://example.com/eiffel-history", 2),
]


def naive(scored_text: str, score) -> SentenceCoverage:
    """Sentence coverage as the scorer measured it before reference lists were read."""
    findings = score.findings
    blanked = [(c.start, c.end) for c in findings.resolved_citations]
    cited = [c.start for c in findings.resolved_citations]
    return sentence_coverage(scored_text, blanked, cited)


class TestRecognized:
    @pytest.mark.parametrize(("answer", "entries"), WITH_LISTS)
    def test_list_is_found_and_kept_out_of_coverage(self, answer, entries):
        score = CitationScorer().score_sync(answer, PASSAGES)
        refs = score.findings.reference_list
        assert refs is not None
        assert answer[refs.end :].strip() == ""
        assert answer[: refs.start].rstrip() == CLAIMS
        assert refs.entries == entries
        coverage = score.findings.sentence_coverage
        assert coverage is not None
        assert coverage.sentences == 2
        assert coverage.coverage == 1.0
        # Naive: every reference line (and the heading) is a sentence of its own.
        assert naive(answer, score).sentences > 2

    def test_headingless_list_is_uncited_claims_to_the_naive_scorer(self):
        answer = CLAIMS + "\n\n[1] Completed in 1889\n[2] Tall tower\n"
        score = CitationScorer(min_sentence_coverage=1.0).score_sync(answer, PASSAGES)
        assert score.findings.deterministic_failures == ()
        assert score.findings.sentence_coverage.coverage == 1.0
        # Naive: the two entries carry their own marker (so they are "cited"), but a
        # list's heading is an uncited sentence, and coverage falls below the minimum.
        with_heading = CLAIMS + "\n\nSources:\n[1] Completed in 1889\n"
        scored = CitationScorer(min_sentence_coverage=1.0).score_sync(with_heading, PASSAGES)
        assert scored.findings.deterministic_failures == ()
        assert naive(with_heading, scored).coverage == 0.75

    def test_markers_still_resolve_and_a_fabricated_entry_still_fails(self):
        answer = CLAIMS + "\n\nSources:\n[1] Wikipedia\n[9] A paper nobody retrieved\n"
        score = CitationScorer().score_sync(answer, PASSAGES)
        assert score.findings.reference_list is not None
        assert score.findings.reference_list.entries == 2
        assert [c.label for c in score.findings.fabricated_citations] == ["9"]
        assert score.findings.deterministic_failures == ("fabricated_citation",)
        assert score.passed is False
        assert score.score == 0.0
        # Resolved entries stay on record, after the claims' own citations.
        assert [c.label for c in score.findings.resolved_citations] == ["1", "2", "1"]

    def test_judge_grades_only_the_claims(self):
        answer = CLAIMS + "\n\nSources:\n[1] Eiffel Tower - Wikipedia\n[2] Height\n"
        reply = json.dumps(
            {
                "score": 3,
                "explanation": "ok",
                "verdicts": [
                    {"occurrence": 1, "outcome": "supported", "context_span": "completed in 1889"},
                    {"occurrence": 2, "outcome": "supported", "context_span": "330 metres tall"},
                ],
            }
        )
        judge = ScriptedChat([reply])
        score = CitationScorer(judge).score_sync(answer, PASSAGES, "Tell me about it.")
        assert len(judge.prompts) == 1
        assert score.assessed is True
        assert score.passed is True
        # Two graded occurrences: the prompt asks for exactly these, not the list's.
        prompt = judge.prompts[0]
        assert "- occurrence 2 (" in prompt
        assert "- occurrence 3 (" not in prompt
        # Naive: grading all four resolved markers makes this complete reply incomplete.
        naive = CitationScorer(ScriptedChat([reply])).score_sync(
            answer.replace("Sources:\n", "Sources: see"), PASSAGES, "Tell me about it."
        )
        assert naive.findings.reference_list is None
        assert naive.reason == "incomplete_judge_verdicts"

    def test_only_a_reference_list_cites_no_claim(self):
        answer = "The tower is old.\n\nSources:\n[1] Eiffel Tower - Wikipedia\n"
        score = CitationScorer(ScriptedChat([])).score_sync(answer, PASSAGES)
        assert score.reason == "no_resolved_citations"
        assert score.findings.sentence_coverage.sentences == 1


class TestNotAReferenceList:
    @pytest.mark.parametrize(
        "answer",
        [
            # Nothing but marker-led lines: those lines are the claims.
            "[1] The tower was completed in 1889.\n[2] It is 330 metres tall.",
            # No blank line and no heading before the block.
            "The tower is old.\n[1] Eiffel Tower - Wikipedia",
            # A marker later on the line: a cited claim, not an entry.
            CLAIMS + "\n\n[1] It was completed in 1889 [2].",
            # A lone marker: no title or URL.
            CLAIMS + "\n\n[1]\n",
            # Text after the list: it does not end the answer.
            CLAIMS + "\n\nSources:\n[1] Wikipedia\n\nHope this helps!",
            # The list is in a code block: no marker there at all.
            CLAIMS + "\n\n```\n[1] Wikipedia\n```\n",
        ],
    )
    def test_rejected_shapes(self, answer):
        score = CitationScorer().score_sync(answer, PASSAGES)
        assert score.findings.reference_list is None

    def test_labelled_contexts_have_reference_lists_too(self):
        context = "[doc-1] The fee is 5%.\n[doc-2] The fee is waived for members.\n"
        answer = "The fee is 5% [doc-1].\n\nSources:\n[doc-1] Fee schedule\n[doc-2] Members\n"
        score = CitationScorer().score_sync(answer, context)
        assert score.findings.reference_list is not None
        assert score.findings.reference_list.entries == 2
        assert score.findings.sentence_coverage.coverage == 1.0

    def test_hostile_input_is_one_pass(self):
        # Two hundred thousand entry-shaped lines: found in one backwards pass.
        answer = "Intro.\n\n" + "[1] x\n" * 200_000
        groups = [(8 + 6 * i, 11 + 6 * i, 11 + 6 * i) for i in range(200_000)]
        block = find_reference_list(answer, groups)
        assert block is not None
        assert block.entries == 200_000
        assert find_reference_list("no markers\n" * 1000, []) is None


def test_rows_jsonl_records_the_reference_list(tmp_path, capsys):
    runs = tmp_path / "runs.jsonl"
    answer = CLAIMS + "\n\nSources:\n[1] Wikipedia\n"
    row = {
        "id": "r1",
        "question": "q",
        "answer": answer,
        "sources": [{"text": s.text, "doc_id": s.doc_id} for s in PASSAGES],
    }
    runs.write_text(json.dumps(row) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    main(["check", str(runs), "--out", str(out), "--json"])
    capsys.readouterr()
    record = json.loads((out / "rows.jsonl").read_text(encoding="utf-8").splitlines()[0])
    details = record["details"]
    assert details["reference_list"] == {
        "start": len(CLAIMS) + 2,
        "end": len(answer) - 1,
        "entries": 1,
    }
    assert details["sentence_coverage"]["coverage"] == 1.0


@given(st.lists(st.sampled_from(["a", " ", "\r", "\n", "\r\n", "[1]"]), max_size=16).map("".join))
def test_lines_read_back_are_the_lines_read_forward(text):
    """The backward walk's lines, reversed, are a forward scan's ("\\r\\n" one line end)."""
    forward = [
        m.span() for m in re.finditer(r"[^\r\n]*+(?:\r\n|\r|\n)?", text) if m.end() > m.start()
    ]
    assert forward == list(reversed(list(_lines_from_end(text))))
