"""`citemark check --from ragas` and `--from deepeval`, on files the libraries themselves write.

Every file read here is written in the test by Ragas 0.4.3 (`EvaluationDataset.to_jsonl`,
`to_csv`) or DeepEval 4.3.1 (`EvaluationDataset.save_as` as json, jsonl and csv), run in
the formats environment (`tests/formats_env.py`), never written by hand.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from formats_env import produce

from citemark._contract.reasons import RECORDED_REASONS
from citemark._pipelines.readers import ReadOptions, Recorded, deepeval, ragas, reader_for

CANARY = "canary-7f3a9"

# Contexts a naive reader gets wrong: a quote in a Python repr, a comma, a "|", a line break.
CHEETAH = [
    "Lions live in prides and hunt mostly at night.",
    "The cheetah's top speed is 93 to 104 km/h, the fastest on land.",
    "Cheetahs live in Africa | Iran.",
]
RAGAS_SPEC = [
    {
        "user_input": "How fast is a cheetah?",
        "retrieved_contexts": CHEETAH,
        "retrieved_context_ids": ["lion#0", "cheetah#0", "cheetah#1"],
        "response": "A cheetah runs 93 to 104 km/h [2]. It lives in Africa and Iran [3].",
        "reference": "93 to 104 km/h",
    },
    {
        "user_input": "Where do lions live?",
        "retrieved_contexts": ['Lions live in prides.\nA "pride" is a family group.'],
        "response": "In prides [1].",
    },
    {"user_input": "Nothing retrieved?", "response": "No sources [1]."},
]
DEEPEVAL_SPEC = [
    {
        "input": "How fast is a cheetah?",
        "actual_output": "A cheetah runs 93 to 104 km/h [2]. Not in Iran [3].",
        "retrieval_context": [CHEETAH[0], CHEETAH[1], "left | right"],
    },
    {
        "input": "Where do lions live?",
        "actual_output": "In prides [1].",
        "retrieval_context": [{"context": "Lions live in prides, as families.", "source": "doc-1"}],
    },
    {
        "input": "One context?",
        "actual_output": "Just one [1].",
        "retrieval_context": ["Only one context, with a comma."],
    },
    {"input": "Nothing retrieved?", "actual_output": "No sources [1]."},
]


@pytest.fixture(scope="module")
def ragas_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Ragas' own JSONL and CSV of `RAGAS_SPEC`."""
    work = tmp_path_factory.mktemp("ragas")
    produce("ragas_dataset", RAGAS_SPEC, work / "out", work)
    return work / "out"


@pytest.fixture(scope="module")
def deepeval_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """DeepEval's own JSON, JSONL and CSV of `DEEPEVAL_SPEC`."""
    work = tmp_path_factory.mktemp("deepeval")
    produce("deepeval_dataset", DEEPEVAL_SPEC, work / "out", work)
    return work / "out"


def read_all(name: str, path: Path, index_base: int | None = None) -> list[Recorded]:
    with path.open("rb") as handle:
        return list(reader_for(name)(handle, ReadOptions(index_base=index_base)))


def check(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "citemark", "check", *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
    )


def result_rows(out: Path) -> list[dict[str, object]]:
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    for row in rows:
        row.pop("run_id")
    return rows


