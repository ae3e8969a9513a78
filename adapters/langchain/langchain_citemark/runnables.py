"""A Runnable that answers from documents with citations citemark resolves.

`CitedAnswerChain` takes ``{"question": ..., "documents": [Document, ...]}``, renders
the numbered source list, asks the model once, and returns a `citemark.CitedAnswer`
whose citations map back to the documents. An out-of-range marker raises
`citemark.MarkerOutOfRangeError`; when streaming, it raises as soon as the marker is
complete, even when the model split it across chunks. Nothing is retried or repaired.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.documents import Document  # noqa: TC002 - CitedAnswerInput needs it at runtime
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableSerializable
from langchain_core.runnables.config import patch_config
from pydantic import ConfigDict, field_validator
from typing_extensions import TypedDict  # pydantic needs it for schemas on 3.11

from citemark import (
    DEFAULT_SYNTHESIS_PROMPT,
    CitedAnswer,
    NoSourcesError,
    Source,
    StreamingResolver,
    SynthesisError,
    render_prompt,
    resolve,
)
from citemark.syntax import check_index_base
from citemark.text import is_blank
from langchain_citemark.documents import documents_to_sources

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator, Mapping

    from langchain_core.callbacks import (
        AsyncCallbackManagerForChainRun,
        CallbackManagerForChainRun,
    )

    from citemark import DocumentReader

__all__ = ["CitedAnswerChain", "CitedAnswerInput", "create_cited_answer_chain"]


class CitedAnswerInput(TypedDict):
    """The chain's input: a question and the documents retrieved for it."""

    question: str
    documents: list[Document]


