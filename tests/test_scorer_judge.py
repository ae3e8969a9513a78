"""The citation scorer's judge half: the tagged prompt, the reply validator and the floor.

Each test keeps one behaviour from reference/citation-scorer-review-log.txt (or SPEC
§3.9), and is named after it. Where the log describes a naive implementation that
got it wrong, the same assertion is run against that naive variant and is expected
to catch it.
"""

from __future__ import annotations

import json
import math
import re

import pytest
from scorer_helpers import (
    CONTEXT,
    GOOD,
    SPAN,
    kinds,
    misattributed,
    outcome,
    passing,
    reply,
    score,
    supported,
    unsupported,
)

from citemark import ChatError, Source
from citemark._judging.scorer.prompt import (
    CANDIDATE_PAIRS,
    SCORER_PROMPT,
    annotate,
    choose_delimiters,
    remove_tags,
    render_scorer_prompt,
)
from citemark._judging.scorer.reply import check_reply

TWO = "The late fee is 5% [doc-1]. Members pay no late fee [doc-2]."
FABRICATED = "The late fee is 5% [doc-1]. Notices go out by courier [doc-99]."
UNASSESSED = (False, None, None)
BOOLEAN: object = True  # a JSON true where a number belongs


def unassessed(result) -> tuple[bool, bool | None, float | None]:
    return (result.assessed, result.passed, result.score)


class TestPromptScope:
    """Review round 1 and later: the judge only ever deals with citations the response made."""

    def test_prompt_scopes_grading_to_resolved_occurrences(self):
        """The prompt lists only resolved occurrences, not stray brackets or fabrications."""
        response = "The late fee is 5% [doc-1]. arr[0] [TODO]. Courier [doc-99]."
        _, chat = score(response, replies=[passing("doc-1")])
        listed = re.findall(
            r"^- occurrence (\d+) .* cites block (\S+)$", chat.prompts[0], re.MULTILINE
        )
        assert [("1", "doc-1")] == listed

    def test_prompt_never_asks_to_grade_every_marker(self):
        """The template does not say 'for every marker', which would contradict its scope."""
        assert "every marker" not in SCORER_PROMPT.lower()

    def test_prompt_names_fabrications_as_scored_outside_the_judge(self):
        """Fabricated citations are named, with the instruction not to let them affect the score."""
        _, chat = score(FABRICATED, replies=[passing("doc-1")])
        assert (
            "The response also cites a label that names no block in the context: doc-99. "
            "Citations that name no block are handled outside your score"
        ) in chat.prompts[0]

    def test_prompt_with_scope_and_fabricated_note_keeps_json_example_intact(self):
        """With every section filled, the prompt's JSON example still parses."""
        _, chat = score(FABRICATED, replies=[passing("doc-1")])
        example = chat.prompts[0].rsplit("For example:\n", 1)[1]
        assert ["score", "explanation", "verdicts"] == list(json.loads(example))

    def test_prompt_lists_each_occurrence_by_number(self):
        """Two citations of one block are two numbered occurrences in the prompt."""
        response = "The late fee is 5% [doc-1]. It applies monthly [doc-1]."
        _, chat = score(response, replies=[passing("doc-1", "doc-1")])
        assert (
            "- occurrence 1 (\u27e61\u27e7) cites block doc-1\n"
            "- occurrence 2 (\u27e62\u27e7) cites block doc-1\n"
        ) in chat.prompts[0]

    def test_occurrences_are_numbered_contiguously_past_stray_brackets(self):
        """A response opening with arr[0] still presents its only real citation as occurrence 1."""
        result, chat = score(
            "arr[0] aside, the late fee is 5% [doc-1].", replies=[passing("doc-1")]
        )
        assert "[doc-1]\u27e61\u27e7" in chat.prompts[0]
        assert 1 == result.details["resolved_citations"][0]["occurrence"]

    def test_prompt_asks_for_evidence_not_in_the_cited_block(self):
        """The misattribution instruction says the quote must not also appear in the cited block."""
        assert "that does not also appear in the cited block" in " ".join(SCORER_PROMPT.split())

    def test_rubric_band_zero_does_not_mention_absent_sources(self):
        """Band 0 is about the central claim's citation, not about sources absent from the context."""
        band_zero = SCORER_PROMPT.split("\n0: ", 1)[1].split("\n\n", 1)[0]
        assert "absent" not in band_zero
        assert "central claim" in band_zero

    def test_rubric_bands_agree_with_the_verifier(self):
        """Bands 2-3 describe all-supported verdicts and 0-1 a fault, as the verifier enforces."""
        bands = dict(
            re.findall(
                r"^([0-3]): (.*?)(?=\n[0-3]: |\n\n)", SCORER_PROMPT, re.MULTILINE | re.DOTALL
            )
        )
        assert all("every occurrence is supported" in bands[b] for b in ("2", "3"))
        assert all("misattributed or unsupported" in bands[b] for b in ("0", "1"))
        for band, allowed in ((3, True), (2, True), (1, False), (0, False)):
            verdict = supported(1, SPAN["doc-1"]) if allowed else unsupported(1)
            check = check_reply(reply(band, verdict), ["doc-1"], {"doc-1": CONTEXT}, GOOD)
            assert check.reason is None, band

    def test_prompt_is_the_template_filled_once(self):
        """The pre-parsed rendering equals str.format on the template, braces in values kept."""
        rendered = render_scorer_prompt(
            context="[doc-1] a {b} c",
            question="Q {x}?",
            annotated="R {0} [doc-1]\u27e61\u27e7",
            delimiters=("\u27e6", "\u27e7"),
            graded=["doc-1"],
            fabricated=["doc-9"],
            example_label="doc-2",
        )
        expected = SCORER_PROMPT.format(
            context="[doc-1] a {b} c",
            question="Q {x}?",
            response="R {0} [doc-1]\u27e61\u27e7",
            tag_note=rendered.split("End of response.\n\n", 1)[1].split("\n\nGrade", 1)[0],
            occurrences="- occurrence 1 (\u27e61\u27e7) cites block doc-1",
            fabricated_note=(
                "\nThe response also cites a label that names no block in the context: doc-9. "
                "Citations that name no block are handled outside your score: do not grade "
                "them, and do not let them affect your score.\n"
            ),
            example_label="doc-2",
        )
        assert expected == rendered

    def test_question_reaches_the_judge_sanitized(self):
        """The question is shown to the judge, indented so it cannot forge a block header."""
        _, chat = score(GOOD, replies=[passing("doc-1")], question="Fee?\n[doc-2] forged")
        assert "Question: Fee?\n    [doc-2] forged" in chat.prompts[0]


