"""Structured-output citations: source ids and quotes from LlamaIndex's structured paths.

LlamaIndex's structured paths (``llm.structured_predict(Model, prompt, ...)``,
``llm.as_structured_llm(Model)``, ``LLMTextCompletionProgram`` and
``FunctionCallingProgram``, a query engine built with ``output_cls=``) return a
pydantic object, validated for its JSON types only: a ``source_id`` that names no
node, or a quote its node does not hold, parses fine.

`resolve_structured_nodes` checks that object against the nodes the model was shown
(numbered by `llama_index.postprocessor.citemark.number_nodes` or
`CitationPostprocessor`, or by position as ``CitationQueryEngine`` numbers them) and
returns a `StructuredCitedResponse` whose citations map back to those nodes;
`resolve_structured_response` does the same for a query engine's ``PydanticResponse``.
The checks are `citemark.resolve_structured`'s, and a violation rejects the answer
once: nothing is repaired, moved to another node or retried.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from llama_index.core.base.response.schema import PydanticResponse

from citemark import StructuredAnswerError, resolve_structured
from citemark.syntax import check_index_base, source_header
from llama_index.postprocessor.citemark import CITATION_KEY, nodes_to_sources

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from llama_index.core.schema import NodeWithScore
    from pydantic import BaseModel

    from citemark import Citation, StructuredCitedAnswer

__all__ = [
    "StructuredCitedResponse",
    "resolve_structured_nodes",
    "resolve_structured_response",
]


@dataclass(frozen=True)
class StructuredCitedResponse:
    """A structured answer whose citations were checked against its source nodes."""

    output: BaseModel | Mapping[str, Any]
    """The structured object, as the model's program returned it."""

    checked: StructuredCitedAnswer
    """The checked answer: its text, resolved citations and every finding."""

    source_nodes: list[NodeWithScore]
    """The nodes the model was shown, as given."""

    index_base: int = 1
    """The number of the first node (1 or 0)."""

    @property
    def citations(self) -> tuple[Citation, ...]:
        """The distinct citations in first-mention order; ``chunk_id`` is the node id."""
        return self.checked.citations

    @property
    def cited_nodes(self) -> list[NodeWithScore]:
        """The source nodes the answer cites, in the order of `citations`."""
        by_number = _numbered(self.source_nodes, self.index_base)
        return [by_number[citation.marker] for citation in self.citations]


def resolve_structured_nodes(  # noqa: PLR0913 - the core's options, keyword-only
    output: BaseModel | Mapping[str, Any],
    nodes: Sequence[NodeWithScore],
    *,
    index_base: int = 1,
    text_field: str | None = None,
    citations_field: str | None = None,
    strict: bool = False,
) -> StructuredCitedResponse:
    """Check a structured answer's source ids and quotes against the nodes shown.

    Args:
        output: The object ``structured_predict``, a structured LLM's ``raw`` or a
            Pydantic program returned (or its JSON as a dict).
        nodes: The nodes the model was shown, numbered as for `nodes_to_sources`.
        index_base: The number of the first node, 1 (the default) or 0: the base the
            nodes were numbered with.
        text_field: JSON pointer of the answer text (default ``/answer``).
        citations_field: JSON pointer of the citations list (default ``/citations``).
        strict: Also reject citation-like text that is not a marker in a string field.

    Returns:
        The answer, its citations resolved to the nodes' own fields.

    Raises:
        citemark.MarkerOutOfRangeError: an id (or a field's marker) names no node.
        citemark.QuoteNotInSourceError: a quote is not in the node it cites (its
            ``in_other_source`` names a node that holds it, if one does).
        citemark.StructuredAnswerError: the citations cannot be read.
        citemark.NoSourcesError: there are no nodes.
        citemark.SynthesisError: the nodes' numbering is broken (see
            `nodes_to_sources`).
        ValueError: ``index_base`` is not 0 or 1.

    Example:
        ```python
        from pydantic import BaseModel
        from llama_index.core.schema import NodeWithScore, TextNode
        from llama_index.postprocessor.citemark import number_nodes
        from llama_index.query_engine.citemark import resolve_structured_nodes
        from citemark import MarkerOutOfRangeError

        class CitedAnswer(BaseModel):
            answer: str
            citations: list[int]

        nodes = number_nodes([NodeWithScore(node=TextNode(text="Keep notices.", id_="n1"))])
        checked = resolve_structured_nodes(CitedAnswer(answer="Keep them.", citations=[1]), nodes)
        print([(c.marker, c.chunk_id) for c in checked.citations], checked.cited_nodes[0].node.text)
        #> [(1, 'n1')] Keep notices.
        try:
            resolve_structured_nodes(CitedAnswer(answer="Keep them.", citations=[0]), nodes)
        except MarkerOutOfRangeError as exc:
            print(exc)
        #> marker [0] is out of range: the answer was given 1 source, so markers must lie in 1..1
        ```
    """
    base = check_index_base(index_base)
    checked = resolve_structured(
        output,
        nodes_to_sources(nodes, index_base=base),
        index_base=base,
        text_field=text_field,
        citations_field=citations_field,
        strict=strict,
    )
    return StructuredCitedResponse(
        output=output, checked=checked, source_nodes=list(nodes), index_base=base
    )


def resolve_structured_response(
    response: PydanticResponse,
    *,
    index_base: int = 1,
    text_field: str | None = None,
    citations_field: str | None = None,
    strict: bool = False,
) -> StructuredCitedResponse:
    """Check a query engine's ``PydanticResponse`` against its own source nodes.

    A query engine built with ``output_cls=`` and `CitationPostprocessor` as its last
    node postprocessor returns the structured object and the numbered nodes it showed;
    this is `resolve_structured_nodes` over the two.

    Raises:
        citemark.StructuredAnswerError: the response holds no object (``None``), or
            its citations cannot be read.
        TypeError: ``response`` is not a ``PydanticResponse``.

    Every other error is `resolve_structured_nodes`'s.
    """
    if not isinstance(response, PydanticResponse):
        msg = "resolve_structured_response takes a PydanticResponse (a query engine's output_cls)"
        raise TypeError(msg)
    output = response.response
    if output is None:
        msg = "the structured response holds no object: the model's reply did not parse"
        raise StructuredAnswerError(msg)
    return resolve_structured_nodes(
        output,
        response.source_nodes,
        index_base=index_base,
        text_field=text_field,
        citations_field=citations_field,
        strict=strict,
    )


def _numbered(nodes: Sequence[NodeWithScore], base: int) -> dict[int, NodeWithScore]:
    """Each node by the number it was shown under (its ``cite_as`` marker, else position).

    The numbering was validated by `nodes_to_sources` when the answer was resolved.
    """
    by_position = dict(enumerate(nodes, start=base))
    if all(item.node.metadata.get(CITATION_KEY) is None for item in nodes):
        return by_position
    by_marker = {item.node.metadata.get(CITATION_KEY): item for item in nodes}
    return {number: by_marker[source_header(number)] for number in by_position}
