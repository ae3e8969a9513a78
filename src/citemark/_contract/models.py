"""The three values the citation contract is written in.

A `Source` is one retrieved span as the model saw it. A `Citation` is what an
answer's marker ``[n]`` resolves to: it is built by citemark from the fields of the
source the marker names, never from anything the model wrote. A `CitedAnswer` is
the answer text exactly as the model wrote it plus its citations.

All three are frozen pydantic models with ``extra="forbid"``. Offsets follow one
rule everywhere: when both are given, ``0 <= start <= end`` and
``end - start == len(text)``, so a span can be re-read and compared later.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["Citation", "CitedAnswer", "Source", "UnrecognizedKind", "UnrecognizedToken"]

# hide_input_in_errors: a validation error must not echo source or answer text.
_CONFIG = ConfigDict(
    frozen=True, extra="forbid", use_attribute_docstrings=True, hide_input_in_errors=True
)


class Source(BaseModel):
    """One retrieved span, as shown to the model.

    Example:
        ```python
        from citemark import Source

        src = Source(text="Grant of Patent License", doc_id="Apache-2.0", start=10, end=33)
        print(src.end - src.start == len(src.text))
        #> True
        ```
    """

    model_config = _CONFIG

    text: str
    """The span's text exactly as it appears in its document."""

    doc_id: str
    """The identity of the document the span comes from."""

    chunk_id: str | None = None
    """The identity of the chunk within the document, if the pipeline has one."""

    start: int | None = None
    """Offset of the span's first character in the document text."""

    end: int | None = None
    """Offset one past the span's last character in the document text."""

    uri: str | None = None
    """Where a reader finds the document; looked up before `doc_id`."""

    metadata: dict[str, Any] = Field(default_factory=dict)
    """Anything else the pipeline wants to carry along; never shown to the model."""

    # `citemark._markers.resolve.citation_for` keeps each source's citations in its private
    # slot, set on first use: a declared private attribute would cost every Source
    # built (one per row's source) its initialisation.

    @model_validator(mode="after")
    def _check_offsets(self) -> Source:
        _check_span(self.start, self.end, len(self.text))
        return self


class Citation(BaseModel):
    """What marker ``[n]`` resolves to: the fields of ``sources[n - 1]``.

    Built only by citemark (`citemark.resolve` and the adapters), so a citation of
    something that was not retrieved cannot be represented.
    """

    model_config = _CONFIG

    marker: int = Field(ge=0)
    """The integer the answer wrote, ``n`` in ``[n]`` (0 only under ``index_base=0``)."""

    doc_id: str
    """The cited source's document identity."""

    chunk_id: str | None
    """The cited source's chunk identity."""

    start: int | None
    """The cited source's start offset in its document."""

    end: int | None
    """The cited source's end offset in its document."""

    uri: str | None
    """The cited source's document location."""

    text: str
    """The cited source's text."""

    @model_validator(mode="after")
    def _check_offsets(self) -> Citation:
        _check_span(self.start, self.end, len(self.text))
        return self


UnrecognizedKind = Literal[
    "range",
    "semicolon_list",
    "spaced",
    "word_prefixed",
    "prose_reference",
    "footnote",
    "fullwidth_bracket",
    "non_ascii_digits",
    "superscript",
    "displays_as_marker",
    "autolink",
    "openai_private_use",
    "openai_file_citation",
    "openai_content_reference",
    "gemini_cite",
]
"""What kind of citation-like text an `UnrecognizedToken` is (see docs/markers.md)."""


class UnrecognizedToken(BaseModel):
    """Citation-shaped text that is not a marker group: reported, never cited, never dropped."""

    model_config = _CONFIG

    kind: UnrecognizedKind
    """What it looks like: ``range`` for ``[1-3]``, ``footnote`` for ``[^1]``, ..."""

    start: int = Field(ge=0)
    """Offset of its first character in the answer."""

    end: int = Field(ge=0)
    """Offset one past its last character."""

    text: str
    """The token as the answer wrote it (``answer[start:end]``); data, never a message."""


class CitedAnswer(BaseModel):
    """An answer as the model wrote it, with the citations its markers resolve to.

    ``citations`` is deduplicated by value in first-mention order. An empty tuple is
    a valid abstention: the model said in prose that the sources do not answer the
    question. There is deliberately no ``abstained`` flag, which would be stored
    state derived from ``citations``. `citemark.parse_markers` on `text` gives the
    offsets of every marker occurrence, for highlighting.
    """

    model_config = _CONFIG

    text: str
    """The answer text, markers kept."""

    citations: tuple[Citation, ...] = ()
    """The distinct citations, in the order their markers first appear."""

    unrecognized: tuple[UnrecognizedToken, ...] = ()
    """Citation-like text that is not a marker under the grammar (``[1-3]``, ``[^1]``,
    ``【1】``, a provider's leaked marker...), in order. None of it cites, and none of
    it is removed from `text`; see `citemark.find_unrecognized`."""


def _check_span(start: int | None, end: int | None, length: int) -> None:
    if start is None and end is None:
        return
    if start is None or end is None:
        msg = "start and end must be given together (got only one of them)"
        raise ValueError(msg)
    if not 0 <= start <= end:
        msg = f"offsets must satisfy 0 <= start <= end (got start={start}, end={end})"
        raise ValueError(msg)
    if end - start != length:
        msg = f"end - start must equal len(text) (got {end - start}, expected {length})"
        raise ValueError(msg)
