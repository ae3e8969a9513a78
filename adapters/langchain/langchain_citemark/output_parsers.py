"""An output parser for chains that keep their own prompt.

`CitationOutputParser` resolves an answer's ``[n]`` markers against the documents
the prompt numbered. Its error is a citemark `SynthesisError` and deliberately *not*
LangChain's ``OutputParserException``: ``OutputFixingParser`` and the ``Retry*``
parsers catch exactly that type and ask the model to "fix" the answer, which turns a
fabricated ``[9]`` into a plausible ``[1]``. Also narrow ``with_retry()``: by default
it retries every exception, this one included.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage
from langchain_core.output_parsers import BaseOutputParser
from pydantic import ConfigDict, field_validator

from citemark import CitedAnswer, StreamingResolver, resolve
from citemark.syntax import check_index_base, citing_rules
from langchain_citemark.documents import documents_to_sources

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator, Mapping

    from langchain_core.runnables import RunnableConfig

    from citemark import Source

__all__ = ["CitationOutputParser"]

# citemark's own citing rules, worded for a prompt the chain's author lays out.
_FORMAT_INSTRUCTIONS = citing_rules(where="from the numbered source list", bullet="")


class CitationOutputParser(BaseOutputParser[CitedAnswer]):
    """Resolve ``[n]`` markers in model output against numbered documents.

    Use it either bound to the documents the prompt showed
    (``CitationOutputParser(documents=docs)``, then ``parser.invoke(message)``), or
    unbound at the end of a ``RunnablePassthrough.assign`` chain, where its input is
    a dict holding the documents under ``documents_key`` and the answer text under
    ``answer_key``.

    Raises:
        citemark.MarkerOutOfRangeError: a marker names a document that was not shown.
        citemark.NoSourcesError: there are no documents to cite.
        citemark.SynthesisError: the answer is blank.

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

    def _sources(self, documents: object) -> list[Source]:
        if not isinstance(documents, list):
            msg = "the parser has no documents: bind them or pass a dict holding them"
            raise TypeError(msg)
        return documents_to_sources(documents, reader=self.reader)

    def _parse_mapping(self, input: Mapping[str, Any]) -> CitedAnswer:
        answer = input.get(self.answer_key)
        if isinstance(answer, BaseMessage):
            answer = answer.text
        if not isinstance(answer, str):
            msg = f"the input dict must hold the answer text under {self.answer_key!r}"
            raise TypeError(msg)
        return resolve(
            answer,
            self._sources(input.get(self.documents_key)),
            index_base=self.index_base,
            strict=self.strict,
        )

    async def _aparse_mapping(self, input: Mapping[str, Any]) -> CitedAnswer:
        return self._parse_mapping(input)

    def _transform(self, chunks: Iterator[str | BaseMessage]) -> Iterator[CitedAnswer]:
        resolver = StreamingResolver(
            self._sources(self.documents), index_base=self.index_base, strict=self.strict
        )
        for chunk in chunks:
            resolver.feed(chunk.text if isinstance(chunk, BaseMessage) else chunk)
        yield resolver.finish()

    async def _atransform(
        self, chunks: AsyncIterator[str | BaseMessage]
    ) -> AsyncIterator[CitedAnswer]:
        resolver = StreamingResolver(
            self._sources(self.documents), index_base=self.index_base, strict=self.strict
        )
        async for chunk in chunks:
            resolver.feed(chunk.text if isinstance(chunk, BaseMessage) else chunk)
        yield resolver.finish()