class CitedAnswerChain(RunnableSerializable[CitedAnswerInput, CitedAnswer]):
    """Answer a question from documents, with citations resolved against them.

    ``invoke``/``ainvoke``/``batch``/``abatch`` return a `citemark.CitedAnswer`.
    ``stream``/``astream`` yield the model's text deltas as strings, then the final
    `citemark.CitedAnswer` as the last chunk; they raise
    `citemark.MarkerOutOfRangeError` as soon as a complete marker is certainly out of
    range. Empty documents raise `citemark.NoSourcesError` before the model is called.

    Example:
        ```python
        from langchain_core.documents import Document
        from langchain_core.language_models import FakeListChatModel
        from langchain_citemark import create_cited_answer_chain

        llm = FakeListChatModel(responses=["It ends when litigation is filed [2]."])
        chain = create_cited_answer_chain(llm)
        meta = {"source": "apache.txt"}
        docs = [
            Document("Keep the NOTICE file.", metadata={**meta, "start_index": 0}),
            Document("Patent licenses terminate on filing.", metadata={**meta, "start_index": 40}),
        ]
        answer = chain.invoke({"question": "When does the patent license end?", "documents": docs})
        print([(c.marker, c.uri, c.start, c.end) for c in answer.citations])
        #> [(2, 'apache.txt', 40, 76)]
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    llm: Runnable[Any, Any]
    """Any chat model or LLM (or Runnable) that takes a prompt string."""

    prompt_template: str = DEFAULT_SYNTHESIS_PROMPT
    """A `str.format` template with ``{question}`` and ``{sources}``."""

    reader: Any = None
    """Optional `citemark.DocumentReader` used to recover missing offsets."""

    question_key: str = "question"
    """The input key holding the question."""

    documents_key: str = "documents"
    """The input key holding the documents."""

    index_base: int = 1
    """The number of the first document: 1 (the default), or 0 for a pipeline that
    numbers from 0. The prompt is rendered and the answer resolved with this one base,
    so ``[0]`` is then the first document and ``[N]`` is out of range."""

    @field_validator("index_base", mode="before")
    @classmethod
    def _check_index_base(cls, value: object) -> int:
        return check_index_base(value)

    def invoke(
        self, input: CitedAnswerInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> CitedAnswer:
        """Answer once and resolve the citations."""
        return self._call_with_config(self._invoke, input, config, run_type="chain", **kwargs)

    async def ainvoke(
        self, input: CitedAnswerInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> CitedAnswer:
        """Answer once and resolve the citations, asynchronously."""
        return await self._acall_with_config(
            self._ainvoke, input, config, run_type="chain", **kwargs
        )

    def stream(  # type: ignore[override]
        self, input: CitedAnswerInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[str | CitedAnswer]:
        """Yield text deltas, then the final `CitedAnswer`; fail fast on a bad marker."""
        yield from self._transform_stream_with_config(
            iter([input]),
            self._stream,  # type: ignore[arg-type]
            config,
            run_type="chain",
            **kwargs,
        )

    async def astream(  # type: ignore[override]
        self, input: CitedAnswerInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[str | CitedAnswer]:
        """Yield text deltas, then the final `CitedAnswer`, asynchronously."""

        async def single() -> AsyncIterator[CitedAnswerInput]:
            yield input

        async for chunk in self._atransform_stream_with_config(
            single(),
            self._astream,  # type: ignore[arg-type]
            config,
            run_type="chain",
            **kwargs,
        ):
            yield chunk

    # --- the work -------------------------------------------------------------------

    def _prepare(self, input: Mapping[str, Any]) -> tuple[str, list[Source]]:
        if not isinstance(input, dict):
            msg = f"input must be a dict with {self.question_key!r} and {self.documents_key!r}"
            raise TypeError(msg)
        question = input.get(self.question_key)
        documents = input.get(self.documents_key)
        if not isinstance(question, str) or not isinstance(documents, list):
            msg = (
                f"input must hold a string under {self.question_key!r} and a list of "
                f"Documents under {self.documents_key!r}"
            )
            raise TypeError(msg)
        sources = documents_to_sources(documents, reader=self.reader)
        if not sources:
            raise NoSourcesError
        if is_blank(question):
            msg = "the question is blank: there is nothing to answer"
            raise SynthesisError(msg)
        prompt = render_prompt(question, sources, self.prompt_template, index_base=self.index_base)
        return prompt, sources

    def _invoke(
        self,
        input: CitedAnswerInput,
        run_manager: CallbackManagerForChainRun,
        config: RunnableConfig,
    ) -> CitedAnswer:
        prompt, sources = self._prepare(input)
        child = patch_config(config, callbacks=run_manager.get_child())
        return resolve(_text(self.llm.invoke(prompt, child)), sources, index_base=self.index_base)

    async def _ainvoke(
        self,
        input: CitedAnswerInput,
        run_manager: AsyncCallbackManagerForChainRun,
        config: RunnableConfig,
    ) -> CitedAnswer:
        prompt, sources = self._prepare(input)
        child = patch_config(config, callbacks=run_manager.get_child())
        answer = _text(await self.llm.ainvoke(prompt, child))
        return resolve(answer, sources, index_base=self.index_base)

    def _stream(
        self,
        inputs: Iterator[CitedAnswerInput],
        run_manager: CallbackManagerForChainRun,
        config: RunnableConfig,
    ) -> Iterator[str | CitedAnswer]:
        for input in inputs:
            prompt, sources = self._prepare(input)
            resolver = StreamingResolver(sources, index_base=self.index_base)
            child = patch_config(config, callbacks=run_manager.get_child())
            for chunk in self.llm.stream(prompt, child):
                delta = _text(chunk)
                if delta:
                    yield resolver.feed(delta)
            yield resolver.finish()

    async def _astream(
        self,
        inputs: AsyncIterator[CitedAnswerInput],
        run_manager: AsyncCallbackManagerForChainRun,
        config: RunnableConfig,
    ) -> AsyncIterator[str | CitedAnswer]:
        async for input in inputs:
            prompt, sources = self._prepare(input)
            resolver = StreamingResolver(sources, index_base=self.index_base)
            child = patch_config(config, callbacks=run_manager.get_child())
            async for chunk in self.llm.astream(prompt, child):
                delta = _text(chunk)
                if delta:
                    yield resolver.feed(delta)
            yield resolver.finish()


def create_cited_answer_chain(
    llm: Runnable[Any, Any],
    prompt_template: str = DEFAULT_SYNTHESIS_PROMPT,
    *,
    reader: DocumentReader | None = None,
    index_base: int = 1,
) -> CitedAnswerChain:
    """Build a `CitedAnswerChain` around ``llm``.

    Args:
        llm: Any chat model or LLM; it receives the rendered prompt as a string.
        prompt_template: A `str.format` template with ``{question}`` and ``{sources}``.
        reader: Optional `citemark.DocumentReader` (for example
            ``citemark.FileReader(root)``) used to recover offsets that a splitter
            left out, where the chunk occurs exactly once in its document.
        index_base: The number of the first document, 1 (the default) or 0; the
            prompt shows ``[0]`` first and the answer is resolved from 0 alike.

    Raises:
        ValueError: ``index_base`` is not 0 or 1 (a bool is refused too).
    """
    return CitedAnswerChain(
        llm=llm, prompt_template=prompt_template, reader=reader, index_base=index_base
    )


def _text(output: object) -> str:
    """The text of whatever a model returned: a string, a message or a chunk."""
    if isinstance(output, str):
        return output
    if isinstance(output, BaseMessage):
        return output.text
    msg = "the model returned neither text nor a message"
    raise TypeError(msg)
