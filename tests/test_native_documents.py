"""LangChain Document dicts as a row's sources: what a chain returns, checked as it is.

A chain built on LangChain's guides returns ``{"context": [Document, ...], "answer": ...}``;
logged with ``Document.model_dump()`` its sources are ``page_content``/``metadata``/``id``
objects, which ``Source`` alone refuses. They are read with the same rule every ``--from``
reader uses for documents.
"""

from __future__ import annotations

import json
import subprocess
import sys
from operator import itemgetter
from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore
from pydantic import ValidationError

from citemark import Source

ROOT = Path(__file__).resolve().parent.parent
TEXTS = {
    "lion#0": "Lions live in prides and hunt mostly at night.",
    "cheetah#0": "The cheetah is the fastest land animal, reaching 93 to 104 km/h.",
}


def chain_outputs(answers: list[str]) -> list[dict]:
    """Run a real retrieval chain; return its outputs with the Documents dumped as JSON."""
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents(
        [
            Document(text, id=key, metadata={"source": f"https://example.org/{key}"})
            for key, text in TEXTS.items()
        ]
    )
    retriever = store.as_retriever(search_kwargs={"k": 2})
    prompt = ChatPromptTemplate.from_template("{context}\n\nQ: {question}")

    def numbered(docs: list[Document]) -> str:
        return "\n".join(f"[{i}] {d.page_content}" for i, d in enumerate(docs, start=1))

    chain = RunnablePassthrough.assign(context=itemgetter("question") | retriever).assign(
        answer=(lambda x: {"context": numbered(x["context"]), "question": x["question"]})
        | prompt
        | FakeListChatModel(responses=answers)
        | StrOutputParser()
    )
    rows = []
    for i, _ in enumerate(answers):
        out = chain.invoke({"question": "How fast is a cheetah?"})
        rows.append(
            {
                "id": f"q{i}",
                "question": out["question"],
                "answer": out["answer"],
                "sources": [d.model_dump() for d in out["context"]],
            }
        )
    return rows


def check(tmp_path: Path, name: str, rows: list[dict]) -> list[dict]:
    path = tmp_path / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / name
    done = subprocess.run(
        [sys.executable, "-m", "citemark", "check", str(path), "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert 0 == done.returncode, done.stderr
    records = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    for record in records:
        record.pop("run_id")
    return records


def test_document_dicts_are_read_as_the_sources_own_fields(tmp_path):
    rows = chain_outputs(["Fast [1].", "Fast [7]."])
    with pytest.raises(ValidationError):  # the naive reading: a Document is not a Source
        Source.model_validate(rows[0]["sources"][0])
    found = check(tmp_path, "documents", rows)
    assert ["unassessed", "failed"] == [r["outcome"] for r in found]
    assert ["fabricated_citation"] == found[1]["details"]["deterministic_failures"]
    native = [
        {
            **row,
            "sources": [
                {
                    "text": d["page_content"],
                    "doc_id": d["id"],
                    "uri": d["metadata"]["source"],
                    "metadata": d["metadata"],
                }
                for d in row["sources"]
            ],
        }
        for row in rows
    ]
    assert check(tmp_path, "native", native) == found


def test_a_document_without_page_content_text_is_malformed(tmp_path):
    good, bad = chain_outputs(["Fast [1].", "Fast [2]."])
    bad["sources"][0]["page_content"] = 7
    found = check(tmp_path, "bad", [good, bad])
    assert "malformed" == found[1]["outcome"]
    assert found[1]["error"].startswith("source 1 is a LangChain Document that cannot be read")
