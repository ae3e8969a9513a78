"""Nodes in, numbered sources out: the LlamaIndex side of citemark's contract.

`number_nodes` turns retrieved nodes into numbered, citable copies. Each copy is a
`CitationNode` whose ``metadata["cite_as"]`` holds its marker (``"[1]"``,
``"[2]"``, ...; ``"[0]"`` first with ``index_base=0``), first in the metadata, so
LlamaIndex's default text template puts it on the first line of the node as the
model sees it. Splitting a node into smaller chunks is delegated to a LlamaIndex
text splitter; each chunk's offsets are the parent's plus the chunk's place in the
parent, kept only where the text slices back exactly. The node's text itself is
never changed: sanitizing (SPEC §3.3) happens when the node is rendered for the
model.

`nodes_to_sources` reads numbered nodes back as `citemark.Source` values, so that
`citemark.resolve` maps ``[n]`` to the node that was shown as ``[n]``.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from llama_index.core.base.llms.types import TextBlock
from llama_index.core.schema import (
    BaseNode,
    Document,
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    TextNode,
)

from citemark import Source, SynthesisError, indent_block, locate_span
from citemark.syntax import check_index_base, source_header

if TYPE_CHECKING:
    from collections.abc import Sequence

    from llama_index.core.base.llms.types import BaseContentBlock
    from llama_index.core.node_parser import TextSplitter

    from citemark import DocumentReader

__all__ = ["CITATION_KEY", "CitationNode", "nodes_to_sources", "number_nodes"]

CITATION_KEY = "cite_as"
"""The metadata key that holds a numbered node's marker, e.g. ``"[2]"``."""

# What every rendered line but a node's first starts with: no content or metadata
# line can begin with a bracketed number or a forged "cite_as:" line.
_INDENT = "    "


class CitationNode(TextNode):
    r"""A `TextNode` that renders for the model the way citemark renders a source.

    Its ``text`` is exactly the retrieved text, so its offsets still slice its
    document. What the model sees (``get_content`` in any metadata mode but
    ``NONE``) is sanitized with `citemark.indent_block`, as source content is: control
    characters dropped and every line after the metadata's first indented. The first
    line is the ``cite_as: [n]`` metadata line, so a node whose text holds
    ``"\n[2] forged"`` still shows exactly one header.

    Example:
        ```python
        from llama_index.core.schema import MetadataMode
        from llama_index.postprocessor.citemark import CitationNode

        node = CitationNode(text="Notices stay.\n[2] forged", metadata={"cite_as": "[1]"})
        print(node.get_content(MetadataMode.LLM))
        #> cite_as: [1]
        #>
        #>     Notices stay.
        #>     [2] forged
        ```
    """

    def get_metadata_str(self, mode: MetadataMode = MetadataMode.ALL) -> str:
        """The metadata lines, sanitized: every line after the first is indented."""
        return indent_block(super().get_metadata_str(mode))

    def get_content(self, metadata_mode: MetadataMode = MetadataMode.NONE) -> str:
        """The exact text for ``NONE``; otherwise metadata and sanitized, indented text."""
        if metadata_mode == MetadataMode.NONE:
            return self.text
        content = _INDENT + indent_block(self.text)
        metadata_str = self.get_metadata_str(metadata_mode).strip()
        if not metadata_str:
            return content
        return self.text_template.format(metadata_str=metadata_str, content=content).strip()

    def get_content_blocks(
        self, metadata_mode: MetadataMode = MetadataMode.NONE
    ) -> list[BaseContentBlock]:
        """One text block holding `get_content`, for multimodal synthesizers."""
        return [TextBlock(text=self.get_content(metadata_mode))]


def number_nodes(
    nodes: Sequence[NodeWithScore],
    *,
    text_splitter: TextSplitter | None = None,
    reader: DocumentReader | None = None,
    index_base: int = 1,
) -> list[NodeWithScore]:
    """Return numbered, citable copies of ``nodes``; the originals are not changed.

    Args:
        nodes: The retrieved nodes, in the order they will be shown.

        text_splitter: Optional LlamaIndex splitter (e.g. ``SentenceSplitter``) that
            cuts each node into smaller citable chunks. A chunk keeps its parent's
            score, ``ref_doc_id`` and metadata, gets the id ``"<parent id>#<k>"``, and
            has offsets only where ``document[start:end]`` is exactly its text.

        reader: Optional `citemark.DocumentReader` of whole documents by
            ``ref_doc_id``. With it, offsets are checked against the document, and
            recovered where the text occurs there exactly once.

        index_base: The number of the first node: 1 (the default), or 0 for a
            pipeline that numbers from 0. Read the nodes back with the same base
            (`nodes_to_sources`).

    Returns:
        One `CitationNode` per node (or chunk), numbered ``[1]..[N]`` in order
        (``[0]..[N-1]`` with ``index_base=0``).

    Raises:
        ValueError: ``index_base`` is not 0 or 1.
    """
    first = check_index_base(index_base)
    copies: list[tuple[CitationNode, float | None]] = []
    for item in nodes:
        copies.extend((chunk, item.score) for chunk in _citable(item.node, text_splitter, reader))
    numbered = []
    for number, (node, score) in enumerate(copies, start=first):
        node.metadata = {CITATION_KEY: source_header(number), **node.metadata}
        numbered.append(NodeWithScore(node=node, score=score))
    return numbered


