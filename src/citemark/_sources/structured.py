"""Structured-output citations: source ids and quotes a model returns beside its answer.

LangChain's citation guide (and LlamaIndex's structured-output paths) have the model
return an object instead of marked-up text: ``{"answer": "...", "citations": [0, 2]}``,
or citations as ``{"source_id": 0, "quote": "..."}`` objects. The ids are integers
into the numbered source list the pipeline rendered, so they are checked exactly as
``[n]`` markers are:

- an integer id is range-checked against the sources (numbered from ``index_base``)
  and resolved to a `citemark.Citation` built from the source's own fields; one out
  of range rejects the answer with `citemark.MarkerOutOfRangeError`, never dropped;
- a quote is re-read in the source it cites, both compared as the judge's evidence
  is (`normalize_quote`): as rendered for the model (control characters other than
  newline and tab removed, as rendering removes them), whitespace runs collapsed to
  one space, typographic quotes made ``"`` and ``'``; nothing else, so case,
  punctuation, dashes and every other character must match. A quote found there is
  ``verified``; one that is not is ``quote_not_in_source`` (rejected with
  `citemark.QuoteNotInSourceError`), and when another source holds it the finding
  names that source (``in_other_source``), so a misattribution reads differently
  from an invented quote. Nothing is moved to the source that holds it;
- ``[n]`` markers inside the object's other string fields are resolved field by
  field under the visible-text rule, each finding naming its field by JSON pointer
  (RFC 6901).

The quotes are searched together, through one index per answer: the sources are
normalized once and joined with a separator no normalized text holds; each distinct
quote is searched once in the joined text, where its first occurrence names its
first holder, and only a quote first held before the source it cites is searched
again, in that source alone, each source once for all such quotes. Up to
`_DIRECT_SEARCHES` quotes (or while quotes times characters stay within
`_DIRECT_BUDGET`) are searched one `str.find` each, more by one Aho-Corasick pass
per `_BATCH_CHARS` quote characters. With S the characters of the normalized
sources and Q those of the normalized quotes, the time is O((S + Q) * ceil(Q /
_BATCH_CHARS)), so O(S + Q) for an answer under 128 Ki quote characters, where
searching every quote in every source cost O(quotes * S); beside the joined copy of
the sources, the memory is one trie node per quote character of a batch (a batch
is under 1.25 times `_BATCH_CHARS`, 50 MiB at most; a longer quote than `_LONG_QUOTE`
is searched alone, in no trie).

`check_structured` records every finding and raises only for an object whose
citations cannot be read at all (`citemark.StructuredAnswerError`);
`resolve_structured` raises on the first violation. Messages carry positions and
numbers, never the answer's text.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, JsonValue

from citemark._contract.errors import (
    MarkerOutOfRangeError,
    NoSourcesError,
    QuoteNotInSourceError,
    StructuredAnswerError,
    UnrecognizedCitationError,
)
from citemark._contract.models import Citation, CitedAnswer, Source, UnrecognizedToken
from citemark._contract.syntax import check_index_base
from citemark._markers.grammar import parse_markers
from citemark._markers.nearmiss import find_unrecognized
from citemark._markers.resolve import citation_for
from citemark._sources.render import normalize_quoted

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

__all__ = [
    "FieldMarker",
    "FieldToken",
    "StructuredCitation",
    "StructuredCitedAnswer",
    "StructuredFindings",
    "check_structured",
    "normalize_quote",
    "resolve_structured",
]

Outcome = Literal["resolved", "out_of_range", "verified", "quote_not_in_source", "blank_quote"]
"""What became of one structured citation: an id ``resolved`` or ``out_of_range``; a
quote ``verified``, ``quote_not_in_source`` or ``blank_quote`` (nothing to re-read)."""

_DEFAULT_TEXT: Final = "/answer"
_DEFAULT_CITATIONS: Final = "/citations"
_MISSING: Final = object()
_MAX_INDEX_DIGITS: Final = 18
_MAX_DEPTH: Final = 64
"""How deep the walk over an object's string fields goes; deeper values are refused."""
_SEPARATOR: Final = "\x00"
"""Joins the normalized sources: a control character, so no normalized text holds it."""
_DIRECT_SEARCHES: Final = 32
"""Up to this many quotes are searched one `str.find` each, whatever the text's size."""
_DIRECT_BUDGET: Final = 1 << 22
"""More quotes are searched one by one while quotes times text characters stay within this."""
_BATCH_CHARS: Final = 1 << 17
"""Quote characters per automaton: bounds its memory (a trie node per character)."""
_LONG_QUOTE: Final = _BATCH_CHARS // 4
"""A longer quote is searched alone with `str.find`, never put in an automaton."""


