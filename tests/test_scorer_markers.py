"""The citation scorer's deterministic half: labels, markers and their classification.

Each test keeps one behaviour from reference/citation-scorer-review-log.txt (or SPEC
§3.9), and is named after it. Where the log describes a naive implementation that
got it wrong, the same assertion is run against that naive variant and is expected
to catch it.
"""

from __future__ import annotations

import re

import pytest
from scorer_helpers import CONTEXT, GOOD, SPAN, kinds, passing, reply, score, supported

from citemark import CitationScorer, Source
from citemark._judging.scorer.labels import (
    DEFAULT_CITATION_PATTERN,
    DEFAULT_LABEL_PATTERN,
    classify_labelled,
    compile_pattern,
)

LABELS = compile_pattern(DEFAULT_LABEL_PATTERN, "label_pattern")
CITATIONS = compile_pattern(DEFAULT_CITATION_PATTERN, "citation_pattern")


def classified(response: str, context: str = CONTEXT, **patterns: str) -> dict[str, list[str]]:
    """The labels in each bucket, with the default or given patterns."""
    label = compile_pattern(patterns.get("label", DEFAULT_LABEL_PATTERN), "label")
    citation = compile_pattern(patterns.get("citation", DEFAULT_CITATION_PATTERN), "citation")
    found = classify_labelled(response, context, label, citation)
    out: dict[str, list[str]] = {"resolved": [], "fabricated": [], "ambiguous": [], "ignored": []}
    for occ in found.occurrences:
        out[occ.kind].append(occ.label)
    return out


def blocks(context: str, label_pattern: str = DEFAULT_LABEL_PATTERN) -> list[str]:
    """The citable labels a context declares."""
    return list(
        classify_labelled("", context, compile_pattern(label_pattern, "l"), CITATIONS).blocks
    )


class TestStrayBrackets:
    """Review round 1: a bracketed token is not the same thing as a citation."""

    @pytest.mark.parametrize(
        "stray", ["arr[0]", "a placeholder [x]", "fix this [TODO]", "[Wikipedia](https://w.org)"]
    )
    def test_stray_bracket_beside_a_correct_citation_does_not_fail_the_row(self, stray):
        """A correctly cited row that also holds arr[0], [x], [TODO] or a link passes."""
        result, _ = score(f"{GOOD} See {stray}.", replies=[passing("doc-1")])
        assert (True, True, 1.0) == (result.assessed, result.passed, result.score)

    def test_naive_any_unresolved_bracket_is_fabricated_would_fail_those_rows(self):
        """The naive rule (every unresolved bracket is a fabrication) accuses arr[0]."""
        response = f"{GOOD} See arr[0]."
        naive = [m for m in re.findall(r"\[([^\]]+)\]", response) if m not in SPAN]
        assert ["0"] == naive
        assert [] == kinds(score(response, replies=[passing("doc-1")])[0])["fabricated"]

    def test_context_labelled_todo_makes_todo_a_citation(self):
        """The comparison is derived from the context: blocks labelled [TODO] make [TODO] cite."""
        context = "[TODO] Finish the fee table.\n[doc-1] The late fee is 5%.\n"
        assert ["TODO"] == classified("Pending [TODO].", context)["resolved"]

    def test_link_text_is_never_accused(self):
        """A Markdown link whose text names no block is ignored, never fabricated."""
        assert {
            "resolved": ["doc-1"],
            "fabricated": [],
            "ambiguous": [],
            "ignored": ["doc-99"],
        } == (classified("Fee [doc-1]. See [doc-99](https://e.com/x)."))

    def test_link_text_naming_a_real_block_resolves(self):
        """Link text that names a real block resolves like a bare marker."""
        result, chat = score(
            "The late fee is 5% [doc-1](https://e.com).", replies=[passing("doc-1")]
        )
        assert ["doc-1"] == kinds(result)["resolved"]
        assert True is result.passed
        assert "[doc-1](https://e.com)\u27e61\u27e7" in chat.prompts[0]

    def test_ignored_markers_are_reported_with_why(self):
        """Tokens judged not to be citations are listed in details.ignored_markers, with a code."""
        result, _ = score(f"{GOOD} arr[0] and [TODO].", replies=[passing("doc-1")])
        assert [("0", "not_label_shaped"), ("TODO", "not_label_shaped")] == [
            (e["label"], e["why"]) for e in result.details["ignored_markers"]
        ]

    def test_bare_number_labels_cannot_tell_an_array_index_from_a_citation(self):
        """Against sources named 1, 2, 3, arr[1] resolves: the comparison is only as sharp as the labels."""
        context = "[1] The late fee is 5%.\n[2] Members pay nothing.\n"
        assert ["1", "1"] == classified("Fee [1]. Code: arr[1].", context)["resolved"]


