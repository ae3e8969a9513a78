"""Calibration, SPEC §3.11: label sets, agreement arithmetic, pre-registration, applicability."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import pytest
from pydantic import ValidationError

from citemark import (
    DEFAULT_JUDGE_PROMPT,
    CalibrationReport,
    ChatError,
    ConfusionMatrix,
    FaithfulnessJudge,
    LabelledItem,
    LabelSet,
    LabelSetError,
    ModelIdentity,
    Registration,
    Source,
    Threshold,
    agreement_rate,
    cohen_kappa,
    confusion_matrix,
    measure_agreement,
    precision_recall,
    register_threshold,
    run_calibration_sync,
)
from citemark._judging.calibration.labelset import MAX_LABEL_FILE_BYTES
from citemark.testing import ScriptedChat

F, U = True, False
CANARY = "CANARY-labels-3c8f"
SAYS_FAITHFUL = '{"faithful": true, "unsupported_claims": [], "reasoning": "Supported."}'
SAYS_UNFAITHFUL = '{"faithful": false, "unsupported_claims": [], "reasoning": "Not supported."}'


def item(number: int, faithful: bool, **changes) -> LabelledItem:
    fields = {
        "id": f"item-{number}",
        "question": "When do fees rise?",
        "answer": f"Fees rise in May [1]. Note {number}.",
        "sources": [Source(text="Fees rise in May.", doc_id="fees")],
        "faithful": faithful,
        "labeller": "ana",
        "rubric_version": "2026-01",
    }
    return LabelledItem(**{**fields, **changes})


def label_set(labels: list[bool]) -> LabelSet:
    return LabelSet(items=[item(i, label) for i, label in enumerate(labels, start=1)])


def judge_saying(verdicts: list[bool], **chat_options) -> FaithfulnessJudge:
    replies = [SAYS_FAITHFUL if v else SAYS_UNFAITHFUL for v in verdicts]
    return FaithfulnessJudge(ScriptedChat(replies, **chat_options))


# Example A, 10 items. Human labels and judge verdicts side by side:
#   human  F F F F F F U U U U      (6 faithful, 4 unfaithful)
#   judge  F F F F F U F U U U      (6 faithful, 4 unfaithful)
# Confusion (human as judge): FF=5, FU=1 (item 6), UF=1 (item 7), UU=3.
HUMAN_A = [F, F, F, F, F, F, U, U, U, U]
JUDGE_A = [F, F, F, F, F, U, F, U, U, U]
# Example B, 8 items, a judge that calls almost everything faithful:
#   human  F F F U U U U U          (3 faithful, 5 unfaithful)
#   judge  F F F F F F U U          (6 faithful, 2 unfaithful)
# Confusion: FF=3, FU=0, UF=3 (items 4, 5, 6), UU=2.
HUMAN_B = [F, F, F, U, U, U, U, U]
JUDGE_B = [F, F, F, F, F, F, U, U]


class TestAgreementArithmetic:
    def test_confusion_matrix_of_example_a(self):
        """Example A counts 5 / 1 / 1 / 3 by human label and judge verdict."""
        assert ConfusionMatrix(
            faithful_as_faithful=5,
            faithful_as_unfaithful=1,
            unfaithful_as_faithful=1,
            unfaithful_as_unfaithful=3,
        ) == confusion_matrix(HUMAN_A, JUDGE_A)

    def test_agreement_rate_of_example_a(self):
        """Agreement is (FF + UU) / n = (5 + 3) / 10 = 0.8."""
        assert float(Fraction(8, 10)) == agreement_rate(HUMAN_A, JUDGE_A)

    def test_precision_and_recall_of_example_a(self):
        """Faithful: precision 5/(5+1), recall 5/(5+1); unfaithful: precision 3/(3+1), recall 3/(3+1)."""
        assert (float(Fraction(5, 6)), float(Fraction(5, 6))) == precision_recall(
            HUMAN_A, JUDGE_A, label=True
        )
        assert (0.75, 0.75) == precision_recall(HUMAN_A, JUDGE_A, label=False)

    def test_kappa_of_example_a(self):
        """p_o = 8/10; p_e = (6/10)(6/10) + (4/10)(4/10) = 13/25; kappa = (4/5 - 13/25) / (12/25) = 7/12."""
        assert float(Fraction(7, 12)) == cohen_kappa(HUMAN_A, JUDGE_A)

    def test_example_b_separates_the_classes(self):
        """A judge calling most answers faithful: unfaithful recall 2/5 while faithful recall is 1."""
        # faithful:   precision FF/(FF+UF) = 3/6, recall FF/(FF+FU) = 3/3
        # unfaithful: precision UU/(UU+FU) = 2/2, recall UU/(UU+UF) = 2/5
        assert (0.5, 1.0) == precision_recall(HUMAN_B, JUDGE_B, label=True)
        assert (1.0, 0.4) == precision_recall(HUMAN_B, JUDGE_B, label=False)

    def test_kappa_of_example_b(self):
        """p_o = 5/8; p_e = (3/8)(6/8) + (5/8)(2/8) = 7/16; kappa = (10/16 - 7/16) / (9/16) = 1/3."""
        assert float(Fraction(1, 3)) == cohen_kappa(HUMAN_B, JUDGE_B)

    def test_disagreements_are_listed_by_human_class(self):
        """Example B's three misses are the unfaithful items 4, 5 and 6; no faithful item is missed."""
        ids = [f"item-{i}" for i in range(1, 9)]
        agreement = measure_agreement(ids, HUMAN_B, JUDGE_B)
        assert ((), ("item-4", "item-5", "item-6")) == (
            agreement.disagreements.faithful,
            agreement.disagreements.unfaithful,
        )
        assert (3, 5, 6, 2) == (
            agreement.faithful.support,
            agreement.unfaithful.support,
            agreement.faithful.predicted,
            agreement.unfaithful.predicted,
        )

    def test_perfect_agreement_has_kappa_one(self):
        """Identical labels over both classes: p_o = 1, p_e = 1/2, kappa = 1."""
        labels = [F, U, F, U]
        assert (1.0, 1.0) == (agreement_rate(labels, labels), cohen_kappa(labels, labels))

    def test_all_one_class_on_both_sides_has_no_kappa(self):
        """Both sides always faithful: p_e = 1, so kappa is undefined (None), not 1."""
        labels = [F, F, F]
        assert (1.0, None) == (agreement_rate(labels, labels), cohen_kappa(labels, labels))
        assert (None, None) == precision_recall(labels, labels, label=False)

    def test_one_sided_single_class_is_chance(self):
        """Humans all faithful, judge half: p_o = 1/2, p_e = 1 x 1/2 + 0 = 1/2, kappa = 0."""
        assert 0.0 == cohen_kappa([F, F, F, F], [F, F, U, U])

    def test_chance_level_agreement_has_kappa_zero(self):
        """Agreement exactly as chance predicts: p_o = 1/2, p_e = 1/2, kappa = 0."""
        assert 0.0 == cohen_kappa([F, F, U, U], [F, U, F, U])

    def test_systematic_disagreement_has_kappa_minus_one(self):
        """Always the opposite label: p_o = 0, p_e = 1/2, kappa = -1."""
        assert -1.0 == cohen_kappa([F, U], [U, F])

    def test_no_items_gives_no_figures(self):
        """Over no items every rate is None, not 0 or 1."""
        agreement = measure_agreement([], [], [])
        assert (0, None, None, None, None) == (
            agreement.items,
            agreement.agreement_rate,
            agreement.kappa,
            agreement.faithful.precision,
            agreement.unfaithful.recall,
        )

    def test_unequal_lengths_are_refused(self):
        """Label lists of different lengths raise ValueError naming the counts."""
        with pytest.raises(ValueError, match=r"\(got 2 and 1\)"):
            cohen_kappa([F, U], [F])
        with pytest.raises(ValueError, match="got 1 ids and 2 labels"):
            measure_agreement(["a"], [F, U], [F, U])

    def test_labels_must_be_bools(self):
        """1 and 0 are not labels: only bools are accepted."""
        with pytest.raises(ValueError, match="must be bools"):
            agreement_rate([1, 0], [True, False])