class _Frozen(BaseModel):
    model_config = ConfigDict(
        frozen=True, extra="forbid", strict=True, use_attribute_docstrings=True
    )


class StructuredCitation(_Frozen):
    """One entry of a structured answer's citations, checked."""

    pointer: str
    """The entry's JSON pointer in the answer object, e.g. ``/citations/1``."""
    source_id: int
    """The source id the model wrote, in the pipeline's numbering."""
    kind: Literal["id", "quote"]
    """``id`` for a bare source id, ``quote`` for a ``source_id`` with a ``quote``."""
    outcome: Outcome
    """What the check found (see `Outcome`)."""
    in_other_source: int | None = None
    """For a quote its source does not hold: the id of the first other source that
    holds it, or None when none does."""


class FieldMarker(_Frozen):
    """One ``[n]`` marker number in a string field of a structured answer."""

    pointer: str
    """The field's JSON pointer, e.g. ``/sections/0/text``."""
    marker: int
    """The cited number."""
    start: int
    """The marker number's start offset in the field (as `citemark.parse_markers` gives it)."""
    end: int
    """The marker number's end offset in the field's text."""
    in_range: bool
    """Whether the number names one of the sources."""


class FieldToken(_Frozen):
    """Citation-like text in a string field that is not a marker (``[1-3]``, ``[^1]``)."""

    pointer: str
    """The field's JSON pointer."""
    token: UnrecognizedToken
    """The token, as `citemark.find_unrecognized` reports it."""


class StructuredFindings(_Frozen):
    """Everything checked in one structured answer."""

    text_pointer: str | None
    """Where the answer's text is, or None when the object has no text field."""
    citations_pointer: str
    """Where its citations list is."""
    citations: tuple[StructuredCitation, ...] = ()
    """Each citation entry, in list order."""
    field_markers: tuple[FieldMarker, ...] = ()
    """Markers in string fields outside the citations, by field in document order."""
    field_tokens: tuple[FieldToken, ...] = ()
    """Citation-like text in those fields that is not a marker."""

    @property
    def out_of_range(self) -> tuple[int, ...]:
        """Every id or marker number that names no source, in order, ids first."""
        ids = (c.source_id for c in self.citations if c.outcome == "out_of_range")
        markers = (m.marker for m in self.field_markers if not m.in_range)
        return (*ids, *markers)

    @property
    def wrong_quotes(self) -> tuple[StructuredCitation, ...]:
        """The quote citations that did not re-read from the source they cite."""
        return tuple(
            c for c in self.citations if c.outcome in {"quote_not_in_source", "blank_quote"}
        )


class StructuredCitedAnswer(_Frozen):
    """A structured answer whose citations were checked."""

    value: JsonValue
    """The answer object, as JSON."""
    text: str
    """The answer's text field ("" when it has none)."""
    citations: tuple[Citation, ...]
    """Every source the answer cites by an id, a verified quote or an in-range marker,
    deduplicated by value in first-mention order (ids before field markers)."""
    findings: StructuredFindings
    """Every check, violations included."""

    def cited_answer(self) -> CitedAnswer:
        """The answer text with its citations, as a `citemark.CitedAnswer`."""
        return CitedAnswer(text=self.text, citations=self.citations)


def normalize_quote(text: str) -> str:
    """Normalize a quote or a source for comparison, as a judge's evidence is compared.

    The text as rendered for the model (control characters other than newline and tab
    removed), typographic quotes made ``"`` and ``'``, whitespace runs made one space
    and the ends trimmed. Nothing else changes: case, punctuation, dashes and every
    other character must match as written.
    """
    return normalize_quoted(text)


