"""`citemark echo` and `citemark calibrate` through the real entry point, against a local server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import pytest
from fake_openai import FakeOpenAI, run_cli

from citemark import CalibrationReport, LabelledItem, LabelSet, Registration, Source, plan_echo

SEED = 11
SAYS_FAITHFUL = '{"faithful": true, "unsupported_claims": [], "reasoning": "Supported."}'
SAYS_UNFAITHFUL = '{"faithful": false, "unsupported_claims": [], "reasoning": "Not supported."}'


def scripted_model(outcomes: list[str]):
    """A responder that plays one outcome per echo case, knowing the plan a seed makes."""
    plan = plan_echo(SEED, len(outcomes))
    asked: list[str] = []

    def respond(prompt: str) -> str:
        # Cases run one after another, so the n-th prompt is the n-th case.
        asked.append(prompt)
        case = plan.cases[len(asked) - 1]
        assert case.question in prompt
        positive = case.positive_number
        outcome = outcomes[case.number - 1]
        if outcome == "pass":
            return f"See the policy [{positive}]."
        if outcome == "wrong_source":
            return f"See the policy [{3 - positive}]."
        if outcome == "leak":
            return f"See the policy [{positive}]. Reference {case.absent_marker}."
        if outcome == "rejected":
            return "See the policy [7]."
        return "The sources do not say."

    return respond


class TestEcho:
    OUTCOMES: ClassVar[list[str]] = ["pass", "wrong_source", "leak", "uncited", "rejected"]

    def test_outcomes_are_printed_and_never_change_the_exit_code(self, tmp_path):
        """Pass, wrong source, leak, uncited and rejected cases all exit 0; a leak is warned."""
        with FakeOpenAI(scripted_model(self.OUTCOMES)) as server:
            done = run_cli(
                "echo",
                "--seed",
                str(SEED),
                "--cases",
                "5",
                "--out",
                str(tmp_path),
                base_url=server.base_url,
            )
        assert 0 == done.returncode
        assert 5 == len(server.prompts)
        for outcome in self.OUTCOMES:
            assert outcome in done.stdout
        assert (
            "citemark: warning: 1 of 5 echo cases leaked a marker the model was never given\n"
            == done.stderr
        )
        report = json.loads((tmp_path / "echo-latest.json").read_bytes())
        assert self.OUTCOMES == [case["outcome"] for case in report["cases"]]

    def test_json_prints_counts_and_cases(self, tmp_path):
        """--json prints one object with the counts, the cases and the report's path."""
        with FakeOpenAI(scripted_model(self.OUTCOMES)) as server:
            done = run_cli(
                "echo",
                "--seed",
                str(SEED),
                "--cases",
                "5",
                "--out",
                str(tmp_path),
                "--json",
                base_url=server.base_url,
            )
        output = json.loads(done.stdout)
        assert (0, False, str(tmp_path / "echo-latest.json")) == (
            output["exit_code"],
            output["passed"],
            output["report"],
        )
        assert {
            "pass": 1,
            "wrong_source": 1,
            "uncited": 1,
            "leak": 1,
            "rejected": 1,
            "call_failed": 0,
        } == output["counts"]
        assert ["answer"] == output["cases"][2]["leaked_in"]

    def test_an_unreachable_model_exits_3(self, tmp_path, free_port):
        """When no case reached the model, nothing was measured: exit 3 with one error line."""
        done = run_cli(
            "echo",
            "--cases",
            "2",
            "--out",
            str(tmp_path),
            base_url=f"http://127.0.0.1:{free_port}/v1",
        )
        assert (
            3,
            "citemark: error: every echo case failed: the model could not be reached (2 calls)\n",
        ) == (
            done.returncode,
            done.stderr,
        )
        assert "call_failed" in done.stdout

    def test_missing_configuration_exits_2(self, tmp_path):
        """Without a base URL and a model the command says what to set and exits 2."""
        done = run_cli("echo", "--out", str(tmp_path))
        assert 2 == done.returncode
        assert 1 == len(done.stderr.splitlines())
        assert "CITEMARK_BASE_URL" in done.stderr

    def test_fewer_than_one_case_exits_2(self, tmp_path):
        """--cases 0 is a usage error, before any model call."""
        done = run_cli("echo", "--cases", "0", base_url="http://127.0.0.1:9/v1")
        assert (2, "citemark: error: --cases must be at least 1\n") == (
            done.returncode,
            done.stderr,
        )


def labels_file(path: Path, labels: list[bool]) -> Path:
    source = Source(text="Fees rise in May.", doc_id="fees")
    items = [
        LabelledItem(
            id=f"item-{number}",
            question="When do fees rise?",
            answer=f"Fees rise in May [1]. Note {number}.",
            sources=[source],
            faithful=label,
            labeller="ana",
            rubric_version="2026-01",
        )
        for number, label in enumerate(labels, start=1)
    ]
    return LabelSet(items=items).write(path)