class TestLabelStyles:
    """Review round 2 and 3: accusation only where the label style is distinguishable."""

    @pytest.mark.parametrize("separator", ["-", ".", "_"])
    def test_each_separator_makes_labels_accusable(self, separator):
        """Labels carrying -, . or _ make a same-shaped marker naming no block fabricated."""
        context = f"[doc{separator}1] The late fee is 5%.\n"
        assert [f"doc{separator}99"] == classified(f"Fee [doc{separator}99].", context)[
            "fabricated"
        ]

    def test_bare_word_labels_accuse_nothing(self):
        """With labels such as [doc], neither [x] nor [TODO] nor [other] is fabricated."""
        context = "[doc] The late fee is 5%.\n[memo] Members pay nothing.\n"
        found = classified("Fee [doc]. Also [x], [TODO] and [other].", context)
        assert ([], ["x", "TODO", "other"]) == (found["fabricated"], found["ignored"])

    def test_bare_number_labels_accuse_nothing(self):
        """With labels [1], [2], neither arr[0] nor [9] is fabricated."""
        context = "[1] The late fee is 5%.\n[2] Members pay nothing.\n"
        found = classified("Fee [1]. arr[0] and [9].", context)
        assert ([], ["0", "9"]) == (found["fabricated"], found["ignored"])

    def test_unstructured_labels_with_nothing_resolved_are_unsupported_label_style(self):
        """Nothing resolved against bare-number labels is un-assessed, not accused."""
        result, chat = score("Fee [7].", "[1] The late fee is 5%.\n", replies=[])
        assert (False, "unsupported_label_style", 0) == (
            result.assessed,
            result.reason,
            len(chat.prompts),
        )

    def test_numeric_markers_against_slug_labels_stay_unassessed(self):
        """Numeric markers against doc-style labels are a format mismatch: un-assessed, not failed."""
        result, _ = score("Fee [1]. Members [2].")
        assert (False, "no_resolved_citations", []) == (
            result.assessed,
            result.reason,
            kinds(result)["fabricated"],
        )

    def test_unlabelled_context_cannot_produce_a_fabrication(self):
        """A context with no labels at all accuses nothing."""
        found = classified("Fee [doc-99].", "The late fee is 5%.\nMembers pay nothing.\n")
        assert {"resolved": [], "fabricated": [], "ambiguous": [], "ignored": ["doc-99"]} == found

    def test_unlabelled_context_keeps_the_generic_reason(self):
        """An unlabelled context gives no_resolved_citations, not unsupported_label_style."""
        result, _ = score("Fee [doc-99].", "The late fee is 5%.\n")
        assert "no_resolved_citations" == result.reason

    def test_underscore_labels_accuse_underscored_markers_only(self):
        """[source_one] labels accuse [source_nine] but leave [TODO] and [doc-9] alone."""
        context = "[source_one] The late fee is 5%.\n"
        found = classified("Fee [source_one]. [source_nine] [TODO] [doc-9].", context)
        assert (["source_nine"], ["TODO", "doc-9"]) == (found["fabricated"], found["ignored"])

    def test_separator_signature_and_list_agree_on_underscore(self):
        """[source_one] and [TODO] do not share a shape: the underscore counts as structure."""
        context = "[source_one] The late fee is 5%.\n"
        assert ["TODO"] == classified("Fee [source_one]. [TODO].", context)["ignored"]

    def test_mixed_label_styles_are_judged_each_on_their_own_terms(self):
        """One unstructured label does not disable accusation for a structured style beside it."""
        context = "[doc-1] The late fee is 5%.\n[2] Members pay nothing.\n"
        found = classified("Fee [doc-1]. Members [2]. Also [doc-99] and [7].", context)
        assert (["doc-1", "2"], ["doc-99"], ["7"]) == (
            found["resolved"],
            found["fabricated"],
            found["ignored"],
        )

    def test_marker_without_a_two_letter_word_is_not_accused(self):
        """[0-1], [x-y] and [1.2] share a separator with doc-1 but carry no word: ignored."""
        context = "[doc-1] The late fee is 5%.\n[sec.2] Members pay nothing.\n"
        found = classified("Fee [doc-1]. Range [0-1], pair [x-y], version [1.2].", context)
        assert ([], ["0-1", "x-y", "1.2"]) == (found["fabricated"], found["ignored"])

    def test_short_id_like_a_1_is_not_accused(self):
        """A genuinely short id such as a-1 has no two-letter word, so it errs towards not accusing."""
        assert ["a-1"] == classified("Fee [doc-1]. [a-1].")["ignored"]

    def test_labels_are_case_sensitive_and_a_case_only_match_is_ambiguous(self):
        """[DOC-1] against the label doc-1 names no block exactly, yet is not a fabrication."""
        found = classified("Fee [DOC-1].")
        assert (["DOC-1"], []) == (found["ambiguous"], found["fabricated"])

    def test_labels_differing_only_in_case_resolve_separately(self):
        """Two blocks [Doc-1] and [doc-1] are two labels; each marker resolves to its own."""
        context = "[Doc-1] The late fee is 5%.\n[doc-1] Members pay nothing.\n"
        assert ["doc-1", "Doc-1"] == classified("A [doc-1]. B [Doc-1].", context)["resolved"]

    def test_fabricated_id_inside_a_list_is_caught(self):
        """[doc-1, doc-99] cites both labels: one resolves and one is fabricated."""
        found = classified("Fee [doc-1, doc-99].")
        assert (["doc-1"], ["doc-99"]) == (found["resolved"], found["fabricated"])


