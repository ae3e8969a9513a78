"""Embedded retrieval: BM25 over a folder of text files, with exact offsets.

`BM25Retriever` is the default that lets `citemark answer` and the demo run with no
service. Documents are split into paragraphs (runs of non-blank lines) with their
surrounding whitespace trimmed; a paragraph longer than ``max_chars`` is split
again at whitespace. Every chunk keeps its character offsets, so
``document[start:end] == chunk.text`` always holds and each retrieved `Source`
verifies against the file it came from.

rank-bm25 (and the numpy it brings) is the ``retrieval`` extra, not a dependency of
the core: it is imported when an index is built, and without it building one raises
`MissingExtraError` naming ``pip install 'citemark[retrieval]'``. Chunking needs
nothing but the standard library.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from citemark._contract.errors import MissingExtraError
from citemark._contract.models import Source
from citemark._sources.spans import FileReader

if TYPE_CHECKING:
    import os
    from collections.abc import Iterable, Iterator, Sequence

__all__ = ["BM25Retriever", "chunk_text"]

_PARAGRAPH = re.compile(r"\S(?:.|\n(?![ \t\r\f\v]*(?:\n|$)))*+", re.MULTILINE)
_WORD = re.compile(r"\w+")
_DEFAULT_MAX_CHARS = 1500

# The extra that installs BM25, and the top-level modules whose absence means it is
# not installed (rank-bm25 imports numpy first thing).
_EXTRA: Final = "retrieval"
_EXTRA_MODULES: Final = frozenset({"rank_bm25", "numpy"})


class BM25Retriever:
    r"""Okapi BM25 (rank-bm25) over offset-preserving paragraph chunks.

    Needs the ``retrieval`` extra (``pip install 'citemark[retrieval]'``); without
    it, building a retriever raises `MissingExtraError`.

    Example:
        ```python
        from citemark import BM25Retriever, Source

        docs = {"a.txt": "Patents.\n\nThe license ends if you sue.", "b.txt": "Fonts."}
        retriever = BM25Retriever.from_texts(docs)
        hit = retriever.retrieve("what ends the license", k=1)[0]
        print(hit.doc_id, hit.start, hit.end, hit.text)
        #> a.txt 10 38 The license ends if you sue.
        ```
    """

    def __init__(self, chunks: Sequence[Source]) -> None:
        """Index ``chunks`` as given; each becomes one retrievable `Source`.

        Raises:
            MissingExtraError: rank-bm25 (the ``retrieval`` extra) is not installed.
        """
        okapi = _okapi()
        self._chunks = tuple(chunks)
        tokenized = [_tokens(chunk.text) for chunk in self._chunks]
        self._terms = [frozenset(tokens) for tokens in tokenized]
        # rank-bm25 divides by the corpus size; an empty index simply finds nothing.
        self._index = okapi(tokenized) if self._chunks else None

    @classmethod
    def from_texts(
        cls, documents: dict[str, str], *, max_chars: int = _DEFAULT_MAX_CHARS
    ) -> BM25Retriever:
        """Index ``{doc_id: text}``; each chunk's ``uri`` is its ``doc_id``."""
        return cls(list(_chunk_documents(documents.items(), max_chars)))

    @classmethod
    def from_directory(
        cls,
        root: str | os.PathLike[str],
        *,
        patterns: Iterable[str] = ("*.txt", "*.md"),
        max_chars: int = _DEFAULT_MAX_CHARS,
    ) -> BM25Retriever:
        """Index the files under ``root`` that match ``patterns`` (recursively).

        A document's ``doc_id`` and ``uri`` are its path relative to ``root``, with
        forward slashes, so `citemark.FileReader` (root) re-reads it for
        verification. Only files that reader would read are indexed: a symlink out
        of the root, or a file that is not UTF-8, is skipped. Files are read as
        UTF-8 without newline translation.

        Raises:
            MissingExtraError: rank-bm25 (the ``retrieval`` extra) is not installed;
                raised before any file is read.
        """
        _okapi()
        base = Path(root)
        reader = FileReader(base)
        keys = sorted(
            {p.relative_to(base).as_posix() for pattern in patterns for p in base.rglob(pattern)}
        )
        documents = ((key, reader.read(key)) for key in keys)
        readable = ((key, text) for key, text in documents if text is not None)
        return cls(list(_chunk_documents(readable, max_chars)))

    @property
    def chunks(self) -> tuple[Source, ...]:
        """Every indexed chunk, in index order."""
        return self._chunks

    def retrieve(self, query: str, k: int = 4) -> list[Source]:
        """Return up to ``k`` chunks that share a term with ``query``, best first.

        Ties keep index order. A chunk sharing a term always qualifies, even where
        BM25 gives it a score of zero (a term in half the chunks of a tiny index).
        """
        terms = _tokens(query)
        if self._index is None or not terms:
            return []
        wanted = frozenset(terms)
        scores = self._index.get_scores(terms)
        hits = [i for i, chunk_terms in enumerate(self._terms) if chunk_terms & wanted]
        hits.sort(key=lambda i: (-scores[i], i))
        return [self._chunks[i] for i in hits[:k]]


def _okapi() -> Any:  # noqa: ANN401 - rank-bm25 ships no types
    """rank-bm25's ``BM25Okapi``, imported on first use; `MissingExtraError` without it.

    Only the absence of rank-bm25 or numpy is translated: any other import failure
    inside them is a broken install, and propagates as it is.
    """
    try:
        from rank_bm25 import BM25Okapi  # noqa: PLC0415 - the retrieval extra, on first use
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in _EXTRA_MODULES:
            raise
        raise MissingExtraError("BM25Retriever", _EXTRA, "rank_bm25") from None
    return BM25Okapi


def chunk_text(text: str, max_chars: int = _DEFAULT_MAX_CHARS) -> Iterator[tuple[int, int]]:
    """Yield ``(start, end)`` of each chunk of ``text``: trimmed paragraphs.

    A paragraph longer than ``max_chars`` is cut at the last whitespace before the
    limit (or at the limit when there is none); each piece is trimmed again.
    """
    for paragraph in _PARAGRAPH.finditer(text):
        start = paragraph.start()
        end = start + len(paragraph.group().rstrip())
        while end - start > max_chars:
            cut = _last_space(text, start, start + max_chars)
            yield start, cut
            start = cut
            while start < end and text[start].isspace():
                start += 1
        if start < end:
            yield start, end


def _last_space(text: str, start: int, limit: int) -> int:
    cut = limit
    while cut > start + 1 and not text[cut - 1].isspace():
        cut -= 1
    if cut <= start + 1:
        return limit
    while cut > start + 1 and text[cut - 1].isspace():
        cut -= 1
    return cut


def _chunk_documents(documents: Iterable[tuple[str, str]], max_chars: int) -> Iterator[Source]:
    # Chunk ids count within their document, so adding a file renumbers nothing else.
    for doc_id, text in documents:
        for number, (start, end) in enumerate(chunk_text(text, max_chars)):
            yield Source(
                text=text[start:end],
                doc_id=doc_id,
                chunk_id=f"{doc_id}#{number}",
                start=start,
                end=end,
                uri=doc_id,
            )


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())
