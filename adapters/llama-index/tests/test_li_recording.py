"""CitationRecordingHandler: citemark check rows from live LlamaIndex queries."""

from __future__ import annotations

import asyncio
import errno
import io
import json
import os
import re
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from li_fakes import (
    APACHE,
    BSD,
    QUESTION,
    index_of,
    index_of_nodes,
    license_documents,
    text_node,
)
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events.query import QueryEndEvent
from llama_index.core.query_engine import CitationQueryEngine
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from citemark import MarkerOutOfRangeError, SynthesisError
from citemark.reports import RecordingWarning, RowRecorder
from llama_index.postprocessor.citemark import CITATION_QA_TEMPLATE, CitationPostprocessor
from llama_index.postprocessor.citemark.testing import ScriptedLLM
from llama_index.query_engine.citemark import CitationRecordingHandler, CitedQueryEngine

CANARY = "CANARY-38c3-llama-index-recording"


@pytest.fixture
def attach():
    """Attach handlers to the root dispatcher for one test, and detach them after it."""
    attached: list[BaseEventHandler] = []

    def add(handler: BaseEventHandler) -> BaseEventHandler:
        get_dispatcher().add_event_handler(handler)
        attached.append(handler)
        return handler

    yield add
    dispatcher = get_dispatcher()
    for handler in attached:
        dispatcher.event_handlers.remove(handler)


class QueryEnds(BaseEventHandler):
    """Counts every QueryEndEvent: the naive recorder's one row per query event."""

    ends: int = 0

    def handle(self, event: Any, **kwargs: Any) -> None:
        if isinstance(event, QueryEndEvent):
            self.ends += 1


def rows(text: str) -> list[dict]:
    """The recorded rows; every line must be one whole JSON object ending in a line break."""
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def citation_engine(*replies, top_k=2):
    """LlamaIndex's own CitationQueryEngine over two fixed nodes and a scripted LLM."""
    llm = ScriptedLLM(replies=list(replies))
    return CitationQueryEngine.from_args(
        index_of_nodes([APACHE, BSD]), llm=llm, similarity_top_k=top_k
    )


