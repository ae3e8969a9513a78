r"""Recording ``citemark check`` rows from a LlamaIndex pipeline nobody rewrites.

`CitationRecordingHandler` is a LlamaIndex instrumentation event handler. Attached
once with ``get_dispatcher().add_event_handler(handler)``, it writes one native
``citemark check`` row per top-level query (``QueryStartEvent`` to
``QueryEndEvent``), through `citemark.reports.RowRecorder`: the query's span id, its
question, the response's text, and the response's ``source_nodes`` as sources in the
order the model saw them, so that ``citemark check FILE`` grades the recorded runs
later with no change to the query engine.

How the numbering is known, never guessed (the row's ``numbered_by`` says which):

- ``cite_as``: nodes numbered by `llama_index.postprocessor.citemark.CitationPostprocessor`
  (or `CitedQueryEngine`) carry their marker; they are read back by it.
- ``source_label``: LlamaIndex's ``CitationQueryEngine`` rewrites each node's text to
  ``"Source n:\n<text>\n"``, ``n`` being its place in ``source_nodes`` plus one; the
  label and the trailing line break it added are removed, and each ``n`` is checked.
- ``prompt``: other nodes are found in the one prompt the query's LLM call was sent,
  and must be numbered there ``index_base..`` once each.

Anything else (a prompt that does not number the nodes, several LLM calls, labels out
of order) is recorded with no sources and ``unassessed: numbering_unknown``; a query
that raised before any answer with ``chain_error``; a response with no text yet (a
streaming response, whose text exists only once it is consumed) with ``no_answer``. A
nested query (a sub-question engine's, or the engine `CitedQueryEngine` wraps) belongs
to the top-level query around it and gets no row of its own. Every row carries
``"id_scope": "run"``: its id, a query's span id, names that one run only.

**A rejected answer is recorded with what the model said.** When the top-level query
raises after a nested query answered (`CitedQueryEngine` rejecting a ``[5]`` of three
nodes: its wrapped engine's query ended with a response, then the check raised), the
row is that nested response's, read as any response is (its text, its source nodes in
the order the model saw them), plus ``"rejected": "<citemark error class>"`` (or
``"raised": "<exception class>"`` for an error that is not citemark's), so that
``citemark check`` finds the same violation the next day.

Concurrent queries never mix: every event carries the span id of the query it
belongs to, and a query's LLM prompt is tied to it through a context variable set
at its start, which threads and asyncio tasks each hold separately.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
import sys
import threading
from typing import TYPE_CHECKING, Any, Final

from llama_index.core.base.response.schema import PydanticResponse, Response
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events.llm import (
    LLMChatStartEvent,
    LLMCompletionStartEvent,
)
from llama_index.core.instrumentation.events.query import QueryEndEvent, QueryStartEvent

# llama-index-core re-exports the event from llama-index-instrumentation without __all__.
from llama_index.core.instrumentation.events.span import (  # type: ignore[attr-defined]
    SpanDropEvent,
)
from llama_index.core.schema import MetadataMode, QueryBundle
from pydantic import BaseModel

from citemark import SynthesisError, recover_numbering
from citemark.reports import RowRecorder
from citemark.syntax import check_index_base
from llama_index.postprocessor.citemark import CITATION_KEY, nodes_to_sources

if TYPE_CHECKING:
    import os
    from collections.abc import Mapping, Sequence

    from llama_index.core.instrumentation.events import BaseEvent
    from llama_index.core.schema import NodeWithScore

    from citemark import Source
    from citemark.reports import TextWriter

__all__ = ["CitationRecordingHandler"]

# CitationQueryEngine's label: "Source n:" on the first line of the node's text.
_SOURCE_LABEL: Final = re.compile(r"Source ([0-9]+):\n")


class _Query:
    """What one open top-level query has shown so far."""

    def __init__(self, question: str, token: contextvars.Token[str | None]) -> None:
        self.question = question
        self.token = token
        self.prompts: list[str] = []
        # The latest response a nested query ended with: the answer, should the
        # top-level query raise after it.
        self.answered: object = None


class _Row:
    """A row's sources and how their numbering was known, or why it was not."""

    def __init__(
        self,
        sources: Sequence[Source] = (),
        *,
        index_base: int | None = None,
        numbered_by: str | None = None,
        unassessed: str | None = None,
    ) -> None:
        self.sources = sources
        self.index_base = index_base
        self.numbered_by = numbered_by
        self.unassessed = unassessed


