"""The ExpertQA reader (issue 36, part 5) on the shipped excerpt of ExpertQA's real files.

The expected counts were tallied by hand from the eight records of
``tests/fixtures/expertqa/rand_train_excerpt.jsonl`` (see its README), claim by claim:
label, and whether the evidence list is empty, URLs only, or URLs with passages.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from citemark import LabelSetError
from citemark._judging.calibration.expertqa import (
    COMPLETE_VS_INCOMPLETE,
    COMPLETE_VS_MISSING,
    COMPLETE_VS_REST,
    SUPPORT_LABELS,
    UNLABELLED,
    ExpertQACounts,
    SupportMapping,
    iter_expertqa,
    read_expertqa,
)

FIXTURE = Path(__file__).parent / "fixtures" / "expertqa"
EXCERPT = FIXTURE / "rand_train_excerpt.jsonl"
CANARY = "CANARY-expertqa-71d2"

# Hand tally of the excerpt: claims per label, and per label how many cite passages
# (text), URLs only (url), or nothing (none).
BY_LABEL = {"Complete": 15, "Partial": 5, "Incomplete": 16, "Missing": 18, "N/A": 2}
EVIDENCE = {
    "Complete": {"text": 7, "url": 8},
    "Partial": {"text": 4, "url": 1},
    "Incomplete": {"text": 9, "url": 7},
    "Missing": {"none": 18},
    "N/A": {"text": 1, "url": 1},
}


def lines() -> list[bytes]:
    return EXCERPT.read_bytes().splitlines(keepends=True)


def written(tmp_path: Path, *rows: bytes) -> Path:
    path = tmp_path / "split.jsonl"
    path.write_bytes(b"".join(rows))
    return path


def expected_kept(mapping: SupportMapping) -> tuple[int, int]:
    """(entailed, not entailed) the hand tally gives: only claims with passages count."""
    yes = sum(EVIDENCE[label].get("text", 0) for label, v in mapping.items() if v is True)
    no = sum(EVIDENCE[label].get("text", 0) for label, v in mapping.items() if v is False)
    return yes, no


class TestExcerptCounts:
    def test_every_claim_is_counted_under_its_label(self) -> None:
        """The reader sees the excerpt's 8 questions and 56 claims, by label as tallied."""
        _, counts = read_expertqa(EXCERPT, mapping=COMPLETE_VS_REST)
        assert (counts.records, counts.answers, counts.claims) == (8, 8, 56)
        assert dict(counts.by_label) == BY_LABEL
        assert set(counts.by_label) == SUPPORT_LABELS  # the excerpt covers every label

    @pytest.mark.parametrize(
        "mapping", [COMPLETE_VS_MISSING, COMPLETE_VS_INCOMPLETE, COMPLETE_VS_REST]
    )
    def test_kept_and_left_out_add_up_to_every_claim(self, mapping: SupportMapping) -> None:
        """Each claim is either yielded or counted under one reason; none is lost."""
        claims, counts = read_expertqa(EXCERPT, mapping=mapping)
        assert len(claims) + sum(counts.excluded.values()) == counts.claims == 56
        assert (counts.entailed, counts.not_entailed) == expected_kept(mapping)
        assert sum(counts.kept.values()) == len(claims)


class TestMapping:
    def test_complete_vs_missing_keeps_no_missing_claim(self) -> None:
        """Every Missing claim has no evidence, so Complete-vs-Missing yields entailed only."""
        claims, counts = read_expertqa(EXCERPT, mapping=COMPLETE_VS_MISSING)
        assert [c.support for c in claims] == ["Complete"] * 7
        assert all(c.entailed for c in claims)
        assert dict(counts.excluded) == {
            ("no_evidence", "Missing"): 18,
            ("evidence_url_only", "Complete"): 8,
            ("label_excluded", "Partial"): 5,
            ("label_excluded", "Incomplete"): 16,
            ("label_excluded", "N/A"): 2,
        }

    def test_complete_vs_incomplete_labels_each_claim_by_its_support(self) -> None:
        """Complete claims are entailed, Incomplete ones are not; no other label is kept."""
        claims, counts = read_expertqa(EXCERPT, mapping=COMPLETE_VS_INCOMPLETE)
        assert {(c.support, c.entailed) for c in claims} == {
            ("Complete", True),
            ("Incomplete", False),
        }
        assert dict(counts.kept) == {"Complete": 7, "Incomplete": 9}
        assert counts.excluded[("label_excluded", "Partial")] == 5
        assert counts.excluded[("label_excluded", "N/A")] == 2
        assert counts.excluded[("label_excluded", "Missing")] == 18
        assert counts.excluded[("evidence_url_only", "Incomplete")] == 7

    def test_complete_vs_rest_marks_partial_and_na_not_entailed(self) -> None:
        """Under ExpertQA's own binary, Partial and N/A claims with passages are negatives."""
        claims, counts = read_expertqa(EXCERPT, mapping=COMPLETE_VS_REST)
        for claim in claims:
            assert claim.entailed is (claim.support == "Complete")
        assert dict(counts.kept) == {"Complete": 7, "Partial": 4, "Incomplete": 9, "N/A": 1}
        assert counts.excluded[("no_evidence", "Missing")] == 18

    def test_a_claims_passages_are_its_evidence_text_without_the_header(self) -> None:
        """Passages and URLs come from each '[n] <url>' header and the text after the blank line."""
        claims, _ = read_expertqa(EXCERPT, mapping=COMPLETE_VS_REST)
        first = claims[0]
        record = json.loads(lines()[first.line - 1])
        (answer,) = record["answers"].values()
        evidence = answer["claims"][int(first.id.rsplit("C", 1)[1]) - 1]["evidence"]
        assert first.passages == tuple(item.split("\n\n", 1)[1] for item in evidence)
        assert first.urls == tuple(item.split("\n\n", 1)[0].split(" ", 1)[1] for item in evidence)
        assert first.question == record["question"]
        assert all(p.strip() for c in claims for p in c.passages)

    def test_a_mapping_must_name_the_five_labels(self) -> None:
        """A mapping that forgets a label, or adds one, is refused before reading."""
        short = {k: v for k, v in COMPLETE_VS_REST.items() if k != "N/A"}
        with pytest.raises(ValueError, match="exactly the five"):
            next(iter_expertqa(EXCERPT, mapping=short))
        with pytest.raises(ValueError, match="exactly the five"):
            next(iter_expertqa(EXCERPT, mapping={**COMPLETE_VS_REST, "Mostly": True}))

    def test_a_null_support_is_counted_as_unlabelled(self, tmp_path: Path) -> None:
        """A claim whose support is null is left out under 'unlabelled', whatever the mapping."""
        record = json.loads(lines()[0])
        (answer,) = record["answers"].values()
        answer["claims"][0]["support"] = None
        path = written(tmp_path, json.dumps(record).encode() + b"\n")
        _, counts = read_expertqa(path, mapping=COMPLETE_VS_REST)
        assert counts.excluded[("unlabelled", UNLABELLED)] == 1
        assert counts.by_label[UNLABELLED] == 1