class TestExcludedLabels:
    """Review round 2 and 4: empty and duplicate blocks are excluded but remembered."""

    def test_citation_of_an_empty_block_is_ambiguous(self):
        """A label with an empty body cannot be cited; citing it is ambiguous, not resolved."""
        context = CONTEXT + "[doc-4]\n"
        result, chat = score("Fee [doc-1]. Other [doc-4].", context, [passing("doc-1")])
        assert (["doc-4"], "partial_citation_coverage", 0) == (
            kinds(result)["ambiguous"],
            result.reason,
            len(chat.prompts),
        )
        assert [{"label": "doc-4", "why": "empty"}] == result.details["excluded_labels"]

    def test_citation_of_a_duplicated_label_is_ambiguous(self):
        """Every block of a label given twice is excluded, and citing it is ambiguous."""
        context = CONTEXT + "[doc-2] Members pay a reduced fee.\n"
        result, chat = score("Members pay no late fee [doc-2].", context, [passing("doc-2")])
        assert ("partial_citation_coverage", ["doc-1", "doc-3"], 0) == (
            result.reason,
            result.details["labels"],
            len(chat.prompts),
        )

    def test_valid_block_stays_gradeable_beside_a_dropped_one(self):
        """A row citing only the surviving block is graded normally."""
        context = CONTEXT + "[doc-4]\n"
        result, _ = score(GOOD, context, [passing("doc-1")])
        assert (True, True) == (result.assessed, result.passed)

    def test_citation_of_a_dropped_unstructured_label_is_ambiguous(self):
        """A dropped [dup] is still a declared label: citing it is ambiguous, not ignored."""
        context = "[dup] First.\n[dup] Second.\n[doc-1] The late fee is 5%.\n"
        found = classified("Fee [doc-1]. Also [dup].", context)
        assert ["dup"] == found["ambiguous"]

    def test_custom_syntax_keeps_dropped_labels_ambiguous(self):
        """With labels declared as <<id>>, a duplicated or empty one is still ambiguous when cited."""
        patterns = {"label": r"^<<([a-z0-9-]+)>>(?=[ \t]|$)", "citation": r"<<([a-z0-9-]+)>>"}
        context = "<<doc-1>> The late fee is 5%.\n<<doc-2>> A.\n<<doc-2>> B.\n<<doc-3>>\n"
        found = classified("Fee <<doc-1>>. <<doc-2>> <<doc-3>> <<doc-9>>.", context, **patterns)
        assert (["doc-1"], ["doc-2", "doc-3"], ["doc-9"]) == (
            found["resolved"],
            found["ambiguous"],
            found["fabricated"],
        )


