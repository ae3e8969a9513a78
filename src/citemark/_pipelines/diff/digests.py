"""A row's inputs as three short digests, so two runs can say what changed without the text.

``rows.jsonl`` does not repeat a row's question, answer or sources (they are untrusted
text, and large); it records a digest of each, and ``citemark diff`` compares those:
a row whose answer digest differs was answered differently, one whose sources digest
differs was given other sources, whatever its outcome. The question's digest also
matches rows that have no id (``id``, else question, else line).

A digest is the first 16 hex digits (64 bits) of a SHA-256: enough to tell a change
apart from chance, short enough to cost little per row. The sources digest covers each
source's ``text``, ``doc_id``, ``chunk_id``, ``start``, ``end`` and ``uri`` in order
(``metadata`` is left out: a retriever's score is not what the answer cites), or the
labelled context string as given. Strings are hashed as UTF-8, a lone surrogate as its
code point (``surrogatepass``), each field prefixed by its length, so no two different
inputs share a byte stream.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Final

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from citemark._contract.models import Source

__all__ = ["DIGEST_CHARS", "RowDigests", "row_digests"]

DIGEST_CHARS: Final = 16
"""Hex digits kept of each SHA-256."""


class RowDigests(BaseModel):
    """The digests ``rows.jsonl`` records under a row's ``digests`` key."""

    model_config = ConfigDict(frozen=True, extra="ignore", use_attribute_docstrings=True)

    question: str | None = None
    """The question's digest; None when the row has no question."""
    answer: str
    """The answer's digest (a structured answer's text)."""
    sources: str
    """The sources' digest (or the labelled context's)."""


def _feed(digest: hashlib._Hash, value: str | int | None) -> None:
    if value is None:
        digest.update(b"-")
        return
    data = str(value).encode("utf-8", "surrogatepass")
    digest.update(b"%d:" % len(data))
    digest.update(data)


def _short(text: str) -> str:
    digest = hashlib.sha256()
    _feed(digest, text)
    return digest.hexdigest()[:DIGEST_CHARS]


def _sources(sources: tuple[Source, ...] | str) -> str:
    digest = hashlib.sha256()
    if isinstance(sources, str):
        digest.update(b"context ")
        _feed(digest, sources)
    else:
        digest.update(b"sources %d " % len(sources))
        for source in sources:
            for value in (
                source.text,
                source.doc_id,
                source.chunk_id,
                source.start,
                source.end,
                source.uri,
            ):
                _feed(digest, value)
    return digest.hexdigest()[:DIGEST_CHARS]


def row_digests(
    question: str, answer: str, sources: tuple[Source, ...] | str
) -> dict[str, str | None]:
    """The ``digests`` value of a row's ``rows.jsonl`` record.

    Args:
        question: The row's question; empty when it has none.
        answer: The answer as checked (a structured answer's text).
        sources: The sources, or the labelled context string.

    Returns:
        ``{"question": ..., "answer": ..., "sources": ...}``, each 16 hex digits, the
        question None when it is empty.

    Example:
        ```python
        from citemark import Source
        from citemark._pipelines.diff.digests import row_digests

        sources = (Source(text="Fees rise in May.", doc_id="fees"),)
        first = row_digests("When?", "In May [1].", sources)
        second = row_digests("When?", "In June [1].", sources)
        print(first["question"] == second["question"], first["answer"] == second["answer"])
        #> True False
        ```
    """
    return {
        "question": _short(question) if question else None,
        "answer": _short(answer),
        "sources": _sources(sources),
    }
