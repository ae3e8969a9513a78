"""Helpers every provider parser shares: reading the response, resolving documents.

The parsers take a response as a plain JSON ``dict`` or as an official SDK object
(anything with pydantic's ``model_dump``), read fields by their wire (camelCase)
or SDK (snake_case) names, and treat ``None`` as absent, since SDK dumps write
every optional field. A field that holds text must hold a string: a number, list,
object or boolean there is a `ProviderResponseError`, never its ``str()``. Documents
are resolved strictly: an index past the list or an identity that no sent document
has resolves to ``None``, never to a neighbour, and two sent documents that share a
``doc_id`` or a provider reference are refused, since a citation of one could not be
told from a citation of the other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from pydantic import ValidationError

from citemark._contract.errors import OffsetUnitError, ProviderResponseError
from citemark._contract.validation import describe_validation_error
from citemark._sources.providers._model import ResponseSpan, SentDocument
from citemark._sources.providers._offsets import Unit, to_code_points

__all__ = [
    "Documents",
    "as_dict",
    "as_list",
    "field",
    "int_field",
    "make_response_span",
    "required_text",
    "text_field",
]

_DOCUMENT_FIELDS: Final = frozenset(SentDocument.model_fields)


def as_dict(value: object, provider: str, where: str) -> dict[str, Any]:
    """Return ``value`` as a ``dict``: a mapping as is, an SDK object dumped to JSON."""
    if isinstance(value, Mapping):
        return dict(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        dumped = _dumped(dump)
        if isinstance(dumped, Mapping):
            return dict(dumped)
    raise ProviderResponseError(provider, f"{where} is not an object")


def _dumped(dump: Callable[..., object]) -> object:
    """An SDK object's JSON dump, without pydantic's serializer warnings.

    A field holding what its type does not allow (an SDK keeps what the server sent)
    makes pydantic warn with the value quoted: untrusted text in a warning. The
    parsers refuse such a value themselves, by field name.
    """
    try:
        return dump(mode="json", warnings=False)
    except TypeError:  # a model_dump without pydantic 2's keyword
        return dump(mode="json")


def field(data: Mapping[str, Any], *names: str) -> Any:  # noqa: ANN401 - JSON value
    """The first of ``names`` present in ``data`` with a non-``None`` value."""
    for name in names:
        value = data.get(name)
        if value is not None:
            return value
    return None


def as_list(value: object, provider: str, where: str) -> list[Any]:
    """``value`` as a list; ``None`` (an absent optional list) is empty."""
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return list(value)
    raise ProviderResponseError(provider, f"{where} is not a list")


def int_field(
    data: Mapping[str, Any], provider: str, where: str, *names: str, default: int | None = None
) -> int:
    """An integer field; ``default`` when absent (proto3 JSON drops zeros)."""
    value = field(data, *names)
    if value is None and default is not None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProviderResponseError(provider, f"{where}.{names[0]} is not an integer")
    return value


def text_field(data: Mapping[str, Any], provider: str, where: str, *names: str) -> str | None:
    """An optional text field: its string, or ``None`` when absent or ``null``.

    Raises:
        ProviderResponseError: the field holds something other than a string.
    """
    for name in names:
        value = data.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            raise ProviderResponseError(provider, f"{where}.{name} is not a string")
        return value
    return None


def required_text(data: Mapping[str, Any], provider: str, where: str, name: str) -> str:
    """A text field the provider always writes: a string, never absent or ``null``.

    Raises:
        ProviderResponseError: the field is absent, ``null`` or not a string.
    """
    value = data.get(name)
    if not isinstance(value, str):
        raise ProviderResponseError(provider, f"{where}.{name} is not a string")
    return value


class Documents:
    """The documents the caller sent, looked up the ways providers name them."""

    def __init__(
        self, documents: Sequence[SentDocument | Mapping[str, Any]], provider: str
    ) -> None:
        """Index ``documents``, the sent documents of a ``provider`` response.

        Raises:
            ProviderResponseError: a document is not a `SentDocument` (nor a mapping
                that validates as one), or two documents share a ``doc_id`` or a
                provider reference; the reason names their positions, 1-based.
        """
        self.all = tuple(_sent_document(d, provider, n) for n, d in enumerate(documents, 1))
        self._by_id = _unique(self.all, provider, "doc_id", lambda doc: doc.doc_id)
        self._by_ref = _unique(self.all, provider, "provider reference", lambda doc: doc.reference)

    def by_index(self, index: int, kind: str = "document") -> str | None:
        """The ``doc_id`` of the ``index``-th (0-based) sent document of ``kind``."""
        of_kind = [doc for doc in self.all if doc.kind == kind]
        if 0 <= index < len(of_kind):
            return of_kind[index].doc_id
        return None

    def by_reference(self, reference: object) -> str | None:
        """The ``doc_id`` of the sent document a provider names ``reference``."""
        if not isinstance(reference, str):
            return None
        doc = self._by_ref.get(reference)
        return None if doc is None else doc.doc_id

    def get(self, doc_id: str) -> SentDocument:
        """The sent document with ``doc_id``."""
        return self._by_id[doc_id]


def make_response_span(  # noqa: PLR0913 - the span's own fields, named at each call
    parts: Sequence[str],
    part: int,
    raw_start: int,
    raw_end: int,
    unit: Unit,
    *,
    end_inclusive: bool = False,
    text: str | None = None,
) -> tuple[ResponseSpan, str | None]:
    """Convert a part-relative span to code points of the whole answer.

    Returns the span and ``None``, or the span without converted offsets and the
    `OffsetUnitError` reason when an offset is not a character boundary of the part.
    """
    span = {
        "part": part,
        "raw_start": raw_start,
        "raw_end": raw_end,
        "unit": unit,
        "end_inclusive": end_inclusive,
        "text": text,
    }
    if not 0 <= part < len(parts):
        return ResponseSpan.model_validate(span), "part_out_of_range"
    body = parts[part]
    try:
        start = to_code_points(body, raw_start, unit)
        end = to_code_points(body, raw_end + (1 if end_inclusive else 0), unit)
    except OffsetUnitError as exc:
        return ResponseSpan.model_validate(span), exc.reason
    if end < start:
        return ResponseSpan.model_validate(span), "end_before_start"
    base = sum(len(p) for p in parts[:part])
    return ResponseSpan.model_validate({**span, "start": base + start, "end": base + end}), None


def _sent_document(
    document: SentDocument | Mapping[str, Any], provider: str, number: int
) -> SentDocument:
    if isinstance(document, SentDocument):
        return document
    try:
        return SentDocument.model_validate(document)
    except ValidationError as exc:
        described = describe_validation_error(exc, _DOCUMENT_FIELDS)
        reason = f"sent document {number} does not fit the SentDocument schema: {described}"
        raise ProviderResponseError(provider, reason) from None


def _unique(
    documents: Sequence[SentDocument],
    provider: str,
    what: str,
    key: Callable[[SentDocument], str],
) -> dict[str, SentDocument]:
    """``documents`` by ``key``; two with one key are a `ProviderResponseError`."""
    numbers: dict[str, int] = {}
    for number, doc in enumerate(documents, start=1):
        first = numbers.setdefault(key(doc), number)
        if first != number:
            reason = f"sent documents {first} and {number} share one {what}; each must be unique"
            raise ProviderResponseError(provider, reason)
    return {key(doc): doc for doc in documents}
