"""The marker grammar of SPEC §3.2, case by case."""

from __future__ import annotations

import re

import pytest

from citemark import parse_markers
from citemark._markers.grammar import OVERSIZED_MARKER, group_bodies

BIG = "9" * 30

# (text, the integers that cite, in order). Every rule of SPEC §3.2 has cases here.
CASES: list[tuple[str, list[int]]] = [
    # -- the group grammar --------------------------------------------------------
    ("[1]", [1]),
    ("a [2] b", [2]),
    ("a[1]b", [1]),
    ("[1][2]", [1, 2]),
    ("[1][2][3]", [1, 2, 3]),
    ("[1, 2]", [1, 2]),
    ("[1,2]", [1, 2]),
    ("[1,  2,3]", [1, 2, 3]),
    ("[1]\n[2]", [1, 2]),
    ("[0]", [0]),
    ("[007]", [7]),
    (f"[{BIG}]", [int(BIG)]),
    ("[1 ,2]", []),
    ("[ 1]", []),
    ("[1 ]", []),
    ("[1,]", []),
    ("[,1]", []),
    ("[]", []),
    ("[1,\t2]", []),
    ("[1a]", []),
    ("[a1]", []),
    ("[-1]", []),
    ("[+1]", []),
    ("[1.2]", []),
    ("[1-2]", []),
    ("[1;2]", []),
    ("[[1]]", [1]),
    ("[[1]](x)", [1]),
    ("[1] [1]", [1, 1]),
    # -- ASCII digits only --------------------------------------------------------
    ("[١]", []),  # Arabic-Indic one
    ("[٣]", []),
    ("[۳]", []),  # Extended Arabic-Indic three
    ("［1］", []),  # fullwidth brackets
    ("[１]", []),  # fullwidth digit
    ("[¹]", []),  # superscript one
    ("[²]", []),
    ("[1١]", []),
    ("[१]", []),  # Devanagari one
    # -- never markers: footnotes and redaction tokens -----------------------------
    ("[^1]", []),
    ("text[^1] and [^2]", []),
    ("[PERSON_1]", []),
    ("[PERSON_1] said [1]", [1]),
    ("[EMAIL_2][2]", [2]),
    ("[IPV4_1], [PHONE_3] [3]", [3]),
    # -- links: text cites, destination does not ---------------------------------
    ("[1](https://x)", [1]),
    ("[1](https://x)[2](https://y)", [1, 2]),
    ("[x](https://e/[2])", []),
    ("[x](https://e/[2]) and [3]", [3]),
    ("(see) [x](https://e/[2]) and [3]", [3]),  # a "(" first must not hide the link
    ("[3](https://x) and [x](y [4])", [3, 4]),  # "[4]" is no title: not a link
    ("[x](<https://e/[2]>)", []),
    ('[x](https://e/[2] "t [5]")', []),  # a title is an attribute: hidden (issue 11)
    ("[x](https://e/(a)[2])", []),
    ("[x](https://e/[2]", [2]),  # unclosed: not a link
    ("[x]\n(https://e/[2])", [2]),
    ("[x] (https://e/[2])", [2]),
    ("![1](img/[2].png)", []),  # alt text is an attribute: hidden (issue 11)
    ("[1](img/[2].png)", [1]),
    ("[[a](u1)](u2[3])", [3]),  # links cannot contain links
    ("[a](u1) [b](u2[4]) [5]", [5]),
    ("[a `]`](u[2])", []),
    ("[`x`](u[2]) [3]", [3]),
    ("[1]: https://x", []),  # a reference definition renders as nothing (issue 11)
    ("[1]: https://x\n\n[1]", [1]),  # its shortcut reference shows "1" as link text
    ("[a][1]\n\n[1]: https://x", []),  # a full reference's label is consumed
    ("[a][1]\n\n[2]", [1, 2]),  # no definition: no link, both cite
    ("[a \\[1] b](u[2])", [1, 2]),  # an escaped "[" opens nothing; "]" closes "[a"
    # -- inline code spans ----------------------------------------------------------
    ("`[1]`", []),
    ("`[1]` [2]", [2]),
    ("``[1]``", []),
    ("`` [1] ` ``", []),
    ("``[1]`", [1]),
    ("`[1]``", [1]),
    ("`a\nb [1]`", []),
    ("`a\n\nb [1]`", [1]),
    ("`[1]` `` [2] `` [3]", [3]),
    ("\\`[1]`", [1]),  # an escaped backtick opens nothing
    ("`a\\`[1]", [1]),  # backslashes do not escape inside code
    ("text ```[1]``` more", []),
    ("text ```[1]\nmore", [1]),  # opened mid-line: must close
    ("text ```[1]`` more", [1]),
    ("``\n[1]\n``", []),
    ("a `b\n# c` [1]", [1]),  # a heading ends the paragraph
    ("a `b\n---\nc` [1]", [1]),  # so does a setext underline
    ("a `b\n> c` [1] `d`", []),
    # -- fenced code --------------------------------------------------------------
    ("```\n[1]\n```", []),
    ("```\n[1]\n```\n[2]", [2]),
    ("~~~\n[1]\n~~~\n[2]", [2]),
    ("```\n[1]\n", []),  # unclosed: runs to the end
    ("```\n[1]\n``\n[2]", []),  # a shorter closer does not close
    ("````\n[1]\n```\n[2]\n````\n[3]", [3]),
    ("```\n[1]\n~~~\n[2]\n```\n[3]", [3]),  # the other character does not close
    ("~~~~\n[1]\n~~~~~\n[2]", [2]),  # a longer closer closes
    ("   ```\n[1]\n   ```\n[2]", [2]),
    ("    ```\n[1]\n    ```\n[2]", [1, 2]),  # four spaces: not a fence
    ("```python\nx = a[1]\n```\nSee [2].", [2]),
    ("```\n```\n[1]", [1]),
    ("``` ` ```\n[1]", [1]),  # a backtick in the info string: an inline span instead
    ("~~~ `x`\n[1]\n~~~", []),  # tilde fences allow it
    ("```\n[1]\n```   \n[2]", [2]),
    ("```\n[1]\n``` x\n[2]\n```", []),  # a closer takes no info string
    ("```[9]\ncode\n```\n[1]", [1]),  # the info string is part of the fence
    ("```\r\n[1]\r\n```\r\n[2]", [2]),
    ("~~\n[1]\n~~", [1]),  # two tildes are no fence
    ("text ~~~ [1] ~~~", [1]),
    # -- containers -----------------------------------------------------------------
    ("- ```\n  [1]\n  ```\n[2]", [2]),
    ("1. ```\n   [1]\n   ```\n[2]", [2]),
    ("> ```\n> [1]\n> ```\n[2]", [2]),
    ("> ```\n> [1]\n\n[2]", [2]),  # the fence closes with its block quote
    ("- a\n\n```\n[1]\n```", []),
    ("-\tab`~~~ [3]", [3]),  # a tab after the marker is columns, not characters
    ("- a\n\n\tx~~~ [3]", [3]),
    ("- a\n\n\t```\n\t[3]\n\t```", []),  # a tab-indented fence inside the item
    (">\t```\n>\t[3]\n>\t```\n[4]", [4]),
    # -- autolinks and raw HTML win over code spans and links ------------------------
    ("a <http://x`> [1] `", [1]),
    ('a <a title="`"> [1] `', [1]),
    ("a <!-- ` --> [1] `", [1]),
    ("a <?php ` ?> [1] `", [1]),
    ('a [x <b c="](z[1])">', []),  # an attribute of raw HTML (issue 11)
    ("a <http://e/[2]> b", []),  # an autolink's URL is no marker group (issue 11)
    ("a <b `[1]` [2]", [2]),  # no tag after all: the code span stands
    # -- raw HTML and indented code cite ---------------------------------------------
    ("<foo>\n` [3] `", [3]),  # an HTML block of type 7
    ("<e>\xa0\n~~~[9]", []),  # no type-7 block (NBSP is no whitespace): a fence
    ("See [a](<b>[9]) here.", [9]),  # "<b>" is raw HTML: no raw destination starts with "<"
    ("- `[9]\n1.\n`", [9]),  # a list item after a lost container starts a block
    ("> `[9]\n2. x\n`", [9]),
    ("[a]: `x\n[9] `", [9]),  # a definition's line is no inline content
    ('[a]: <u> "t"\n`x [9]`', []),  # after the definition, inline parsing resumes
    ("<div>\n`[1]`\n</div>", [1]),
    ("    `[1]`", []),  # indented code (issue 11)
    ("- a\n\n    [1]", [1]),  # a four-space list continuation is no code
    ("> b\n>\n>     [1]", []),  # indented code inside a quote
    ("> b\n>     [1]", [1]),  # but not as a paragraph's continuation
    ("> a\n> <b\n> title='[1]'>", []),  # a tag continued on a quoted line
    ("> [a](u\n> '[1]')", []),  # a title continued on a quoted line
    ("> [a]:\n> u '[1]'\n\n[2]", [2]),  # a definition spanning quoted lines
    ("| a | b |\n|---|---|\n| [1] | `[2]` | [3] |", [1]),  # cells; one past the header
    ("<div>\n[1] <i title='[2]'>\n</div>", [1]),  # HTML block: data cites, tags do not
    ("# Heading [1]", [1]),
]


