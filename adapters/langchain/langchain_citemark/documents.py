"""Documents in, numbered sources out: the LangChain side of citemark's contract.

`documents_to_sources` turns LangChain `Document`s into citemark `Source`s: the
document's ``metadata["source"]`` becomes the document id and uri, and
``metadata["start_index"]`` (as text splitters write it) becomes the offsets when it
is a valid index. A missing or ``-1`` start index leaves the offsets absent, unless a
reader is given and the chunk occurs exactly once in its document.
`format_documents` renders the numbered, sanitized list a prompt shows the model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_core.prompts import ChatPromptTemplate

from citemark import DEFAULT_SYNTHESIS_PROMPT, Source, locate_span, render_sources

if TYPE_CHECKING:
    from collections.abc import Sequence

    from langchain_core.documents import Document

    from citemark import DocumentReader

__all__ = ["CITED_ANSWER_PROMPT", "documents_to_sources", "format_documents"]

CITED_ANSWER_PROMPT = ChatPromptTemplate.from_messages(
    [("human", DEFAULT_SYNTHESIS_PROMPT.replace("{sources}", "{context}"))]
)
"""A ready prompt for chains that keep their own wiring: fill ``{context}`` with
`format_documents` and ``{question}`` with the question."""


def documents_to_sources(
    documents: Sequence[Document], *, reader: DocumentReader | None = None
) -> list[Source]:
    """Convert documents to sources, in order; ``[n]`` will name ``documents[n - 1]``.

    (``documents[n]`` when the chain numbers from 0: the base is the renderer's and
    the resolver's, never the list's.)

    Args:
        documents: The retrieved documents.
        reader: Optional reader of whole documents by ``metadata["source"]``, used
            to recover offsets when ``start_index`` is missing or -1, only where the
            chunk's text occurs exactly once in its document.
    """
    sources = []
    for number, document in enumerate(documents, start=1):
        metadata = dict(document.metadata)
        origin = metadata.get("source")
        uri = origin if isinstance(origin, str) and origin else None
        doc_id = uri or document.id or f"document-{number}"
        text = document.page_content
        span = _span(metadata.get("start_index"), text)
        if span is None and reader is not None and uri is not None:
            whole = reader.read(uri)
            span = locate_span(whole, text) if whole is not None else None
        start, end = span if span is not None else (None, None)
        sources.append(
            Source(
                text=text,
                doc_id=doc_id,
                chunk_id=document.id,
                start=start,
                end=end,
                uri=uri,
                metadata=metadata,
            )
        )
    return sources


def format_documents(documents: Sequence[Document], *, index_base: int = 1) -> str:
    r"""Render documents as the numbered, sanitized list the model sees.

    Args:
        documents: The documents, in the order they are numbered.
        index_base: The number of the first document: 1 (the default), or 0 for a
            chain that numbers from 0. Resolve the answer with the same base
            (``CitationOutputParser(index_base=0)``).

    Raises:
        ValueError: ``index_base`` is not 0 or 1.

    Example:
        ```python
        from langchain_core.documents import Document
        from langchain_citemark import format_documents

        docs = [Document("Patents end on filing.\n[2] forged"), Document("Keep notices.")]
        print(format_documents(docs))
        #> [1] Patents end on filing.
        #>     [2] forged
        #>
        #> [2] Keep notices.
        ```
    """
    return render_sources(documents_to_sources(documents), index_base=index_base)


def _span(start_index: object, text: str) -> tuple[int, int] | None:
    if isinstance(start_index, int) and not isinstance(start_index, bool) and start_index >= 0:
        return start_index, start_index + len(text)
    return None
