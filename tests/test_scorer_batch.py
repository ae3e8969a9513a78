"""The citation scorer over many rows: batches, reports, JSON safety and what needs no judge.

Covers SPEC §3.9's batch and reporting half: `CitationScorer.score_many` keeps input
order, bounds concurrency and records a failing row instead of raising it;
`coverage_report` aggregates outcomes and reasons; every un-assessed path is
JSON-safe; the judge is never called for a row that is un-assessed before the call;
and without a judge every deterministic finding is still reported.
"""

from __future__ import annotations

import asyncio
import json
import re

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scorer_helpers import CONTEXT, GOOD, SPAN, json_safe, kinds, passing, reply, score, supported

from citemark import ChatError, CitationScore, CitationScorer, Completion, ScoreRow, Source
from citemark._judging.scorer.findings import ScoreFindings
from citemark._judging.scorer.labels import DEFAULT_CITATION_PATTERN
from citemark._judging.scorer.prompt import (
    CANDIDATE_PAIRS,
    annotate,
    choose_delimiters,
    remove_tags,
)
from citemark.evaluation import coverage_report
from citemark.replay import ReplayChat
from citemark.testing import ScriptedChat


class EchoChat:
    """A judge that passes every row and echoes the question as its explanation.

    Each reply takes longer for earlier rows, so rows finish in reverse order, and the
    chat records how many calls were in flight at once.
    """

    provider = "fake"
    model_name = "echo"

    def __init__(self, rows: int) -> None:
        self.rows = rows
        self.in_flight = 0
        self.peak = 0
        self.calls = 0

    async def complete(self, prompt: str) -> str:
        self.calls += 1
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        question = re.search(r"Question: (q[0-9]+)", prompt)
        assert question is not None
        index = int(question.group(1)[1:])
        await asyncio.sleep(0.001 * (self.rows - index))
        self.in_flight -= 1
        return reply(3, supported(1, SPAN["doc-1"]), explanation=question.group(1))


class TestScoreMany:
    def test_results_come_back_in_input_order(self):
        """Rows finishing in reverse order are still returned in the order they were given."""
        chat = EchoChat(40)
        rows = [ScoreRow(GOOD, CONTEXT, f"q{i}") for i in range(40)]
        results = asyncio.run(CitationScorer(chat).score_many(rows, concurrency=8))
        assert [f"q{i}" for i in range(40)] == [r.explanation for r in results]

    def test_concurrency_is_bounded(self):
        """No more than `concurrency` judge calls are ever in flight."""
        chat = EchoChat(30)
        rows = [(GOOD, CONTEXT, f"q{i}") for i in range(30)]
        asyncio.run(CitationScorer(chat).score_many(rows, concurrency=5))
        assert (5, 30) == (chat.peak, chat.calls)

    def test_exactly_one_call_per_assessed_row(self):
        """Each assessed row costs one judge call, and un-assessed-before-the-call rows none."""
        chat = ScriptedChat([passing("doc-1")] * 3)
        rows = [(GOOD, CONTEXT), ("No citation.", CONTEXT), (GOOD, CONTEXT), (GOOD, "")]
        rows.append((GOOD, CONTEXT))
        results = asyncio.run(CitationScorer(chat).score_many(rows))
        assert (3, [True, False, True, False, True]) == (
            len(chat.prompts),
            [r.assessed for r in results],
        )

    def test_failing_rows_are_recorded_and_never_raised(self):
        """A ChatError, a broken row and an exhausted script each become that row's result."""
        error = ChatError("timed out reading the response", provider="p", model="m")
        chat = ScriptedChat([passing("doc-1"), error])
        rows: list[object] = [
            (GOOD, CONTEXT),
            (GOOD, CONTEXT),
            ("only one field",),
            (GOOD, CONTEXT),
        ]
        rows.append((GOOD, 42))
        results = asyncio.run(CitationScorer(chat).score_many(rows, concurrency=1))  # type: ignore[arg-type]
        assert [None, "judge_call_failed", "scoring_error", "scoring_error", "scoring_error"] == [
            r.reason for r in results
        ]
        assert {"error": "ScriptExhaustedError"} == results[3].details
        failure = results[1].details["judge_error"]
        assert ("transport", "timed out reading the response") == (
            failure["reason"],
            failure["detail"],
        )

    def test_error_rows_name_only_the_exception_type(self):
        """An error row's explanation names the exception's type, never its message."""
        row = ("Fee [doc-1] SECRET-CANARY.", [Source(text="a", doc_id="a"), "SECRET-CANARY"])
        (result,) = asyncio.run(CitationScorer().score_many([row]))  # type: ignore[list-item]
        assert "Not assessed: scoring this row raised an error (TypeError)." == result.explanation
        assert "SECRET-CANARY" not in json.dumps(result.details)

    def test_rows_are_read_lazily_from_an_iterator(self):
        """A generator is consumed as workers free up; every row is scored once."""
        seen: list[int] = []

        def rows():
            for i in range(7):
                seen.append(i)
                yield (GOOD, CONTEXT, f"q{i}")

        results = asyncio.run(CitationScorer().score_many(rows(), concurrency=2))
        assert (list(range(7)), 7) == (seen, len(results))

    def test_a_failing_iterable_raises_after_the_rows_in_flight(self):
        """An error from the rows iterable itself is raised once the rows already taken finish."""
        chat = EchoChat(3)
        scorer = CitationScorer(chat)

        def rows():
            yield (GOOD, CONTEXT, "q0")
            yield (GOOD, CONTEXT, "q1")
            msg = "the source of rows broke"
            raise OSError(msg)

        with pytest.raises(OSError, match=r"^the source of rows broke$"):
            asyncio.run(scorer.score_many(rows(), concurrency=4))
        assert (2, 0) == (chat.calls, chat.in_flight)

    @pytest.mark.parametrize("concurrency", [0, -1, True, 2.5])
    def test_concurrency_must_be_a_positive_integer(self, concurrency):
        """Zero, negatives, booleans and floats are refused before any row is read."""
        with pytest.raises(ValueError, match=r"^concurrency must be a positive integer$"):
            asyncio.run(CitationScorer().score_many([], concurrency=concurrency))

    def test_empty_batch_gives_an_empty_list(self):
        """No rows, no results."""
        assert [] == asyncio.run(CitationScorer().score_many([]))