class TestRecordThenCheck:
    def test_recorded_rows_are_checked_later(self, tmp_path, attach):
        """citemark check reads the recorded file as is: [1] resolves, a fabricated [5] fails."""
        path = tmp_path / "runs.jsonl"
        handler = attach(CitationRecordingHandler(path))
        engine = citation_engine("Filed [1].", "Filed [5].")
        engine.query(QUESTION)
        engine.query("What must be kept?")
        out = tmp_path / "out"
        completed = subprocess.run(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", "citemark", "check", str(path), "--out", str(out)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert 0 == completed.returncode, completed.stderr
        first, second = (json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines())
        assert ("unassessed", "no_judge") == (first["outcome"], first["reason"])
        assert 1 == len(first["details"]["resolved_citations"])
        assert "failed" == second["outcome"]
        assert ["fabricated_citation"] == second["details"]["deterministic_failures"]
        assert (2, 0) == (handler.recorder.recorded, handler.recorder.failures)

    def test_source_labels_are_removed_and_checked(self, attach):
        """A CitationQueryEngine row holds each node's own text, numbered by position from 1.

        The naive row (the source node's text as the response holds it) would carry
        the engine's ``Source n:`` label, which is no part of the document.
        """
        out = io.StringIO()
        attach(CitationRecordingHandler(out))
        response = citation_engine("Filed [1].").query(QUESTION)
        (row,) = rows(out.getvalue())
        assert [APACHE.text, BSD.text] == [s["text"] for s in row["sources"]]
        assert ["Apache", "BSD"] == [s["doc_id"] for s in row["sources"]]
        assert (1, "source_label") == (row["index_base"], row["numbered_by"])
        naive = [item.node.get_content() for item in response.source_nodes]
        assert naive[0].startswith("Source 1:\n")
        assert naive != [s["text"] for s in row["sources"]]
        assert (QUESTION, "Filed [1].") == (row["question"], row["answer"])
        assert row["id"].startswith("CitationQueryEngine.query-")

    def test_real_documents_keep_their_ids(self, attach):
        """Chunks of real documents split by a node parser keep their document's id."""
        out = io.StringIO()
        attach(CitationRecordingHandler(out))
        index = index_of(license_documents())
        CitationQueryEngine.from_args(
            index, llm=ScriptedLLM(replies=["Filed [1]."]), similarity_top_k=3
        ).query(QUESTION)
        (row,) = rows(out.getvalue())
        names = {doc.doc_id for doc in license_documents()}
        assert row["sources"]
        assert all(s["doc_id"] in names for s in row["sources"])

    def test_postprocessor_numbering_is_read_from_cite_as(self, attach):
        """Nodes numbered by CitationPostprocessor are recorded in their [n] order."""
        out = io.StringIO()
        attach(CitationRecordingHandler(out))
        index_of_nodes([APACHE, BSD]).as_query_engine(
            llm=ScriptedLLM(replies=["Filed [1], kept [2]."]),
            similarity_top_k=2,
            node_postprocessors=[CitationPostprocessor()],
            text_qa_template=CITATION_QA_TEMPLATE,
        ).query(QUESTION)
        (row,) = rows(out.getvalue())
        assert ["a-apache", "b-bsd"] == [s["chunk_id"] for s in row["sources"]]
        assert [4891, 120] == [s["start"] for s in row["sources"]]
        assert "cite_as" == row["numbered_by"]

    def test_numbers_the_prompt_shows_set_the_order(self, attach):
        """Nodes numbered in the prompt ("2." before the second shown) are recorded by number.

        Retrieval returns the Apache node first, but the prompt shows it as 2, so the
        naive positional row would resolve [1] to the wrong node.
        """
        out = io.StringIO()
        attach(CitationRecordingHandler(out))
        second = text_node("a-two", "2. Patent licenses terminate when litigation is filed.", "A")
        first = text_node("b-one", "1. Redistributions must retain the notice.", "B")
        response = (
            index_of_nodes([second, first])
            .as_query_engine(llm=ScriptedLLM(replies=["Kept [1]."]), similarity_top_k=2)
            .query(QUESTION)
        )
        (row,) = rows(out.getvalue())
        assert ["a-two", "b-one"] == [item.node.node_id for item in response.source_nodes]
        assert ["b-one", "a-two"] == [s["chunk_id"] for s in row["sources"]]
        assert "prompt" == row["numbered_by"]

    def test_a_plain_engine_records_no_guessed_order(self, attach):
        """LlamaIndex's default prompt does not number the nodes: no sources, numbering_unknown."""
        out = io.StringIO()
        attach(CitationRecordingHandler(out))
        index_of_nodes([APACHE, BSD]).as_query_engine(
            llm=ScriptedLLM(replies=["Filed [1]."]), similarity_top_k=2
        ).query(QUESTION)
        (row,) = rows(out.getvalue())
        assert ([], "numbering_unknown") == (row["sources"], row["unassessed"])


def check(path, out) -> dict[str, dict]:
    """``python -m citemark check FILE --out DIR --json``; rows.jsonl's records by id."""
    completed = subprocess.run(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "citemark", "check", str(path), "--out", str(out), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode in (0, 1), completed.stderr
    json.loads(completed.stdout)
    records = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    return {record["id"]: record for record in records}


class TestRejectedAnswersOnTwoDays:
    def test_cited_query_engine_rejections_check_to_fabricated_citation(self, tmp_path):
        """CitedQueryEngine (CitationPostprocessor's cite_as numbering) over two days, one
        rejected [5] of two nodes each day: check fails that row as fabricated_citation,
        where the old row was chain_error with no answer."""
        for day in ("day1", "day2"):
            path = tmp_path / f"{day}.jsonl"
            handler = CitationRecordingHandler(path)
            get_dispatcher().add_event_handler(handler)  # one day's handler, one file
            llm = ScriptedLLM(replies=["Filed [1].", f"Kept [5]. {day}"])
            engine = CitedQueryEngine.from_args(
                index_of_nodes([APACHE, BSD]).as_retriever(similarity_top_k=2), llm=llm
            )
            try:
                engine.query(QUESTION)
                with pytest.raises(MarkerOutOfRangeError):
                    engine.query("What must be kept?")
            finally:
                get_dispatcher().event_handlers.remove(handler)
            good, bad = rows(path.read_text())
            assert (f"Kept [5]. {day}", "cite_as", "MarkerOutOfRangeError") == (
                bad["answer"],
                bad["numbered_by"],
                bad["rejected"],
            )
            by_id = check(path, tmp_path / f"{day}-out")
            assert "failed" == by_id[bad["id"]]["outcome"]
            assert ["fabricated_citation"] == by_id[bad["id"]]["details"]["deterministic_failures"]
            assert "failed" != by_id[good["id"]]["outcome"]
            assert "chain_error" not in {r.get("reason") for r in by_id.values()}


class TestTopLevelOnly:
    def test_a_wrapped_engine_gives_one_row(self, attach):
        """CitedQueryEngine runs a nested query; only the top-level one is a row.

        Two QueryEndEvents fire, so a recorder writing one row per event writes two.
        """
        out = io.StringIO()
        ends = attach(QueryEnds())
        attach(CitationRecordingHandler(out))
        CitedQueryEngine(citation_engine("Filed [1].")).query(QUESTION)
        (row,) = rows(out.getvalue())
        assert 2 == ends.ends
        assert row["id"].startswith("CitedQueryEngine.query-")
        assert [APACHE.text, BSD.text] == [s["text"] for s in row["sources"]]

    def test_a_rejected_query_is_one_row_and_the_next_is_top_level(self, attach):
        """A query rejected after its model answered is one row holding that answer (it
        was ``chain_error`` with no answer before); the query after it is recorded normally."""
        out = io.StringIO()
        attach(CitationRecordingHandler(out))
        engine = CitedQueryEngine(citation_engine("Filed [9].", "Filed [1]."))
        with pytest.raises(MarkerOutOfRangeError):
            engine.query(QUESTION)
        engine.query(QUESTION)
        rejected, answered = rows(out.getvalue())
        assert ("Filed [9].", [APACHE.text, BSD.text]) == (
            rejected["answer"],
            [s["text"] for s in rejected["sources"]],
        )
        assert ("MarkerOutOfRangeError", "run") == (rejected["rejected"], rejected["id_scope"])
        assert "unassessed" not in rejected
        assert rejected["id"].startswith("CitedQueryEngine.query-")
        assert ("Filed [1].", 2) == (answered["answer"], len(answered["sources"]))
        assert "rejected" not in answered

    def test_a_query_that_raised_before_any_answer_is_chain_error(self, attach):
        """A blank question is refused before the wrapped engine runs: no answer exists."""
        out = io.StringIO()
        attach(CitationRecordingHandler(out))
        with pytest.raises(SynthesisError):
            CitedQueryEngine(citation_engine("Filed [1].")).query("   ")
        (row,) = rows(out.getvalue())
        assert ("", [], "chain_error") == (row["answer"], row["sources"], row["unassessed"])
        assert "rejected" not in row

    def test_a_streaming_response_is_no_answer(self, attach):
        """A streaming response has no text when the query ends: no_answer, never a guess."""
        out = io.StringIO()
        attach(CitationRecordingHandler(out))
        engine = CitationQueryEngine.from_args(
            index_of_nodes([APACHE, BSD]), llm=ScriptedLLM(replies=["Filed [1]."]), streaming=True
        )
        engine.query(QUESTION).get_response()
        (row,) = rows(out.getvalue())
        assert ("", "no_answer") == (row["answer"], row["unassessed"])


def answer_from_prompt(prompt: str) -> str:
    """The scripted answer names the question it was asked, to show rows never mix."""
    number = re.findall(r"Question ([0-9]+)\?", prompt)[-1]
    return f"Answer {number} [1]."


class TestConcurrentQueries:
    QUESTIONS = tuple(f"Question {k}?" for k in range(16))

    def engine(self):
        replies = [answer_from_prompt] * len(self.QUESTIONS)
        return citation_engine(*replies)

    def assert_one_row_per_query(self, text):
        recorded = rows(text)
        assert len(self.QUESTIONS) == len(recorded)
        assert len(recorded) == len({row["id"] for row in recorded})
        for row in recorded:
            number = row["question"].removeprefix("Question ").removesuffix("?")
            assert f"Answer {number} [1]." == row["answer"]
            assert [APACHE.text, BSD.text] == [s["text"] for s in row["sources"]]
        assert set(self.QUESTIONS) == {row["question"] for row in recorded}

    def test_threads(self, tmp_path, attach):
        """Eight threads querying one engine: one whole row per query, none mixed."""
        path = tmp_path / "runs.jsonl"
        attach(CitationRecordingHandler(path))
        engine = self.engine()
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(engine.query, self.QUESTIONS))
        self.assert_one_row_per_query(path.read_text())

    def test_asyncio_gather(self, tmp_path, attach):
        """aquery under asyncio.gather: one whole row per query, none mixed."""
        path = tmp_path / "runs.jsonl"
        attach(CitationRecordingHandler(path))
        engine = self.engine()

        async def run_all():
            return await asyncio.gather(*(engine.aquery(q) for q in self.QUESTIONS))

        asyncio.run(run_all())
        self.assert_one_row_per_query(path.read_text())

    def test_two_handlers_see_their_own_queries(self, tmp_path, attach):
        """Two handlers attached at once each record every top-level query, once."""
        shared = RowRecorder(tmp_path / "both.jsonl")
        first, second = io.StringIO(), io.StringIO()
        attach(CitationRecordingHandler(first))
        attach(CitationRecordingHandler(second))
        attach(CitationRecordingHandler(shared))
        citation_engine("Filed [1].").query(QUESTION)
        assert 1 == len(rows(first.getvalue())) == len(rows(second.getvalue()))
        assert 1 == shared.recorded


def nested(depth: int) -> dict:
    """A dict nested ``depth`` levels deep under the canary key, built without recursion."""
    top: dict = {}
    level = top
    for _ in range(depth):
        level[CANARY] = {}
        level = level[CANARY]
    return top


class FixedRetriever(BaseRetriever):
    """A real retriever that returns the same nodes for every query."""

    def __init__(self, nodes: list[TextNode]) -> None:
        super().__init__()
        self._nodes = nodes

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=node, score=1.0) for node in self._nodes]


