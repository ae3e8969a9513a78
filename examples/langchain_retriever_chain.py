"""A new LangChain chain with checkable citations: retriever | cited-answer chain.

Runs offline: BM25 over the bundled licenses stands in for your retriever, and a
fake chat model stands in for your LLM. Swap in your own retriever and model.
"""

from pathlib import Path

from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.runnables import RunnableLambda, RunnablePassthrough

from citemark import BM25Retriever, FileReader, MarkerOutOfRangeError, verify_citation
from langchain_citemark import create_cited_answer_chain

LICENSES = Path(__file__).resolve().parent / "data" / "licenses"
bm25 = BM25Retriever.from_directory(LICENSES, patterns=("*",))


def retrieve(question: str) -> list[Document]:
    """Any retriever works; this one returns Documents with source and start_index."""
    return [
        Document(s.text, metadata={"source": s.uri, "start_index": s.start})
        for s in bm25.retrieve(question, k=4)
    ]


llm = FakeListChatModel(
    responses=[
        "Patent licenses granted to you terminate as of the date the litigation is filed [3].",
        "They terminate immediately [7].",
    ]
)
chain = {
    "question": RunnablePassthrough(),
    "documents": RunnableLambda(retrieve),
} | create_cited_answer_chain(llm)

question = (
    "What happens to the Apache patent license if you sue claiming the Work infringes a patent?"
)
answer = chain.invoke(question)
print(answer.text)
for citation in answer.citations:
    check = verify_citation(citation, FileReader(LICENSES)).outcome
    print(f"[{citation.marker}] {citation.doc_id} {citation.start}-{citation.end} {check}")

try:
    chain.invoke(question)
except MarkerOutOfRangeError as exc:
    print(f"rejected: marker [{exc.marker}] of {exc.valid_count} sources")
