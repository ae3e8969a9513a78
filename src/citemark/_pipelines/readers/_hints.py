"""Which ``--from`` reads a file given without one, decided from the file's content.

``citemark check FILE`` reads citemark's own JSONL. When the first line of FILE is not
a row, `file_hint` looks at the file itself, not at the line, and names the reader
that reads it:

* **Parquet** (the file starts with ``PAR1``): its schema's column names, read with
  pyarrow when it is installed (imported only then): a Phoenix span table (its
  ``context.trace_id`` and ``context.span_id`` columns) is read by ``--from
  openinference``, a Ragas dataset's table (``to_pandas().to_parquet()``) by ``--from
  ragas``.
* **A JSON array**: the keys of its first element.
* **A JSON object**, one or several, pretty-printed or not: the keys of the first.
* **CSV**: the columns of its header (Ragas' ``to_csv``, DeepEval's ``save_as``).

Keys are found by a scan of the file's first `HEAD_BYTES` (`JsonTokens`: strings and
structure only, no value parsed), so a first record larger than that is still
recognised by the keys it starts with. The sentence names only formats, shapes and
citemark's own words: never a key, a column or a value of the file.
"""

from __future__ import annotations

import csv
import io
import re
from typing import TYPE_CHECKING, Final

from citemark._contract.errors import CitemarkError
from citemark._pipelines.readers import sniff
from citemark._pipelines.readers._common import JsonTokens
from citemark._pipelines.readers._parquet import parquet_file

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import BinaryIO

__all__ = ["HEAD_BYTES", "file_hint"]

HEAD_BYTES: Final = 1 << 20
"""How much of the start of a file `file_hint` reads."""

_PARQUET_MAGIC: Final = b"PAR1"
_PHOENIX_COLUMNS: Final = frozenset({"context.trace_id", "context.span_id"})
_NON_BLANK: Final = re.compile(r"[^ \t\r\n]")
_COLON: Final = re.compile(rb"[ \t\r\n]*:")
_OPENERS: Final = frozenset(b"[{")
_CLOSERS: Final = frozenset(b"]}")
_QUOTE: Final = ord('"')
_KEYS_SCANNED: Final = 256
_PRODUCERS: Final = {
    "ragas": "Ragas",
    "deepeval": "DeepEval",
    "langsmith": "LangSmith",
    "openinference": "OpenInference",
    "mlflow": "MLflow",
}
# The readers that take each shape (``map`` reads JSON arrays and objects too).
_CSV_READERS: Final = frozenset({"ragas", "deepeval"})
_ARRAY_READERS: Final = frozenset({"ragas", "deepeval", "langsmith", "openinference", "mlflow"})
_OBJECT_READERS: Final = frozenset({"ragas", "langsmith", "openinference", "mlflow"})


def file_hint(handle: BinaryIO) -> str | None:
    """What reads the file behind ``handle``: a hint sentence, or None when nothing does.

    The handle must be seekable; it is left where it was.
    """
    position = handle.tell()
    try:
        handle.seek(0)
        head = handle.read(HEAD_BYTES)
        if head.startswith(_PARQUET_MAGIC):
            handle.seek(0)
            return _parquet_hint(handle)
    finally:
        handle.seek(position)
    return _text_hint(head)


def _parquet_hint(handle: BinaryIO) -> str:
    generic = (
        "the file is Parquet: --from openinference reads a Phoenix span table saved as Parquet"
    )
    try:
        import pyarrow.parquet as pq  # noqa: PLC0415 - optional, only for a Parquet file
    except ImportError:
        return f"{generic} (with pyarrow installed)"
    try:
        names = set(parquet_file(pq, handle).schema_arrow.names)
    except CitemarkError:
        return f"{generic}, once written again with fewer, larger row groups"
    except Exception:  # noqa: BLE001 - any pyarrow failure means the same thing here
        return generic
    if names >= _PHOENIX_COLUMNS:
        return (
            "the file is a Phoenix span table saved as Parquet: read it with --from openinference"
        )
    name = sniff(dict.fromkeys(names))
    if name == "ragas":
        return "the file is a Parquet table of Ragas samples: read it with --from ragas"
    if name is not None and name in _CSV_READERS:
        return (
            f"the file is a Parquet table of {_PRODUCERS[name]} records, which --from {name} "
            "does not read: save the dataset as CSV or JSONL"
        )
    return generic


def _text_hint(head: bytes) -> str | None:
    text = _decoded(head.removeprefix(b"\xef\xbb\xbf"))
    if text is None:
        return None
    start = _NON_BLANK.search(text)
    if start is None:
        return None
    first = text[start.start()]
    if first == "[":
        name = sniff(dict.fromkeys(_first_keys(head, depth=2)))
        if name is not None and name in _ARRAY_READERS:
            return (
                f"the file is a JSON array of {_PRODUCERS[name]} records: "
                f"read it with --from {name}"
            )
        return None
    if first == "{":
        name = sniff(dict.fromkeys(_first_keys(head, depth=1)))
        if name is not None and name in _OBJECT_READERS:
            return f"the file holds {_PRODUCERS[name]} records: read it with --from {name}"
        return None
    name = sniff(dict.fromkeys(_header(text[start.start() :])))
    if name is not None and name in _CSV_READERS:
        return f"the file is CSV with {_PRODUCERS[name]}'s columns: read it with --from {name}"
    return None


def _decoded(head: bytes) -> str | None:
    """The head as text; a character cut at its end is dropped, any other bad byte is None."""
    try:
        return head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if len(head) < HEAD_BYTES or exc.start < len(head) - 3:
            return None
        return head[: exc.start].decode("utf-8", errors="replace")


def _first_keys(head: bytes, *, depth: int) -> list[str]:
    """The keys of the first object at ``depth`` (1: the top level, 2: an array's element).

    Keys are strings followed by a colon; the scan stops when that object closes, or
    at the end of ``head``. A key that is not valid JSON text is skipped.
    """
    head = head.removeprefix(b"\xef\xbb\xbf")
    tokens = JsonTokens(io.BytesIO(), head)
    keys: list[str] = []
    level = 0
    inside = False
    for byte, begin, end in tokens:
        if byte in _OPENERS:
            level += 1
            inside = inside or (level == depth and byte == ord("{"))
        elif byte in _CLOSERS:
            if inside and level == depth:
                break
            level -= 1
        elif byte == _QUOTE and inside and level == depth and _COLON.match(head, end):
            keys.append(_key(tokens.take(begin, end)))
            if len(keys) >= _KEYS_SCANNED:
                break
    return keys


def _key(raw: bytes) -> str:
    try:
        return raw[1:-1].decode("utf-8")
    except UnicodeDecodeError:
        return ""


def _header(text: str) -> Iterable[str]:
    """The cells of a CSV text's first record; none when it is not CSV."""
    try:
        return next(csv.reader(io.StringIO(text), strict=True), [])
    except csv.Error:
        return []
