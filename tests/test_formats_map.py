"""``citemark check --map``: any JSONL read through the user's JSON pointers (issue #22)."""

from __future__ import annotations

import io
import itertools
import json
from typing import TYPE_CHECKING, Any

import pytest
from fake_openai import run_cli
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListChatModel
from langchain_core.load import dumpd
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnableParallel, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore

from citemark import MarkerOutOfRangeError, resolve
from citemark._pipelines.eval_report import MalformedLine
from citemark._pipelines.readers import ReadOptions, Recorded, reader_for
from citemark._pipelines.readers.citemark_rows import CheckRow, parse_recorded, parse_row
from citemark._pipelines.readers.mapped import MappingError, check_mapping, read

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from pathlib import Path

CANARY = "CANARY-5b1e0d"
CORPUS = [
    ("lion", "Lions live in prides."),
    ("cheetah", "The cheetah is the fastest land animal."),
    ("zebra", "Zebras have stripes."),
]
QUESTIONS = ["What do zebras and lions look like?", "Can cheetahs fly?"]
# Three sources are retrieved per question: [1] and [2] exist, [7] is fabricated.
ANSWERS = ["Zebras have stripes [1]. Lions live in prides [2].", "Cheetahs fly [7]."]
LANGCHAIN_MAP = {
    "id": "/run_id",
    "question": "/input/question",
    "answer": "/output/text",
    "sources": "/retrieved",
    "source.text": "/page_content",
    "source.doc_id": "/metadata/doc",
    "source.chunk_id": "/metadata/chunk",
}


def run_chain() -> list[dict[str, object]]:
    """Run a real LangChain RAG chain (fake model, in-memory store) on `QUESTIONS`."""
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents(
        [
            Document(page_content=text, metadata={"doc": doc, "chunk": f"{doc}#0"}, id=f"{doc}#0")
            for doc, text in CORPUS
        ]
    )
    prompt = ChatPromptTemplate.from_messages([("system", "Sources:\n{sources}"), ("human", "{q}")])

    def numbered(values: dict[str, object]) -> dict[str, str]:
        docs = values["context"]
        assert isinstance(docs, list)
        lines = [f"[{n}] {doc.page_content}" for n, doc in enumerate(docs, start=1)]
        return {"sources": "\n".join(lines), "q": str(values["question"])}

    model = FakeListChatModel(responses=ANSWERS)
    chain = RunnableParallel(
        context=store.as_retriever(search_kwargs={"k": 3}), question=RunnablePassthrough()
    ).assign(answer=RunnableLambda(numbered) | prompt | model | StrOutputParser())
    return [chain.invoke(question) for question in QUESTIONS]


def langchain_records(outputs: list[dict[str, object]], dump: str) -> list[dict[str, object]]:
    """The chain's results as an app would log them: documents via ``model_dump`` or ``dumpd``."""
    records = []
    for number, output in enumerate(outputs, start=1):
        docs = output["context"]
        assert isinstance(docs, list)
        retrieved = [doc.model_dump() if dump == "model_dump" else dumpd(doc) for doc in docs]
        records.append(
            {
                "run_id": f"run-{number}",
                "input": {"question": output["question"]},
                "output": {"text": output["answer"]},
                "retrieved": retrieved,
            }
        )
    return records


def native_rows(outputs: list[dict[str, object]]) -> list[dict[str, object]]:
    """The same results in citemark's own row format, built without the reader."""
    rows = []
    for number, output in enumerate(outputs, start=1):
        docs = output["context"]
        assert isinstance(docs, list)
        sources = [
            {"text": d.page_content, "doc_id": d.metadata["doc"], "chunk_id": d.metadata["chunk"]}
            for d in docs
        ]
        rows.append(
            {
                "id": f"run-{number}",
                "question": output["question"],
                "answer": output["answer"],
                "sources": sources,
            }
        )
    return rows


def jsonl(values: list[object]) -> bytes:
    return b"".join((v if isinstance(v, bytes) else json.dumps(v).encode()) + b"\n" for v in values)


def read_all(data: bytes, mapping: Mapping[str, str]) -> list[Recorded]:
    return list(read(io.BytesIO(data), ReadOptions(mapping=mapping)))