class TestLabelSet:
    def test_round_trips_through_its_file(self, tmp_path):
        """A written label set reads back equal, with the same set hash."""
        labels = label_set([F, U, F])
        read = LabelSet.read(labels.write(tmp_path / "labels.json"))
        assert (labels, labels.sha256) == (read, read.sha256)

    def test_the_file_carries_its_hashes(self, tmp_path):
        """The file holds schema_version, the set hash and each item's content hash."""
        labels = label_set([F, U])
        data = json.loads(labels.write(tmp_path / "labels.json").read_bytes())
        assert (1, labels.sha256) == (data["schema_version"], data["sha256"])
        assert [i.content_sha256 for i in labels.items] == [
            i["content_sha256"] for i in data["items"]
        ]

    def test_reordering_keeps_the_set_hash(self):
        """The set hash is over sorted ids, so item order does not change it."""
        a, b = item(1, F), item(2, U)
        assert LabelSet(items=[a, b]).sha256 == LabelSet(items=[b, a]).sha256

    def test_any_edit_changes_the_hashes(self):
        """Flipping a label changes that item's content hash and the set hash."""
        before, after = item(1, F), item(1, U)
        assert before.content_sha256 != after.content_sha256
        assert LabelSet(items=[before]).sha256 != LabelSet(items=[after]).sha256

    def test_a_duplicate_id_is_refused(self):
        """Two items with one id fail the integrity check, named by position."""
        with pytest.raises(ValidationError, match="item 2 repeats the id of item 1"):
            LabelSet(items=[item(1, F), item(1, U, answer="Other.")])

    def test_a_duplicate_id_in_a_file_is_refused(self, tmp_path):
        """A file whose items share an id does not read."""
        path = label_set([F, U]).write(tmp_path / "labels.json")
        data = json.loads(path.read_bytes())
        twin = item(1, U)  # item 1's id, content hash recomputed: only the id clashes
        data["items"][1] = {**twin.model_dump(mode="json"), "content_sha256": twin.content_sha256}
        path.write_text(json.dumps(data))
        with pytest.raises(ValueError, match="item 2 repeats the id of item 1"):
            LabelSet.read(path)

    @pytest.mark.parametrize(
        ("field", "value"),
        [("answer", "Fees never rise."), ("faithful", True), ("labeller", "bob")],
    )
    def test_tampered_content_is_refused(self, tmp_path, field, value):
        """Editing an item's answer, label or labeller without its hash is detected."""
        path = label_set([F, U]).write(tmp_path / "labels.json")
        data = json.loads(path.read_bytes())
        data["items"][1][field] = value
        path.write_text(json.dumps(data))
        with pytest.raises(ValueError, match="item 2 does not match its content_sha256"):
            LabelSet.read(path)

    def test_rehashed_tampering_is_refused(self, tmp_path):
        """Editing an item and recomputing its content hash still breaks the set hash."""
        labels = label_set([F, U])
        path = labels.write(tmp_path / "labels.json")
        data = json.loads(path.read_bytes())
        flipped = item(2, F)
        data["items"][1] = {
            **flipped.model_dump(mode="json"),
            "content_sha256": flipped.content_sha256,
        }
        path.write_text(json.dumps(data))
        with pytest.raises(ValueError, match="do not match the set's sha256"):
            LabelSet.read(path)

    def test_a_removed_item_is_refused(self, tmp_path):
        """Dropping an item from the file breaks the set hash."""
        path = label_set([F, U, F]).write(tmp_path / "labels.json")
        data = json.loads(path.read_bytes())
        del data["items"][2]
        path.write_text(json.dumps(data))
        with pytest.raises(ValueError, match="do not match the set's sha256"):
            LabelSet.read(path)

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ('{"schema_version": 1, "schema_version": 1}', "a key is given twice"),
            ('{"schema_version": NaN}', "NaN, Infinity"),
            ("{not json", "not JSON"),
            ('{"schema_version": 2, "sha256": "' + "0" * 64 + '", "items": []}', "schema"),
        ],
    )
    def test_a_malformed_file_is_refused(self, text, message):
        """Duplicate keys, NaN, broken JSON and another schema version are refused."""
        with pytest.raises(ValueError, match=message):
            LabelSet.from_json(text)

    def test_a_missing_item_hash_is_refused(self, tmp_path):
        """An item without content_sha256 does not read."""
        path = label_set([F]).write(tmp_path / "labels.json")
        data = json.loads(path.read_bytes())
        del data["items"][0]["content_sha256"]
        path.write_text(json.dumps(data))
        with pytest.raises(ValueError, match="item 1 has no content_sha256"):
            LabelSet.read(path)

    def test_an_unexpected_key_is_refused_without_being_named(self):
        """An unknown item field is refused as 'unexpected field', its name never printed."""
        data = json.loads(json.dumps({"schema_version": 1, "sha256": "0" * 64}))
        data["items"] = [
            {**item(1, F).model_dump(mode="json"), "SECRET-KEY": 1, "content_sha256": "0" * 64}
        ]
        with pytest.raises(ValueError, match="unexpected field") as info:
            LabelSet.from_json(json.dumps(data))
        assert "SECRET-KEY" not in str(info.value)

    def test_labels_are_strict_booleans(self):
        """A label written as the string "true" is refused."""
        with pytest.raises(ValidationError):
            item(1, "true")  # type: ignore[arg-type]

    def test_a_faithful_item_cannot_list_unsupported_claims(self):
        """faithful with unsupported claims contradicts itself and is refused."""
        with pytest.raises(ValidationError, match="cannot list unsupported claims"):
            item(1, F, unsupported_claims=["Fees rise"])

    def test_an_empty_set_is_refused(self):
        """A label set holds at least one item."""
        with pytest.raises(ValidationError):
            LabelSet(items=[])


