"""What each citation in a recorded answer names: resolved, fabricated, ambiguous or ignored.

The citation scorer reads answers that existing pipelines already produced, in one of
two shapes. With a list of `citemark.Source`, the answer cites integers and the rules
of SPEC §3.2 apply unchanged: `citemark.parse_markers` finds the markers, and one
outside ``1..N`` (``[0]`` included) is fabricated, which is decidable. With a context
string of labelled blocks (``[doc-1] text`` at the start of a line), the labels are
whatever the pipeline chose, and a bracketed token is not necessarily a citation:
``arr[0]``, ``[TODO]`` and ``[x]`` are ordinary text. There a marker is only accused
of fabrication when the label style lets a citation be told apart from ordinary
brackets: the context has labels with a separator (``-``, ``.`` or ``_``), the marker
has the same separators, and it contains a word of two or more letters. Anything else
that names no block is *ignored* and reported, never accused. A marker naming a label
the context declares but that is not citable (an empty or repeated block), or a token
the context itself writes in brackets, is *ambiguous*.

Code and links follow §3.2 for both shapes, through `citemark.masked_spans`, the one
masking `citemark.resolve` reads: a marker inside code, a link destination or raw HTML
is not extracted at all, and Markdown link text is never accused (it names a link
target), though it resolves when it names a real block. The one exception is a custom
citation syntax's own markup: ``<<doc-1>>`` reads as a tag by itself, and what the
citation's text alone marks up does not hide it.

Everything here is linear in the answer and the context: one pass of each pattern, a
merge against the sorted masked ranges, and set lookups per marker.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Final, Literal, NamedTuple, TypeAlias

from citemark._contract.syntax import DEFAULT_CITATION_PATTERN, DEFAULT_LABEL_PATTERN, GROUP_PATTERN
from citemark._markers.grammar import masked_spans, parse_markers
from citemark._sources.render import indent_block, render_sources

if TYPE_CHECKING:
    from collections.abc import Sequence

    from citemark._contract.models import Source
    from citemark._markers.grammar import MaskedSpan

__all__ = [
    "AMBIGUOUS",
    "DEFAULT_CITATION_PATTERN",
    "DEFAULT_LABEL_PATTERN",
    "FABRICATED",
    "IGNORED",
    "RESOLVED",
    "Classified",
    "Occurrence",
    "classify_labelled",
    "classify_sources",
    "compile_pattern",
    "render_blocks",
]

Exclusion: TypeAlias = Literal["empty", "duplicate"]
"""Why a declared block cannot be cited."""

RESOLVED: Final = "resolved"
FABRICATED: Final = "fabricated"
AMBIGUOUS: Final = "ambiguous"
IGNORED: Final = "ignored"

# Why a marker is ambiguous or ignored; fixed codes, reported per occurrence.
_EXCLUDED_LABEL = "names_excluded_label"  # an empty or repeated block's label
_CASE_ONLY = "matches_label_case_only"  # "[DOC-1]" where the context has doc-1
_IN_CONTEXT = "bracketed_in_context"  # the context writes it in brackets, not as a label
_LINK_TEXT = "link_text"
_NOT_LABEL_SHAPED = "not_label_shaped"
_UNSTRUCTURED = "labels_not_distinguishable"
_NO_LABELS = "context_has_no_labels"

_SEPARATORS: Final = "-._"
_WORD = re.compile(r"[A-Za-z]{2}")
_LIST_ITEM = re.compile(r"[^,]++")
_HSPACE = " \t"


class Occurrence(NamedTuple):
    """One marker occurrence in an answer, classified."""

    label: str
    """What the marker names: a block label, or an integer's digits."""
    start: int
    """Offset of the marker group's first character (its opening bracket)."""
    end: int
    """Offset one past the marker group's last character."""
    tag_at: int
    """Where an occurrence tag goes: after the marker, or after its link destination."""
    link: bool
    """Whether the marker is the text of a Markdown link."""
    kind: str
    """`RESOLVED`, `FABRICATED`, `AMBIGUOUS` or `IGNORED`."""
    why: str | None
    """For an ambiguous or ignored marker, a fixed code saying why; else None."""