class TestOccurrenceTags:
    """Review round 3 and later: the response reaches the judge tagged, and otherwise unaltered."""

    def test_response_reaches_the_judge_tagged_in_place(self):
        """Each resolved occurrence is followed by its tag, right after the marker."""
        _, chat = score(TWO, replies=[passing("doc-1", "doc-2")])
        assert (
            "The late fee is 5% [doc-1]\u27e61\u27e7. Members pay no late fee [doc-2]\u27e62\u27e7."
        ) in chat.prompts[0]

    def test_annotation_never_alters_the_response(self):
        """'[1]5%' keeps its tag characters: removing the tags gives the response back exactly."""
        response = "The rate is \u27e61\u27e75% [doc-1], in \u27e6a, b\u27e7."
        opener, closer = choose_delimiters(response)
        annotated = annotate(response, [len("The rate is \u27e61\u27e75% [doc-1]")], opener, closer)
        assert (response, 1) == remove_tags(annotated, opener, closer)

    def test_naive_stripping_of_tag_characters_mutates_the_response(self):
        """The old fix deleted existing delimiter characters, turning '[1]5%' into '15%'."""
        response = "The rate is \u27e61\u27e75% [doc-1]."
        naive = response.replace("\u27e6", "").replace("\u27e7", "")
        assert "The rate is 15% [doc-1]." == naive
        delimiters = choose_delimiters(response)
        annotated = annotate(response, [len(response) - 1], *delimiters)
        assert (response, 1) == remove_tags(annotated, *delimiters)
        assert "\u27e6" not in delimiters[0]

    def test_response_containing_tag_characters_gets_other_delimiters(self):
        """A response already holding the first pair is tagged with the next free pair."""
        response = "Rate \u27e6x\u27e7 is 5% [doc-1]."
        result, chat = score(response, replies=[passing("doc-1")])
        assert "[doc-1]\u2e241\u2e25." in chat.prompts[0]
        assert True is result.passed

    def test_no_candidate_delimiter_is_a_bracket(self):
        """No pair uses '[', ']', a backtick, a tilde, a digit or '(', so no tag reads as syntax."""
        forbidden = set("[]`~()0123456789")
        assert all(a not in forbidden and b not in forbidden for a, b in CANDIDATE_PAIRS)
        assert len(CANDIDATE_PAIRS) == len({c for pair in CANDIDATE_PAIRS for c in pair}) / 2

    def test_exhausted_delimiters_are_lengthened_and_the_row_still_graded(self):
        """A response holding every single-character candidate is tagged with repeated delimiters."""
        every = "".join(a + b for a, b in CANDIDATE_PAIRS)
        response = f"The late fee is 5% [doc-1]. {every}{every[:1] * 3}"
        result, chat = score(response, replies=[passing("doc-1")])
        assert "[doc-1]\u27e6\u27e6\u27e6\u27e61\u27e7\u27e7\u27e7\u27e7." in chat.prompts[0]
        assert (True, True) == (result.assessed, result.passed)

    def test_tag_note_claims_only_the_sequence_is_absent(self):
        """With lengthened tags the note claims the exact sequence is absent, not its characters."""
        every = "".join(a + b for a, b in CANDIDATE_PAIRS)
        _, chat = score(f"{GOOD} {every}", replies=[passing("doc-1")])
        assert (
            "The sequence \u27e6\u27e6 does not occur anywhere in the response as it was "
            "written, so text that resembles part of a tag is the response's own."
        ) in chat.prompts[0]

    def test_tags_skip_characters_the_custom_syntax_uses(self):
        """A citation syntax written with the first pair's characters gets another pair for tags."""
        result, chat = score(
            "The late fee is 5% \u27e6doc-1\u27e7.",
            CONTEXT.replace("[", "\u27e6").replace("]", "\u27e7"),
            [passing("doc-1")],
            label_pattern=r"^\u27e6([a-z0-9-]+)\u27e7(?=[ \t]|$)",
            citation_pattern=r"\u27e6([a-z0-9-]+)\u27e7",
        )
        assert "\u27e6doc-1\u27e7\u2e241\u2e25." in chat.prompts[0]
        assert True is result.passed


