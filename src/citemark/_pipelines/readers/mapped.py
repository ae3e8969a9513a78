r"""``citemark check --map``: any JSONL read as rows, through JSON pointers the user names.

Each ``--map FIELD=POINTER`` option says where one citemark field lives in the
input's records, as an RFC 6901 JSON pointer (``/output/text``; ``~1`` stands for a
``/`` inside a key and ``~0`` for a ``~``; the empty pointer is the whole value)::

    citemark check runs.jsonl --map answer=/output/text --map question=/input \
        --map id=/run_id --map sources=/retrieved --map source.text=/page_content \
        --map source.doc_id=/metadata/doc --map source.chunk_id=/metadata/chunk

The row fields are ``answer`` (required), ``question``, ``id``, ``index_base`` and
one of ``sources`` or ``context``, each resolved from the record's root. The
``source.*`` fields (``text``, ``doc_id``, ``chunk_id``, ``start``, ``end``,
``uri``, ``metadata``) are resolved from each element of the ``sources`` list, in
list order, which is the numbering. Without any ``source.*`` pointer an element is
read as it stands: an object as a citemark `citemark.Source`, a plain string as a
source's text. A source whose ``doc_id`` is not mapped (or is a plain string) is
named by its 1-based position in the list: ``"1"``, ``"2"``, ...

Nothing is filled in: a pointer the user gave that a record does not hold makes
the line malformed, with a reason that names the field and the pointer (the user's
own option) and never a value of the record (``answer: /output/text is missing``).
The mapping itself is checked before the first line is read (`check_mapping`): an
unknown field or a pointer that is not RFC 6901 is a `MappingError`. The resolved
values are handed on as they are (an ``answer`` that is an object stays an object),
and ``citemark check`` reads the row as it reads a native line, so the same rows
give the same results in either file. The input is JSONL, read one line at a time,
or a JSON array of records, or records pretty-printed one after another, streamed
record by record (`citemark._pipelines.readers._records`): a row's `Recorded.line` is the line
its record starts on, or its 1-based position in the array.

An ``id`` mapped here is the user's own: it is taken to name the question across
runs (no ``id_scope``), as a dataset id does; a row mapped from a trace export keeps
its trace id only if the user maps it.
"""

from __future__ import annotations

import re
from functools import reduce
from operator import getitem
from typing import TYPE_CHECKING, Final, NamedTuple, cast

from citemark._pipelines.readers._base import Recorded
from citemark._pipelines.readers._records import json_records, json_values

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping
    from typing import BinaryIO

    from citemark._pipelines.readers._base import ReadOptions

__all__ = [
    "ROW_FIELDS",
    "SOURCE_FIELDS",
    "CheckedMapping",
    "MappingError",
    "check_mapping",
    "read",
]

ROW_FIELDS: Final = ("answer", "question", "id", "index_base", "sources", "context")
"""The row fields ``--map`` takes, each resolved from a record's root."""

SOURCE_FIELDS: Final = ("text", "doc_id", "chunk_id", "start", "end", "uri", "metadata")
"""The `citemark.Source` fields ``--map source.FIELD=...`` takes, resolved from each source."""

_SOURCE_PREFIX: Final = "source."
# An array index in a pointer: 0, or digits without a leading zero (RFC 6901 §4), at
# most 18 of them: no list is longer, and int() would refuse a token of thousands.
_ARRAY_INDEX: Final = re.compile(r"0|[1-9][0-9]{0,17}")
# A "~" not followed by 0 or 1 is not a pointer (RFC 6901 §3).
_BAD_ESCAPE: Final = re.compile(r"~(?![01])")
_MISSING: Final = object()
# `operator.getitem` typed for `_resolve`'s reduce over an untyped JSON value.
_item: Final = cast("Callable[[object, str], object]", getitem)


class MappingError(ValueError):
    """Raised when a ``--map`` mapping cannot be used: the message names the field at fault.

    The message may quote a pointer, which is the user's own option value; it never
    quotes the input.
    """


class _Pointer(NamedTuple):
    """A parsed JSON pointer: the option text as given, and its steps."""

    text: str
    keys: tuple[str, ...]
    """The unescaped tokens."""
    steps: tuple[tuple[str, int | None], ...]
    """Each token with the list index it names (None when it names none)."""


class CheckedMapping(NamedTuple):
    """A checked ``--map`` mapping: each field's parsed pointer."""

    row: tuple[tuple[str, _Pointer], ...]
    """The row fields given, in `ROW_FIELDS` order, with their pointers."""
    source: tuple[tuple[str, _Pointer], ...]
    """The ``source.*`` fields given, in `SOURCE_FIELDS` order, with their pointers."""