def cited(text: str) -> list[int]:
    return [o.number for o in parse_markers(text)]


class TestMarkerTable:
    def test_table_is_large(self):
        """The table covers the grammar with at least 80 cases."""
        assert len(CASES) >= 80

    @pytest.mark.parametrize(("text", "expected"), CASES, ids=[repr(t) for t, _ in CASES])
    def test_case(self, text, expected):
        """Each text cites exactly the listed integers, in order."""
        assert expected == cited(text)

    @pytest.mark.parametrize(("text", "expected"), CASES, ids=[repr(t) for t, _ in CASES])
    def test_fast_path_agrees(self, text, expected):
        """The body-only fast path used by resolve finds the same integers."""
        numbers = [int(d) for body in group_bodies(text) for d in body.split(",")]
        assert expected == numbers


class TestOccurrences:
    def test_offsets(self):
        """Each occurrence's offsets slice back to its digits and its whole group."""
        text = "See [12] and [3, 4]."
        occ = parse_markers(text)
        assert [(12, "12", "[12]"), (3, "3", "[3, 4]"), (4, "4", "[3, 4]")] == [
            (o.number, text[o.start : o.end], text[o.group_start : o.group_end]) for o in occ
        ]

    def test_oversized_integer_never_crashes(self):
        """A 5,000-digit marker is recorded as OVERSIZED_MARKER instead of raising."""
        text = "[" + "1" * 5000 + "]"
        assert [OVERSIZED_MARKER] == cited(text)

    def test_leading_zeros_do_not_count_towards_size(self):
        """Leading zeros are stripped before the size bound applies."""
        text = "[" + "0" * 5000 + "7]"
        assert [7] == cited(text)


