"""Responses whose ``[n]`` markers are resolved to their source nodes.

`resolve_response` turns a LlamaIndex ``Response`` into a `CitedResponse`: the same
response, plus the `citemark.CitedAnswer` its markers resolve to, built from the
source nodes (node id, ``ref_doc_id``, offsets, text). A marker that names no source
node raises `citemark.MarkerOutOfRangeError`; nothing is repaired or retried.

`validate_stream` wraps a streaming response instead: tokens pass through as they
arrive, a marker that is certainly out of range raises as soon as it is complete
(even split across tokens), and when the stream ends the whole text is resolved
exactly as `resolve_response` would resolve it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from llama_index.core.base.response.schema import (
    AsyncStreamingResponse,
    Response,
    StreamingResponse,
)

from citemark import Citation, CitedAnswer, StreamingResolver, resolve
from citemark.syntax import check_index_base
from llama_index.postprocessor.citemark import nodes_to_sources

if TYPE_CHECKING:
    from collections.abc import Sequence

    from llama_index.core.schema import NodeWithScore
    from llama_index.core.types import TokenAsyncGen, TokenGen

__all__ = [
    "CitedAsyncStreamingResponse",
    "CitedResponse",
    "CitedStreamingResponse",
    "resolve_response",
    "validate_stream",
]


@dataclass
class CitedResponse(Response):
    """A LlamaIndex ``Response`` with the citations its ``[n]`` markers resolve to.

    ``citations == ()`` is an abstention: the answer cites nothing.
    """

    cited_answer: CitedAnswer = field(kw_only=True)
    """The answer text and its citations, built from the source nodes' own fields."""

    @property
    def citations(self) -> tuple[Citation, ...]:
        """The distinct citations in first-mention order; ``chunk_id`` is the node id."""
        return self.cited_answer.citations

    @property
    def cited_nodes(self) -> list[NodeWithScore]:
        """The source nodes the answer cites, in the order of `citations`."""
        return _cited_nodes(self.cited_answer, self.source_nodes)


@dataclass
class CitedStreamingResponse(StreamingResponse):
    """A ``StreamingResponse`` whose tokens are checked as they arrive.

    `cited_answer` is ``None`` until the stream has been consumed to its end, by
    iterating ``response_gen``, ``get_response()``, ``str()`` or
    ``print_response_stream()``; any of them raises
    `citemark.MarkerOutOfRangeError` for a marker that names no source node.
    """

    cited_answer: CitedAnswer | None = field(default=None, kw_only=True)
    """The resolved answer, once the stream has ended."""

    index_base: int = field(default=1, kw_only=True)
    """The number of the first source node the stream is resolved against (1 or 0)."""

    def get_response(self) -> CitedResponse:
        """Consume the stream and return the resolved `CitedResponse`."""
        return _finished(self, super().get_response())


@dataclass
class CitedAsyncStreamingResponse(AsyncStreamingResponse):
    """An ``AsyncStreamingResponse`` whose tokens are checked as they arrive.

    The asynchronous twin of `CitedStreamingResponse`: `cited_answer` is set once
    ``async_response_gen()``, ``get_response()`` or ``print_response_stream()`` has
    consumed the stream.
    """

    cited_answer: CitedAnswer | None = field(default=None, kw_only=True)
    """The resolved answer, once the stream has ended."""

    index_base: int = field(default=1, kw_only=True)
    """The number of the first source node the stream is resolved against (1 or 0)."""

    async def get_response(self) -> CitedResponse:
        """Consume the stream and return the resolved `CitedResponse`."""
        return _finished(self, await super().get_response())


def resolve_response(response: Response, *, index_base: int = 1) -> CitedResponse:
    """Resolve a response's ``[n]`` markers against its source nodes.

    Source nodes numbered by `CitationPostprocessor` are read by their ``cite_as``
    marker; un-numbered ones by position (``CitationQueryEngine``'s convention).
    ``index_base`` is the number of the first node, 1 (the default) or 0: the base
    the nodes were numbered with (``CitationPostprocessor(index_base=0)``).

    Raises:
        citemark.NoSourcesError: the response has no source nodes (LlamaIndex
            returns "Empty Response" without calling the model).
        citemark.MarkerOutOfRangeError: a marker names no source node.
        citemark.SynthesisError: the answer is blank, or the source nodes' numbering
            is broken (see `nodes_to_sources`).
        TypeError: ``response`` is a streaming or structured response.
        ValueError: ``index_base`` is not 0 or 1.

    Example:
        ```python
        from llama_index.core.base.response.schema import Response
        from llama_index.core.schema import NodeWithScore, TextNode
        from llama_index.postprocessor.citemark import number_nodes
        from llama_index.query_engine.citemark import resolve_response
        from citemark import MarkerOutOfRangeError

        nodes = number_nodes([NodeWithScore(node=TextNode(text="Keep notices.", id_="n1"))])
        cited = resolve_response(Response("Keep them [1].", source_nodes=nodes))
        print([(c.marker, c.chunk_id) for c in cited.citations], cited.cited_nodes[0].node.text)
        #> [(1, 'n1')] Keep notices.
        try:
            resolve_response(Response("Keep them [3].", source_nodes=nodes))
        except MarkerOutOfRangeError as exc:
            print(exc)
        #> marker [3] is out of range: the answer was given 1 source, so markers must lie in 1..1
        ```
    """
    if not isinstance(response, Response):
        msg = (
            "resolve_response takes a Response: a streaming response goes to validate_stream, "
            "and a structured (Pydantic) response has no answer text to resolve"
        )
        raise TypeError(msg)
    base = check_index_base(index_base)
    sources = nodes_to_sources(response.source_nodes, index_base=base)
    answer = resolve(response.response or "", sources, index_base=base)
    return CitedResponse(
        response.response, response.source_nodes, response.metadata, cited_answer=answer
    )