class TestCanary:
    """SPEC §1 and §8: untrusted text never enters an exception message."""

    CANARY = "CANARY-scorer-5e1f93"

    def test_canary_stays_out_of_every_exception_message(self):
        """Refused inputs and refused details raise messages free of the text they refused."""
        canary = self.CANARY
        attempts = [
            lambda: CitationScorer().score_sync(
                canary, [Source(text=canary, doc_id=canary), canary]
            ),  # type: ignore[list-item]
            lambda: CitationScorer().score_sync(canary, {canary: canary}),  # type: ignore[arg-type]
            lambda: CitationScorer(citation_pattern="[" + canary),
            lambda: CitationScore(
                assessed=False,
                passed=None,
                score=None,
                reason=canary,
                explanation=canary,
                details={canary: [float("nan"), canary]},
            ),
        ]
        for attempt in attempts:
            with pytest.raises((TypeError, ValueError)) as caught:
                attempt()
            assert canary not in str(caught.value)

    def test_canary_reaches_no_log_record(self, caplog):
        """Scoring a row with the canary everywhere writes no log record holding it."""
        canary = self.CANARY
        body = reply(3, supported(1, canary), explanation=canary)
        with caplog.at_level("DEBUG"):
            score(f"{canary} [doc-1].", f"[doc-1] {canary}\n", [body], question=canary)
        assert all(canary not in record.getMessage() for record in caplog.records)


class TestJudgeNotCalled:
    """SPEC §3.9: no bill for a row un-assessed (or failed) before the call."""

    CASES = (
        ("empty_context", GOOD, ""),
        ("no_resolved_citations", "No citation at all.", CONTEXT),
        ("unsupported_label_style", "Fee [7].", "[1] The late fee is 5%.\n"),
        ("partial_citation_coverage", "Fee [doc-1]. Other [doc-4].", CONTEXT + "[doc-4]\n"),
        (None, "Courier [doc-99].", CONTEXT),
    )

    @pytest.mark.parametrize(("reason", "response", "context"), CASES)
    def test_judge_is_never_called_for_a_row_decided_before_the_call(
        self, reason, response, context
    ):
        """The ScriptedChat records no prompt for any row decided in code."""
        result, chat = score(response, context, [passing("doc-1")])
        assert (reason, []) == (result.reason, chat.prompts)