class Classified(NamedTuple):
    """Everything the scorer decides about a row before any model is asked."""

    blocks: dict[str, str]
    """The citable blocks, label to text, in context order."""
    headers: dict[str, str]
    """Each citable block's label as the context writes it, e.g. ``[doc-1]``."""
    excluded: list[tuple[str, Exclusion]]
    """Labels the context declares that cannot be cited: (label, "empty"|"duplicate")."""
    occurrences: list[Occurrence]
    """Every marker outside code and link destinations, in order."""
    in_code: int
    """How many marker-shaped tokens were skipped inside code or link destinations."""
    masked: list[tuple[int, int]]
    """The ranges of the response that are code or link destinations."""
    accusable: bool
    """Whether any label style here lets a fabrication be told from ordinary text."""
    labelled: bool
    """Whether the context declares any label at all."""
    empty: bool
    """Whether there is nothing to cite: an empty source list or a blank context."""
    numbered: bool
    """Whether the blocks are a numbered source list rather than a labelled context."""
    base: int = 1
    """The number of the first source of a numbered list (0 or 1)."""
    source_count: int = 0
    """How many sources a numbered list has, blank ones included; 0 for a context."""


def render_blocks(found: Classified, sources: Sequence[Source] | str) -> str:
    """Write the blocks as the judge sees them: each header, then its indented text.

    A numbered source list is rendered by `citemark.render_sources`; labelled blocks
    keep their header as the context wrote it. Either way every content line after
    the first is indented, so no block's text can forge a header.
    """
    if found.numbered and not isinstance(sources, str):
        return render_sources(sources, index_base=found.base)
    return "\n\n".join(
        f"{found.headers[label]} {indent_block(text)}" for label, text in found.blocks.items()
    )


def compile_pattern(pattern: str | re.Pattern[str], name: str) -> re.Pattern[str]:
    """Compile a label or citation pattern and check it has a group for the label.

    A string is compiled with ``re.MULTILINE``; a compiled pattern is used as is.

    Raises:
        TypeError: the pattern is neither a string nor a compiled ``str`` pattern.
        ValueError: the pattern does not compile or has no capturing group.
    """
    if isinstance(pattern, re.Pattern):
        if not isinstance(pattern.pattern, str):
            msg = f"{name} must be a str pattern, not a bytes pattern"
            raise TypeError(msg)
        compiled = pattern
    elif isinstance(pattern, str):
        try:
            compiled = re.compile(pattern, re.MULTILINE)
        except re.error:
            msg = f"{name} is not a valid regular expression"
            raise ValueError(msg) from None
    else:
        msg = f"{name} must be a string or a compiled regular expression"
        raise TypeError(msg)
    if compiled.groups < 1:
        msg = f"{name} must have a capturing group holding the label"
        raise ValueError(msg)
    return compiled


def classify_sources(response: str, sources: Sequence[Source], base: int = 1) -> Classified:
    """Classify the integer markers of ``response`` against a list of sources.

    Marker ``[n]`` resolves to ``sources[n - base]``; outside ``base..N-1+base`` it is
    fabricated.
    A source whose text is blank is excluded (it can support nothing), so a marker
    naming it is ambiguous. Nothing is ignored: §3.2 already leaves out code, link
    destinations and non-ASCII digits.
    """
    blocks: dict[str, str] = {}
    headers: dict[str, str] = {}
    excluded: list[tuple[str, Exclusion]] = []
    for number, source in enumerate(sources, start=base):
        label = str(number)
        if source.text.strip():
            blocks[label] = source.text
            headers[label] = f"[{label}]"
        else:
            excluded.append((label, "empty"))
    blanks = {label for label, _ in excluded}
    spans = masked_spans(response)
    links = _link_starts(response, spans)
    occurrences: list[Occurrence] = []
    groups = 0
    last_group = -1
    count = len(sources)
    for occ in parse_markers(response):
        if occ.group_start != last_group:
            groups += 1
            last_group = occ.group_start
        link_end = links.get(occ.group_end)
        tag_at = occ.group_end if link_end is None else link_end
        if base <= occ.number < count + base:
            label = str(occ.number)
            kind, why = (AMBIGUOUS, _EXCLUDED_LABEL) if label in blanks else (RESOLVED, None)
        else:
            label, kind, why = response[occ.start : occ.end], FABRICATED, None
        occurrences.append(
            Occurrence(
                label, occ.group_start, occ.group_end, tag_at, link_end is not None, kind, why
            )
        )
    in_code = sum(1 for _ in GROUP_PATTERN.finditer(response)) - groups
    return Classified(
        blocks=blocks,
        headers=headers,
        excluded=excluded,
        occurrences=occurrences,
        in_code=max(in_code, 0),
        masked=[(span.start, span.end) for span in spans],
        accusable=True,
        labelled=bool(sources),
        empty=not sources,
        numbered=True,
        base=base,
        source_count=count,
    )


