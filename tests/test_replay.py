"""Recorded judge calls and their replay: judge-calls.jsonl, ReplayChat, --replay-judge."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import pickle
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, run_cli

from citemark import ChatError, CitationScorer
from citemark._model.chat import DEFAULT_MAX_REPLY_BYTES
from citemark._pipelines.check.run import run_check
from citemark.replay import (
    JUDGE_CALLS_NAME,
    JudgeCall,
    JudgeReplyNotRecordedError,
    ReplayChat,
    ReplayError,
    full_prompt_sha256,
)
from citemark.reports import EvalReport

CANARY = "CANARY-5d1e22"
CONTEXT = "[doc-1] The late fee is 5% of the unpaid balance.\n[doc-2] Members pay no late fee.\n"
ROWS = 8
FIELDS = [
    "line",
    "id",
    "provider",
    "model",
    "prompt_sha256",
    "full_prompt_sha256",
    "status",
    "reply",
    "finish_reason",
    "error",
    "run_id",
]


def without_run_id(folder: Path, name: str) -> bytes:
    """A file's bytes with its run's id (every line names it) blanked: what a replay keeps."""
    run_id = json.loads((folder / "report.json").read_text())["run_id"]
    data = (folder / name).read_bytes()
    assert data.count(f'"run_id": "{run_id}"}}\n'.encode()) == data.count(b"\n")
    return data.replace(run_id.encode(), b"")


def row(number: int) -> dict[str, object]:
    return {
        "id": f"q{number}",
        "question": "What is the fee?",
        "answer": f"The fee is 5% [doc-1]. Row {number} says so.",
        "context": CONTEXT,
    }


def write_rows(path: Path, numbers: list[int], extra: list[str] = ()) -> Path:
    lines = [json.dumps(row(n)) for n in numbers] + list(extra)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def row_number(prompt: str) -> int:
    match = re.search(r"Row (\d+) says so", prompt)
    assert match is not None
    return int(match.group(1))


def supported(number: int) -> str:
    band = 0 if number % 3 == 0 else 3
    outcome = "unsupported" if band == 0 else "supported"
    return json.dumps(
        {
            "score": band,
            "explanation": f"Row {number}: {CANARY}",
            "verdicts": [{"occurrence": 1, "outcome": outcome, "context_span": "late fee is 5%"}],
        }
    )


def slow_reply(prompt: str) -> str:
    """Row 1 answers last, row 8 first: completion order is the reverse of input order."""
    number = row_number(prompt)
    time.sleep((ROWS - number) * 0.03)
    if number == 5:
        return f"not JSON at all {CANARY}"
    return supported(number)


def judged_check(tmp_path: Path, runs: Path, out: str, base_url: str, *extra: str):
    return run_cli(
        "check",
        str(runs),
        "--out",
        str(tmp_path / out),
        "--judge-model",
        "judge-1",
        "--judge-base-url",
        base_url,
        "--concurrency",
        str(ROWS),
        "--json",
        *extra,
    )


def read_calls(folder: Path) -> list[dict[str, object]]:
    text = (folder / JUDGE_CALLS_NAME).read_text(encoding="ascii")
    return [json.loads(line) for line in text.splitlines()]


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """A judged check of 8 rows (and one malformed line) against a real loopback server."""
    runs = write_rows(tmp_path / "runs.jsonl", list(range(1, ROWS + 1)), ["{not json"])
    with FakeOpenAI(slow_reply) as server:
        done = judged_check(tmp_path, runs, "original", server.base_url)
    assert 0 == done.returncode, done.stderr
    return runs, tmp_path / "original", server.prompts


class TestRecordedCalls:
    def test_every_judge_call_is_one_record_with_every_field(self, recorded):
        """One record per call, in input order, each naming judge, both hashes and the raw reply."""
        _, out, prompts = recorded
        calls = read_calls(out)
        report = EvalReport.model_validate_json((out / "report.json").read_text())
        assert ROWS == len(prompts) == len(calls)
        assert [FIELDS] * ROWS == [list(call) for call in calls]
        assert list(range(1, ROWS + 1)) == [call["line"] for call in calls]
        assert [f"q{n}" for n in range(1, ROWS + 1)] == [call["id"] for call in calls]
        assert report.check is not None
        assert report.check.judge is not None
        for call in calls:
            assert ("openai-compatible", "judge-1") == (call["provider"], call["model"])
            assert report.check.judge.prompt_sha256 == call["prompt_sha256"]
            assert ("ok", "stop", None) == (call["status"], call["finish_reason"], call["error"])
            assert report.run_id == call["run_id"]
        replies = [call["reply"] for call in calls]
        assert f"not JSON at all {CANARY}" == replies[4]
        assert supported(1) == replies[0]

    def test_each_call_is_filed_under_the_row_that_made_it(self, recorded):
        """Calls finish in reverse order; each record still holds its own row's prompt hash."""
        _, out, prompts = recorded
        by_hash = {full_prompt_sha256(prompt): row_number(prompt) for prompt in prompts}
        calls = read_calls(out)
        assert [call["line"] for call in calls] == [
            by_hash[str(call["full_prompt_sha256"])] for call in calls
        ]
        # The naive filing, in the order the calls completed, gets every row but one wrong.
        completed = sorted(prompts, key=row_number, reverse=True)
        naive = [row_number(prompt) for prompt in completed]
        assert [call["line"] for call in calls] != naive

    def test_a_row_left_unassessed_takes_no_call(self, tmp_path):
        """A row a recorder marked un-assessed is never scored, so the next row keeps its calls.

        Before, each such row took the next judged row's calls, and every call after it
        was filed one row early.
        """
        skipped = json.dumps({"id": "skipped", "answer": "x", "unassessed": "chain_error"})
        runs = write_rows(tmp_path / "runs.jsonl", [])
        runs.write_text(skipped + "\n" + json.dumps(row(1)) + "\n" + json.dumps(row(2)) + "\n")
        with FakeOpenAI(lambda prompt: supported(row_number(prompt))) as server:
            done = judged_check(tmp_path, runs, "out", server.base_url)
        assert 0 == done.returncode, done.stderr
        calls = read_calls(tmp_path / "out")
        by_hash = {full_prompt_sha256(prompt): row_number(prompt) for prompt in server.prompts}
        assert [2, 3] == [call["line"] for call in calls]
        assert [1, 2] == [by_hash[str(call["full_prompt_sha256"])] for call in calls]

    def test_the_report_records_the_file_hash(self, recorded):
        """report.json names judge-calls.jsonl with the SHA-256 of its bytes."""
        _, out, _ = recorded
        report = json.loads((out / "report.json").read_text())
        digest = hashlib.sha256((out / JUDGE_CALLS_NAME).read_bytes()).hexdigest()
        assert digest == report["check"]["files"][JUDGE_CALLS_NAME]

    def test_no_judge_no_file(self, tmp_path):
        """A check without a judge makes no call and writes no judge-calls.jsonl."""
        runs = write_rows(tmp_path / "runs.jsonl", [1, 2])
        done = run_cli("check", str(runs), "--out", str(tmp_path / "o"), "--json")
        assert 0 == done.returncode
        assert not (tmp_path / "o" / JUDGE_CALLS_NAME).exists()


