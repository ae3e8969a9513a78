"""Human-labelled sets: the ground truth a judge is calibrated against (SPEC §3.11).

A `LabelSet` is its own file, with its own schema and its own integrity check, the
golden corpus's discipline applied to labels (ADR decision 5). Each `LabelledItem`
holds a question, an answer, the sources it was written from, the human
``faithful`` label, the unsupported claims the labeller found, the labeller and the
rubric version. Every item has a content hash (SHA-256 of its canonical JSON) and
the set has a hash over its items' ids and content hashes; a registration and a
measurement record the set hash, so a label set edited after either no longer
matches them. Reading a file checks everything: strict JSON, the schema, unique
ids, each item's hash, and the set hash. Error messages name item positions, never
item text.

The JSON is parsed by `citemark._model.strictjson.loads_strict`, the parser model replies
go through, under a cap of its own, `MAX_LABEL_FILE_BYTES`: a label set carries
every item's sources verbatim, so an ordinary one outgrows the 1 MB cap on a model
reply. Every parse failure, the decoder's and the parser's alike, becomes the
documented `citemark.LabelSetError` (a `ValueError` too) with a fixed message and
no chained exception: ``UnicodeDecodeError.object`` and ``JSONDecodeError.doc`` both
hold the whole file.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StrictBool,
    StrictStr,
    ValidationError,
    model_validator,
)

from citemark._contract.artifacts import Sha256, write_report_atomically
from citemark._contract.errors import LabelSetError
from citemark._contract.models import Source
from citemark._contract.validation import describe_validation_error
from citemark._model.strictjson import StrictJSONError, loads_strict

if TYPE_CHECKING:
    import os

__all__ = ["LabelSet", "LabelledItem"]

_CONFIG: Final = ConfigDict(
    frozen=True, extra="forbid", use_attribute_docstrings=True, hide_input_in_errors=True
)

MAX_LABEL_FILE_BYTES: Final = 64_000_000
"""The largest label file that is read at all, in UTF-8 bytes (64 MB).

Larger than the 1 MB cap on a model reply because a label set holds every item's
question, answer and sources verbatim: a few hundred items with a few sources each
already run to megabytes, and 64 MB leaves room for tens of thousands. It still
bounds what one file can cost, since the parsed objects take several times the
bytes. `LabelSet.read` reads no more than one byte past it.
"""

_PARSE_FAILURES: Final = {
    "too large": f"the label file is larger than {MAX_LABEL_FILE_BYTES} bytes",
    "not JSON": "the label file is not JSON",
    "duplicate key": "the label file is not strict JSON: a key is given twice",
    "non-finite number": (
        "the label file is not strict JSON: it holds NaN, Infinity or a number too large "
        "for a float"
    ),
    "nesting too deep": "the label file is not strict JSON: it nests deeper than the parser allows",
}
_NOT_UTF8: Final = "the label file is not UTF-8 text"


class LabelledItem(BaseModel):
    """One answer a human labelled against the rubric the judge is given."""

    model_config = _CONFIG

    id: StrictStr = Field(min_length=1)
    """The item's id, unique in its set."""

    question: StrictStr
    """The question the answer responds to."""

    answer: StrictStr
    """The answer text, markers kept, as the judge will see it."""

    sources: tuple[Source, ...] = Field(min_length=1)
    """The sources the answer was written from, in the order it cites them."""

    faithful: StrictBool
    """The human label: whether every claim of the answer is supported."""

    unsupported_claims: tuple[StrictStr, ...] = ()
    """The claims the labeller found unsupported, quoted from the answer."""

    labeller: StrictStr = Field(min_length=1)
    """Who labelled the item."""

    rubric_version: StrictStr = Field(min_length=1)
    """The version of the rubric the label follows."""

    @model_validator(mode="after")
    def _check_coherent(self) -> LabelledItem:
        if self.faithful and self.unsupported_claims:
            msg = "an item labelled faithful cannot list unsupported claims"
            raise ValueError(msg)
        return self

    @property
    def content_sha256(self) -> str:
        """SHA-256 of the item's canonical JSON (sorted keys, defaults left out)."""
        return _sha256(self.model_dump(mode="json", exclude_defaults=True))


