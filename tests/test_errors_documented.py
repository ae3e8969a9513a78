"""docs/errors.md documents every citemark error, and draws the same tree as the source.

In the style of pydantic's ``test_error_codes``: the error classes are enumerated
from ``CitemarkError.__subclasses__()``, never listed by hand, so a new error
class fails here until it has a section in docs/errors.md and a place in the tree
drawn in the ``citemark._contract.errors`` module docstring.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import textwrap
from pathlib import Path

import pytest

import citemark
from citemark import ChatError, CitemarkError, SynthesisError
from citemark._contract import errors as _errors
from citemark.evaluation import CHAT_REASONS

ROOT = Path(__file__).resolve().parent.parent
ERRORS_PAGE = ROOT / "docs" / "errors.md"

# A Markdown heading whose whole text is one name, optionally in backticks.
HEADING = re.compile(r"^#{1,6}[ \t]+`?(?P<name>[A-Za-z_][A-Za-z0-9_]*)`?[ \t]*$", re.MULTILINE)
# A fenced block (any info string) whose first line is the root of the tree.
PAGE_TREE = re.compile(r"^```[a-z]*\n(?P<tree>CitemarkError\n.*?)^```$", re.MULTILINE | re.DOTALL)
# The indented literal block that follows "::" in the module docstring.
DOCSTRING_TREE = re.compile(r"::\n\n(?P<tree>(?:[ \t]+\S.*\n)+)")
# One drawn level: "├── ", "└── ", "│   " or four spaces.
LEVEL = 4


def import_all_modules() -> dict[str, str]:
    """Import every citemark module, so that every error class is defined.

    Returns the modules that failed to import, with the exception type: a module
    that cannot be imported fails its own test below instead of stopping collection.
    """
    failed = {}
    for module in pkgutil.walk_packages(citemark.__path__, prefix="citemark."):
        if module.name.rsplit(".", 1)[-1] == "__main__":
            continue
        try:
            importlib.import_module(module.name)
        except ImportError as exc:
            failed[module.name] = type(exc).__name__
    return failed


def error_classes() -> list[type[CitemarkError]]:
    """CitemarkError and all its subclasses, recursively, in definition-tree order."""
    import_all_modules()
    found: list[type[CitemarkError]] = []
    pending = [CitemarkError]
    while pending:
        cls = pending.pop(0)
        if cls not in found:
            found.append(cls)
            pending.extend(cls.__subclasses__())
    return found


def page_text() -> str:
    return ERRORS_PAGE.read_text(encoding="utf-8")


def page_tree() -> list[str]:
    """The lines of the tree block in docs/errors.md."""
    m = PAGE_TREE.search(page_text())
    assert m is not None, "docs/errors.md has no fenced block starting with CitemarkError"
    return [line.rstrip() for line in m.group("tree").splitlines()]


def docstring_tree() -> list[str]:
    """The lines of the tree drawn in the citemark._contract.errors module docstring."""
    m = DOCSTRING_TREE.search(_errors.__doc__ or "")
    assert m is not None, "the citemark._contract.errors docstring has no '::' tree block"
    return [line.rstrip() for line in textwrap.dedent(m.group("tree")).splitlines()]


def tree_parents(lines: list[str]) -> dict[str, str | None]:
    """Map each class drawn in the tree to the class drawn as its parent."""
    parents: dict[str, str | None] = {}
    stack: list[str] = []
    for line in lines:
        name_at = re.search(r"[A-Za-z]", line)
        assert name_at is not None, line
        depth = name_at.start() // LEVEL
        name = line[name_at.start() :].split()[0]
        del stack[depth:]
        parents[name] = stack[-1] if stack else None
        stack.append(name)
    return parents


class TestErrorsDocumented:
    def test_every_module_imports(self):
        """Every citemark module imports, so the walk below sees every error class."""
        assert {} == import_all_modules()

    @pytest.mark.parametrize("cls", error_classes(), ids=lambda cls: cls.__name__)
    def test_error_has_a_section(self, cls):
        """Every CitemarkError subclass has a heading of its own in docs/errors.md."""
        headings = {m.group("name") for m in HEADING.finditer(page_text())}
        assert cls.__name__ in headings

    def test_page_documents_no_unknown_error(self):
        """Every heading in docs/errors.md that names an error names a real error class."""
        known = {cls.__name__ for cls in error_classes()}
        named = {m.group("name") for m in HEADING.finditer(page_text())}
        assert set() == {name for name in named if name.endswith("Error")} - known


class TestErrorTree:
    def test_page_tree_equals_docstring_tree(self):
        """The tree block in docs/errors.md is the tree in the citemark._contract.errors docstring."""
        assert docstring_tree() == page_tree()

    def test_tree_draws_every_class_under_its_parent(self):
        """The drawn tree holds exactly the error classes, each under its real base class."""
        expected = {
            cls.__name__: (None if cls is CitemarkError else cls.__bases__[0].__name__)
            for cls in error_classes()
        }
        assert expected == tree_parents(docstring_tree())


def section(name: str) -> str:
    """The text of docs/errors.md's section headed ``name``, up to the next heading."""
    text = page_text()
    start = next(m.end() for m in HEADING.finditer(text) if m.group("name") == name)
    following = HEADING.search(text, start)
    return text[start : following.start() if following else len(text)]