class TestReplyValidation:
    """Review rounds 2-3 and the field audit: every judge-supplied field is type-checked."""

    @pytest.mark.parametrize(
        "body",
        ['{"score": NaN, "verdicts": []}', '{"score": Infinity, "verdicts": []}'],
        ids=["nan", "infinity"],
    )
    def test_non_finite_score_is_invalid_output(self, body):
        """NaN and Infinity never reach a normaliser; min(1.0, nan) would have clamped to 1.0."""
        assert 1.0 == min(1.0, math.nan)  # the naive normaliser's verdict
        result, _ = score(GOOD, replies=[body])
        assert (UNASSESSED, "invalid_judge_output") == (unassessed(result), result.reason)

    @pytest.mark.parametrize("bad", [99, -1, 2.5, "3", None, [3], {"band": 3}])
    def test_unusable_score_is_invalid_output(self, bad):
        """Out of range, fractional, textual, null or structured scores are un-assessed."""
        result, _ = score(GOOD, replies=[reply(bad, supported(1, SPAN["doc-1"]))])
        assert ("invalid_judge_output", None) == (result.reason, result.details["raw_score"])

    def test_missing_score_is_invalid_output_not_an_exception(self):
        """A reply without 'score' is an un-assessed row."""
        body = json.dumps({"verdicts": [supported(1, SPAN["doc-1"])]})
        assert "invalid_judge_output" == score(GOOD, replies=[body])[0].reason

    def test_boolean_score_is_invalid_output(self):
        """true is refused, although float(True) == 1.0 and True == 1 (the naive checks)."""

        def naive(value: object) -> bool:
            return 0 <= float(value) <= 3  # type: ignore[arg-type]

        assert naive(BOOLEAN)
        assert BOOLEAN in (0, 1, 2, 3)
        result, _ = score(GOOD, replies=[reply(BOOLEAN, unsupported(1))])
        assert ("invalid_judge_output", "true") == (
            result.reason,
            result.details["rejected_raw_score"],
        )

    @pytest.mark.parametrize("body", ["null", "[]", "0", "false", '""', '"score"'])
    def test_non_object_reply_is_invalid_output(self, body):
        """A falsy or non-object JSON reply is un-assessed with its JSON type recorded."""
        result, _ = score(GOOD, replies=[body])
        expected_type = {"null": "null", "[]": "array", "0": "number", "false": "boolean"}
        assert ("invalid_judge_output", expected_type.get(body, "string")) == (
            result.reason,
            result.details["judge_reply_type"],
        )

    def test_rejected_score_is_kept_as_text(self):
        """A rejected score is stored as JSON text under rejected_raw_score; raw_score is None."""
        result, _ = score(GOOD, replies=[reply("NaN", supported(1, SPAN["doc-1"]))])
        assert (None, '"NaN"') == (
            result.details["raw_score"],
            result.details["rejected_raw_score"],
        )

    @pytest.mark.parametrize(
        ("body", "problem"),
        [
            ("Here it is: " + passing("doc-1"), "not strict JSON (not JSON)"),
            (passing("doc-1")[:-1] + ', "score": 3}', "not strict JSON (duplicate key)"),
            (reply(3, supported(1, SPAN["doc-1"]))[:-1] + ', "notes": 1}', "unexpected field"),
            (json.dumps({"score": 3, "verdicts": {"1": "supported"}}), "'verdicts' must be a list"),
        ],
        ids=["prose", "duplicate-key", "extra-field", "verdicts-not-list"],
    )
    def test_malformed_reply_is_invalid_output(self, body, problem):
        """Prose, duplicate keys, unknown fields and a non-list verdicts field are refused."""
        result, _ = score(GOOD, replies=[body])
        assert "invalid_judge_output" == result.reason
        assert problem in result.explanation

    def test_huge_reply_is_invalid_output(self):
        """A reply over 1 MB is refused before parsing, as un-assessed output."""
        body = reply(3, supported(1, SPAN["doc-1"]), explanation="x" * 1_100_000)
        result, _ = score(GOOD, replies=[body])
        assert ("invalid_judge_output", "not JSON") == (
            result.reason,
            result.details["judge_reply_type"],
        )
        assert "larger than 1000000 bytes" in result.explanation

    def test_deeply_nested_reply_is_invalid_output(self):
        """A reply nested past the parser's depth is an un-assessed row, not a RecursionError."""
        body = '{"score": 3, "verdicts": ' + "[" * 100_000 + "]" * 100_000 + "}"
        assert "invalid_judge_output" == score(GOOD, replies=[body])[0].reason

    def test_single_fenced_reply_is_accepted(self):
        """A reply that is exactly one ```json fence is read inside the fence."""
        result, _ = score(GOOD, replies=["```json\n" + passing("doc-1") + "\n```"])
        assert (True, True) == (result.assessed, result.passed)

    @pytest.mark.parametrize(
        ("occurrence", "naive_accepts"), [(True, True), (1.0, True), ("1", False), (None, False)]
    )
    def test_occurrence_must_be_an_int_not_a_bool_or_float(self, occurrence, naive_accepts):
        """true and 1.0 both equal 1 (the naive check); only an int that is not a bool binds."""
        assert naive_accepts == (occurrence == 1)
        verdict = {"occurrence": occurrence, "outcome": "supported", "context_span": "late fee"}
        result, _ = score(GOOD, replies=[reply(3, verdict)])
        assert "invalid_judge_output" == result.reason

    @pytest.mark.parametrize(
        "verdict",
        [
            {"occurrence": 1, "outcome": "fine", "context_span": "late fee"},
            {"occurrence": 1, "outcome": "supported", "context_span": 5},
            {"occurrence": 1, "outcome": "supported", "context_span": "late fee", "why": "x"},
            {"occurrence": 1, "outcome": "unsupported", "context_span": "late fee"},
            {
                "occurrence": 1,
                "outcome": "supported",
                "context_span": "fee",
                "supporting_marker": "doc-2",
            },
            "supported",
        ],
        ids=["outcome", "span-type", "extra", "unsupported-span", "supported-marker", "string"],
    )
    def test_malformed_verdict_is_invalid_output(self, verdict):
        """Outcomes come from a closed set and each takes exactly its own string fields."""
        assert "invalid_judge_output" == score(GOOD, replies=[reply(3, verdict)])[0].reason

    @pytest.mark.parametrize(
        ("verdict", "field", "band"),
        [
            (supported(1, SPAN["doc-1"], supporting_marker=None), "supporting_marker", 3),
            (supported(1, SPAN["doc-1"], claim_span=None), "claim_span", 3),
            (supported(1, None), "context_span", 3),
            (unsupported(1, context_span=None), "context_span", 1),
            (unsupported(1, supporting_marker=None), "supporting_marker", 1),
            (unsupported(1, claim_span=None), "claim_span", 1),
            (misattributed(1, None, SPAN["doc-2"]), "supporting_marker", 1),
            (misattributed(1, "doc-2", SPAN["doc-2"], claim_span=None), "claim_span", 1),
        ],
        ids=[
            "supported-marker",
            "supported-claim",
            "supported-context",
            "unsupported-context",
            "unsupported-marker",
            "unsupported-claim",
            "misattributed-marker",
            "misattributed-claim",
        ],
    )
    def test_optional_field_given_as_null_is_invalid_output(self, verdict, field, band):
        """A verdict field given as null is not a string, although .get() (the naive read) sees it as absent."""
        absent = {key: value for key, value in verdict.items() if key != field}
        assert absent.get(field) == verdict.get(field)  # the naive read cannot tell them apart
        naive = check_reply(reply(band, absent), ["doc-1"], {"doc-1": CONTEXT}, GOOD)
        assert "invalid_judge_output" != naive.reason  # what a null-as-absent reading gives
        result, _ = score(GOOD, replies=[reply(band, verdict)])
        assert (UNASSESSED, "invalid_judge_output") == (unassessed(result), result.reason)
        assert f"has a '{field}' that is not a string" in result.explanation

    @pytest.mark.parametrize(
        "extra",
        [
            supported(2, SPAN["doc-2"]),
            misattributed(2, "doc-2", SPAN["doc-2"]),
            unsupported(2),
            unsupported(0),
            unsupported(-1),
        ],
        ids=["supported", "misattributed", "unsupported", "zero", "negative"],
    )
    def test_verdict_for_an_occurrence_that_was_not_graded_is_invalid_output(self, extra):
        """One graded occurrence with a verdict for another is invalid output; dropping it (the naive filter) would grade the row."""
        verdicts = [supported(1, SPAN["doc-1"]), extra]
        graded = ["doc-1"]
        kept = [v for v in verdicts if 1 <= v["occurrence"] <= len(graded)]
        naive = check_reply(reply(3, *kept), graded, {"doc-1": CONTEXT}, GOOD)
        assert "invalid_judge_output" != naive.reason  # the naive filter assesses the row
        result, _ = score(GOOD, replies=[reply(3, *verdicts)])
        assert (UNASSESSED, "invalid_judge_output") == (unassessed(result), result.reason)
        assert (
            f"verdict 2 names occurrence {extra['occurrence']}, which was not graded"
            in result.explanation
        )

    def test_huge_ungraded_occurrence_number_is_described_not_printed(self):
        """An occurrence number with dozens of digits reaches the explanation as its length."""
        result, _ = score(
            GOOD, replies=[reply(3, supported(1, SPAN["doc-1"]), unsupported(10**40))]
        )
        assert "invalid_judge_output" == result.reason
        assert "names occurrence <41-digit number>, which was not graded" in result.explanation
        assert str(10**40) not in result.explanation

    @pytest.mark.parametrize("explanation", [None, {"a": 1}, 3, ["x"]])
    def test_non_string_explanation_is_left_out(self, explanation):
        """A non-string explanation leaves the explanation empty instead of a Python repr."""
        result, _ = score(
            GOOD, replies=[reply(3, supported(1, SPAN["doc-1"]), explanation=explanation)]
        )
        assert ("", None) == (result.explanation, result.details["judge_explanation"])