class TestLabelGrammar:
    """Review round 3 and the \\s fix: what counts as a label line."""

    def test_markdown_link_at_line_start_is_not_a_label(self):
        """'[docs](https://...)' opening a line is a link, not a block labelled docs."""
        assert ["doc-1"] == blocks("[docs](https://example.com)\n[doc-1] The late fee is 5%.\n")

    def test_reference_definition_is_not_a_label(self):
        """'[docs]: https://...' is a reference definition, not a block."""
        assert [] == blocks("[docs]: https://example.com\n")

    def test_label_needs_whitespace_or_line_end_after_it(self):
        """'[doc-1]text' has no boundary after the bracket, so it is not a label."""
        assert [] == blocks("[doc-1]text continues\n")

    def test_real_block_after_markdown_still_parses(self):
        """A real block following Markdown lines is still a block with its own text."""
        found = classify_labelled("", "[a](b)\n[x]: y\n[doc-1] The fee.\n", LABELS, CITATIONS)
        assert {"doc-1": "The fee."} == found.blocks

    def test_label_at_end_of_line_with_text_on_following_lines(self):
        """A label alone on its line opens a block whose text follows on the next lines."""
        found = classify_labelled("", "[doc-1]\nThe fee\nis 5%.\n[doc-2] X.", LABELS, CITATIONS)
        assert {"doc-1": "The fee\nis 5%.", "doc-2": "X."} == found.blocks

    def test_label_wrapped_across_lines_is_not_a_label(self):
        """'[\\ndoc-1]' is not a label; the naive \\s* pattern would read one."""
        context = "[\ndoc-1] The fee.\n"
        naive = DEFAULT_LABEL_PATTERN.replace("[ \\t]*+", "\\s*+")
        assert [] == blocks(context)
        assert ["doc-1"] == blocks(context, naive)

    def test_crlf_and_lone_cr_line_endings_open_labels(self):
        """Labels open lines ended by \\r\\n or a lone \\r as well as \\n."""
        assert ["doc-1", "doc-2", "doc-3"] == blocks("[doc-1] A\r\n[doc-2] B\r[doc-3] C")


class TestCitationGrammar:
    """The [ \\t] fix and the shared syntax of both sides of a row."""

    def test_citation_wrapped_across_lines_is_not_a_citation(self):
        """'[doc-\\n99]'-style wrapping is not a marker; the naive \\s* pattern floors the row."""
        response = "Fee [doc-1]. Value [\ndoc-99\n]."
        naive = DEFAULT_CITATION_PATTERN.replace("[ \\t]*+", "\\s*+")
        assert [] == classified(response)["fabricated"]
        assert ["doc-99"] == classified(response, citation=naive)["fabricated"]

    def test_horizontal_whitespace_inside_a_marker_is_allowed(self):
        """'[ doc-1 ]' and '[\\tdoc-1]' cite doc-1."""
        assert ["doc-1", "doc-1"] == classified("A [ doc-1 ]. B [\tdoc-1].")["resolved"]

    def test_footnotes_and_non_ascii_ids_are_not_markers(self):
        """[^1] and [دoc-1] do not match the citation syntax."""
        assert {"resolved": [], "fabricated": [], "ambiguous": [], "ignored": []} == classified(
            "Note[^1] and [\u062foc-1]."
        )


