"""Verification by re-reading, and the reader's path rules, SPEC §3.5."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from citemark import Citation, FileReader, MappingReader, verify_citation

if TYPE_CHECKING:
    from pathlib import Path

DOC = "Preamble.\n\nThe license terminates when litigation is filed.\n"


def cite(
    text: str, start: int | None, end: int | None, *, uri: str | None = None, doc_id: str = "doc"
) -> Citation:
    return Citation(
        marker=1, doc_id=doc_id, chunk_id=None, start=start, end=end, uri=uri, text=text
    )


SPAN = "The license terminates"
START = DOC.index(SPAN)


class TestVerifyCitation:
    @pytest.mark.parametrize(
        ("citation", "outcome"),
        [
            (cite(SPAN, START, START + len(SPAN)), "verified"),
            (cite("The licence terminates", START, START + len(SPAN)), "mismatch"),
            (cite("x" * 10, len(DOC) - 5, len(DOC) + 5), "drifted"),
            (cite(SPAN, None, None), "no_offsets"),
            (cite(SPAN, START, START + len(SPAN), doc_id="missing"), "unreadable"),
        ],
        ids=["verified", "mismatch", "drifted", "no_offsets", "unreadable"],
    )
    def test_outcomes(self, citation, outcome):
        """Each of the five outcomes is reported for the situation it names."""
        verification = verify_citation(citation, MappingReader({"doc": DOC}))
        assert (outcome, citation) == (verification.outcome, verification.citation)

    def test_uri_is_preferred_over_doc_id(self):
        """A reader is asked for the uri when the citation has one."""
        reader = MappingReader({"files/doc.txt": DOC, "doc": "something else entirely"})
        citation = cite(SPAN, START, START + len(SPAN), uri="files/doc.txt")
        assert verify_citation(citation, reader).ok


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "doc.txt").write_text(DOC, encoding="utf-8")
    (root / "crlf.txt").write_bytes(b"line one\r\nline two\r\n")
    (root / "latin1.txt").write_bytes(b"caf\xe9")
    (tmp_path / "secret.txt").write_text("outside the root", encoding="utf-8")
    (root / "inside-link.txt").symlink_to(root / "sub" / "doc.txt")
    (root / "outside-link.txt").symlink_to(tmp_path / "secret.txt")
    (root / "dir-link").symlink_to(tmp_path)
    return root


class TestFileReader:
    def test_reads_relative_paths(self, tree):
        """A path under the root reads as its full text."""
        assert DOC == FileReader(tree).read("sub/doc.txt")

    def test_no_newline_translation(self, tree):
        """CRLF stays two characters, so offsets agree with the bytes on disk."""
        assert "line one\r\nline two\r\n" == FileReader(tree).read("crlf.txt")

    def test_symlink_inside_root_is_allowed(self, tree):
        """A symlink that stays inside the root reads normally."""
        assert DOC == FileReader(tree).read("inside-link.txt")

    @pytest.mark.parametrize(
        "key",
        [
            "../secret.txt",
            "sub/../../secret.txt",
            "sub/../doc.txt",
            "outside-link.txt",
            "dir-link/secret.txt",
            "/etc/passwd",
            "C:\\Windows\\win.ini",
            "C:secret.txt",
            "\\\\server\\share\\x",
            "..\\secret.txt",
            "sub/doc.txt\x00",
            "",
            "sub",
            "missing.txt",
            "latin1.txt",
        ],
    )
    def test_refused_or_unreadable(self, tree, key):
        """Escapes, absolute paths, outside symlinks, directories and bad bytes read as None."""
        assert FileReader(tree).read(key) is None

    def test_refused_path_never_opens_the_file(self, tree, monkeypatch):
        """A refused key is decided from the path alone; the file is not opened."""
        opened: list[str] = []
        real_open = open

        def spying_open(path, *args, **kwargs):
            opened.append(os.fspath(path))
            return real_open(path, *args, **kwargs)

        monkeypatch.setattr("builtins.open", spying_open)
        assert FileReader(tree).read("outside-link.txt") is None
        assert [] == opened

    def test_escape_verifies_as_unreadable(self, tree):
        """A citation whose uri escapes the root verifies as unreadable."""
        citation = cite("outside", 0, 7, uri="../secret.txt")
        assert "unreadable" == verify_citation(citation, FileReader(tree)).outcome

    def test_naive_reader_is_caught(self, tree):
        """The escape assertion fails against a reader that just joins paths."""

        class JoiningReader:
            def read(self, key: str) -> str | None:
                path = tree / key
                return path.read_text(encoding="utf-8") if path.is_file() else None

        citation = cite("outside", 0, 7, uri="../secret.txt")
        assert "unreadable" != verify_citation(citation, JoiningReader()).outcome