def only_row(data: bytes, mapping: Mapping[str, str]) -> Mapping[str, object]:
    (record,) = read_all(data, mapping)
    assert record.malformed is None, record.malformed
    assert record.row is not None
    return record.row


def reason(data: bytes, mapping: Mapping[str, str]) -> str | None:
    (record,) = read_all(data, mapping)
    assert record.row is None
    return record.malformed


@pytest.fixture(scope="module")
def outputs() -> list[dict[str, object]]:
    return run_chain()


class TestLangChain:
    @pytest.mark.parametrize(
        ("dump", "prefix"), [("model_dump", ""), ("dumpd", "/kwargs")], ids=["model_dump", "dumpd"]
    )
    def test_logged_chain_results_read_as_the_native_rows(self, outputs, dump, prefix):
        """A real chain's results, logged with either LangChain serialisation, read as the rows
        citemark's own format holds; the fabricated [7] then fails to resolve."""
        mapping = {
            name: (prefix + pointer if name.startswith("source.") else pointer)
            for name, pointer in LANGCHAIN_MAP.items()
        }
        data = jsonl(langchain_records(outputs, dump))
        records = read_all(data, mapping)
        native = jsonl(native_rows(outputs))
        expected = [parse_row(n, raw) for n, raw in enumerate(native.splitlines(), start=1)]
        assert [parse_recorded(r) for r in records] == expected
        first, fabricated = expected
        assert isinstance(first, CheckRow)
        assert isinstance(fabricated, CheckRow)
        assert isinstance(fabricated.sources, tuple)
        retrieved = [doc.metadata["doc"] for doc in outputs[0]["context"]]
        cited = resolve(first.answer, first.sources).citations
        assert [c.doc_id for c in cited] == retrieved[:2]
        with pytest.raises(MarkerOutOfRangeError):
            resolve(fabricated.answer, fabricated.sources)

    def test_a_json_array_or_pretty_printed_results_read_as_the_lines(self, outputs):
        """The same logged results as one JSON array, or pretty-printed one after another:
        the rows of the JSONL, each numbered by its array position or its first line."""
        logged = langchain_records(outputs, "model_dump")
        lines = read_all(jsonl(logged), LANGCHAIN_MAP)
        array = read_all(json.dumps(logged, indent=2).encode(), LANGCHAIN_MAP)
        pretty = [json.dumps(record, indent=2) + "\n" for record in logged]
        values = read_all("".join(pretty).encode(), LANGCHAIN_MAP)
        assert [r.row for r in lines] == [r.row for r in array] == [r.row for r in values]
        assert [1, 2] == [r.line for r in array]
        assert [1, 1 + pretty[0].count("\n")] == [r.line for r in values]
        assert all("id_scope" not in (r.row or {}) for r in lines)  # a mapped id is the user's

    def test_a_mistyped_pointer_is_malformed_not_filled_in(self, outputs):
        """``source.doc_id=/metadata/docid`` (a typo) makes every row malformed; a reader that
        treats a missing value as absent would name the sources by position and pass them."""
        mapping = {**LANGCHAIN_MAP, "source.doc_id": "/metadata/docid"}
        data = jsonl(langchain_records(outputs, "model_dump"))
        reasons = [r.malformed for r in read_all(data, mapping)]
        assert reasons == ["source 1: doc_id: /metadata/docid is missing"] * 2

        naive = [
            {
                "answer": record["output"]["text"],
                "sources": [
                    {"text": d["page_content"], "doc_id": d["metadata"].get("docid") or str(n)}
                    for n, d in enumerate(record["retrieved"], start=1)
                ],
            }
            for record in langchain_records(outputs, "model_dump")
        ]
        naive_row = parse_recorded(Recorded(1, naive[0]))
        assert isinstance(naive_row, CheckRow), "the naive reader silently reads a row"
        cited = resolve(naive_row.answer, naive_row.sources).citations
        assert [c.doc_id for c in cited] == ["1", "2"], "citing positions, not documents"


