"""Resolution: turn an answer's markers into citations built from the sources.

Marker ``[n]`` resolves to ``sources[n - 1]`` and nothing else. Every marker must
lie in ``1..N``; the first one that does not rejects the whole answer. There is no
repair, no clamping and no dropping of the offending marker: an answer that cites
something it was not given is not an answer citemark can vouch for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from citemark._errors import MarkerOutOfRangeError, NoSourcesError, SynthesisError
from citemark._markers import group_bodies, marker_number
from citemark._models import Citation, CitedAnswer, Source
from citemark._render import is_blank

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["citation_for", "resolve"]

_SHORT = 19  # digit strings this short convert with plain int(), no size guard needed
_MAX_TABLES = 64
_ANSWER_FIELDS = frozenset({"text", "citations"})
_TABLES: dict[tuple[int, ...], tuple[tuple[Source, ...], dict[str, Citation]]] = {}


def resolve(text: str, sources: Sequence[Source]) -> CitedAnswer:
    """Resolve every marker in ``text`` against ``sources``.

    Args:
        text: The answer as the model wrote it.
        sources: The numbered sources the model was shown; ``[1]`` is
            ``sources[0]``.

    Returns:
        The answer with its citations, deduplicated in first-mention order. An
        answer without markers resolves to ``citations == ()``, an abstention.

    Raises:
        NoSourcesError: ``sources`` is empty, whether or not ``text`` has markers.
        SynthesisError: ``text`` is blank; an abstention is prose without markers,
            not an empty reply.
        MarkerOutOfRangeError: a marker lies outside ``1..len(sources)``; the first
            such marker in the text is reported.

    Example:
        ```python
        from citemark import Source, resolve

        sources = [Source(text="Apache", doc_id="a"), Source(text="MIT", doc_id="m")]
        answer = resolve("Both are permissive [2][1], see [2].", sources)
        print([(c.marker, c.doc_id) for c in answer.citations])
        #> [(2, 'm'), (1, 'a')]
        ```
    """
    count = len(sources)
    if count == 0:
        raise NoSourcesError
    if is_blank(text):
        msg = "the answer is blank: a blank completion is not an abstention"
        raise SynthesisError(msg)
    table = _citation_table(sources)
    cited: dict[int, Citation] = {}
    # Distinct group bodies first: answers repeat the same few markers, and this
    # loop is the hot path of every check (see bench/markers.py). A body such as
    # "3" is one dict lookup; lists, leading zeros and bad numbers take the long way.
    for body in dict.fromkeys(group_bodies(text)):
        citation = table.get(body)
        if citation is not None:
            cited.setdefault(citation.marker, citation)
            continue
        if "," in body:
            numbers = [marker_number(digits.strip(" ")) for digits in body.split(",")]
        else:
            numbers = [int(body) if len(body) < _SHORT else marker_number(body)]
        for number in numbers:
            if number not in cited:
                if not 0 < number <= count:
                    raise MarkerOutOfRangeError(number, count)
                cited[number] = citation_for(sources[number - 1], number)
    return _answer(text, tuple(cited.values()))


def _answer(text: str, citations: tuple[Citation, ...]) -> CitedAnswer:
    """Build the result without re-validating what resolve itself just built.

    ``citations`` come from validated sources through `citation_for`; revalidating
    them (and copying a long ``text``) would cost more than the whole parse. This is
    what ``model_construct`` does, without its per-field Python loop.
    """
    if type(text) is not str:
        return CitedAnswer(text=text, citations=citations)  # let pydantic coerce or refuse
    answer = CitedAnswer.__new__(CitedAnswer)
    object.__setattr__(answer, "__dict__", {"text": text, "citations": citations})
    object.__setattr__(answer, "__pydantic_fields_set__", _ANSWER_FIELDS)
    object.__setattr__(answer, "__pydantic_extra__", None)
    object.__setattr__(answer, "__pydantic_private__", None)
    return answer


def _citation_table(sources: Sequence[Source]) -> dict[str, Citation]:
    """``{"1": citation of sources[0], ...}`` for this list, built once and reused.

    Answers are resolved against the same sources many times (a batch, a stream, a
    benchmark), so recent tables are kept, keyed by the identity of the sources.
    The entry holds the sources themselves, so those identities cannot be reused
    by other objects while the entry lives.
    """
    key = tuple(map(id, sources))
    entry = _TABLES.get(key)
    if entry is not None:
        return entry[1]
    table = {str(n): citation_for(source, n) for n, source in enumerate(sources, start=1)}
    if len(_TABLES) >= _MAX_TABLES:
        _TABLES.clear()
    _TABLES[key] = (tuple(sources), table)
    return table


def citation_for(source: Source, marker: int) -> Citation:
    """Build the citation that ``marker`` makes of ``source``, from its own fields."""
    # The cache sits in the source's private slot, read directly: pydantic's
    # attribute lookup for private names costs more than building the key.
    private = source.__pydantic_private__
    cache = private["_citations"] if private else None
    if cache is None:
        cache = source._citations = {}  # noqa: SLF001 - the cache lives with the source
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
