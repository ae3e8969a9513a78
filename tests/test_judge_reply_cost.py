"""A looping judge's reply costs linear time (issue 17, item 7).

The shape a looping model produces: thousands of repeated verdicts for one
occurrence, under the 1 MB reply cap, against a large cited block. Before the fix
each verdict's quote was searched through the whole block, so the reply cost
verdicts x block (21 s of CPU at 15,000 verdicts against 1 MB). The tests count
evidence scans rather than time them: at most one per graded occurrence.
"""

from __future__ import annotations

import json

import pytest

from citemark._judging.scorer import reply as reply_module
from citemark._judging.scorer.reply import CONTRADICTORY, check_reply
from citemark._sources.render import normalize_quoted

BLOCK = "filler text " * 90_000 + "The late fee is five percent."
VERDICTS = 15_000


@pytest.fixture
def scans(monkeypatch):
    """Counts every evidence check check_reply makes."""
    calls: list[str | None] = []
    original = reply_module._evidence_problem

    def counting(span, source, cited):
        calls.append(span)
        return original(span, source, cited)

    monkeypatch.setattr(reply_module, "_evidence_problem", counting)
    return calls


def looping_reply(spans: list[str]) -> str:
    verdicts = [{"occurrence": 1, "outcome": "supported", "context_span": s} for s in spans]
    text = json.dumps({"score": 3, "verdicts": verdicts}, separators=(",", ":"))
    assert len(text.encode()) < 1_000_000
    return text


def naive_scans(text: str, block: str) -> int:
    """The old loop: every well-formed verdict's quote searched through its block."""
    count = 0
    normalized = normalize_quoted(block)
    for verdict in json.loads(text)["verdicts"]:
        count += 1
        _ = normalize_quoted(verdict["context_span"]) in normalized
    return count


@pytest.mark.parametrize("distinct", [False, True], ids=["repeated", "distinct"])
def test_surplus_verdicts_are_rejected_before_any_scan(scans, distinct):
    """15,000 verdicts for one occurrence: one scan, and the reply is contradictory."""
    spans = [f"fee {n}" if distinct else "late fee" for n in range(VERDICTS)]
    text = looping_reply(spans)

    check = check_reply(text, ["doc-1"], {"doc-1": BLOCK}, "The fee is 5% [doc-1].")

    assert CONTRADICTORY == check.reason
    assert len(scans) <= 1
    assert naive_scans(text, "short block") > 1


def test_one_quote_repeated_across_occurrences_is_scanned_once(scans):
    """The cache per (block, quote): many occurrences citing one block with one quote."""
    occurrences = 200
    verdicts = [
        {"occurrence": k, "outcome": "supported", "context_span": "late fee"}
        for k in range(1, occurrences + 1)
    ]
    text = json.dumps({"score": 3, "verdicts": verdicts})

    check = check_reply(text, ["doc-1"] * occurrences, {"doc-1": BLOCK}, "x")

    assert check.reason is None
    assert occurrences == len(check.verdicts)
    assert 1 == len(scans)
