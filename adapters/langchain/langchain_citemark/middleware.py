"""Citation checks for agents built with ``langchain.agents.create_agent``.

`CitationMiddleware` is one ``wrap_model_call`` hook. Before each model call it
collects the agent's sources, numbers them ``1..N`` (``0..N-1`` with
``index_base=0``) and shows the model that
numbered list; after the call it resolves the reply's ``[n]`` markers against the
same list. Sources come from the ``ToolMessage`` artifacts of retriever tools (a
tool built with ``create_retriever_tool(..., response_format="content_and_artifact")``),
numbered across the conversation in the order the tools returned them, or from a
state key the caller names, rendered into the system message.

An agent built with ``response_format=`` gets its structured response checked too:
its source ids are range-checked against the same numbered list and its quotes
re-read in the source they cite (`citemark.resolve_structured`), where LangChain
checks only the JSON types.

A violation either raises a citemark error out of the agent
(``on_violation="error"``: `citemark.MarkerOutOfRangeError`, or
`citemark.QuoteNotInSourceError` for a structured quote) or is recorded
(``"annotate"``): the report goes to the reply's ``response_metadata["citemark"]``
and to the state's ``citemark_reports``.
The middleware never calls the model again, never edits the reply's text and
declares no jump: it cannot send the agent back to the model.

Everything happens inside the model node, so the check adds no graph node. When the
agent streams (``stream_mode="messages"``), a guard handler is placed ahead of the
stream's own handler: the reply's tokens are resolved as they arrive, and the first
complete out-of-range marker raises before the token carrying it reaches the stream,
as `langchain_citemark.CitedAnswerChain` does.

This module needs the ``langchain`` package (``pip install langchain-citemark[agents]``).
"""

from __future__ import annotations

import dataclasses
import operator
from typing import TYPE_CHECKING, Annotated, Any, Literal, NotRequired

from langchain.agents.middleware import AgentMiddleware, ExtendedModelResponse, ModelResponse
from langchain.agents.middleware.types import OmitFromInput
from langchain.agents.structured_output import ToolStrategy
from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGenerationChunk, GenerationChunk
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.types import Command
from pydantic import BaseModel, ConfigDict
from typing_extensions import TypedDict

from citemark import (
    Citation,
    MarkerOutOfRangeError,
    Source,
    StreamingResolver,
    StructuredAnswerError,
    StructuredCitedAnswer,
    check_structured,
    indent_block,
    otel,
    parse_markers,
    render_sources,
    resolve,
    resolve_structured,
)
from citemark.syntax import check_index_base, source_header
from citemark.text import counted
from langchain_citemark.callbacks import CitationCallbackHandler
from langchain_citemark.documents import documents_to_sources

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping, Sequence

    from langchain.agents.middleware import ModelRequest
    from langchain_core.messages import AnyMessage

    from citemark import DocumentReader

__all__ = ["REPORTS_KEY", "AgentCitationReport", "CitationMiddleware"]

REPORTS_KEY = "citemark_reports"
"""The state key under which ``on_violation="annotate"`` appends one report per checked reply."""

METADATA_KEY = "citemark"
"""The ``response_metadata`` key of a checked reply that holds its report."""

Outcome = Literal["resolved", "out_of_range", "quote_not_in_source", "abstained"]


class AgentCitationReport(BaseModel):
    """What one model reply of an agent cited, as recorded by ``on_violation="annotate"``.

    State and message metadata hold it as a plain dict (``model_dump(mode="json")``),
    so any checkpointer can store it; `AgentCitationReport.model_validate` reads it back.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    outcome: Outcome
    """``resolved`` (every marker names a shown source), ``out_of_range`` (a marker
    names none), ``quote_not_in_source`` (a structured response's quote is not in the
    source it cites, and no id is out of range) or ``abstained`` (the reply cites
    nothing)."""

    source_count: int
    """How many numbered sources the model was shown for this reply."""

    out_of_range: tuple[int, ...] = ()
    """The markers outside ``1..source_count`` (``0..source_count-1`` with
    ``index_base=0``), distinct, in order of first mention."""

    wrong_quotes: tuple[int, ...] = ()
    """For a structured response: the 1-based positions, in its citations list, of
    the quotes that are not in the source they cite (or are blank)."""

    citations: tuple[Citation, ...] = ()
    """The resolved citations, when the outcome is ``resolved``."""

    structured: bool = False
    """Whether this reports the agent's structured response (``response_format=``)
    rather than a reply's text."""

    final: bool
    """Whether the reply ended the agent loop (it called no tool)."""

    message_id: str | None = None
    """The reply's message id, when the model gave one."""