class TestInContextBrackets:
    """Review round 2 and 3: markers the context itself writes in brackets."""

    def test_label_shaped_marker_inside_a_block_is_ambiguous(self):
        """A label-shaped marker that appears bracketed only inside a block's text is ambiguous."""
        context = "[doc-1] The late fee is 5%, see also [ref-12].\n"
        assert ["ref-12"] == classified("Fee [doc-1] [ref-12].", context)["ambiguous"]

    def test_bracket_notation_copied_from_a_block_is_ignored(self):
        """Notation such as [0-1] copied from a block is not label-shaped, so it is ignored."""
        context = "[doc-1] The rate lies in [0-1] and uses arr[0].\n"
        found = classified("Rate [doc-1] in [0-1], arr[0].", context)
        assert (["0-1", "0"], []) == (found["ignored"], found["ambiguous"])

    def test_unstructured_context_keeps_in_context_markers_ambiguous(self):
        """With bare-word labels, a marker the context writes in brackets is still ambiguous."""
        context = "[alpha] The fee, see [beta].\n[gamma] Members.\n"
        found = classified("Fee [alpha] [beta] [delta].", context)
        assert (["beta"], ["delta"]) == (found["ambiguous"], found["ignored"])


class TestCodeAndLinks:
    """Review round 3 and later: code is located, not stripped, and never cites."""

    CODE_FORMS = (
        "```\nx = refs[doc-99]\n```",
        "~~~\nx = refs[doc-99]\n~~~",
        "```python\nx = refs[doc-99]\n```",
        "````\n```\nx = refs[doc-99]\n```\n````",
        "`refs[doc-99]`",
        "``refs[doc-99]``",
        "`` a ` refs[doc-99] ``",
        "`refs\n[doc-99]`",
        "```\nx = refs[doc-99]\n````",
        "```\nunclosed refs[doc-99]",
    )

    @pytest.mark.parametrize("code", CODE_FORMS)
    def test_code_forms_exclude_markers(self, code):
        """A label-shaped marker inside any CommonMark code form is not extracted."""
        result, _ = score(f"{GOOD}\n\n{code}\n", replies=[passing("doc-1")])
        assert ([], 1, True) == (
            kinds(result)["fabricated"],
            result.details["markers_in_code"],
            result.passed,
        )

    PROSE_FORMS = (
        "see ``` for fences [doc-99]",
        "a lone ` backtick [doc-99]",
        "two `` ticks then [doc-99]",
        "~~ tildes ~~ [doc-99]",
        "``\n\n`` paragraphs apart [doc-99]",
        "``` mid-line fence ``x`` [doc-99]",
    )

    @pytest.mark.parametrize("prose", PROSE_FORMS)
    def test_prose_that_resembles_code_still_cites(self, prose):
        """Text that only resembles code leaves the marker after it a citation (here, fabricated)."""
        assert ["doc-99"] == classified(f"Fee [doc-1]. {prose}.")["fabricated"]

    def test_naive_code_span_regex_misses_double_backtick_spans(self):
        """The naive `[^`]*` pattern leaves ``refs[doc-99]`` outside code; the scorer does not."""
        response = "Fee [doc-1]. ``refs[doc-99]``."
        naive_code = [m.span() for m in re.finditer(r"`[^`]*`", response)]
        inside = response.index("[doc-99]")
        assert not any(start <= inside < end for start, end in naive_code)
        assert [] == classified(response)["fabricated"]

    def test_fence_closed_by_a_longer_run_ends_there(self):
        """A fence opened with three backticks closes on four, so citations after it count."""
        response = "```\ncode\n````\nFee [doc-1]. Also [doc-99]."
        assert (["doc-1"], ["doc-99"]) == (
            classified(response)["resolved"],
            classified(response)["fabricated"],
        )

    def test_shorter_run_does_not_close_a_fence(self):
        """A fence opened with four backticks is not closed by three."""
        response = "````\n```\nrefs[doc-99]\n```\n"
        assert [] == classified(response)["fabricated"]

    def test_unclosed_fence_at_line_start_hides_to_the_end(self):
        """A fence a truncated reply leaves open at line start runs to the end as code."""
        assert [] == classified("Fee [doc-1].\n```\nrefs[doc-99]")["fabricated"]

    def test_code_span_may_cross_a_line(self):
        """An inline code span crossing a line ending is still code."""
        assert [] == classified("Fee [doc-1]. `refs\n[doc-99]` end.")["fabricated"]

    def test_indented_code_is_excluded(self):
        """Four-space indentation after a blank line is code (issue 11), so it is not read."""
        assert [] == classified("Fee [doc-1].\n\n    refs[doc-99]\n")["fabricated"]

    def test_list_continuation_is_not_code(self):
        """Four spaces continuing a list item are prose: its markers count."""
        response = "- Fee [doc-1].\n\n    refs[doc-99]\n"
        assert ["doc-99"] == classified(response)["fabricated"]

    def test_markers_in_code_are_excluded_and_offsets_stay_valid(self):
        """Code is located rather than stripped: offsets of markers after it index the response."""
        response = "`refs[doc-99]` then fee [doc-1]."
        result, _ = score(response, replies=[passing("doc-1")])
        entry = result.details["resolved_citations"][0]
        assert "[doc-1]" == response[entry["start"] : entry["end"]]

    def test_marker_inside_a_link_destination_is_not_extracted(self):
        """'[a](https://e.com/[doc-99])' holds no citation in its destination."""
        assert [] == classified("Fee [doc-1]. [a](https://e.com/[doc-99]).")["fabricated"]


