"""The scorer's cross-product: label style x stray token x fabrication form x judge reply.

Every finding of the review log's round 4 was a composition of two or more features,
so the invariants are asserted over every combination rather than per feature (SPEC
§10). Six label styles, nine stray tokens, five fabrication forms and ten judge
replies make 2,700 rows, each scored twice (as is, and with a dropped label cited).
The invariants, from reference/citation-scorer-review-log.txt:

1. an accusable label style never passes a fabrication;
2. a mixed link-and-bare fabrication fails exactly like a bare one;
3. a stray token never changes the outcome of an otherwise clean row;
4. no judge reply, however malformed, rescues a proven fabrication;
5. the clean baseline with a valid passing reply always passes;
6. a cited dropped label always blocks assessment, before the judge is called.

Two further facts are pinned for every row: details are JSON-safe, and the judge is
called exactly once for a row that reaches it.
"""

from __future__ import annotations

import asyncio
import json
from typing import NamedTuple

import pytest
from scorer_helpers import outcome, reply, supported, unsupported

from citemark import CitationScore, CitationScorer
from citemark.testing import ScriptedChat

TEXTS = (
    "The late fee is 5% of the unpaid balance.",
    "Members of the credit union pay no late fee.",
    "Notices are sent by mail within ten days.",
)
EVIDENCE = "late fee is 5%"


class Style(NamedTuple):
    labels: tuple[str, ...]
    fabricated: str  # a label of the same shape that names no block
    dropped: str  # a label declared twice, so excluded
    accusable: bool


STYLES = {
    "bare-word": Style(("alpha", "beta", "gamma"), "delta", "omega", accusable=False),
    "bare-number": Style(("1", "2", "3"), "9", "7", accusable=False),
    "hyphenated": Style(("doc-1", "doc-2", "doc-3"), "doc-99", "doc-7", accusable=True),
    "dotted": Style(("sec.one", "sec.two", "sec.three"), "sec.nine", "sec.seven", accusable=True),
    "underscored": Style(
        ("source_one", "source_two", "source_three"), "source_nine", "source_seven", accusable=True
    ),
    "mixed": Style(("doc-1", "2", "sec.three"), "doc-99", "doc-7", accusable=True),
}

STRAYS = {
    "none": "",
    "arr[0]": " The code reads arr[0].",
    "[x]": " Fill in [x] later.",
    "[TODO]": " Rates vary [TODO].",
    "[0-1]": " The ratio lies in [0-1].",
    "[1.2]": " Version [1.2] applies.",
    "link": " See [Wikipedia](https://en.wikipedia.org/wiki/Late_fee).",
    "code-span": " Use `refs[{fab}]` in code.",
    "fenced": "\n\n```\nrefs[{fab}] = 1\n```\n",
}

FABRICATIONS = {
    "none": "",
    "bare": " Notices go by courier [{fab}].",
    "linked": " Notices go by courier [{fab}](https://e.com/n).",
    "mixed": " Notices go by courier [{fab}](https://e.com/n), see [{fab}].",
    "in-code": " Notices go by `courier[{fab}]`.",
}
ACCUSED = frozenset({"bare", "mixed"})

REPLIES = {
    "valid-pass": reply(3, supported(1, EVIDENCE)),
    "valid-fail": reply(1, unsupported(1)),
    "nan": '{"score": NaN, "explanation": "x", "verdicts": [{"occurrence": 1, "outcome": "unsupported"}]}',
    "bool-score": json.dumps({"score": True, "verdicts": [supported(1, EVIDENCE)]}),
    "non-object": "[]",
    "missing-verdict": reply(3),
    "duplicate-verdict": reply(3, supported(1, EVIDENCE), supported(1, EVIDENCE)),
    "score-contradicts-band": reply(0, supported(1, EVIDENCE)),
    "ungraded-occurrence": reply(3, supported(1, EVIDENCE), unsupported(2)),
    "null-field": reply(3, supported(1, EVIDENCE, supporting_marker=None)),
}
# What each reply gives an otherwise clean row.
CLEAN = {
    "valid-pass": (True, True, 1.0, None),
    "valid-fail": (True, False, 1 / 3, None),
    "nan": (False, None, None, "invalid_judge_output"),
    "bool-score": (False, None, None, "invalid_judge_output"),
    "non-object": (False, None, None, "invalid_judge_output"),
    "missing-verdict": (False, None, None, "incomplete_judge_verdicts"),
    "duplicate-verdict": (False, None, None, "contradictory_judge_verdicts"),
    "score-contradicts-band": (False, None, None, "judge_score_contradicts_verdicts"),
    "ungraded-occurrence": (False, None, None, "invalid_judge_output"),
    "null-field": (False, None, None, "invalid_judge_output"),
}
FLOOR = (True, False, 0.0, None)