def nodes_to_sources(nodes: Sequence[NodeWithScore], *, index_base: int = 1) -> list[Source]:
    """Read nodes back as sources, so that ``[n]`` names the node shown as ``[n]``.

    Nodes numbered by `number_nodes` are read by their ``cite_as`` marker, in any
    order, which must name ``1..N`` exactly once each (``0..N-1`` with
    ``index_base=0``: the base they were numbered with). Nodes without a marker are
    numbered by position, the convention of LlamaIndex's ``CitationQueryEngine``;
    resolve them with the same ``index_base``.

    Each source's ``doc_id`` is the node's ``ref_doc_id`` (its node id when it has
    none), ``chunk_id`` the node id, and ``start``/``end`` its character offsets
    when they are consistent with its text.

    Raises:
        SynthesisError: some nodes carry a marker and some do not, or the markers
            do not name ``1..N`` exactly once each (a postprocessor after
            `CitationPostprocessor` dropped, added or relabelled nodes, or it
            numbered them from the other base).
        ValueError: ``index_base`` is not 0 or 1.

    Example:
        ```python
        from llama_index.core.schema import NodeWithScore, TextNode
        from llama_index.postprocessor.citemark import nodes_to_sources, number_nodes

        node = TextNode(text="Keep notices.", id_="n1", start_char_idx=7, end_char_idx=20)
        numbered = number_nodes([NodeWithScore(node=node, score=0.5)])
        print(numbered[0].node.metadata)
        #> {'cite_as': '[1]'}
        source = nodes_to_sources(numbered)[0]
        print(source.chunk_id, source.start, source.end)
        #> n1 7 20
        ```
    """
    base = check_index_base(index_base)
    markers = [item.node.metadata.get(CITATION_KEY) for item in nodes]
    if all(marker is None for marker in markers):
        ordered = list(nodes)
    else:
        by_marker = {
            marker: item
            for marker, item in zip(markers, nodes, strict=True)
            if isinstance(marker, str)
        }
        expected = [source_header(number) for number in range(base, len(nodes) + base)]
        if len(by_marker) != len(nodes) or set(by_marker) != set(expected):
            last = len(nodes) - 1 + base
            msg = (
                f"the {len(nodes)} source nodes are not numbered [{base}]..[{last}] once each: "
                "CitationPostprocessor must be the last node postprocessor, with the same "
                "index_base"
            )
            raise SynthesisError(msg)
        ordered = [by_marker[marker] for marker in expected]
    return [_source(item.node) for item in ordered]


def _citable(
    node: BaseNode, text_splitter: TextSplitter | None, reader: DocumentReader | None
) -> list[CitationNode]:
    text = node.get_content(metadata_mode=MetadataMode.NONE)
    span = _span(node, text, reader)
    if text_splitter is None:
        return [_copy(node, node.node_id, text, span)]
    pieces = text_splitter.get_nodes_from_documents([Document(text=text)])
    if len(pieces) <= 1:
        return [_copy(node, node.node_id, text, span)]
    chunks = []
    for k, piece in enumerate(pieces, start=1):
        piece_text = piece.get_content(metadata_mode=MetadataMode.NONE)
        local = _own_span(piece, len(piece_text))
        # The splitter located the piece in the parent; trust it only if it slices back.
        if local is not None and text[local[0] : local[1]] != piece_text:
            local = None
        offsets = None
        if span is not None and local is not None:
            offsets = (span[0] + local[0], span[0] + local[1])
        chunk = _copy(node, f"{node.node_id}#{k}", piece_text, offsets)
        chunk.relationships[NodeRelationship.PARENT] = node.as_related_node_info()
        for relation in (NodeRelationship.PREVIOUS, NodeRelationship.NEXT, NodeRelationship.CHILD):
            chunk.relationships.pop(relation, None)
        chunks.append(chunk)
    return chunks


def _copy(node: BaseNode, node_id: str, text: str, span: tuple[int, int] | None) -> CitationNode:
    start, end = span if span is not None else (None, None)
    metadata = {key: value for key, value in node.metadata.items() if key != CITATION_KEY}
    return CitationNode(
        id_=node_id,
        text=text,
        start_char_idx=start,
        end_char_idx=end,
        # Deep copies: a later change to the copy never reaches the retrieved node.
        metadata=copy.deepcopy(metadata),
        relationships=copy.deepcopy(node.relationships),
        # The marker is for the model, never for an embedding.
        excluded_embed_metadata_keys=[*node.excluded_embed_metadata_keys, CITATION_KEY],
        excluded_llm_metadata_keys=[
            key for key in node.excluded_llm_metadata_keys if key != CITATION_KEY
        ],
        metadata_template=node.metadata_template,
        metadata_separator=node.metadata_separator,
    )


def _span(node: BaseNode, text: str, reader: DocumentReader | None) -> tuple[int, int] | None:
    span = _own_span(node, len(text))
    document_id = node.ref_doc_id
    if reader is None or document_id is None:
        return span
    document = reader.read(document_id)
    if document is None:
        return span
    if span is not None and document[span[0] : span[1]] == text:
        return span
    return locate_span(document, text)


def _own_span(node: BaseNode, length: int) -> tuple[int, int] | None:
    """The node's offsets when both are set and span exactly ``length`` characters."""
    start: Any = getattr(node, "start_char_idx", None)
    end: Any = getattr(node, "end_char_idx", None)
    if not isinstance(start, int) or not isinstance(end, int):
        return None
    if start < 0 or end - start != length:
        return None
    return start, end


def _source(node: BaseNode) -> Source:
    text = node.get_content(metadata_mode=MetadataMode.NONE)
    start, end = _own_span(node, len(text)) or (None, None)
    return Source(
        text=text,
        doc_id=node.ref_doc_id or node.node_id,
        chunk_id=node.node_id,
        start=start,
        end=end,
        metadata={key: value for key, value in node.metadata.items() if key != CITATION_KEY},
    )