class CitationRecordingHandler(BaseEventHandler):
    r"""Append one ``citemark check`` row per top-level LlamaIndex query.

    Example:
        ```python
        import io

        from llama_index.core import VectorStoreIndex
        from llama_index.core.embeddings import MockEmbedding
        from llama_index.core.instrumentation import get_dispatcher
        from llama_index.core.query_engine import CitationQueryEngine
        from llama_index.core.schema import TextNode
        from llama_index.postprocessor.citemark.testing import ScriptedLLM
        from llama_index.query_engine.citemark import CitationRecordingHandler

        out = io.StringIO()
        handler = CitationRecordingHandler(out)
        get_dispatcher().add_event_handler(handler)
        index = VectorStoreIndex(
            [TextNode(text="Keep the notices.", id_="bsd")], embed_model=MockEmbedding(embed_dim=8)
        )
        engine = CitationQueryEngine.from_args(index, llm=ScriptedLLM(replies=["Keep them [1]."]))
        engine.query("What must be kept?")
        get_dispatcher().event_handlers.remove(handler)
        print(out.getvalue().count("\n"), handler.recorder.recorded)
        #> 1 1
        ```
    """

    recorder: RowRecorder
    """Where the rows go; its ``recorded`` and ``failures`` count them (a row that
    cannot be written, nested too deep to encode or in a deleted folder, is a failure
    warned about with a `citemark.reports.RecordingWarning`, never lost unnoticed)."""

    index_base: int = 1
    """The number of the first node for ``cite_as`` and ``prompt`` numbering (0 or 1)."""

    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _open: dict[str, _Query] = PrivateAttr(default_factory=dict)
    _current: contextvars.ContextVar[str | None] = PrivateAttr()

    def __init__(
        self,
        record_to: str | os.PathLike[str] | TextWriter | RowRecorder,
        *,
        index_base: int = 1,
    ) -> None:
        """Create a handler; attach it with ``get_dispatcher().add_event_handler``.

        Args:
            record_to: A JSONL path (created if missing, appended to), an object
                with ``write(str)``, or a `citemark.reports.RowRecorder` to share.
            index_base: The number the pipeline gives its first node, 0 or 1, for
                nodes numbered by ``cite_as`` or in the prompt (a
                ``CitationQueryEngine`` always numbers from 1).

        Raises:
            ValueError: ``index_base`` is not 0 or 1.
            OSError: the ``record_to`` file cannot be opened for appending
                (``errno.ENXIO`` at once for a FIFO no process reads, never a wait).
        """
        recorder = record_to if isinstance(record_to, RowRecorder) else RowRecorder(record_to)
        super().__init__(recorder=recorder, index_base=check_index_base(index_base))
        # One variable per handler: two handlers never see each other's queries.
        self._current = contextvars.ContextVar(f"citemark_query_{id(self)}", default=None)

    @classmethod
    def class_name(cls) -> str:
        """The serialization key, ``"CitationRecordingHandler"``."""
        return "CitationRecordingHandler"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        """Follow one event; a finished top-level query is written as one row."""
        # A handler must never raise into the query (LlamaIndex also swallows it).
        with contextlib.suppress(Exception):
            self._handle(event)

    # --- events --------------------------------------------------------------------

    def _handle(self, event: BaseEvent) -> None:
        if isinstance(event, QueryStartEvent):
            self._start(event)
        elif isinstance(event, LLMCompletionStartEvent):
            self._saw_prompt(event.prompt)
        elif isinstance(event, LLMChatStartEvent):
            self._saw_prompt("\n".join(message.content or "" for message in event.messages))
        elif isinstance(event, QueryEndEvent):
            query = self._finish(event.span_id)
            if query is not None:
                self._write(event.span_id or "", query, event.response)
            else:
                self._nested_answer(event.response)
        elif isinstance(event, SpanDropEvent):
            query = self._finish(event.span_id)
            if query is not None:
                # Dispatched from inside the dispatcher's except block: the error is
                # the one being handled. Only its class is kept, as data.
                self._write(event.span_id or "", query, None, raised=sys.exc_info()[1])

    def _start(self, event: QueryStartEvent) -> None:
        span_id = event.span_id
        if span_id is None:
            return
        with self._lock:
            enclosing = self._current.get()
            if enclosing is not None and enclosing in self._open:
                return  # a nested query: part of the top-level one around it
            token = self._current.set(span_id)
            self._open[span_id] = _Query(_question(event.query), token)

    def _saw_prompt(self, prompt: str) -> None:
        with self._lock:
            query = self._open.get(self._current.get() or "")
            if query is not None:
                query.prompts.append(prompt)

    def _nested_answer(self, response: object) -> None:
        """Keep a nested query's response on the open top-level query around it."""
        with self._lock:
            query = self._open.get(self._current.get() or "")
            if query is not None and response is not None:
                query.answered = response

    def _finish(self, span_id: str | None) -> _Query | None:
        with self._lock:
            query = self._open.pop(span_id, None) if span_id is not None else None
        if query is not None:
            try:
                self._current.reset(query.token)
            except ValueError:  # ended in another context than it started in
                self._current.set(None)
        return query

    # --- rows ----------------------------------------------------------------------

    def _write(
        self,
        span_id: str,
        query: _Query,
        response: object,
        *,
        raised: BaseException | None = None,
    ) -> None:
        extra: dict[str, str] = {}
        if response is None and query.answered is not None and _answer(query.answered):
            # The query raised after a nested query answered: record that answer.
            response = query.answered
            if raised is not None:
                key = "rejected" if isinstance(raised, SynthesisError) else "raised"
                extra[key] = type(raised).__name__
        try:
            answer, row = self._answer_and_row(query, response)
        except Exception:  # noqa: BLE001 - never raise into the query
            answer, row = "", _Row(unassessed="evaluation_error")
        if row.numbered_by is not None:
            extra["numbered_by"] = row.numbered_by
        self.recorder.record(
            id=span_id,
            question=query.question,
            answer=answer,
            sources=row.sources,
            index_base=row.index_base,
            unassessed=row.unassessed,
            extra=extra,
            id_scope="run",
        )

    def _answer_and_row(
        self, query: _Query, response: object
    ) -> tuple[str | Mapping[str, Any], _Row]:
        if response is None:
            return "", _Row(unassessed="chain_error")
        answer = _answer(response)
        if answer is None:
            return "", _Row(unassessed="no_answer")
        nodes: list[NodeWithScore] = list(getattr(response, "source_nodes", None) or [])
        return answer, self._sources(nodes, query.prompts)

    def _sources(self, nodes: list[NodeWithScore], prompts: list[str]) -> _Row:
        if not nodes:
            return _Row(index_base=self.index_base)
        if any(CITATION_KEY in item.node.metadata for item in nodes):
            try:
                sources = nodes_to_sources(nodes, index_base=self.index_base)
            except SynthesisError:
                return _Row(unassessed="numbering_unknown")
            return _Row(sources, index_base=self.index_base, numbered_by="cite_as")
        labelled = _without_source_labels(nodes)
        if labelled is not None:
            return _Row(labelled, index_base=1, numbered_by="source_label")
        if any(_SOURCE_LABEL.match(_text(item)) for item in nodes):
            return _Row(unassessed="numbering_unknown")  # labels, but not 1..N in order
        return self._by_prompt(nodes, prompts)

    def _by_prompt(self, nodes: list[NodeWithScore], prompts: list[str]) -> _Row:
        if len(prompts) != 1:
            return _Row(unassessed="numbering_unknown")
        numbers = recover_numbering(prompts[0], [_text(item) for item in nodes])
        expected = list(range(self.index_base, len(nodes) + self.index_base))
        if sorted(n for n in numbers if n is not None) != expected:
            return _Row(unassessed="numbering_unknown")
        ordered = [nodes[numbers.index(n)] for n in expected]
        # Positional reading of the nodes, now in the order the prompt numbered them.
        sources = nodes_to_sources(ordered, index_base=self.index_base)
        return _Row(sources, index_base=self.index_base, numbered_by="prompt")


