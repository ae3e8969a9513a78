"""``citemark check --verifier``: advisory citation support beside the deterministic check."""

from __future__ import annotations

import json
import re
from pathlib import Path

from fake_openai import FakeOpenAI

from citemark._judging.verifiers.judge import PROMPT_SHA256
from citemark._pipelines.cli.main import main
from citemark.replay import JUDGE_CALLS_NAME

SOURCES = [
    {"doc_id": "eiffel", "text": "The Eiffel Tower is 330 metres tall and stands in Paris."},
    {"doc_id": "everest", "text": "Mount Everest rises 8849 metres above sea level."},
    {"doc_id": "banana", "text": "Bananas are berries that grow in tropical climates."},
]
ROWS = [
    # Cites the right source: supported.
    {"id": "right", "answer": "The Eiffel Tower is 330 metres tall [1].", "sources": SOURCES},
    # Cites the wrong one: source 2 says it, source 3 is cited.
    {"id": "wrong", "answer": "Mount Everest rises 8849 metres [3].", "sources": SOURCES},
    # Out of range: a violation, whatever the verifier says.
    {"id": "fabricated", "answer": "Bananas are berries [7].", "sources": SOURCES},
]


def write_runs(tmp_path: Path) -> Path:
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in ROWS), encoding="utf-8")
    return path


def rows_of(out: Path) -> dict[str, dict[str, object]]:
    lines = (out / "rows.jsonl").read_text(encoding="utf-8").splitlines()
    return {row["id"]: row for row in map(json.loads, lines)}


def support_of(row: dict[str, object]) -> dict[str, object] | None:
    details = row.get("details") or {}
    assert isinstance(details, dict)
    return details.get("support")


class TestCheckWithAVerifier:
    def test_rows_carry_their_support_and_the_report_the_means(self, tmp_path, capsys):
        out = tmp_path / "out"
        code = main(
            ["check", str(write_runs(tmp_path)), "--out", str(out), "--verifier", "lexical"]
        )
        assert 0 == code
        rows = rows_of(out)
        right, wrong = support_of(rows["right"]), support_of(rows["wrong"])
        assert right is not None
        assert wrong is not None
        assert (1.0, 1.0) == (right["recall"], right["precision"])
        assert (0.0, 0.0) == (wrong["recall"], wrong["precision"])
        assert right["verifier"]["kind"] == "lexical"
        citation = wrong["sentences"][0]["citations"][0]
        assert 3 == citation["source"]
        assert [2] == citation["reattribution"]["supported_by_other_source"]
        report = json.loads((out / "report.json").read_text(encoding="utf-8"))
        support = report["check"]["support"]
        recalls = [s["recall"] for s in map(support_of, rows.values()) if s is not None]
        assert sum(recalls) / len(recalls) == support["recall"]
        assert 1 == support["reattributed"]
        assert "lexical" == report["config"]["verifier"]["kind"]
        out_text = capsys.readouterr().out
        assert "support, advisory, verifier lexical sha256:" in out_text
        assert "not checked without a judge" not in out_text

    def test_the_verifier_changes_no_outcome_and_no_exit_code(self, tmp_path, capsys):
        runs = write_runs(tmp_path)
        plain, verified = tmp_path / "plain", tmp_path / "verified"
        argv = ["check", str(runs), "--fail-on-violation", "--json"]
        code_plain = main([*argv, "--out", str(plain)])
        first = json.loads(capsys.readouterr().out)
        code_verified = main([*argv, "--out", str(verified), "--verifier", "lexical"])
        second = json.loads(capsys.readouterr().out)
        assert 1 == code_plain == code_verified
        for key in ("headline", "passed", "failed", "unassessed", "violations"):
            assert first["check"][key] == second["check"][key], key
        outcomes = {k: r["outcome"] for k, r in rows_of(plain).items()}
        assert outcomes == {k: r["outcome"] for k, r in rows_of(verified).items()}
        assert all(support_of(r) is None for r in rows_of(plain).values())

    def test_without_a_verifier_the_scope_line_stays(self, tmp_path, capsys):
        main(["check", str(write_runs(tmp_path)), "--out", str(tmp_path / "o")])
        assert "not checked without a judge" in capsys.readouterr().out

    def test_a_bad_spelling_is_refused_before_reading(self, tmp_path, capsys):
        argv = ["check", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "o")]
        assert 2 == main([*argv, "--verifier", "nli"])
        assert "citemark: error:" in capsys.readouterr().err


def entailment_or_judge(prompt: str) -> str:
    """The entailment question: entailed when the claim's first three words are in a passage."""
    claim = re.search(r"^Claim: (.*)$", prompt, re.MULTILINE)
    if claim is None:
        return "a judge reply the scorer does not read"  # the faithfulness judge's question
    opening = " ".join(claim.group(1).split()[:3])
    return json.dumps({"entailed": opening in prompt[: claim.start()]})


def support_by_id(out: Path) -> dict[str, object]:
    return {key: support_of(row) for key, row in rows_of(out).items()}


class TestAJudgeVerifierIsRecordedAndReplayed:
    """``--verifier judge``'s calls land in judge-calls.jsonl, and --replay-judge answers them."""

    def test_a_replayed_run_gives_the_same_support_with_no_server(self, tmp_path, capsys):
        runs = write_runs(tmp_path)
        first, again = tmp_path / "first", tmp_path / "again"
        with FakeOpenAI(entailment_or_judge) as server:
            judge = ["--judge-model", "m-1", "--judge-base-url", server.base_url]
            argv = ["check", str(runs), "--verifier", "judge", "--out", str(first)]
            assert 0 == main([*argv, *judge])
        entailment = [p for p in server.prompts if "\nClaim: " in p]
        calls = [json.loads(line) for line in (first / JUDGE_CALLS_NAME).read_text().splitlines()]
        asked = [call for call in calls if call["prompt_sha256"] == PROMPT_SHA256]
        assert entailment
        assert len(entailment) == len(asked)
        assert all(call["line"] is None and call["id"] is None for call in asked)
        assert len(server.prompts) == len(calls)
        support = support_by_id(first)
        wrong = support["wrong"]
        assert wrong is not None
        assert [2] == wrong["sentences"][0]["citations"][0]["reattribution"][
            "supported_by_other_source"
        ]
        capsys.readouterr()
        argv = ["check", str(runs), "--verifier", "judge", "--out", str(again)]
        assert 0 == main([*argv, "--replay-judge", str(first)])
        assert support == support_by_id(again)
        assert "reply_not_recorded" not in (again / "rows.jsonl").read_text()