def write_native(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


# --- Ragas ------------------------------------------------------------------------


def expected_ragas_rows() -> list[dict[str, object]]:
    """The rows RAGAS_SPEC means, written from the spec (not from the reader)."""
    return [
        {
            "question": "How fast is a cheetah?",
            "answer": RAGAS_SPEC[0]["response"],
            "sources": [
                {"text": text, "doc_id": doc_id}
                for text, doc_id in zip(CHEETAH, ["lion#0", "cheetah#0", "cheetah#1"], strict=True)
            ],
        },
        {
            "question": "Where do lions live?",
            "answer": "In prides [1].",
            "sources": [{"text": RAGAS_SPEC[1]["retrieved_contexts"][0], "doc_id": "1"}],
        },
    ]


def test_ragas_jsonl_is_read_in_list_order_with_its_ids(ragas_files: Path) -> None:
    """Each to_jsonl line is a row: contexts in list order, ids from retrieved_context_ids, else positions."""
    records = read_all("ragas", ragas_files / "ragas.jsonl")
    assert [record.line for record in records] == [1, 2, 3]
    assert [dict(record.row or {}) for record in records[:2]] == expected_ragas_rows()
    assert all(record.unassessed is None for record in records[:2])
    assert "id" not in (records[0].row or {})
    # A sample with no retrieved_contexts is un-assessed, not a row with no sources.
    assert records[2].unassessed == "no_retrieval_recorded"
    assert records[2].unassessed in RECORDED_REASONS


@pytest.mark.parametrize(
    ("name", "fixture"), [("ragas", "ragas_files"), ("deepeval", "deepeval_files")]
)
def test_an_unclosed_csv_quote_is_reported_not_swallowed(
    name: str, fixture: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The tool's own CSV with a quote opened in the first record's last cell, never closed.

    The csv module's lenient default reads every later line into that one cell: the
    first record keeps the header's number of cells and is read as a sound row, and
    the others vanish without a reason (the naive reading below). Read strictly, the
    record is malformed with a reason that counts the lines lost, and none is a row.
    """
    files: Path = request.getfixturevalue(fixture)
    lines = (files / f"{name}.csv").read_bytes().split(b"\r\n")
    assert b"" == lines.pop()
    *before, damaged_line, last = lines  # the last record holds no quote to close it
    comma = damaged_line.rindex(b",") + 1
    damaged = tmp_path / f"{name}.csv"
    opened = damaged_line[:comma] + b'"' + damaged_line[comma:]
    damaged.write_bytes(b"\r\n".join([*before, opened, last, b""]))
    naive = list(csv.reader(io.StringIO(damaged.read_text(encoding="utf-8"), newline="")))
    # One record short, and no error: the damaged one keeps the header's width.
    assert len(before) + 1 == len(naive)
    assert len(naive[0]) == len(naive[-1])
    records = read_all(name, damaged)
    good = read_all(name, files / f"{name}.csv")
    assert [r.row for r in good[: len(before) - 1]] == [r.row for r in records[:-1]]
    assert (len(before), None) == (records[-1].line, records[-1].row)
    lost = 2
    assert (
        f"not valid CSV: a quoted cell is never closed, so the {lost} lines from this "
        "record to the end of the file could not be read"
    ) == records[-1].malformed


def test_a_csv_cell_with_text_after_its_closing_quote_is_one_malformed_record(
    ragas_files: Path, tmp_path: Path
) -> None:
    """Strict quoting: ``"a"b`` is one malformed record, and the records after it are read."""
    header, first, *rest = (ragas_files / "ragas.csv").read_bytes().split(b"\r\n")
    damaged = tmp_path / "ragas.csv"
    damaged.write_bytes(
        b"\r\n".join([header, b'"Odd"question' + first[first.index(b",") :], *rest])
    )
    records = read_all("ragas", damaged)
    good = read_all("ragas", ragas_files / "ragas.csv")
    assert "not valid CSV: a quoted cell has text after its closing quote" == records[0].malformed
    assert [r.row for r in good[1:]] == [r.row for r in records[1:]]


def test_ragas_samples_dumped_as_a_json_array_read_as_its_jsonl(ragas_files: Path) -> None:
    """``json.dump(dataset.to_list(), f)`` and ``to_pandas().to_parquet()``: the JSONL's rows.

    Both are written by Ragas itself; rows are numbered by their position.
    """
    from_jsonl = [r.row for r in read_all("ragas", ragas_files / "ragas.jsonl")]
    for name in ("ragas.json", "ragas.parquet"):
        records = read_all("ragas", ragas_files / name)
        assert from_jsonl == [r.row for r in records], name
        assert [1, 2, 3] == [r.line for r in records]


def test_ragas_csv_reads_the_same_rows_as_its_jsonl(ragas_files: Path) -> None:
    """to_csv's Python-repr list cells are parsed back exactly; a naive split is not."""
    from_jsonl = read_all("ragas", ragas_files / "ragas.jsonl")
    from_csv = read_all("ragas", ragas_files / "ragas.csv")
    assert [(r.line, r.row, r.unassessed) for r in from_csv] == [
        (r.line, r.row, r.unassessed) for r in from_jsonl
    ]
    # The cell really is a repr (the quote in "cheetah's" makes Python switch quote
    # characters), so JSON cannot read it and splitting on "', '" cuts it wrongly.
    header, first = (ragas_files / "ragas.csv").read_text().splitlines()[:2]
    assert "retrieved_contexts" in header
    cell = next(part for part in _csv_cells(first) if part.startswith("['Lions"))
    with pytest.raises(json.JSONDecodeError):
        json.loads(cell)
    naive = cell.strip("[]").split("', '")
    assert naive != CHEETAH
    assert ragas.repr_list(cell) == CHEETAH


def _csv_cells(line: str) -> list[str]:
    import csv

    return next(csv.reader([line]))


@pytest.mark.parametrize(
    "cell",
    [
        "__import__('os').system('echo pwned')",
        "[__import__('os').getcwd()]",
        "['a', b]",
        "['a' + 'b']",
        "[1 + 1]",
        "[True, 'x']",
        "[['nested']]",
        "{'a': 1}",
        "('a', 'b')",
        "[" * 500,
        "not python",
    ],
)
def test_ragas_list_cells_are_never_evaluated(cell: str) -> None:
    """Only a list of string or integer constants is accepted; no expression is run."""
    assert ragas.repr_list(cell) is None
    # The safe evaluator agrees on the accepted shape.
    assert ragas.repr_list("['a', \"it's\", 3]") == ast.literal_eval("['a', \"it's\", 3]")


def test_ragas_malformed_samples_name_fields_never_values(tmp_path: Path) -> None:
    """A bad sample is malformed with a reason about a Ragas field; no value of the file is quoted."""
    lines = [
        {"user_input": CANARY, "retrieved_contexts": [CANARY, 3], "response": CANARY},
        {"user_input": CANARY, "retrieved_contexts": [CANARY], CANARY: CANARY},
        {
            "user_input": CANARY,
            "retrieved_contexts": [CANARY],
            "retrieved_context_ids": ["a", "b"],
            "response": CANARY,
        },
        {"user_input": [{"content": CANARY}], "response": CANARY, "retrieved_contexts": []},
    ]
    path = write_native(tmp_path / "bad.jsonl", lines)
    with path.open("ab") as handle:
        handle.write(b'{"response": "' + CANARY.encode() + b'", "response": "x"}\n')
        handle.write(b"\xff" + CANARY.encode() + b"\n")
    records = read_all("ragas", path)
    reasons = [record.malformed for record in records]
    assert reasons == [
        "retrieved_contexts must be a list of strings",
        "response is missing",
        "retrieved_context_ids has 2 entries for 1 retrieved_contexts",
        "user_input must be a string (a multi-turn sample is not read)",
        "not strict JSON: an object gives a key twice",
        "not UTF-8 text",
    ]
    assert all(CANARY not in (reason or "") for reason in reasons)


def test_ragas_end_to_end_matches_the_native_format(ragas_files: Path, tmp_path: Path) -> None:
    """`check --from ragas` gives the same rows.jsonl as the same rows in citemark's format."""
    native_rows = expected_ragas_rows()
    native = write_native(tmp_path / "native.jsonl", native_rows)
    for name in ("ragas.jsonl", "ragas.csv"):
        out = tmp_path / name
        done = check(ragas_files / name, "--from", "ragas", "--out", out)
        assert done.returncode == 0, done.stderr
        results = result_rows(out)
        assert results[2]["reason"] == "no_retrieval_recorded"
        native_out = tmp_path / "native"
        assert check(native, "--out", native_out).returncode == 0
        assert results[:2] == result_rows(native_out)


def test_ragas_index_base_applies_to_the_list_order(ragas_files: Path, tmp_path: Path) -> None:
    """With --index-base 0 the first context is [0]; the result equals a native 0-based row."""
    records = read_all("ragas", ragas_files / "ragas.jsonl", index_base=0)
    assert all((record.row or {}).get("index_base") == 0 for record in records)
    native = write_native(
        tmp_path / "native.jsonl", [{**row, "index_base": 0} for row in expected_ragas_rows()]
    )
    out, native_out = tmp_path / "ragas", tmp_path / "native"
    done = check(ragas_files / "ragas.jsonl", "--from", "ragas", "--index-base", "0", "--out", out)
    assert done.returncode == 0, done.stderr
    assert check(native, "--index-base", "0", "--out", native_out).returncode == 0
    results = result_rows(out)
    assert results[:2] == result_rows(native_out)
    # 0-based, the answer's [3] names no source: the numbering really moved.
    assert results[0]["details"]["fabricated_citations"]


# --- DeepEval ------------------------------------------------------------------------


def expected_deepeval_rows() -> list[dict[str, object]]:
    """The rows DEEPEVAL_SPEC means, written from the spec (not from the reader)."""
    return [
        {
            "question": "How fast is a cheetah?",
            "answer": DEEPEVAL_SPEC[0]["actual_output"],
            "sources": [
                {"text": CHEETAH[0], "doc_id": "1"},
                {"text": CHEETAH[1], "doc_id": "2"},
                {"text": "left | right", "doc_id": "3"},
            ],
        },
        {
            "question": "Where do lions live?",
            "answer": "In prides [1].",
            "sources": [{"text": "Lions live in prides, as families.", "doc_id": "doc-1"}],
        },
        {
            "question": "One context?",
            "answer": "Just one [1].",
            "sources": [{"text": "Only one context, with a comma.", "doc_id": "1"}],
        },
    ]


def test_deepeval_json_keeps_each_context_whole(deepeval_files: Path) -> None:
    """save_as json keeps retrieval_context a list: "left | right" is one source, in list order."""
    records = read_all("deepeval", deepeval_files / "deepeval.json")
    assert [record.line for record in records] == [1, 2, 3, 4]
    assert [dict(record.row or {}) for record in records[:3]] == expected_deepeval_rows()
    assert records[3].unassessed == "no_retrieval_recorded"


def test_deepeval_retrieved_context_data_keeps_its_source(deepeval_files: Path) -> None:
    """The `deepeval_source=...,deepeval_context=...` string becomes doc_id and text, in every file type."""
    raw = json.loads((deepeval_files / "deepeval.json").read_text())
    assert raw[1]["retrieval_context"] == [
        "deepeval_source=doc-1,deepeval_context=Lions live in prides, as families."
    ]
    for name in ("deepeval.json", "deepeval.jsonl", "deepeval.csv"):
        (record,) = [r for r in read_all("deepeval", deepeval_files / name) if r.line == 2]
        assert (record.row or {})["sources"] == [
            {"text": "Lions live in prides, as families.", "doc_id": "doc-1"}
        ]


@pytest.mark.parametrize("name", ["deepeval.jsonl", "deepeval.csv"])
def test_deepeval_joined_contexts_are_unassessed_not_split(deepeval_files: Path, name: str) -> None:
    """CSV and JSONL join retrieval_context with "|": that row is `contexts_joined`, never split.

    The naive variant, splitting on "|" as DeepEval's own loader does, gets four sources
    where the model saw three, so [3] would name "right" instead of "left | right".
    """
    records = read_all("deepeval", deepeval_files / name)
    assert records[0].unassessed == "contexts_joined"
    assert (records[0].row or {})["sources"] == []
    # A joined string with no "|" can only be one context: read as one source.
    assert records[2].unassessed is None
    assert [dict(r.row or {}) for r in records[1:3]] == expected_deepeval_rows()[1:3]
    assert records[3].unassessed == "no_retrieval_recorded"
    if name.endswith(".jsonl"):
        joined = json.loads((deepeval_files / name).read_text().splitlines()[0])[
            "retrieval_context"
        ]
        naive = joined.split("|")
        truth = [source["text"] for source in expected_deepeval_rows()[0]["sources"]]
        assert len(naive) == 4
        assert naive[2] != truth[2]


def test_deepeval_end_to_end_matches_the_native_format(
    deepeval_files: Path, tmp_path: Path
) -> None:
    """`check --from deepeval` on save_as json gives the native format's rows.jsonl."""
    native = write_native(tmp_path / "native.jsonl", expected_deepeval_rows())
    out, native_out = tmp_path / "deepeval", tmp_path / "native"
    done = check(deepeval_files / "deepeval.json", "--from", "deepeval", "--out", out)
    assert done.returncode == 0, done.stderr
    assert check(native, "--out", native_out).returncode == 0
    results = result_rows(out)
    assert results[:3] == result_rows(native_out)
    assert results[3]["reason"] == "no_retrieval_recorded"
    jsonl_out = tmp_path / "jsonl"
    done = check(deepeval_files / "deepeval.jsonl", "--from", "deepeval", "--out", jsonl_out)
    assert done.returncode == 0, done.stderr
    assert result_rows(jsonl_out)[0]["reason"] == "contexts_joined"


class _Trickle(io.RawIOBase):
    """A file that hands out at most `size` bytes per read, and fails past `stop`."""

    def __init__(self, data: bytes, size: int, stop: int | None = None) -> None:
        self._data, self._size, self._stop, self._at = data, size, stop, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._at

    def seek(self, offset: int, whence: int = 0) -> int:
        self._at = offset
        return offset

    def read(self, size: int = -1) -> bytes:
        if self._stop is not None and self._at >= self._stop:
            msg = "read past the first element"
            raise AssertionError(msg)
        chunk = self._data[self._at : self._at + self._size]
        self._at += len(chunk)
        return chunk


TRICKY_ELEMENTS = [
    {"a": 'comma, bracket ] brace } quote " backslash \\', "b": [1, {"c": "[,]"}]},
    {"s": '\\\\\\"', "u": "é ünïcode ✓", "n": None},
    [],
    "a string, element",
    {"empty": {}, "list": [[], [[]]]},
]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 1 << 16])
def test_deepeval_array_splitter_matches_json_at_every_block_size(size: int) -> None:
    """The streaming splitter gives exactly the array's elements, however the blocks fall.

    The naive variant, splitting on top-level commas without tracking strings, cuts
    the first element at the comma inside its string.
    """
    text = json.dumps(TRICKY_ELEMENTS, indent=2, ensure_ascii=False).encode("utf-8")
    elements = list(deepeval._array_elements(_Trickle(text, size)))  # type: ignore[arg-type]
    assert [json.loads(element) for element in elements] == TRICKY_ELEMENTS
    naive = _naive_split(text)
    assert len(naive) != len(TRICKY_ELEMENTS)


