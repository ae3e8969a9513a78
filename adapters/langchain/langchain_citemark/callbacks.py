"""A callback handler that checks the citations of a chain nobody rewrites.

Attach `CitationCallbackHandler` through ``config={"callbacks": [handler]}``. It
correlates events by run id, collects the documents the chain retrieved (from
retriever runs, or else from lists of ``Document`` passed between steps), the prompt
the model saw (to recover the numbering the chain's own code produced) and the final
answer, and records one `CitationReport` per top-level run. It never raises into the
chain: a problem becomes an ``unassessed`` report with a reason code.

With ``record_to`` (a JSONL path, any object with ``write(str)``, or a
`citemark.reports.RowRecorder`), the handler also appends one native ``citemark
check`` row per top-level run: its id, question and answer, and its documents as
sources in the order the prompt numbered them, so the file can be checked later with
``citemark check FILE`` and no change to the chain. A run whose numbering cannot be
recovered is written with no sources and ``unassessed: numbering_unknown`` instead of
a guessed order; a run with no answer, with ``no_answer``, or ``chain_error`` when it
raised before any model answered. The row's ``"id_scope": "run"`` says that its id
names this run only.

**What the model said is recorded, whatever happened next.** A run that raises after
its model answered (citemark's own `CitationOutputParser` or `CitedAnswerChain`
rejecting a ``[5]`` of three documents, a `CitationMiddleware` raising out of an
agent, a `StructuredCitationChecker` rejecting an id, or any later step failing) is
recorded like a run that returned: its answer (the last completed model call's reply,
or a later step's dict output holding ``answer_key``, such as the structured
object), and its documents in the order the prompt numbered them, so that ``citemark
check`` finds the same violation the next day. The row also says, as data, that the
run raised after answering: ``"rejected": "<citemark error class>"`` for one of
citemark's rejections, ``"raised": "<exception class>"`` for any other exception.
A stream citemark stopped at the token completing an out-of-range marker is recorded
as far as it went (``"answer_cut": true``), and only when that text shows the marker:
the handler keeps each streaming reply's tokens for this, and reads a streamed run's
input from its end event, where LangChain gives it. The run's `CitationReport` is
made from the same answer and documents, so ``handler.reports`` and the file agree on
every run.

A parser that is not bound to documents (the RAG tutorial's ``... | prompt | llm |
CitationOutputParser()``) asks the handler in its run's callbacks for the documents
of its run: `CitationCallbackHandler.shown_documents`.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk
from pydantic import BaseModel, ConfigDict

from citemark import (
    Citation,
    CitedAnswer,
    MarkerOutOfRangeError,
    NoSourcesError,
    StructuredAnswerError,
    SynthesisError,
    check_structured,
    recover_numbering,
    resolve,
)
from citemark.syntax import check_index_base
from langchain_citemark.documents import documents_to_sources

if TYPE_CHECKING:
    import os
    from collections.abc import Mapping, Sequence
    from uuid import UUID

    from langchain_core.outputs import GenerationChunk, LLMResult

    from citemark import Source
    from citemark.reports import RowRecorder, TextWriter

__all__ = ["CitationCallbackHandler", "CitationReport"]

Outcome = Literal["resolved", "out_of_range", "quote_not_in_source", "abstained", "unassessed"]

# A structured answer recorded from ``include_raw=True``: the parsed object and whether
# it parsed.
_RAW_KEYS = frozenset({"parsed", "parsing_error"})


class CitationReport(BaseModel):
    """What one top-level run's answer cited."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    run_id: str
    """The top-level run's id."""

    outcome: Outcome
    """``resolved`` (cites only what was shown), ``out_of_range`` (cites a number
    that names no shown document), ``quote_not_in_source`` (a structured answer's
    quote is not in the document it cites, and no id is out of range), ``abstained``
    (no markers) or ``unassessed``."""

    reason: str | None = None
    """Why the run is unassessed, a code from `citemark.evaluation.REASONS` (the
    LlamaIndex evaluator uses the same): ``no_answer`` (no answer text, or a blank
    one), ``empty_context`` (no documents), ``numbering_unknown``, ``chain_error``
    (the run raised before any model answered), ``structured_output_not_parsed`` or
    ``evaluation_error`` (the handler itself failed, or a structured answer's
    citations cannot be read)."""

    rejected: str | None = None
    """The class name of the exception the run raised after its model answered
    (citemark's rejection of the answer, say ``MarkerOutOfRangeError``), or None when
    it returned. The outcome is still the answer's own."""

    @property
    def explanation(self) -> str | None:
        """The reason's sentence, or None when the run was assessed."""
        from citemark.evaluation import explain  # noqa: PLC0415 - loads the scorer: on use

        return None if self.reason is None else explain(self.reason)

    citations: tuple[Citation, ...] = ()
    """The resolved citations, when the outcome is ``resolved``."""

    marker: int | None = None
    """The offending marker, when the outcome is ``out_of_range``."""

    document_count: int = 0
    """How many documents the run retrieved."""