class TestReplay:
    def test_a_replayed_run_reproduces_the_original_byte_for_byte(self, recorded, tmp_path):
        """No server at all: rows.jsonl and judge-calls.jsonl are identical but for the run id."""
        runs, original, _ = recorded
        done = run_cli(
            "check",
            str(runs),
            "--out",
            str(tmp_path / "replayed"),
            "--replay-judge",
            str(original),
            "--concurrency",
            str(ROWS),
            "--json",
        )
        assert 0 == done.returncode, done.stderr
        replayed = tmp_path / "replayed"
        old = json.loads((original / "report.json").read_text())
        new = json.loads((replayed / "report.json").read_text())
        assert old["run_id"] != new["run_id"]
        # Each line names its own run (the last key); the rest is the same bytes.
        for name in ("rows.jsonl", JUDGE_CALLS_NAME):
            assert without_run_id(original, name) == without_run_id(replayed, name), name
        # report.html shows when the run was made; every file names its run id.
        del old["check"]["files"], new["check"]["files"]
        assert old["check"] == new["check"]
        assert old["input_sha256"] == new["input_sha256"]
        assert str(original) == new["config"]["replay_judge"]

    def test_an_unrecorded_prompt_is_unassessed_and_never_sent(self, recorded, tmp_path):
        """A row the original run never judged is judge_reply_not_recorded; the rest replay."""
        _, original, _ = recorded
        runs = write_rows(tmp_path / "more.jsonl", [1, 2, 99])
        with FakeOpenAI(slow_reply) as server:
            done = run_cli(
                "check",
                str(runs),
                "--out",
                str(tmp_path / "more"),
                "--replay-judge",
                str(original),
                "--json",
                base_url=server.base_url,
            )
        assert 0 == done.returncode, done.stderr
        assert [] == server.prompts
        text = (tmp_path / "more" / "rows.jsonl").read_text(encoding="ascii")
        rows = [json.loads(line) for line in text.splitlines()]
        assert ["passed", "passed", "unassessed"] == [r["outcome"] for r in rows]
        assert "judge_reply_not_recorded" == rows[2]["reason"]
        error = rows[2]["details"]["judge_error"]
        assert ("JudgeReplyNotRecordedError", None) == (error["type"], error["status"])
        calls = read_calls(tmp_path / "more")
        assert ["ok", "ok", "error"] == [call["status"] for call in calls]
        assert "JudgeReplyNotRecordedError" == calls[2]["error"]["type"]

    def test_a_changed_recording_is_refused(self, recorded, tmp_path):
        """A judge-calls.jsonl whose bytes differ from report.json's hash is a usage error."""
        runs, original, _ = recorded
        path = original / JUDGE_CALLS_NAME
        path.write_bytes(path.read_bytes().replace(b"Row 1:", b"Row 7:"))
        done = run_cli(
            "check", str(runs), "--out", str(tmp_path / "r"), "--replay-judge", str(original)
        )
        assert 2 == done.returncode
        assert "the recording was changed after the run" in done.stderr
        assert CANARY not in done.stderr
        assert not (tmp_path / "r").exists()

    def test_replay_takes_no_live_judge_options(self, recorded, tmp_path):
        """--replay-judge with --judge-model is refused before anything runs."""
        runs, original, _ = recorded
        done = run_cli(
            "check", str(runs), "--replay-judge", str(original), "--judge-model", "judge-1"
        )
        assert 2 == done.returncode
        assert "--replay-judge takes no --judge-model" in done.stderr