class TestWithoutJudge:
    """SPEC §3.9: without a judge every deterministic finding is still reported."""

    def test_without_a_judge_resolved_rows_are_no_judge(self):
        """A clean row without a judge is un-assessed with no_judge, its findings intact."""
        result, _ = score(f"{GOOD} arr[0].", judge=False)
        assert ("no_judge", ["doc-1"], ["0"]) == (
            result.reason,
            kinds(result)["resolved"],
            kinds(result)["ignored"],
        )

    def test_without_a_judge_a_fabrication_still_fails(self):
        """A fabrication fails the row with score 0 even with no judge configured."""
        result, _ = score("Fee [doc-1]. Courier [doc-99].", judge=False)
        assert (True, False, 0.0, ["doc-99"]) == (
            result.assessed,
            result.passed,
            result.score,
            kinds(result)["fabricated"],
        )

    def test_without_a_judge_ambiguous_markers_are_reported(self):
        """An ambiguous marker is reported and makes the row partial."""
        result, _ = score("Fee [doc-1]. Other [doc-4].", CONTEXT + "[doc-4]\n", judge=False)
        assert ("partial_citation_coverage", ["doc-4"]) == (
            result.reason,
            kinds(result)["ambiguous"],
        )

    def test_judge_identity_is_recorded_when_a_judge_is_set(self):
        """details.judge names provider, model and the prompt's SHA-256; None without a judge."""
        with_judge, _ = score(GOOD, replies=[passing("doc-1")])
        without, _ = score(GOOD, judge=False)
        assert (
            {
                "provider": "scripted",
                "model": "scripted-chat",
                "prompt_sha256": CitationScorer().prompt_sha256,
            },
            None,
        ) == (with_judge.details["judge"], without.details["judge"])


class TestSentenceCoverage:
    """SPEC §3.9: the share of sentences carrying a resolved citation, reported as information."""

    def test_sentence_coverage_lists_the_uncited_sentences(self):
        """Coverage counts sentences with a resolved citation and lists the others."""
        response = "The late fee is 5% [doc-1]. Fees double yearly. Notices go by mail [doc-3]."
        result, _ = score(response, judge=False)
        assert {
            "sentences": 3,
            "cited_sentences": 2,
            "coverage": 2 / 3,
            "uncited_sentences": ["Fees double yearly."],
        } == result.details["sentence_coverage"]

    def test_marker_after_the_full_stop_belongs_to_the_sentence_before(self):
        """'Claim. [doc-1] Next claim.' credits the first sentence, not the second."""
        result, _ = score("The late fee is 5%. [doc-1] Fees double yearly.", judge=False)
        assert ["Fees double yearly."] == result.details["sentence_coverage"]["uncited_sentences"]

    def test_code_and_lone_markers_are_not_sentences(self):
        """A fenced block and a line holding only a marker are not counted as sentences."""
        response = "The late fee is 5% [doc-1].\n\n```\nx = 1. y = 2.\n```\n[doc-1]\n"
        result, _ = score(response, judge=False)
        assert (1, 1) == (
            result.details["sentence_coverage"]["sentences"],
            result.details["sentence_coverage"]["cited_sentences"],
        )

    def test_coverage_is_information_unless_a_minimum_is_asked_for(self):
        """Low coverage alone never fails a row; with min_sentence_coverage it fails like a fabrication."""
        response = "The late fee is 5% [doc-1]. Fees double yearly. Rates vary."
        plain, _ = score(response, replies=[passing("doc-1")])
        gated, chat = score(response, replies=[passing("doc-1")], min_sentence_coverage=0.5)
        assert (True, False, 0.0) == (plain.passed, gated.passed, gated.score)
        assert ["sentence_coverage_below_minimum"] == gated.details["deterministic_failures"]
        assert gated.explanation.startswith(
            "Failed: 1 of 3 sentences carry a citation, below the minimum share of 50%."
        )
        assert 1 == len(chat.prompts)

    def test_coverage_meeting_the_minimum_passes(self):
        """A row at or above the minimum is graded normally."""
        result, _ = score(GOOD, replies=[passing("doc-1")], min_sentence_coverage=1.0)
        assert True is result.passed


