"""One vocabulary of un-assessed reasons: the core's codes, used verbatim by both adapters."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from langchain_core.documents import Document

from citemark import CitationScorer
from citemark.evaluation import (
    ADAPTER_REASONS,
    REASONS,
    RECORDED_REASONS,
    SCORER_REASONS,
    explain,
)
from langchain_citemark import citations_valid_evaluator, make_citation_evaluator
from llama_index.evaluation.citemark import CitationEvaluator

ROOT = Path(__file__).resolve().parent.parent
ADAPTERS = ROOT / "adapters"


def langchain_code(answer: object, documents: list[Document] | None) -> str | None:
    outputs: dict[str, object] = {"answer": answer}
    if documents is not None:
        outputs["documents"] = documents
    result = make_citation_evaluator()(SimpleNamespace(inputs={}, outputs=outputs), None)
    match = re.match(r"unassessed \(([a-z_]+)\): ", result["comment"])
    return match.group(1) if match else None


def langsmith_code(answer: object, documents: list[Document] | None) -> str | None:
    outputs: dict[str, object] = {"answer": answer}
    if documents is not None:
        outputs["documents"] = documents
    found = citations_valid_evaluator()(SimpleNamespace(inputs={}, outputs=outputs), None)
    match = re.fullmatch(r"not assessed: ([a-z_]+)", found["results"][0]["comment"])
    return match.group(1) if match else None


def llama_index_code(answer: str | None, contexts: list[str]) -> str | None:
    result = CitationEvaluator().evaluate(query="q", response=answer, contexts=contexts)
    return result.invalid_reason


class TestOneVocabulary:
    @pytest.mark.parametrize(
        ("answer", "texts", "code"),
        [
            ("Fees rise [1].", [], "empty_context"),
            ("   ", ["Fees rise."], "no_answer"),
            ("\u200b", ["Fees rise."], "no_answer"),
            ("Fees rise.", ["Fees rise."], "no_resolved_citations"),
        ],
    )
    def test_both_adapters_give_the_same_code_for_the_same_input(self, answer, texts, code):
        """Both LangChain evaluators and the LlamaIndex evaluator name one code per input."""
        documents = [Document(page_content=text) for text in texts]
        assert (code, code, code) == (
            langchain_code(answer, documents),
            langsmith_code(answer, documents),
            llama_index_code(answer, texts),
        )

    def test_every_code_has_a_sentence_and_an_explanation(self):
        """Each code maps to a sentence, and explain() writes it the one way."""
        assert set(REASONS) == set(SCORER_REASONS) | set(ADAPTER_REASONS) | set(RECORDED_REASONS)
        for code, sentence in REASONS.items():
            assert f"Not assessed: {sentence}." == explain(code)

    def test_the_scorer_reasons_are_the_core_vocabulary(self):
        """CitationScorer.REASONS is the core's scorer vocabulary, not a copy of it."""
        assert CitationScorer.REASONS is SCORER_REASONS

    def test_adapters_define_no_reason_sentences_of_their_own(self):
        """No adapter module holds a code-to-sentence table: they all read the core's."""
        naive = {"no_answer": "the response has no answer text"}
        pattern = re.compile(r'"([a-z_]+)":\s*"[a-z][^"]{10,}"')
        # The check finds such a table where one exists (shown on a naive copy).
        assert pattern.search(repr(naive).replace("'", '"'))
        for path in ADAPTERS.rglob("*.py"):
            if "tests" in path.parts:
                continue
            for match in pattern.finditer(path.read_text(encoding="utf-8")):
                assert match.group(1) not in REASONS, (path.name, match.group(1))