class _FlakyChat:
    """A judge whose calls fail in two ways: a ChatError for row 2, a bug for row 3."""

    provider = "openai-compatible"
    model_name = "judge-1"

    async def complete(self, prompt: str) -> str:
        number = row_number(prompt)
        await asyncio.sleep(0)
        if number == 2:
            raise ChatError("the provider answered HTTP 503", provider="p", model="m", status=503)
        if number == 3:
            raise LookupError(CANARY)
        return supported(number)


class TestReplayedFailures:
    def test_failed_calls_replay_to_the_same_findings(self, tmp_path):
        """A recorded ChatError and a recorded bug replay to the same rows.jsonl bytes."""
        runs = write_rows(tmp_path / "runs.jsonl", [1, 2, 3, 4])
        first = run_check(runs, tmp_path / "a", CitationScorer(_FlakyChat()))
        calls = read_calls(tmp_path / "a")
        assert ["ok", "error", "error", "ok"] == [call["status"] for call in calls]
        assert {"type": "ChatError", "provider": "p", "model": "m", "status": 503} == {
            key: calls[1]["error"][key] for key in ("type", "provider", "model", "status")
        }
        assert {"type": "LookupError"} == {
            key: value for key, value in calls[2]["error"].items() if value is not None
        }
        assert CANARY not in json.dumps(calls[2])
        second = run_check(
            runs, tmp_path / "b", CitationScorer(ReplayChat.from_run(tmp_path / "a"))
        )
        assert first.summary.reasons == second.summary.reasons
        assert {"judge_call_failed": 1, "scoring_error": 1} == first.summary.reasons
        assert first.report.run_id != second.report.run_id
        for name in ("rows.jsonl", JUDGE_CALLS_NAME):
            assert without_run_id(tmp_path / "a", name) == without_run_id(tmp_path / "b", name)


def call(prompt: str, reply: str, *, model: str = "judge-1") -> JudgeCall:
    return JudgeCall(
        provider="openai-compatible",
        model=model,
        prompt_sha256="0" * 64,
        full_prompt_sha256=full_prompt_sha256(prompt),
        status="ok",
        reply=reply,
    )


