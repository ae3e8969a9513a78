"""The import surface of langchain_citemark is pinned."""

import langchain_citemark

EXPECTED = [
    "CITED_ANSWER_PROMPT",
    "STRUCTURED_CITATION_PROMPT",
    "AgentCitationReport",
    "CitationCallbackHandler",
    "CitationMiddleware",
    "CitationOutputParser",
    "CitationReport",
    "CitedAnswerChain",
    "CitedAnswerInput",
    "LangChainChat",
    "StructuredCitationChecker",
    "acitations_valid_evaluator",
    "citation_feedback",
    "citations_valid_evaluator",
    "create_cited_answer_chain",
    "create_structured_citation_chain",
    "documents_to_sources",
    "format_documents",
    "format_documents_with_ids",
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