def classify_labelled(
    response: str,
    context: str,
    label_pattern: re.Pattern[str],
    citation_pattern: re.Pattern[str],
) -> Classified:
    """Classify the markers of ``response`` against a context of labelled blocks.

    Labels come first: each match of ``label_pattern`` that starts a line opens a
    block, whose text runs to the next label line. A block with blank text, and every
    block of a label given twice, is excluded but remembered. Then each match of
    ``citation_pattern`` outside code and link destinations is one marker per label
    it holds, classified in this order: it names a block (resolved); it names an
    excluded label, or a label under another letter case (ambiguous); the context
    has no labels, or the marker is link text (ignored); with a distinguishable label
    style present, a marker not shaped like one is ignored, one the context writes in
    brackets is ambiguous, and the rest are fabricated; without one, a marker the
    context writes in brackets is ambiguous and the rest are ignored.
    """
    blocks, headers, excluded = _parse_blocks(context, label_pattern)
    judge = _LabelJudge(blocks, {label for label, _ in excluded}, context, citation_pattern)
    # Labels repeat (a long answer cites a handful of blocks many times), so each
    # (label, link) pair is classified once.
    decided: dict[tuple[str, bool], tuple[str, str | None]] = {}
    group = "label" if "label" in citation_pattern.groupindex else 1
    spans = masked_spans(response)
    links = _link_starts(response, spans)
    occurrences: list[Occurrence] = []
    in_code = 0
    i = 0
    for match in citation_pattern.finditer(response):
        start, end = match.span()
        if end == start:
            continue
        # Both lists are sorted: one merge finds the matches that touch code or a
        # link destination, which are counted and never read.
        while i < len(spans) and spans[i].end <= start:
            i += 1
        if i < len(spans) and spans[i].start < end and _hidden(response, spans, i, start, end):
            in_code += 1
            continue
        link_end = links.get(end)
        link = link_end is not None
        tag_at = end if link_end is None else link_end
        body = match.group(group)
        if body is None:
            continue
        labels = [body.strip(_HSPACE)] if "," not in body else _split_list(body)
        for label in labels:
            if not label:
                continue
            key = (label, link)
            verdict = decided.get(key)
            if verdict is None:
                verdict = decided[key] = judge.classify(label, link)
            occurrences.append(Occurrence(label, start, end, tag_at, link, *verdict))
    return Classified(
        blocks=blocks,
        headers=headers,
        excluded=excluded,
        occurrences=occurrences,
        in_code=in_code,
        masked=[(span.start, span.end) for span in spans],
        accusable=bool(judge.accusable),
        labelled=judge.labelled,
        empty=not context.strip(),
        numbered=False,
    )


class _LabelJudge:
    """Decides what one label names, given the labels a context declares."""

    def __init__(
        self,
        blocks: dict[str, str],
        excluded: set[str],
        context: str,
        citation_pattern: re.Pattern[str],
    ) -> None:
        self.blocks = blocks
        self.excluded = excluded
        self.labelled = bool(blocks or excluded)
        styles = {_signature(label) for label in (*blocks, *excluded)}
        self.accusable = {style for style in styles if style}
        self._context = context
        self._citation_pattern = citation_pattern

    # Needed only for a marker that names no block, so built on first use: most rows
    # resolve every marker and never pay for a second pass over the context.
    @functools.cached_property
    def folded(self) -> set[str]:
        return {label.casefold() for label in (*self.blocks, *self.excluded)}

    @functools.cached_property
    def in_context(self) -> set[str]:
        return _bracketed_labels(self._context, self._citation_pattern)

    def classify(self, label: str, link: bool) -> tuple[str, str | None]:
        """The class of a marker naming ``label``, and why when it is not a citation."""
        if label in self.blocks:
            return RESOLVED, None
        if label in self.excluded:
            return AMBIGUOUS, _EXCLUDED_LABEL
        if label.casefold() in self.folded:
            return AMBIGUOUS, _CASE_ONLY
        if not self.labelled:
            return IGNORED, _NO_LABELS
        if link:
            return IGNORED, _LINK_TEXT
        if not self.accusable:
            # Nothing to judge shape by: a marker the context writes in brackets is
            # still a plausible citation, anything else is not accused.
            return (
                (AMBIGUOUS, _IN_CONTEXT) if label in self.in_context else (IGNORED, _UNSTRUCTURED)
            )
        if _signature(label) not in self.accusable or _WORD.search(label) is None:
            return IGNORED, _NOT_LABEL_SHAPED
        if label in self.in_context:
            return AMBIGUOUS, _IN_CONTEXT
        return FABRICATED, None