def validate_stream(
    response: StreamingResponse | AsyncStreamingResponse, *, index_base: int = 1
) -> CitedStreamingResponse | CitedAsyncStreamingResponse:
    """Wrap a streaming response so its markers are checked while it streams.

    ``index_base`` is the number of the first source node, as for `resolve_response`.

    Wrap it before anything consumes it: text consumed before wrapping is never seen.
    Consuming the result only partly leaves the end of the answer unchecked.

    Raises:
        citemark.NoSourcesError: the response has no source nodes (raised here,
            before any token is read).
        citemark.SynthesisError: the source nodes' numbering is broken (raised
            here); a blank answer (raised when the stream ends).
        citemark.MarkerOutOfRangeError: raised while consuming the result, as soon
            as a marker is certainly out of range.
        TypeError: ``response`` is not a streaming response.
        ValueError: ``index_base`` is not 0 or 1.

    Example:
        ```python
        from llama_index.core.base.response.schema import StreamingResponse
        from llama_index.core.schema import NodeWithScore, TextNode
        from llama_index.postprocessor.citemark import number_nodes
        from llama_index.query_engine.citemark import validate_stream
        from citemark import MarkerOutOfRangeError

        nodes = number_nodes([NodeWithScore(node=TextNode(text="Keep notices.", id_="n1"))])
        stream = validate_stream(StreamingResponse(iter(["Keep [", "1]."]), source_nodes=nodes))
        print(list(stream.response_gen), [c.marker for c in stream.cited_answer.citations])
        #> ['Keep [', '1].'] [1]
        stream = validate_stream(StreamingResponse(iter(["Keep [", "4", "]", " them."]), nodes))
        try:
            for token in stream.response_gen:
                print(token)
        except MarkerOutOfRangeError as exc:
            print("rejected", exc.marker)
        #> Keep [
        #> 4
        #> rejected 4
        ```
    """
    if not isinstance(response, StreamingResponse | AsyncStreamingResponse):
        msg = "validate_stream takes a StreamingResponse or an AsyncStreamingResponse"
        raise TypeError(msg)
    base = check_index_base(index_base)
    sources = nodes_to_sources(response.source_nodes, index_base=base)
    resolver = StreamingResolver(sources, index_base=base)
    done = response.response_txt  # a stream already consumed keeps its text here
    if isinstance(response, AsyncStreamingResponse):
        tokens = response.response_gen if done is None else _one_async(done)
        cited_async = CitedAsyncStreamingResponse(
            tokens, response.source_nodes, response.metadata, index_base=base
        )
        cited_async.response_gen = _checked_async(tokens, resolver, cited_async)
        return cited_async
    cited = CitedStreamingResponse(
        response.response_gen if done is None else _one(done),
        response.source_nodes,
        response.metadata,
        index_base=base,
    )
    cited.response_gen = _checked(cited.response_gen, resolver, cited)
    return cited


def _checked(
    tokens: TokenGen, resolver: StreamingResolver, response: CitedStreamingResponse
) -> TokenGen:
    for token in tokens:
        yield resolver.feed(token)
    response.cited_answer = resolver.finish()
    response.response_txt = resolver.text


async def _checked_async(
    tokens: TokenAsyncGen,
    resolver: StreamingResolver,
    response: CitedAsyncStreamingResponse,
) -> TokenAsyncGen:
    async for token in tokens:
        yield resolver.feed(token)
    response.cited_answer = resolver.finish()


def _one(text: str) -> TokenGen:
    yield text


async def _one_async(text: str) -> TokenAsyncGen:
    yield text


def _finished(
    stream: CitedStreamingResponse | CitedAsyncStreamingResponse, response: Response
) -> CitedResponse:
    answer = stream.cited_answer
    if answer is None:
        # The stream ended without passing through the check (it was replaced):
        # resolve the text it produced, whole.
        return resolve_response(response, index_base=stream.index_base)
    # The answer holds every token, also those read before get_response was called.
    stream.response_txt = answer.text
    return CitedResponse(answer.text, response.source_nodes, response.metadata, cited_answer=answer)


def _cited_nodes(answer: CitedAnswer, nodes: Sequence[NodeWithScore]) -> list[NodeWithScore]:
    by_id = {item.node.node_id: item for item in nodes}
    return [by_id[citation.chunk_id] for citation in answer.citations if citation.chunk_id]
