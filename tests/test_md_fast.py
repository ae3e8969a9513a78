"""The block scanner's fast path answers exactly as the full scanner, or not at all.

`citemark._markers.fast.fast_spans` reads simply shaped answers (plain paragraphs, bullet
items, one-level quotes, top-level fences and inert tables) without the line-by-line
container walk. Wherever it answers, its spans must equal `block_spans`'; the texts
are soups of exactly the lines it accepts and of lines next to them that it must
refuse, plus the differential test's answer shapes.
"""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_commonmark_differential import answers

from citemark._markers.blocks import block_spans
from citemark._markers.fast import fast_spans, quick_spans

LINES = [
    "",
    "Plain [1] text",
    "- item [2]",
    "* item `a[1]` b",
    "+ item <b>[3]</b>",
    "> quoted [4]",
    "> quoted `x",
    "y` [5] and ](z)",
    "see [x](u [6]) and [y]",
    "![alt [7]](img)",
    "<!-- [8]",
    "--> after",
    "`open",
    "- ```",
    "* ~~~ x",
    "- ```py `",
    "`x` y [1]",
    "~x [2]",
    "> `a",
    "- `b` [3]",
    "~~ t",
    "```",
    "```py",
    "````",
    "~~~",
    "code [9] `",
    "| a | b |",
    "|---|---|",
    "|-|",
    "| c [1] | d |",
    "| e | f | g [2] |",
    "| `k[3]` |",
    "|a|b",
    "\\[4] x \\",
    "[a]",
    "-  two spaces",
    "  indented",
    "    code [5]",
    "---",
    "# heading [6]",
    "1. ordered [7]",
    "[x]: /url",
    "[x] [8]",
]


def _soup(lines: list[str], *, newline_at_end: bool) -> str:
    return "\n".join(lines) + ("\n" if newline_at_end else "")


class TestFastPath:
    @settings(
        max_examples=3000, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
    )
    @given(
        lines=st.lists(st.sampled_from(LINES), min_size=1, max_size=14),
        newline_at_end=st.booleans(),
    )
    @example(lines=["Para [1]", "| a | b |", "|---|---|"], newline_at_end=False)
    @example(lines=["", "| a | b |", "|---|---|", "| c | d | e |"], newline_at_end=True)
    @example(lines=["> q `a", "lazy` [1]", "> more"], newline_at_end=False)
    @example(lines=["- a", "```", "[2]", "```", "| a |", "|-|"], newline_at_end=False)
    def test_equals_the_full_scanner_on_line_soups(
        self, lines: list[str], newline_at_end: bool
    ) -> None:
        text = _soup(lines, newline_at_end=newline_at_end)
        fast = fast_spans(text)
        if fast is not None:
            assert fast == block_spans(text)

    @settings(
        max_examples=600, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
    )
    @given(answers())
    def test_equals_the_full_scanner_on_answer_shapes(self, answer: tuple[str, list[int]]) -> None:
        text = answer[0]
        fast = fast_spans(text)
        if fast is not None:
            assert fast == block_spans(text)

    def test_answers_for_the_common_shapes(self) -> None:
        # The shapes it exists for: refusing them would be correct but slow.
        text = (
            "Intro [1].\n\n- item [2]\nlazy\n\n> quote [3]\n\n```py\nx[1]\n```\n\n"
            "| a | b |\n|---|---|\n| c [4] | d |\n\nEnd `x[2]` [5](u)."
        )
        fast = fast_spans(text)
        assert fast is not None
        assert fast == block_spans(text)

    def test_a_naive_table_rule_is_caught(self) -> None:
        # A row with more cells than the header has a masked overflow cell: the fast
        # path refuses it, where accepting every pipe-led row would lose the mask.
        text = "| a |\n|---|\n| b | [1] |"
        assert fast_spans(text) is None
        assert any(span.kind == "table_overflow" for span in block_spans(text))
        naive: list[object] = []  # what accepting the table as inert would answer
        assert naive != block_spans(text)

    def test_many_spans_in_a_quote_map_back_as_one_by_one(self) -> None:
        # Over eight spans in a quoted paragraph take the batch mapping; a naive
        # mapping that ignores the stripped "> " would be off by two per line.
        text = "> `a\n" * 40 + "> [1]"
        fast = fast_spans(text)
        assert fast is not None
        assert fast == block_spans(text)
        assert len(fast) == 40  # 20 spans, each over two lines
        naive = [(s.start - 2, s.end - 2) for s in fast]
        assert naive != [(s.start, s.end) for s in block_spans(text)]