# The default label pattern for a context with no "\r": there "^" alone starts every
# line, and the engine no longer tries the lookbehind at every position.
_DEFAULT_LF: Final = re.compile(
    DEFAULT_LABEL_PATTERN.replace(r"(?:^|(?<=\r))", "^", 1), re.MULTILINE
)


def _parse_blocks(
    context: str, pattern: re.Pattern[str]
) -> tuple[dict[str, str], dict[str, str], list[tuple[str, Exclusion]]]:
    default = pattern.pattern == DEFAULT_LABEL_PATTERN and pattern.flags & re.MULTILINE
    if default and "\r" not in context:
        pattern = _DEFAULT_LF
    starts: list[re.Match[str]] = [
        m
        for m in pattern.finditer(context)
        if (m.start() == 0 or context[m.start() - 1] in "\r\n") and m.end() > m.start()
    ]
    bodies: dict[str, list[tuple[str, str]]] = {}
    for i, m in enumerate(starts):
        body_end = starts[i + 1].start() if i + 1 < len(starts) else len(context)
        label = _label_of(m)
        header = context[m.start() : m.end()]
        bodies.setdefault(label, []).append((header, context[m.end() : body_end].strip()))
    blocks: dict[str, str] = {}
    headers: dict[str, str] = {}
    excluded: list[tuple[str, Exclusion]] = []
    for label, found in bodies.items():
        if len(found) > 1:
            excluded.append((label, "duplicate"))
        elif not found[0][1]:
            excluded.append((label, "empty"))
        else:
            headers[label], blocks[label] = found[0]
    return blocks, headers, excluded


def _label_of(match: re.Match[str]) -> str:
    if "label" in match.re.groupindex:
        return (match.group("label") or "").strip(_HSPACE)
    return (match.group(1) or "").strip(_HSPACE)


def _labels_in(match: re.Match[str]) -> list[str]:
    """The labels a citation match holds: one, or several separated by commas."""
    body = match.group("label" if "label" in match.re.groupindex else 1)
    if body is None:
        return []
    labels = [body.strip(_HSPACE)] if "," not in body else _split_list(body)
    return [label for label in labels if label]


def _split_list(body: str) -> list[str]:
    return [item.group().strip(_HSPACE) for item in _LIST_ITEM.finditer(body)]


def _signature(label: str) -> frozenset[str]:
    """The separators a label carries; a non-empty signature is a distinguishable style."""
    return frozenset(sep for sep in _SEPARATORS if sep in label)


def _bracketed_labels(context: str, pattern: re.Pattern[str]) -> set[str]:
    """Every label the context writes in citation syntax anywhere, headers included."""
    found: set[str] = set()
    for match in pattern.finditer(context):
        found.update(_labels_in(match))
    return found


def _hidden(response: str, spans: list[MaskedSpan], first: int, start: int, end: int) -> bool:
    r"""Whether the masking of ``response`` hides the citation match ``start:end``.

    ``spans[first]`` is the first masked span that ends after ``start``, and it starts
    before ``end``. The match is hidden unless every span touching it is raw HTML or
    an autolink that the match's own text, read alone by the same masking, marks up
    at the same offsets: a custom syntax such as ``<<id>>`` reads as a tag by
    itself, and its own markup does not hide it. A piece of a larger construct is
    not the match's own: a comment or CDATA section that spans lines inside a block
    quote or list item, or across ``\r\n`` or ``\r`` line endings, is masked one
    line at a time, so a label alone on such a line is covered by a piece exactly
    its size, and is hidden as `citemark.resolve` hides a marker there.
    """
    touching: list[MaskedSpan] = []
    for span in spans[first:]:
        if span.start >= end:
            break
        if span.kind not in _OWN_MARKUP or span.start < start or span.end > end:
            return True
        touching.append(span)
    own = {
        (start + span.start, start + span.end, span.kind)
        for span in masked_spans(response[start:end])
    }
    return any((span.start, span.end, span.kind) not in own for span in touching)


_OWN_MARKUP: Final = frozenset({"html", "autolink"})


def _link_starts(text: str, spans: list[MaskedSpan] | None = None) -> dict[int, int]:
    """Map where each link destination starts (just after the link text) to its end."""
    if "](" not in text:
        return {}
    if spans is None:
        spans = masked_spans(text)
    return {span.start: span.end for span in spans if span.kind == "link_destination"}
