"""The public surface of citemark and its adapters."""

from __future__ import annotations

import importlib
import subprocess
from pathlib import Path

import pytest

import citemark

ROOT = Path(__file__).resolve().parent.parent


class TestPublicNames:
    def test_all_matches_public_namespace(self):
        """citemark.__all__ lists exactly the public names the package exposes.

        Names whose modules load on first use are bound once read, so every name of
        ``__all__`` is read first; then no other public name may be bound.
        """
        for name in citemark.__all__:
            getattr(citemark, name)
        public = {
            name
            for name in vars(citemark)
            if not name.startswith("_") and not isinstance(getattr(citemark, name), type(citemark))
        }
        assert sorted(public) == sorted(citemark.__all__)

    def test_public_classes_report_the_package(self):
        """Public classes print as citemark.X, not as a private module path."""
        for name in citemark.__all__:
            obj = getattr(citemark, name)
            if isinstance(obj, type):
                assert "citemark" == obj.__module__, name


class TestDistributions:
    def test_adapters_import(self):
        """The three distributions install and import."""
        for module in (
            "langchain_citemark",
            "llama_index.postprocessor.citemark",
            "llama_index.evaluation.citemark",
        ):
            importlib.import_module(module)

    def test_namespace_folders_have_no_init(self):
        """llama_index/ and its type folders stay implicit namespace packages."""
        base = ROOT / "adapters" / "llama-index" / "llama_index"
        assert not (base / "__init__.py").exists()
        for folder in base.iterdir():
            if folder.is_dir() and folder.name != "__pycache__":
                assert not (folder / "__init__.py").exists(), folder

    def test_every_distribution_ships_py_typed(self):
        """Each package directory carries a py.typed marker."""
        for package in (
            ROOT / "src" / "citemark",
            ROOT / "adapters" / "langchain" / "langchain_citemark",
            ROOT / "adapters" / "llama-index" / "llama_index" / "postprocessor" / "citemark",
            ROOT / "adapters" / "llama-index" / "llama_index" / "evaluation" / "citemark",
        ):
            assert (package / "py.typed").is_file(), package


class TestRepository:
    def test_results_directories_are_ignored(self):
        """Reports under results/ are git-ignored, the precondition of additive schema fields."""
        probe = "results/report.json"
        completed = subprocess.run(
            ["git", "check-ignore", "--no-index", "-q", probe], cwd=ROOT, check=False
        )
        assert 0 == completed.returncode


class TestNarrowTopLevel:
    def test_moved_names_still_import_from_the_top_level_for_one_release(self):
        """Each 0.1 top-level name that moved is the same object as in its new module."""
        for name, home in citemark._MOVED.items():
            module = importlib.import_module(home)
            assert getattr(citemark, name) is getattr(module, name), name
            assert name in module.__all__, name
            assert name not in citemark.__all__, name

    def test_the_module_docstring_lists_every_deprecated_name(self):
        """A reader of help(citemark) sees each deprecated name and where it went."""
        for name in citemark._MOVED:
            assert f"``{name}``" in citemark.__doc__, name

    def test_the_top_level_names_are_these(self):
        """The public API: the names 0.2 had, less those moved under the deprecation rule."""
        assert sorted(citemark.__all__) == [
            "BM25Retriever",
            "BlankQueryError",
            "CalibrationError",
            "ChatConfigError",
            "ChatError",
            "ChatModel",
            "Citation",
            "CitationScore",
            "CitationScorer",
            "CitedAnswer",
            "CitemarkError",
            "Completion",
            "DEFAULT_JUDGE_PROMPT",
            "DEFAULT_REWRITE_PROMPT",
            "DEFAULT_SYNTHESIS_PROMPT",
            "DocumentReader",
            "FaithfulnessJudge",
            "FaithfulnessVerdict",
            "FileReader",
            "JudgeError",
            "LabelSetError",
            "MappingReader",
            "MarkerOccurrence",
            "MarkerOutOfRangeError",
            "MaskedSpan",
            "MissingExtraError",
            "NoRowsError",
            "NoSourcesError",
            "OpenAIChat",
            "QueryRewriteError",
            "QueryRewriter",
            "QuoteNotInSourceError",
            "RedactingChat",
            "RedactionReport",
            "ScoreRow",
            "Source",
            "StreamingResolver",
            "StrictJSONError",
            "StructuredAnswerError",
            "StructuredCitation",
            "StructuredCitedAnswer",
            "StructuredFindings",
            "SynthesisError",
            "Synthesizer",
            "TruncatedAnswerError",
            "UnrecognizedCitationError",
            "UnrecognizedToken",
            "Verification",
            "check_structured",
            "find_unrecognized",
            "indent_block",
            "locate_span",
            "masked_spans",
            "parse_markers",
            "recover_numbering",
            "render_prompt",
            "render_sources",
            "resolve",
            "resolve_structured",
            "verify_citation",
        ]

    def test_at_most_45_top_level_names_besides_errors(self):
        """The top level stays narrow; the rest lives in the public domain modules."""
        names = [name for name in citemark.__all__ if not name.endswith("Error")]
        assert len(names) <= 45

    def test_an_unknown_name_is_still_an_attribute_error(self):
        """The deprecation hook serves only moved names."""
        with pytest.raises(AttributeError):
            _ = citemark.no_such_name
