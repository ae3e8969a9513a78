"""Streaming resolution: fail fast on a cited marker that cannot be valid.

Both adapters stream model output through `StreamingResolver`. It passes text
through unchanged and raises `MarkerOutOfRangeError` as soon as an out-of-range
marker is *certainly* a citation: its group is complete and nothing before it could
still turn it into code or a link destination (an unmatched backtick run or an
unfinished ``](`` in its paragraph, which later text might close). When the stream
ends, `finish` resolves the whole text exactly as `citemark.resolve` does, so a
stream can never accept what `resolve` would reject, and vice versa.

A marker split across chunks (``"[1"`` then ``"2]"``) is handled: the scan keeps
only a ``[`` that later text could still close as a group. Feeding is linear in
the text; while an out-of-range marker waits for certainty, each chunk that could
settle it re-reads the whole text once.
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
        if self._waiting and ("]" in chunk or "`" in chunk or ")" in chunk or "\n" in chunk):
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
        text = self.text
        spans = masked_spans(text)
        still_waiting = []
        for start, number in self._waiting:
            if any(s <= start < e for s, e, _ in spans):
                continue  # code or a link destination now; finish() has the last word
            if _could_still_change(text, start):
                still_waiting.append((start, number))
                continue
            raise MarkerOutOfRangeError(number, len(self._sources), self._base)
        self._waiting = still_waiting


def _could_still_change(text: str, start: int) -> bool:
    """Whether text appended later could mask the group at ``start``.

    Looks back to the last blank line (paragraphs bound code spans and links): an
    unmatched backtick run or an unfinished ``](`` there might still close around
    the group, unless a blank line after the group has already ended the paragraph.
    Unmatched is judged against the masked spans, so runs that already opened and
    closed a span do not count.
    """
    if _BLANK_LINE.search(text, start):
        return False  # the paragraph has ended: nothing before the group can close now
    floor = 0
    for m in _BLANK_LINE.finditer(text, 0, start):
        floor = m.end()
    spans = [(s, e) for s, e, _ in masked_spans(text) if e > floor and s < start]
    region = text[floor:start]
    if "`" not in region and "](" not in region:
        return False
    for offset, char in enumerate(region):
        pos = floor + offset
        if char not in "`(" or any(s <= pos < e for s, e in spans):
            continue
        if char == "`" or (char == "(" and text[pos - 1 : pos] == "]"):
            return True
    return False