class TestCheckEndToEnd:
    def test_same_rows_mapped_and_native_give_the_same_records(self, outputs, tmp_path: Path):
        """Through the real command, the mapped LangChain log and the native rows give equal
        rows.jsonl records apart from run_id, and the fabricated marker fails."""
        mapped = tmp_path / "chain.jsonl"
        mapped.write_bytes(jsonl(langchain_records(outputs, "model_dump")))
        native = tmp_path / "native.jsonl"
        native.write_bytes(jsonl(native_rows(outputs)))
        options = [f"--map={name}={pointer}" for name, pointer in LANGCHAIN_MAP.items()]
        summaries = []
        for runs, out, extra in ((mapped, "m", options), (native, "n", [])):
            done = run_cli("check", str(runs), *extra, "--out", str(tmp_path / out), "--json")
            assert (done.returncode, done.stderr) == (0, "")
            summaries.append(json.loads(done.stdout)["check"])
        records = {}
        for name in ("m", "n"):
            lines = (tmp_path / name / "rows.jsonl").read_text(encoding="utf-8").splitlines()
            records[name] = [
                {k: v for k, v in json.loads(x).items() if k != "run_id"} for x in lines
            ]
        assert records["m"] == records["n"]
        assert len(records["m"]) == 2
        assert CANARY not in json.dumps(records["m"])
        assert [(s["rows"], s["failed"], s["malformed"]) for s in summaries] == [(2, 1, 0)] * 2
        fabricated = records["m"][1]["details"]
        assert fabricated["deterministic_failures"] == ["fabricated_citation"]
        assert [c["label"] for c in fabricated["fabricated_citations"]] == ["7"]

    def test_an_unknown_field_is_a_usage_error_naming_it(self, tmp_path: Path):
        """``--map answr=...`` exits 2 before reading, with a one-line error naming ``answr``."""
        runs = tmp_path / "runs.jsonl"
        runs.write_bytes(jsonl([{"a": "x"}]))
        done = run_cli(
            "check", str(runs), "--map", "answr=/a", "--map", "context=/c", "--out", str(tmp_path)
        )
        assert done.returncode == 2
        assert "--map answr: not a field --map takes" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1


class TestPointers:
    def test_escapes_are_undone_tilde_one_first(self):
        """``/a~01b`` names the key ``a~1b`` (RFC 6901 §4: ``~1`` is undone before ``~0``);
        undoing ``~0`` first would read it as ``a/b`` and pick another value."""
        record = {"a/b": "slash [1]", "a~1b": "tilde-one [1]", "c": ["s"]}
        row = only_row(jsonl([record]), {"answer": "/a~01b", "sources": "/c"})
        assert row["answer"] == "tilde-one [1]"

        def naive(token: str) -> str:
            return token.replace("~0", "~").replace("~1", "/")

        assert record[naive("a~01b")] == "slash [1]"
        assert only_row(jsonl([record]), {"answer": "/a~1b", "sources": "/c"})["answer"] == (
            "slash [1]"
        )

    def test_array_indexes_are_strict(self):
        """``0`` and ``12`` index a list; ``01``, ``-`` and ``-1`` do not (a naive ``int()``
        would read ``01`` as 1 and ``-1`` as the last element)."""
        record = {"choices": [{"t": "zero"}, {"t": "one"}], "s": []}
        assert only_row(jsonl([record]), {"answer": "/choices/1/t", "sources": "/s"})["answer"] == (
            "one"
        )
        for token in ("01", "-", "-1", "2", "x"):
            pointer = f"/choices/{token}/t"
            assert reason(jsonl([record]), {"answer": pointer, "sources": "/s"}) == (
                f"answer: {pointer} is missing"
            )
        assert record["choices"][int("01")]["t"] == "one"
        keyed = {"choices": {"01": {"t": "key"}}, "s": []}
        assert only_row(jsonl([keyed]), {"answer": "/choices/01/t", "sources": "/s"})["answer"] == (
            "key"
        ), "in an object, 01 is just a key"

    def test_the_empty_pointer_is_the_whole_value(self):
        """An empty ``source.text`` pointer takes each element itself."""
        record = {"answer": "A [2].", "docs": ["first", "second"]}
        row = only_row(
            jsonl([record]), {"answer": "/answer", "sources": "/docs", "source.text": ""}
        )
        assert row["sources"] == [
            {"text": "first", "doc_id": "1"},
            {"text": "second", "doc_id": "2"},
        ]

    def test_a_pointer_through_a_string_is_missing(self):
        """A pointer that goes on past a string or a number finds nothing."""
        data = jsonl([{"out": "text", "s": []}])
        assert reason(data, {"answer": "/out/text", "sources": "/s"}) == (
            "answer: /out/text is missing"
        )