def check_structured(  # noqa: PLR0913 - the shape's two pointers beside the contract's arguments
    answer: BaseModel | Mapping[str, Any],
    sources: Sequence[Source],
    *,
    index_base: int = 1,
    text_field: str | None = None,
    citations_field: str | None = None,
    include_text: bool = True,
    require_citations: bool = True,
) -> StructuredCitedAnswer:
    """Check every citation of a structured answer, recording violations without raising.

    Args:
        answer: The parsed object (a pydantic model, or its JSON as a mapping).
        sources: The numbered sources the model was shown.
        index_base: The id of the first source, 1 or 0 (LangChain's guide numbers
            from 0).
        text_field: JSON pointer of the answer text; default ``/answer`` when it holds
            a string, else none.
        citations_field: JSON pointer of the citations list; default ``/citations``.
        include_text: Whether the text field's own markers are checked here (a
            caller that resolves the text itself passes False).
        require_citations: Whether an object without a citations field is refused;
            with False, one without ``/citations`` (when ``citations_field`` is not
            given) cites only through the markers in its string fields.

    Returns:
        The answer with its resolved citations and every finding.

    Raises:
        NoSourcesError: ``sources`` is empty.
        StructuredAnswerError: the citations are missing or not ids or quote objects.
        ValueError: ``index_base`` is not 0 or 1.
    """
    base = check_index_base(index_base)
    if not sources:
        raise NoSourcesError
    value = _as_json(answer)
    text_pointer, text = _text(value, text_field)
    citations_pointer = citations_field or _DEFAULT_CITATIONS
    if (
        not require_citations
        and citations_field is None
        and is_missing(json_pointer(value, citations_pointer))
    ):
        entries: JsonValue = []
    else:
        entries = _lookup(value, citations_pointer, "the citations field")
    if not isinstance(entries, list):
        msg = f"the citations field {citations_pointer} must be a list"
        raise StructuredAnswerError(msg)
    checker = _Checker(sources, base)
    checked = checker.entries(citations_pointer, entries)
    markers: list[FieldMarker] = []
    tokens: list[FieldToken] = []
    skip = {citations_pointer} | (set() if include_text or text_pointer is None else {text_pointer})
    for pointer, field in _strings(value, "", skip):
        for occurrence in parse_markers(field):
            in_range = base <= occurrence.number < len(sources) + base
            markers.append(
                FieldMarker(
                    pointer=pointer,
                    marker=occurrence.number,
                    start=occurrence.start,
                    end=occurrence.end,
                    in_range=in_range,
                )
            )
            if in_range:
                checker.cite(occurrence.number)
        tokens.extend(FieldToken(pointer=pointer, token=t) for t in find_unrecognized(field))
    findings = StructuredFindings(
        text_pointer=text_pointer,
        citations_pointer=citations_pointer,
        citations=checked,
        field_markers=tuple(markers),
        field_tokens=tuple(tokens),
    )
    return StructuredCitedAnswer(
        value=value, text=text, citations=tuple(checker.cited.values()), findings=findings
    )