class TestStrictness:
    @pytest.mark.parametrize(
        ("bad", "problem"),
        [
            (b'{"question": "' + CANARY.encode() + b'", ', "not strict JSON (not JSON)"),
            (
                b'{"question": "' + CANARY.encode() + b'", "question": "x", "answers": {}}',
                ("not strict JSON (duplicate key)"),
            ),
            (b'{"question": "' + CANARY.encode() + b'\xff", "answers": {}}', "not UTF-8 text"),
            (b'["' + CANARY.encode() + b'"]', "not a JSON object"),
            (b"", "a blank line"),
            (
                b'{"question": 1, "answers": {"' + CANARY.encode() + b'": {}}}',
                ("'question' is missing or not a string"),
            ),
        ],
        ids=["truncated", "duplicate-key", "not-utf8", "not-object", "blank", "bad-question"],
    )
    def test_a_malformed_line_names_its_line_and_no_text(
        self, tmp_path: Path, bad: bytes, problem: str
    ) -> None:
        """The error says which line and what kind of fault, never a character of the line."""
        path = written(tmp_path, lines()[0], bad + b"\n", lines()[1])
        with pytest.raises(LabelSetError) as caught:
            read_expertqa(path, mapping=COMPLETE_VS_REST)
        assert str(caught.value) == f"ExpertQA file line 2: {problem}"
        assert CANARY not in str(caught.value)
        assert caught.value.__cause__ is None
        assert caught.value.__context__ is None

    def test_an_unknown_label_names_its_claim_and_not_the_label(self, tmp_path: Path) -> None:
        """A support value outside the five is a structural error at its line, answer and claim."""
        record = json.loads(lines()[2])
        (answer,) = record["answers"].values()
        answer["claims"][3]["support"] = CANARY
        path = written(tmp_path, lines()[0], json.dumps(record).encode() + b"\n")
        with pytest.raises(LabelSetError) as caught:
            read_expertqa(path, mapping=COMPLETE_VS_REST)
        assert str(caught.value) == (
            "ExpertQA file line 2, answer 1, claim 4: "
            "'support' is not null or one of the five ExpertQA labels"
        )

    def test_evidence_without_a_header_is_refused_under_any_mapping(self, tmp_path: Path) -> None:
        """Every claim's evidence is checked, kept or not: the file reads the same under each mapping."""
        record = json.loads(lines()[1])  # three Partial claims, left out by COMPLETE_VS_MISSING
        (answer,) = record["answers"].values()
        answer["claims"][1]["evidence"] = [CANARY + "\n\nsome passage"]
        path = written(tmp_path, json.dumps(record).encode() + b"\n")
        with pytest.raises(LabelSetError) as caught:
            read_expertqa(path, mapping=COMPLETE_VS_MISSING)
        assert str(caught.value) == (
            "ExpertQA file line 1, answer 1, claim 2: evidence item 1 does not open with '[n] <url>'"
        )

    def test_claims_stream_before_a_later_bad_line_is_read(self, tmp_path: Path) -> None:
        """The reader yields each line's claims as it goes; a bad last line fails only when reached."""
        path = written(tmp_path, *lines(), b"not json\n")
        counts = ExpertQACounts()
        seen = []
        with pytest.raises(LabelSetError, match="line 9: "):
            for claim in iter_expertqa(path, mapping=COMPLETE_VS_REST, counts=counts):
                seen.append(claim.id)
        assert len(seen) == 21
        assert counts.records == 8