class _Run:
    def __init__(self) -> None:
        self.retrieved: list[Document] = []  # from retriever runs: preferred
        self.passed: list[Document] = []  # lists of Documents seen flowing between steps
        self.prompt: str | None = None
        self.question = ""  # the top-level input's question, for a recorded row
        # The latest answer the run produced: a model call's reply, or a step's dict
        # output holding the answer key. Recorded when the run raises after it.
        self.answered: Any = None
        # Whether the latest reply is a stream that has not ended (yet): its tokens.
        self.cut = False
        self.streamed: list[str] = []
        self.streaming: UUID | None = None  # the model call whose tokens those are

    def latest_answer(self) -> Any:
        """The latest answer: a finished reply or step output, or what a stream said."""
        return "".join(self.streamed) if self.cut else self.answered

    @property
    def documents(self) -> list[Document]:
        return self.retrieved or self.passed

    def saw(self, documents: list[Document]) -> None:
        for document in documents:
            if document not in self.passed:
                self.passed.append(document)


class CitationCallbackHandler(BaseCallbackHandler):
    r"""Record a citation report for each top-level run of an unmodified chain.

    Example:
        ```python
        from langchain_core.documents import Document
        from langchain_core.language_models import FakeListChatModel
        from langchain_core.output_parsers import StrOutputParser
        from langchain_core.prompts import ChatPromptTemplate
        from langchain_core.runnables import RunnablePassthrough
        from langchain_citemark import CitationCallbackHandler, format_documents

        prompt = ChatPromptTemplate.from_template("{context}\n\nQ: {question}")
        llm = FakeListChatModel(responses=["Keep them [3]."])
        chain = (
            RunnablePassthrough.assign(context=lambda x: format_documents(x["documents"]))
            | prompt
            | llm
            | StrOutputParser()
        )
        handler = CitationCallbackHandler()
        docs = [Document("Keep notices.", metadata={"source": "bsd"})]
        question = {"question": "What to keep?", "documents": docs}
        chain.invoke(question, config={"callbacks": [handler]})
        print(handler.reports[0].outcome, handler.reports[0].marker)
        #> out_of_range 3
        ```
    """

    raise_error: bool = False
    run_inline: bool = True

    def __init__(
        self,
        *,
        answer_key: str = "answer",
        index_base: int = 1,
        record_to: str | os.PathLike[str] | TextWriter | RowRecorder | None = None,
        question_key: str = "question",
    ) -> None:
        """Create a handler.

        Args:
            answer_key: Where the answer is in dict outputs.
            index_base: The number the chain's prompt gives its first document: 1 (the
                default), or 0 for a chain that numbers from 0 (``format_documents(docs,
                index_base=0)``). The prompt's numbering must then read ``0..N-1`` and
                the answer is resolved from 0; a prompt numbered from the other base
                leaves the run ``unassessed`` with ``numbering_unknown``.
            record_to: Where to append one ``citemark check`` row per top-level run:
                a JSONL path (created if missing, appended to), an object with
                ``write(str)``, or a `citemark.reports.RowRecorder` to share between
                handlers; None (the default) records nothing.
            question_key: Where the question is in a dict input (a string input is
                the question itself), for the recorded rows.

        Raises:
            ValueError: ``index_base`` is not 0 or 1 (a bool is refused too).
            OSError: the ``record_to`` file cannot be opened for appending
                (``errno.ENXIO`` at once for a FIFO no process reads, never a wait).
        """
        # The recorder's module loads the check's writers: on first use, not on import.
        from citemark.reports import RowRecorder  # noqa: PLC0415

        super().__init__()
        self.index_base = check_index_base(index_base)
        self.answer_key = answer_key
        self.question_key = question_key
        self.reports: list[CitationReport] = []
        """One report per finished top-level run, in finishing order."""
        self.recorder: RowRecorder | None = (
            None
            if record_to is None
            else record_to
            if isinstance(record_to, RowRecorder)
            else RowRecorder(record_to)
        )
        """The recorder of ``citemark check`` rows, or None; its ``recorded`` and
        ``failures`` count the rows written and the rows it could not write (a row
        nested too deep to encode, a file whose folder was deleted: each warned about
        with a `citemark.reports.RecordingWarning`, never raised into the chain)."""
        self._lock = threading.Lock()
        self._root_of: dict[UUID, UUID] = {}  # every live run -> its top-level run
        self._members: dict[UUID, list[UUID]] = {}  # top-level run -> its live runs
        self._runs: dict[UUID, _Run] = {}

    # --- events --------------------------------------------------------------------

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Remember the run tree; a top-level run may bring its documents as input."""
        with self._lock:
            self._link(run_id, parent_run_id)
            if parent_run_id is None:
                self._runs[run_id] = _Run()
                self._runs[run_id].question = self._question(inputs)
            run = self._root_run(run_id)
            if run is not None and isinstance(inputs, dict):
                run.saw(_documents_in(inputs.values()))

    def on_retriever_start(
        self,
        serialized: dict[str, Any] | None,
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Remember the run tree."""
        with self._lock:
            self._link(run_id, parent_run_id)

    def on_retriever_end(
        self, documents: Sequence[Document], *, run_id: UUID, **kwargs: Any
    ) -> None:
        """Collect the retrieved documents for the top-level run."""
        with self._lock:
            run = self._root_run(run_id)
            if run is not None:
                run.retrieved.extend(d for d in documents if isinstance(d, Document))

    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Keep the prompt the chat model saw."""
        with self._lock:
            self._link(run_id, parent_run_id)
            run = self._root_run(run_id)
            if run is not None and messages:
                run.prompt = "\n".join(m.text for m in messages[0])

    def on_llm_start(
        self,
        serialized: dict[str, Any] | None,
        prompts: list[str],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Keep the prompt a text LLM saw."""
        with self._lock:
            self._link(run_id, parent_run_id)
            run = self._root_run(run_id)
            if run is not None and prompts:
                run.prompt = prompts[0]

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """Keep the model's reply: the answer, should a later step raise."""
        generations = response.generations[0] if response.generations else []
        if not generations:
            return
        first = generations[0]
        reply: Any = first.message if isinstance(first, ChatGeneration) else first.text
        with self._lock:
            run = self._root_run(run_id)
            if run is not None:
                run.answered, run.cut, run.streamed = reply, False, []

    def on_llm_new_token(
        self,
        token: str | list[str | dict[str, Any]],
        *,
        chunk: GenerationChunk | ChatGenerationChunk | None = None,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """Keep what a streaming reply said so far, should a check stop the stream."""
        text = chunk.message.text if isinstance(chunk, ChatGenerationChunk) else token
        with self._lock:
            run = self._root_run(run_id)
            if run is None or not isinstance(text, str):
                return
            if run.cut and run.streaming != run_id:
                run.streamed = []
            run.cut, run.streaming = True, run_id
            run.streamed.append(text)

    def on_chain_end(
        self, outputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        """Collect documents a step produced; check the answer when the run ends."""
        if parent_run_id is not None:
            with self._lock:
                run = self._root_run(run_id)
                if run is not None:
                    values = outputs.values() if isinstance(outputs, dict) else [outputs]
                    run.saw(_documents_in(values))
                    if isinstance(outputs, dict) and outputs.get(self.answer_key) is not None:
                        # A structured answer, or an assigned one.
                        run.answered, run.cut, run.streamed = outputs, False, []
            return
        with self._lock:
            run = self._runs.pop(run_id, None)
            self._forget(run_id)
        if run is not None:
            self._late_inputs(run, kwargs.get("inputs"))
            self._record(run_id, run, outputs)

    def on_chain_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """A run that raised after its model answered is recorded with that answer.

        One that raised before any answer is recorded as unassessed, ``chain_error``.
        """
        if parent_run_id is not None:
            return
        with self._lock:
            run = self._runs.pop(run_id, None)
            self._forget(run_id)
        if run is not None:
            self._late_inputs(run, kwargs.get("inputs"))
        if run is not None and self._answered(run_id, run, error):
            self._record(run_id, run, run.latest_answer(), raised=error)
        elif run is not None:
            self._append(
                CitationReport(
                    run_id=str(run_id),
                    outcome="unassessed",
                    reason="chain_error",
                    document_count=len(run.documents),
                )
            )
            self._write_row(run_id, run, None, "chain_error")

    # --- checking ------------------------------------------------------------------

    def _record(
        self, run_id: UUID, run: _Run, outputs: Any, *, raised: BaseException | None = None
    ) -> None:
        try:
            report = self._check(run_id, run, outputs)
        except Exception:  # noqa: BLE001 - a handler must never raise into the chain
            report = CitationReport(
                run_id=str(run_id),
                outcome="unassessed",
                reason="evaluation_error",
                document_count=len(run.documents),
            )
        if raised is not None:
            report = report.model_copy(update={"rejected": type(raised).__name__})
        self._append(report)
        self._write_row(run_id, run, outputs, None, raised=raised)

    def _answered(self, run_id: UUID, run: _Run, error: BaseException) -> bool:
        """Whether a run that raised has an answer to record.

        A reply cut short is one only when it is the part a citemark stream check
        stopped, and it holds the out-of-range marker that stopped it: a row that
        would not show the violation the run was rejected for is not written as an
        answer (a stream guard that raised before its token reached this handler,
        or a stream that broke for another reason).
        """
        answer = run.latest_answer()
        if not self._has_answer(answer):
            return False
        if not run.cut:
            return True
        if not isinstance(error, MarkerOutOfRangeError):
            return False
        try:
            report = self._check(run_id, run, answer)
        except Exception:  # noqa: BLE001 - a handler must never raise into the chain
            return False
        return report.outcome == "out_of_range" and report.marker == error.marker

    def _late_inputs(self, run: _Run, inputs: Any) -> None:
        """Read a streamed run's input, which LangChain gives only when the run ends.

        A run started by ``stream`` starts with a placeholder input; its question and
        the documents it was given come with its end (or error) event.
        """
        if inputs is None:
            return
        if not run.question:
            run.question = self._question(inputs)
        if isinstance(inputs, dict):
            run.saw(_documents_in(inputs.values()))

    def _has_answer(self, answered: Any) -> bool:
        """Whether a run's latest answer is one: a reply with text, or a structured object."""
        if answered is None:
            return False
        try:
            recorded = self._recorded_answer(answered)
        except Exception:  # noqa: BLE001 - a handler must never raise into the chain
            return False
        return recorded is not None and not (isinstance(recorded, str) and not recorded.strip())

    def _check(self, run_id: UUID, run: _Run, outputs: Any) -> CitationReport:
        def unassessed(reason: str) -> CitationReport:
            return CitationReport(
                run_id=str(run_id),
                outcome="unassessed",
                reason=reason,
                document_count=len(run.documents),
            )

        structured = self._recorded_answer(outputs)
        answer = None if isinstance(structured, dict) else self._answer_text(outputs)
        if structured is None or (answer is None and not isinstance(structured, dict)):
            return unassessed("no_answer")
        if not run.documents:
            return unassessed("empty_context")
        texts = [d.page_content for d in run.documents]
        numbering = self._numbering(run)
        if numbering is None:
            return unassessed("numbering_unknown")
        ordered = [run.documents[numbering.index(n)] for n in sorted(numbering)]
        if isinstance(structured, dict):
            return self._check_structured(run_id, structured, documents_to_sources(ordered))
        if answer is None:
            return unassessed("no_answer")
        try:
            resolved = resolve(answer, documents_to_sources(ordered), index_base=self.index_base)
        except MarkerOutOfRangeError as exc:
            return CitationReport(
                run_id=str(run_id),
                outcome="out_of_range",
                marker=exc.marker,
                document_count=len(texts),
            )
        except NoSourcesError:
            return unassessed("empty_context")
        except SynthesisError:
            return unassessed("no_answer")
        return CitationReport(
            run_id=str(run_id),
            outcome="resolved" if resolved.citations else "abstained",
            citations=resolved.citations,
            document_count=len(texts),
        )

    def _check_structured(
        self, run_id: UUID, answer: Mapping[str, Any], sources: list[Source]
    ) -> CitationReport:
        """A structured answer's report, read as ``citemark check`` reads its row."""
        count = len(sources)
        if answer.keys() >= _RAW_KEYS:
            parsed = answer["parsed"]
            if answer["parsing_error"] is not None or not isinstance(parsed, dict):
                return CitationReport(
                    run_id=str(run_id),
                    outcome="unassessed",
                    reason="structured_output_not_parsed",
                    document_count=count,
                )
            answer = parsed
        try:
            checked = check_structured(answer, sources, index_base=self.index_base)
        except StructuredAnswerError:
            return CitationReport(
                run_id=str(run_id),
                outcome="unassessed",
                reason="evaluation_error",
                document_count=count,
            )
        findings = checked.findings
        if findings.out_of_range:
            return CitationReport(
                run_id=str(run_id),
                outcome="out_of_range",
                marker=findings.out_of_range[0],
                document_count=count,
            )
        if findings.wrong_quotes:
            return CitationReport(
                run_id=str(run_id), outcome="quote_not_in_source", document_count=count
            )
        return CitationReport(
            run_id=str(run_id),
            outcome="resolved" if checked.citations else "abstained",
            citations=checked.citations,
            document_count=count,
        )

    def shown_documents(
        self, run_id: UUID, *, index_base: int = 1
    ) -> tuple[int, list[Document] | None]:
        """The documents the run of ``run_id`` showed its model, in the prompt's order.

        ``run_id`` is any run inside a top-level run this handler follows (a parser's
        own run, say). Returns how many documents the top-level run has seen so far
        (retrieved, or passed between its steps), and those documents in the order the
        latest prompt numbered them from ``index_base`` (``[n]`` names the ``n``-th,
        counted from the base), or None when the prompt does not number each of them
        once (or there is none yet).
        """
        with self._lock:
            run = self._root_run(run_id)
            if run is None or not run.documents:
                return 0, None
            documents = list(run.documents)
            prompt = run.prompt
        texts = [d.page_content for d in documents]
        numbers = recover_numbering(prompt, texts) if prompt else []
        expected = list(range(index_base, len(texts) + index_base))
        if sorted(n for n in numbers if n is not None) != expected:
            return len(documents), None
        return len(documents), [documents[numbers.index(n)] for n in expected]

    def _numbering(self, run: _Run) -> list[int] | None:
        """The number the prompt showed each document under, in retrieval order.

        None unless the prompt numbers the documents ``index_base..`` once each.
        """
        texts = [d.page_content for d in run.documents]
        numbers = recover_numbering(run.prompt, texts) if run.prompt else []
        expected = list(range(self.index_base, len(texts) + self.index_base))
        if sorted(n for n in numbers if n is not None) != expected:
            return None
        return [n for n in numbers if n is not None]

    # --- recording -----------------------------------------------------------------

    def _write_row(
        self,
        run_id: UUID,
        run: _Run,
        outputs: Any,
        failed: str | None,
        *,
        raised: BaseException | None = None,
    ) -> None:
        """Append the run's ``citemark check`` row, when recording; never raise."""
        if self.recorder is None:
            return
        try:
            fields = self._row_fields(run, outputs, failed)
        except Exception:  # noqa: BLE001 - a handler must never raise into the chain
            fields = {"answer": "", "sources": [], "unassessed": "evaluation_error", "extra": {}}
        if raised is not None:
            # Data, not a message: the class of what the run raised after answering.
            key = "rejected" if isinstance(raised, SynthesisError) else "raised"
            fields["extra"] = {**fields["extra"], key: type(raised).__name__}
            if run.cut:
                fields["extra"]["answer_cut"] = True  # the stream was stopped here
        self.recorder.record(id=str(run_id), question=run.question, id_scope="run", **fields)

    def _row_fields(self, run: _Run, outputs: Any, failed: str | None) -> dict[str, Any]:
        """The answer, sources and numbering of a row (or why it has no sources)."""
        answer = None if failed is not None else self._recorded_answer(outputs)
        reason = failed
        if reason is None and answer is None:
            reason = "no_answer"
        sources: list[Source] = []
        extra: dict[str, Any] = {}
        if reason is None and run.documents:
            numbering = self._numbering(run)
            if numbering is None:
                reason = "numbering_unknown"
            else:
                ordered = [run.documents[numbering.index(n)] for n in sorted(numbering)]
                sources = documents_to_sources(ordered)
                extra["prompt_numbering"] = numbering
        return {
            "answer": "" if answer is None else answer,
            "sources": sources,
            "index_base": self.index_base,
            "unassessed": reason,
            "extra": extra,
        }

    def _recorded_answer(self, outputs: Any) -> str | Mapping[str, Any] | None:
        """The answer's text, or a structured answer as a JSON object, or None.

        A pydantic object or a dict (``with_structured_output``) is the structured
        answer; a message and citemark's own `CitedAnswer` are read as their text.
        """
        value = outputs.get(self.answer_key) if isinstance(outputs, dict) else outputs
        if isinstance(value, dict) and {"parsed", "parsing_error"} <= value.keys():
            # include_raw=True: the parsed object, or the fact that nothing parsed (the
            # error and the raw message are not data a check can read).
            error, parsed = value["parsing_error"], value["parsed"]
            if error is None and parsed is not None:
                return {"parsed": self._structured(parsed), "parsing_error": None}
            return {"parsed": None, "parsing_error": type(error).__name__}
        structured = self._structured(value)
        return structured if structured is not None else self._answer_text(outputs)

    @staticmethod
    def _structured(value: Any) -> Mapping[str, Any] | None:
        """A structured answer as a JSON object, or None when ``value`` is not one."""
        if isinstance(value, BaseModel) and not isinstance(value, BaseMessage | CitedAnswer):
            dumped: dict[str, Any] = value.model_dump(mode="json")
            return dumped
        if isinstance(value, dict) and all(isinstance(key, str) for key in value):
            return value
        return None

    def _question(self, inputs: Any) -> str:
        value = inputs.get(self.question_key) if isinstance(inputs, dict) else inputs
        if value is None and isinstance(inputs, dict):
            value = _last_user_text(inputs.get("messages"))  # an agent's input
        return value if isinstance(value, str) else ""

    def _answer_text(self, outputs: Any) -> str | None:
        if isinstance(outputs, dict):
            outputs = outputs.get(self.answer_key)
        if isinstance(outputs, BaseMessage):
            return outputs.text
        if isinstance(outputs, str):
            return str(outputs)
        text = getattr(outputs, "text", None)  # a CitedAnswer from citemark's own chain
        return text if isinstance(text, str) else None

    def _link(self, run_id: UUID, parent_run_id: UUID | None) -> None:
        root = run_id if parent_run_id is None else self._root_of.get(parent_run_id)
        if root is None:
            return  # a child of a run this handler never saw start
        self._root_of[run_id] = root
        self._members.setdefault(root, []).append(run_id)

    def _root_run(self, run_id: UUID) -> _Run | None:
        root = self._root_of.get(run_id)
        return self._runs.get(root) if root is not None else None

    def _forget(self, root: UUID) -> None:
        for member in self._members.pop(root, ()):
            self._root_of.pop(member, None)

    def _append(self, report: CitationReport) -> None:
        with self._lock:
            self.reports.append(report)


def _last_user_text(messages: object) -> str | None:
    """The text of the last user message of an agent's ``messages`` input, if any."""
    if not isinstance(messages, list):
        return None
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message.text
        if (
            isinstance(message, tuple)
            and len(message) == 2  # noqa: PLR2004 - a (role, text) pair
            and message[0] in ("user", "human")
            and isinstance(message[1], str)
        ):
            return message[1]
    return None


def _documents_in(values: Any) -> list[Document]:
    found: list[Document] = []
    for value in values:
        if isinstance(value, list) and value and all(isinstance(v, Document) for v in value):
            found.extend(value)
    return found