def _question(query: object) -> str:
    if isinstance(query, QueryBundle):
        return query.query_str
    return query if isinstance(query, str) else ""


def _answer(response: object) -> str | Mapping[str, Any] | None:
    """The response's text, a structured response as a JSON object, or None."""
    if isinstance(response, Response):
        return response.response
    if isinstance(response, PydanticResponse) and isinstance(response.response, BaseModel):
        dumped: dict[str, Any] = response.response.model_dump(mode="json")
        return dumped
    return None  # a streaming response: its text exists only once it is consumed


def _text(item: NodeWithScore) -> str:
    return item.node.get_content(metadata_mode=MetadataMode.NONE)


def _without_source_labels(nodes: list[NodeWithScore]) -> list[Source] | None:
    """The sources of ``CitationQueryEngine`` nodes, labels removed; None if not all fit.

    Each node's text must start with ``Source n:`` where ``n`` is its place plus one,
    the numbering ``CitationQueryEngine`` gives the nodes it shows the model.
    """
    texts: list[str] = []
    for place, item in enumerate(nodes, start=1):
        text = _text(item)
        match = _SOURCE_LABEL.match(text)
        if match is None or int(match.group(1)) != place:
            return None
        body = text[match.end() :]
        texts.append(body.removesuffix("\n"))  # the engine adds one line break
    sources = nodes_to_sources(nodes)
    return [
        source.model_copy(update={"text": text, "start": None, "end": None})
        for source, text in zip(sources, texts, strict=True)
    ]
