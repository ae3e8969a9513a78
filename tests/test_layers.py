"""The core's layers (SPEC §2), kept by a test: imports point only downwards."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "src" / "citemark"
ADAPTERS = ROOT / "adapters"

# Bottom to top. A module may import its own layer and those below, never above.
# Keys are the first component under citemark (a subpackage is one unit).
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    (
        "models, errors",
        frozenset(
            {
                "_artifacts",
                "_errors",
                "_models",
                "_public",
                "_reasons",
                "_strictjson",
                "_sync",
                "_syntax",
                "_validation",
                "_words",
            }
        ),
    ),
    ("markers", frozenset({"_markers", "_md_blocks", "_md_fast", "_md_inline", "_nearmiss"})),
    (
        "render, resolve, verify",
        frozenset({"_providers", "_render", "_resolve", "_stream", "_structured", "_verify"}),
    ),
    ("chat", frozenset({"_chat", "_completion"})),
    (
        "model-side features",
        frozenset(
            {
                "_assertions",
                "_calibration",
                "_echo",
                "_judge",
                "_observe",
                "_redaction",
                "_replay",
                "_scorer",
                "_synthesis",
            }
        ),
    ),
    ("reports, retrieval", frozenset({"_recording", "_reports", "_retrieval"})),
    (
        "command line",
        frozenset(
            {
                "_check",
                "_cli",
                "_diff",
                "_formats",
                "_provider_rows",
                "_runs",
                "_scale",
                "_structured_rows",
            }
        ),
    ),
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
            }
        ),
    ),
)
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


class TestLayers:
    def test_every_core_module_has_a_layer(self):
        """A new module is placed in a layer on purpose, never by default."""
        assert [] == sorted({unit_of(m) for m in core_modules()} - set(LEVEL))

    def test_no_core_module_imports_upwards(self):
        """The deterministic layers never import the model side, the CLI or the public views."""
        assert [] == upward(core_modules())

    def test_the_check_catches_an_upward_import(self):
        """Shown on a naive graph: markers importing the scorer is flagged."""
        graph = {"citemark._markers": {"citemark._scorer.labels"}, "citemark._scorer.labels": set()}
        assert ["citemark._markers -> citemark._scorer.labels"] == upward(graph)

    def test_adapters_import_only_the_public_api(self, tmp_path):
        """No adapter module imports a private citemark._* name."""

        def private(path: Path) -> list[str]:
            return sorted(
                m for m in imports_of(path) if any(p.startswith("_") for p in m.split(".")[1:])
            )

        naive = tmp_path / "naive.py"
        naive.write_text(
            "from citemark import Source\nfrom citemark._scorer.labels import RESOLVED\n"
        )
        assert ["citemark._scorer.labels"] == private(naive), "the check must see a private import"
        offenders = {
            path.relative_to(ROOT).as_posix(): private(path)
            for path in ADAPTERS.rglob("*.py")
            if "tests" not in path.parts and private(path)
        }
        assert {} == offenders
