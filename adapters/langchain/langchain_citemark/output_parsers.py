"""An output parser for chains that keep their own prompt.

`CitationOutputParser` resolves an answer's ``[n]`` markers against the documents
the prompt numbered. Its error is a citemark `SynthesisError` and deliberately *not*
LangChain's ``OutputParserException``: ``OutputFixingParser`` and the ``Retry*``
parsers catch exactly that type and ask the model to "fix" the answer, which turns a
fabricated ``[9]`` into a plausible ``[1]``. Also narrow ``with_retry()``: by default
it retries every exception, this one included.

**Where the parser finds the documents**, in this order: the documents it is bound to
(``CitationOutputParser(documents=docs)``); a dict input's list under
``documents_key`` (``RunnablePassthrough.assign`` chains); else the
`CitationCallbackHandler` among its run's callbacks, which followed the run's
retriever and the prompt the model saw: LangChain's RAG tutorial chain, as written,
with citemark's formatter and this parser in place of its own::

    chain = (
        {"context": retriever | format_documents, "question": RunnablePassthrough()}
        | prompt
        | llm
        | CitationOutputParser()
    )
    chain.invoke("question", config={"callbacks": [CitationCallbackHandler()]})

The documents are then taken in the order the prompt numbered them, as the handler
records them. Where none of the three holds documents, the error names the places it
looked and the fixes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage
from langchain_core.output_parsers import BaseOutputParser
from pydantic import ConfigDict, field_validator

from citemark import CitedAnswer, StreamingResolver, resolve
from citemark.syntax import check_index_base, citing_rules
from langchain_citemark.callbacks import CitationCallbackHandler
from langchain_citemark.documents import documents_to_sources

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator, Mapping

    from langchain_core.callbacks import (
        AsyncCallbackManagerForChainRun,
        CallbackManagerForChainRun,
    )
    from langchain_core.runnables import RunnableConfig

    from citemark import Source

__all__ = ["CitationOutputParser"]

# citemark's own citing rules, worded for a prompt the chain's author lays out.
_FORMAT_INSTRUCTIONS = citing_rules(where="from the numbered source list", bullet="")


class CitationOutputParser(BaseOutputParser[CitedAnswer]):
    """Resolve ``[n]`` markers in model output against numbered documents.

    Use it bound to the documents the prompt showed
    (``CitationOutputParser(documents=docs)``, then ``parser.invoke(message)``);
    unbound at the end of a ``RunnablePassthrough.assign`` chain, where its input is
    a dict holding the documents under ``documents_key`` and the answer text under
    ``answer_key``; or unbound at the end of LangChain's RAG tutorial chain
    (``{"context": retriever | format_documents, "question": RunnablePassthrough()}
    | prompt | llm | CitationOutputParser()``) run with a `CitationCallbackHandler`
    in its callbacks, which gives the parser the documents its run retrieved, in the
    order the prompt numbered them.

    Raises:
        citemark.MarkerOutOfRangeError: a marker names a document that was not shown.
        citemark.NoSourcesError: there are no documents to cite.
        citemark.SynthesisError: the answer is blank.
        TypeError: the parser found no documents (the message names where it looked
            and how to give them), or found the run's documents but not numbered in
            its prompt.

    Example:
        ```python
        from langchain_core.documents import Document
        from langchain_citemark import CitationOutputParser
        from citemark import MarkerOutOfRangeError

        docs = [Document("Keep notices.", metadata={"source": "bsd"})]
        parser = CitationOutputParser(documents=docs)
        print([c.doc_id for c in parser.parse("Keep them [1].").citations])
        #> ['bsd']
        try:
            parser.parse("Keep them [9].")
        except MarkerOutOfRangeError as exc:
            print(exc.marker, exc.valid_count)
        #> 9 1
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    documents: list[Document] | None = None
    """The documents the prompt numbered, when the parser is bound to them."""

    documents_key: str = "context"
    """Where the documents are in a dict input (``RunnablePassthrough.assign`` style)."""

    answer_key: str = "answer"
    """Where the answer text is in a dict input."""

    reader: Any = None
    """Optional `citemark.DocumentReader` used to recover missing offsets."""

    index_base: int = 1
    """The number the prompt gave the first document: 1, or 0 for prompts numbered from 0."""

    strict: bool = False
    """Reject citation-like text that is not a marker (`citemark.UnrecognizedCitationError`)."""

    @field_validator("index_base", mode="before")
    @classmethod
    def _check_index_base(cls, value: object) -> int:
        return check_index_base(value)

    @property
    def _type(self) -> str:
        return "citemark_citation_output_parser"

    @property
    def InputType(self) -> Any:  # noqa: N802 - LangChain's name
        """Text, a message, or a dict with the documents and the answer."""
        return str | BaseMessage | dict[str, Any]

    def get_format_instructions(self) -> str:
        """Tell the model how to cite, for prompts that include format instructions."""
        return _FORMAT_INSTRUCTIONS

    def parse(self, text: str) -> CitedAnswer:
        """Resolve ``text`` against the bound documents."""
        return resolve(
            text, self._sources(self.documents), index_base=self.index_base, strict=self.strict
        )

    def invoke(
        self,
        input: str | BaseMessage | Mapping[str, Any],
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> CitedAnswer:
        """Parse text or a message (bound documents), or a dict holding both."""
        if isinstance(input, dict):
            return self._call_with_config(
                self._parse_mapping,  # type: ignore[arg-type]
                input,  # type: ignore[arg-type]
                config,
                run_type="parser",
                **kwargs,
            )
        if self.documents is None:
            return self._call_with_config(
                self._parse_in_run,
                input,  # type: ignore[arg-type]
                config,
                run_type="parser",
                **kwargs,
            )
        return super().invoke(input, config, **kwargs)  # type: ignore[arg-type]

    async def ainvoke(
        self,
        input: str | BaseMessage | Mapping[str, Any],
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> CitedAnswer:
        """Asynchronous `invoke`."""
        if isinstance(input, dict):
            return await self._acall_with_config(
                self._aparse_mapping,  # type: ignore[arg-type]
                input,  # type: ignore[arg-type]
                config,
                run_type="parser",
                **kwargs,
            )
        if self.documents is None:
            return await self._acall_with_config(
                self._aparse_in_run,
                input,  # type: ignore[arg-type]
                config,
                run_type="parser",
                **kwargs,
            )
        return await super().ainvoke(input, config, **kwargs)  # type: ignore[arg-type]

    def transform(
        self,
        input: Iterator[str | BaseMessage],
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> Iterator[CitedAnswer]:
        """Validate while the model streams; yield the `CitedAnswer` at the end.

        Unlike LangChain's cumulative parsers, the final text is always resolved,
        and a complete out-of-range marker raises as soon as it arrives.
        """
        yield from self._transform_stream_with_config(
            input, self._transform, config, run_type="parser", **kwargs
        )

    async def atransform(
        self,
        input: AsyncIterator[str | BaseMessage],
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[CitedAnswer]:
        """Asynchronous `transform`."""
        async for chunk in self._atransform_stream_with_config(
            input, self._atransform, config, run_type="parser", **kwargs
        ):
            yield chunk

    def _sources(self, documents: object, run_manager: object = None) -> list[Source]:
        """The sources: ``documents`` when a list, else the run's, from its handler."""
        if isinstance(documents, list):
            return documents_to_sources(documents, reader=self.reader)
        if documents is None and self.documents is not None:
            return documents_to_sources(self.documents, reader=self.reader)
        return documents_to_sources(self._run_documents(run_manager), reader=self.reader)

    def _run_documents(self, run_manager: object) -> list[Document]:
        """The documents a `CitationCallbackHandler` saw this parser's run show its model."""
        run_id = getattr(run_manager, "run_id", None)
        handlers = getattr(run_manager, "handlers", None) or []
        seen = 0
        for handler in handlers:
            if isinstance(handler, CitationCallbackHandler) and run_id is not None:
                count, ordered = handler.shown_documents(run_id, index_base=self.index_base)
                if ordered is not None:
                    return ordered
                seen = max(seen, count)
        if seen:
            last = seen - 1 + self.index_base
            msg = (
                f"the parser found the run's {seen} documents, but the prompt the model "
                f"saw does not number them {self.index_base}..{last} once each: format "
                "them with langchain_citemark.format_documents (index_base="
                f"{self.index_base})"
            )
            raise TypeError(msg)
        msg = (
            "the parser has no documents: it looked for documents bound to it "
            f"(documents=), a list under {self.documents_key!r} of a dict input, and a "
            "CitationCallbackHandler in the run's callbacks that saw the run retrieve "
            "documents. Bind them (CitationOutputParser(documents=docs)), pass a dict "
            f"holding them under {self.documents_key!r} (RunnablePassthrough.assign), "
            "or run the chain with config={'callbacks': [CitationCallbackHandler()]} "
            "and langchain_citemark.format_documents numbering its documents"
        )
        raise TypeError(msg)

    def _parse_in_run(
        self, input: str | BaseMessage, run_manager: CallbackManagerForChainRun
    ) -> CitedAnswer:
        text = input.text if isinstance(input, BaseMessage) else input
        sources = self._sources(None, run_manager)
        return resolve(text, sources, index_base=self.index_base, strict=self.strict)

    async def _aparse_in_run(
        self, input: str | BaseMessage, run_manager: AsyncCallbackManagerForChainRun
    ) -> CitedAnswer:
        return self._parse_in_run(input, run_manager)  # type: ignore[arg-type]

    def _parse_mapping(
        self,
        input: Mapping[str, Any],
        run_manager: CallbackManagerForChainRun | None = None,
    ) -> CitedAnswer:
        answer = input.get(self.answer_key)
        if isinstance(answer, BaseMessage):
            answer = answer.text
        if not isinstance(answer, str):
            msg = f"the input dict must hold the answer text under {self.answer_key!r}"
            raise TypeError(msg)
        documents = input.get(self.documents_key)
        return resolve(
            answer,
            self._sources(documents if isinstance(documents, list) else None, run_manager),
            index_base=self.index_base,
            strict=self.strict,
        )

    async def _aparse_mapping(
        self,
        input: Mapping[str, Any],
        run_manager: AsyncCallbackManagerForChainRun | None = None,
    ) -> CitedAnswer:
        return self._parse_mapping(input, run_manager)  # type: ignore[arg-type]

    def _transform(
        self,
        chunks: Iterator[str | BaseMessage],
        run_manager: CallbackManagerForChainRun | None = None,
    ) -> Iterator[CitedAnswer]:
        resolver = StreamingResolver(
            self._sources(None, run_manager), index_base=self.index_base, strict=self.strict
        )
        for chunk in chunks:
            resolver.feed(chunk.text if isinstance(chunk, BaseMessage) else chunk)
        yield resolver.finish()

    async def _atransform(
        self,
        chunks: AsyncIterator[str | BaseMessage],
        run_manager: AsyncCallbackManagerForChainRun | None = None,
    ) -> AsyncIterator[CitedAnswer]:
        resolver = StreamingResolver(
            self._sources(None, run_manager), index_base=self.index_base, strict=self.strict
        )
        async for chunk in chunks:
            resolver.feed(chunk.text if isinstance(chunk, BaseMessage) else chunk)
        yield resolver.finish()
