"""The citation scorer's judge prompt: occurrence tags, grading scope and the rubric.

The unit of judgment is the citation occurrence, not the source: two claims citing
one block are two things to check. The judge therefore reads the response as it was
written, with a tag such as ``⟦2⟧`` inserted right after each resolved citation, and
answers per tag number. The tag binds each verdict to its citation exactly, without
anyone having to decide where a claim begins.

Annotation is purely additive. The tag delimiters are chosen per response: the first
candidate pair neither of whose characters occurs in the response (nor in the label
and citation patterns), and once every single character is taken, the first pair
repeated one more time than its longest run in the response, which no finite text can
exhaust. Nothing in the response is stripped or altered, so removing the tags gives
the response back exactly. No candidate is ``[`` or ``]``, so a tag can never read as
a citation in the default syntax.

The prompt names the occurrences to grade, says that fabricated citations are scored
outside the judge, and states the rubric in the same terms the reply validator
enforces (see ``_scorer_reply``): one verdict per listed occurrence; ``supported``
quotes the cited block; ``misattributed`` names another block and quotes text found
there and not in the cited block; band 2 or 3 when every verdict is ``supported``,
band 0 or 1 otherwise.
"""

from __future__ import annotations

import re
import string
from typing import TYPE_CHECKING, Final

from citemark._sources.render import indent_block, prompt_sha256

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "SCORER_PROMPT",
    "SCORER_PROMPT_SHA256",
    "annotate",
    "choose_delimiters",
    "remove_tags",
    "render_scorer_prompt",
]

# Named pairs first, then private-use code points in pairs. None is "[" or "]" (a tag
# must never match a citation pattern), a backtick or a tilde (a tag must not open
# code), a digit (the tag's own number) or "(" (a tag after link text must not read
# as a link destination). A test asserts this for the whole list.
_NAMED_PAIRS: Final = (
    ("\u27e6", "\u27e7"),  # ⟦ ⟧ mathematical white square brackets
    ("\u2e24", "\u2e25"),  # ⸤ ⸥ bottom half brackets
    ("\u2985", "\u2986"),  # ⦅ ⦆ white parentheses
    ("\u2989", "\u298a"),  # ⦉ ⦊ z notation binding brackets
)
_PRIVATE_USE: Final = range(0xE000, 0xF900, 2)
CANDIDATE_PAIRS: Final = (
    *_NAMED_PAIRS,
    *((chr(code), chr(code + 1)) for code in _PRIVATE_USE),
)
"""Every single-character delimiter pair, in the order they are tried."""

SCORER_PROMPT: Final = """\
You are checking the citations in a response that was written from the labelled \
context blocks below. Each block starts with its label.

Context:

{context}

Question: {question}

Response:

{response}

End of response.

{tag_note}

Grade exactly these citation occurrences, one verdict each, and no other text in \
the response:
{occurrences}
{fabricated_note}
For each occurrence, decide whether the block it cites supports the claim that the \
citation is attached to, and give exactly one verdict with one of three outcomes:
- "supported": the cited block supports the claim. "context_span" is a quote of at \
least 2 characters, copied word for word from the cited block, that supports it.
- "misattributed": the cited block does not support the claim, but another block \
does. "supporting_marker" is that other block's label, written exactly as in the \
list above (for example {example_label}). "context_span" is a quote of at least 2 \
characters, copied word for word from that other block, that does not also appear in \
the cited block: when the two blocks share wording, quote what tells them apart, \
such as the figure that differs.
- "unsupported": no block supports the claim. It has no "context_span" and no \
"supporting_marker".
Any verdict may add "claim_span": the claim you graded, copied word for word from \
the response, without the occurrence tag.

Then score the occurrences listed above, and only those, with one of these bands:
3: every occurrence is supported, and each cites the block that states its claim \
most directly.
2: every occurrence is supported, but at least one cites a block that states its \
claim less directly than another block does.
1: at least one occurrence is misattributed or unsupported, but the response's \
central claim cites a block that supports it.
0: the response's central claim cites a block that does not support it: it is \
misattributed or unsupported.

Reply with exactly one JSON object and nothing else: no prose before or after it, no \
code fence. The object has exactly these fields: "score", the band as an integer \
from 0 to 3; "explanation", one or two sentences; and "verdicts", a list with one \
object per occurrence, each with "occurrence" (its number, an integer), "outcome", \
and the fields that outcome takes. For example:
{{"score": 1, "explanation": "The second claim is stated only in another block.", \
"verdicts": [{{"occurrence": 1, "outcome": "supported", \
"context_span": "quoted from the cited block"}}, {{"occurrence": 2, \
"outcome": "misattributed", "supporting_marker": "{example_label}", \
"context_span": "quoted from that block, not in the cited one"}}]}}"""
"""The judge prompt of the citation scorer, a `str.format` template filled once."""