class CitationMiddleware(AgentMiddleware):
    r"""Check the ``[n]`` citations of an agent's replies against the sources it was shown.

    Args:
        tool_names: The retriever tools whose results are sources. ``None`` (the
            default) takes every tool result whose artifact is a list of
            ``Document``; a named tool whose result carries no such artifact raises
            ``TypeError`` before the model is called, since its documents would be
            lost.

        sources_key: Take the sources from this state key instead (a list of
            ``Document`` or `citemark.Source`), shown to the model as a numbered list
            appended to the system message. Tool results are then not sources.

        on_violation: ``"error"`` raises `citemark.MarkerOutOfRangeError` (or, for
            a structured response's quote, `citemark.QuoteNotInSourceError`) out of
            the agent; ``"annotate"`` records an `AgentCitationReport` on the reply's
            ``response_metadata["citemark"]`` and appends it to the state's
            ``citemark_reports``, and the agent goes on.

        check: ``"each_turn"`` checks every reply that has text (what an
            ``after_model`` hook sees); ``"final_answer"`` checks only the reply that
            ends the loop, the one that calls no tool (what ``after_agent`` sees).

        reader: Optional `citemark.DocumentReader` to recover offsets a splitter left
            out, as in `langchain_citemark.documents_to_sources`.

        index_base: The number of the first source, 1 (the default) or 0: the model
            is shown ``[0]`` first and its replies are resolved from 0 alike.

        structured: What to do with a structured response (an agent built with
            ``response_format=``). ``"check"`` (the default) checks its citations
            against the numbered sources, in that numbering: ids range-checked,
            quotes re-read in the source they cite, ``[n]`` in its string fields
            resolved. A reply whose text is the structured object (a provider's
            native structured output) is checked as that object, never as text.
            ``"skip"`` leaves structured responses unchecked. A response format
            without a ``citations`` field cites only through the ``[n]`` markers in
            its string fields; one whose citations cannot be read (none at a
            ``citations_field`` given, or not ids or ``source_id`` objects) raises
            `citemark.StructuredAnswerError`, and one made with no sources at all
            raises `citemark.NoSourcesError`.

        text_field: JSON pointer of the structured answer's text (default
            ``/answer``, when it holds a string).

        citations_field: JSON pointer of its citations list (default ``/citations``).

    Raises:
        ValueError: an argument is not one of its allowed values (``index_base``
            anything but 0 or 1, a bool included).

    Example:
        ```python
        from langchain.agents import create_agent
        from langchain_core.documents import Document
        from langchain_core.language_models import GenericFakeChatModel

        from citemark import MarkerOutOfRangeError
        from langchain_citemark import CitationMiddleware

        docs = [Document("Patents end on filing.", metadata={"source": "apache"})]
        model = GenericFakeChatModel(messages=iter(["It ends on filing [1] or [4]."]))
        agent = create_agent(model, middleware=[CitationMiddleware(sources_key="documents")])
        try:
            agent.invoke({"messages": [("user", "When?")], "documents": docs})
        except MarkerOutOfRangeError as exc:
            print(exc)
        #> marker [4] is out of range: the answer was given 1 source, so markers must lie in 1..1
        ```
    """

    def __init__(  # noqa: PLR0913 - keyword-only options, each documented above
        self,
        *,
        tool_names: Sequence[str] | None = None,
        sources_key: str | None = None,
        on_violation: Literal["error", "annotate"] = "error",
        check: Literal["each_turn", "final_answer"] = "each_turn",
        reader: DocumentReader | None = None,
        index_base: int = 1,
        structured: Literal["check", "skip"] = "check",
        text_field: str | None = None,
        citations_field: str | None = None,
    ) -> None:
        super().__init__()
        self.index_base = check_index_base(index_base)
        if structured not in ("check", "skip"):
            msg = "structured must be 'check' or 'skip'"
            raise ValueError(msg)
        if on_violation not in ("error", "annotate"):
            msg = "on_violation must be 'error' or 'annotate'"
            raise ValueError(msg)
        if check not in ("each_turn", "final_answer"):
            msg = "check must be 'each_turn' or 'final_answer'"
            raise ValueError(msg)
        if sources_key is not None and (not isinstance(sources_key, str) or not sources_key):
            msg = "sources_key must be a non-empty string or None"
            raise ValueError(msg)
        self.tool_names = None if tool_names is None else frozenset(tool_names)
        self.sources_key = sources_key
        self.on_violation = on_violation
        self.check = check
        self.reader = reader
        self.structured = structured
        self.text_field = text_field
        self.citations_field = citations_field
        self.tools = []
        self.state_schema = _state_schema(sources_key)

    # --- the hook ---------------------------------------------------------------------

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        """Show the model numbered sources, call it once, and check its reply."""
        sources, shown = self._prepare(request)
        with _guarded(self._stream_guard(sources, shown), self.index_base):
            response = handler(shown)
        return self._checked(response, sources)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        """Show the model numbered sources, call it once, and check its reply."""
        sources, shown = self._prepare(request)
        with _guarded(self._stream_guard(sources, shown), self.index_base):
            response = await handler(shown)
        return self._checked(response, sources)

    # --- the work ---------------------------------------------------------------------

    def _prepare(self, request: ModelRequest[Any]) -> tuple[list[Source], ModelRequest[Any]]:
        """Collect the sources and the request as the model must see it: numbered."""
        if self.sources_key is not None:
            sources = self._state_sources(request.state)
            if not sources:
                return sources, request
            listing = "Sources:\n\n" + render_sources(sources, index_base=self.index_base)
            system = request.system_message
            text = listing if system is None else f"{system.text}\n\n{listing}"
            return sources, request.override(system_message=SystemMessage(text))
        sources = []
        messages: list[AnyMessage] = []
        changed = False
        for message in request.messages:
            documents = self._tool_documents(message)
            if documents is None:
                messages.append(message)
                continue
            first = len(sources) + self.index_base
            batch = documents_to_sources(documents, reader=self.reader)
            sources.extend(batch)
            content = _numbered(batch, first) if batch else "(no documents)"
            messages.append(message.model_copy(update={"content": content}))
            changed = True
        return sources, request.override(messages=messages) if changed else request

    def _tool_documents(self, message: object) -> list[Document] | None:
        if not isinstance(message, ToolMessage):
            return None
        artifact = message.artifact
        is_documents = isinstance(artifact, list) and all(
            isinstance(item, Document) for item in artifact
        )
        if self.tool_names is None:
            return artifact if is_documents and artifact else None
        if message.name not in self.tool_names:
            return None
        if not is_documents:
            msg = (
                f"tool {message.name!r} returned no list of Documents as its artifact; "
                "build it with create_retriever_tool(..., response_format="
                "'content_and_artifact') so its documents can be numbered"
            )
            raise TypeError(msg)
        return list(artifact)

    def _state_sources(self, state: object) -> list[Source]:
        key = self.sources_key
        value = state.get(key) if isinstance(state, dict) and key is not None else None
        if value is None:
            return []
        if not isinstance(value, list):
            msg = f"state key {key!r} must hold a list of Documents or Sources"
            raise TypeError(msg)
        if all(isinstance(item, Source) for item in value):
            return list(value)
        if all(isinstance(item, Document) for item in value):
            return documents_to_sources(value, reader=self.reader)
        msg = f"state key {key!r} must hold a list of Documents or Sources"
        raise TypeError(msg)

    def _stream_guard(
        self, sources: list[Source], request: ModelRequest[Any]
    ) -> list[Source] | None:
        """The sources a stream guard resolves this call against, or None.

        Under a structured response format other than a tool strategy the reply's
        text may be the structured object itself, whose ``[0, 2]`` is no marker: it
        is checked whole, as an object, when the call returns.
        """
        format_ = getattr(request, "response_format", None)
        if format_ is not None and not isinstance(format_, ToolStrategy):
            return None
        return self._guard(sources)

    def _guard(self, sources: list[Source]) -> list[Source] | None:
        """The sources a stream guard resolves against, or None when no guard is due."""
        if self.on_violation != "error" or self.check != "each_turn" or not sources:
            return None
        return sources

    def _checked(
        self, response: ModelResponse[Any], sources: list[Source]
    ) -> ModelResponse[Any] | ExtendedModelResponse[Any]:
        """Check each AI reply of the response; raise, or return it annotated."""
        reports: list[dict[str, Any]] = []
        result: list[Any] = []
        structured = response.structured_response
        for message in response.result:
            if not isinstance(message, AIMessage) or not self._due(message):
                result.append(message)
                continue
            if structured is not None and not message.tool_calls:
                # A provider's native structured output: the text is the object.
                result.append(message)
                continue
            if self.on_violation == "error" and not otel.is_enabled():
                # The hot path: nothing to record, so resolving (or raising) is all.
                _raise_if_out_of_range(message.text, sources, self.index_base)
                result.append(message)
                continue
            report = _report(message, sources, self.index_base)
            otel.emit_check(
                passed=report.outcome != "out_of_range",
                explanation=_facts(report, self.index_base),
                response_id=message.id,
            )
            if report.outcome == "out_of_range" and self.on_violation == "error":
                raise MarkerOutOfRangeError(
                    report.out_of_range[0], report.source_count, self.index_base
                )
            if self.on_violation == "annotate":
                dumped = report.model_dump(mode="json")
                reports.append(dumped)
                metadata = {**message.response_metadata, METADATA_KEY: dumped}
                message = message.model_copy(update={"response_metadata": metadata})  # noqa: PLW2901
            result.append(message)
        if structured is not None and self.structured == "check":
            recorded = self._check_structured(structured, sources, result)
            if recorded is not None:
                reports.append(recorded)
        if not reports:
            return response
        checked = ModelResponse(result=result, structured_response=structured)
        return ExtendedModelResponse(
            model_response=checked, command=Command(update={REPORTS_KEY: reports})
        )

    def _check_structured(
        self, structured: object, sources: list[Source], result: list[Any]
    ) -> dict[str, Any] | None:
        """Check the structured response; raise, or annotate the reply that made it.

        ``result`` is the response's messages; in ``"annotate"`` mode the last AI
        reply among them (the one that produced the object) gets the report in its
        metadata, in place. Returns the report to record, if any.
        """
        value = _structured_value(structured)
        options: dict[str, Any] = {
            "index_base": self.index_base,
            "text_field": self.text_field,
            "citations_field": self.citations_field,
            # A response format without citations cites only by its fields' markers.
            "require_citations": self.citations_field is not None,
        }
        if self.on_violation == "error" and not otel.is_enabled():
            resolve_structured(value, sources, **options)
            return None
        at = next(
            (i for i in reversed(range(len(result))) if isinstance(result[i], AIMessage)), None
        )
        message_id = None if at is None else result[at].id
        report = _structured_report(check_structured(value, sources, **options), len(sources))
        report = report.model_copy(update={"message_id": message_id})
        otel.emit_check(
            passed=report.outcome in ("resolved", "abstained"),
            explanation=_facts(report, self.index_base),
            response_id=message_id,
        )
        if self.on_violation == "error":
            resolve_structured(value, sources, **options)  # raises the first violation
            return None
        dumped = report.model_dump(mode="json")
        if at is not None:
            message = result[at]
            metadata = {**message.response_metadata, METADATA_KEY: dumped}
            result[at] = message.model_copy(update={"response_metadata": metadata})
        return dumped

    def _due(self, message: AIMessage) -> bool:
        if not message.text.strip():
            return False
        return self.check == "each_turn" or not message.tool_calls


