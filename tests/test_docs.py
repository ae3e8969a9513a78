"""Every Python example in the docs and in public docstrings runs and prints what it shows.

Examples follow pydantic's convention: a ```python fenced block, standalone, whose
printed output is written as ``#> `` comment lines directly after the ``print``.
The blocks come from README.md, docs/*.md and the docstrings of the public objects
in ``citemark.__all__`` (and of their public methods). Each runs with ``exec`` in a
fresh namespace from the repository root; its captured stdout must equal its
``#>`` lines, joined in order. A block with no ``#>`` lines must still run without
error, and print nothing.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import inspect
import io
import itertools
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

import citemark
import citemark.calibration
import citemark.echo
import citemark.evaluation
import citemark.providers
import citemark.reports
import citemark.syntax
import citemark.text
import langchain_citemark
import llama_index.evaluation.citemark
import llama_index.postprocessor.citemark
import llama_index.query_engine.citemark

# Every distribution whose public docstrings carry runnable examples.
PACKAGES = (
    citemark,
    citemark.calibration,
    citemark.echo,
    citemark.evaluation,
    citemark.providers,
    citemark.reports,
    citemark.syntax,
    citemark.text,
    langchain_citemark,
    llama_index.postprocessor.citemark,
    llama_index.query_engine.citemark,
    llama_index.evaluation.citemark,
)
ROOT = Path(__file__).resolve().parent.parent
MARKDOWN_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# A ```python fence, possibly indented (in a docstring or a list item), closed by a
# ``` fence at the same indentation.
FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```python[ \t]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
FENCE_OPENER = re.compile(r"^[ \t]*```python[ \t]*$", re.MULTILINE)
OUTPUT_LINE = re.compile(r"^[ \t]*#>(?: (?P<text>.*))?$")

# Docstring examples in src/ known to print something other than they show, by the
# documented object's name, with the reason. They are reported rather than fixed
# here; the xfail is strict, so a fixed docstring fails until its entry is removed.
KNOWN_WRONG: dict[str, str] = {}


@dataclass(frozen=True)
class Example:
    """One runnable block and where it was found."""

    where: str
    code: str
    name: str = ""

    def expected_output(self) -> list[str]:
        """The ``#>`` lines of the block, in order, without their prefix."""
        lines = []
        for line in self.code.splitlines():
            m = OUTPUT_LINE.match(line)
            if m is not None:
                lines.append((m.group("text") or "").rstrip())
        return lines


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def markdown_examples() -> list[Example]:
    """Every ```python block of README.md and docs/*.md."""
    found = []
    for path in MARKDOWN_FILES:
        text = path.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            where = f"{_relative(path)}:{_line_of(text, m.start())}"
            found.append(Example(where, textwrap.dedent(m.group("body"))))
    return found