SCORER_PROMPT_SHA256: Final = prompt_sha256(SCORER_PROMPT)
"""The SHA-256 hex digest of `SCORER_PROMPT`, recorded with every judged row."""

# SCORER_PROMPT as (text, is_field) parts, in order: a literal, or a field's name.
_PARSED_PROMPT: Final = tuple(
    (text, is_field)
    for literal, field, _, _ in string.Formatter().parse(SCORER_PROMPT)
    for text, is_field in ((literal, False), (field or "", field is not None))
    if text
)

_TAG_NOTE: Final = """\
Each citation you must grade is followed in the response by an occurrence tag: \
{open}, its occurrence number, then {close}, for example {open}1{close}. The \
sequence {open} does not occur anywhere in the response as it was written, so text \
that resembles part of a tag is the response's own."""


def choose_delimiters(response: str, reserved: str = "") -> tuple[str, str]:
    """Pick an opening and closing tag delimiter that ``response`` does not contain.

    The first candidate pair with neither character in ``response`` or in
    ``reserved`` (the text of the label and citation patterns) is used. When every
    pair is taken, the first pair not in ``reserved`` is repeated one more time than
    the longest run of either of its characters in ``response``, so neither
    repeated sequence occurs in it.
    """
    opener, closer = _NAMED_PAIRS[0]
    if opener not in response and closer not in response and not _in(reserved, opener, closer):
        return opener, closer  # the common case, without building a set of the response
    taken = set(response) | set(reserved)
    for opener, closer in CANDIDATE_PAIRS:
        if opener not in taken and closer not in taken:
            return opener, closer
    opener, closer = next(
        ((a, b) for a, b in CANDIDATE_PAIRS if a not in reserved and b not in reserved),
        _NAMED_PAIRS[0],
    )
    length = max(_longest_run(response, opener), _longest_run(response, closer)) + 1
    return opener * length, closer * length


def annotate(response: str, positions: Sequence[int], opener: str, closer: str) -> str:
    """Insert the tag ``{opener}{k}{closer}`` at ``positions[k - 1]``, for each k.

    ``positions`` must be non-decreasing; several tags at one position keep their
    order. Nothing else changes: `remove_tags` gives ``response`` back.
    """
    pieces: list[str] = []
    pos = 0
    for number, at in enumerate(positions, start=1):
        pieces.append(response[pos:at])
        pieces.append(f"{opener}{number}{closer}")
        pos = at
    pieces.append(response[pos:])
    return "".join(pieces)


def remove_tags(annotated: str, opener: str, closer: str) -> tuple[str, int]:
    """Remove every ``{opener}<digits>{closer}`` from ``annotated``; return it and the count."""
    return re.subn(re.escape(opener) + "[0-9]++" + re.escape(closer), "", annotated)


def render_scorer_prompt(  # noqa: PLR0913 - one argument per prompt section
    *,
    context: str,
    question: str,
    annotated: str,
    delimiters: tuple[str, str],
    graded: Sequence[str],
    fabricated: Sequence[str],
    example_label: str,
) -> str:
    """Fill `SCORER_PROMPT` once; no filled-in value is ever formatted again.

    Args:
        context: The blocks, rendered with their headers and indented text.
        question: The question the response answered; may be empty.
        annotated: The response with its occurrence tags.
        delimiters: The tag's opening and closing sequences.
        graded: The header of the block each occurrence cites, in occurrence order.
        fabricated: The labels cited that name no block.
        example_label: A real label, used in the instructions' examples.

    Returns:
        The prompt.
    """
    opener, closer = delimiters
    occurrences = "\n".join(
        f"- occurrence {number} ({opener}{number}{closer}) cites block {header}"
        for number, header in enumerate(graded, start=1)
    )
    fabricated_note = ""
    if fabricated:
        fabricated_note = (
            "\nThe response also cites "
            + ("a label that names" if len(fabricated) == 1 else "labels that name")
            + " no block in the context: "
            + ", ".join(fabricated)
            + ". Citations that name no block are handled outside your score: do not "
            "grade them, and do not let them affect your score.\n"
        )
    values = {
        "context": context,
        "question": indent_block(question) if question.strip() else "(none given)",
        "response": annotated,
        "tag_note": _TAG_NOTE.format(open=opener, close=closer),
        "occurrences": occurrences,
        "fabricated_note": fabricated_note,
        "example_label": example_label,
    }
    # The same text SCORER_PROMPT.format(**values) gives (a test asserts it), from
    # the template parsed once: formatting a 3 KB template per row is measurable in
    # a batch of judge calls.
    return "".join(values[part] if field else part for part, field in _PARSED_PROMPT)


def _in(text: str, opener: str, closer: str) -> bool:
    return opener in text or closer in text


def _longest_run(text: str, char: str) -> int:
    if char not in text:
        return 0
    return max(len(run) for run in re.findall(re.escape(char) + "+", text))