# Lines next to the quick path's shapes that it must refuse or read exactly.
QUICK_LINES = [
    *LINES,
    "See [3](https://e.org/doc) x",
    "![i [1]](j)",
    "[x [1]](u)",
    "\\[a](b [2])",
    "[a\\](b [3])",
    "[a](b [4] c)",
    "[a](<b[5]>)",
    "[](x[6])",
    "[p](q)(r [7])",
    "`[`](u[8])",
    "[a `b`](c[9])",
    "\\`a` [1] b`",
    "``a [2]``",
    "`x` `y [3]` `z`",
    "  ```",
    " ~~~ [4]",
    "a ~~~ b [5]",
    "a\tb [6]",
    ">     y [7]",
    "-     z [8]",
    "1. `x` [9]",
    "| a | b |  ",
    "| a | b | c",
    "|",
    "Title [1]",
    "===",
]


class TestQuickPath:
    @settings(
        max_examples=3000, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
    )
    @given(
        lines=st.lists(st.sampled_from(QUICK_LINES), min_size=1, max_size=14),
        newline_at_end=st.booleans(),
    )
    @example(lines=["(x) [1]", "", "see [a](b) [2]"], newline_at_end=False)
    @example(lines=["```", "    [1]", "```", "", "| a |", "|-|", "| b [2] |"], newline_at_end=True)
    def test_equals_the_full_scanner_on_line_soups(
        self, lines: list[str], newline_at_end: bool
    ) -> None:
        text = _soup(lines, newline_at_end=newline_at_end)
        quick = quick_spans(text)
        if quick is not None:
            assert quick == block_spans(text)

    @settings(
        max_examples=600, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck)
    )
    @given(answers())
    def test_equals_the_full_scanner_on_answer_shapes(self, answer: tuple[str, list[int]]) -> None:
        text = answer[0]
        quick = quick_spans(text)
        if quick is not None:
            assert quick == block_spans(text)

    def test_answers_for_the_shapes_it_exists_for(self) -> None:
        # Refusing these would be correct but slow (bench/markers.py).
        text = (
            "Intro [1] with `x[2]` and [3](https://e.org/doc).\n\n- item [2]\n\n"
            "```py\ndef f(a):\n    return a[1]\n```\n\n"
            "| a | b |\n|---|---|\n| c [4] | d |\n\n> quote [3]\n\nEnd [5]."
        )
        quick = quick_spans(text)
        assert quick is not None
        assert quick == block_spans(text)
        assert [span.kind for span in quick] == ["code", "link_destination", "code"]

    def test_an_escaped_backtick_is_refused_where_a_naive_pairing_is_wrong(self) -> None:
        # "\`" is a literal backtick, so the code span is "` b`", not "`a`": pairing
        # the first two backticks on the line, as a naive rule would, masks the wrong
        # range; the quick path leaves such a line to the full scanner.
        text = "\\`a` [1] b`"
        assert quick_spans(text) is None
        naive = [(1, 4)]  # the first two backticks paired
        assert naive != [(s.start, s.end) for s in block_spans(text)]

    def test_an_indented_fence_is_refused_where_a_column_rule_is_wrong(self) -> None:
        # A fence may be indented up to three spaces; reading only column 0 fences, as
        # a naive rule would, leaves the marker in it visible.
        text = "Intro.\n\n  ```\n[1]\n  ```"
        assert quick_spans(text) is None
        assert block_spans(text)  # the full scanner masks the fence
        naive: list[object] = []  # nothing at column 0
        assert naive != block_spans(text)
