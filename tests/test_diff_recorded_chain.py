"""Two days of a recorded LangChain chain, diffed row by row (issue 35, item 2).

A real LCEL retrieval chain (an in-memory vector store, a prompt, LangChain's own
fake chat model, ``StrOutputParser``) runs the same three questions on two "days"
with ``CitationCallbackHandler(record_to=...)`` recording each run; on the second day
the model cites a source it was not given for one question. Each day's file is
checked by ``citemark check`` and the two outputs are compared by ``citemark diff``.
Every recorded row's id is its LangChain run id, new every run and marked
``"id_scope": "run"``: the old code matched by id first and refused the pair ("share
no row"); the rows are now matched by question.
"""

from __future__ import annotations

import json
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import pytest

pytest.importorskip("langchain_citemark")

from fake_openai import run_cli
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_citemark import CitationCallbackHandler

if TYPE_CHECKING:
    from pathlib import Path

TEXTS = {
    "fees": "The late fee is 5% of the unpaid balance.",
    "members": "Members of the credit union pay no late fee.",
    "disputes": "A dispute must be raised within sixty days of the statement.",
}
QUESTIONS = ("What is the late fee?", "Who pays no late fee?", "How long do disputes take?")
MONDAY = ("It is 5% [1].", "Members pay none [2].", "Sixty days [3].")
TUESDAY = ("It is 5% [1].", "Members pay none [7].", "Sixty days [3].")


def chain(replies: tuple[str, ...]) -> Any:
    """The LangChain guide's shape: retrieve, number the context, prompt, model, parse."""
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents([Document(text, id=name) for name, text in TEXTS.items()])
    prompt = ChatPromptTemplate.from_template("Cite as [n].\n{context}\n\nQuestion: {question}")

    def numbered(docs: list[Document]) -> str:
        return "\n".join(f"[{n}] {d.page_content}" for n, d in enumerate(docs, start=1))

    retriever = store.as_retriever(search_kwargs={"k": 3})
    steps = {
        "context": itemgetter("question") | retriever | numbered,
        "question": itemgetter("question"),
    }
    return steps | prompt | FakeListChatModel(responses=list(replies)) | StrOutputParser()


def recorded_day(tmp_path: Path, name: str, replies: tuple[str, ...]) -> Path:
    """One day: the chain runs every question, recorded; then ``citemark check`` of the file."""
    path = tmp_path / f"{name}.jsonl"
    handler = CitationCallbackHandler(record_to=path)
    day = chain(replies)
    for question in QUESTIONS:
        day.invoke({"question": question}, config={"callbacks": [handler]})
    handler.recorder.close()
    done = run_cli("check", str(path), "--out", str(tmp_path / name), "--quiet")
    assert done.returncode in (0, 1), done.stderr
    return tmp_path / name


def test_two_days_of_a_recorded_chain_diff_row_by_row(tmp_path):
    """Three rows compared by question; the row now citing [7] of 3 is a new violation."""
    monday = recorded_day(tmp_path, "monday", MONDAY)
    tuesday = recorded_day(tmp_path, "tuesday", TUESDAY)
    ids: list[set[str]] = []
    for run in (monday, tuesday):
        records = [json.loads(line) for line in (run / "rows.jsonl").read_text().splitlines()]
        # The recorder marks run ids as per-run ids; rows.jsonl keeps the mark.
        assert ["run"] * 3 == [record.get("id_scope") for record in records]
        ids.append({record["id"] for record in records})
    assert not ids[0] & ids[1]
    done = run_cli("diff", str(monday), str(tuesday))
    assert (0, "") == (done.returncode, done.stderr)
    lines = done.stdout.splitlines()
    assert "rows: 3 compared, 2 unchanged, 1 changed, 0 added, 0 removed" in lines
    assert any(line.startswith("matched by: id 0, question 3, line 0;") for line in lines)
    (changed,) = [line for line in lines if line.startswith("  ")]
    assert "(line 2):" in changed
    assert "new_violation" in changed
