"""The Ray engine's plan: the input cut into shards, and the rows of one shard.

A `Shard` is one read task: a line-aligned byte range of a JSONL file with the
number of its first line (`plan_jsonl`), or one row group of a Parquet file
(`plan_parquet`); each plan also takes the SHA-256 of the input's bytes, the digest
the local engine records. `read_shard` gives a shard's rows, each with its line
number and JSON bytes, wherever it runs: the driver's engine
(``citemark._pipelines.scale.engine``) plans and reads through it, and so do the
workers (``citemark._pipelines.scale.shards``). It imports neither.
"""

from __future__ import annotations

import hashlib
import io
import json
import mmap
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

__all__ = ["SHARD_BYTES", "Shard", "plan_jsonl", "plan_parquet", "read_shard"]

SHARD_BYTES: Final = 8 << 20
"""About how many input bytes one read task takes."""


class Shard(NamedTuple):
    """One read task: a byte range of a JSONL file, or a row group of a Parquet file."""

    path: str
    start: int
    """The first byte (JSONL) or the row group's index (Parquet)."""
    end: int
    """One past the last byte (JSONL); unused for Parquet."""
    first_line: int
    """The 1-based line (or row) number of the shard's first row."""
    kind: str
    """``"jsonl"`` or ``"parquet"``."""


def plan_jsonl(
    path: str | os.PathLike[str], shard_bytes: int = SHARD_BYTES
) -> tuple[list[Shard], str]:
    """Cut a JSONL file into line-aligned shards; return them and the SHA-256 of its bytes.

    A shard ends at the end of the first line that takes it to ``shard_bytes`` or
    more. One pass over the file, in C (hashing, finding and counting newlines).
    """
    digest = hashlib.sha256()
    shards: list[Shard] = []
    name = os.fspath(path)
    with Path(path).open("rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            return shards, digest.hexdigest()
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            digest.update(data)
            start, first = 0, 1
            while start < size:
                cut = data.find(b"\n", start + max(shard_bytes, 1) - 1)
                end = size if cut < 0 else cut + 1
                shards.append(Shard(name, start, end, first, "jsonl"))
                first += data[start:end].count(b"\n")
                start = end
    return shards, digest.hexdigest()


def plan_parquet(path: str | os.PathLike[str]) -> tuple[list[Shard], str]:
    """One shard per row group of a Parquet file; return them and the SHA-256 of its bytes.

    Raises:
        NoRowsError: the file's footer is over
            `citemark._pipelines.readers._parquet.MAX_FOOTER_BYTES` (very many row groups).
    """
    import pyarrow.parquet as pq  # noqa: PLC0415 - optional, only for Parquet input

    from citemark._pipelines.readers._parquet import parquet_file  # noqa: PLC0415 - as pyarrow above

    name = os.fspath(path)
    with Path(name).open("rb") as handle:  # the footer capped first (issue 38, item 6)
        metadata = parquet_file(pq, handle).metadata
    shards: list[Shard] = []
    first = 1
    for group in range(metadata.num_row_groups):
        shards.append(Shard(name, group, 0, first, "parquet"))
        first += metadata.row_group(group).num_rows
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return shards, digest.hexdigest()


def read_shard(item: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The rows of one shard, each with its line number and JSON bytes (a ``flat_map`` step)."""
    shard = Shard(**{key: item[key] for key in Shard._fields})
    if shard.kind == "parquet":
        import pyarrow.parquet as pq  # noqa: PLC0415

        table = pq.ParquetFile(shard.path).read_row_group(shard.start)
        for number, row in enumerate(table.to_pylist(), start=shard.first_line):
            present = {key: value for key, value in row.items() if value is not None}
            yield {"line": number, "raw": json.dumps(present).encode("utf-8")}
        return
    with Path(shard.path).open("rb") as handle:
        handle.seek(shard.start)
        data = handle.read(shard.end - shard.start)
    # Lines end at b"\n" only, as the local check reads them (a bare "\r" is JSON whitespace).
    for number, raw in enumerate(io.BytesIO(data), start=shard.first_line):
        yield {"line": number, "raw": raw}
