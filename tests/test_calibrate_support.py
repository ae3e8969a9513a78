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


class TestRegisteredCalibration:
    """A verifier is calibrated as the judge is: register first, measure under it, pin it."""

    def register(self, tmp_path, *extra: str) -> Path:
        path = tmp_path / "support-reg.json"
        argv = ["calibrate", "register", str(EXCERPT), "--support", "complete-vs-rest"]
        assert 0 == main([*argv, "--threshold", "kappa=0.2", "--out", str(path), *extra])
        return path

    def test_a_measurement_is_checked_written_beside_and_pinned(self, tmp_path, capsys):
        registration = self.register(tmp_path)
        capsys.readouterr()
        argv = ["calibrate", "support", str(EXCERPT), "--verifier", "lexical", "--json"]
        assert 0 == main([*argv, "--registration", str(registration)])
        data = json.loads(capsys.readouterr().out)
        checks = {check["metric"]: check for check in data["checks"]}
        assert ["coverage", "kappa"] == sorted(checks)  # coverage is registered at 1 unless set
        assert 0.2 == checks["kappa"]["minimum"]
        assert checks["kappa"]["observed"] == data["agreement"]["kappa"]
        judged = data["agreement"]["items"]
        assert checks["coverage"]["observed"] == judged / (judged + data["unjudged"])
        assert data["threshold_met"] == all(check["met"] for check in checks.values())
        assert 0 == data["exit_code"]  # met or not, a report: the exit code stays 0
        written = Path(data["measurement_path"])
        assert written.parent == tmp_path
        on_disk = json.loads(written.read_text())
        assert on_disk["verifier"] == data["verifier"]
        assert on_disk["label_set_sha256"] == on_disk["registration"]["label_set_sha256"]

    def test_a_threshold_registered_after_a_measurement_is_refused(self, tmp_path, capsys):
        registration = self.register(tmp_path)
        argv = ["calibrate", "support", str(EXCERPT), "--verifier", "lexical"]
        assert 0 == main([*argv, "--registration", str(registration)])
        capsys.readouterr()
        again = ["calibrate", "register", str(EXCERPT), "--support", "complete-vs-rest"]
        later = tmp_path / "later.json"
        assert 2 == main([*again, "--threshold", "kappa=0.01", "--out", str(later)])
        assert "already been measured" in capsys.readouterr().err
        assert not later.exists()

    def test_another_mapping_is_another_label_set(self, tmp_path, capsys):
        registration = self.register(tmp_path)
        capsys.readouterr()
        argv = ["calibrate", "support", str(EXCERPT), "--verifier", "lexical"]
        other = ["--mapping", "complete-vs-incomplete", "--registration", str(registration)]
        assert 2 == main([*argv, *other])
        assert "registration was made for another label set" in capsys.readouterr().err
        assert [registration] == list(tmp_path.iterdir())

    def test_the_calibration_applies_to_the_measured_verifier_only(self, tmp_path):
        from citemark._judging.calibration.run import Threshold
        from citemark._judging.calibration.support import (
            calibrate_support,
            register_support_threshold,
        )
        from citemark.verifiers import LexicalVerifier

        registration = tmp_path / "reg.json"
        register_support_threshold(EXCERPT, "complete-vs-rest", Threshold(kappa=0.0), registration)
        measured = asyncio.run(measure_support(EXCERPT, LexicalVerifier()))
        calibration = calibrate_support(measured, registration)
        assert calibration.applies_to(LexicalVerifier().identity)
        assert not calibration.applies_to(LexicalVerifier(threshold=0.5).identity)
        assert not calibration.applies_to(Scripted("the").identity)

    def test_the_terminal_says_met_or_not_and_not_a_gate(self, tmp_path, capsys):
        registration = self.register(tmp_path)
        capsys.readouterr()
        argv = ["calibrate", "support", str(EXCERPT), "--verifier", "lexical"]
        assert 0 == main([*argv, "--registration", str(registration)])
        out = capsys.readouterr().out
        assert "registered minimums against the measurement" in out
        assert "(a report, not a gate) for verifier lexical sha256:" in out
