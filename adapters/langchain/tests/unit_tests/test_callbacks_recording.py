"""CitationCallbackHandler(record_to=...): citemark check rows from a live, unmodified chain."""

from __future__ import annotations

import asyncio
import errno
import io
import json
import os
import shutil
import subprocess
import sys
import threading
from operator import itemgetter
from typing import ClassVar

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore
from pydantic import BaseModel

from citemark import MarkerOutOfRangeError
from citemark.reports import RecordingWarning, RowRecorder
from langchain_citemark import CitationCallbackHandler, CitedAnswerChain

CANARY = "CANARY-5d1e-langchain-recording"
TEXTS = {
    "Apache-2.0": "Patent licenses terminate as of the date such litigation is filed.",
    "BSD": "Redistributions must retain the above copyright notice.",
    "MIT": "The software is provided as is, without warranty of any kind.",
}


def store() -> InMemoryVectorStore:
    """A real vector store over three license sentences, with deterministic fake embeddings."""
    vectors = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    vectors.add_documents(
        [Document(text, id=name, metadata={"source": name}) for name, text in TEXTS.items()]
    )
    return vectors


def reversed_numbering(docs: list[Document]) -> str:
    """The user's own formatting: numbered from the last retrieved document to the first."""
    return "\n".join(f"Source {len(docs) - i}: {d.page_content}" for i, d in enumerate(docs))


def rag_chain(llm, formatting=reversed_numbering):
    """The LangChain guide's shape: retrieve, format the context, prompt, model, parse."""
    retriever = store().as_retriever(search_kwargs={"k": 3})
    prompt = ChatPromptTemplate.from_template("Cite as [n].\n{context}\n\nQuestion: {question}")
    return (
        {
            "context": itemgetter("question") | retriever | formatting,
            "question": itemgetter("question"),
        }
        | prompt
        | llm
        | StrOutputParser()
    )