def file_text(labels: LabelSet) -> str:
    """A label set's file content, as `LabelSet.write` would write it."""
    document = {
        "schema_version": 1,
        "sha256": labels.sha256,
        "items": [
            {**i.model_dump(mode="json"), "content_sha256": i.content_sha256} for i in labels.items
        ],
    }
    return json.dumps(document)


def refusal(data: bytes | str) -> ValueError:
    """The LabelSetError (a ValueError) from_json raises for ``data``; any other exception fails."""
    with pytest.raises(ValueError) as info:
        LabelSet.from_json(data)
    assert LabelSetError is type(info.value)
    return info.value


class TestLabelFileParsing:
    """The label file goes through the strict parser model replies use, with its own cap."""

    def test_deep_nesting_is_a_value_error(self):
        """Nesting past the parser's depth is the documented ValueError, where plain json raises RecursionError."""
        text = "[" * 200_000
        with pytest.raises(RecursionError):
            json.loads(text + "]" * 200_000)  # the naive parser
        error = refusal(text)
        assert "the label file is not strict JSON: it nests deeper than the parser allows" == str(
            error
        )

    @pytest.mark.parametrize("literal", ["1e999", "-1e999"])
    def test_a_number_beyond_the_float_range_is_refused(self, literal):
        """1e999 is refused, where plain json (and parse_constant alone) reads it as infinity."""
        assert math.isinf(json.loads(literal, parse_constant=lambda _: 0))  # the naive parser
        error = refusal('{"schema_version": ' + literal + "}")
        assert "NaN, Infinity or a number too large for a float" in str(error)

    def test_a_file_over_the_cap_is_refused_before_parsing(self):
        """Valid JSON one byte over MAX_LABEL_FILE_BYTES is refused for its size, which plain json reads whole."""
        text = " " * (MAX_LABEL_FILE_BYTES - 1) + "{}"
        assert {} == json.loads(text)  # the naive parser reads all of it
        assert (
            f"the label file is larger than {MAX_LABEL_FILE_BYTES} bytes",
            f"the label file is larger than {MAX_LABEL_FILE_BYTES} bytes",
        ) == (str(refusal(text)), str(refusal(text.encode())))

    def test_a_file_at_the_cap_is_parsed(self):
        """A file of exactly MAX_LABEL_FILE_BYTES is parsed, and fails only on its content."""
        text = " " * (MAX_LABEL_FILE_BYTES - 2) + "{}"
        assert str(refusal(text)).startswith("the label file does not fit its schema")

    def test_read_stops_one_byte_past_the_cap(self, tmp_path):
        """read refuses an oversized file for its size without reading it whole."""
        path = tmp_path / "labels.json"
        with path.open("wb") as file:
            file.truncate(2 * MAX_LABEL_FILE_BYTES)  # sparse: nothing is written
        with pytest.raises(ValueError, match=f"larger than {MAX_LABEL_FILE_BYTES} bytes"):
            LabelSet.read(path)

    def test_a_file_that_is_not_utf8_is_refused_without_its_bytes(self, tmp_path):
        """Undecodable bytes are a ValueError that holds none of the file, unlike the decoder's error."""
        data = file_text(label_set([F])).replace("ana", CANARY).encode() + b"\xff"
        with pytest.raises(UnicodeDecodeError) as naive:
            json.loads(data)  # the naive parser: the error keeps the whole file
        assert CANARY.encode() in naive.value.object
        path = tmp_path / "labels.json"
        path.write_bytes(data)
        with pytest.raises(ValueError) as info:
            LabelSet.read(path)
        error = info.value
        assert ("the label file is not UTF-8 text", None, None) == (
            str(error),
            error.__cause__,
            error.__context__,
        )

    def test_a_byte_order_mark_is_allowed(self, tmp_path):
        """A UTF-8 file that starts with a byte-order mark reads like one without."""
        labels = label_set([F, U])
        path = tmp_path / "labels.json"
        path.write_bytes(b"\xef\xbb\xbf" + file_text(labels).encode())
        assert labels == LabelSet.read(path)

    def test_a_lone_surrogate_is_refused_by_position(self):
        """A \\ud800 escape is a ValueError naming the item, not a UnicodeEncodeError holding its text."""
        odd = item(1, F, question=CANARY + "\ud800")
        with pytest.raises(UnicodeEncodeError) as naive:
            odd.content_sha256  # noqa: B018 - the naive hash raises
        assert CANARY in naive.value.object
        document = json.loads(file_text(label_set([F])))
        document["items"][0]["question"] = CANARY + "\ud800"
        error = refusal(json.dumps(document))
        assert ("item 1 holds a lone surrogate, which is not Unicode text", None, None) == (
            str(error),
            error.__cause__,
            error.__context__,
        )

    @pytest.mark.parametrize(
        "data",
        [
            "[" * 200_000,
            '{"a": 1e999}',
            '{"a": NaN}',
            '{"a": 1, "a": 2}',
            "{" + CANARY,
            CANARY.encode() + b"\xff",
        ],
        ids=["deep", "overflow", "nan", "duplicate", "not-json", "not-utf8"],
    )
    def test_parse_failures_chain_nothing(self, data):
        """Every parse failure is a ValueError with no cause and no context, and no canary."""
        error = refusal(data)
        assert (None, None) == (error.__cause__, error.__context__)
        assert CANARY not in repr(error.args)


