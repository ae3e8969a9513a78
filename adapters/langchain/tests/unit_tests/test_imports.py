"""The import surface of langchain_citemark is pinned."""

import langchain_citemark

EXPECTED = [
    "CITED_ANSWER_PROMPT",
    "CitationCallbackHandler",
    "CitationOutputParser",
    "CitationReport",
    "CitedAnswerChain",
    "CitedAnswerInput",
    "LangChainChat",
    "create_cited_answer_chain",
    "documents_to_sources",
    "format_documents",
    "make_citation_evaluator",
    "parse_provider_message",
]


class TestImports:
    def test_all(self):
        """__all__ lists exactly the pinned public names."""
        assert EXPECTED == langchain_citemark.__all__

    def test_every_name_resolves(self):
        """Every name in __all__ is importable from the package."""
        for name in EXPECTED:
            assert getattr(langchain_citemark, name) is not None
