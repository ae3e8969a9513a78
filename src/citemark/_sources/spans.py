"""Verification: re-read a cited span from its document and compare.

A citation carries the offsets and text of the source it was built from. Reading
the document again and slicing it at those offsets tells whether the citation still
points at what the model was shown. A reader finds the document by the citation's
``uri`` when it has one, else by its ``doc_id``.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from citemark._contract.models import Citation

if TYPE_CHECKING:
    import os
    from collections.abc import Mapping

__all__ = [
    "DocumentReader",
    "FileReader",
    "MappingReader",
    "Outcome",
    "Verification",
    "locate_span",
    "read_document",
    "verify_citation",
]

Outcome = Literal["verified", "mismatch", "drifted", "unreadable", "no_offsets"]


@runtime_checkable
class DocumentReader(Protocol):
    """Anything that returns a document's full text by key, or ``None``."""

    def read(self, key: str) -> str | None:
        """Return the document's text, or ``None`` when it cannot be read."""


class Verification(BaseModel):
    """The result of re-reading one citation from its document."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", use_attribute_docstrings=True, hide_input_in_errors=True
    )

    citation: Citation
    """The citation that was checked."""

    outcome: Outcome
    """``verified``: the span matches; ``mismatch``: the document holds other text at
    those offsets; ``drifted``: the offsets run past the end of the document;
    ``unreadable``: the document could not be read (or its path was refused);
    ``no_offsets``: the citation has no offsets to check."""

    @property
    def ok(self) -> bool:
        """Whether the outcome is ``verified``."""
        return self.outcome == "verified"


def verify_citation(citation: Citation, reader: DocumentReader) -> Verification:
    """Re-read ``citation``'s span through ``reader`` and compare it with its text.

    Example:
        ```python
        from citemark import MappingReader, Source, resolve, verify_citation

        doc = "Patents: the license ends when litigation is filed."
        src = Source(text="litigation is filed", doc_id="apache", start=31, end=50)
        citation = resolve("It ends [1].", [src]).citations[0]
        print(verify_citation(citation, MappingReader({"apache": doc})).outcome)
        #> verified
        ```
    """
    start, end = citation.start, citation.end
    if start is None or end is None:
        return Verification(citation=citation, outcome="no_offsets")
    document = reader.read(citation.uri or citation.doc_id)
    if document is None:
        outcome: Outcome = "unreadable"
    elif end > len(document):
        outcome = "drifted"
    elif document[start:end] != citation.text:
        outcome = "mismatch"
    else:
        outcome = "verified"
    return Verification(citation=citation, outcome=outcome)


def locate_span(document: str, text: str) -> tuple[int, int] | None:
    """Return the offsets of ``text`` in ``document`` if it occurs there exactly once.

    Frameworks lose offsets (LangChain's ``start_index`` of -1, LlamaIndex's ``None``
    character indices); this recovers them only where the answer is unambiguous.
    An empty ``text``, or one found twice or not at all, gives ``None``.

    Example:
        ```python
        from citemark import locate_span

        print(locate_span("a rule. a rule. another rule.", "another rule"))
        #> (16, 28)
        print(locate_span("a rule. a rule. another rule.", "a rule"))
        #> None
        ```
    """
    if not text:
        return None
    first = document.find(text)
    if first < 0 or document.find(text, first + 1) >= 0:
        return None
    return first, first + len(text)


class MappingReader:
    """Reads documents from an in-memory mapping of key to full text."""

    def __init__(self, documents: Mapping[str, str]) -> None:
        """Wrap ``documents``; the mapping is read, never copied or changed."""
        self._documents = documents

    def read(self, key: str) -> str | None:
        """Return the text stored under ``key``, or ``None``."""
        return self._documents.get(key)


class FileReader:
    """Reads documents from files under one root folder.

    Keys are paths relative to ``root``. A key that escapes the root is refused
    without touching the file: an absolute path, a ``..`` component, or a path whose
    symlinks resolve outside the root. A refused, missing, non-regular or non-UTF-8
    file reads as ``None``, which verifies as ``unreadable``; so does a key that
    cannot be resolved (a symlink loop, a name too long for the file system), and
    no key ever raises.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        """Serve files under ``root`` (resolved once, here)."""
        self._root = Path(root).resolve()

    def path_for(self, key: str) -> Path | None:
        """Return the resolved path ``key`` names, or ``None`` if it is refused."""
        if not key or "\x00" in key:
            return None
        posix, windows = PurePosixPath(key), PureWindowsPath(key)
        if posix.is_absolute() or windows.is_absolute() or windows.drive:
            return None
        if ".." in posix.parts or ".." in windows.parts:
            return None
        return _resolved_inside(self._root / posix, self._root)

    def read(self, key: str) -> str | None:
        """Return the text of the file ``key`` names, or ``None``."""
        path = self.path_for(key)
        if path is None:
            return None
        try:
            if not path.is_file():
                return None
            return read_document(path)
        except (OSError, UnicodeDecodeError):
            return None


def _resolved_inside(path: Path, root: Path) -> Path | None:
    """``path`` resolved, or None when it leaves ``root`` or cannot be resolved.

    Resolving raises for a symlink loop (`RuntimeError` before Python 3.13,
    `OSError` after) and for a name the file system refuses (``ENAMETOOLONG``);
    either message quotes the path, so both are a refusal here, never an error.
    """
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError, ValueError):
        return None
    return resolved if resolved.is_relative_to(root) else None


def read_document(path: str | os.PathLike[str]) -> str:
    r"""Read a document exactly as offsets into it are counted.

    UTF-8, and no newline translation: ``\r\n`` stays two characters, so offsets
    computed from this text and offsets checked against it always agree.
    """
    with open(path, encoding="utf-8", newline="") as handle:  # noqa: PTH123 - newline=""
        return handle.read()