class TestThreshold:
    def test_needs_an_agreement_metric(self):
        """Coverage alone is not a threshold."""
        with pytest.raises(ValidationError, match="at least one agreement metric"):
            Threshold()

    @pytest.mark.parametrize(
        "fields",
        [{"kappa": 1.5}, {"kappa": -1.5}, {"agreement_rate": -0.1}, {"kappa": float("nan")}],
    )
    def test_out_of_range_minimums_are_refused(self, fields):
        """Minimums lie in 0..1 (kappa in -1..1) and are finite."""
        with pytest.raises(ValidationError):
            Threshold(**fields)

    def test_lists_the_given_minimums_with_coverage(self):
        """minimums() lists what was given, in a fixed order, coverage last."""
        threshold = Threshold(unfaithful_recall=0.9, kappa=0.6)
        assert {"kappa": 0.6, "unfaithful_recall": 0.9, "coverage": 1.0} == threshold.minimums()


class TestRegistration:
    def test_writes_the_threshold_with_the_label_set_hash(self, tmp_path):
        """The registration file holds the label set's hash, the threshold and an aware time."""
        labels = label_set([F, U])
        path = tmp_path / "threshold.json"
        registration = register_threshold(labels, Threshold(kappa=0.6), path)
        assert registration == Registration.model_validate_json(path.read_bytes())
        assert (labels.sha256, 0.6) == (registration.label_set_sha256, registration.threshold.kappa)
        assert registration.registered_at.tzinfo is not None

    def test_an_existing_registration_is_not_overwritten(self, tmp_path):
        """Registering over an existing file is refused; the first threshold stays."""
        labels = label_set([F, U])
        path = tmp_path / "threshold.json"
        register_threshold(labels, Threshold(kappa=0.6), path)
        before = path.read_bytes()
        with pytest.raises(ValueError, match="already exists"):
            register_threshold(labels, Threshold(kappa=0.1), path)
        assert before == path.read_bytes()

    def test_a_threshold_after_a_measurement_is_refused(self, tmp_path):
        """Once a label set was measured next to a registration, registering for it again is refused."""
        labels = label_set([F, U])
        path = tmp_path / "threshold.json"
        register_threshold(labels, Threshold(kappa=0.6), path)
        run_calibration_sync(labels, judge_saying([F, F]), path)
        path.unlink()  # even with the first registration out of the way
        with pytest.raises(ValueError, match="already been measured"):
            register_threshold(labels, Threshold(kappa=0.1), tmp_path / "threshold.json")
        with pytest.raises(ValueError, match="already been measured"):
            register_threshold(labels, Threshold(kappa=0.1), tmp_path / "second.json")

    def test_another_label_set_may_still_register(self, tmp_path):
        """A measurement of one label set does not block registering another."""
        first, second = label_set([F, U]), label_set([U, F])
        register_threshold(first, Threshold(kappa=0.6), tmp_path / "first.json")
        run_calibration_sync(first, judge_saying([F, U]), tmp_path / "first.json")
        registration = register_threshold(second, Threshold(kappa=0.6), tmp_path / "second.json")
        assert second.sha256 == registration.label_set_sha256

    def test_an_unreadable_measurement_counts_as_one(self, tmp_path):
        """A measurement file that does not parse blocks registration rather than being skipped."""
        (tmp_path / "old.measurement-20260101T000000000000Z.json").write_text("{broken")
        with pytest.raises(ValueError, match="already been measured"):
            register_threshold(label_set([F]), Threshold(kappa=0.5), tmp_path / "t.json")

    def test_measuring_under_another_label_sets_registration_is_refused(self, tmp_path):
        """A registration made for one label set cannot be used to measure another."""
        path = tmp_path / "threshold.json"
        register_threshold(label_set([F, U]), Threshold(kappa=0.6), path)
        judge = judge_saying([F, U, F])
        with pytest.raises(ValueError, match="another label set"):
            run_calibration_sync(label_set([F, U, U]), judge, path)
        assert [] == judge._chat.prompts