def resolve_structured(  # noqa: PLR0913 - as check_structured
    answer: BaseModel | Mapping[str, Any],
    sources: Sequence[Source],
    *,
    index_base: int = 1,
    text_field: str | None = None,
    citations_field: str | None = None,
    strict: bool = False,
    require_citations: bool = True,
) -> StructuredCitedAnswer:
    """Resolve a structured answer's citations, rejecting it on the first violation.

    The checks are `check_structured`'s; the answer is rejected once, never repaired.

    Args:
        answer: The parsed object (a pydantic model, or its JSON as a mapping).
        sources: The numbered sources the model was shown.
        index_base: The id of the first source, 1 or 0.
        text_field: JSON pointer of the answer text (default ``/answer``).
        citations_field: JSON pointer of the citations list (default ``/citations``).
        strict: Also reject citation-like text that is not a marker in a string field.
        require_citations: As for `check_structured`.

    Returns:
        The answer, every citation resolved and every quote verified.

    Raises:
        NoSourcesError: ``sources`` is empty.
        StructuredAnswerError: the citations cannot be read.
        MarkerOutOfRangeError: an id or a field's marker names no source (the first
            id, else the first marker).
        QuoteNotInSourceError: a quote does not occur in the source it cites (or is
            blank).
        UnrecognizedCitationError: ``strict`` and a field holds citation-like text.

    Example:
        ```python
        from citemark import MarkerOutOfRangeError, Source, resolve_structured

        sources = [Source(text="Lions live in prides.", doc_id="lion"),
                   Source(text="Cheetahs run at 100 km/h.", doc_id="cheetah")]
        answer = {"answer": "About 100 km/h.",
                  "citations": [{"source_id": 1, "quote": "run at 100  km/h"}]}
        checked = resolve_structured(answer, sources, index_base=0)
        print([(c.marker, c.doc_id) for c in checked.citations])
        #> [(1, 'cheetah')]
        try:
            resolve_structured({"answer": "Fast.", "citations": [2]}, sources, index_base=0)
        except MarkerOutOfRangeError as exc:
            print(exc)
        #> marker [2] is out of range: the answer was given 2 sources, so markers must lie in 0..1
        ```
    """
    checked = check_structured(
        answer,
        sources,
        index_base=index_base,
        text_field=text_field,
        citations_field=citations_field,
        require_citations=require_citations,
    )
    findings = checked.findings
    for position, citation in enumerate(findings.citations, start=1):
        if citation.outcome == "out_of_range":
            raise MarkerOutOfRangeError(citation.source_id, len(sources), index_base)
        if citation.outcome in {"quote_not_in_source", "blank_quote"}:
            raise QuoteNotInSourceError(citation.source_id, position, citation.in_other_source)
    for marker in findings.field_markers:
        if not marker.in_range:
            raise MarkerOutOfRangeError(marker.marker, len(sources), index_base)
    if strict and findings.field_tokens:
        first = findings.field_tokens[0].token
        raise UnrecognizedCitationError(first.kind, first.start)
    return checked


class _Checker:
    """Checks citation entries against one source list, collecting what they cite."""

    def __init__(self, sources: Sequence[Source], base: int) -> None:
        self.sources = sources
        self.base = base
        self.cited: dict[int, Citation] = {}

    def cite(self, number: int) -> None:
        if number not in self.cited:
            self.cited[number] = citation_for(self.sources[number - self.base], number)

    def entries(self, pointer: str, entries: list[JsonValue]) -> tuple[StructuredCitation, ...]:
        """Every entry checked, in list order; the quotes are searched together."""
        parsed = [_entry(entry, position) for position, entry in enumerate(entries, start=1)]
        needles = [None if quote is None else normalize_quote(quote) for _, quote in parsed]
        quoted = [
            (source_id, needle)
            for (source_id, _), needle in zip(parsed, needles, strict=True)
            if needle
        ]
        found = _QuoteIndex(self.sources, self.base).locate(quoted) if quoted else {}
        return tuple(
            self._checked(f"{pointer}/{i}", source_id, needle, found)
            for i, ((source_id, _), needle) in enumerate(zip(parsed, needles, strict=True))
        )

    def _checked(
        self,
        pointer: str,
        source_id: int,
        needle: str | None,
        found: Mapping[tuple[int, str], tuple[bool, int | None]],
    ) -> StructuredCitation:
        in_range = self.base <= source_id < len(self.sources) + self.base
        if needle is None:
            if in_range:
                self.cite(source_id)
            outcome: Outcome = "resolved" if in_range else "out_of_range"
            return StructuredCitation(
                pointer=pointer, source_id=source_id, kind="id", outcome=outcome
            )
        held, first = found.get((source_id, needle), (False, None))
        if not in_range:
            outcome = "out_of_range"
        elif not needle:
            outcome = "blank_quote"
        elif held:
            self.cite(source_id)
            outcome = "verified"
        else:
            outcome = "quote_not_in_source"
        return StructuredCitation(
            pointer=pointer,
            source_id=source_id,
            kind="quote",
            outcome=outcome,
            in_other_source=None if outcome == "verified" else first,
        )