def context(style: Style, *, dropped: bool = False) -> str:
    lines = [f"[{label}] {text}" for label, text in zip(style.labels, TEXTS, strict=True)]
    if dropped:
        lines += [f"[{style.dropped}] A first copy.", f"[{style.dropped}] A second copy."]
    return "\n".join(lines) + "\n"


def response(style: Style, stray: str, fabrication: str, *, dropped: bool = False) -> str:
    text = f"The late fee is 5% [{style.labels[0]}]."
    text += STRAYS[stray].format(fab=style.fabricated)
    text += FABRICATIONS[fabrication].format(fab=style.fabricated)
    if dropped:
        text += f" Copies exist [{style.dropped}]."
    return text


class Row(NamedTuple):
    result: CitationScore
    prompts: int


async def score_all(style: Style, stray: str) -> dict[tuple[str, str, bool], Row]:
    rows = {}
    for fabrication in FABRICATIONS:
        for name, body in REPLIES.items():
            for dropped in (False, True):
                chat = ScriptedChat([body])
                result = await CitationScorer(chat).score(
                    response(style, stray, fabrication, dropped=dropped),
                    context(style, dropped=dropped),
                )
                rows[fabrication, name, dropped] = Row(result, len(chat.prompts))
    return rows


_BASELINES: dict[str, dict[tuple[str, str, bool], Row]] = {}


def baseline(style_name: str) -> dict[tuple[str, str, bool], Row]:
    """The rows of a style with no stray token, computed once per style."""
    if style_name not in _BASELINES:
        _BASELINES[style_name] = asyncio.run(score_all(STYLES[style_name], "none"))
    return _BASELINES[style_name]


class TestCrossProduct:
    @pytest.mark.parametrize("stray", list(STRAYS))
    @pytest.mark.parametrize("style_name", list(STYLES))
    def test_invariants_hold_for_every_combination(self, style_name, stray):
        """The six invariants hold for every fabrication form and judge reply of this style and stray."""
        style = STYLES[style_name]
        rows = asyncio.run(score_all(style, stray))
        clean_rows = baseline(style_name)
        for (fabrication, name, dropped), row in rows.items():
            where = f"{style_name} / {stray} / {fabrication} / {name} / dropped={dropped}"
            accused = style.accusable and fabrication in ACCUSED
            json.dumps(row.result.details, allow_nan=False)
            if dropped and not accused:
                # 6. A cited dropped label blocks assessment before any call.
                assert ((False, None, None, "partial_citation_coverage"), 0) == (
                    outcome(row.result),
                    row.prompts,
                ), where
                continue
            assert 1 == row.prompts, where
            if accused:
                # 1 and 4. A proven fabrication fails, whatever the judge replied.
                assert FLOOR == outcome(row.result), where
            else:
                # 3 and 5. Stray tokens, links, code and unaccusable styles leave a
                # clean row's outcome to the judge's reply alone.
                assert CLEAN[name] == outcome(row.result), where
                assert outcome(clean_rows["none", name, dropped].result) == outcome(row.result), (
                    where
                )
            # 2. The mixed form fails exactly like the bare one.
            if fabrication == "mixed":
                assert outcome(rows["bare", name, dropped].result) == outcome(row.result), where

    @pytest.mark.parametrize("style_name", list(STYLES))
    def test_clean_baseline_always_passes(self, style_name):
        """Invariant 5 on its own: no stray, no fabrication and a valid pass reply passes."""
        row = baseline(style_name)["none", "valid-pass", False]
        assert ((True, True, 1.0, None), 1) == (outcome(row.result), row.prompts)

    @pytest.mark.parametrize("style_name", ["hyphenated", "dotted", "underscored", "mixed"])
    def test_accusable_styles_report_the_fabrication(self, style_name):
        """In an accusable style the bare fabrication is listed under fabricated_citations."""
        row = baseline(style_name)["bare", "valid-pass", False]
        assert [STYLES[style_name].fabricated] == [
            e["label"] for e in row.result.details["fabricated_citations"]
        ]

    @pytest.mark.parametrize("style_name", ["bare-word", "bare-number"])
    def test_unaccusable_styles_ignore_the_fabrication(self, style_name):
        """In a bare style the same marker is ignored: a missed finding, never a false one."""
        row = baseline(style_name)["bare", "valid-pass", False]
        assert ([], [STYLES[style_name].fabricated]) == (
            row.result.details["fabricated_citations"],
            [e["label"] for e in row.result.details["ignored_markers"]],
        )