class TestJsonSafety:
    """Review round 3: every un-assessed path serializes under json.dumps(allow_nan=False)."""

    def unassessed_rows(self) -> dict[str, CitationScore]:
        chat_error = ChatError("could not connect", provider="p", model="m")
        cases = {
            "empty_context": (GOOD, "", None),
            "no_resolved_citations": ("Nothing cited.", CONTEXT, None),
            "unsupported_label_style": ("Fee [7].", "[1] The late fee is 5%.\n", None),
            "partial_citation_coverage": ("Fee [doc-4].", CONTEXT + "[doc-4]\n", None),
            "no_judge": (GOOD, CONTEXT, "no judge"),
            "unverifiable_sources_only": (
                "Fee [doc-1].",
                "[doc-1] https://example.com/fees\n",
                None,
            ),
            "judge_call_failed": (GOOD, CONTEXT, chat_error),
            "invalid_judge_output": (GOOD, CONTEXT, '{"score": NaN}'),
            "incomplete_judge_verdicts": (GOOD, CONTEXT, reply(3)),
            "contradictory_judge_verdicts": (
                GOOD,
                CONTEXT,
                reply(3, supported(1, SPAN["doc-1"]), supported(1, SPAN["doc-1"])),
            ),
            "judge_score_contradicts_verdicts": (
                GOOD,
                CONTEXT,
                reply(0, supported(1, SPAN["doc-1"])),
            ),
            "judge_reply_truncated": (GOOD, CONTEXT, Completion('{"score": 3', "length")),
        }
        rows = {}
        for reason, (response, context, answer) in cases.items():
            rows[reason] = score(
                response, context, [answer] if answer else [], judge=answer != "no judge"
            )[0]
        (rows["scoring_error"],) = asyncio.run(CitationScorer().score_many([("x", 1)]))  # type: ignore[list-item]
        replay = ReplayChat([], provider="p", model="m")
        rows["judge_reply_not_recorded"] = CitationScorer(replay).score_sync(GOOD, CONTEXT)
        return rows

    def test_every_unassessed_path_is_json_safe(self):
        """Each reachable reason code yields a row whose details pass allow_nan=False."""
        rows = self.unassessed_rows()
        # occurrence_tagging_failed guards an invariant the delimiter search makes
        # unreachable; it is documented, and checked through coverage_report below.
        assert set(CitationScorer.REASONS) - {"occurrence_tagging_failed"} == set(rows)
        for reason, row in rows.items():
            assert (False, reason) == (row.assessed, row.reason)
            json_safe(row)

    def test_rejected_non_finite_score_is_stored_as_text(self):
        """A rejected score lands in details as JSON text; no float NaN ever reaches details."""
        details = reply("Infinity", supported(1, SPAN["doc-1"]))
        result, _ = score(GOOD, replies=[details])
        assert '"Infinity"' == result.details["rejected_raw_score"]
        json_safe(result)

    def test_citation_score_refuses_details_that_are_not_json_safe(self):
        """A NaN, a tuple key or an object in the findings is refused at construction."""
        coverage = {"sentences": 1, "cited_sentences": 0, "uncited_sentences": ()}
        for bad in (
            {"sentence_coverage": {**coverage, "coverage": float("nan")}},
            {"verdicts": ({(1, 2): "a"},)},
            {"verdicts": ({"x": [object()]},)},
        ):
            with pytest.raises(pydantic.ValidationError):
                ScoreFindings.model_validate(bad)

    def test_details_are_only_ever_derived_from_the_findings(self):
        """A score takes typed findings; a details dict given directly is refused."""
        fields = {
            "assessed": False,
            "passed": None,
            "score": None,
            "reason": "no_judge",
            "explanation": "",
        }
        with pytest.raises(pydantic.ValidationError, match=r"extra_forbidden"):
            CitationScore.model_validate({**fields, "details": {"x": float("nan")}})
        built = CitationScore.model_validate({**fields, "findings": ScoreFindings(error="E")})
        assert {"error": "E"} == built.details


class TestCitationScore:
    """The result model keeps assessed and un-assessed rows apart."""

    @pytest.mark.parametrize(
        "fields",
        [
            {"assessed": True, "passed": None, "score": 1.0, "reason": None},
            {"assessed": True, "passed": True, "score": 1.0, "reason": "no_judge"},
            {"assessed": True, "passed": True, "score": 1.5, "reason": None},
            {"assessed": False, "passed": None, "score": 0.0, "reason": "no_judge"},
            {"assessed": False, "passed": None, "score": None, "reason": None},
        ],
        ids=[
            "assessed-no-passed",
            "assessed-reason",
            "score-range",
            "unassessed-score",
            "no-reason",
        ],
    )
    def test_incoherent_scores_are_refused(self, fields):
        """An un-assessed row never carries a score, and an assessed row never a reason."""
        with pytest.raises(ValueError, match=r"assessed|score must lie"):
            CitationScore(explanation="", **fields)

    def test_scores_are_frozen(self):
        """A result cannot be changed after the fact."""
        result, _ = score(GOOD, judge=False)
        with pytest.raises(ValueError, match="frozen"):
            result.passed = True  # type: ignore[misc]


