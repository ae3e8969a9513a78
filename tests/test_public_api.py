"""The public surface of citemark and its adapters."""

from __future__ import annotations

import importlib
import subprocess
from pathlib import Path

import citemark

ROOT = Path(__file__).resolve().parent.parent


class TestPublicNames:
    def test_all_matches_public_namespace(self):
        """citemark.__all__ lists exactly the public names the package exposes."""
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