class TestHostileRecording:
    """Issue 38, item 3: the handler never loses a query silently, nor hangs."""

    def test_deep_metadata_is_a_counted_failure_and_the_query_answers(self, attach):
        """Node metadata nested 2,000 deep (kept out of the prompt): the query answers; the
        row is a counted failure with a structural RecordingWarning.

        The old recorder raised RecursionError, which the handler swallowed: the query
        was neither written nor counted.
        """
        node = text_node("deep", APACHE.text, "Apache", 0)
        node.metadata["deep"] = nested(2_000)
        node.excluded_llm_metadata_keys = ["deep"]
        out = io.StringIO()
        handler = attach(CitationRecordingHandler(out))
        engine = CitationQueryEngine(
            FixedRetriever([node]), llm=ScriptedLLM(replies=["Filed [1]."])
        )
        with pytest.warns(RecordingWarning, match="nested deeper") as caught:
            assert "Filed [1]." == str(engine.query(CANARY))
        assert (0, 1, "") == (handler.recorder.recorded, handler.recorder.failures, out.getvalue())
        assert all(CANARY not in str(w.message) for w in caught)
        assert CANARY not in (handler.recorder.last_failure or "")

    def test_a_fifo_with_no_reader_is_refused_at_construction(self, tmp_path):
        """A FIFO nobody reads: OSError ENXIO at once, never a handler that hangs.

        The construction runs in a thread under a bounded wait; a blocked one is
        released by opening the FIFO's read end, and the test fails.
        """
        fifo = tmp_path / "runs.fifo"
        os.mkfifo(fifo)
        done: list[object] = []

        def construct() -> None:
            try:
                done.append(CitationRecordingHandler(fifo))
            except OSError as exc:
                done.append(exc)

        thread = threading.Thread(target=construct, daemon=True)
        thread.start()
        thread.join(10)
        if thread.is_alive():
            reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
            thread.join(10)
            os.close(reader)
            pytest.fail("the handler's construction was blocked on the FIFO")
        (error,) = done
        assert isinstance(error, OSError)
        assert errno.ENXIO == error.errno

    def test_a_deleted_file_is_created_again(self, tmp_path, attach):
        """A query recorded after its file was deleted lands in a new file at the same path,
        not in the deleted one (where the old recorder wrote it, counted as recorded)."""
        path = tmp_path / "runs.jsonl"
        handler = attach(CitationRecordingHandler(path))
        engine = citation_engine("Filed [1].", "Kept [2].")
        engine.query(QUESTION)
        path.unlink()
        engine.query(QUESTION)
        assert ["Kept [2]."] == [row["answer"] for row in rows(path.read_text())]
        assert (2, 0) == (handler.recorder.recorded, handler.recorder.failures)
