"""Adapter overhead: the cited-answer chain against the same chain with StrOutputParser.

Both chains render the same numbered sources, call the same fake chat model and
return its text; the cited chain also resolves the markers into a CitedAnswer.
Printed as a ratio over 2,000 invocations each (SPEC §7 target: <= 1.2).
"""

from __future__ import annotations

import time

from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.runnables import RunnableLambda

from citemark import render_prompt
from langchain_citemark import create_cited_answer_chain, documents_to_sources

N = 2_000
ANSWER = "The patent license terminates when litigation is filed [1], and notices stay [2]."
DOCS = [
    Document(
        "Patent licenses terminate as of the date such litigation is filed.",
        metadata={"source": "a", "start_index": 0},
    ),
    Document("You must retain all copyright notices.", metadata={"source": "b", "start_index": 0}),
]
INPUT = {"question": "When does the patent license end?", "documents": DOCS}


def baseline():
    prompt = RunnableLambda(
        lambda x: render_prompt(x["question"], documents_to_sources(x["documents"]))
    )
    return prompt | FakeListChatModel(responses=[ANSWER]) | StrOutputParser()


def timed(chain) -> float:
    chain.invoke(INPUT)  # warm up
    start = time.perf_counter()
    for _ in range(N):
        chain.invoke(INPUT)
    return time.perf_counter() - start


def main() -> None:
    cited = create_cited_answer_chain(FakeListChatModel(responses=[ANSWER]))
    base_times, cited_times = [], []
    for _ in range(3):  # interleaved, best of three each
        base_times.append(timed(baseline()))
        cited_times.append(timed(cited))
    base, ours = min(base_times), min(cited_times)
    print(
        f"LangChain: cited-answer chain {ours / N * 1e6:.0f} us/invoke, StrOutputParser chain "
        f"{base / N * 1e6:.0f} us/invoke over {N} invocations; ratio {ours / base:.2f} (target <= 1.2)"
    )


if __name__ == "__main__":
    main()