class TestReplayChat:
    def test_serves_by_whole_prompt_hash_and_refuses_the_rest(self):
        """A recorded prompt gets its reply; any other prompt is a typed refusal."""
        chat = ReplayChat([call("a", "reply a"), call("b", "reply b")])
        assert ("reply b", "reply a") == (chat.complete_sync("b"), chat.complete_sync("a"))
        with pytest.raises(JudgeReplyNotRecordedError) as caught:
            chat.complete_sync(f"a {CANARY}")
        assert isinstance(caught.value, ChatError)
        assert full_prompt_sha256(f"a {CANARY}") == caught.value.prompt_sha256
        assert CANARY not in str(caught.value)
        assert (2, 1) == (chat.served, chat.refused)

    def test_a_prompt_recorded_twice_is_served_in_recorded_order(self):
        """Two recorded calls of one prompt are served in order; the last one again after."""
        chat = ReplayChat([call("a", "first"), call("a", "second")])
        assert ["first", "second", "second"] == [chat.complete_sync("a") for _ in range(3)]

    def test_the_refusal_pickles_with_its_facts(self):
        """The error survives a trip to another process (a Ray worker) with its attributes."""
        error = JudgeReplyNotRecordedError("f" * 64, provider="p", model="m")
        copy = pickle.loads(pickle.dumps(error))  # noqa: S301 - our own bytes
        assert ("f" * 64, "p", "m", str(error)) == (
            copy.prompt_sha256,
            copy.provider,
            copy.model,
            str(copy),
        )

    def test_one_judge_per_replay(self):
        """Calls of two judges, or no call and no identity, are refused."""
        with pytest.raises(ReplayError, match="2 judges"):
            ReplayChat([call("a", "x"), call("b", "y", model="judge-2")])
        with pytest.raises(ReplayError, match="no call is recorded"):
            ReplayChat([])

    def test_a_bad_line_is_named_by_number_without_its_text(self, tmp_path):
        """A line that is not a recorded call is refused by line number and field name."""
        path = tmp_path / JUDGE_CALLS_NAME
        good = json.dumps({"line": 1, "id": None, **call("a", "x").model_dump(mode="json")})
        bad = json.loads(good) | {"status": CANARY}
        path.write_text(good + "\n" + json.dumps(bad) + "\n", encoding="ascii")
        with pytest.raises(ReplayError) as caught:
            ReplayChat.from_file(path)
        assert "judge-calls.jsonl line 2 is not a recorded judge call (fields status)" == str(
            caught.value
        )
        assert caught.value.__cause__ is None


class TestFinishReasonRecorded:
    """A truncated judge reply is recorded with its finish reason and replays as truncated."""

    def test_a_cut_off_reply_replays_as_cut_off(self):
        """finish_reason=length is recorded; the replayed row is judge_reply_truncated again."""
        from citemark import CitationScorer, Completion
        from citemark._judging.replay.calls import JudgeCall
        from citemark._judging.replay.recorder import JudgeCallRecorder, RecordingChat
        from citemark.replay import ReplayChat
        from citemark.testing import ScriptedChat

        context = "[doc-1] The late fee is 5%.\n"
        answer = "The fee is 5% [doc-1]."
        cut = Completion('{"score": 3, "explanation": "The fee', finish_reason="length")
        recorder = JudgeCallRecorder()
        scorer = CitationScorer(RecordingChat(ScriptedChat([cut]), recorder, "0" * 64))
        first = scorer.score_sync(answer, context)
        recorder.take_batch(0)  # a call outside a batch is kept in `loose`
        (recorded,) = [JudgeCall.model_validate(call) for call in recorder.loose]
        assert ("judge_reply_truncated", "length") == (first.reason, recorded.finish_reason)
        replay = ReplayChat([recorded])
        again = CitationScorer(replay).score_sync(answer, context)
        assert (first.reason, first.findings.judge_raw_reply) == (
            again.reason,
            again.findings.judge_raw_reply,
        )
        # The naive replay, serving the text without its finish reason, grades it instead.
        naive = ReplayChat([recorded.model_copy(update={"finish_reason": None})])
        assert "judge_reply_truncated" != CitationScorer(naive).score_sync(answer, context).reason