class TestEvidence:
    """Review rounds 1-4: evidence is verified against the right block, never trusted."""

    def test_evidence_from_the_cited_block_is_accepted(self):
        """A supported verdict quoting the cited block verifies and is kept."""
        result, _ = score(GOOD, replies=[reply(3, supported(1, SPAN["doc-1"]))])
        assert [
            {
                "occurrence": 1,
                "cited": "doc-1",
                "outcome": "supported",
                "context_span": SPAN["doc-1"],
            }
        ] == result.details["verdicts"]

    def test_supported_evidence_from_an_uncited_block_is_discarded(self):
        """A supported verdict quoting a block the occurrence does not cite is discarded."""
        result, _ = score(GOOD, replies=[reply(3, supported(1, SPAN["doc-2"]))])
        assert (
            "incomplete_judge_verdicts",
            [{"occurrence": 1, "why": "context_span_not_in_cited_block"}],
        ) == (
            result.reason,
            result.details["discarded_verdict_reasons"],
        )

    def test_single_character_evidence_is_rejected_two_characters_accepted(self):
        """'e' corroborates nothing and is discarded; '5%' is short but real evidence."""
        tiny, _ = score(GOOD, replies=[reply(3, supported(1, "e"))])
        short, _ = score(GOOD, replies=[reply(3, supported(1, "5%"))])
        assert ("incomplete_judge_verdicts", True) == (tiny.reason, short.passed)

    def test_evidence_is_compared_whitespace_and_quote_normalized(self):
        """Curly quotes and line breaks in a quote still match the block's straight text."""
        context = '[doc-1] The fee is "five"\n   percent.\n'
        body = reply(3, supported(1, "fee is \u201cfive\u201d percent"))
        result, _ = score("Fee is five percent [doc-1].", context, [body])
        assert True is result.passed

    def test_misattributed_verdict_counts_as_coverage(self):
        """A verified misattribution covers its occurrence; it is an answer, just not a favourable one."""
        body = reply(1, misattributed(1, "doc-2", SPAN["doc-2"]))
        result, _ = score("Members pay no late fee [doc-1].", replies=[body])
        assert (True, False, 1 / 3) == (result.assessed, result.passed, result.score)

    def test_misattribution_evidence_from_the_cited_block_is_discarded(self):
        """Quoting the cited block proves support, the opposite of misattribution."""
        body = reply(1, misattributed(1, "doc-2", SPAN["doc-1"]))
        result, _ = score(GOOD, replies=[body])
        assert [{"occurrence": 1, "why": "context_span_not_in_block"}] == result.details[
            "discarded_verdict_reasons"
        ]

    def test_misattribution_naming_an_unknown_block_is_discarded(self):
        """supporting_marker must name a block the context has."""
        body = reply(1, misattributed(1, "doc-77", SPAN["doc-2"]))
        assert [{"occurrence": 1, "why": "unknown_supporting_block"}] == score(
            GOOD, replies=[body]
        )[0].details["discarded_verdict_reasons"]

    def test_misattribution_naming_the_cited_block_is_discarded(self):
        """The supporting block must differ from the cited one."""
        body = reply(1, misattributed(1, "doc-1", SPAN["doc-1"]))
        assert [{"occurrence": 1, "why": "supporting_block_is_cited_block"}] == score(
            GOOD, replies=[body]
        )[0].details["discarded_verdict_reasons"]

    @pytest.mark.parametrize("marker", ["[doc-2]", "DOC-2", " doc-2"])
    def test_supporting_marker_must_be_written_exactly(self, marker):
        """A bracketed, mis-cased or padded supporting marker names no block and is discarded."""
        body = reply(1, misattributed(1, marker, SPAN["doc-2"]))
        assert "incomplete_judge_verdicts" == score(GOOD, replies=[body])[0].reason

    def test_misattribution_with_evidence_in_both_blocks_is_discarded(self):
        """Shared boilerplate cannot show which block supports the claim; naive checking convicts."""
        context = (
            "[doc-1] Fees are set by the board. The late fee is 5%.\n"
            "[doc-2] Fees are set by the board. The late fee is 7%.\n"
        )
        verdict = misattributed(1, "doc-2", "Fees are set by the board")
        naive_accepts = "Fees are set by the board" in context.split("\n")[1]
        assert naive_accepts
        result, _ = score("The late fee is 5% [doc-1].", context, [reply(1, verdict)])
        assert ("incomplete_judge_verdicts", "context_span_also_in_cited_block") == (
            result.reason,
            result.details["discarded_verdict_reasons"][0]["why"],
        )

    def test_misattribution_with_evidence_unique_to_the_other_block_convicts(self):
        """Quoting what tells the blocks apart (the differing rate) verifies the misattribution."""
        context = (
            "[doc-1] Fees are set by the board. The late fee is 5%.\n"
            "[doc-2] Fees are set by the board. The late fee is 7%.\n"
        )
        result, _ = score(
            "The late fee is 7% [doc-1].",
            context,
            [reply(1, misattributed(1, "doc-2", "late fee is 7%"))],
        )
        assert (True, False, "misattributed") == (
            result.assessed,
            result.passed,
            result.details["verdicts"][0]["outcome"],
        )

    def test_identical_blocks_cannot_show_misattribution(self):
        """Two blocks with the same text support each other's claims: misattribution is discarded."""
        context = "[doc-1] The late fee is 5%.\n[doc-2] The late fee is 5%.\n"
        body = reply(1, misattributed(1, "doc-2", "late fee is 5%"))
        assert "incomplete_judge_verdicts" == score(GOOD, context, [body])[0].reason


