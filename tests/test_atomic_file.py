"""The one atomic write: `AtomicFile` streams an artifact that appears whole or not at all.

`write_report_atomically` and ``citemark check``'s ``rows.jsonl`` both go through it.
"""

from __future__ import annotations

import hashlib
import os
import stat

import pytest

import citemark._contract.artifacts
from citemark import write_report_atomically
from citemark._contract.artifacts import AtomicFile


def hidden(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


class TestAtomicFile:
    def test_nothing_appears_before_commit(self, tmp_path):
        """Written pieces sit in a hidden file; the destination appears at commit, with its SHA-256."""
        path = tmp_path / "rows.jsonl"
        with AtomicFile(path) as rows:
            rows.write(b"one\n")
            rows.write(memoryview(b"two\n"))
            assert (False, 1) == (path.exists(), len(hidden(tmp_path)))
            digest = rows.commit()
        assert (b"one\ntwo\n", hashlib.sha256(b"one\ntwo\n").hexdigest()) == (
            path.read_bytes(),
            digest,
        )
        assert [] == hidden(tmp_path)

    def test_leaving_without_commit_keeps_the_old_file(self, tmp_path):
        """An error inside the block removes the temporary file and leaves the destination as it was."""
        path = tmp_path / "rows.jsonl"
        path.write_bytes(b"old")
        with pytest.raises(KeyError), AtomicFile(path) as rows:
            rows.write(b"new")
            raise KeyError
        assert (b"old", []) == (path.read_bytes(), hidden(tmp_path))

    def test_a_failed_commit_removes_its_temporary_file(self, tmp_path):
        """When the rename fails (the destination is a folder) nothing is left behind."""
        (tmp_path / "rows.jsonl").mkdir()
        with pytest.raises(OSError), AtomicFile(tmp_path / "rows.jsonl") as rows:
            rows.write(b"x")
            rows.commit()
        assert ["rows.jsonl"] == [p.name for p in tmp_path.iterdir()]

    def test_modes_match_the_whole_file_write(self, tmp_path):
        """A fresh file gets 0o644 and a replaced one keeps its mode, as write_report_atomically does."""
        fresh = tmp_path / "fresh"
        with AtomicFile(fresh) as file:
            file.commit()
        kept = tmp_path / "kept"
        kept.write_bytes(b"")
        kept.chmod(0o640)
        with AtomicFile(kept) as file:
            file.commit()
        if os.name == "posix":
            assert (0o644, 0o640) == (
                stat.S_IMODE(fresh.stat().st_mode),
                stat.S_IMODE(kept.stat().st_mode),
            )

    def test_the_whole_file_write_goes_through_it(self, tmp_path, monkeypatch):
        """write_report_atomically commits through AtomicFile: one mechanism, not two."""
        commits = []

        class Counting(AtomicFile):
            def commit(self) -> str:
                commits.append(self.path.name)
                return super().commit()

        monkeypatch.setattr(citemark._contract.artifacts, "AtomicFile", Counting)
        write_report_atomically(tmp_path / "report.json", b"{}")
        assert ["report.json"] == commits