# Run ReplayChat.from_run on a folder under a 1 GiB address-space limit, in its own
# process: what is read whole shows as a MemoryError there, not as this machine's OOM.
_BOUNDED_FROM_RUN = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from citemark.replay import ReplayChat, ReplayError
try:
    ReplayChat.from_run(sys.argv[1])
except ReplayError as exc:
    print("ReplayError:", exc)
"""


def from_run_bounded(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _BOUNDED_FROM_RUN, str(folder)],
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )


def recording_line(reply: str) -> str:
    return json.dumps({"line": 1, "id": None, **call("a", reply).model_dump(mode="json")})


class TestBoundedRecordings:
    """Issue 26, items 3 and 7: a recording is read as a stream of bounded lines."""

    def test_a_recording_linked_to_dev_zero_is_refused_in_bounded_memory(self, recorded):
        """A symlink to /dev/zero: one line of error, no MemoryError, no kill."""
        _, original, _ = recorded
        (original / JUDGE_CALLS_NAME).unlink()
        (original / JUDGE_CALLS_NAME).symlink_to("/dev/zero")
        done = from_run_bounded(original)
        assert "MemoryError" not in done.stderr
        assert (0, "") == (done.returncode, done.stderr)
        assert "ReplayError: judge-calls.jsonl is not a regular file\n" == done.stdout

    def test_a_fifo_is_refused_without_waiting_for_a_writer(self, recorded):
        """A FIFO at the recording's name would block a plain open forever."""
        _, original, _ = recorded
        (original / JUDGE_CALLS_NAME).unlink()
        os.mkfifo(original / JUDGE_CALLS_NAME)
        done = from_run_bounded(original)
        assert "ReplayError: judge-calls.jsonl is not a regular file\n" == done.stdout

    def test_the_cli_says_it_in_one_line(self, recorded, tmp_path):
        """--replay-judge on such a folder: exit 2, one line naming the option."""
        runs, original, _ = recorded
        (original / JUDGE_CALLS_NAME).unlink()
        (original / JUDGE_CALLS_NAME).symlink_to("/dev/null")
        done = run_cli(
            "check", str(runs), "--out", str(tmp_path / "again"), "--replay-judge", str(original)
        )
        assert 2 == done.returncode
        assert [
            "citemark: error: --replay-judge: judge-calls.jsonl is not a regular file"
        ] == done.stderr.splitlines()

    def test_a_100_mb_reply_is_refused_by_the_live_clients_size_rule(self, tmp_path):
        """A recorded reply larger than OpenAIChat accepts is refused, its line unparsed."""
        path = tmp_path / JUDGE_CALLS_NAME
        path.write_text(recording_line("x" * 100_000_000) + "\n", encoding="ascii")
        with pytest.raises(ReplayError) as caught:
            ReplayChat.from_file(path)
        assert str(caught.value).startswith("judge-calls.jsonl line 1 is longer than ")
        assert str(DEFAULT_MAX_REPLY_BYTES) in str(caught.value)

    def test_the_reply_limit_is_the_live_clients(self, tmp_path):
        """A reply of max_reply_bytes replays; one byte more is refused, as live."""
        path = tmp_path / JUDGE_CALLS_NAME
        path.write_text(recording_line("y" * DEFAULT_MAX_REPLY_BYTES) + "\n", encoding="ascii")
        assert 1 == ReplayChat.from_file(path).recorded
        path.write_text(recording_line("y" * (DEFAULT_MAX_REPLY_BYTES + 1)) + "\n", "ascii")
        with pytest.raises(
            ReplayError, match=r"line 1 is not a recorded judge call \(fields reply\)"
        ):
            ReplayChat.from_file(path)

    def test_a_deeply_nested_line_is_refused_by_its_number(self, tmp_path):
        """100,000 nested arrays: a ReplayError naming the line, not a RecursionError."""
        path = tmp_path / JUDGE_CALLS_NAME
        path.write_text(recording_line("x") + "\n" + "[" * 100_000 + "]" * 100_000 + "\n")
        with pytest.raises(ReplayError) as caught:
            ReplayChat.from_file(path)
        assert "judge-calls.jsonl line 2 is not a recorded judge call (nested too deep)" == str(
            caught.value
        )
