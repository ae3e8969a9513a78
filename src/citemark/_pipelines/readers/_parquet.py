"""Opening a Parquet file for a reader, its footer's size capped before pyarrow parses it.

A Parquet file ends with its footer (the schema and one entry per column chunk of
every row group), the footer's length as 4 little-endian bytes, and ``PAR1``.
pyarrow parses the whole footer when the file is opened, before any row is read,
into structures about nine times its size: 36,000 one-row groups of seven columns
give a 25 MB footer and 230 MB more memory before the first row. `parquet_file` reads
the length from the file's last 8 bytes first and refuses a footer over
`MAX_FOOTER_BYTES` with a one-line `citemark.NoRowsError` (no row of it is read;
``citemark check`` prints it as its one-line error and exits 2) that names the bound
and how to write the file again (fewer, larger row groups). Files of ordinary row groups
have footers of kilobytes: a million spans in one group, or 1,000 groups of 30
columns, are far below the bound.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, BinaryIO, Final

from citemark._contract.errors import NoRowsError

if TYPE_CHECKING:
    from types import ModuleType

__all__ = ["MAX_FOOTER_BYTES", "footer_size", "parquet_file"]

MAX_FOOTER_BYTES: Final = 8 << 20
"""The largest Parquet footer a reader parses (8 MiB: about 11,000 row groups of seven
columns; pyarrow holds about nine times it while the file is open)."""

_MAGIC: Final = b"PAR1"
_TAIL: Final = 8
"""The footer's 4-byte length and the closing magic."""


def footer_size(handle: BinaryIO) -> int | None:
    """The footer length a Parquet file's last 8 bytes give; None when they are not Parquet's.

    None too when the length does not fit in the file (pyarrow then says the file is
    not readable). The handle must be seekable; it is left where it was.
    """
    position = handle.tell()
    try:
        size = handle.seek(0, os.SEEK_END)
        if size < len(_MAGIC) + _TAIL:
            return None
        handle.seek(size - _TAIL)
        tail = handle.read(_TAIL)
    finally:
        handle.seek(position)
    if len(tail) != _TAIL or tail[4:] != _MAGIC:
        return None
    length = int.from_bytes(tail[:4], "little")
    return length if length <= size - len(_MAGIC) - _TAIL else None


def parquet_file(pq: ModuleType, handle: BinaryIO) -> Any:  # noqa: ANN401 - pyarrow's ParquetFile
    """``pq.ParquetFile(handle)``, once its footer is known to be at most `MAX_FOOTER_BYTES`.

    Args:
        pq: ``pyarrow.parquet``, imported by the caller (pyarrow is optional).
        handle: The file, opened in binary mode and seekable.

    Raises:
        NoRowsError: the footer is over `MAX_FOOTER_BYTES`; the message gives both
            sizes and how to write the file again, nothing of its content.
        Exception: whatever pyarrow raises for a file it cannot read.
    """
    length = footer_size(handle)
    if length is not None and length > MAX_FOOTER_BYTES:
        msg = (
            f"the Parquet file's footer is {length:,} bytes, over the {MAX_FOOTER_BYTES:,} "
            "citemark reads (it lists every row group: the file has very many small ones); "
            "write it again with fewer, larger row groups, e.g. "
            "pyarrow.parquet.write_table(pyarrow.parquet.read_table(IN), OUT, "
            "row_group_size=1_000_000)"
        )
        raise NoRowsError(msg)
    return pq.ParquetFile(handle)