class _StreamGuard(BaseCallbackHandler):
    """Resolve a streaming reply token by token; raise at the first bad marker."""

    raise_error = True
    run_inline = True

    def __init__(self, sources: list[Source], index_base: int) -> None:
        super().__init__()
        self._resolver = StreamingResolver(sources, index_base=index_base)

    def on_llm_new_token(
        self,
        token: str | list[str | dict[str, Any]],
        *,
        chunk: GenerationChunk | ChatGenerationChunk | None = None,
        **kwargs: Any,
    ) -> None:
        """Feed the token's text; `MarkerOutOfRangeError` stops the stream here."""
        text = chunk.message.text if isinstance(chunk, ChatGenerationChunk) else token
        if isinstance(text, str) and text:
            self._resolver.feed(text)


class _guarded:  # noqa: N801 - used as a context manager, like contextlib's
    """Put a guard ahead of every handler of the model call made inside the block.

    The model node runs with the graph's callbacks in LangChain's child-config
    context variable; the model call inside ``handler`` reads them from there. The
    guard goes first, and not inherited, so it sees each token of this call before
    the stream's own handler forwards it, and no other run. Only citemark's own
    `CitationCallbackHandler` instances go before it: they forward nothing; a recording
    one then holds the token that completed the bad marker, so the row it writes for
    the stopped reply shows the violation.
    """

    def __init__(self, sources: list[Source] | None, index_base: int) -> None:
        self._sources = sources
        self._index_base = index_base
        self._token: Any = None

    def __enter__(self) -> None:
        config = var_child_runnable_config.get()
        if self._sources is None or config is None:
            return
        callbacks = config.get("callbacks")
        if isinstance(callbacks, BaseCallbackManager) and callbacks.handlers:
            manager = callbacks.copy()
            guard = _StreamGuard(self._sources, self._index_base)
            manager.handlers = _guard_first(guard, manager.handlers)
            patched: Any = manager
        elif isinstance(callbacks, list) and callbacks:
            patched = _guard_first(_StreamGuard(self._sources, self._index_base), callbacks)
        else:
            # No handler at all: nothing can stream the reply (a chat model streams
            # only for a streaming handler or an explicit flag, and the stream's
            # consumer is a handler), so the reply is checked whole when it returns.
            return
        self._token = var_child_runnable_config.set({**config, "callbacks": patched})

    def __exit__(self, *exc_info: object) -> None:
        if self._token is not None:
            var_child_runnable_config.reset(self._token)