class LabelSet(BaseModel):
    """A human-labelled set: the ground truth a judge is measured against.

    The file format is one JSON object: ``schema_version`` (1), ``sha256`` (the set
    hash) and ``items``, each item's fields plus its ``content_sha256``. `write`
    produces it and `read` checks it: strict JSON (no duplicate keys, no ``NaN``),
    the schema, unique ids, every item's content hash, and the set hash. The set
    hash covers the sorted ``(id, content_sha256)`` pairs, so reordering items keeps
    it and editing one changes it.

    Example:
        ```python
        import tempfile
        from pathlib import Path

        from citemark import LabelledItem, LabelSet, Source

        item = LabelledItem(
            id="q1",
            question="When do fees rise?",
            answer="In May [1].",
            sources=[Source(text="Fees rise in May.", doc_id="fees")],
            faithful=True,
            labeller="ana",
            rubric_version="2026-01",
        )
        with tempfile.TemporaryDirectory() as folder:
            path = LabelSet(items=[item]).write(Path(folder) / "labels.json")
            print(LabelSet.read(path).sha256 == LabelSet(items=[item]).sha256)
        #> True
        ```
    """

    model_config = _CONFIG

    schema_version: Literal[1] = 1
    """The label file format's version."""

    items: tuple[LabelledItem, ...] = Field(min_length=1)
    """The labelled items, ids unique."""

    @model_validator(mode="after")
    def _check_unique_ids(self) -> LabelSet:
        first: dict[str, int] = {}
        for position, item in enumerate(self.items, start=1):
            if item.id in first:
                msg = f"item {position} repeats the id of item {first[item.id]}"
                raise ValueError(msg)
            first[item.id] = position
        return self

    @property
    def sha256(self) -> str:
        """The set hash: SHA-256 over the sorted ``(id, content_sha256)`` pairs."""
        pairs = sorted((item.id, item.content_sha256) for item in self.items)
        return _sha256({"schema_version": self.schema_version, "items": pairs})

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the set, with its hashes, atomically to ``path``; return the path."""
        document = {
            "schema_version": self.schema_version,
            "sha256": self.sha256,
            "items": [
                {**item.model_dump(mode="json"), "content_sha256": item.content_sha256}
                for item in self.items
            ],
        }
        text = json.dumps(document, ensure_ascii=False, indent=2, allow_nan=False) + "\n"
        return write_report_atomically(path, text)

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> LabelSet:
        """Read a label file and check its integrity.

        Raises:
            LabelSetError: the file is larger than `MAX_LABEL_FILE_BYTES`, not UTF-8,
                not strict JSON (a duplicate key, ``NaN``, ``Infinity``, a number
                beyond the float range, nesting deeper than the parser allows) or
                not the schema, an id is repeated, an item holds a lone surrogate,
                an item's content does not match its ``content_sha256``, or the items
                do not match the set's ``sha256``. Messages name item positions,
                never item text, and every error is raised from None.
            OSError: the file cannot be opened or read.
        """
        with Path(path).open("rb") as file:
            # One byte past the cap is enough to know the file is too large.
            data = file.read(MAX_LABEL_FILE_BYTES + 1)
        return cls.from_json(data)

    @classmethod
    def from_json(cls, data: bytes | str) -> LabelSet:
        """Parse and check a label file's content; see `read`.

        Bytes must be UTF-8 (a leading byte-order mark is allowed).

        Raises:
            LabelSetError: as `read` describes.
        """
        try:
            stored = _StoredLabelSet.model_validate(_parse(data))
        except ValidationError as exc:
            msg = f"the label file does not fit its schema: {_describe(exc)}"
            raise LabelSetError(msg) from None
        items: list[LabelledItem] = []
        kept: list[str] = []
        for position, raw in enumerate(stored.items, start=1):
            fields = dict(raw)
            content_sha256 = fields.pop("content_sha256", None)
            if not isinstance(content_sha256, str):
                msg = f"item {position} has no content_sha256"
                raise LabelSetError(msg)
            try:
                items.append(LabelledItem.model_validate(fields))
            except ValidationError as exc:
                msg = f"item {position} does not fit the item schema: {_describe(exc)}"
                raise LabelSetError(msg) from None
            kept.append(content_sha256)
        try:
            label_set = cls(items=tuple(items))
        except ValidationError as exc:
            msg = f"the label set fails its integrity check: {_describe(exc)}"
            raise LabelSetError(msg) from None
        for position, (item, content_sha256) in enumerate(zip(items, kept, strict=True), start=1):
            actual = _content_sha256(item)
            if actual is None:
                msg = f"item {position} holds a lone surrogate, which is not Unicode text"
                raise LabelSetError(msg)
            if actual != content_sha256:
                msg = f"item {position} does not match its content_sha256: it was changed"
                raise LabelSetError(msg)
        if label_set.sha256 != stored.sha256:
            msg = "the items do not match the set's sha256: items were added, removed or rehashed"
            raise LabelSetError(msg)
        return label_set


class _StoredLabelSet(BaseModel):
    """The file's outer shape; items are checked one by one, with their positions."""

    model_config = _CONFIG

    schema_version: Literal[1]
    sha256: Sha256
    items: tuple[dict[str, JsonValue], ...]


def _describe(exc: ValidationError) -> str:
    """Name the failing fields and error types; an unexpected key is never printed.

    A whole-model failure has no field; its message is one of this module's own
    structural sentences (``item 2 repeats the id of item 1``), kept as written.
    """
    known = set(LabelledItem.model_fields) | set(_StoredLabelSet.model_fields)
    return describe_validation_error(exc, known)


def _parse(data: bytes | str) -> object:
    """The file's JSON value, or a `LabelSetError` with a fixed message and no chain.

    Each error is raised after its handler has ended, so the decoder's exception is
    neither the cause nor the context: it holds the whole file.
    """
    if isinstance(data, str):
        text: str | None = data
    else:
        if len(data) > MAX_LABEL_FILE_BYTES:
            raise LabelSetError(_PARSE_FAILURES["too large"])
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = None
    if text is None:
        raise LabelSetError(_NOT_UTF8)
    kind: str
    try:
        return loads_strict(text, max_bytes=MAX_LABEL_FILE_BYTES)
    except StrictJSONError as exc:
        kind = exc.kind
    raise LabelSetError(_PARSE_FAILURES.get(kind, _PARSE_FAILURES["not JSON"]))


def _content_sha256(item: LabelledItem) -> str | None:
    r"""The item's content hash, or None when its text cannot be written as UTF-8.

    A ``"\ud800"`` escape parses to a lone surrogate, which UTF-8 cannot hold; the
    ``UnicodeEncodeError`` hashing raises would carry the item's text in ``.object``.
    """
    try:
        return item.content_sha256
    except UnicodeEncodeError:
        return None


def _sha256(value: object) -> str:
    encoded = json.dumps(
        value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False
    )
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()