def listed_codes(text: str, attribute: str) -> list[str]:
    """The codes listed for ``attribute`` in a Markdown bullet or a Google-style docstring.

    The list is what follows ``CHAT_REASONS``, up to the end of the sentence: every
    code in backticks, single (Markdown) or double (reStructuredText), in order.
    """
    # The attribute's entry: from its name to the next entry, bullet or docstring field.
    entry = re.search(
        rf"(?:^- `{attribute}`|^\s+{attribute}:)(?P<entry>.*?)(?=^- `|^\s+[a-z_]+: |\Z)",
        text,
        re.MULTILINE | re.DOTALL,
    )
    assert entry is not None, attribute
    listed = entry.group("entry").split("CHAT_REASONS", 1)[1].split(".", 1)[0]
    return re.findall(r"`{1,2}([a-z_]+)`{1,2}", listed)


class TestReasonCodesDocumented:
    """docs/errors.md and the ChatError docstring list exactly the reason table's codes."""

    def test_the_page_lists_every_chat_error_reason_in_the_table(self):
        """ChatError's `reason` bullet names CHAT_REASONS' codes, in the table's order."""
        assert list(CHAT_REASONS) == listed_codes(section("ChatError"), "reason")

    def test_the_docstring_lists_every_chat_error_reason_in_the_table(self):
        """ChatError's docstring names the same codes under its ``reason`` attribute."""
        assert list(CHAT_REASONS) == listed_codes(ChatError.__doc__ or "", "reason")

    def test_a_list_missing_a_code_is_caught(self):
        """The naive variant, the list before `deadline` and `reply_too_large`, fails the check."""
        stale = (
            "- `reason` (`str`): a stable code, one of `citemark.evaluation.CHAT_REASONS`:\n"
            "  `timeout`, `connect`, `http_status`, `protocol`, `transport`, `bad_envelope`,\n"
            "  `null_content`. Reports count failed calls per code.\n"
            "- `detail` (`str`): the fixed sentence, such as `x`.\n"
        )
        assert list(CHAT_REASONS) != listed_codes(stale, "reason")
        assert ["timeout", "connect"] == listed_codes(stale, "reason")[:2]


def test_every_rejection_reason_is_explained():
    """Each SynthesisError class's ``reason`` has its sentence in REJECTION_REASONS.

    Enumerated from the classes, so a new rejection cannot ship unexplained; the two
    structured-answer codes were missing from the table before (issue 23).
    """
    from citemark.evaluation import REJECTION_REASONS

    missing = sorted(
        {cls.reason for cls in error_classes() if issubclass(cls, SynthesisError)}
        - set(REJECTION_REASONS)
    )
    assert missing == []
