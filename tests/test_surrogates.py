"""Lone surrogates and non-UTF-8 file names through every command (issue 17, items 5, 6).

A model may send JSON ``"\\ud800"``, which decodes to a ``str`` UTF-8 cannot encode;
a Linux file name may hold bytes that are not UTF-8, which Python decodes with
``surrogateescape`` into the same kind of character. Each command must finish with
its usual exit code, write every artifact, and keep the text, escaped, in every
artifact and every terminal print. The real entry point runs in a subprocess
against a real server on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, run_cli
from pydantic import BaseModel
from pydantic_core import PydanticSerializationError

LONE = "\ud800"
ANSWER = f"The late fee {LONE} is five percent [1]."


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "fees.txt").write_text("The late fee is five percent.", encoding="utf-8")
    return folder


def test_naive_serializers_crash_on_a_lone_surrogate():
    """The naive variants: pydantic's JSON and a strict UTF-8 stream both refuse one."""

    class Report(BaseModel):
        text: str

    with pytest.raises(PydanticSerializationError):
        Report(text=ANSWER).model_dump_json()
    with pytest.raises(UnicodeEncodeError):
        ANSWER.encode("utf-8")


@pytest.mark.skipif(sys.platform != "linux", reason="needs a file system taking any bytes")
def test_check_on_a_non_utf8_file_name(tmp_path):
    """report.json names the input file; a name that is not UTF-8 is kept, escaped."""
    runs = Path(os.fsdecode(bytes(tmp_path) + b"/runs-\xff.jsonl"))
    row = {"answer": ANSWER, "sources": [{"text": "The fee is five percent.", "doc_id": "d"}]}
    runs.write_text(json.dumps(row) + "\n", encoding="utf-8")

    done = run_cli("check", str(runs), "--out", str(tmp_path / "out"))

    assert 0 == done.returncode, done.stderr
    assert "Traceback" not in done.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_bytes())
    assert os.fsencode(report["config"]["input"]).endswith(b"/runs-\xff.jsonl")


def test_answer_prints_the_text_escaped(docs):
    with FakeOpenAI([ANSWER, ANSWER]) as server:
        text = run_cli("answer", "What is the fee?", "--docs", str(docs), base_url=server.base_url)
        data = run_cli(
            "answer", "What is the fee?", "--docs", str(docs), "--json", base_url=server.base_url
        )

    assert (0, 0) == (text.returncode, data.returncode), text.stderr + data.stderr
    assert text.stdout.startswith("The late fee \\ud800 is five percent [1].")
    assert ANSWER == json.loads(data.stdout)["answer"]


def test_echo_keeps_the_whole_report(tmp_path):
    """echo-latest.json is written, holding the model's text as sent."""
    reply = f"See the policy {LONE} [1]."
    with FakeOpenAI(lambda prompt: reply) as server:
        done = run_cli("echo", "--cases", "2", "--out", str(tmp_path), base_url=server.base_url)

    assert 0 == done.returncode, done.stderr
    text = (tmp_path / "echo-latest.json").read_bytes()
    assert LONE in json.dumps(json.loads(text), ensure_ascii=False)


def test_check_with_a_judge_writes_every_artifact(tmp_path):
    """Answer and judge reply both hold a surrogate: all three files, with the text."""
    runs = tmp_path / "runs.jsonl"
    row = {"answer": ANSWER, "sources": [{"text": "The late fee is five percent.", "doc_id": "d"}]}
    runs.write_text(json.dumps(row) + "\n", encoding="utf-8")
    judge = json.dumps({"score": 3, "explanation": f"odd {LONE}", "verdicts": []})
    out = tmp_path / "out"

    with FakeOpenAI(lambda prompt: judge) as server:
        done = run_cli(
            "check",
            str(runs),
            "--out",
            str(out),
            "--judge-model",
            "fake-model",
            "--judge-base-url",
            server.base_url,
            "--json",
        )

    assert 0 == done.returncode, done.stderr
    summary = json.loads(done.stdout)
    assert isinstance(summary, dict)
    [record] = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    assert LONE in json.dumps(record, ensure_ascii=False)
    json.loads((out / "report.json").read_bytes())
    # report.html holds its rows as JSON data (issue 12): the escape's backslash is
    # itself escaped there, and the page shows the text as "The late fee \ud800 ...".
    page = (out / "report.html").read_text("utf-8")
    assert "The late fee \\\\ud800 is five percent" in page
