"""Batch evaluation with BatchEvalRunner: citation checks and a strict judge, offline.

CitationEvaluator checks each response's [n] markers against its source nodes
(``passing`` is deterministic) and records an advisory judge's opinion in
``feedback``; StrictFaithfulnessEvaluator is LlamaIndex's faithfulness check with a
judge whose reply must be a strict JSON verdict. A malformed judge reply comes back
as ``invalid_result=True``, and no row stops the batch. Both models are scripted
CustomLLMs, one answering and one judging.
"""

from __future__ import annotations

import asyncio
import json
import re
import warnings
from collections import Counter

from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.evaluation import BatchEvalRunner
from llama_index.core.schema import TextNode

from llama_index.evaluation.citemark import CitationEvaluator, StrictFaithfulnessEvaluator
from llama_index.postprocessor.citemark import CITATION_QA_TEMPLATE, CitationPostprocessor
from llama_index.postprocessor.citemark.testing import ScriptedLLM

# llama-index-core 0.14.25's BatchEvalRunner warns about its own deprecated helper.
warnings.filterwarnings("ignore", message="asyncio_module", category=DeprecationWarning)

# Fixed node ids: mock embeddings tie, and ties are broken by node id, so [1] is
# the Apache node and [2] the BSD node in every prompt.
nodes = [
    TextNode(
        id_="a-apache", text="Patent licenses terminate as of the date such litigation is filed."
    ),
    TextNode(
        id_="b-bsd", text="Redistributions of source code must retain the above copyright notice."
    ),
]
index = VectorStoreIndex(nodes, embed_model=MockEmbedding(embed_dim=8))
QUESTIONS = [f"Question {k}: when does the patent license end?" for k in range(6)]
GRADED = json.dumps(
    {
        "score": 3,
        "explanation": "The claim is stated in the block it cites.",
        "verdicts": [
            {"occurrence": 1, "outcome": "supported", "context_span": "such litigation is filed"}
        ],
    }
)
FAITHFUL = json.dumps({"faithful": True, "unsupported_claims": [], "reasoning": "Stated in [1]."})


def row(prompt: str) -> int:
    return int(re.search(r"Question (\d+):", prompt).group(1))


def answer(prompt: str) -> str:
    """Row 4 cites a source that was never shown; the others cite [1]."""
    return "It ends on filing [5]." if row(prompt) == 4 else "It ends when litigation is filed [1]."


def judge(prompt: str) -> str:
    """The citation judge: row 2's reply is prose, not the JSON the scorer requires."""
    return "YES, all good." if row(prompt) == 2 else GRADED


def faithfulness_judge(prompt: str) -> str:
    """The faithfulness judge: row 3 answers in prose, which is not a verdict."""
    if row(prompt) == 3:
        return "No. The eyes of the reader may deceive, but the answer is fine."
    return FAITHFUL


engine = index.as_query_engine(
    llm=ScriptedLLM(replies=[answer] * len(QUESTIONS)),
    similarity_top_k=2,
    node_postprocessors=[CitationPostprocessor()],
    text_qa_template=CITATION_QA_TEMPLATE,
)
runner = BatchEvalRunner(
    {
        "citations": CitationEvaluator(judge=ScriptedLLM(replies=[judge] * len(QUESTIONS))),
        "faithfulness": StrictFaithfulnessEvaluator(
            llm=ScriptedLLM(replies=[faithfulness_judge] * len(QUESTIONS))
        ),
    },
    workers=4,
)
results = asyncio.run(runner.aevaluate_queries(engine, queries=QUESTIONS))

for name, rows in results.items():
    print(name)
    for result in rows:
        verdict = (
            f"invalid ({result.invalid_reason})"
            if result.invalid_result
            else f"passing={result.passing}"
        )
        print(f"  {result.query[:10]}: {verdict}")
        if name == "citations" and result.feedback and not result.invalid_result:
            print(f"    {result.feedback}")
    counts = Counter("invalid" if r.invalid_result else str(r.passing) for r in rows)
    print(f"  {len(rows)} rows back: {dict(sorted(counts.items()))}")