def check_mapping(mapping: Mapping[str, str]) -> CheckedMapping:
    """Check a ``--map`` mapping before any line is read, and parse its pointers.

    Raises:
        MappingError: a field is not one ``--map`` takes; a pointer is not RFC 6901
            (it must be empty or start with ``/``, and ``~`` must be followed by 0 or
            1); ``answer`` is not given; ``sources`` and ``context`` are both given
            or neither is; a ``source.*`` field is given without ``sources``, or
            without ``source.text``.
    """
    source_names = {_SOURCE_PREFIX + name for name in SOURCE_FIELDS}
    for field in mapping:
        if field not in ROW_FIELDS and field not in source_names:
            msg = (
                f"--map {field}: not a field --map takes "
                f"({', '.join(ROW_FIELDS)}, or source. followed by one of "
                f"{', '.join(SOURCE_FIELDS)})"
            )
            raise MappingError(msg)
    row = tuple((name, _parse(name, mapping[name])) for name in ROW_FIELDS if name in mapping)
    source = tuple(
        (name, _parse(_SOURCE_PREFIX + name, mapping[_SOURCE_PREFIX + name]))
        for name in SOURCE_FIELDS
        if _SOURCE_PREFIX + name in mapping
    )
    given = {name for name, _ in row}
    if "answer" not in given:
        msg = "--map answer=POINTER is required"
        raise MappingError(msg)
    if ("sources" in given) == ("context" in given):
        msg = "--map needs exactly one of sources=POINTER and context=POINTER"
        raise MappingError(msg)
    if source and "sources" not in given:
        msg = "--map source.* needs --map sources=POINTER"
        raise MappingError(msg)
    if source and source[0][0] != "text":
        msg = "--map source.* needs --map source.text=POINTER"
        raise MappingError(msg)
    return CheckedMapping(row, source)


def read(handle: BinaryIO, options: ReadOptions) -> Iterator[Recorded]:
    """Read a JSON file through ``options.mapping``, one `Recorded` per record.

    The mapping is checked at once, before the first line is read.

    Raises:
        MappingError: ``options.mapping`` is missing or cannot be used (`check_mapping`).
    """
    if not options.mapping:
        msg = "--map answer=POINTER is required"
        raise MappingError(msg)
    return _records(handle, check_mapping(options.mapping))


def _records(handle: BinaryIO, mapping: CheckedMapping) -> Iterator[Recorded]:
    for line, value in json_values(json_records(handle)):
        if isinstance(value, str):  # the line's reason
            yield Recorded(line, None, value)
            continue
        try:
            yield Recorded(line, _row(value, mapping))
        except _MalformedError as exc:
            yield Recorded(line, None, str(exc))


class _MalformedError(ValueError):
    """A record does not hold what the mapping names; the message is a structural reason."""


def _row(value: object, mapping: CheckedMapping) -> dict[str, object]:
    row: dict[str, object] = {}
    for name, pointer in mapping.row:
        found = _resolve(value, pointer)
        if found is _MISSING:
            msg = f"{name}: {_shown(pointer)} is missing"
            raise _MalformedError(msg)
        row[name] = found
    if "sources" in row:
        row["sources"] = _sources(row["sources"], mapping)
    return row


def _sources(value: object, mapping: CheckedMapping) -> list[object]:
    if not isinstance(value, list):
        pointer = dict(mapping.row)["sources"]
        msg = f"sources: {_shown(pointer)} is not a list"
        raise _MalformedError(msg)
    if not mapping.source:
        return [_as_source(number, item) for number, item in enumerate(value, start=1)]
    return [_mapped_source(number, item, mapping) for number, item in enumerate(value, start=1)]


def _as_source(number: int, item: object) -> object:
    """An element read as it stands: a plain string is a source's text."""
    if isinstance(item, str):
        return {"text": item, "doc_id": str(number)}
    return item


def _mapped_source(number: int, item: object, mapping: CheckedMapping) -> dict[str, object]:
    source = {name: _resolve(item, pointer) for name, pointer in mapping.source}
    for name, pointer in mapping.source:
        if source[name] is _MISSING:
            msg = f"source {number}: {name}: {_shown(pointer)} is missing"
            raise _MalformedError(msg)
    source.setdefault("doc_id", str(number))
    return source


def _resolve(value: object, pointer: _Pointer) -> object:
    """The value ``pointer`` reaches in ``value``, or `_MISSING`."""
    try:
        # The quick path: indexing with the keys goes through objects only (a list or
        # a string indexed by a str raises TypeError), so when it succeeds it is right.
        return reduce(_item, pointer.keys, value)
    except (KeyError, TypeError):
        return _walk(value, pointer.steps)


def _walk(value: object, steps: tuple[tuple[str, int | None], ...]) -> object:
    """`_resolve` step by step, through list indexes too."""
    for key, index in steps:
        # JSON gives exactly dict and list; `type(...) is` is the quick test.
        if type(value) is dict:
            value = value.get(key, _MISSING)
            if value is _MISSING:
                return _MISSING
        elif type(value) is list and index is not None and index < len(value):
            value = value[index]
        else:
            return _MISSING
    return value


def _shown(pointer: _Pointer) -> str:
    """The pointer as a reason shows it: the user's own option text."""
    return pointer.text or "(the empty pointer)"


def _parse(field: str, text: str) -> _Pointer:
    """Parse one RFC 6901 pointer, or refuse it naming its field."""
    if text and not text.startswith("/"):
        msg = f"--map {field}={text}: a JSON pointer must be empty or start with /"
        raise MappingError(msg)
    if _BAD_ESCAPE.search(text):
        msg = f"--map {field}={text}: in a JSON pointer ~ must be followed by 0 or 1"
        raise MappingError(msg)
    # "~1" before "~0", so that "~01" reads as "~1" and not as "/" (RFC 6901 §4).
    tokens = tuple(token.replace("~1", "/").replace("~0", "~") for token in text.split("/")[1:])
    steps = tuple(
        (token, int(token) if _ARRAY_INDEX.fullmatch(token) else None) for token in tokens
    )
    return _Pointer(text, tokens, steps)
