"""``citemark check --from langsmith``: LangSmith runs and dataset examples, as users dump them.

The file is JSONL (one record a line), a JSON array of records (the natural
``json.dump([r.dict() for r in client.list_runs(...)], f, default=str)``), or records
pretty-printed one after another (`citemark._pipelines.readers._records.json_records`, which
streams an array element by element). A row's `Recorded.line` is the line its record
starts on, or the record's 1-based position in an array.

A record is either a **run** (it has ``run_type``): a `langsmith.schemas.Run` as the SDK
exports it (``Run.model_dump(mode="json")``, ``Run.dict()``), or a run as the tracer posts it, its
multipart parts merged into one object (``post.<id>`` gives the fields,
``post.<id>.inputs`` / ``.outputs`` the ``inputs`` and ``outputs``, a ``patch.<id>``
part updates them); or a **dataset example** (`langsmith.schemas.Example`: ``inputs``,
``outputs``, ``id``), which is one row on its own.

Runs may come in any order and the runs of several traces may be interleaved. They
are grouped by ``trace_id`` (else the first id in ``dotted_order``, else a root run's
own ``id``) and linked by ``parent_run_id``; a run's ``child_runs`` are read as runs
of the same trace. A trace is read once no run of it has come for `WINDOW` records, or
at the end of the file, so memory holds at most the runs of `WINDOW` records. A run
that comes after its trace was read is a malformed record (its trace was reported
without it); a trace whose root run never came is un-assessed
(``trace_incomplete``). From each trace:

- ``id`` is the trace id (the root run's ``id``), with ``id_scope`` ``"run"``: it names
  one run of the pipeline, so ``citemark diff`` never matches rows by it (an
  example's ``id`` is the dataset's and has no ``id_scope``);
- ``question`` is the root's ``inputs.question``, ``inputs.query`` or
  ``inputs.input`` (the first that is a string), else its only input when that is a
  string;
- ``answer`` is the root's ``outputs.answer`` (a string, or a structured
  ``{"answer": ..., "citations": [...]}`` object) or ``outputs.output``; else the last
  llm run's ``outputs.generations[0][0]`` text (or message content, or its first
  tool call's arguments as a structured answer);
- ``sources`` are the retriever run's ``outputs.documents[i]`` in list order.

More than one retriever run with documents is ``several_retrievals``; none is
``no_retrieval_recorded``; a prompt that shows the retrieved texts in another order is
``source_order_not_recorded``; a prompt numbering its sources from 0 sets the row's
``index_base`` to 0 unless ``--index-base`` is given. An example's sources are its
``outputs.context`` or ``outputs.documents`` list (documents or strings); one string
instead of a list is ``contexts_joined``.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, BinaryIO, Final, NamedTuple

from citemark._pipelines.readers._base import ReadOptions, Recorded
from citemark._pipelines.readers._common import (
    MalformedError,
    answer_from_output,
    loads,
    message_texts,
    question_from,
    retrieved_row,
    source_from_document,
)
from citemark._pipelines.readers._records import json_records

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

__all__ = ["READ_TRACE_MEMORY", "WINDOW", "read"]

WINDOW: Final = 10_000
"""Records (lines of JSONL, elements of an array) after a trace's latest run before the
trace is read: runs of one trace must lie within this many records of each other."""

READ_TRACE_MEMORY: Final = 100_000
"""How many traces already read are remembered, so that a late run of one is reported."""

_TIMESTAMP_LENGTH: Final = 22  # "YYYYMMDDTHHMMSSffffffZ" before each run id in dotted_order


class _Run(NamedTuple):
    line: int
    value: Mapping[str, object]

    @property
    def order(self) -> tuple[str, int]:
        dotted = self.value.get("dotted_order")
        start = self.value.get("start_time")
        key = dotted if isinstance(dotted, str) else start if isinstance(start, str) else ""
        return key, self.line

    def field(self, name: str) -> Mapping[str, object]:
        value = self.value.get(name)
        return value if isinstance(value, dict) else {}


class _Trace:
    def __init__(self, line: int) -> None:
        self.first_line = line
        self.last_record = 0
        """The 0-based count of the file's record that brought the trace's latest run."""
        self.runs: list[_Run] = []


def read(handle: BinaryIO, options: ReadOptions) -> Iterator[Recorded]:
    """Read LangSmith runs and examples: one `Recorded` per trace or example.

    Args:
        handle: The JSONL file, opened in binary mode.
        options: ``index_base`` wins over a prompt's numbering.

    Yields:
        One row per trace (once it is complete) or example, and a malformed record for
        each line that is neither.
    """
    open_traces: OrderedDict[str, _Trace] = OrderedDict()
    done: OrderedDict[str, None] = OrderedDict()
    first = True
    for count, (number, raw, problem) in enumerate(json_records(handle, "run")):
        yield from _close_idle(open_traces, done, count, options)
        runs = (
            Recorded(number, None, malformed=problem)
            if raw is None
            else _line(number, raw, options, first=first)
        )
        first = False
        if isinstance(runs, Recorded):
            yield runs
            continue
        for run in runs:
            trace_id = _trace_id(run)
            if trace_id in done:
                yield Recorded(
                    number,
                    None,
                    malformed=f"a run of a trace already read: a trace's runs must lie "
                    f"within {WINDOW} records of each other",
                )
                break
            trace = open_traces.pop(trace_id, None) or _Trace(number)
            trace.last_record = count
            trace.runs.append(run)
            open_traces[trace_id] = trace
    while open_traces:
        trace_id, trace = open_traces.popitem(last=False)
        yield _read_trace(trace_id, trace, options)


def _line(number: int, raw: bytes, options: ReadOptions, *, first: bool) -> Recorded | list[_Run]:
    """One record: its runs, or the row of an example, or why it is malformed."""
    try:
        value = loads(raw, first=first)
        if not isinstance(value, dict):
            return Recorded(number, None, malformed="not a JSON object")
        if "run_type" not in value:
            return _example(number, value, options)
        return list(_flatten(number, value))
    except MalformedError as exc:
        return Recorded(number, None, malformed=str(exc))


def _close_idle(
    open_traces: OrderedDict[str, _Trace],
    done: OrderedDict[str, None],
    count: int,
    options: ReadOptions,
) -> Iterator[Recorded]:
    """Read every trace whose latest run is `WINDOW` records or more behind."""
    while open_traces:
        trace_id, trace = next(iter(open_traces.items()))
        if count - trace.last_record < WINDOW:
            return
        del open_traces[trace_id]
        done[trace_id] = None
        if len(done) > READ_TRACE_MEMORY:
            done.popitem(last=False)
        yield _read_trace(trace_id, trace, options)


def _flatten(line: int, value: Mapping[str, object]) -> Iterator[_Run]:
    pending = [value]
    while pending:
        run = pending.pop()
        for key in ("id", "run_type"):
            if not isinstance(run.get(key), str):
                msg = f"a run's {key} must be a string"
                raise MalformedError(msg)
        parent = run.get("parent_run_id")
        if parent is not None and not isinstance(parent, str):
            msg = "a run's parent_run_id must be a string or null"
            raise MalformedError(msg)
        children = run.get("child_runs")
        if isinstance(children, list):
            for child in children:
                if not isinstance(child, dict):
                    msg = "a run's child_runs must be JSON objects"
                    raise MalformedError(msg)
                pending.append(child)
        yield _Run(line, run)


def _trace_id(run: _Run) -> str:
    trace_id = run.value.get("trace_id")
    if isinstance(trace_id, str) and trace_id:
        return trace_id
    dotted = run.value.get("dotted_order")
    if isinstance(dotted, str) and len(dotted) > _TIMESTAMP_LENGTH:
        return dotted.split(".", 1)[0][_TIMESTAMP_LENGTH:]
    return str(run.value["id"])


def _read_trace(trace_id: str, trace: _Trace, options: ReadOptions) -> Recorded:
    runs = sorted(trace.runs, key=lambda run: run.order)
    roots = [run for run in runs if run.value.get("parent_run_id") is None]
    line = roots[0].line if roots else trace.first_line
    row: dict[str, object] = {
        "id": trace_id,
        "id_scope": "run",
        "question": "",
        "answer": "",
        "sources": [],
    }
    ids = {run.value["id"] for run in runs}
    if len(roots) > 1:
        return Recorded(line, None, malformed=f"the trace has {len(roots)} root runs")
    lost = any(run.value.get("parent_run_id") not in ids | {None} for run in runs)
    if not roots or lost:
        return Recorded(line, row, unassessed="trace_incomplete")
    try:
        return _rooted(line, row, roots[0], runs, options)
    except MalformedError as exc:
        return Recorded(line, None, malformed=str(exc))


def _rooted(
    line: int, row: dict[str, object], root: _Run, runs: list[_Run], options: ReadOptions
) -> Recorded:
    row["question"] = question_from(root.field("inputs"))
    outputs = root.field("outputs")
    answer: str | dict[str, object] | _Unparsed | None = answer_from_output(outputs)
    if answer is None and isinstance(outputs.get("output"), str):
        answer = str(outputs["output"])
    llms = [run for run in runs if run.value.get("run_type") == "llm"]
    last_llm = llms[-1] if llms else None
    if answer is None and last_llm is not None:
        answer = _llm_answer(last_llm)
    if answer is _UNPARSED:
        return Recorded(line, row, unassessed="structured_output_not_parsed")
    answered = isinstance(answer, str | dict)
    if answered:
        row["answer"] = answer
    prompt = _prompt(last_llm) if last_llm is not None else ""
    return retrieved_row(line, row, _retrievals(runs), prompt, options, answered=answered)


class _Unparsed:
    """A tool call whose arguments are not a structured answer."""


_UNPARSED: Final = _Unparsed()


def _llm_answer(run: _Run) -> str | dict[str, object] | _Unparsed | None:
    generations = run.field("outputs").get("generations")
    first = generations[0] if isinstance(generations, list) and generations else None
    generation = first[0] if isinstance(first, list) and first else None
    if not isinstance(generation, dict):
        return None
    text = generation.get("text")
    if isinstance(text, str) and text:
        return text
    message = generation.get("message")
    kwargs = message.get("kwargs") if isinstance(message, dict) else None
    if not isinstance(kwargs, dict):
        return None
    content = kwargs.get("content")
    if isinstance(content, str) and content:
        return content
    calls = kwargs.get("tool_calls")
    if not isinstance(calls, list) or not calls or not isinstance(calls[0], dict):
        return None
    arguments = calls[0].get("args")
    if not isinstance(arguments, dict) or "answer" not in arguments:
        return _UNPARSED
    return arguments


def _retrievals(runs: list[_Run]) -> list[list[object]]:
    by_id = {run.value["id"]: run for run in runs}
    found: list[list[object]] = []
    for run in runs:
        if run.value.get("run_type") != "retriever" or _inside_retriever(run, by_id):
            continue
        documents = run.field("outputs").get("documents")
        if documents is None or documents == []:
            continue
        if not isinstance(documents, list):
            msg = "a retriever run's outputs.documents is not a list"
            raise MalformedError(msg)
        found.append(documents)
    return found


def _inside_retriever(run: _Run, by_id: Mapping[object, _Run]) -> bool:
    parent = by_id.get(run.value.get("parent_run_id"))
    steps = 0
    while parent is not None and steps < len(by_id):
        if parent.value.get("run_type") == "retriever":
            return True
        parent = by_id.get(parent.value.get("parent_run_id"))
        steps += 1
    return False


def _prompt(run: _Run) -> str:
    """The prompt an llm run records: its messages' contents, or its prompts."""
    inputs = run.field("inputs")
    parts: list[str] = []
    messages = inputs.get("messages")
    if isinstance(messages, list):
        for batch in messages:
            items = batch if isinstance(batch, list) else [batch]
            parts.extend(message_texts([_lc_message(item) for item in items]))
    prompts = inputs.get("prompts")
    if isinstance(prompts, list):
        parts.extend(prompt for prompt in prompts if isinstance(prompt, str))
    return "\n".join(parts)


