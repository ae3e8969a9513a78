"""``citemark check --from mlflow``: MLflow traces, as ``Trace.to_json()`` writes them.

A file holds MLflow traces (``{"info": {...}, "data": {"spans": [...]}}``) one per
line (JSONL), as a JSON array of traces, or as one or more pretty-printed traces one
after another (`citemark._pipelines.readers._records.json_records`). JSONL is read a line at a
time; an array or a pretty-printed file is cut into its traces by an incremental
splitter, so memory stays bounded by the largest trace, never the file, and time is
linear in it. A row's `Recorded.line` is the line its trace starts on (JSONL,
pretty-printed) or the trace's 1-based position in the array.

Every span attribute value is JSON text inside the JSON file, so it is decoded a
second time. From each trace:

- ``id`` is ``info.trace_id``, and ``id_scope`` is ``"run"``: a trace id names one run
  of the pipeline, not the question, so ``citemark diff`` never matches rows by it;
- ``question`` is the root span's ``mlflow.spanInputs``: a string as it is; an
  object's ``question``, ``query`` or ``input`` string (the first of them present),
  else its only value when it has exactly one and that is a string; else empty;
- ``answer`` is the output of the model span that ended last (``CHAT_MODEL``:
  ``choices[0].message.content``, or the first tool call's arguments as a structured
  ``{"answer": ..., "citations": [...]}`` object; ``LLM``: the output string or its
  ``text``), else the root span's output (a string, or an object's ``answer``);
- ``sources`` are the retriever span's ``mlflow.spanOutputs[i]`` documents in list
  order (`source_from_document`).

A trace whose span end time (``end_time_unix_nano``) is not a uint64, as a JSON
number or ASCII decimal digits (``"²"``, a number of thousands of digits), is a
malformed row naming the span; the other traces are read on.

``info.trace_metadata["mlflow.traceOutputs"]`` and the previews are never read:
MLflow cuts them short. The row is un-assessed (never resolved against a guess) when
the trace has no root span, lost a span's parent, holds two spans under one span id
or spans whose parent ids form a cycle (``trace_incomplete``), holds no
retriever documents (``no_retrieval_recorded``) or more than one retrieval
(``several_retrievals``; a retriever span inside another retriever span is the same
retrieval), holds a retriever output that is not JSON any more (``sources_truncated``:
what an attribute length limit leaves), a tool-call answer that is not a JSON object
(``structured_output_not_parsed``), or a prompt that shows the retrieved texts in
another order than the list (``source_order_not_recorded``). When the recorded prompt
numbers its sources from 0 (`prompt_index_base`), the row's ``index_base`` is 0 and
says it came from the prompt; ``--index-base`` wins over the prompt.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, BinaryIO, Final, NamedTuple

from citemark._pipelines.readers._base import ReadOptions, Recorded
from citemark._pipelines.readers._common import (
    UINT64,
    MalformedError,
    answer_from_output,
    bounded_int,
    loads,
    message_texts,
    question_from,
    retrieved_row,
)
from citemark._pipelines.readers._records import json_records
from citemark._pipelines.readers._tree import has_cycle

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

__all__ = ["read"]

_MODEL_TYPES: Final = frozenset({"CHAT_MODEL", "LLM"})


def read(handle: BinaryIO, options: ReadOptions) -> Iterator[Recorded]:
    """Read MLflow traces: one `Recorded` per trace, in file order.

    Args:
        handle: The file, opened in binary mode.
        options: ``index_base`` wins over a prompt's numbering.

    Yields:
        One row per trace, malformed with a structural reason when it cannot be read.
    """
    first = True
    for where, raw, problem in json_records(handle, "trace"):
        if raw is None:
            yield Recorded(where, None, malformed=problem)
            continue
        try:
            yield _trace(where, loads(raw, first=first), options)
        except MalformedError as exc:
            yield Recorded(where, None, malformed=str(exc))
        first = False


class _Span(NamedTuple):
    number: int
    span_id: str
    parent: str | None
    attributes: Mapping[str, object]
    end: int

    def get(self, key: str) -> object:
        """The attribute ``key``, decoded from its JSON text; None when absent."""
        raw = self.attributes.get(key)
        if raw is None:
            return None
        if not isinstance(raw, str):
            msg = f"span {self.number} attribute {_known(key)} is not JSON text"
            raise MalformedError(msg)
        return loads(raw)

    @property
    def type(self) -> object:
        """The span's ``mlflow.spanType``."""
        return self.get("mlflow.spanType")


_ATTRIBUTES: Final = frozenset(
    {"mlflow.spanType", "mlflow.spanInputs", "mlflow.spanOutputs", "template_arguments", "prompt"}
)


def _known(key: str) -> str:
    return key if key in _ATTRIBUTES else "(other)"


def _trace(where: int, value: object, options: ReadOptions) -> Recorded:
    if not isinstance(value, dict):
        msg = "a trace must be a JSON object"
        raise MalformedError(msg)
    info, data = value.get("info"), value.get("data")
    if not isinstance(info, dict) or not isinstance(data, dict):
        msg = "a trace needs info and data objects"
        raise MalformedError(msg)
    trace_id = info.get("trace_id")
    if not isinstance(trace_id, str) or not trace_id:
        msg = "info.trace_id must be a non-empty string"
        raise MalformedError(msg)
    spans = _spans(data.get("spans"))
    roots = [span for span in spans if span.parent is None]
    ids = {span.span_id for span in spans}
    if len(roots) > 1:
        msg = f"the trace has {len(roots)} root spans"
        raise MalformedError(msg)
    row: dict[str, object] = {
        "id": trace_id,
        "id_scope": "run",
        "question": "",
        "answer": "",
        "sources": [],
    }
    lost_parent = any(span.parent is not None and span.parent not in ids for span in spans)
    # Two spans under one id, or parent ids in a cycle: the spans are not one tree.
    tangled = len(ids) < len(spans) or has_cycle({span.span_id: span.parent for span in spans})
    if not roots or lost_parent or tangled or info.get("state") == "IN_PROGRESS":
        return Recorded(where, row, unassessed="trace_incomplete")
    return _rooted(where, row, roots[0], spans, options)


