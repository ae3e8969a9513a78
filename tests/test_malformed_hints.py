"""Every unreadable line explained (issue 23, item 4).

When no line of an input is a row, the error still gives every line's reason, lines
with the same reason named together; and a file in another tool's format (Ragas or
DeepEval keys, LangChain Documents, LangSmith runs, OTLP spans, a JSON array, a
pretty-printed object) is told apart by its structure and keys, with the ``--from``
(or ``--map``) that reads it. No message quotes the input.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from citemark import CitationScorer, NoRowsError
from citemark._pipelines.check.run import run_check
from citemark._pipelines.readers.citemark_rows import parse_row

CANARY = "CANARY-e7d1"


def no_rows_message(tmp_path: Path, lines: list[str]) -> str:
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    with pytest.raises(NoRowsError) as info:
        run_check(path, tmp_path / "out", CitationScorer())
    assert not (tmp_path / "out").exists() or [] == list((tmp_path / "out").iterdir())
    message = str(info.value)
    assert CANARY not in message
    return message


def dumps(value: object) -> str:
    return json.dumps(value)


FORMATS = [
    (
        "ragas",
        [dumps({"user_input": CANARY, "response": CANARY, "retrieved_contexts": [CANARY]})],
        "read it with --from ragas",
    ),
    (
        "deepeval",
        [dumps({"input": CANARY, "actual_output": CANARY, "retrieval_context": [CANARY]})],
        "read it with --from deepeval",
    ),
    (
        "langsmith",
        [dumps({"id": CANARY, "run_type": "chain", "inputs": {}, "outputs": {}})],
        "read it with --from langsmith",
    ),
    ("otlp", [dumps({"resourceSpans": [{CANARY: CANARY}]})], "read it with --from openinference"),
    (
        "langchain-document",
        [dumps({"page_content": CANARY, "metadata": {CANARY: 1}})],
        "looks like a LangChain Document",
    ),
    (
        "langchain-retrievalqa",
        [
            dumps(
                {
                    "query": CANARY,
                    "result": CANARY,
                    "source_documents": [{"page_content": CANARY, "metadata": {}}],
                }
            )
        ],
        "--map sources=/source_documents --map answer=/result --map question=/query",
    ),
    (
        "json-array-one-line",
        [dumps([{"input": CANARY, "actual_output": CANARY}])],
        (
            "line 1: not a JSON object (the file is a JSON array of DeepEval records: "
            "read it with --from deepeval)"
        ),
    ),
    (
        "json-array-pretty",
        ["[", "  " + dumps({"input": CANARY, "actual_output": CANARY}), "]"],
        (
            "line 1: not valid JSON (the file is a JSON array of DeepEval records: "
            "read it with --from deepeval)"
        ),
    ),
    (
        "json-array-pretty-unknown",
        ["[", "  " + dumps({"question": CANARY, "answer": CANARY}), "]"],
        "the line opens a JSON array spread over lines",
    ),
    (
        "pretty-printed-otlp",
        ["{", '  "resourceSpans": [', "  ]", "}"],
        (
            "line 1: not valid JSON (the file holds OpenInference records: "
            "read it with --from openinference)"
        ),
    ),
    (
        "pretty-printed-object",
        ["{", f'  "question": "{CANARY}",', f'  "answer": "{CANARY} [1]"', "}"],
        "the line opens a JSON object spread over lines, pretty-printed",
    ),
]


class TestAnotherToolsFile:
    @pytest.mark.parametrize(
        ("lines", "hint"), [f[1:] for f in FORMATS], ids=[f[0] for f in FORMATS]
    )
    def test_the_error_says_what_reads_it(self, tmp_path, lines, hint):
        """The NoRowsError names the reader, and never a value or key of the input."""
        assert hint in no_rows_message(tmp_path, lines)

    def test_the_suggested_map_reads_the_chain_output(self, tmp_path):
        """The --map the hint gives does read a create_retrieval_chain output as a row."""
        row = {
            "input": "When?",
            "answer": "In May [1].",
            "context": [{"page_content": "Fees rise in May.", "metadata": {}}],
        }
        message = no_rows_message(tmp_path, [dumps(row)])
        options = message.split("read it with ")[1].rstrip(")").split()
        path = tmp_path / "chain.jsonl"
        path.write_text(dumps(row) + "\n", encoding="utf-8")
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "citemark",
                "check",
                str(path),
                "--out",
                str(tmp_path / "o"),
                *options,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert 0 == done.returncode, done.stderr
        assert 1 == len((tmp_path / "o" / "rows.jsonl").read_text(encoding="utf-8").splitlines())


class TestEveryReasonShows:
    def test_all_reasons_show_when_no_line_is_readable(self, tmp_path):
        """Eight malformed lines of five kinds: every kind and line is named, not just three."""
        lines = [
            "not json",
            dumps({"answer": 5, "sources": []}),
            dumps({"answer": CANARY}),
            dumps({"answer": CANARY}),
            dumps({"answer": CANARY}),
            dumps([CANARY]),
            dumps({"answer": CANARY, "context": 3}),
            dumps({"answer": CANARY}),
        ]
        assert (
            "no line of the input is a readable row: 8 malformed lines: line 1: not valid JSON; "
            "line 2: answer must be a string or a structured answer object; "
            "lines 3-5, 8: neither sources nor context is given; line 6: not a JSON object; "
            "line 7: context must be a string"
        ) == no_rows_message(tmp_path, lines)

    def test_the_cli_prints_it_on_one_line(self, tmp_path):
        """citemark check exits 2 with the whole explanation as one line on stderr."""
        path = tmp_path / "runs.jsonl"
        path.write_text("{\n" + f'  "answer": "{CANARY}"\n' + "}\n", encoding="utf-8")
        done = subprocess.run(
            [sys.executable, "-m", "citemark", "check", str(path), "--out", str(tmp_path / "o")],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert 2 == done.returncode
        assert 1 == len(done.stderr.splitlines())
        assert "lines 2-3: not valid JSON" in done.stderr
        assert (
            "--from langsmith, --from openinference, --from mlflow, --from ragas and --map "
            "read pretty-printed files"
        ) in done.stderr
        assert CANARY not in done.stderr + done.stdout


class TestLineHints:
    def test_a_readable_file_keeps_its_hints_per_line(self):
        """The hint is the line's own reason: a file with readable rows shows it too."""
        bad = parse_row(1, b"[\n")
        assert bad is not None
        assert "JSON array spread over lines" in getattr(bad, "reason", "")

    def test_an_array_of_strings_is_no_format(self):
        """Only an array of objects is another tool's records; a string array is not hinted."""
        bad = parse_row(4, dumps([CANARY]).encode())
        assert "not a JSON object" == getattr(bad, "reason", None)