def _lc_message(item: object) -> object:
    """A LangChain-serialised message (``{"lc": 1, "kwargs": {...}}``) as its kwargs."""
    if isinstance(item, dict) and isinstance(item.get("kwargs"), dict):
        return item["kwargs"]
    return item


def _example(line: int, value: Mapping[str, object], options: ReadOptions) -> Recorded:
    inputs, outputs = value.get("inputs"), value.get("outputs")
    if not isinstance(inputs, dict) or not isinstance(outputs, dict):
        msg = "neither a run (run_type) nor an example (inputs and outputs objects)"
        raise MalformedError(msg)
    row: dict[str, object] = {"question": question_from(inputs), "answer": "", "sources": []}
    example_id = value.get("id")
    if isinstance(example_id, str | int) and not isinstance(example_id, bool):
        row["id"] = example_id
    answer = answer_from_output(outputs)
    if isinstance(answer, str | dict):
        row["answer"] = answer
    contexts = outputs.get("context", outputs.get("documents"))
    if isinstance(contexts, str):
        return Recorded(line, row, unassessed="contexts_joined")
    if not isinstance(contexts, list) or not contexts:
        return Recorded(line, row, unassessed="no_retrieval_recorded")
    row["sources"] = [_example_source(n, item) for n, item in enumerate(contexts, start=1)]
    if answer is None:
        return Recorded(line, row, unassessed="no_answer")
    del options
    return Recorded(line, row)


def _example_source(number: int, item: object) -> dict[str, object]:
    if isinstance(item, str):
        return {"text": item, "doc_id": str(number)}
    return source_from_document(number, item)
