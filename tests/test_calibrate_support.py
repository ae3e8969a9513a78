"""``citemark calibrate support``: a verifier measured against ExpertQA's human labels."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from citemark._judging.calibration.agreement import measure_agreement
from citemark._judging.calibration.expertqa import COMPLETE_VS_REST, read_expertqa
from citemark._judging.calibration.support import claim_text, measure_support
from citemark._judging.verifiers.base import Premise, Verdict, VerifierIdentity
from citemark._pipelines.cli.main import main

EXCERPT = Path(__file__).parent / "fixtures" / "expertqa" / "rand_train_excerpt.jsonl"


class Scripted:
    """A real verifier: entailed when the claim holds ``word``; no verdict past ``answer``."""

    def __init__(self, word: str, answer: int | None = None) -> None:
        self.word, self.answer, self.asked = word, answer, 0
        self.seen: list[Premise] = []

    @property
    def identity(self) -> VerifierIdentity:
        return VerifierIdentity("lexical", "scripted", "1", "sha256:" + "0" * 64)

    async def verify(self, premises: Sequence[Premise]) -> list[Verdict]:
        out = []
        for premise in premises:
            self.asked += 1
            self.seen.append(premise)
            if self.answer is not None and self.asked > self.answer:
                out.append(Verdict(None, "call_failed"))
            else:
                out.append(Verdict(self.word in premise.claim))
        return out

    async def aclose(self) -> None:
        return None


class TestClaimText:
    def test_markers_are_cut_and_code_is_kept(self):
        assert "Water boils at 100 C." == claim_text("Water boils at 100 C [1][2].")
        assert "Use `a[1]` here." == claim_text("Use `a[1]` here [3].")

    def test_a_naive_regex_would_cut_code(self):
        """The cut follows citemark's grammar: a bracket in code is not a marker."""
        import re

        naive = re.sub(r"\[\d+\]", "", "Use `a[1]` here [3].")
        assert naive != claim_text("Use `a[1]` here [3].")


class TestMeasureSupport:
    def test_agreement_is_over_the_labelled_claims(self):
        claims, _ = read_expertqa(EXCERPT, mapping=COMPLETE_VS_REST)
        verifier = Scripted("the")
        measured = asyncio.run(measure_support(EXCERPT, verifier, mapping="complete-vs-rest"))
        expected = measure_agreement(
            [c.id for c in claims],
            [c.entailed for c in claims],
            ["the" in claim_text(c.claim) for c in claims],
        )
        assert expected == measured.agreement
        assert len(claims) == verifier.asked == measured.agreement.items
        assert all("[" not in p.claim for p in verifier.seen if "`" not in p.claim)

    def test_claims_without_a_verdict_are_counted_not_guessed(self):
        verifier = Scripted("the", answer=3)
        measured = asyncio.run(measure_support(EXCERPT, verifier, batch=2))
        claims, _ = read_expertqa(EXCERPT, mapping=COMPLETE_VS_REST)
        assert 3 == measured.agreement.items
        assert len(claims) - 3 == measured.unjudged


class TestCommand:
    def test_lexical_on_the_excerpt_prints_json_with_the_identity(self, capsys):
        code = main(["calibrate", "support", str(EXCERPT), "--verifier", "lexical", "--json"])
        data = json.loads(capsys.readouterr().out)
        assert 0 == code
        assert data["advisory"] is True
        assert "lexical" == data["verifier"]["kind"]
        assert data["verifier"]["digest"].startswith("sha256:")
        assert "rand_train_excerpt.jsonl" == data["labels"]
        assert data["agreement"]["items"] == data["read"]["entailed"] + data["read"]["not_entailed"]

    def test_the_mapping_decides_what_is_measured(self, capsys):
        main(["calibrate", "support", str(EXCERPT), "--verifier", "lexical", "--json"])
        rest = json.loads(capsys.readouterr().out)
        argv = ["calibrate", "support", str(EXCERPT), "--verifier", "lexical", "--json"]
        main([*argv, "--mapping", "complete-vs-incomplete"])
        incomplete = json.loads(capsys.readouterr().out)
        assert rest["read"]["not_entailed"] > incomplete["read"]["not_entailed"]
        assert rest["read"]["entailed"] == incomplete["read"]["entailed"]

    def test_the_terminal_table_says_advisory(self, capsys):
        assert 0 == main(["calibrate", "support", str(EXCERPT), "--verifier", "lexical"])
        out = capsys.readouterr().out
        assert "support verifier, advisory: lexical sha256:" in out
        assert "Cohen's kappa" in out
        assert "not a gate" in out

    @pytest.mark.parametrize("spec", ["nli", "nli:", "bert", "lexical:x"])
    def test_a_bad_verifier_is_a_usage_error(self, spec, capsys):
        assert 2 == main(["calibrate", "support", str(EXCERPT), "--verifier", spec])
        assert "--verifier takes lexical, judge or nli:PATH" in capsys.readouterr().err

    def test_judge_needs_a_model(self, capsys, monkeypatch):
        monkeypatch.delenv("CITEMARK_MODEL", raising=False)
        assert 2 == main(["calibrate", "support", str(EXCERPT), "--verifier", "judge"])
        assert "citemark: error:" in capsys.readouterr().err
