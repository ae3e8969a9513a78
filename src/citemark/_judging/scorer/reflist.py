r"""Reference lists: the trailing block of an answer that lists its sources, not claims.

Pipelines often end an answer with the sources it used, one a line::

    The fee is 5% [1] and is waived for members [2].

    Sources:
    [1] Fee schedule 2024
    [2] https://example.com/members

Those lines cite nothing: they are a bibliography. Counted as claims, they pull
sentence coverage down (each is an "uncited sentence") or up, and a judge asked to
grade ``[1] Fee schedule 2024`` as a claim grades a title. `find_reference_list`
recognizes such a block so the scorer can keep it out of sentence coverage and out
of the judge's occurrences, while its markers are still classified like every other
marker: a ``[9] Title`` outside the source list is still a fabrication.

The rule, stated on lines (a line ends at ``\n``, ``\r\n`` or ``\r``):

- an *entry* line opens (after optional indentation and an optional ``-``, ``*``,
  ``+`` or ``1.`` list bullet) with one or more marker groups the classifier found
  (so a group inside code is never one), followed by text holding a letter or digit
  (a title or a URL) and no other marker group;
- a *heading* line is a word such as References, Sources, Bibliography, Citations,
  Works cited or Further reading, alone on its line, optionally as a Markdown heading
  (``## Sources``), in bold (``**Sources:**``) and with a trailing colon;
- the reference list is the longest run of entry lines (blank lines between them
  allowed) that ends the answer, trailing blank lines aside. It counts when a
  heading line directly precedes it (blank lines between allowed), or, without a
  heading, when a blank line separates it from non-blank text before it. An answer
  that is nothing but marker-led lines is not a reference list: those lines are its
  claims.

Linear in the answer: one backwards pass over its lines, with a dictionary lookup of
the marker groups that start on each.
"""

from __future__ import annotations

import bisect
import re
from typing import TYPE_CHECKING, Final, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

__all__ = ["ReferenceBlock", "find_reference_list"]

_HEADING: Final = re.compile(
    r"[ \t]*+(?:\#{1,6}[ \t]++)?(?:\*\*|__)?[ \t]*+"
    r"(?:references?|sources?|bibliography|citations?|works[ \t]++cited|further[ \t]++reading"
    r"|sources[ \t]++cited|cited[ \t]++sources)"
    r"[ \t]*+:?[ \t]*+(?:\*\*|__)?[ \t]*+:?[ \t]*+\#*+[ \t]*+",
    re.IGNORECASE,
)
_LEAD: Final = re.compile(r"[ \t]*+(?:[-*+][ \t]++|\d{1,9}[.)][ \t]++)?")
_HSPACE: Final = re.compile(r"[ \t]*+")
_WORDCHAR: Final = re.compile(r"[^\W_]")


class ReferenceBlock(NamedTuple):
    """Where an answer's reference list lies."""

    start: int
    """Offset of its first line (the heading's, when it has one)."""
    end: int
    """Offset one past its last entry line's text."""
    entries: int
    """How many entry lines it has."""


def find_reference_list(text: str, groups: Iterable[tuple[int, int, int]]) -> ReferenceBlock | None:
    """Find the reference list that ends ``text``, if there is one.

    Args:
        text: The answer.
        groups: Each marker group the classifier found, as ``(start, end, tag_at)``:
            its offsets and where its text ends (after a link destination, for a
            Markdown link). Repeats (one per label of a group) are fine.

    Returns:
        The block, or None when the answer does not end with a reference list.
    """
    group_end: dict[int, int] = {}
    starts: list[int] = []
    for start, end, tag_at in groups:
        if start not in group_end:
            starts.append(start)
        group_end[start] = max(group_end.get(start, end), end, tag_at)
    if not group_end:
        return None
    starts.sort()
    first_entry: int | None = None
    last_end: int | None = None
    entries = 0
    heading_at: int | None = None
    for line_start, line_stop in _lines_from_end(text):
        content_end = _content_end(text, line_start, line_stop)
        if not text[line_start:content_end].strip():
            continue
        if _is_entry(text, line_start, content_end, group_end, starts):
            first_entry = line_start
            last_end = last_end if last_end is not None else content_end
            entries += 1
            continue
        if entries and _HEADING.fullmatch(text, line_start, content_end):
            heading_at = line_start
        break
    if first_entry is None or last_end is None:
        return None
    if heading_at is not None:
        return ReferenceBlock(heading_at, last_end, entries)
    # No heading: a blank line must part the block from text before it.
    before = text[:first_entry]
    if not before.strip() or not _ends_with_blank_line(before):
        return None
    return ReferenceBlock(first_entry, last_end, entries)


def _lines_from_end(text: str) -> Iterator[tuple[int, int]]:
    """Each line's offsets, its line end included, from the last line back.

    A line ends at CRLF, CR or LF (CRLF is one line end), as a forward
    scan reads it; the lines are read only as far as the caller goes, which is
    usually the answer's last few.
    """
    stop = len(text)
    while stop > 0:
        end = stop
        if text[end - 1] == "\n":
            end -= 2 if text.endswith("\r\n", 0, end) else 1
        elif text[end - 1] == "\r":
            end -= 1
        start = max(text.rfind("\n", 0, end), text.rfind("\r", 0, end)) + 1
        yield start, stop
        stop = start


def _content_end(text: str, start: int, stop: int) -> int:
    end = stop
    while end > start and text[end - 1] in "\r\n":
        end -= 1
    return end


def _is_entry(
    text: str, start: int, end: int, group_end: dict[int, int], starts: list[int]
) -> bool:
    """Whether the line opens with marker groups, then a title or URL, and no other group."""
    lead = _LEAD.match(text, start, end)
    pos = lead.end() if lead else start
    if pos not in group_end:
        return False
    while pos in group_end:
        pos = group_end[pos]
        space = _HSPACE.match(text, pos, end)
        pos = space.end() if space else pos
        if pos not in group_end:
            break
    if pos >= end or _WORDCHAR.search(text, pos, end) is None:
        return False
    # Another marker group later on the line makes it a cited claim, not an entry.
    return not _any_between(starts, pos, end)


def _any_between(starts: list[int], low: int, high: int) -> bool:
    i = bisect.bisect_left(starts, low)
    return i < len(starts) and starts[i] < high


def _ends_with_blank_line(before: str) -> bool:
    """Whether ``before`` (text up to a line start) ends with a line holding only spaces."""
    trimmed = before.rstrip(" \t")
    if not trimmed.endswith(("\n", "\r")):
        return False
    body = trimmed.removesuffix("\r\n") if trimmed.endswith("\r\n") else trimmed[:-1]
    body = body.rstrip(" \t")
    return not body or body.endswith(("\n", "\r"))