class _QuoteIndex:
    """The normalized sources of one answer, searched for all its quotes at once.

    Each source is normalized once and joined with a separator that no normalized
    text holds (control characters are removed), so one search of the joined text
    finds a quote's first holder: the source where its first occurrence starts. A
    quote held by an earlier source than the one it cites is then looked for in the
    cited source, each source searched once for all the quotes that cite it.
    """

    def __init__(self, sources: Sequence[Source], base: int) -> None:
        self.base = base
        texts = [normalize_quote(s.text) for s in sources]
        self.starts: list[int] = []
        offset = 0
        for text in texts:
            self.starts.append(offset)
            offset += len(text) + len(_SEPARATOR)
        self.joined = _SEPARATOR.join(texts)

    def locate(
        self, quoted: Sequence[tuple[int, str]]
    ) -> dict[tuple[int, str], tuple[bool, int | None]]:
        """Whether each (source id, non-blank needle) is held there, and its first holder.

        The first holder is the id of the first source that holds the needle, or None.
        """
        distinct = list(dict.fromkeys(needle for _, needle in quoted))
        first = {
            needle: self._source_at(start)
            for needle, start in zip(distinct, _first_starts(distinct, self.joined), strict=True)
        }
        # Only a quote first held before its cited source needs that source searched.
        pending: dict[int, dict[str, None]] = {}
        for source_id, needle in quoted:
            holder = first[needle]
            if holder is not None and holder < source_id < len(self.starts) + self.base:
                pending.setdefault(source_id, {})[needle] = None
        later: set[tuple[int, str]] = set()
        for source_id, wanted in pending.items():
            start = self.starts[source_id - self.base]
            end = start + self._length(source_id - self.base)
            needles = list(wanted)
            hits = _first_starts(needles, self.joined[start:end])
            later.update((source_id, n) for n, hit in zip(needles, hits, strict=True) if hit >= 0)
        return {
            (source_id, needle): (
                first[needle] == source_id or (source_id, needle) in later,
                first[needle],
            )
            for source_id, needle in quoted
        }

    def _length(self, index: int) -> int:
        if index + 1 < len(self.starts):
            return self.starts[index + 1] - self.starts[index] - len(_SEPARATOR)
        return len(self.joined) - self.starts[index]

    def _source_at(self, offset: int) -> int | None:
        if offset < 0:
            return None
        return bisect_right(self.starts, offset) - 1 + self.base


def _first_starts(needles: Sequence[str], text: str) -> list[int]:
    """The offset in ``text`` where each distinct, non-empty needle first starts, or -1.

    A few needles (or a short text) are searched one by one with `str.find`; more
    go through one Aho-Corasick automaton per batch of `_BATCH_CHARS` needle
    characters, each batch one pass over ``text``, except a needle longer than
    `_LONG_QUOTE`, searched alone (at most 4 per batch's worth of characters, and no
    trie node for it): O(len(text) * ceil(needle chars / _BATCH_CHARS) + needle
    chars) whatever the text holds, where needle-by-needle searching costs len(text)
    per needle.
    """
    if len(needles) <= _DIRECT_SEARCHES or len(needles) * len(text) <= _DIRECT_BUDGET:
        return [text.find(needle) for needle in needles]
    found = [-1] * len(needles)
    batch: list[int] = []
    size = 0
    for i, needle in enumerate(needles):
        if len(needle) > len(text):
            continue  # too long to occur
        if len(needle) > _LONG_QUOTE:
            found[i] = text.find(needle)
            continue
        batch.append(i)
        size += len(needle)
        if size >= _BATCH_CHARS:
            _scan(needles, batch, text, found)
            batch, size = [], 0
    if batch:
        _scan(needles, batch, text, found)
    return found


def _scan(needles: Sequence[str], batch: Sequence[int], text: str, found: list[int]) -> None:
    """Set ``found[i]`` to the first start of ``needles[i]`` in ``text``, i in ``batch``.

    One Aho-Corasick pass: a trie of the needles with failure links, each text
    character one transition (amortized), each needle reported once, at its first
    end; the pass stops once every needle is found.
    """
    children: list[dict[str, int]] = [{}]
    ends: list[int] = [-1]  # the needle ending at each node, or -1
    for i in batch:
        node = 0
        for char in needles[i]:
            step = children[node].get(char)
            if step is None:
                step = len(children)
                children[node][char] = step
                children.append({})
                ends.append(-1)
            node = step
        ends[node] = i
    fail = [0] * len(children)
    report = [0] * len(children)  # the longest needle ending here (this node or a suffix)
    queue = deque(children[0].values())
    while queue:
        node = queue.popleft()
        report[node] = node if ends[node] >= 0 else report[fail[node]]
        for char, child in children[node].items():
            back = fail[node]
            while back and char not in children[back]:
                back = fail[back]
            fail[child] = children[back].get(char, 0)
            queue.append(child)
    remaining = len(batch)
    state = 0
    for position, char in enumerate(text):
        step = children[state].get(char)
        while step is None and state:
            state = fail[state]
            step = children[state].get(char)
        state = step or 0
        node = report[state]
        if node:
            # A needle found earlier was reported with every needle it ends with.
            while node and found[ends[node]] < 0:
                needle = ends[node]
                found[needle] = position + 1 - len(needles[needle])
                remaining -= 1
                node = report[fail[node]]
            if not remaining:
                return