def _guard_first(guard: _StreamGuard, handlers: Sequence[Any]) -> list[Any]:
    """The guard ahead of every handler but citemark's own recording ones."""
    ours = [h for h in handlers if isinstance(h, CitationCallbackHandler)]
    return [*ours, guard, *(h for h in handlers if not isinstance(h, CitationCallbackHandler))]


def _raise_if_out_of_range(text: str, sources: list[Source], base: int) -> None:
    """Raise `MarkerOutOfRangeError` for the reply's first marker outside ``base..N-1+base``."""
    if sources:
        resolve(text, sources, index_base=base)
        return
    markers = parse_markers(text)
    if markers:
        raise MarkerOutOfRangeError(markers[0].number, 0, base)


def _report(message: AIMessage, sources: list[Source], base: int) -> AgentCitationReport:
    text = message.text
    count = len(sources)
    final = not message.tool_calls
    bad = tuple(
        dict.fromkeys(o.number for o in parse_markers(text) if not base <= o.number < count + base)
    )
    if bad:
        return AgentCitationReport(
            outcome="out_of_range",
            source_count=count,
            out_of_range=bad,
            final=final,
            message_id=message.id,
        )
    citations = resolve(text, sources, index_base=base).citations if count else ()
    return AgentCitationReport(
        outcome="resolved" if citations else "abstained",
        source_count=count,
        citations=citations,
        final=final,
        message_id=message.id,
    )