class TestLinkFlagPerOccurrence:
    """Review rounds 2 and 4: a link marks only its own occurrence."""

    @pytest.mark.parametrize(
        "response",
        [
            "Fee [doc-1]. See [doc-99](https://e.com) and [doc-99].",
            "Fee [doc-1]. See [doc-99] and [doc-99](https://e.com).",
        ],
    )
    def test_mixed_link_and_bare_fabrication_fails_in_either_order(self, response):
        """The bare occurrence is fabricated whichever comes first; the linked one is ignored."""
        found = classified(response)
        assert (["doc-99"], ["doc-99"]) == (found["fabricated"], found["ignored"])

    def test_naive_collapsed_link_flag_would_let_the_bare_one_pass(self):
        """Collapsing the link flag across occurrences (the old fix) ignores the bare fabrication."""
        response = "Fee [doc-1]. See [doc-99](https://e.com) and [doc-99]."
        linked = {m.group(1) for m in re.finditer(r"\[([^\]]+)\]\(", response)}
        naive = [
            m for m in re.findall(r"\[([^\]]+)\]", response) if m not in SPAN and m not in linked
        ]
        assert [] == naive
        result, _ = score(response, replies=[passing("doc-1")])
        assert (True, False, 0.0) == (result.assessed, result.passed, result.score)


