"""Hostile files: a symlink loop and over-long names under a reader's root (issue 17, item 8).

Real file systems only: the loops are real symlinks in ``tmp_path``. Each must read
as ``unreadable`` through `verify_citation` and never raise (the old code raised
``RuntimeError``/``OSError`` quoting the untrusted key); `citemark answer --docs` on
a folder holding a loop answers instead of printing a traceback.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, run_cli

from citemark import FileReader, Source, resolve, verify_citation

TEXT = "The late fee is five percent of the balance."


@pytest.fixture
def hostile_root(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "fees.txt").write_text(TEXT, encoding="utf-8")
    (root / "loop.txt").symlink_to("loop.txt")
    (root / "ping").symlink_to("pong")
    (root / "pong").symlink_to("ping")
    return root


HOSTILE_KEYS = {
    "self-loop": "loop.txt",
    "loop-through-a-folder": "ping/fees.txt",
    "over-long-name": "x" * 300 + ".txt",
    "over-long-path": "a/" * 3000 + "b.txt",
}


@pytest.mark.parametrize("key", HOSTILE_KEYS.values(), ids=HOSTILE_KEYS.keys())
def test_hostile_keys_verify_as_unreadable(hostile_root, key):
    """The citation is unreadable; no exception reaches the caller."""
    source = Source(text=TEXT[:12], doc_id=key, start=0, end=12)
    citation = resolve("Fees [1].", [source]).citations[0]

    assert "unreadable" == verify_citation(citation, FileReader(hostile_root)).outcome
    assert FileReader(hostile_root).read(key) is None


@pytest.mark.parametrize("key", HOSTILE_KEYS.values(), ids=HOSTILE_KEYS.keys())
def test_naive_resolution_raises_with_the_key(hostile_root, key):
    """The naive variant: resolving and testing the path as the old reader did raises."""
    with pytest.raises((RuntimeError, OSError)) as info:
        (hostile_root / key).resolve().is_file()
    assert key[:8] in str(info.value)


def test_a_readable_file_beside_the_loops_still_verifies(hostile_root):
    source = Source(text=TEXT[:12], doc_id="fees.txt", start=0, end=12)
    citation = resolve("Fees [1].", [source]).citations[0]

    assert "verified" == verify_citation(citation, FileReader(hostile_root)).outcome


def test_answer_on_a_folder_with_a_symlink_loop(hostile_root):
    """`citemark answer --docs` skips the loop and answers from the readable file."""
    with FakeOpenAI(["The late fee is five percent [1]."]) as server:
        done = run_cli(
            "answer",
            "What is the late fee?",
            "--docs",
            str(hostile_root),
            "--pattern",
            "*",
            base_url=server.base_url,
        )

    assert 0 == done.returncode, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout.splitlines()[-1].endswith(" verified")
