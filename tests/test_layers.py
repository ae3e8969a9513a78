"""The core's layers (SPEC §2), kept by a test: imports point only downwards."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "src" / "citemark"
ADAPTERS = ROOT / "adapters"

# Bottom to top, one folder per layer (each folder's ``__init__`` says what it owns and
# may import). A module may import its own layer and those below, never above. Keys are
# the first component under citemark; the public modules share the top layer.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("contract", frozenset({"_contract", "_public"})),
    ("markers", frozenset({"_markers"})),
    ("sources", frozenset({"_sources"})),
    ("model side", frozenset({"_model"})),
    ("judging", frozenset({"_judging"})),
    ("pipelines", frozenset({"_pipelines"})),
    (
        "public surface",
        frozenset(
            {
                "__init__",
                "__main__",
                "calibration",
                "diff",
                "echo",
                "evaluation",
                "otel",
                "providers",
                "pytest_plugin",
                "ray",
                "replay",
                "reports",
                "syntax",
                "testing",
                "text",
                "verifiers",
            }
        ),
    ),
)
# The private modules that may stay at the top of the tree, beside the public faces.
TOP_LEVEL_PRIVATE = frozenset({"_public"})
LEVEL = {unit: level for level, (_, units) in enumerate(LAYERS) for unit in units}


def unit_of(module: str) -> str:
    """The layer unit of a dotted citemark module name: its first component."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports_of(path: Path) -> set[str]:
    """Every citemark module a file imports, type-checking imports included."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found.update(n for n in names if n == "citemark" or n.startswith("citemark."))
    return found


def core_modules() -> dict[str, set[str]]:
    graph = {}
    for path in CORE.rglob("*.py"):
        parts = list(path.relative_to(CORE.parent).with_suffix("").parts)
        graph[".".join(parts)] = imports_of(path)
    return graph


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Each import from a lower layer to a higher one, as ``importer -> imported``."""
    bad = []
    for module, deps in sorted(graph.items()):
        here = LEVEL[unit_of(module)]
        bad.extend(f"{module} -> {dep}" for dep in sorted(deps) if LEVEL[unit_of(dep)] > here)
    return bad


def module_graph() -> dict[str, set[str]]:
    """Each core module (a package by its own name) and the core modules importing it runs.

    ``from P import name`` runs ``P`` and, where ``name`` is a submodule, ``P.name``;
    ``import P.M`` runs ``P.M``; and running any module first runs each package above
    it. Imports under ``TYPE_CHECKING`` count: a type checker follows them too.
    """
    files = {}
    for path in CORE.rglob("*.py"):
        parts = list(path.relative_to(CORE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        files[".".join(parts)] = path
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        runs: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            for target in targets:
                parts = target.split(".")
                runs.update(
                    ".".join(parts[:i])
                    for i in range(2, len(parts) + 1)
                    if ".".join(parts[:i]) in files
                )
        graph[module] = runs - {module} - {m for m in runs if module.startswith(m + ".")}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: its strongly connected parts of two modules or more."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            part = []
            while True:
                member = stack.pop()
                part.append(member)
                if member == node:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


class TestLayers:
    def test_every_core_module_has_a_layer(self):
        """A new module is placed in a layer on purpose, never by default."""
        assert [] == sorted({unit_of(m) for m in core_modules()} - set(LEVEL))

    def test_no_core_module_imports_upwards(self):
        """The deterministic layers never import the model side, the CLI or the public views."""
        assert [] == upward(core_modules())

    def test_no_import_circles(self):
        """No module imports, even for types only, one that leads back to it."""
        assert [] == circles(module_graph())

    def test_the_circle_check_catches_a_circle(self):
        """Shown on a naive graph: sinks -> junit -> sinks is a circle."""
        graph = {"a.sinks": {"a.junit"}, "a.junit": {"a.sinks", "a.names"}, "a.names": set()}
        assert [["a.junit", "a.sinks"]] == circles(graph)

    def test_the_tree_shows_the_layers(self):
        """Every private module lives in its layer's folder; few stay at the top."""
        top = {p.stem for p in CORE.glob("_*.py") if p.stem not in {"__init__", "__main__"}}
        assert top == set(TOP_LEVEL_PRIVATE)
        folders = {p.name for p in CORE.iterdir() if p.is_dir() and p.name.startswith("_")}
        layered = {
            u for _, units in LAYERS for u in units if u.startswith("_") and not u.endswith("__")
        }
        assert folders - {"__pycache__"} == layered - TOP_LEVEL_PRIVATE
        for folder in folders - {"__pycache__"}:
            doc = ast.get_docstring(ast.parse((CORE / folder / "__init__.py").read_text()))
            assert doc is not None, folder
            assert "May import" in doc, folder

    def test_the_check_catches_an_upward_import(self):
        """Shown on a naive graph: markers importing the scorer is flagged."""
        graph = {
            "citemark._markers.grammar": {"citemark._judging.scorer.labels"},
            "citemark._judging.scorer.labels": set(),
        }
        assert ["citemark._markers.grammar -> citemark._judging.scorer.labels"] == upward(graph)

    def test_adapters_import_only_the_public_api(self, tmp_path):
        """No adapter module imports a private citemark._* name."""

        def private(path: Path) -> list[str]:
            return sorted(
                m for m in imports_of(path) if any(p.startswith("_") for p in m.split(".")[1:])
            )

        naive = tmp_path / "naive.py"
        naive.write_text(
            "from citemark import Source\nfrom citemark._judging.scorer.labels import RESOLVED\n"
        )
        assert ["citemark._judging.scorer.labels"] == private(naive), (
            "the check must see a private import"
        )
        offenders = {
            path.relative_to(ROOT).as_posix(): private(path)
            for path in ADAPTERS.rglob("*.py")
            if "tests" not in path.parts and private(path)
        }
        assert {} == offenders