def rows(text: str) -> list[dict]:
    """The recorded rows; every line must be one whole JSON object ending in a line break."""
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def check(path, out) -> dict[str, dict]:
    """Run ``citemark check`` on the recorded file; its rows.jsonl records by id."""
    completed = subprocess.run(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "citemark", "check", str(path), "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert 0 == completed.returncode, completed.stderr
    records = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    return {record["id"]: record for record in records}


class TestRecordThenCheck:
    def test_recorded_rows_are_checked_later(self, tmp_path):
        """Recorded rows go through citemark check unchanged: [1] resolves, [7] fails its row."""
        path = tmp_path / "runs.jsonl"
        handler = CitationCallbackHandler(record_to=path)
        chain = rag_chain(FakeListChatModel(responses=["Filed [1].", "Filed [7]."]))
        for question in ("When does the license end?", "What is kept?"):
            chain.invoke({"question": question}, config={"callbacks": [handler]})
        by_id = check(path, tmp_path / "out")
        first, second = (str(r.run_id) for r in handler.reports)
        assert ["resolved", "out_of_range"] == [r.outcome for r in handler.reports]
        assert ("unassessed", "no_judge") == (by_id[first]["outcome"], by_id[first]["reason"])
        assert 1 == len(by_id[first]["details"]["resolved_citations"])
        assert "failed" == by_id[second]["outcome"]
        assert ["fabricated_citation"] == by_id[second]["details"]["deterministic_failures"]
        assert (2, 0) == (handler.recorder.recorded, handler.recorder.failures)

    def test_sources_are_in_the_order_the_prompt_numbered_them(self):
        """Source n of the row is the document the prompt showed as n, not the nth retrieved.

        The chain numbers its documents from the last retrieved to the first, so the
        naive row (documents in retrieval order) would resolve [1] to another document.
        """
        out = io.StringIO()
        question = "When does the license end?"
        chain = rag_chain(FakeListChatModel(responses=["Filed [1]."]))
        chain.invoke(
            {"question": question}, config={"callbacks": [CitationCallbackHandler(record_to=out)]}
        )
        (row,) = rows(out.getvalue())
        retrieved = [
            d.page_content for d in store().as_retriever(search_kwargs={"k": 3}).invoke(question)
        ]
        recorded = [source["text"] for source in row["sources"]]
        assert list(reversed(retrieved)) == recorded
        assert retrieved[0] != recorded[0]  # the naive order names another document as [1]
        assert [3, 2, 1] == row["prompt_numbering"]
        assert (question, "Filed [1].", 1) == (row["question"], row["answer"], row["index_base"])

    def test_a_structured_answer_is_recorded_as_an_object(self):
        """A chain that ends in a pydantic object records the answer as that JSON object."""

        class Answer(BaseModel):
            text: str
            cited: list[int]

        out = io.StringIO()
        chain = rag_chain(FakeListChatModel(responses=["Filed [1]."])) | RunnableLambda(
            lambda text: Answer(text=text, cited=[1])
        )
        chain.invoke(
            {"question": "When?"}, config={"callbacks": [CitationCallbackHandler(record_to=out)]}
        )
        (row,) = rows(out.getvalue())
        assert {"text": "Filed [1].", "cited": [1]} == row["answer"]
        assert 3 == len(row["sources"])


class TestUnassessedRows:
    def test_unnumbered_prompt_records_no_guessed_order(self):
        """Documents pasted without numbers: the row has no sources and numbering_unknown."""
        out = io.StringIO()
        chain = rag_chain(
            FakeListChatModel(responses=["Filed [1]."]),
            formatting=lambda docs: " ".join(d.page_content for d in docs),
        )
        chain.invoke(
            {"question": "When?"}, config={"callbacks": [CitationCallbackHandler(record_to=out)]}
        )
        (row,) = rows(out.getvalue())
        assert ([], "numbering_unknown") == (row["sources"], row["unassessed"])

    def test_a_rejected_run_is_one_row_with_its_answer(self):
        """A chain that raises after its model answered is one row holding that answer,
        the documents it numbered and what rejected it (before: chain_error, no answer)."""
        out = io.StringIO()
        handler = CitationCallbackHandler(record_to=out)
        chain = CitedAnswerChain(llm=FakeListChatModel(responses=["Filed [9]."]))
        documents = [Document(TEXTS["BSD"], metadata={"source": "BSD"})]
        with pytest.raises(MarkerOutOfRangeError):
            chain.invoke(
                {"question": "What?", "documents": documents}, config={"callbacks": [handler]}
            )
        (row,) = rows(out.getvalue())
        assert ("Filed [9].", ["BSD"]) == (row["answer"], [s["doc_id"] for s in row["sources"]])
        assert ("MarkerOutOfRangeError", "run") == (row["rejected"], row["id_scope"])
        assert "unassessed" not in row
        assert str(handler.reports[0].run_id) == row["id"]

    def test_citemarks_own_chain_is_recorded_with_its_numbering(self):
        """CitedAnswerChain's prompt is citemark's own numbered list; its answer is the text."""
        out = io.StringIO()
        chain = CitedAnswerChain(llm=FakeListChatModel(responses=["Kept [1]."]))
        documents = [Document(TEXTS["BSD"], metadata={"source": "BSD"})]
        chain.invoke(
            {"question": "What?", "documents": documents},
            config={"callbacks": [CitationCallbackHandler(record_to=out)]},
        )
        (row,) = rows(out.getvalue())
        assert ("Kept [1].", ["BSD"]) == (row["answer"], [s["doc_id"] for s in row["sources"]])


class TestConcurrentRuns:
    QUESTIONS: ClassVar[list[str]] = [f"Question {k}: which license says what?" for k in range(24)]

    def expected(self) -> dict[str, list[str]]:
        """Each question's sources as its own prompt numbered them, from a sequential run."""
        retriever = store().as_retriever(search_kwargs={"k": 3})
        return {q: [d.page_content for d in reversed(retriever.invoke(q))] for q in self.QUESTIONS}

    def assert_one_whole_row_per_run(self, text, outputs, handler):
        recorded = rows(text)
        assert len(self.QUESTIONS) == len(recorded)
        assert {str(r.run_id) for r in handler.reports} == {row["id"] for row in recorded}
        by_question = {row["question"]: row for row in recorded}
        assert set(self.QUESTIONS) == set(by_question)
        expected = self.expected()
        for question, answer in zip(self.QUESTIONS, outputs, strict=True):
            row = by_question[question]
            assert answer == row["answer"]
            assert expected[question] == [s["text"] for s in row["sources"]]

    def test_batch_in_threads(self, tmp_path):
        """batch with eight threads: exactly one whole row per run, none mixed with another's."""
        path = tmp_path / "runs.jsonl"
        handler = CitationCallbackHandler(record_to=path)
        llm = FakeListChatModel(responses=[f"Answer [{k % 3 + 1}]." for k in range(24)])
        outputs = rag_chain(llm).batch(
            [{"question": q} for q in self.QUESTIONS],
            config={"callbacks": [handler], "max_concurrency": 8},
        )
        self.assert_one_whole_row_per_run(path.read_text(), outputs, handler)

    def test_abatch(self, tmp_path):
        """abatch: exactly one whole row per run, none mixed with another's."""
        path = tmp_path / "runs.jsonl"
        handler = CitationCallbackHandler(record_to=path)
        llm = FakeListChatModel(responses=[f"Answer [{k % 3 + 1}]." for k in range(24)])
        outputs = asyncio.run(
            rag_chain(llm).abatch(
                [{"question": q} for q in self.QUESTIONS], config={"callbacks": [handler]}
            )
        )
        self.assert_one_whole_row_per_run(path.read_text(), outputs, handler)

    def test_two_handlers_share_one_recorder(self, tmp_path):
        """Handlers given the same RowRecorder write to one file, one line each."""
        recorder = RowRecorder(tmp_path / "runs.jsonl")
        chain = rag_chain(FakeListChatModel(responses=["Filed [1]."]))
        for _ in range(2):
            handler = CitationCallbackHandler(record_to=recorder)
            chain.invoke({"question": "When?"}, config={"callbacks": [handler]})
        assert 2 == recorder.recorded
        assert 2 == len(rows((tmp_path / "runs.jsonl").read_text()))


class TestNeverRaises:
    def test_a_failing_writer_never_reaches_the_chain(self):
        """A writer that raises: the chain answers, the report is kept, the failure is counted."""

        class Broken(io.StringIO):
            def write(self, text: str) -> int:
                raise OSError(5, CANARY)

        handler = CitationCallbackHandler(record_to=Broken())
        chain = rag_chain(FakeListChatModel(responses=[f"Filed [1]. {CANARY}"]))
        with pytest.warns(RecordingWarning) as caught:
            answer = chain.invoke({"question": CANARY}, config={"callbacks": [handler]})
        assert answer.endswith(CANARY)
        assert ["resolved"] == [r.outcome for r in handler.reports]
        assert (0, 1) == (handler.recorder.recorded, handler.recorder.failures)
        assert all(CANARY not in str(w.message) for w in caught)

    def test_without_record_to_nothing_is_recorded(self):
        """The default handler keeps only its in-memory reports."""
        handler = CitationCallbackHandler()
        rag_chain(FakeListChatModel(responses=["Filed [1]."])).invoke(
            {"question": "When?"}, config={"callbacks": [handler]}
        )
        assert handler.recorder is None
        assert 1 == len(handler.reports)


def nested(depth: int) -> dict:
    """A dict nested ``depth`` levels deep under the canary key, built without recursion."""
    top: dict = {}
    level = top
    for _ in range(depth):
        level[CANARY] = {}
        level = level[CANARY]
    return top


class TestHostileRecording:
    """Issue 38, item 3: the handler never loses a run silently, nor hangs."""

    def test_deep_metadata_is_a_counted_failure_and_the_chain_answers(self):
        """Document metadata nested 2,000 deep: the chain answers and keeps its report; the
        row is a counted failure with a structural RecordingWarning.

        The old recorder raised RecursionError, which LangChain's callback manager
        swallowed: the run was neither written nor counted.
        """
        vectors = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
        vectors.add_documents(
            [
                Document(text, id=name, metadata={"source": name, "deep": nested(2_000)})
                for name, text in TEXTS.items()
            ]
        )
        retriever = vectors.as_retriever(search_kwargs={"k": 3})
        prompt = ChatPromptTemplate.from_template("{context}\n\nQuestion: {question}")
        chain = (
            {
                "context": itemgetter("question") | retriever | reversed_numbering,
                "question": itemgetter("question"),
            }
            | prompt
            | FakeListChatModel(responses=["Filed [1]."])
            | StrOutputParser()
        )
        out = io.StringIO()
        handler = CitationCallbackHandler(record_to=out)
        with pytest.warns(RecordingWarning, match="nested deeper") as caught:
            answer = chain.invoke({"question": CANARY}, config={"callbacks": [handler]})
        assert "Filed [1]." == answer
        assert ["resolved"] == [r.outcome for r in handler.reports]
        assert (0, 1, "") == (handler.recorder.recorded, handler.recorder.failures, out.getvalue())
        assert all(CANARY not in str(w.message) for w in caught)
        assert CANARY not in (handler.recorder.last_failure or "")

    def test_a_fifo_with_no_reader_is_refused_at_construction(self, tmp_path):
        """record_to= a FIFO nobody reads: OSError ENXIO at once, never a handler that hangs.

        The construction runs in a thread under a bounded wait; a blocked one is
        released by opening the FIFO's read end, and the test fails.
        """
        fifo = tmp_path / "runs.fifo"
        os.mkfifo(fifo)
        done: list[object] = []

        def construct() -> None:
            try:
                done.append(CitationCallbackHandler(record_to=fifo))
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

    def test_rows_after_the_folder_is_deleted_are_counted_failures(self, tmp_path):
        """A run recorded after its folder was deleted is a counted failure, not a lost row
        counted as recorded; with the folder back, the next run is written again."""
        folder = tmp_path / "recorded"
        folder.mkdir()
        handler = CitationCallbackHandler(record_to=folder / "runs.jsonl")
        chain = rag_chain(FakeListChatModel(responses=["Filed [1]."] * 3))
        chain.invoke({"question": "When?"}, config={"callbacks": [handler]})
        shutil.rmtree(folder)
        with pytest.warns(RecordingWarning, match="deleted"):
            chain.invoke({"question": "When?"}, config={"callbacks": [handler]})
        assert (1, 1) == (handler.recorder.recorded, handler.recorder.failures)
        folder.mkdir()
        chain.invoke({"question": "When?"}, config={"callbacks": [handler]})
        assert 1 == len(rows((folder / "runs.jsonl").read_text()))
        assert (2, 1) == (handler.recorder.recorded, handler.recorder.failures)
