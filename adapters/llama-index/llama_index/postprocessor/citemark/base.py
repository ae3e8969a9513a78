"""`CitationPostprocessor`: number retrieved nodes so an answer can cite them as ``[n]``.

Attach it as the last node postprocessor of any query engine, with a QA template that
asks for ``[n]`` (`CITATION_QA_TEMPLATE`). It returns numbered deep copies (see
`number_nodes`), so the nodes in ``Response.source_nodes`` are exactly the ones the
model saw under each number, and `llama_index.query_engine.citemark` can resolve and
check the answer's markers against them.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from llama_index.core.bridge.pydantic import ConfigDict, Field, field_validator
from llama_index.core.node_parser import TextSplitter
from llama_index.core.postprocessor.types import BaseNodePostprocessor

from citemark import DocumentReader
from citemark.syntax import check_index_base
from llama_index.postprocessor.citemark.nodes import number_nodes

if TYPE_CHECKING:
    from llama_index.core.schema import NodeWithScore, QueryBundle

__all__ = ["CitationPostprocessor"]


class CitationPostprocessor(BaseNodePostprocessor):
    """Number nodes ``[1]..[N]`` on deep copies; optionally split them into citable chunks.

    With ``index_base=0`` the nodes are numbered ``[0]..[N-1]``; the cited query
    engine and the evaluator must then read them with ``index_base=0`` too.

    The marker goes into each copy's metadata under ``cite_as``, first, where the
    default text template renders it as the node's first line. The copies are
    `CitationNode` objects: their text and offsets are exactly the retrieved ones,
    and what the model sees is sanitized (SPEC §3.3). Scores, ``ref_doc_id`` and
    metadata are kept. Unknown keyword arguments are refused, not ignored.

    Put it last: a postprocessor after it that drops, adds or relabels nodes breaks
    the numbering, and the answer is then rejected rather than guessed at.

    Example:
        ```python
        from llama_index.core.node_parser import SentenceSplitter
        from llama_index.core.schema import Document, NodeWithScore
        from llama_index.postprocessor.citemark import CitationPostprocessor

        document = Document(id_="BSD", text=" ".join([
            "Redistributions of source code must retain the above copyright notice,",
            "this list of conditions and the following disclaimer.",
            "Redistributions in binary form must reproduce the above copyright notice,",
            "this list of conditions and the following disclaimer in the documentation",
            "and/or other materials provided with the distribution.",
        ]))
        node = SentenceSplitter().get_nodes_from_documents([document])[0]
        splitter = SentenceSplitter(chunk_size=50, chunk_overlap=0)
        postprocessor = CitationPostprocessor(text_splitter=splitter)
        for item in postprocessor.postprocess_nodes([NodeWithScore(node=node, score=0.9)]):
            start, end = item.node.start_char_idx, item.node.end_char_idx
            print(item.node.metadata["cite_as"], item.node.ref_doc_id, item.score, start, end)
            print(document.text[start:end] == item.node.text)
        #> [1] BSD 0.9 0 124
        #> True
        #> [2] BSD 0.9 125 327
        #> True
        ```
    """

    model_config = ConfigDict(extra="forbid")

    text_splitter: TextSplitter | None = None
    """Optional LlamaIndex splitter that cuts each node into smaller citable chunks."""

    reader: DocumentReader | None = Field(default=None, exclude=True)
    """Optional `citemark.DocumentReader` of whole documents by ``ref_doc_id``, to
    check offsets and recover missing ones; not serialized."""

    index_base: int = 1
    """The number of the first node: 1 (the default) or 0. Anything else (a bool
    included) is refused when the postprocessor is built."""

    @field_validator("index_base", mode="before")
    @classmethod
    def _check_index_base(cls, value: object) -> int:
        return check_index_base(value)

    @classmethod
    def class_name(cls) -> str:
        """The serialization key, ``"CitationPostprocessor"``."""
        return "CitationPostprocessor"

    def _postprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        return number_nodes(
            nodes,
            text_splitter=self.text_splitter,
            reader=self.reader,
            index_base=self.index_base,
        )

    async def _apostprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        if self.reader is not None:  # a reader may read files: keep the loop free
            return await asyncio.to_thread(self._postprocess_nodes, nodes, query_bundle)
        # Otherwise pure CPU work on a few nodes: no worker thread needed.
        return number_nodes(nodes, text_splitter=self.text_splitter, index_base=self.index_base)
