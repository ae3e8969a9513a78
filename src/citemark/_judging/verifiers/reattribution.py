"""Re-attribution: which other given source does support a claim its citation does not?

When the verifier finds that a cited source does not entail its sentence's claim
on its own, the row's other sources are tried, one premise each, and the ones that
do entail the claim are named (``supported_by_other_source``). The finding is
advisory: it changes no score and no exit code.

The candidates are the row's sources that the sentence does not cite, blank ones
left out, tried in an order of lexical closeness to the claim that depends on
nothing installed (rank-bm25 is not used): a source's score is the number of
distinct *content words* of the claim that occur in it, where a word is a maximal
run of letters and digits (any script), case-folded, and a content word is one of
three characters or more that is not on the short stop list below, or any word
holding a digit. Higher scores come first; equal scores keep the sources' order.
At most ``max_calls`` candidates are tried per citation, so a judge's cost per
unsupported citation is bounded; every candidate within the bound is tried, and all
that entail the claim are named, in the order tried.

`support` asks the premises (batched with the rest of the row's) and builds the
`Reattribution` finding from the verdicts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["DEFAULT_MAX_CALLS", "Reattribution", "closeness_order", "content_words"]

DEFAULT_MAX_CALLS: Final = 3
"""How many other sources are tried, at most, for one unsupported citation."""

_WORD: Final = re.compile(r"[^\W_]+")
_DIGIT: Final = re.compile(r"\d")
_MIN_LETTERS: Final = 3
# Function words of English that a claim and an unrelated source share by chance.
_STOP: Final = frozenset(
    """
    the and for are but not you all any can had her was one our out his has how its
    who did get may him old see now way use she too own yet nor off per via than that
    this with from they them then there their these those what when where which while
    will would could should have been being into onto over under also just only such
    some more most much many very each both other about above after again below between
    does doing done were your yours ours hers whom whose because until upon within
    without
    """.split()  # noqa: SIM905 - a word list reads best as words
)


def content_words(text: str) -> frozenset[str]:
    """The distinct content words of ``text``, case-folded (see the module docstring)."""
    return frozenset(
        word
        for word in (match.group().casefold() for match in _WORD.finditer(text))
        if _DIGIT.search(word) or (len(word) >= _MIN_LETTERS and word not in _STOP)
    )


def closeness_order(claim: str, candidates: Sequence[tuple[int, str]]) -> list[int]:
    """The candidates' numbers, closest to ``claim`` first.

    Args:
        claim: The claim, markers removed.
        candidates: ``(number, text)`` per candidate source, in the sources' order.

    Returns:
        The numbers, by descending count of the claim's content words found in the
        source, ties kept in the order given.
    """
    wanted = content_words(claim)
    scored = [
        (-len(wanted & content_words(text)), position, number)
        for position, (number, text) in enumerate(candidates)
    ]
    scored.sort()
    return [number for _, _, number in scored]


@dataclass(frozen=True)
class Reattribution:
    """For one citation its source does not support alone: the other sources that do."""

    tried: tuple[int, ...]
    """The other sources asked about, as the answer numbers them, in the order tried."""
    supported_by_other_source: tuple[int, ...]
    """Those the verifier found to entail the claim alone, in the order tried."""
    unjudged: int
    """How many of those tried got no verdict (``entailed`` None)."""

    def as_dict(self) -> dict[str, object]:
        """The finding as JSON-ready fields."""
        return {
            "tried": list(self.tried),
            "supported_by_other_source": list(self.supported_by_other_source),
            "unjudged": self.unjudged,
        }