def register(tmp_path: Path, *thresholds: str, name: str = "reg.json"):
    labels = tmp_path / "labels.json"
    if not labels.exists():
        labels_file(labels, [True, True, False, False])
    argv = ["calibrate", "register", str(labels), "--out", str(tmp_path / name)]
    for threshold in thresholds:
        argv += ["--threshold", threshold]
    return run_cli(*argv)


def measure(tmp_path: Path, replies: list[str], *extra: str):
    with FakeOpenAI(replies) as server:
        return run_cli(
            "calibrate",
            "run",
            str(tmp_path / "labels.json"),
            "--registration",
            str(tmp_path / "reg.json"),
            "--judge-model",
            "judge-1",
            "--judge-base-url",
            server.base_url,
            *extra,
        )


class TestCalibrateRegister:
    def test_registers_a_threshold_in_its_own_file(self, tmp_path):
        """register writes a Registration with the label set's hash and exits 0."""
        done = register(tmp_path, "kappa=0.6", "unfaithful_recall=0.75")
        assert (0, "") == (done.returncode, done.stderr)
        registration = Registration.model_validate_json((tmp_path / "reg.json").read_bytes())
        labels = LabelSet.read(tmp_path / "labels.json")
        assert labels.sha256 == registration.label_set_sha256
        assert {"kappa": 0.6, "unfaithful_recall": 0.75, "coverage": 1.0} == (
            registration.threshold.minimums()
        )
        assert done.stdout.startswith("registered kappa >= 0.6, unfaithful_recall >= 0.75, ")

    def test_json_prints_the_registration(self, tmp_path):
        """--json prints the registration and where it was written."""
        labels_file(tmp_path / "labels.json", [True, False])
        done = run_cli(
            "calibrate",
            "register",
            str(tmp_path / "labels.json"),
            "--out",
            str(tmp_path / "reg.json"),
            "--threshold",
            "agreement_rate=0.9",
            "--json",
        )
        output = json.loads(done.stdout)
        assert (str(tmp_path / "reg.json"), 0.9) == (
            output["registration"],
            output["threshold"]["agreement_rate"],
        )

    @pytest.mark.parametrize(
        ("threshold", "message"),
        [
            (
                "precision=0.5",
                (
                    "--threshold must be METRIC=MIN with METRIC one of agreement_rate, kappa, "
                    "faithful_precision, faithful_recall, unfaithful_precision, unfaithful_recall, "
                    "coverage"
                ),
            ),
            ("kappa=high", "--threshold kappa= must be a number"),
            (
                "coverage=0.5",
                (
                    "the threshold is not valid: a threshold needs at least one agreement metric "
                    "besides coverage"
                ),
            ),
            ("kappa=2", "the threshold is not valid: kappa must be a number in -1..1"),
        ],
        ids=["unknown-metric", "not-a-number", "coverage-only", "out-of-range"],
    )
    def test_a_bad_threshold_exits_2(self, tmp_path, threshold, message):
        """A threshold that is not METRIC=MIN, or not a valid minimum, exits 2 with one line."""
        done = register(tmp_path, threshold)
        assert (2, f"citemark: error: {message}\n") == (done.returncode, done.stderr)
        assert not (tmp_path / "reg.json").exists()

    def test_an_existing_registration_is_not_overwritten(self, tmp_path):
        """Registering to a path that exists is refused with exit code 2."""
        assert 0 == register(tmp_path, "kappa=0.6").returncode
        done = register(tmp_path, "kappa=0.1")
        assert (
            2,
            (
                "citemark: error: registration refused: a registration already exists at this path; "
                "remove it deliberately to register again\n"
            ),
        ) == (done.returncode, done.stderr)

    def test_a_damaged_label_set_exits_2(self, tmp_path):
        """A label file whose item was edited after hashing exits 2, naming the item position."""
        path = labels_file(tmp_path / "labels.json", [True, False])
        data = json.loads(path.read_bytes())
        data["items"][1]["faithful"] = True
        path.write_text(json.dumps(data), encoding="utf-8")
        done = register(tmp_path, "kappa=0.6")
        assert (
            2,
            "citemark: error: item 2 does not match its content_sha256: it was changed\n",
        ) == (done.returncode, done.stderr)