class TestRows:
    def test_plain_string_sources_are_texts_named_by_position(self):
        """A list of strings becomes sources with their 1-based positions as doc ids."""
        row = only_row(
            jsonl([{"a": "x [2]", "ctx": ["one", "two"]}]), {"answer": "/a", "sources": "/ctx"}
        )
        assert row == {
            "answer": "x [2]",
            "sources": [{"text": "one", "doc_id": "1"}, {"text": "two", "doc_id": "2"}],
        }

    def test_without_source_pointers_an_object_is_read_as_a_source(self):
        """Objects pass through as citemark sources, so the row parser checks their schema."""
        source = {"text": "t", "doc_id": "d", "uri": "u"}
        row = only_row(jsonl([{"a": "x [1]", "s": [source]}]), {"answer": "/a", "sources": "/s"})
        assert row["sources"] == [source]

    def test_a_structured_answer_stays_an_object(self):
        """An answer pointer that finds an object hands the object on unchanged."""
        answer = {"answer": "Fast.", "citations": [0]}
        row = only_row(jsonl([{"out": answer, "s": []}]), {"answer": "/out", "sources": "/s"})
        assert row["answer"] == answer

    def test_every_mapped_field_is_taken_and_nothing_else(self):
        """Only the mapped fields reach the row, so the record's own keys (which may be
        citemark's names, e.g. ``context``) cannot collide with them."""
        record = {
            "meta": {"n": 7, "base": 0},
            "q": "Q?",
            "a": "A [0].",
            "context": "stray",
            "docs": [{"body": "b", "at": {"s": 0, "e": 1}, "link": "u", "m": {"k": 1}}],
        }
        mapping = {
            "id": "/meta/n",
            "index_base": "/meta/base",
            "question": "/q",
            "answer": "/a",
            "sources": "/docs",
            "source.text": "/body",
            "source.start": "/at/s",
            "source.end": "/at/e",
            "source.uri": "/link",
            "source.metadata": "/m",
        }
        row = only_row(jsonl([record]), mapping)
        assert row == {
            "answer": "A [0].",
            "question": "Q?",
            "id": 7,
            "index_base": 0,
            "sources": [
                {"text": "b", "doc_id": "1", "start": 0, "end": 1, "uri": "u", "metadata": {"k": 1}}
            ],
        }
        parsed = parse_recorded(Recorded(1, row))
        assert isinstance(parsed, CheckRow)
        assert (parsed.id, parsed.index_base) == ("7", 0)

    def test_a_labelled_context_is_mapped_too(self):
        """``context`` takes a labelled context string, as in a native row."""
        row = only_row(
            jsonl([{"a": "x [doc-1]", "c": "[doc-1] y"}]), {"answer": "/a", "context": "/c"}
        )
        assert row == {"answer": "x [doc-1]", "context": "[doc-1] y"}

    def test_sources_that_are_not_a_list_are_malformed(self):
        assert reason(jsonl([{"a": "x", "s": {"0": "y"}}]), {"answer": "/a", "sources": "/s"}) == (
            "sources: /s is not a list"
        )