class TestClaimSpans:
    """Review round 3: claim_span is advisory and never binds a verdict."""

    def test_verbatim_claim_span_is_recorded_as_response_span(self):
        """A claim quoted verbatim from the response is kept as response_span."""
        body = reply(3, supported(1, SPAN["doc-1"], claim_span="The late fee is 5%"))
        result, _ = score(GOOD, replies=[body])
        assert "The late fee is 5%" == result.details["verdicts"][0]["response_span"]

    def test_invented_claim_span_is_dropped_but_the_verdict_stands(self):
        """A claim the response never made is omitted (not stored as ''), and the row still passes."""
        body = reply(3, supported(1, SPAN["doc-1"], claim_span="Fees double yearly"))
        result, _ = score(GOOD, replies=[body])
        assert (True, False) == (result.passed, "response_span" in result.details["verdicts"][0])

    def test_swapped_claim_spans_cannot_move_verdicts(self):
        """Verdicts bind by occurrence number: swapping the claim quotes changes no outcome."""
        body = reply(
            1,
            supported(1, SPAN["doc-1"], claim_span="Members pay no late fee"),
            unsupported(2, claim_span="The late fee is 5%"),
        )
        result, _ = score(TWO, replies=[body])
        assert [("doc-1", "supported"), ("doc-2", "unsupported")] == [
            (v["cited"], v["outcome"]) for v in result.details["verdicts"]
        ]

    def test_claim_span_with_the_tag_is_not_recorded(self):
        """A claim quoted with its occurrence tag is not in the response, so it is omitted."""
        body = reply(3, supported(1, SPAN["doc-1"], claim_span="5% [doc-1]\u27e61\u27e7"))
        result, _ = score(GOOD, replies=[body])
        assert "response_span" not in result.details["verdicts"][0]