def _spans(value: object) -> list[_Span]:
    if not isinstance(value, list):
        msg = "data.spans must be a list"
        raise MalformedError(msg)
    spans: list[_Span] = []
    for number, span in enumerate(value, start=1):
        if not isinstance(span, dict):
            msg = f"span {number} is not a JSON object"
            raise MalformedError(msg)
        span_id, parent = span.get("span_id"), span.get("parent_span_id")
        attributes = span.get("attributes", {})
        if not isinstance(span_id, str) or not (parent is None or isinstance(parent, str)):
            msg = f"span {number} needs a span_id string and a parent_span_id string or null"
            raise MalformedError(msg)
        if not isinstance(attributes, dict):
            msg = f"span {number} attributes must be a JSON object"
            raise MalformedError(msg)
        spans.append(_Span(number, span_id, parent or None, attributes, _end(number, span)))
    return spans


def _end(number: int, span: Mapping[str, object]) -> int:
    """The span's end time in nanoseconds: 0 when not recorded (a span still open).

    Raises:
        MalformedError: the end time is not a uint64, as a JSON number or ASCII
            decimal digits (``"²"``, a number of thousands of digits).
    """
    value = span.get("end_time_unix_nano")
    if value is None:
        return 0
    end = bounded_int(value, UINT64)
    if end is None:
        msg = f"span {number} end_time_unix_nano is not a time in nanoseconds (a uint64)"
        raise MalformedError(msg)
    return end


def _rooted(
    where: int, row: dict[str, object], root: _Span, spans: list[_Span], options: ReadOptions
) -> Recorded:
    row["question"] = question_from(root.get("mlflow.spanInputs"))
    model = _last_model_span(spans)
    answer: str | dict[str, object] | _Marker | None = None
    if model is not None:
        answer = _model_answer(model)
    if answer is None:
        answer = answer_from_output(root.get("mlflow.spanOutputs"))
    if answer is _UNPARSED:
        return Recorded(where, row, unassessed="structured_output_not_parsed")
    if answer is not None:
        row["answer"] = answer
    documents = _retrievals(spans)
    if isinstance(documents, _Marker):
        return Recorded(where, row, unassessed="sources_truncated")
    prompt = _prompt(model) if model is not None else ""
    return retrieved_row(where, row, documents, prompt, options, answered=answer is not None)


class _Marker:
    """A sentinel, distinct from every JSON value."""


_UNPARSED: Final = _Marker()
_CUT: Final = _Marker()


def _last_model_span(spans: list[_Span]) -> _Span | None:
    models = [span for span in spans if span.type in _MODEL_TYPES]
    if not models:
        return None
    return max(models, key=lambda span: (span.end, span.number))


def _model_answer(span: _Span) -> str | dict[str, object] | _Marker | None:
    output = span.get("mlflow.spanOutputs")
    if isinstance(output, str):
        return output
    if not isinstance(output, dict):
        return None
    choices = output.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        message = choices[0].get("message")
        if isinstance(message, dict):
            return _message_answer(message)
    text = output.get("text")
    return text if isinstance(text, str) else None


def _message_answer(message: dict[str, object]) -> str | dict[str, object] | _Marker | None:
    content = message.get("content")
    if isinstance(content, str) and content:
        return content
    calls = message.get("tool_calls")
    if not isinstance(calls, list) or not calls or not isinstance(calls[0], dict):
        return None
    function = calls[0].get("function")
    arguments = function.get("arguments") if isinstance(function, dict) else None
    try:
        parsed = loads(arguments) if isinstance(arguments, str) else arguments
    except MalformedError:
        return _UNPARSED
    if not isinstance(parsed, dict) or "answer" not in parsed:
        return _UNPARSED
    return parsed


def _retrievals(spans: list[_Span]) -> list[list[object]] | _Marker:
    """The document lists of the outermost retriever spans that returned any."""
    by_id = {span.span_id: span for span in spans}
    found: list[list[object]] = []
    for span in spans:
        if span.type != "RETRIEVER" or _inside_retriever(span, by_id):
            continue
        try:
            output = span.get("mlflow.spanOutputs")
        except MalformedError:
            return _CUT
        if output is None or output == []:
            continue
        if not isinstance(output, list):
            msg = f"span {span.number} retriever output is not a list"
            raise MalformedError(msg)
        found.append(output)
    return found


def _inside_retriever(span: _Span, by_id: Mapping[str, _Span]) -> bool:
    parent = by_id.get(span.parent) if span.parent else None
    steps = 0
    while parent is not None and steps < len(by_id):
        if parent.type == "RETRIEVER":
            return True
        parent = by_id.get(parent.parent) if parent.parent else None
        steps += 1
    return False


def _prompt(span: _Span) -> str:
    """The prompt text a model span records: its messages, ``prompt`` or ``context_str``."""
    parts: list[str] = []
    inputs = span.get("mlflow.spanInputs")
    if isinstance(inputs, str):
        parts.append(inputs)
    elif isinstance(inputs, dict):
        parts.extend(message_texts(inputs.get("messages")))
    prompt = span.get("prompt")
    if isinstance(prompt, str):
        parts.append(prompt)
    arguments = span.get("template_arguments")
    if isinstance(arguments, dict) and isinstance(arguments.get("context_str"), str):
        parts.append(str(arguments["context_str"]))
    return "\n".join(parts)
