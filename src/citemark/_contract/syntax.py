"""Citation syntax: how an answer cites, how a context labels, and how a prompt says so.

This module owns every fact about the written form of a citation, so that no other
module re-derives it: the integer marker group (``[3]``, ``[1, 2]``; SPEC §3.2), the
header a rendered source opens with (``[i]``), the numbering base, the default
labelled-context syntax of the scorer (``[doc-1] text`` at the start of a line, cited
as ``[doc-1]``), and the sentences every prompt uses to ask a model for that syntax.
The marker parser, the renderer, the scorer, the redaction guard, the streaming
resolver and both adapters' prompts and format instructions all read it from here.

To add a citation syntax, change or extend this module and the parser that reads it
(``citemark._markers.grammar`` for integer markers, ``citemark._judging.scorer.labels`` for labels);
see ``docs/architecture.md``.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = [
    "ABSTAIN_RULE",
    "BRACKET_HEADER_PATTERN",
    "CITE_RULE",
    "DEFAULT_CITATION_PATTERN",
    "DEFAULT_INDEX_BASE",
    "DEFAULT_LABEL_PATTERN",
    "GROUP_PATTERN",
    "INDEX_BASES",
    "INT_PATTERN",
    "NUMBERED_HEADER_PATTERN",
    "PLACEHOLDER",
    "check_index_base",
    "citing_rules",
    "no_invention_rule",
    "source_header",
]

# The group pattern. `[0-9]` and never `\d`, which also matches Arabic-Indic,
# fullwidth and other Unicode digits (SPEC §3.2). Possessive quantifiers keep a
# failing match from backtracking, so `[1,1,1,...` with no `]` stays linear.
GROUP_PATTERN: Final = re.compile(r"\[([0-9]++(?:, *+[0-9]++)*+)\]")
"""A marker group: ``[`` INT (``,`` spaces INT)* ``]``, INT made of ASCII digits."""

INT_PATTERN: Final = re.compile(r"[0-9]++")
"""One integer inside a marker group."""

# The headers numbered-context formatters write at the start of a line: "[n]",
# "Source n", "Document #n", "n." or "n)". Read only to recover the numbering of a
# prompt someone else rendered (`citemark.recover_numbering`).
NUMBERED_HEADER_PATTERN: Final = re.compile(
    r"^[ \t]*(?:"
    r"\[([0-9]{1,4})\]"  # [n]
    r"|(?:Source|Document|Doc)(?:[ \t]*ID)?[ \t]*[#:]?[ \t]*([0-9]{1,4})\b"  # Source n, ID: n
    r"|([0-9]{1,4})[.)][ \t])",  # n. or n)
    re.MULTILINE | re.IGNORECASE,
)
"""A source header another formatter wrote; the number is in the one group that matched."""

BRACKET_HEADER_PATTERN: Final = re.compile(r"^\[([0-9]+)\]", re.MULTILINE)
"""A ``[n]`` source header at the start of a line, as `render_sources` writes them; the
number in group 1 (for readers that look for the numbering in a recorded prompt)."""

DEFAULT_INDEX_BASE: Final = 1
"""The number of the first source: marker ``[n]`` names ``sources[n - 1]``."""

INDEX_BASES: Final = (0, 1)
"""The numbering bases a caller may choose: 1 (the default) or 0, for pipelines that
number their sources from 0 (marker ``[n]`` then names ``sources[n]``). Never guessed."""


def check_index_base(value: object) -> int:
    """Return ``value`` if it is a numbering base (0 or 1, an int that is not a bool).

    Raises:
        ValueError: it is anything else.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value not in INDEX_BASES:
        msg = "index_base must be 0 or 1"
        raise ValueError(msg)
    return value


PLACEHOLDER: Final = "[N]"
"""What instructions write where a real marker would go, so that every real ``[i]`` in
a rendered prompt is a source header citemark wrote."""

# A label opens a line: "[", an ASCII id, "]", then horizontal whitespace or the end of
# the line. The boundary after "]" keeps Markdown out: "[docs](https://...)" (a link)
# and "[docs]: https://..." (a reference definition) are not labels. Inside the
# brackets only [ \t] is allowed, never \s, which would let a label span lines.
# Possessive quantifiers keep a run of "[" or "[doc-" without "]" linear. "^" with
# MULTILINE starts lines after "\n"; the lookbehind adds lines after a lone "\r".
DEFAULT_LABEL_PATTERN: Final = (
    r"(?:^|(?<=\r))\[[ \t]*+([A-Za-z0-9][A-Za-z0-9._\-]*+)[ \t]*+\](?=[ \t\r\n]|\Z)"
)
"""The default label syntax: ``[label]`` at the start of a line, then whitespace or
the end of the line. Group 1 is the label."""

# A citation: "[", one id or several separated by commas, "]". The same id grammar as
# labels, so both sides of a row read one syntax; again [ \t] and never \s, so a
# bracketed value wrapped across lines is not a citation.
DEFAULT_CITATION_PATTERN: Final = (
    r"\[[ \t]*+([A-Za-z0-9][A-Za-z0-9._\-]*+"
    r"(?:[ \t]*+,[ \t]*+[A-Za-z0-9][A-Za-z0-9._\-]*+)*+)[ \t]*+\]"
)
"""The default citation syntax: ``[doc-1]``, or ``[doc-1, doc-2]`` for several. Group
1 holds the label, or labels separated by commas."""

CITE_RULE: Final = (
    "After each claim, cite the sources that support it by their number in square "
    f"brackets, like {PLACEHOLDER}. Cite several as [N][M] or [N, M]."
)
"""The one sentence that names the marker syntax to a model."""

ABSTAIN_RULE: Final = (
    "If the sources do not answer the question, say so in one sentence and cite nothing."
)
"""What a model does when the sources do not answer: an abstention is a valid answer."""


def no_invention_rule(where: str = "from the list below") -> str:
    """The sentence that forbids citing anything but the numbered sources.

    Args:
        where: Where the numbered sources are, as the prompt shows them.

    Returns:
        The sentence.
    """
    return (
        f"Cite only numbers {where}. Never invent a source number, and never cite "
        "titles, file names, URLs or footnotes."
    )


def citing_rules(where: str = "from the list below", bullet: str = "- ") -> str:
    """The three citing rules, one per line, as every citemark prompt states them.

    Args:
        where: Where the numbered sources are (see `no_invention_rule`).
        bullet: What each line opens with.

    Returns:
        The rules, separated by newlines, without a trailing newline.
    """
    rules = (CITE_RULE, no_invention_rule(where), ABSTAIN_RULE)
    return "\n".join(bullet + rule for rule in rules)


def source_header(number: int) -> str:
    """The header a rendered source opens with: ``[number]``."""
    return f"[{number}]"
