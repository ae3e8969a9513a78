r"""A row's human title: its id when people can read it, else its question, cut short.

Some formats give a row no id (DeepEval test cases without a ``name``, Ragas
samples), and traces give it an opaque one (a LangSmith run id is a UUID, an
OpenTelemetry trace id 32 hex digits, an MLflow trace id ``tr-`` and hex). Such a row
is titled by its question, whitespace collapsed, every control character escaped
(`citemark._pipelines.check.terminal.printable`), a lone surrogate written ``\ud800``, and cut
to `MAX_TITLE` characters; a row with neither a readable id nor a question is
``line N``. The terminal's list of failing rows, the page and JUnit's test names
all use `row_title`.
"""

from __future__ import annotations

import re
from typing import Final

from citemark._pipelines.check.terminal import printable

__all__ = ["MAX_TITLE", "has_readable_id", "is_opaque_id", "row_title"]

MAX_TITLE: Final = 80
"""The most characters a title holds, the ellipsis that ends a cut one included."""

# A UUID (any case, with or without hyphens), or 16+ hex digits after an optional
# short prefix such as MLflow's ``tr-``: ids made by a machine for one run.
_OPAQUE: Final = re.compile(
    r"(?:[A-Za-z]{1,8}[-_:])?(?:[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?"
    r"[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}|[0-9a-fA-F]{16,})"
)
_SPACE: Final = re.compile(r"\s+")
# A lone surrogate (JSON can carry one, UTF-8 cannot) is shown as its escape, ``\ud800``.
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def is_opaque_id(row_id: str) -> bool:
    """Whether an id is machine-made for one run (a UUID, a long hex trace or span id).

    Example:
        ```python
        from citemark._pipelines.check.titles import is_opaque_id

        print(is_opaque_id("tr-7d2c0a1b9e8f4a3b8c7d6e5f4a3b2c1d"), is_opaque_id("faq-12"))
        #> True False
        ```
    """
    return _OPAQUE.fullmatch(row_id.strip()) is not None


def has_readable_id(row_id: str | None, *, opaque: bool = False) -> bool:
    """Whether a row is titled by its id: it has one, not blank, not made for one run."""
    return row_id is not None and bool(row_id.strip()) and not opaque and not is_opaque_id(row_id)


def row_title(row_id: str | None, question: str, line: int, *, opaque: bool = False) -> str:
    """The row's title: a readable id, else the question cut short, else ``line N``.

    ``opaque`` says the reader or recorder marked the id as naming one run
    (``id_scope`` ``run``); an id that looks machine-made is treated the same.

    Example:
        ```python
        from citemark._pipelines.check.titles import row_title

        print(row_title(None, "  What does MPL-2.0 define   as a Larger Work?", 2))
        #> What does MPL-2.0 define as a Larger Work?
        print(row_title("faq-12", "When?", 3))
        #> faq-12
        ```
    """
    if row_id is not None and has_readable_id(row_id, opaque=opaque):
        return _cut(printable(row_id))
    words = _SPACE.sub(" ", question).strip()
    if words:
        return _cut(printable(words))
    return f"line {line}"


def _cut(text: str) -> str:
    text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text if len(text) <= MAX_TITLE else text[: MAX_TITLE - 1].rstrip() + "\u2026"