class TestLines:
    def test_line_numbers_are_real_and_blank_lines_are_skipped(self):
        """Records keep their file line numbers; blank lines yield nothing, as natively."""
        good = {"a": "x", "s": []}
        data = jsonl([good, b"", b"   ", good, b"{", b"\xff", b'{"a": 1, "a": 2}', b'{"a": NaN}'])
        records = read_all(data, {"answer": "/a", "sources": "/s"})
        assert [(r.line, r.malformed) for r in records] == [
            (1, None),
            (4, None),
            (5, "not valid JSON"),
            (6, "not UTF-8 text"),
            (7, "not strict JSON: an object gives a key twice"),
            (8, "not strict JSON: it holds NaN or Infinity"),
        ]

    def test_reasons_match_the_native_reader_for_unreadable_lines(self):
        """Unreadable lines get the reason the native reader gives the same bytes.

        A line of one ``{`` opens a pretty-printed record, which ``--map`` reads (and
        finds cut short here) where the native reader reads one object a line.
        """
        for raw in (b"\xff", b'{"a": 1, "a": 2}', b'[{"a": Infinity}]'):
            native = parse_row(1, raw)
            assert isinstance(native, MalformedLine)
            mapped = reason(raw + b"\n", {"answer": "/a", "sources": "/s"})
            assert mapped == native.reason
        assert "the file ends inside a record" == reason(b"{\n", {"answer": "/a", "sources": "/s"})

    def test_a_byte_order_mark_on_the_first_line_is_skipped(self):
        data = b"\xef\xbb\xbf" + jsonl([{"a": "x", "s": []}])
        assert only_row(data, {"answer": "/a", "sources": "/s"}) == {"answer": "x", "sources": []}

    def test_reads_one_line_at_a_time(self):
        """The reader yields records from an endless input: it never reads the file whole."""

        class Endless(io.RawIOBase):
            def __init__(self) -> None:
                self.pending = b""
                self.lines = (
                    json.dumps({"a": f"x{n}", "s": []}).encode() + b"\n" for n in itertools.count()
                )

            def readable(self) -> bool:
                return True

            def readinto(self, buffer: Any) -> int:
                self.pending = self.pending or next(self.lines)
                count = min(len(buffer), len(self.pending))
                buffer[:count], self.pending = self.pending[:count], self.pending[count:]
                return count

        handle = io.BufferedReader(Endless())
        records = itertools.islice(
            read(handle, ReadOptions(mapping={"answer": "/a", "sources": "/s"})), 3
        )
        assert [r.line for r in records] == [1, 2, 3]

    def test_untrusted_keys_and_values_never_reach_a_reason(self):
        """Malformed records full of a canary string give reasons without it."""
        rows = [
            {CANARY: CANARY},
            {"a": CANARY, "s": CANARY},
            {"a": CANARY, "s": [{CANARY: CANARY}]},
            {"a": {CANARY: [CANARY]}, "s": [CANARY]},
        ]
        mapping = {"answer": "/a", "sources": "/s", "source.text": "/t"}
        reasons = [r.malformed for r in read_all(jsonl(rows), mapping)]
        assert all(r for r in reasons)
        assert not any(CANARY in r for r in reasons if r)


class TestMapping:
    @pytest.mark.parametrize(
        ("mapping", "message"),
        [
            ({"answr": "/a", "sources": "/s"}, "--map answr: not a field --map takes"),
            (
                {"answer": "/a", "source.title": "/t", "sources": "/s"},
                "--map source.title: not a field",
            ),
            ({"answer": "a/b", "sources": "/s"}, "--map answer=a/b: a JSON pointer must be empty"),
            ({"answer": "/a~2", "sources": "/s"}, "--map answer=/a~2: in a JSON pointer ~ must"),
            ({"answer": "/a~", "sources": "/s"}, "--map answer=/a~: in a JSON pointer ~ must"),
            ({"sources": "/s"}, "--map answer=POINTER is required"),
            ({"answer": "/a"}, "--map needs exactly one of sources"),
            ({"answer": "/a", "sources": "/s", "context": "/c"}, "--map needs exactly one of"),
            (
                {"answer": "/a", "context": "/c", "source.text": "/t"},
                "--map source.* needs --map sources",
            ),
            (
                {"answer": "/a", "sources": "/s", "source.doc_id": "/d"},
                "--map source.* needs --map source.text",
            ),
        ],
    )
    def test_a_mapping_that_cannot_work_is_refused_naming_its_field(self, mapping, message):
        with pytest.raises(MappingError) as caught:
            check_mapping(mapping)
        assert str(caught.value).startswith(message)

    def test_the_mapping_is_checked_before_any_line_is_read(self):
        """``read`` refuses a bad mapping when called, not at its first record, so the
        command can stop with a usage error before touching the input."""

        def untouchable() -> Iterator[bytes]:
            pytest.fail("the input was read")
            yield b""

        with pytest.raises(MappingError):
            read(untouchable(), ReadOptions(mapping={"answr": "/a"}))
        with pytest.raises(MappingError):
            read(untouchable(), ReadOptions())

    def test_the_registry_gives_this_reader(self):
        assert reader_for("map") is read
