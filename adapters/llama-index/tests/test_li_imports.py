"""The import surface of the three llama-index-citemark leaf packages is pinned."""

import importlib
from pathlib import Path

import pytest

EXPECTED = {
    "llama_index.postprocessor.citemark": [
        "CITATION_KEY",
        "CITATION_QA_TEMPLATE",
        "CITATION_REFINE_TEMPLATE",
        "CitationNode",
        "CitationPostprocessor",
        "LlamaIndexChat",
        "nodes_to_sources",
        "number_nodes",
    ],
    "llama_index.query_engine.citemark": [
        "CitationRecordingHandler",
        "CitedAsyncStreamingResponse",
        "CitedQueryEngine",
        "CitedResponse",
        "CitedStreamingResponse",
        "StructuredCitedResponse",
        "citable_documents",
        "parse_citation_blocks",
        "resolve_response",
        "resolve_structured_nodes",
        "resolve_structured_response",
        "validate_stream",
    ],
    "llama_index.evaluation.citemark": [
        "CitationEvaluator",
        "CitemarkEvaluationResult",
        "StrictFaithfulnessEvaluator",
    ],
    "llama_index.postprocessor.citemark.testing": ["Reply", "ScriptedLLM"],
}
ADAPTER = Path(__file__).resolve().parents[1]


class TestImports:
    @pytest.mark.parametrize("module", sorted(EXPECTED))
    def test_all(self, module):
        """__all__ lists exactly the pinned public names."""
        assert EXPECTED[module] == importlib.import_module(module).__all__

    @pytest.mark.parametrize("module", sorted(EXPECTED))
    def test_every_name_resolves(self, module):
        """Every pinned name is importable from its module."""
        imported = importlib.import_module(module)
        for name in EXPECTED[module]:
            assert getattr(imported, name) is not None

    def test_no_init_above_the_leaves(self):
        """Only the leaves are regular packages: llama_index/ and llama_index/<type>/ are not."""
        above = [ADAPTER / "llama_index", *sorted((ADAPTER / "llama_index").iterdir())]
        assert [] == [path for path in above if (path / "__init__.py").exists()]
        leaves = sorted(
            path.parent.relative_to(ADAPTER).as_posix()
            for path in ADAPTER.glob("llama_index/*/*/__init__.py")
        )
        assert [
            "llama_index/evaluation/citemark",
            "llama_index/postprocessor/citemark",
            "llama_index/query_engine/citemark",
        ] == leaves

    def test_leaves_are_typed(self):
        """Each leaf ships py.typed."""
        assert all(
            (ADAPTER / leaf / "py.typed").exists()
            for leaf in (
                "llama_index/evaluation/citemark",
                "llama_index/postprocessor/citemark",
                "llama_index/query_engine/citemark",
            )
        )

    def test_the_namespace_is_shared_with_llama_index_core(self):
        """llama_index stays a namespace package that still holds llama_index.core."""
        import llama_index
        import llama_index.core

        assert llama_index.__file__ is None
        assert llama_index.core.__file__ is not None