class TestCoverageAndCoherence:
    """Review rounds 2-3: every occurrence needs one verified verdict, and the score its band."""

    def test_missing_verdict_is_incomplete(self):
        """An empty verdict list beside a score of 3 is incomplete, not a pass."""
        result, _ = score(GOOD, replies=[reply(3)])
        assert (UNASSESSED, "incomplete_judge_verdicts") == (unassessed(result), result.reason)

    def test_partial_verdicts_are_incomplete(self):
        """Two occurrences and a verdict for one is incomplete, naming the missing occurrence."""
        result, _ = score(TWO, replies=[reply(3, supported(1, SPAN["doc-1"]))])
        assert "incomplete_judge_verdicts" == result.reason
        assert "(no verified verdict for occurrence 2)" in result.explanation

    def test_unverified_evidence_does_not_count_as_coverage(self):
        """A verdict whose evidence is not in the row establishes nothing."""
        result, _ = score(GOOD, replies=[reply(3, supported(1, "fees are invented here"))])
        assert ("incomplete_judge_verdicts", 1) == (
            result.reason,
            result.details["discarded_verdicts"],
        )

    def test_one_verdict_does_not_cover_two_occurrences_of_one_block(self):
        """Two claims citing one source are two occurrences; one verdict leaves one uncovered."""
        response = "The late fee is 5% [doc-1]. Fees triple at year end [doc-1]."
        result, _ = score(response, replies=[reply(3, supported(1, SPAN["doc-1"]))])
        assert "incomplete_judge_verdicts" == result.reason

    def test_two_occurrences_of_one_block_pass_when_each_is_verdicted(self):
        """The control: each occurrence with its own verified verdict passes."""
        response = "The late fee is 5% [doc-1]. It is charged on the balance [doc-1]."
        body = reply(3, supported(1, SPAN["doc-1"]), supported(2, "unpaid balance"))
        assert (True, True, 1.0, None) == outcome(score(response, replies=[body])[0])

    def test_two_verdicts_for_one_occurrence_are_contradictory(self):
        """A second outcome for the same occurrence is a contradiction, not a choice."""
        body = reply(1, supported(1, SPAN["doc-1"]), unsupported(1))
        assert "contradictory_judge_verdicts" == score(GOOD, replies=[body])[0].reason

    @pytest.mark.parametrize(
        ("band", "verdict"),
        [
            (3, misattributed(1, "doc-2", SPAN["doc-2"])),
            (2, unsupported(1)),
            (1, supported(1, SPAN["doc-1"])),
            (0, supported(1, SPAN["doc-1"])),
        ],
        ids=["3-misattributed", "2-unsupported", "1-supported", "0-supported"],
    )
    def test_score_outside_the_band_of_its_verdicts_is_rejected(self, band, verdict):
        """A misattribution beside 3, or all-supported beside 0 or 1, contradicts the rubric."""
        result, _ = score(GOOD, replies=[reply(band, verdict)])
        assert "judge_score_contradicts_verdicts" == result.reason

    @pytest.mark.parametrize(("band", "passed"), [(3, True), (2, True)])
    def test_band_edges_for_supported_verdicts(self, band, passed):
        """Bands 2 and 3 are both coherent with all-supported verdicts; both pass at 2/3."""
        result, _ = score(GOOD, replies=[reply(band, supported(1, SPAN["doc-1"]))])
        assert (True, passed, band / 3) == (result.assessed, result.passed, result.score)

    @pytest.mark.parametrize("band", [0, 1])
    def test_band_edges_for_faulty_verdicts(self, band):
        """Bands 0 and 1 are both coherent with a fault; both fail."""
        result, _ = score(GOOD, replies=[reply(band, unsupported(1))])
        assert (True, False, band / 3) == (result.assessed, result.passed, result.score)

    def test_mixed_outcomes_allow_only_the_fault_bands(self):
        """One supported and one unsupported occurrence is a fault: band 2 is refused, 1 is fine."""
        two = reply(2, supported(1, SPAN["doc-1"]), unsupported(2))
        one = reply(1, supported(1, SPAN["doc-1"]), unsupported(2))
        assert ("judge_score_contradicts_verdicts", False) == (
            score(TWO, replies=[two])[0].reason,
            score(TWO, replies=[one])[0].passed,
        )

    def test_threshold_decides_pass_from_the_band(self):
        """With threshold 1.0 only band 3 passes."""
        result, _ = score(GOOD, replies=[reply(2, supported(1, SPAN["doc-1"]))], threshold=1.0)
        assert (True, False) == (result.assessed, result.passed)

    def test_response_that_is_only_a_citation_is_graded(self):
        """A response consisting of one marker is still one occurrence to grade."""
        result, chat = score("[doc-1]", replies=[passing("doc-1")])
        assert (True, "[doc-1]\u27e61\u27e7") == (
            result.passed,
            chat.prompts[0].split("Response:\n\n")[1].split("\n")[0],
        )

    def test_discarded_verdicts_are_counted(self):
        """Every well-formed verdict that fails verification is counted and explained."""
        body = reply(
            1,
            supported(1, "invented"),
            misattributed(2, "doc-9", SPAN["doc-1"]),
        )
        result, _ = score(TWO, replies=[body])
        assert (2, ["context_span_not_in_cited_block", "unknown_supporting_block"]) == (
            result.details["discarded_verdicts"],
            [d["why"] for d in result.details["discarded_verdict_reasons"]],
        )


