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

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["citation_for", "resolve"]

_SHORT = 19  # digit strings this short convert with plain int(), no size guard needed


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
    if not text.strip():
        msg = "the answer is blank: a blank completion is not an abstention"
        raise SynthesisError(msg)
    cited: dict[int, Citation] = {}
    # Distinct group bodies first: answers repeat the same few markers, and this
    # loop is the hot path of every check (see bench/markers.py).
    for body in dict.fromkeys(group_bodies(text)):
        if "," in body:
            numbers = [marker_number(digits.strip(" ")) for digits in body.split(",")]
        else:
            numbers = [int(body) if len(body) < _SHORT else marker_number(body)]
        for number in numbers:
            if number not in cited:
                if not 0 < number <= count:
                    raise MarkerOutOfRangeError(number, count)
                cited[number] = citation_for(sources[number - 1], number)
    return CitedAnswer(text=text, citations=tuple(cited.values()))


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