class TestRunCalibration:
    def test_measures_example_a_and_reports_the_threshold_met(self, tmp_path):
        """Example A (kappa 7/12, unfaithful recall 3/4) meets kappa >= 0.5 and unfaithful recall >= 0.75."""
        labels = label_set(HUMAN_A)
        path = tmp_path / "threshold.json"
        register_threshold(labels, Threshold(kappa=0.5, unfaithful_recall=0.75), path)
        report = run_calibration_sync(labels, judge_saying(JUDGE_A), path)
        assert [
            ("kappa", 7 / 12, True),
            ("unfaithful_recall", 0.75, True),
            ("coverage", 1.0, True),
        ] == [(c.metric, c.observed, c.met) for c in report.checks]
        assert (True, 10, ()) == (report.threshold_met, report.items, report.unusable)

    def test_a_missed_threshold_is_reported_not_raised(self, tmp_path):
        """Example B misses unfaithful recall >= 0.8 (it is 2/5): the report says so, nothing raises."""
        labels = label_set(HUMAN_B)
        path = tmp_path / "threshold.json"
        register_threshold(labels, Threshold(agreement_rate=0.6, unfaithful_recall=0.8), path)
        report = run_calibration_sync(labels, judge_saying(JUDGE_B), path)
        assert [("agreement_rate", True), ("unfaithful_recall", False), ("coverage", True)] == [
            (c.metric, c.met) for c in report.checks
        ]
        assert not report.threshold_met

    def test_an_undefined_metric_does_not_meet_its_minimum(self, tmp_path):
        """A kappa of None (everything faithful on both sides) fails a kappa minimum."""
        labels = label_set([F, F])
        path = tmp_path / "threshold.json"
        register_threshold(labels, Threshold(kappa=0.0), path)
        report = run_calibration_sync(labels, judge_saying([F, F]), path)
        assert (None, False) == (report.checks[0].observed, report.checks[0].met)

    def test_unusable_verdicts_are_recorded_and_lower_coverage(self, tmp_path):
        """A reply that fails validation and a failed call are unusable, excluded, and cut coverage."""
        labels = label_set([F, U, F, U])
        path = tmp_path / "threshold.json"
        register_threshold(labels, Threshold(agreement_rate=0.5), path)
        chat = ScriptedChat(
            [SAYS_FAITHFUL, "not json", ChatError("down", provider="p", model="m"), SAYS_UNFAITHFUL]
        )
        report = run_calibration_sync(labels, FaithfulnessJudge(chat), path)
        assert [("item-2", "JudgeError"), ("item-3", "ChatError")] == [
            (u.id, u.error) for u in report.unusable
        ]
        assert (2, 1.0) == (report.agreement.items, report.agreement.agreement_rate)
        assert [("agreement_rate", 1.0, True), ("coverage", 0.5, False)] == [
            (c.metric, c.observed, c.met) for c in report.checks
        ]
        assert 4 == len(chat.prompts)

    def test_records_the_judge_identity_and_the_registration(self, tmp_path):
        """The report records provider, model and prompt hash, the label set hash and the registration."""
        labels = label_set([F, U])
        path = tmp_path / "threshold.json"
        registration = register_threshold(labels, Threshold(kappa=0.5), path)
        judge = judge_saying([F, U], provider="ollama", model_name="llama3.1")
        report = run_calibration_sync(labels, judge, path)
        assert (
            ModelIdentity(provider="ollama", model="llama3.1", prompt_sha256=judge.prompt_sha256),
            labels.sha256,
            registration,
            ("2026-01",),
        ) == (report.judge, report.label_set_sha256, report.registration, report.rubric_versions)

    def test_the_measurement_is_written_next_to_the_registration(self, tmp_path):
        """The report is written as <stem>.measurement-<time>.json beside the registration."""
        labels = label_set([F, U])
        path = tmp_path / "threshold.json"
        register_threshold(labels, Threshold(kappa=0.5), path)
        report = run_calibration_sync(labels, judge_saying([F, U]), path)
        written = sorted(tmp_path.glob("threshold.measurement-*.json"))
        assert 1 == len(written)
        assert report == CalibrationReport.model_validate_json(written[0].read_bytes())

    def test_two_measurements_are_both_kept(self, tmp_path):
        """Measuring twice writes two files; neither overwrites the other."""
        labels = label_set([F, U])
        path = tmp_path / "threshold.json"
        register_threshold(labels, Threshold(kappa=0.5), path)
        run_calibration_sync(labels, judge_saying([F, U]), path)
        run_calibration_sync(labels, judge_saying([U, U]), path)
        assert 2 == len(list(tmp_path.glob("threshold.measurement-*.json")))

    def test_a_report_claiming_a_met_threshold_it_missed_is_refused(self, tmp_path):
        """threshold_met must agree with the checks; a doctored report does not load."""
        labels = label_set(HUMAN_B)
        path = tmp_path / "threshold.json"
        register_threshold(labels, Threshold(unfaithful_recall=0.8), path)
        report = run_calibration_sync(labels, judge_saying(JUDGE_B), path)
        doctored = {**json.loads(report.model_dump_json()), "threshold_met": True}
        with pytest.raises(ValidationError, match="threshold_met must equal"):
            CalibrationReport.model_validate(doctored)