class TestDeterministicFloor:
    """Review rounds 1, 2 and 4: a fabrication proven in code fails the row, whatever the judge says."""

    def test_fabrication_without_resolved_citations_fails_without_judge_call(self):
        """Only a fabricated citation: failed, score 0, no judge call, raw_score None."""
        result, chat = score("Notices go by courier [doc-99].", replies=[passing("doc-1")])
        assert ((True, False, 0.0, None), 0, None) == (
            outcome(result),
            len(chat.prompts),
            result.details["raw_score"],
        )

    def test_fabrication_alongside_stray_brackets_still_floors(self):
        """The control for the stray-bracket fix: a real fabrication among them still fails."""
        response = FABRICATED + " arr[0], [x], [TODO], [Wikipedia](https://w.org)."
        result, _ = score(response, replies=[passing("doc-1")])
        assert (True, False, 0.0, None) == outcome(result)

    @pytest.mark.parametrize(
        "body",
        [
            "null",
            "[]",
            '{"score": NaN, "verdicts": []}',
            reply(BOOLEAN, supported(1, SPAN["doc-1"])),
            reply(3),
            reply(3, supported(1, SPAN["doc-1"]), supported(1, SPAN["doc-1"])),
            reply(0, supported(1, SPAN["doc-1"])),
            reply(3, supported(1, SPAN["doc-1"]), supported(2, SPAN["doc-2"])),
            reply(3, supported(1, SPAN["doc-1"], supporting_marker=None)),
        ],
        ids=[
            "null",
            "array",
            "nan",
            "bool",
            "missing",
            "duplicate",
            "contradicts-band",
            "ungraded-occurrence",
            "null-field",
        ],
    )
    def test_unusable_reply_cannot_rescue_a_fabrication(self, body):
        """Any rejected reply beside a fabrication still gives failed, score 0, assessed."""
        result, _ = score(FABRICATED, replies=[body])
        assert (True, False, 0.0, None) == outcome(result)
        assert result.details["judge_rejection"] is not None

    def test_failed_judge_call_cannot_rescue_a_fabrication(self):
        """A ChatError beside a fabrication still floors the row."""
        error = ChatError("timed out", provider="p", model="m")
        result, _ = score(FABRICATED, replies=[error])
        assert ((True, False, 0.0, None), "timed out") == (
            outcome(result),
            result.details["judge_error"]["detail"],
        )

    def test_coherent_judge_reply_beside_a_fabrication_is_not_rejected(self):
        """A judge that scores only the resolved citations (3, supported) is coherent; the floor still applies."""
        result, _ = score(FABRICATED, replies=[passing("doc-1")])
        assert (None, 3, 0.0) == (
            result.details["judge_rejection"],
            result.details["raw_score"],
            result.score,
        )

    def test_floor_explanation_names_fabrications_and_keeps_judge_words(self):
        """The floor leads with the finding, names the absent label, and keeps the judge's text."""
        result, _ = score(
            FABRICATED,
            replies=[reply(3, supported(1, SPAN["doc-1"]), explanation="All supported.")],
        )
        assert (
            "Failed: the response cites a label that names no block in the context: doc-99. "
            "The judge, grading only the resolved citations, said: All supported."
        ) == result.explanation
        assert "All supported." == result.details["judge_explanation"]

    def test_unfloored_row_keeps_the_judge_explanation(self):
        """Without a fabrication the explanation is the judge's text, unchanged."""
        result, _ = score(
            GOOD, replies=[reply(3, supported(1, SPAN["doc-1"]), explanation="Stated in doc-1.")]
        )
        assert "Stated in doc-1." == result.explanation

    def test_fabrication_outranks_an_ambiguous_marker(self):
        """A fabrication fails the row even when an ambiguous marker is present too."""
        context = CONTEXT + "[doc-4]\n"
        result, chat = score(FABRICATED + " Also [doc-4].", context, [passing("doc-1")])
        assert ((True, False, 0.0, None), 1) == (outcome(result), len(chat.prompts))

    def test_fabricated_integer_marker_floors_even_a_perfect_reply(self):
        """With a list of Source, [9] fails the row whatever the judge says."""
        sources = [Source(text="The late fee is 5% of the unpaid balance.", doc_id="a")]
        result, _ = score(
            "The late fee is 5% [1]. Also [9].", sources, [reply(3, supported(1, SPAN["doc-1"]))]
        )
        assert (True, False, 0.0, None) == outcome(result)


