"""`CitedQueryEngine`: a query engine whose answers cite their source nodes, checked.

It attaches to an existing query engine (whose last node postprocessor is
`CitationPostprocessor`, or a ``CitationQueryEngine``) or is built from a retriever
and an LLM with `CitedQueryEngine.from_args`. ``query``/``aquery`` return a
`CitedResponse` (or a checked streaming response), and reject an answer that cites a
number no source node carries with `citemark.MarkerOutOfRangeError`: once, with no
repair and no retry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.response.schema import (
    AsyncStreamingResponse,
    StreamingResponse,
)
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.response_synthesizers import ResponseMode

from citemark import SynthesisError
from citemark.syntax import check_index_base
from citemark.text import is_blank
from llama_index.postprocessor.citemark import (
    CITATION_QA_TEMPLATE,
    CITATION_REFINE_TEMPLATE,
    CitationPostprocessor,
)
from llama_index.query_engine.citemark.response import resolve_response, validate_stream

if TYPE_CHECKING:
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.base.response.schema import RESPONSE_TYPE
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.llms import LLM
    from llama_index.core.node_parser import TextSplitter
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.prompts import BasePromptTemplate
    from llama_index.core.prompts.mixin import PromptDictType, PromptMixinType
    from llama_index.core.schema import NodeWithScore, QueryBundle

    from citemark import DocumentReader

__all__ = ["CitedQueryEngine"]

# Response modes in which the final answer is written by a model that was shown the
# numbered sources (in one call, or in refine passes over them). The others summarize
# summaries, accumulate separate answers, truncate, or never show the sources.
_CITING_MODES = (ResponseMode.COMPACT, ResponseMode.REFINE)


class CitedQueryEngine(BaseQueryEngine):
    """A query engine whose answers' ``[n]`` markers are resolved and checked.

    ``query`` and ``aquery`` run the wrapped engine once, then resolve the answer's
    markers to its source nodes: a `CitedResponse` for a plain response, a
    `CitedStreamingResponse` or `CitedAsyncStreamingResponse` for a streaming one
    (checked as it streams, resolved when it ends).

    Refine passes: only the last pass's text survives in a LlamaIndex response, so
    only its markers are resolved. That is sound, because the numbering is global
    (each node carries its own ``cite_as`` marker into every pass), but a citation
    an earlier pass made survives only if the model copied it forward, which
    `CITATION_REFINE_TEMPLATE` asks it to do.

    Example:
        ```python
        from llama_index.core import VectorStoreIndex
        from llama_index.core.embeddings import MockEmbedding
        from llama_index.core.schema import TextNode
        from llama_index.postprocessor.citemark.testing import ScriptedLLM
        from llama_index.query_engine.citemark import CitedQueryEngine
        from citemark import MarkerOutOfRangeError

        nodes = [TextNode(text="Patent licenses end on filing.", id_="apache-1")]
        index = VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=8))
        llm = ScriptedLLM(replies=["They end on filing [1].", "They end [2]."])
        engine = CitedQueryEngine.from_args(index.as_retriever(), llm=llm)
        response = engine.query("When do patent licenses end?")
        print(response.response, [(c.marker, c.chunk_id) for c in response.citations])
        #> They end on filing [1]. [(1, 'apache-1')]
        try:
            engine.query("And then?")
        except MarkerOutOfRangeError as exc:
            print(exc.marker, exc.valid_count)
        #> 2 1
        ```
    """

    def __init__(
        self,
        query_engine: BaseQueryEngine,
        callback_manager: CallbackManager | None = None,
        *,
        index_base: int = 1,
    ) -> None:
        """Wrap ``query_engine``, whose last node postprocessor numbers the nodes.

        Args:
            query_engine: A query engine whose source nodes are numbered by
                `CitationPostprocessor` (its last node postprocessor, with
                `CITATION_QA_TEMPLATE` as its QA prompt), or a ``CitationQueryEngine``
                (numbered by position).

            callback_manager: Defaults to the wrapped engine's.

            index_base: The number of the first source node, 1 (the default) or 0:
                the base the wrapped engine's `CitationPostprocessor` numbers from
                (``CitationPostprocessor(index_base=0)``). A mismatch is not guessed
                at: the numbering check of `nodes_to_sources` rejects the answer.

        Raises:
            ValueError: ``index_base`` is not 0 or 1.
        """
        self._index_base = check_index_base(index_base)
        self._query_engine = query_engine
        super().__init__(callback_manager=callback_manager or query_engine.callback_manager)

    @classmethod
    def from_args(  # noqa: PLR0913 - LlamaIndex's from_args convention
        cls,
        retriever: BaseRetriever,
        llm: LLM | None = None,
        *,
        text_splitter: TextSplitter | None = None,
        reader: DocumentReader | None = None,
        node_postprocessors: list[BaseNodePostprocessor] | None = None,
        response_mode: ResponseMode = ResponseMode.COMPACT,
        streaming: bool = False,
        use_async: bool = False,
        callback_manager: CallbackManager | None = None,
        text_qa_template: BasePromptTemplate = CITATION_QA_TEMPLATE,
        refine_template: BasePromptTemplate = CITATION_REFINE_TEMPLATE,
        index_base: int = 1,
    ) -> CitedQueryEngine:
        """Build a cited engine from a retriever and an LLM.

        It is a ``RetrieverQueryEngine`` with ``node_postprocessors`` followed by a
        `CitationPostprocessor`, and the citation QA and refine templates.

        Args:
            retriever: Any LlamaIndex retriever, e.g. ``index.as_retriever()``.

            llm: The answering LLM; ``Settings.llm`` when omitted, as in LlamaIndex.

            text_splitter: Passed to `CitationPostprocessor`, to cite smaller chunks.

            reader: Passed to `CitationPostprocessor`, to check and recover offsets.

            node_postprocessors: Postprocessors to run before the numbering.

            response_mode: ``COMPACT`` (default) or ``REFINE``; see the class notes.

            streaming: Return checked streaming responses.

            use_async: Let the synthesizer make its calls asynchronously.

            callback_manager: Passed to the engine.

            text_qa_template: The QA prompt; it must show the nodes' ``cite_as``
                lines (``{context_str}``) and ask for ``[n]`` citations.

            refine_template: The refine prompt, for answers made in several passes.

            index_base: The number of the first node, 1 (the default) or 0; the
                nodes are numbered and the answer resolved with this one base.

        Raises:
            ValueError: ``response_mode`` is one in which the final answer is not
                written from the numbered sources (``tree_summarize`` summarizes
                summaries, ``simple_summarize`` truncates sources silently,
                ``accumulate`` concatenates separate answers, ``generation`` and
                ``no_text`` show no sources), or ``index_base`` is not 0 or 1.
        """
        mode = ResponseMode(response_mode)
        if mode not in _CITING_MODES:
            msg = (
                f"response_mode {mode.value!r} cannot give a checkable cited answer: "
                "use 'compact' or 'refine'"
            )
            raise ValueError(msg)
        postprocessors = [
            *(node_postprocessors or []),
            CitationPostprocessor(
                text_splitter=text_splitter, reader=reader, index_base=index_base
            ),
        ]
        engine = RetrieverQueryEngine.from_args(
            retriever,
            llm=llm,
            node_postprocessors=postprocessors,
            response_mode=mode,
            text_qa_template=text_qa_template,
            refine_template=refine_template,
            streaming=streaming,
            use_async=use_async,
            callback_manager=callback_manager,
        )
        return cls(engine, index_base=index_base)

    @property
    def index_base(self) -> int:
        """The number of the first source node (1 or 0)."""
        return self._index_base

    @property
    def query_engine(self) -> BaseQueryEngine:
        """The wrapped engine."""
        return self._query_engine

    def retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Retrieve (and number) nodes through the wrapped engine."""
        return self._query_engine.retrieve(query_bundle)

    # The wrapper is transparent to prompts: its keys are the wrapped engine's (e.g.
    # "response_synthesizer:text_qa_template"). Nesting the engine as a prompt module
    # would give keys with two colons, which PromptMixin.update_prompts cannot split.
    def get_prompts(self) -> PromptDictType:
        """The wrapped engine's prompts, under the wrapped engine's keys."""
        return self._query_engine.get_prompts()

    def update_prompts(self, prompts_dict: PromptDictType) -> None:
        """Update the wrapped engine's prompts, under the wrapped engine's keys."""
        self._query_engine.update_prompts(prompts_dict)

    def _get_prompt_modules(self) -> PromptMixinType:
        return {}

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        _check_question(query_bundle)
        return _cited(self._query_engine.query(query_bundle), self._index_base)

    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        _check_question(query_bundle)
        return _cited(await self._query_engine.aquery(query_bundle), self._index_base)


def _check_question(query_bundle: QueryBundle) -> None:
    if is_blank(query_bundle.query_str):
        msg = "the question is blank: there is nothing to answer"
        raise SynthesisError(msg)


def _cited(response: RESPONSE_TYPE, index_base: int) -> RESPONSE_TYPE:
    if isinstance(response, StreamingResponse | AsyncStreamingResponse):
        return validate_stream(response, index_base=index_base)
    return resolve_response(response, index_base=index_base)  # type: ignore[arg-type]