class TestApplicability:
    @pytest.fixture
    def report(self, tmp_path) -> CalibrationReport:
        labels = label_set([F, U])
        path = tmp_path / "threshold.json"
        register_threshold(labels, Threshold(kappa=0.5), path)
        return run_calibration_sync(
            labels, judge_saying([F, U], provider="ollama", model_name="llama3.1"), path
        )

    def test_the_same_judge_is_covered(self, report):
        """A judge with the calibrated provider, model and prompt is covered."""
        judge = FaithfulnessJudge(ScriptedChat([], provider="ollama", model_name="llama3.1"))
        applicability = report.applicability(judge)
        assert (True, ()) == (applicability.applicable, applicability.changed)

    def test_a_changed_prompt_makes_it_inapplicable(self, report):
        """Another prompt template is another instrument: the report says the prompt hash differs."""
        template = DEFAULT_JUDGE_PROMPT + "\nBe strict."
        judge = FaithfulnessJudge(
            ScriptedChat([], provider="ollama", model_name="llama3.1"), prompt_template=template
        )
        applicability = report.applicability(judge)
        assert (
            False,
            ("prompt_sha256",),
            "the calibration does not apply: the judge's prompt_sha256 differs",
        ) == (applicability.applicable, applicability.changed, applicability.explanation)

    def test_a_changed_model_or_provider_makes_it_inapplicable(self, report):
        """Another model, or another provider and model, is named in the changes."""
        other_model = FaithfulnessJudge(ScriptedChat([], provider="ollama", model_name="qwen"))
        elsewhere = ModelIdentity(
            provider="vllm", model="qwen", prompt_sha256=report.judge.prompt_sha256
        )
        assert ("model",) == report.applicability(other_model).changed
        assert ("provider", "model") == report.applicability(elsewhere).changed
        assert "provider, model differ" in report.applicability(elsewhere).explanation
