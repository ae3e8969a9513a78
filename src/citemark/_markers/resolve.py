"""Resolution: turn an answer's markers into citations built from the sources.

Marker ``[n]`` resolves to ``sources[n - 1]`` and nothing else (``sources[n]`` when
the caller numbers from 0 with ``index_base=0``; never guessed). Every marker must lie
in ``1..N`` (``0..N-1``); the first one that does not rejects the whole answer. There
is no repair, no clamping and no dropping of the offending marker: an answer that
cites something it was not given is not an answer citemark can vouch for.

Citation-like text that is not a marker (``[1-3]``, ``[^1]``, ``【1】``...) is found by
``citemark._markers.nearmiss`` and returned in `CitedAnswer.unrecognized`; it cites nothing and
stays in the text. ``strict=True`` rejects it instead; ``allow_ranges=True`` reads a
simple range ``[1-3]`` as the markers it spans, bounded by the source count.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

from citemark._contract.blank import is_blank
from citemark._contract.errors import (
    MarkerOutOfRangeError,
    NoSourcesError,
    SynthesisError,
    UnrecognizedCitationError,
)
from citemark._contract.models import Citation, CitedAnswer, Source, UnrecognizedToken
from citemark._contract.syntax import DEFAULT_INDEX_BASE, check_index_base
from citemark._markers.grammar import OPENERS, marker_number, parse_markers, unmask
from citemark._markers.nearmiss import may_hold_unrecognized_beyond, parse_range, unrecognized_in

if TYPE_CHECKING:
    from collections.abc import Sequence

    from citemark._markers.grammar import MarkerOccurrence

__all__ = ["citation_for", "resolve"]

_SHORT = 19  # digit strings this short convert with plain int(), no size guard needed
_MAX_TABLES = 64
_ANSWER_FIELDS = frozenset({"text", "citations", "unrecognized"})
_MAX_REMEMBERED = 256  # group bodies other than "1".."N" kept per source list
_Table = dict[str, tuple[tuple[int, Citation], ...]]
# (the sources, their table, and {"1": citation of sources[0], ...}), keyed by ids
_Entry = tuple[tuple[Source, ...], _Table, dict[str, Citation]]
_TABLES: dict[tuple[int, ...], _Entry] = {}
_LAST_TABLE: list[_Entry] = []  # the entry used last, alone


def resolve(
    text: str,
    sources: Sequence[Source],
    *,
    index_base: int = DEFAULT_INDEX_BASE,
    strict: bool = False,
    allow_ranges: bool = False,
) -> CitedAnswer:
    """Resolve every marker in ``text`` against ``sources``.

    Args:
        text: The answer as the model wrote it.
        sources: The numbered sources the model was shown; ``[1]`` is
            ``sources[0]``.
        index_base: The number of the first source: 1 (the default) or 0, for a
            pipeline that numbered its sources from 0 (``[0]`` is then
            ``sources[0]``).
        strict: Reject citation-like text that is not a marker
            (`UnrecognizedCitationError`) instead of reporting it.
        allow_ranges: Read a range ``[1-3]`` (or with an en dash) as ``[1, 2, 3]``. A range
            reaching outside the sources is out of range, like any marker.

    Returns:
        The answer with its citations, deduplicated in first-mention order. An
        answer without markers resolves to ``citations == ()``, an abstention;
        ``unrecognized`` lists the citation-like text that is not a marker.

    Raises:
        NoSourcesError: ``sources`` is empty, whether or not ``text`` has markers.
        SynthesisError: ``text`` is blank; an abstention is prose without markers,
            not an empty reply.
        MarkerOutOfRangeError: a marker lies outside ``1..len(sources)``; the first
            such marker in the text is reported.
        UnrecognizedCitationError: ``strict`` is set and the text holds
            citation-like text that is not a marker (the first is named).
        ValueError: ``index_base`` is not 0 or 1.

    Example:
        ```python
        from citemark import Source, resolve

        sources = [Source(text="Apache", doc_id="a"), Source(text="MIT", doc_id="m")]
        answer = resolve("Both are permissive [2][1], see [2].", sources)
        print([(c.marker, c.doc_id) for c in answer.citations])
        #> [(2, 'm'), (1, 'a')]
        ```
    """
    # The defaults' checks first, in line: this is the hot path of every check.
    base = 1 if type(index_base) is int and index_base == 1 else check_index_base(index_base)
    count = len(sources)
    if count == 0:
        raise NoSourcesError
    if not (type(text) is str and text[:1].isalnum()) and is_blank(text):  # visible at once
        msg = "the answer is blank: a blank completion is not an abstention"
        raise SynthesisError(msg)
    # One parse serves the groups and the near-miss scan (issue 11).
    unmasked, spans = unmask(text)
    bodies = OPENERS.findall(unmasked)  # "" for a visible "[" that opens no group
    unrecognized = (
        unrecognized_in(text, unmasked, spans, count=count, index_base=base)
        if type(text) is str
        and may_hold_unrecognized_beyond(
            text, lone_bracket="" in bodies, unmasked=unmasked, count=count
        )
        else ()
    )
    if allow_ranges and any(token.kind == "range" for token in unrecognized):
        return _resolve_with_ranges(text, sources, base, unrecognized, strict=strict)
    if strict and unrecognized:
        raise UnrecognizedCitationError(unrecognized[0].kind, unrecognized[0].start)
    if base != 1:
        return _slow(text, sources, base, parse_markers(text), (), unrecognized)
    table, single = _citation_table(sources)
    distinct = dict.fromkeys(bodies)
    distinct.pop("", None)  # a "[" that opens no group
    if single.keys() >= distinct.keys():  # each group one number, in range, no leading zero
        return _answer(text, tuple(map(single.__getitem__, distinct)), unrecognized)
    cited: dict[int, Citation] = {}
    # Distinct group bodies first: answers repeat the same few markers, and this
    # loop is the hot path of every check (see bench/markers.py). A body such as
    # "3" or "1, 2" seen before with these sources is one dict lookup; others take
    # the long way once, and are remembered when every number is in range.
    for body in distinct:
        pairs = table.get(body)
        if pairs is None:
            pairs = _body_pairs(body, sources, table)
        for number, citation in pairs:
            if number not in cited:
                cited[number] = citation
    return _answer(text, tuple(cited.values()), unrecognized)


def _resolve_with_ranges(
    text: str,
    sources: Sequence[Source],
    base: int,
    unrecognized: tuple[UnrecognizedToken, ...],
    *,
    strict: bool,
) -> CitedAnswer:
    """Resolve with simple ranges read as the markers they span, bounded by the count."""
    ranges: list[tuple[int, int, int]] = []
    rest: list[UnrecognizedToken] = []
    for token in unrecognized:
        bounds = parse_range(token.text) if token.kind == "range" else None
        if bounds is None:
            rest.append(token)
        else:
            ranges.append((token.start, *bounds))
    if strict and rest:
        raise UnrecognizedCitationError(rest[0].kind, rest[0].start)
    return _slow(text, sources, base, parse_markers(text), ranges, tuple(rest))


def _slow(  # noqa: PLR0913, PLR0917 - the row's parts
    text: str,
    sources: Sequence[Source],
    base: int,
    markers: Sequence[MarkerOccurrence],
    ranges: Sequence[tuple[int, int, int]],
    unrecognized: tuple[UnrecognizedToken, ...],
) -> CitedAnswer:
    """Resolve marker by marker, in text order: any base, and ranges.

    A range is checked at its ends before it is expanded, so ``[1-99999999]`` costs
    two comparisons, and a range longer than the source list is out of range.
    """
    count = len(sources)
    last = count - 1 + base
    events: list[tuple[int, tuple[int, ...]]] = [(occ.start, (occ.number,)) for occ in markers]
    for at, low, high in ranges:
        if not base <= low <= last:
            raise MarkerOutOfRangeError(low, count, base)
        if not low <= high <= last:
            raise MarkerOutOfRangeError(high, count, base)
        events.append((at, tuple(range(low, high + 1))))
    events.sort(key=lambda event: event[0])
    cited: dict[int, Citation] = {}
    for _, numbers in events:
        for number in numbers:
            if number in cited:
                continue
            if not base <= number <= last:
                raise MarkerOutOfRangeError(number, count, base)
            cited[number] = citation_for(sources[number - base], number)
    return _answer(text, tuple(cited.values()), unrecognized)


def _answer(
    text: str, citations: tuple[Citation, ...], unrecognized: tuple[UnrecognizedToken, ...] = ()
) -> CitedAnswer:
    """Build the result without re-validating what resolve itself just built.

    ``citations`` come from validated sources through `citation_for`; revalidating
    them (and copying a long ``text``) would cost more than the whole parse. This is
    what ``model_construct`` does, without its per-field Python loop.
    """
    if isinstance(text, str) and type(text) is not str:
        # A str subclass (a chat's `Completion`) is kept as the plain text it holds;
        # pydantic would refuse one that carries a lone surrogate a model sent.
        text = str.__str__(text)
    if type(text) is not str:
        return CitedAnswer(text=text, citations=citations)  # let pydantic coerce or refuse
    answer = _new(CitedAnswer)
    fields = {"text": text, "citations": citations, "unrecognized": unrecognized}
    _setattr(answer, "__dict__", fields)
    _set_fields_set(answer, _ANSWER_FIELDS)
    _set_extra(answer, None)
    _set_private(answer, None)
    return answer


# The slots every pydantic model has, written through their descriptors: the model is
# frozen, and a slot's own setter costs less than object.__setattr__ by name.
_new = object.__new__
_setattr = object.__setattr__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def _body_pairs(
    body: str, sources: Sequence[Source], table: dict[str, tuple[tuple[int, Citation], ...]]
) -> tuple[tuple[int, Citation], ...]:
    """The (number, citation) pairs of a group body, in order; raise at the first out of range.

    Every earlier number of the text resolved, so the first out-of-range number of
    the first body holding one is the text's first. A body whose numbers all resolve
    is remembered in ``table`` while it is small.
    """
    count = len(sources)
    if "," in body:
        numbers = [marker_number(digits.strip(" ")) for digits in body.split(",")]
    else:
        numbers = [int(body) if len(body) < _SHORT else marker_number(body)]
    pairs = []
    for number in numbers:
        if not 0 < number <= count:
            raise MarkerOutOfRangeError(number, count)
        pairs.append((number, citation_for(sources[number - 1], number)))
    found = tuple(pairs)
    if len(table) < count + _MAX_REMEMBERED:
        table[body] = found
    return found


def _citation_table(sources: Sequence[Source]) -> tuple[_Table, dict[str, Citation]]:
    """``{"1": ((1, citation of sources[0]),), ...}`` for this list, and ``{"1": citation...}``.

    Answers are resolved against the same sources many times (a batch, a stream, a
    benchmark), so recent tables are kept, keyed by the identity of the sources.
    The entry holds the sources themselves, so those identities cannot be reused
    by other objects while the entry lives. The last entry is checked first, by
    comparing the sources themselves (a tuple comparison tries identity first).
    """
    key = tuple(sources)
    if _LAST_TABLE and _LAST_TABLE[0][0] == key:
        return _LAST_TABLE[0][1], _LAST_TABLE[0][2]
    ids = tuple(map(id, sources))
    entry = _TABLES.get(ids)
    if entry is None:
        table: _Table = {
            str(n): ((n, citation_for(source, n)),) for n, source in enumerate(sources, start=1)
        }
        if len(_TABLES) >= _MAX_TABLES:
            _TABLES.clear()
        entry = _TABLES[ids] = (key, table, {body: pairs[0][1] for body, pairs in table.items()})
    _LAST_TABLE[:] = [entry]
    return entry[1], entry[2]


def citation_for(source: Source, marker: int) -> Citation:
    """Build the citation that ``marker`` makes of ``source``, from its own fields."""
    # The cache sits in the source's private slot, read directly: pydantic's
    # attribute lookup for private names costs more than building the key.
    private = source.__pydantic_private__
    cache = private.get("_citations") if private else None
    if cache is None:
        cache = {}
        if private is None:
            _set_private(source, {"_citations": cache})
        else:
            private["_citations"] = cache
    citation = cache.get(marker)
    if citation is None:
        citation = cache[marker] = Citation(
            marker=marker,
            doc_id=source.doc_id,
            chunk_id=source.chunk_id,
            start=source.start,
            end=source.end,
            uri=source.uri,
            text=source.text,
        )
    return citation
