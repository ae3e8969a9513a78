"""Embedded BM25 retrieval with exact offsets, SPEC §3.13."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from citemark import BM25Retriever, FileReader, resolve, verify_citation
from citemark._retrieval import chunk_text

LICENSES = Path(__file__).resolve().parent.parent / "examples" / "data" / "licenses"


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
