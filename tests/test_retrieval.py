"""Embedded BM25 retrieval with exact offsets, SPEC §3.13."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI
from hypothesis import given
from hypothesis import strategies as st

import citemark._sources.retrieval
from citemark import (
    BM25Retriever,
    CitemarkError,
    FileReader,
    MissingExtraError,
    resolve,
    verify_citation,
)
from citemark._sources.retrieval import chunk_text

LICENSES = Path(__file__).resolve().parent.parent / "examples" / "data" / "licenses"
# The one line a user without the retrieval extra reads, from Python and from the CLI.
NEEDS_THE_EXTRA = "BM25Retriever needs the retrieval extra: pip install 'citemark[retrieval]'"


class TestChunking:
    def test_every_chunk_slices_back_on_the_bundled_corpus(self):
        """Every chunk of every license satisfies doc_text[start:end] == chunk.text."""
        retriever = BM25Retriever.from_directory(LICENSES, patterns=("*",))
        reader = FileReader(LICENSES)
        assert len(retriever.chunks) > 400
        for chunk in retriever.chunks:
            assert chunk.uri is not None
            document = reader.read(chunk.uri)
            assert document is not None
            assert chunk.text == document[chunk.start : chunk.end]

    @given(st.text(alphabet=st.sampled_from("ab \n\t\r."), max_size=300), st.integers(2, 40))
    def test_chunks_slice_back_on_any_text(self, text, max_chars):
        """Chunks are non-empty, trimmed, ordered, bounded and slice back exactly."""
        previous_end = 0
        for start, end in chunk_text(text, max_chars):
            piece = text[start:end]
            assert piece
            assert piece == piece.strip()
            assert start >= previous_end
            assert end - start <= max_chars
            previous_end = end

    def test_paragraphs_split_on_blank_lines(self):
        """Blank lines, even with spaces on them, separate chunks."""
        text = "  first para\nstill first  \n \t\nsecond\n\n\nthird"
        assert ["first para\nstill first", "second", "third"] == [
            text[s:e] for s, e in chunk_text(text)
        ]


class TestRetrieve:
    def test_finds_the_patent_clause(self):
        """A patent-termination question retrieves Apache 2.0 section 3."""
        retriever = BM25Retriever.from_directory(LICENSES, patterns=("*",))
        hits = retriever.retrieve(
            "Under the Apache License 2.0, what happens to a contributor's patent license "
            "if you sue claiming the Work infringes a patent?",
            k=4,
        )
        assert 4 == len(hits)
        assert any(
            h.doc_id == "Apache-2.0" and "3. Grant of Patent License" in h.text for h in hits
        )

    def test_retrieved_citations_verify(self):
        """Citations resolved against retrieved chunks verify against the files."""
        retriever = BM25Retriever.from_directory(LICENSES, patterns=("*",))
        sources = retriever.retrieve("NOTICE text file attribution notices", k=3)
        answer = resolve("See [1], [2] and [3].", sources)
        reader = FileReader(LICENSES)
        assert ["verified"] * 3 == [verify_citation(c, reader).outcome for c in answer.citations]

    def test_no_shared_term_finds_nothing(self):
        """A query sharing no term with the corpus returns no sources."""
        retriever = BM25Retriever.from_texts({"a": "alpha beta", "b": "gamma delta"})
        assert [] == retriever.retrieve("zeta")
        assert [] == retriever.retrieve("   ")

    def test_empty_index(self):
        """An index over no documents retrieves nothing."""
        assert [] == BM25Retriever([]).retrieve("anything")

    def test_default_patterns_are_text_and_markdown(self, tmp_path):
        """from_directory indexes .txt and .md files by default, recursively."""
        (tmp_path / "notes").mkdir()
        (tmp_path / "notes" / "a.md").write_text("# Alpha\n\nalpha words", encoding="utf-8")
        (tmp_path / "b.txt").write_text("beta words", encoding="utf-8")
        (tmp_path / "c.json").write_text('{"words": 1}', encoding="utf-8")
        retriever = BM25Retriever.from_directory(tmp_path)
        assert {"notes/a.md", "b.txt"} == {c.doc_id for c in retriever.chunks}


@pytest.fixture
def without_rank_bm25(monkeypatch):
    """rank-bm25 is not installed, as far as ``import rank_bm25`` can tell.

    A ``None`` in `sys.modules` makes the import raise `ModuleNotFoundError` naming the
    module, exactly what a missing distribution raises.
    """
    monkeypatch.setitem(sys.modules, "rank_bm25", None)


class TestWithoutTheRetrievalExtra:
    """rank-bm25 (and its numpy) is the ``retrieval`` extra; the core runs without it."""

    @pytest.mark.usefixtures("without_rank_bm25")
    def test_building_an_index_is_one_line_naming_the_extra(self):
        """The error is a MissingExtraError, an ImportError too, with no chained traceback."""
        with pytest.raises(MissingExtraError) as caught:
            BM25Retriever.from_texts({"a.txt": "The license ends if you sue."})
        exc = caught.value
        assert NEEDS_THE_EXTRA == str(exc)
        assert isinstance(exc, ImportError)
        assert isinstance(exc, CitemarkError)
        assert ("rank_bm25", "retrieval", "BM25Retriever") == (exc.name, exc.extra, exc.feature)
        assert exc.__cause__ is None
        assert exc.__suppress_context__

    @pytest.mark.usefixtures("without_rank_bm25")
    @pytest.mark.parametrize(
        "build",
        [
            lambda: BM25Retriever([]),
            lambda: BM25Retriever.from_texts({}),
            lambda: BM25Retriever.from_directory(LICENSES, patterns=("*",)),
        ],
        ids=["chunks", "from_texts", "from_directory"],
    )
    def test_every_constructor_raises_it_even_for_an_empty_index(self, build):
        """No way of building a retriever silently yields one that cannot rank."""
        with pytest.raises(MissingExtraError, match=r"^BM25Retriever needs the retrieval extra"):
            build()

    @pytest.mark.usefixtures("without_rank_bm25")
    def test_from_directory_reads_no_file_before_saying_so(self, monkeypatch):
        """The extra is checked first: a large folder is not read only to fail."""

        class NoReading(FileReader):
            def read(self, uri):
                raise AssertionError(uri)

        monkeypatch.setattr(citemark._sources.retrieval, "FileReader", NoReading)
        with pytest.raises(MissingExtraError):
            BM25Retriever.from_directory(LICENSES, patterns=("*",))

    def test_a_missing_numpy_is_the_same_error(self, monkeypatch):
        """rank-bm25 present without its numpy is an incomplete extra: the same one line."""
        monkeypatch.delitem(sys.modules, "rank_bm25", raising=False)
        monkeypatch.setitem(sys.modules, "numpy", None)
        with pytest.raises(MissingExtraError) as caught:
            BM25Retriever.from_texts({"a": "alpha"})
        assert NEEDS_THE_EXTRA == str(caught.value)

    def test_another_import_failure_inside_the_extra_is_not_disguised(self, monkeypatch, tmp_path):
        """A rank_bm25 whose own import fails on another module propagates as it is."""
        (tmp_path / "rank_bm25.py").write_text("import citemark_no_such_module\n", encoding="utf-8")
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.delitem(sys.modules, "rank_bm25", raising=False)
        with pytest.raises(ModuleNotFoundError) as caught:
            BM25Retriever.from_texts({"a": "alpha"})
        assert not isinstance(caught.value, MissingExtraError)
        assert "citemark_no_such_module" == caught.value.name

    @pytest.mark.usefixtures("without_rank_bm25")
    def test_chunking_needs_no_extra(self):
        """chunk_text is the standard library only: offsets without rank-bm25."""
        assert [(0, 5), (7, 10)] == list(chunk_text("alpha\n\nbet"))

    def test_the_error_pickles_with_its_facts(self):
        """A worker process can send it back whole."""
        error = MissingExtraError("BM25Retriever", "retrieval", "rank_bm25")
        exc = pickle.loads(pickle.dumps(error))  # noqa: S301 - our own bytes
        assert (NEEDS_THE_EXTRA, "rank_bm25", "retrieval") == (str(exc), exc.name, exc.extra)

    def test_citemark_answer_says_the_same_line_and_exits_2(self):
        """`citemark answer` (BM25 over --docs) without the extra: one line, exit 2, no model call.

        The real entry point in a fresh interpreter where rank_bm25 cannot be imported.
        """
        runner = (
            "import runpy, sys\n"
            "sys.modules['rank_bm25'] = None\n"
            "sys.argv = ['citemark', *sys.argv[1:]]\n"
            "runpy.run_module('citemark', run_name='__main__', alter_sys=True)\n"
        )
        with FakeOpenAI(["It ends [1]."]) as server:
            env = {k: v for k, v in os.environ.items() if not k.startswith("CITEMARK_")}
            env |= {"CITEMARK_BASE_URL": server.base_url, "CITEMARK_MODEL": "fake-model"}
            done = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    runner,
                    "answer",
                    "When does it end?",
                    "--docs",
                    str(LICENSES),
                ],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
                check=False,
            )
        assert (2, "", f"citemark: error: {NEEDS_THE_EXTRA}\n") == (
            done.returncode,
            done.stdout,
            done.stderr,
        )
        assert [] == server.prompts