def _naive_split(text: bytes) -> list[bytes]:
    depth, parts, current = 0, [], bytearray()
    for byte in text[1:-1]:
        char = bytes([byte])
        if char in b"[{":
            depth += 1
        elif char in b"]}":
            depth -= 1
        if char == b"," and depth == 0:
            parts.append(bytes(current))
            current.clear()
        else:
            current += char
    return [*parts, bytes(current)]


def test_deepeval_json_is_streamed_not_read_whole() -> None:
    """The first test case is yielded before the reader reads past it."""
    case = {"input": "q", "actual_output": "a [1].", "retrieval_context": ["x"]}
    text = ("[" + json.dumps(case) + ",\n" + json.dumps(case) * 1000 + "]").encode()
    first_end = len(json.dumps(case)) + 2
    handle = _Trickle(text, 16, stop=first_end + 64)
    records = deepeval.read(handle, ReadOptions())  # type: ignore[arg-type]
    first = next(records)
    assert first.row is not None
    assert first.row["sources"] == [{"text": "x", "doc_id": "1"}]


@pytest.mark.parametrize(
    ("text", "reasons"),
    [
        (b'[{"actual_output": "a", "retrieval_context": ["x"]}', ["cut short"]),
        (b'[{"actual_output": "a", "retrieval_context": ["x"]}] trailing', ["", "follows"]),
        (b'[{"actual_output": "a", "actual_output": "b"}]', ["twice"]),
        (b'[{"actual_output": 3}, 7]', ["must be a string", "not a JSON object"]),
        (b'[{"actual_output": "a", "retrieval_context": "x|y"}]', ["list of strings"]),
    ],
)
def test_deepeval_broken_json_is_malformed_structurally(text: bytes, reasons: list[str]) -> None:
    """A cut, trailing or invalid array gives malformed records whose reasons quote nothing."""
    records = list(deepeval.read(io.BytesIO(text), ReadOptions()))
    assert len(records) == len(reasons)
    for record, reason in zip(records, reasons, strict=True):
        if reason:
            assert reason in (record.malformed or "")
        else:
            assert record.malformed is None
