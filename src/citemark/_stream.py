"""Streaming resolution: fail fast on a cited marker that cannot be valid.

Both adapters stream model output through `StreamingResolver`. It passes text
through unchanged and raises `MarkerOutOfRangeError` once an out-of-range marker is
*certainly* a citation and every marker before it is settled too: its group is
complete and nothing later can hide it (see `_settled`), so the error names the
same marker `citemark.resolve` names for the whole text, and is never raised for a
text `resolve` accepts. A marker that is masked now keeps waiting: later text may
still show it. When the stream ends, `finish` resolves the whole text exactly as
`citemark.resolve` does.

A marker split across chunks (``"[1"`` then ``"2]"``) is handled: the scan keeps
only a ``[`` that later text could still close as a group. Feeding is linear in
the text; while an out-of-range marker waits for certainty, each chunk re-reads the
whole text once.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from citemark._errors import MarkerOutOfRangeError, NoSourcesError
from citemark._markers import marker_number, masked_spans
from citemark._resolve import resolve
from citemark._syntax import DEFAULT_INDEX_BASE, GROUP_PATTERN, check_index_base

if TYPE_CHECKING:
    from collections.abc import Sequence

    from citemark._models import CitedAnswer, Source

__all__ = ["StreamingResolver"]

_BLANK_LINE = re.compile(r"\n[ \t]*\r?\n")
# What may follow "[" in an unfinished marker group.
_GROUP_PREFIX = re.compile(r"[0-9, ]*")


class StreamingResolver:
    """Resolve an answer while it streams in.

    Example:
        ```python
        from citemark import MarkerOutOfRangeError, Source, StreamingResolver

        stream = StreamingResolver([Source(text="a", doc_id="a"), Source(text="b", doc_id="b")])
        for piece in ["It ends [", "2] and [1", "]."]:
            stream.feed(piece)
        print([c.marker for c in stream.finish().citations])
        #> [2, 1]
        stream = StreamingResolver([Source(text="a", doc_id="a")])
        try:
            for piece in ["Wrong [", "7", "] and more"]:
                stream.feed(piece)
        except MarkerOutOfRangeError as exc:
            print(exc.marker, "raised while feeding", repr(piece))
        #> 7 raised while feeding '] and more'
        ```
    """

    def __init__(
        self,
        sources: Sequence[Source],
        *,
        index_base: int = DEFAULT_INDEX_BASE,
        strict: bool = False,
        allow_ranges: bool = False,
    ) -> None:
        """Start a stream over ``sources``.

        ``index_base``, ``strict`` and ``allow_ranges`` mean what they mean for
        `citemark.resolve`. Citation-like text that is not a marker may arrive split
        over any number of chunks: it is found on the whole text by `finish`, which
        reports it (or, with ``strict``, rejects it) exactly as `resolve` does.

        Raises:
            NoSourcesError: ``sources`` is empty (before any text arrives).
            ValueError: ``index_base`` is not 0 or 1.
        """
        self._base = check_index_base(index_base)
        self._strict = strict
        self._allow_ranges = allow_ranges
        if not sources:
            raise NoSourcesError
        self._sources = tuple(sources)
        # Everything fed so far is "".join(self._done) + self._tail. The tail holds
        # only what could still be the start of a marker group, so it stays short and
        # feeding stays linear; the whole text is joined only when a marker waits.
        self._done: list[str] = []
        self._tail = ""
        self._tail_at = 0  # offset of the tail in the whole text
        self._waiting: list[tuple[int, int]] = []  # (group start, marker) to re-check

    @property
    def text(self) -> str:
        """Everything fed so far."""
        return "".join(self._done) + self._tail

    def feed(self, chunk: str) -> str:
        """Append ``chunk`` and return it unchanged.

        Raises:
            MarkerOutOfRangeError: a complete marker outside ``1..N`` is certainly a
                citation, whatever text follows.
        """
        self._tail += chunk
        if "]" in chunk:
            self._find_groups()
        self._trim()
        if self._waiting:
            self._raise_if_certain()
        return chunk

    def finish(self) -> CitedAnswer:
        """Resolve the whole text, exactly as `citemark.resolve` would.

        Raises:
            SynthesisError: the text is blank, or a marker is out of range
                (`MarkerOutOfRangeError`).
        """
        return resolve(
            self.text,
            self._sources,
            index_base=self._base,
            strict=self._strict,
            allow_ranges=self._allow_ranges,
        )

    def _find_groups(self) -> None:
        count = len(self._sources)
        base = self._base
        for group in GROUP_PATTERN.finditer(self._tail):
            for digits in group.group(1).split(","):
                number = marker_number(digits.strip(" "))
                if not base <= number < count + base:
                    self._waiting.append((self._tail_at + group.start(), number))
                    break
        # Those groups are examined; only an unclosed "[" after them may continue.
        last_close = self._tail.rfind("]")
        if last_close >= 0:
            self._retire(last_close + 1)

    def _trim(self) -> None:
        """Keep in the tail only a "[" that later text could still close as a group."""
        tail = self._tail
        opener = tail.rfind("[")
        if opener < 0 or not _GROUP_PREFIX.fullmatch(tail, opener + 1):
            self._retire(len(tail))
        elif opener > 0:
            self._retire(opener)

    def _retire(self, length: int) -> None:
        if length:
            self._done.append(self._tail[:length])
            self._tail = self._tail[length:]
            self._tail_at += length

    def _raise_if_certain(self) -> None:
        """Raise for the first waiting marker once it, and all before it, are settled.

        Markers wait in text order. A settled marker that is masked is certainly no
        citation and is dropped; a settled visible one raises. An unsettled marker
        (masked or not) stops the walk, so no later marker is named before it: the
        error always names the marker `resolve` would name.
        """
        text = self.text
        spans = masked_spans(text)
        self._waiting.sort()
        kept = []
        for index, (start, number) in enumerate(self._waiting):
            end = text.index("]", start) + 1
            if not _settled(text, start, end):
                kept = self._waiting[index:]
                break
            if any(s <= start < e for s, e, _ in spans):
                continue  # certainly masked: never a citation
            raise MarkerOutOfRangeError(number, len(self._sources), self._base)
        self._waiting = kept


# HTML that may close after blank lines (CommonMark HTML blocks of types 1 to 5).
_LONG_HTML = re.compile(r"<!|<\?|<(?:script|pre|style|textarea)", re.IGNORECASE)
# What may precede a group that could still become a definition's label.
_LINE_PREFIX = re.compile(r"[ \t>*+\-0-9.)]*")


def _settled(text: str, start: int, end: int) -> bool:
    """Whether no text appended later can change whether the group at ``start`` is seen.

    Conservative: a group waits while anything before it in its paragraph could
    still close around it (a backtick run, ``<``, ``](``, a definition), while it
    could become a reference link's label or part of an image (a later definition
    decides those, wherever it comes), or while an HTML comment, processing
    instruction or raw-text element before it may still close.
    """
    if _LONG_HTML.search(text, 0, start):
        return False
    floor = 0
    for m in _BLANK_LINE.finditer(text, 0, start):
        floor = m.end()
    region = text[floor:end]
    if "![" in region or "][" in region or text[start - 1 : start] == "]":
        return False
    if region.count("[") > 1 and "](" in text[floor:]:
        return False  # a later definition could turn a bracket pair into a link
    line = text.rfind("\n", 0, start) + 1
    if _LINE_PREFIX.fullmatch(text, line, start) and text[end : end + 1] in {"", ":"}:
        return False  # "[9]:" would be a link reference definition
    if _BLANK_LINE.search(text, end):
        return True  # the paragraph has ended
    return not any(mark in region for mark in ("`", "<", "](", "]:"))