class TestIntegerSources:
    """SPEC §3.9: with a list of Source, fabrication is decidable."""

    SOURCES = (
        Source(text="The late fee is 5% of the unpaid balance.", doc_id="fees"),
        Source(text="Members of the credit union pay no late fee.", doc_id="members"),
    )

    def test_out_of_range_integer_marker_is_fabricated(self):
        """[3] against two sources fails the row with score 0, without a judge call."""
        result, chat = score("Fee [3].", list(self.SOURCES))
        assert ((True, False, 0.0), ["3"], 0) == (
            (result.assessed, result.passed, result.score),
            kinds(result)["fabricated"],
            len(chat.prompts),
        )

    def test_marker_zero_is_fabricated(self):
        """[0] is out of range: markers count from 1."""
        result, _ = score("Fee [1]. Also [0].", list(self.SOURCES), [passing("doc-1")])
        assert (["0"], False) == (kinds(result)["fabricated"], result.passed)

    def test_integer_markers_follow_the_marker_grammar(self):
        """Lists cite each member, non-ASCII digits and code do not cite, link text does."""
        response = "A [1, 2]. B [\u0661]. `arr[9]` C [2](https://e.com)."
        result, _ = score(response, list(self.SOURCES), judge=False)
        assert (["1", "2", "2"], [], 1) == (
            kinds(result)["resolved"],
            kinds(result)["fabricated"],
            result.details["markers_in_code"],
        )

    def test_blank_source_is_excluded_and_citing_it_is_ambiguous(self):
        """A source whose text is blank supports nothing: citing it is ambiguous."""
        sources = [*self.SOURCES, Source(text="  ", doc_id="blank")]
        result, _ = score("Fee [1]. Other [3].", sources, judge=False)
        assert (["3"], "partial_citation_coverage") == (kinds(result)["ambiguous"], result.reason)

    def test_integer_rows_are_judged_against_the_numbered_sources(self):
        """The judge sees the numbered list and verdicts quote the cited source."""
        response = "The late fee is 5% [1]."
        result, chat = score(
            response, list(self.SOURCES), [reply(3, supported(1, "late fee is 5%"))]
        )
        assert (True, True) == (result.assessed, result.passed)
        assert "[1] The late fee is 5% of the unpaid balance." in chat.prompts[0]

    def test_empty_source_list_is_empty_context(self):
        """No sources at all is empty_context, before anything else."""
        result, chat = score("Fee [1].", [])
        assert ("empty_context", 0) == (result.reason, len(chat.prompts))


class TestInputs:
    """What score() accepts, and what it refuses with a structural TypeError."""

    def test_sources_of_the_wrong_type_are_refused(self):
        """A number is neither a context string nor a sequence of Source."""
        with pytest.raises(TypeError, match=r"^sources must be a labelled context string"):
            CitationScorer().score_sync("Fee [1].", 42)  # type: ignore[arg-type]

    def test_sequence_with_a_non_source_is_refused(self):
        """A list holding anything but Source names the item's position, not its content."""
        with pytest.raises(TypeError, match=r"^sources must hold only Source objects \(item 2"):
            CitationScorer().score_sync("Fee [1].", [Source(text="a", doc_id="a"), "secret"])  # type: ignore[list-item]

    @pytest.mark.parametrize("threshold", [True, -0.1, 1.5, float("nan"), "0.5"])
    def test_threshold_must_be_a_number_in_the_unit_interval(self, threshold):
        """Booleans, NaN, strings and values outside 0..1 are refused."""
        with pytest.raises(ValueError, match=r"^threshold must be a number in 0\.\.1$"):
            CitationScorer(threshold=threshold)

    def test_pattern_without_a_group_is_refused(self):
        """A citation pattern must capture the label."""
        with pytest.raises(ValueError, match="capturing group"):
            CitationScorer(citation_pattern=r"\[[a-z]+\]")

    def test_judge_must_be_a_chat_model(self):
        """Anything without provider, model_name and complete is refused."""
        with pytest.raises(TypeError, match=r"^judge must be a citemark\.ChatModel or None$"):
            CitationScorer(judge="gpt-4")  # type: ignore[arg-type]

    def test_blank_context_is_empty_context(self):
        """A context of whitespace is empty_context."""
        result, _ = score("Fee [doc-1].", "  \n\t")
        assert "empty_context" == result.reason
