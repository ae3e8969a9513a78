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
from typing import TYPE_CHECKING, NamedTuple

from citemark._judging.scorer.findings import SentenceCoverage

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "SentenceSplit",
    "cite_spans",
    "coverage_words",
    "sentence_coverage",
    "split_sentences",
]

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
    found = split_sentences(text, blanked, cited)
    carrying = [False] * len(found.spans)
    for owner in found.owners:
        if owner is not None:
            carrying[owner] = True
    total = len(found.spans)
    cited_count = sum(carrying)
    return SentenceCoverage(
        sentences=total,
        cited_sentences=cited_count,
        coverage=cited_count / total if total else None,
        uncited_sentences=tuple(
            text[start:end].strip()
            for (start, end), hit in zip(found.spans, carrying, strict=True)
            if not hit
        ),
    )


class SentenceSplit(NamedTuple):
    """An answer's sentences, and the sentence each of some offsets belongs to."""

    spans: tuple[tuple[int, int], ...]
    """Each sentence's ``(start, end)`` in the answer, in order, from its first
    non-blank character; markers that open the next piece are outside it."""
    owners: tuple[int | None, ...]
    """For each offset asked about, in the order given, the index of the sentence a
    marker starting there belongs to; None only when there is no sentence."""


def split_sentences(
    text: str, blanked: Iterable[tuple[int, int]], at: Iterable[int]
) -> SentenceSplit:
    """Split ``text`` into sentences and say which sentence each marker of ``at`` is in.

    The one split `sentence_coverage` measures, for callers that need the sentences
    themselves (the support verifiers build one claim per sentence).

    Args:
        text: The answer.
        blanked: Ranges ``(start, end)`` that are not prose, as for `sentence_coverage`.
        at: Offsets at which markers start, in any order.
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
    owners: list[int | None] = []
    for offset in at:
        i = bisect.bisect_right(piece_starts, offset) - 1
        if i < 0:
            owners.append(None)
            continue
        owner = inner_owner[i] if offset >= firsts[i] else opening_owner[i]
        if owner is None and sentences:
            owner = 0  # a marker before every sentence belongs to the first one
        owners.append(owner)
    return SentenceSplit(spans=tuple(sentences), owners=tuple(owners))


def coverage_words(cited: int, sentences: int) -> str:
    """``"1 of 3 sentences carry a citation"``: the one wording of a coverage."""
    verb = "sentence carries" if sentences == 1 else "sentences carry"
    return f"{cited} of {sentences} {verb} a citation"


def cite_spans(
    coverage: SentenceCoverage, text: str, spans: Iterable[tuple[int, int]]
) -> SentenceCoverage:
    """``coverage`` with every uncited sentence that overlaps one of ``spans`` cited.

    For citations that sit beside the text rather than in it: a provider's verified
    citation names the stretch of the answer it supports (``[start, end)`` offsets
    into ``text``, the answer ``coverage`` was measured on). Each uncited sentence is
    found again in ``text`` in order, from where the one before it ended; a sentence
    that overlaps a span carries a citation.
    """
    ranges = sorted((start, end) for start, end in spans if end > start)
    if not ranges or not coverage.uncited_sentences:
        return coverage
    kept: list[str] = []
    cursor = 0
    for sentence in coverage.uncited_sentences:
        start = text.find(sentence, cursor)
        if start < 0:  # not where it was measured: leave the coverage as it is
            return coverage
        end = cursor = start + len(sentence)
        if not any(a < end and start < b for a, b in ranges):
            kept.append(sentence)
    cited = coverage.cited_sentences + len(coverage.uncited_sentences) - len(kept)
    total = coverage.sentences
    return SentenceCoverage(
        sentences=total,
        cited_sentences=cited,
        coverage=cited / total if total else None,
        uncited_sentences=tuple(kept),
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