def _entry(entry: object, position: int) -> tuple[int, str | None]:
    """A citation entry's source id and quote (None for a bare id)."""
    if _is_int(entry):
        return int(entry), None  # type: ignore[call-overload]
    if not isinstance(entry, dict) or "source_id" not in entry:
        msg = f"citation {position} is neither a source id nor an object with a source_id"
        raise StructuredAnswerError(msg)
    source_id = entry["source_id"]
    if not _is_int(source_id):
        msg = f"citation {position}'s source_id must be an integer"
        raise StructuredAnswerError(msg)
    quote = entry.get("quote")
    if quote is not None and not isinstance(quote, str):
        msg = f"citation {position}'s quote must be a string"
        raise StructuredAnswerError(msg)
    return int(source_id), quote


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _as_json(answer: BaseModel | Mapping[str, Any]) -> dict[str, JsonValue]:
    if isinstance(answer, BaseModel):
        value: object = answer.model_dump(mode="json")
    else:
        value = answer
    if not isinstance(value, dict):
        msg = "a structured answer must be an object"
        raise StructuredAnswerError(msg)
    return dict(value)


def _text(value: dict[str, JsonValue], pointer: str | None) -> tuple[str | None, str]:
    if pointer is None:
        text = value.get("answer")
        return (_DEFAULT_TEXT, text) if isinstance(text, str) else (None, "")
    found = _lookup(value, pointer, "the answer text field")
    if not isinstance(found, str):
        msg = f"the answer text field {pointer} must be a string"
        raise StructuredAnswerError(msg)
    return pointer, found


def _lookup(value: JsonValue, pointer: str, what: str) -> JsonValue:
    """The value at a JSON pointer; the pointer is the caller's own, so it may be named."""
    found = json_pointer(value, pointer)
    if found is _MISSING:
        msg = f"{what} {pointer} is missing from the structured answer"
        raise StructuredAnswerError(msg)
    return found  # type: ignore[return-value]


def json_pointer(value: object, pointer: str) -> object:
    """The value at an RFC 6901 JSON pointer, or the module's missing sentinel.

    ``""`` is the whole value; ``/a/0`` is key ``a``, then index 0; ``~1`` and ``~0``
    stand for ``/`` and ``~`` in a key.
    """
    if pointer == "":
        return value
    if not pointer.startswith("/"):
        return _MISSING
    for raw in pointer[1:].split("/"):
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict):
            if key not in value:
                return _MISSING
            value = value[key]
        elif isinstance(value, list) and key.isdigit() and key.isascii():
            # No list is longer than 18 digits' worth; int() of a huge token would refuse.
            if len(key) > _MAX_INDEX_DIGITS or (key != "0" and key.startswith("0")):
                return _MISSING
            index = int(key)
            if index >= len(value):
                return _MISSING
            value = value[index]
        else:
            return _MISSING
    return value


def is_missing(value: object) -> bool:
    """Whether `json_pointer` found nothing."""
    return value is _MISSING


def _strings(
    value: JsonValue, pointer: str, skip: set[str], depth: int = 0
) -> Iterator[tuple[str, str]]:
    """Every string field under ``value`` with its pointer, in document order."""
    if pointer in skip:
        return
    if depth > _MAX_DEPTH:
        msg = f"the structured answer is nested deeper than {_MAX_DEPTH} levels"
        raise StructuredAnswerError(msg)
    if isinstance(value, str):
        yield pointer, value
    elif isinstance(value, dict):
        for key, item in value.items():
            escaped = key.replace("~", "~0").replace("/", "~1")
            yield from _strings(item, f"{pointer}/{escaped}", skip, depth + 1)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{pointer}/{index}", skip, depth + 1)