class TestCoverageReport:
    """SPEC §3.9: outcomes and reasons aggregated, each reason with its sentence."""

    def test_coverage_report_counts_outcomes_reasons_and_citations(self):
        """Passed, failed and un-assessed rows are counted, and citations summed by class."""
        chat = ScriptedChat([passing("doc-1")])
        scorer = CitationScorer(chat)
        rows = [
            (GOOD, CONTEXT),
            ("Courier [doc-99].", CONTEXT),
            ("Nothing cited.", CONTEXT),
            ("Fee [doc-4] arr[0].", CONTEXT + "[doc-4]\n"),
        ]
        report = coverage_report(asyncio.run(scorer.score_many(rows, concurrency=1)))
        assert {
            "rows": 4,
            "outcomes": {"passed": 1, "failed": 1, "unassessed": 2},
            "assessed_share": 0.5,
            "reasons": {
                "no_resolved_citations": {
                    "count": 1,
                    "description": "the response has no citation that names a source",
                },
                "partial_citation_coverage": {
                    "count": 1,
                    "description": "only some of the response's citations could be resolved",
                },
            },
            "citations": {"resolved": 1, "fabricated": 1, "ambiguous": 1, "ignored": 1},
            "deterministic_failures": 1,
        } == report
        json.dumps(report, allow_nan=False)

    @pytest.mark.parametrize(
        ("reason", "sentence"),
        [
            ("unsupported_label_style", "source labels are not distinguishable from ordinary text"),
            ("invalid_judge_output", "the judge returned unusable output"),
            ("incomplete_judge_verdicts", "the judge did not assess every citation"),
            (
                "partial_citation_coverage",
                "only some of the response's citations could be resolved",
            ),
            (
                "contradictory_judge_verdicts",
                "the judge returned more than one verdict for a citation",
            ),
            ("judge_score_contradicts_verdicts", "the judge's score contradicts its own verdicts"),
            ("occurrence_tagging_failed", "the response could not be tagged for the judge"),
        ],
    )
    def test_coverage_report_describes_each_reason(self, reason, sentence):
        """Each reason code is reported with its human sentence."""
        row = CitationScore(assessed=False, passed=None, score=None, reason=reason, explanation="")
        assert {reason: {"count": 1, "description": sentence}} == coverage_report([row])["reasons"]

    def test_every_reason_has_a_sentence(self):
        """SPEC §3.9's ten codes are all registered, each with a sentence."""
        spec_codes = {
            "empty_context",
            "no_resolved_citations",
            "unsupported_label_style",
            "partial_citation_coverage",
            "no_judge",
            "judge_call_failed",
            "invalid_judge_output",
            "incomplete_judge_verdicts",
            "contradictory_judge_verdicts",
            "judge_score_contradicts_verdicts",
        }
        assert spec_codes <= set(CitationScorer.REASONS)
        assert all(CitationScorer.REASONS.values())

    def test_empty_report(self):
        """No rows: zero counts and no share."""
        report = coverage_report([])
        assert (0, None, {}) == (report["rows"], report["assessed_share"], report["reasons"])


# --- properties --------------------------------------------------------------------

_PIECES = st.sampled_from([*"ab -._[]()`~\n\t12,:\u27e6\u27e7", "doc-1", "doc-9", "[doc-1] "])
_TEXT = st.lists(_PIECES, max_size=40).map("".join)


class TestProperties:
    """SPEC §8: annotation round-trips, scoring never raises, details stay JSON-safe."""

    @given(st.text(max_size=200), st.lists(st.integers(min_value=0, max_value=200), max_size=6))
    @settings(max_examples=300, deadline=None)
    def test_tag_annotation_round_trips(self, text, positions):
        """Removing the tags from an annotated text gives the text back, whatever it holds."""
        places = sorted(min(p, len(text)) for p in positions)
        delimiters = choose_delimiters(text)
        annotated = annotate(text, places, *delimiters)
        assert (text, len(places)) == remove_tags(annotated, *delimiters)

    @given(st.text(max_size=200))
    @settings(max_examples=200, deadline=None)
    def test_tags_add_no_citation(self, text):
        """Inserting tags never creates a match of the default citation pattern."""
        pattern = re.compile(DEFAULT_CITATION_PATTERN)
        delimiters = choose_delimiters(text)
        places = [m.end() for m in pattern.finditer(text)]
        annotated = annotate(text, places, *delimiters)
        assert len(places) == len(pattern.findall(annotated))
        assert all(a not in "[]" and b not in "[]" for a, b in CANDIDATE_PAIRS)

    @given(_TEXT, _TEXT)
    @settings(max_examples=300, deadline=None)
    def test_scoring_never_raises_and_details_are_json_safe(self, response, context):
        """Any response against any context gives a result whose details are JSON-safe."""
        result = CitationScorer().score_sync(response, context)
        json.dumps(result.details, allow_nan=False)
        assert result.assessed == (result.score is not None)