class TestCalibrateRun:
    def test_a_missed_threshold_is_reported_and_exits_0(self, tmp_path):
        """A judge that calls everything faithful misses the threshold; the exit code is 0."""
        register(tmp_path, "kappa=0.6")
        done = measure(tmp_path, [SAYS_FAITHFUL] * 4)
        assert (0, "") == (done.returncode, done.stderr)
        assert "threshold not met (a report, not a gate)" in done.stdout
        measurements = list(tmp_path.glob("reg.measurement-*.json"))
        assert 1 == len(measurements)
        report = CalibrationReport.model_validate_json(measurements[0].read_bytes())
        assert (False, 0.5, "judge-1") == (
            report.threshold_met,
            report.agreement.agreement_rate,
            report.judge.model,
        )

    def test_a_met_threshold_exits_0_too(self, tmp_path):
        """A judge agreeing on every item meets the threshold; --json says so, exit code 0."""
        register(tmp_path, "kappa=0.6")
        replies = [SAYS_FAITHFUL, SAYS_FAITHFUL, SAYS_UNFAITHFUL, SAYS_UNFAITHFUL]
        done = measure(tmp_path, replies, "--json")
        output = json.loads(done.stdout)
        assert (0, 0, True, 1.0) == (
            done.returncode,
            output["exit_code"],
            output["threshold_met"],
            output["agreement"]["kappa"],
        )
        assert Path(output["measurement"]).exists()

    def test_a_registration_after_a_measurement_is_refused(self, tmp_path):
        """Once the label set was measured beside it, a new registration exits 2 with one line."""
        register(tmp_path, "kappa=0.6")
        assert 0 == measure(tmp_path, [SAYS_FAITHFUL] * 4).returncode
        done = register(tmp_path, "kappa=0.1", name="late.json")
        assert (
            2,
            (
                "citemark: error: registration refused: this label set has already been measured "
                "next to this registration: a threshold registered after a measurement describes "
                "it, it does not test it\n"
            ),
        ) == (done.returncode, done.stderr)
        assert not (tmp_path / "late.json").exists()

    def test_unusable_replies_are_recorded_not_fatal(self, tmp_path):
        """Judge replies that fail validation make items unusable; the run still exits 0."""
        register(tmp_path, "kappa=0.6")
        done = measure(tmp_path, ["yes", SAYS_FAITHFUL, "no", SAYS_UNFAITHFUL], "--json")
        output = json.loads(done.stdout)
        assert (0, ["JudgeError", "JudgeError"]) == (
            done.returncode,
            [item["error"] for item in output["unusable"]],
        )

    def test_an_unreachable_judge_exits_3(self, tmp_path, free_port):
        """When no item reached the judge nothing was measured: exit 3 with one error line."""
        register(tmp_path, "kappa=0.6")
        done = run_cli(
            "calibrate",
            "run",
            str(tmp_path / "labels.json"),
            "--registration",
            str(tmp_path / "reg.json"),
            "--judge-model",
            "judge-1",
            "--judge-base-url",
            f"http://127.0.0.1:{free_port}/v1",
        )
        assert (3, "citemark: error: every judge call failed (4 items: 4 connect)\n") == (
            done.returncode,
            done.stderr,
        )

    def test_a_registration_for_other_labels_exits_2(self, tmp_path):
        """A registration made for another label set is refused with exit code 2."""
        register(tmp_path, "kappa=0.6")
        labels_file(tmp_path / "labels.json", [True, True, True])
        done = measure(tmp_path, [SAYS_FAITHFUL] * 3)
        assert (
            2,
            (
                "citemark: error: calibration refused: the registration was made for another "
                "label set: its label_set_sha256 differs\n"
            ),
        ) == (done.returncode, done.stderr)

    def test_a_missing_registration_exits_2(self, tmp_path):
        """--registration naming no file exits 2 before any judge call."""
        labels_file(tmp_path / "labels.json", [True])
        with FakeOpenAI([]) as server:
            done = run_cli(
                "calibrate",
                "run",
                str(tmp_path / "labels.json"),
                "--registration",
                str(tmp_path / "nope.json"),
                base_url=server.base_url,
            )
        assert (2, "citemark: error: --registration must name an existing file\n") == (
            done.returncode,
            done.stderr,
        )
        assert [] == server.prompts

    def test_the_judge_model_falls_back_to_the_environment(self, tmp_path):
        """Without --judge-model, calibrate run measures CITEMARK_MODEL at CITEMARK_BASE_URL."""
        register(tmp_path, "kappa=0.6")
        with FakeOpenAI([SAYS_FAITHFUL] * 4) as server:
            done = run_cli(
                "calibrate",
                "run",
                str(tmp_path / "labels.json"),
                "--registration",
                str(tmp_path / "reg.json"),
                "--json",
                base_url=server.base_url,
            )
        assert (0, "fake-model") == (done.returncode, json.loads(done.stdout)["judge"]["model"])