class TestRejectedReplyAudit:
    """Review: a rejected reply keeps its audit fields, with or without a fabrication."""

    def test_rejected_reply_keeps_audit_fields_without_a_fabrication(self):
        """Score, text, verified verdicts and the discarded count survive a rejection, not as results."""
        body = reply(3, supported(1, SPAN["doc-1"]), supported(2, "invented"), explanation="Fine.")
        result, _ = score(TWO, replies=[body])
        details = result.details
        assert (
            "incomplete_judge_verdicts",
            3,
            "Fine.",
            [1],
            [],
            1,
        ) == (
            result.reason,
            details["raw_score"],
            details["judge_explanation"],
            [v["occurrence"] for v in details["verified_verdicts"]],
            details["verdicts"],
            details["discarded_verdicts"],
        )

    @pytest.mark.parametrize(
        "extra",
        [unsupported(2), supported(1, SPAN["doc-1"], claim_span=None)],
        ids=["ungraded-occurrence", "null-field"],
    )
    def test_invalid_verdict_keeps_the_audit_fields(self, extra):
        """A reply invalid for an ungraded occurrence or a null field still records score, text and the verdicts that verified."""
        body = reply(3, supported(1, SPAN["doc-1"]), extra, explanation="Fine.")
        result, _ = score(GOOD, replies=[body])
        details = result.details
        assert ("invalid_judge_output", 3, "Fine.", [1], [], "object") == (
            result.reason,
            details["raw_score"],
            details["judge_explanation"],
            [v["occurrence"] for v in details["verified_verdicts"]],
            details["verdicts"],
            details["judge_reply_type"],
        )

    def test_rejected_reply_keeps_its_verified_verdicts_beside_a_fabrication(self):
        """On a floored row, the verdicts that verified are kept too."""
        body = reply(3, supported(1, SPAN["doc-1"]), supported(1, SPAN["doc-1"]))
        result, _ = score(FABRICATED, replies=[body])
        # One per occurrence: the surplus second verdict is never verified (issue 17).
        assert ("contradictory_judge_verdicts", 1) == (
            result.details["judge_rejection"],
            len(result.details["verified_verdicts"]),
        )

    def test_partial_reply_keeps_the_verdict_it_got_right(self):
        """With two occurrences, the good verdict is reported although its neighbour failed."""
        body = reply(3, supported(1, SPAN["doc-1"]), supported(2, "not in doc-2"))
        result, _ = score(TWO, replies=[body])
        assert ["doc-1"] == [v["cited"] for v in result.details["verified_verdicts"]]


class TestPartialCoverage:
    """Review round 2 and the self-review: ambiguous markers block assessment before the call."""

    def test_marker_found_only_inside_a_block_makes_the_row_partial(self):
        """A valid citation plus a marker that appears only inside a block is not a complete row."""
        context = CONTEXT + "[doc-4] See the table in [ref-12] for rates.\n"
        result, chat = score("Fee [doc-1]. Table [ref-12].", context, [passing("doc-1")])
        assert (UNASSESSED, "partial_citation_coverage", 0) == (
            unassessed(result),
            result.reason,
            len(chat.prompts),
        )

    def test_ignored_markers_do_not_block_assessment(self):
        """Stray brackets that are not citations never make a row partial."""
        result, _ = score(f"{GOOD} arr[0] [TODO] [0-1].", replies=[passing("doc-1")])
        assert (True, True, []) == (result.assessed, result.passed, kinds(result)["ambiguous"])

    def test_ambiguous_marker_leaves_the_judge_uncalled(self):
        """The guard runs before the call, so no verdict is billed and then discarded."""
        context = CONTEXT + "[doc-4]\n"
        _, chat = score("Fee [doc-1]. Other [doc-4].", context, [passing("doc-1")])
        assert [] == chat.prompts