def naive_word_parse(text: str) -> list[str]:
    return re.findall(r"\[(\w+)\]", text)


def naive_digit_parse(text: str) -> list[str]:
    return re.findall(r"\[(\d+)\]", text)


class TestNaiveVariantsAreCaught:
    """Each regression assertion, run against the looser variant, must fail."""

    REDACTED = "[PERSON_1] wrote to [EMAIL_2] about the patent clause [1]."

    def assert_only_real_marker(self, parse):
        assert [str(x) for x in parse(self.REDACTED)] == ["1"]

    def test_redaction_tokens_are_not_markers(self):
        """A restored redaction token such as [PERSON_1] is never read as a marker."""
        self.assert_only_real_marker(cited)

    def test_looser_pattern_is_caught(self):
        """The same assertion fails against the `\\[(\\w+)\\]` pattern."""
        with pytest.raises(AssertionError):
            self.assert_only_real_marker(naive_word_parse)

    def assert_no_unicode_digit(self, parse):
        assert [str(x) for x in parse("It is a Combined Work [١] and [３].")] == []

    def test_unicode_digits_are_not_markers(self):
        """Arabic-Indic and fullwidth digits never form a marker."""
        self.assert_no_unicode_digit(cited)

    def test_backslash_d_is_caught(self):
        """The same assertion fails against a `\\d`-based pattern."""
        with pytest.raises(AssertionError):
            self.assert_no_unicode_digit(naive_digit_parse)

    def assert_code_ignored(self, parse):
        text = "Guard it:\n\n```python\nif names[0] == 'x':\n    pass\n```\nSee [2]."
        assert [str(x) for x in parse(text)] == ["2"]

    def test_code_is_masked(self):
        """Brackets inside a fenced block do not cite."""
        self.assert_code_ignored(cited)

    def test_unmasked_pattern_is_caught(self):
        """The same assertion fails against a pattern that does not mask code."""
        with pytest.raises(AssertionError):
            self.assert_code_ignored(naive_digit_parse)
