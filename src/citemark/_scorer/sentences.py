"""Sentence coverage: which sentences of an answer carry at least one resolved citation.

A citation checker that only looks at the markers an answer wrote cannot see the
claims it left uncited. Sentence coverage is the share of the answer's sentences
that carry at least one resolved citation, with the uncited ones listed. It is
information: the scorer reports it on every row and fails a row on it only when the
caller sets a minimum.

Sentences are found without a language model, so the split is approximate: a
sentence ends at ``.``, ``!`` or ``?`` (optionally followed by closing quotes or
brackets) before whitespace or the end of the text, and at every line break, so a
list item or a heading is a sentence of its own. Code, link destinations and the
markers themselves are blanked first: a full stop inside code ends nothing, and a
piece holding no letter or digit once they are blanked (a lone marker, a blank
line, a code block) is not a sentence. A marker that opens a piece, with nothing
before it but whitespace and punctuation, belongs to the sentence before it, as in
``"It is perpetual. [doc-1] It costs nothing."``. Abbreviations such as ``e.g.`` end
a sentence here; that is a known limitation.

Linear in the text: one pass to blank, one pass to split, one search per sentence.
"""

from __future__ import annotations

import bisect
import re
from typing import TYPE_CHECKING

from citemark._scorer.findings import SentenceCoverage

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["sentence_coverage"]

_END = re.compile(r"[.!?]++[\"'\u201d\u2019)\]]*+(?=\s|\Z)|\r\n|\r|\n")
# A letter or a digit in any script: \w without the underscore.
_WORDCHAR = re.compile(r"[^\W_]")
_NONBLANK = re.compile(r"\S")


def sentence_coverage(
    text: str, blanked: Iterable[tuple[int, int]], cited: Iterable[int]
) -> SentenceCoverage:
    """Measure how many sentences of ``text`` carry a resolved citation.

    Args:
        text: The answer.
        blanked: Ranges ``(start, end)`` that are not prose: code, link destinations
            and every marker, in any order; they may overlap.
        cited: The offsets at which resolved citations start.

    Returns:
        The coverage: ``sentences`` (how many), ``cited_sentences``, ``coverage``
        (their ratio, or None when there is no sentence) and ``uncited_sentences``
        (the text of each uncited sentence, stripped, in order).
    """
    plain = _blank(text, blanked)
    piece_starts: list[int] = []
    # Per piece: the sentence it is (or None), the sentence a marker opening it
    # belongs to, and the sentence a marker after its first word belongs to.
    opening_owner: list[int | None] = []
    inner_owner: list[int | None] = []
    firsts: list[int] = []
    sentences: list[tuple[int, int]] = []
    last_sentence: int | None = None
    broken = True  # whether a line break separates this piece from the last sentence
    pos = 0
    for end in _ends(plain):
        first = _WORDCHAR.search(plain, pos, end)
        piece_starts.append(pos)
        if first is None:
            firsts.append(end)
            opening_owner.append(last_sentence)
            inner_owner.append(last_sentence)
        else:
            index = len(sentences)
            # Shown from its first non-blank character: markers opening the piece
            # belong to the sentence before, and so does their text.
            shown = _NONBLANK.search(plain, pos, end)
            sentences.append((shown.start() if shown else pos, end))
            firsts.append(first.start())
            opening_owner.append(index if broken or last_sentence is None else last_sentence)
            inner_owner.append(index)
            last_sentence = index
            broken = False
        if plain[end - 1 : end] in ("\n", "\r"):
            broken = True
        pos = end
    carrying = [False] * len(sentences)
    for at in cited:
        i = bisect.bisect_right(piece_starts, at) - 1
        if i < 0:
            continue
        owner = inner_owner[i] if at >= firsts[i] else opening_owner[i]
        if owner is None and sentences:
            owner = 0  # a marker before every sentence belongs to the first one
        if owner is not None:
            carrying[owner] = True
    total = len(sentences)
    cited_count = sum(carrying)
    return SentenceCoverage(
        sentences=total,
        cited_sentences=cited_count,
        coverage=cited_count / total if total else None,
        uncited_sentences=tuple(
            text[start:end].strip()
            for (start, end), hit in zip(sentences, carrying, strict=True)
            if not hit
        ),
    )


def _ends(plain: str) -> list[int]:
    """Where each piece ends: after a sentence end or a line break, and at the end."""
    ends = [m.end() for m in _END.finditer(plain)]
    if not ends or ends[-1] != len(plain):
        ends.append(len(plain))
    return ends


def _blank(text: str, ranges: Iterable[tuple[int, int]]) -> str:
    """``text`` with every range replaced by spaces of the same length."""
    merged = sorted(ranges)
    if not merged:
        return text
    pieces: list[str] = []
    pos = 0
    for start, end in merged:
        if end <= pos:
            continue
        begin = max(start, pos)
        pieces.append(text[pos:begin])
        pieces.append(" " * (end - begin))
        pos = end
    pieces.append(text[pos:])
    return "".join(pieces)
