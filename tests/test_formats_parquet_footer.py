"""A Parquet file of very many row groups is refused by its footer's size (issue 38, item 6).

pyarrow parses a Parquet file's whole footer (one entry per column chunk of every row
group) when the file is opened, before a row is read: 36,000 one-row groups of 30
columns (a 110 MB footer) peaked at 1.5 GB where the same rows in one group took
410 MB. The readers now read the footer's length from the file's last 8 bytes first
and refuse one over `MAX_FOOTER_BYTES` with a `NoRowsError` that names the bound and
how to write the file again; pyarrow never parses it. The files here are real
pyarrow files of a few hundred one-row groups, the bound lowered for the test; the
real CLI is run on a sparse file whose last 8 bytes give a footer over the real bound.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fake_openai import run_cli

from citemark import NoRowsError
from citemark._pipelines.readers import ReadOptions, _parquet, reader_for
from citemark._pipelines.readers._hints import file_hint

if TYPE_CHECKING:
    from pathlib import Path

GROUPS = 300
SPANS = {
    "context.trace_id": [f"{n:032x}" for n in range(1, GROUPS + 1)],
    "context.span_id": [f"{n:016x}" for n in range(1, GROUPS + 1)],
    "parent_id": [None] * GROUPS,
    "span_kind": ["LLM"] * GROUPS,
    "attributes.llm.output_messages": [[{"message.content": "An answer [1]."}]] * GROUPS,
}
SAMPLES = {"user_input": ["q"] * GROUPS, "response": ["An answer."] * GROUPS}
TABLES = {"openinference": SPANS, "ragas": SAMPLES}


def many_groups(tmp_path: Path, name: str) -> Path:
    """The table of ``name``'s reader written with one row per row group."""
    path = tmp_path / f"{name}.parquet"
    pq.write_table(pa.table(TABLES[name]), path, row_group_size=1)
    return path


def test_the_footer_size_is_read_from_the_last_eight_bytes(tmp_path):
    """What `footer_size` reads is the footer pyarrow parses; a handle is left where it was."""
    path = many_groups(tmp_path, "openinference")
    with path.open("rb") as handle:
        handle.seek(5)
        assert pq.ParquetFile(path).metadata.serialized_size == _parquet.footer_size(handle)
        assert 5 == handle.tell()
    for data in (b"", b"PAR1PAR1", b"PAR1" + b"\0" * 8, b"PAR1\xff\xff\xff\x7fPAR1"):
        assert _parquet.footer_size(io.BytesIO(data)) is None  # not Parquet's, or too long


@pytest.mark.parametrize("name", TABLES)
def test_a_footer_over_the_bound_is_refused_before_pyarrow_parses_it(tmp_path, monkeypatch, name):
    """With the bound below this file's footer: a NoRowsError naming both sizes, nothing parsed."""
    path = many_groups(tmp_path, name)
    footer = pq.ParquetFile(path).metadata.serialized_size
    assert footer > 300 * 5  # one entry per column chunk of every row group
    monkeypatch.setattr(_parquet, "MAX_FOOTER_BYTES", footer - 1)

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError

    monkeypatch.setattr(pq, "ParquetFile", never)
    with path.open("rb") as handle, pytest.raises(NoRowsError) as refused:
        list(reader_for(name)(handle, ReadOptions()))
    message = str(refused.value)
    assert f"footer is {footer:,} bytes, over the {footer - 1:,}" in message
    assert "fewer, larger row groups" in message
    assert "\n" not in message
    with path.open("rb") as handle:
        hint = file_hint(handle)
    assert hint is not None
    assert hint.endswith("once written again with fewer, larger row groups")


@pytest.mark.parametrize("name", TABLES)
def test_a_footer_at_the_bound_is_read(tmp_path, monkeypatch, name):
    """The same file with the bound at its footer's size: every row group is read."""
    path = many_groups(tmp_path, name)
    monkeypatch.setattr(_parquet, "MAX_FOOTER_BYTES", pq.ParquetFile(path).metadata.serialized_size)
    with path.open("rb") as handle:
        records = list(reader_for(name)(handle, ReadOptions()))
    assert GROUPS == len(records)


@pytest.mark.parametrize("name", TABLES)
def test_check_prints_one_line_and_publishes_nothing(tmp_path, name):
    """``citemark check FILE --from X`` on a footer over the real bound: exit 2, one line.

    The file is sparse: 9 MiB of which only its first and last 8 bytes are written,
    the last giving a 9 MiB footer. The old code handed it to pyarrow.
    """
    path = tmp_path / "huge-footer.parquet"
    footer = 9 << 20
    with path.open("wb") as handle:
        handle.write(b"PAR1")
        handle.seek(4 + footer)
        handle.write(footer.to_bytes(4, "little") + b"PAR1")
    out = tmp_path / "out"
    done = run_cli("check", str(path), "--from", name, "--out", str(out))
    assert 2 == done.returncode
    line = (
        f"citemark: error: the Parquet file's footer is {footer:,} bytes, over the "
        f"{_parquet.MAX_FOOTER_BYTES:,} citemark reads (it lists every row group: the file "
        "has very many small ones); write it again with fewer, larger row groups, e.g. "
        "pyarrow.parquet.write_table(pyarrow.parquet.read_table(IN), OUT, "
        "row_group_size=1_000_000)"
    )
    assert [line] == done.stderr.splitlines()
    assert not out.exists() or not any(out.iterdir())  # nothing is published


def test_the_ray_plan_refuses_the_footer_too(tmp_path, monkeypatch):
    """``--engine ray`` plans one shard per row group from the same footer: refused first too."""
    from citemark._pipelines.scale.plan import plan_parquet

    path = many_groups(tmp_path, "openinference")
    shards, _ = plan_parquet(path)
    assert GROUPS == len(shards)
    monkeypatch.setattr(
        _parquet, "MAX_FOOTER_BYTES", pq.ParquetFile(path).metadata.serialized_size - 1
    )
    with pytest.raises(NoRowsError, match="fewer, larger row groups"):
        plan_parquet(path)