def _structured_value(structured: object) -> BaseModel | Mapping[str, Any]:
    """The structured response as a pydantic object or a mapping (a dataclass as a dict)."""
    if isinstance(structured, BaseModel | dict):
        return structured
    if dataclasses.is_dataclass(structured) and not isinstance(structured, type):
        return dataclasses.asdict(structured)
    msg = "the structured response must be a pydantic object, a dataclass or a dict"
    raise StructuredAnswerError(msg)


def _structured_report(checked: StructuredCitedAnswer, count: int) -> AgentCitationReport:
    findings = checked.findings
    bad = tuple(dict.fromkeys(findings.out_of_range))
    wrong = tuple(
        position
        for position, citation in enumerate(findings.citations, start=1)
        if citation in findings.wrong_quotes
    )
    if bad:
        outcome: Outcome = "out_of_range"
    elif wrong:
        outcome = "quote_not_in_source"
    else:
        outcome = "resolved" if checked.citations else "abstained"
    return AgentCitationReport(
        outcome=outcome,
        source_count=count,
        out_of_range=bad,
        wrong_quotes=wrong,
        citations=checked.citations if outcome == "resolved" else (),
        final=True,
        structured=True,
    )


def _facts(report: AgentCitationReport, base: int) -> str:
    if report.outcome == "quote_not_in_source":
        return (
            f"{counted(len(report.wrong_quotes), 'quote')} not in the cited source; "
            f"first citation {report.wrong_quotes[0]}"
        )
    if report.outcome == "out_of_range":
        last = report.source_count - 1 + base
        return (
            f"{counted(len(report.out_of_range), 'marker')} outside {base}..{last}; "
            f"first [{report.out_of_range[0]}]"
        )
    return f"{counted(len(report.citations), 'source')} cited of {report.source_count}"


def _numbered(sources: Sequence[Source], first: int) -> str:
    """Render sources as `citemark.render_sources` does, numbered from ``first``.

    ``first`` continues the numbering across tool results (the index base, plus the
    sources earlier results brought), which `render_sources` cannot start from.
    """
    return "\n\n".join(
        f"{source_header(number)} {indent_block(source.text)}"
        for number, source in enumerate(sources, start=first)
    )


def _state_schema(sources_key: str | None) -> type:
    # LangGraph reads the reducer from the last Annotated item, LangChain the Omit flag
    # from any item.
    fields: dict[str, Any] = {
        REPORTS_KEY: NotRequired[Annotated[list[dict[str, Any]], OmitFromInput, operator.add]]
    }
    if sources_key is not None:
        fields[sources_key] = NotRequired[list[Any]]
    # The functional form, since the sources key is the caller's; LangChain merges
    # the fields of every middleware's schema into the agent's state.
    make: Any = TypedDict
    schema: type = make("CitationMiddlewareState", fields)
    return schema