def documented_objects() -> list[tuple[str, object]]:
    """The public objects of each package, and the public methods their classes define."""
    objects: list[tuple[str, object]] = []
    for package, name in ((p, n) for p in PACKAGES for n in p.__all__):
        obj = getattr(package, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        objects.append((name, obj))
        if inspect.isclass(obj):
            for member_name, member in vars(obj).items():
                if member_name.startswith("_"):
                    continue
                func = member.fget if isinstance(member, property) else member
                func = getattr(func, "__func__", func)
                if inspect.isfunction(func) and func.__qualname__.startswith(f"{obj.__name__}."):
                    objects.append((f"{name}.{member_name}", func))
    return objects


def _definitions() -> dict[tuple[str, str], tuple[Path, ast.stmt]]:
    """Map (qualname, docstring) to the file and docstring node that define it.

    citemark rewrites ``__module__`` of its public names to ``"citemark"``, so
    ``inspect`` cannot find their source; the package's modules are parsed instead.
    """
    found: dict[tuple[str, str], tuple[Path, ast.stmt]] = {}

    def visit(path: Path, body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node, clean=False)
                if doc is not None:
                    found[(prefix + node.name, doc)] = (path, node.body[0])
                if isinstance(node, ast.ClassDef):
                    visit(path, node.body, f"{prefix}{node.name}.")

    for package in PACKAGES:
        for path in sorted(Path(package.__file__).parent.rglob("*.py")):
            visit(path, ast.parse(path.read_text(encoding="utf-8")).body, "")
    return found


def docstring_examples() -> list[Example]:
    """Every ```python block in the docstrings of the documented objects."""
    definitions = _definitions()
    found = []
    for name, obj in documented_objects():
        doc = obj.__doc__ or ""
        blocks = list(FENCE.finditer(doc))
        if not blocks:
            continue
        path, node = definitions[(obj.__qualname__, doc)]
        lines = path.read_text(encoding="utf-8").splitlines()
        docstring_lines = range(node.lineno - 1, node.end_lineno or node.lineno)
        openers = [i + 1 for i in docstring_lines if FENCE_OPENER.match(lines[i])]
        for line, m in zip(openers, blocks, strict=True):
            where = f"{_relative(path)}:{line} ({name})"
            found.append(Example(where, textwrap.dedent(m.group("body")), name))
    return found


def module_examples() -> list[Example]:
    """Every ```python block in the docstring of each documented package or public module."""
    found = []
    for package in PACKAGES:
        doc = package.__doc__ or ""
        path = Path(package.__file__)
        lines = path.read_text(encoding="utf-8").splitlines()
        node = ast.parse("\n".join(lines)).body[0]
        docstring_lines = range(node.lineno - 1, node.end_lineno or node.lineno)
        openers = [i + 1 for i in docstring_lines if FENCE_OPENER.match(lines[i])]
        for line, m in zip(openers, FENCE.finditer(doc), strict=True):
            where = f"{_relative(path)}:{line} ({package.__name__})"
            found.append(Example(where, textwrap.dedent(m.group("body")), package.__name__))
    return found


def _params(examples: list[Example]) -> list[object]:
    params = []
    for example in examples:
        marks = []
        if example.name in KNOWN_WRONG:
            marks.append(pytest.mark.xfail(reason=KNOWN_WRONG[example.name], strict=True))
        params.append(pytest.param(example, id=example.where, marks=marks))
    return params


def run_example(example: Example) -> list[str]:
    """Run the block in a fresh namespace and return its printed lines."""
    out = io.StringIO()
    namespace = {"__name__": "__docs_example__"}
    with contextlib.redirect_stdout(out):
        exec(compile(example.code, example.where, "exec", dont_inherit=True), namespace)  # noqa: S102
    return [line.rstrip() for line in out.getvalue().splitlines()]


class TestMarkdownExamples:
    @pytest.mark.parametrize("example", _params(markdown_examples()))
    def test_example_prints_what_it_shows(self, example, monkeypatch):
        """A ```python block in README.md or docs/ runs and prints exactly its #> lines."""
        monkeypatch.chdir(ROOT)
        assert example.expected_output() == run_example(example)

    def test_every_python_fence_is_collected(self):
        """Each ```python opener in a Markdown file yields one example, so none is skipped."""
        for path in MARKDOWN_FILES:
            text = path.read_text(encoding="utf-8")
            where = _relative(path)
            collected = [e for e in markdown_examples() if e.where.startswith(f"{where}:")]
            assert len(FENCE_OPENER.findall(text)) == len(collected), where


class TestDocstringExamples:
    @pytest.mark.parametrize("example", _params(docstring_examples() + module_examples()))
    def test_example_prints_what_it_shows(self, example, monkeypatch):
        """A ```python block in a public docstring runs and prints exactly its #> lines."""
        monkeypatch.chdir(ROOT)
        assert example.expected_output() == run_example(example)

    def test_every_example_section_is_collected(self):
        """Each docstring with an Example: section yields at least one runnable block."""
        with_section = {
            name for name, obj in documented_objects() if "Example:" in (obj.__doc__ or "")
        }
        collected = {e.name for e in docstring_examples()}
        assert with_section <= collected

    def test_known_wrong_entries_still_exist(self):
        """Every known-wrong entry names an object whose docstring example is still collected."""
        names = {e.name for e in docstring_examples()}
        assert set(KNOWN_WRONG) <= names


def _attribute_docstring(name: str) -> str | None:
    """The string literal right after ``name = ...`` in the module that defines it.

    Constants cannot carry ``__doc__``; like Sphinx and mkdocstrings, citemark
    documents them with a string statement directly after the assignment. The
    defining module is found from the ``from citemark._x import name`` line in
    citemark/__init__.py.
    """
    package = ast.parse(Path(citemark.__file__).read_text(encoding="utf-8"))
    modules = [
        node.module
        for node in ast.walk(package)
        if isinstance(node, ast.ImportFrom)
        and node.module is not None
        and any(alias.name == name for alias in node.names)
    ]
    for module in modules:
        spec = importlib.util.find_spec(module)
        if spec is None or spec.origin is None:
            continue
        path = Path(spec.origin)
        body = ast.parse(path.read_text(encoding="utf-8")).body
        for node, following in itertools.pairwise(body):
            targets = (
                node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            )
            if not any(isinstance(t, ast.Name) and t.id == name for t in targets):
                continue
            if (
                isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                return following.value.value
    return None


class TestPublicDocstrings:
    @pytest.mark.parametrize("name", sorted(citemark.__all__))
    def test_public_name_has_a_docstring(self, name):
        """Every name in citemark.__all__ carries its own non-empty docstring."""
        obj = getattr(citemark, name)
        if inspect.isclass(obj):
            doc = vars(obj).get("__doc__")
        elif inspect.isfunction(obj):
            doc = obj.__doc__
        else:
            doc = _attribute_docstring(name)
        assert doc is not None
        assert doc.strip()
