"""The ``nli`` verifier on real onnxruntime, over a tiny real checkpoint the test builds.

`nli_checkpoint.build_checkpoint` writes a real ONNX graph, a real ``tokenizers``
tokenizer and a ``config.json``; with triggers, its verdicts are determined (a trigger
word in the premise makes its label win), so these tests assert verdicts, not shapes.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from nli_checkpoint import Checkpoint, build_checkpoint, nudge_one_weight, write_config
from tokenizers import Tokenizer

from citemark import CitemarkError, MissingExtraError
from citemark._contract.errors import VerifierError
from citemark._judging.verifiers.base import Premise, Verdict, Verifier, verify_sync
from citemark._judging.verifiers.nli import NliVerifier

TWO_WAY = ("entailment", "not_entailment")
HIDDEN = "zqxhiddenlabel"


def two_way(tmp_path: Path, *, window: int = 64, name_or_path: str = "tiny-nli") -> Checkpoint:
    """A two-way checkpoint: "zebra" in the input makes entailment win."""
    return build_checkpoint(
        tmp_path / "tiny-nli",
        labels=TWO_WAY,
        triggers={"zebra": "entailment"},
        window=window,
        name_or_path=name_or_path,
    )


def filler(ck: Checkpoint, count: int, start: int = 0) -> str:
    return " ".join(ck.words[(start + i) % len(ck.words)] for i in range(count))


def verdicts(verifier: NliVerifier, premises: list[Premise]) -> list[bool | None]:
    return [v.entailed for v in verify_sync(verifier, premises)]


def test_determined_verdicts_across_batches(tmp_path: Path) -> None:
    ck = two_way(tmp_path)
    verifier = NliVerifier.from_folder(ck.folder, batch_size=2)
    assert isinstance(verifier, Verifier)
    premises = [
        Premise(claim=filler(ck, 3, 50), passages=(filler(ck, 8) + " zebra",)),
        Premise(claim=filler(ck, 3, 50), passages=(filler(ck, 8),)),
        Premise(claim="baba", passages=(filler(ck, 5), "Zebra, " + filler(ck, 5, 9))),
        Premise(claim="baba", passages=(filler(ck, 5), filler(ck, 5, 9))),
        Premise(claim="words it never saw", passages=("zebra",)),
    ]
    assert verdicts(verifier, premises) == [True, False, True, False, True]
    assert verdicts(verifier, []) == []


def test_three_way_labels_in_any_order_with_token_types(tmp_path: Path) -> None:
    ck = build_checkpoint(
        tmp_path / "three",
        labels=("contradiction", "ENTAILMENT", "neutral"),
        triggers={"zebra": "ENTAILMENT", "walrus": "contradiction"},
        default="neutral",
        token_type_ids=True,
    )
    verifier = NliVerifier.from_folder(ck.folder)
    premises = [
        Premise(claim="baba", passages=(filler(ck, 6) + " zebra",)),
        Premise(claim="baba", passages=(filler(ck, 6) + " walrus",)),
        Premise(claim="baba", passages=(filler(ck, 6),)),
    ]
    assert verdicts(verifier, premises) == [True, False, False]
    # The graph takes token_type_ids: the verifier fed them (a missing input fails the run).
    names = {i.name for i in ort.InferenceSession(str(ck.folder / "model.onnx")).get_inputs()}
    assert "token_type_ids" in names
    # Each verdict is the model's own argmax: the contradiction trigger wins its row.
    tokenizer = Tokenizer.from_file(str(ck.folder / "tokenizer.json"))
    enc = tokenizer.encode(premises[1].passages[0], "baba")
    logits = ort.InferenceSession(str(ck.folder / "model.onnx")).run(
        None,
        {
            "input_ids": np.array([enc.ids], dtype=np.int64),
            "attention_mask": np.array([enc.attention_mask], dtype=np.int64),
            "token_type_ids": np.array([enc.type_ids], dtype=np.int64),
        },
    )[0]
    assert int(logits.argmax()) == 0


def test_swapping_two_labels_flips_the_verdicts(tmp_path: Path) -> None:
    """The label map is honoured: the same graph read through a swapped id2label.

    A verifier that took output 0 as entailment passes the first half and fails the
    second (checked by editing ``entail_index=entail[0]`` to ``0`` in from_folder).
    """
    ck = two_way(tmp_path)
    premises = [
        Premise(claim="baba", passages=(filler(ck, 10) + " zebra",)),
        Premise(claim="baba", passages=(filler(ck, 10),)),
    ]
    assert verdicts(NliVerifier.from_folder(ck.folder), premises) == [True, False]
    write_config(ck.folder, tuple(reversed(TWO_WAY)), window=ck.window)
    assert verdicts(NliVerifier.from_folder(ck.folder), premises) == [False, True]


def test_swapping_two_labels_of_three_flips_the_verdicts(tmp_path: Path) -> None:
    labels = ("entailment", "neutral", "contradiction")
    ck = build_checkpoint(
        tmp_path / "three", labels=labels, triggers={"zebra": "entailment"}, default="neutral"
    )
    premises = [
        Premise(claim="baba", passages=("zebra " + filler(ck, 10),)),
        Premise(claim="baba", passages=(filler(ck, 10),)),
    ]
    assert verdicts(NliVerifier.from_folder(ck.folder), premises) == [True, False]
    write_config(ck.folder, ("neutral", "entailment", "contradiction"), window=ck.window)
    assert verdicts(NliVerifier.from_folder(ck.folder), premises) == [False, True]


def test_a_premise_longer_than_the_window_is_windowed(tmp_path: Path) -> None:
    ck = two_way(tmp_path, window=64)
    verifier = NliVerifier.from_folder(ck.folder, batch_size=3)
    assert verifier.window == 64
    tokenizer = Tokenizer.from_file(str(ck.folder / "tokenizer.json"))
    long_text = filler(ck, 400)
    # Unwindowed, the graph cannot take this pair: its position table has 64 rows.
    enc = tokenizer.encode(long_text + " zebra", "baba")
    assert len(enc.ids) > 6 * 64
    with pytest.raises(ort.capi.onnxruntime_pybind11_state.Fail):
        ort.InferenceSession(str(ck.folder / "model.onnx")).run(
            None,
            {
                "input_ids": np.array([enc.ids], dtype=np.int64),
                "attention_mask": np.array([enc.attention_mask], dtype=np.int64),
            },
        )
    premises = [
        Premise(claim="baba", passages=(long_text + " zebra",)),  # only in the last window
        Premise(claim="baba", passages=("zebra " + long_text,)),  # only in the first
        Premise(claim="baba", passages=(long_text, "zebra", long_text)),  # in the middle
        Premise(claim="baba", passages=(long_text,)),
        Premise(claim="baba", passages=(filler(ck, 5),)),  # fits, between long ones
        Premise(claim="baba", passages=(long_text, long_text)),
    ]
    assert verdicts(verifier, premises) == [True, True, True, False, False, False]
    # A window is as long as the window allows beside the claim: a trigger at any token
    # position of a 150-token premise is found.
    for at in range(0, 150, 7):
        words = filler(ck, 150).split()
        words[at] = "zebra"
        assert verdicts(verifier, [Premise(claim="baba", passages=(" ".join(words),))]) == [True]


def test_a_claim_that_leaves_too_little_room_is_not_cut(tmp_path: Path) -> None:
    ck = two_way(tmp_path, window=64)
    verifier = NliVerifier.from_folder(ck.folder)
    long_claim = filler(ck, 40)
    got = verify_sync(
        verifier,
        [
            Premise(claim=long_claim, passages=(filler(ck, 100) + " zebra",)),
            Premise(claim=long_claim, passages=("zebra",)),  # fits whole: answered
        ],
    )
    assert got == [Verdict(entailed=None, problem="claim_too_long"), Verdict(entailed=True)]


def test_max_tokens_narrows_the_window(tmp_path: Path) -> None:
    ck = two_way(tmp_path, window=64)
    verifier = NliVerifier.from_folder(ck.folder, max_tokens=16)
    assert verifier.window == 16
    text = filler(ck, 40) + " zebra"
    assert verdicts(verifier, [Premise(claim="baba", passages=(text,))]) == [True]
    with pytest.raises(VerifierError) as caught:
        NliVerifier.from_folder(ck.folder, max_tokens=65)
    assert caught.value.reason == "no_window"


def test_a_failed_run_fails_only_its_batch(tmp_path: Path) -> None:
    """config.json claims a wider window than the graph has: over-wide batches fail."""
    ck = two_way(tmp_path, window=32)
    write_config(ck.folder, TWO_WAY, window=128)
    verifier = NliVerifier.from_folder(ck.folder, batch_size=1)
    got = verify_sync(
        verifier,
        [
            Premise(claim="baba", passages=("zebra",)),
            Premise(claim="baba", passages=(filler(ck, 60) + " zebra",)),
            Premise(claim="baba", passages=(filler(ck, 5),)),
        ],
    )
    assert got == [
        Verdict(entailed=True),
        Verdict(entailed=None, problem="call_failed"),
        Verdict(entailed=False),
    ]


def test_random_weights_give_the_bare_models_argmax(tmp_path: Path) -> None:
    """No triggers: every verdict is still the model's own answer, batched and padded."""
    ck = build_checkpoint(tmp_path / "random", labels=TWO_WAY, window=64, seed=3)
    rng = np.random.default_rng(7)
    premises = [
        Premise(
            claim=filler(ck, int(rng.integers(2, 8)), int(rng.integers(0, 200))),
            passages=(filler(ck, int(rng.integers(1, 40)), int(rng.integers(0, 200))),),
        )
        for _ in range(40)
    ]
    session = ort.InferenceSession(str(ck.folder / "model.onnx"))
    tokenizer = Tokenizer.from_file(str(ck.folder / "tokenizer.json"))
    expected = []
    for p in premises:
        enc = tokenizer.encode(p.passages[0], p.claim)
        feed = {
            "input_ids": np.array([enc.ids], dtype=np.int64),
            "attention_mask": np.array([enc.attention_mask], dtype=np.int64),
        }
        expected.append(int(session.run(None, feed)[0].argmax()) == 0)
    assert 5 < sum(expected) < 35  # both answers occur
    for batch_size in (1, 7, 16):
        assert verdicts(NliVerifier.from_folder(ck.folder, batch_size=batch_size), premises) == (
            expected
        )


def test_identity_names_the_folder_and_digests_the_files(tmp_path: Path) -> None:
    ck = two_way(tmp_path, name_or_path="org/tiny-nli-v2")
    identity = NliVerifier.from_folder(ck.folder).identity
    assert (identity.kind, identity.name, identity.version) == (
        "nli",
        "tiny-nli",
        "org/tiny-nli-v2",
    )
    assert identity.digest.startswith("sha256:")
    assert len(identity.digest) == len("sha256:") + 64
    again = build_checkpoint(
        tmp_path / "b" / "tiny-nli",
        labels=TWO_WAY,
        triggers={"zebra": "entailment"},
        name_or_path="org/tiny-nli-v2",
    )
    assert NliVerifier.from_folder(again.folder).identity == identity
    nudge_one_weight(again.folder, "head")
    nudged = NliVerifier.from_folder(again.folder).identity
    assert nudged.digest != identity.digest
    assert (nudged.kind, nudged.name, nudged.version) == ("nli", "tiny-nli", "org/tiny-nli-v2")
    # External weights beside the graph are part of the digest.
    (again.folder / "model.onnx_data").write_bytes(b"\0" * 16)
    assert NliVerifier.from_folder(again.folder).identity.digest != nudged.digest
    # So is the label map.
    write_config(ck.folder, tuple(reversed(TWO_WAY)), window=ck.window, name_or_path="x")
    assert NliVerifier.from_folder(ck.folder).identity.digest != identity.digest


def test_version_falls_back_to_model_type_then_unknown(tmp_path: Path) -> None:
    ck = two_way(tmp_path)
    write_config(ck.folder, TWO_WAY, window=ck.window, name_or_path="")
    assert NliVerifier.from_folder(ck.folder).identity.version == "tiny-nli"
    write_config(ck.folder, TWO_WAY, window=ck.window, name_or_path="", extra={"model_type": 3})
    assert NliVerifier.from_folder(ck.folder).identity.version == "unknown"


@pytest.mark.parametrize("name", ["model.onnx", "tokenizer.json", "config.json"])
def test_a_missing_file_is_named(tmp_path: Path, name: str) -> None:
    ck = two_way(tmp_path)
    (ck.folder / name).unlink()
    with pytest.raises(VerifierError) as caught:
        NliVerifier.from_folder(ck.folder)
    assert (caught.value.reason, caught.value.file) == ("missing_file", name)
    assert name in str(caught.value)
    assert isinstance(caught.value, CitemarkError)


@pytest.mark.parametrize(
    ("id2label", "says"),
    [
        ({"0": "entailment", "1": HIDDEN, "2": "neutral", "3": "contradiction"}, "has 4 labels"),
        ({"0": "entailment"}, "has 1 labels"),
        ({"0": "entailment", "2": HIDDEN}, "has 2 labels"),
        ({"0": "LABEL_0", "1": HIDDEN}, "0 entailment labels among 2"),
        ({"0": "Entailment", "1": "entailment", "2": HIDDEN}, "2 entailment labels among 3"),
        ({"0": "entailment", "one": HIDDEN}, "2 entries are not id -> name"),
        ({"0": "entailment", "1": ["x"]}, "2 entries are not id -> name"),
        ("entailment " + HIDDEN, "no id2label object"),
    ],
)
def test_a_bad_label_map_is_refused_without_its_text(
    tmp_path: Path, id2label: object, says: str
) -> None:
    ck = two_way(tmp_path)
    write_config(ck.folder, TWO_WAY, window=ck.window, extra={"id2label": id2label})
    with pytest.raises(VerifierError) as caught:
        NliVerifier.from_folder(ck.folder)
    assert (caught.value.reason, caught.value.file) == ("bad_label_map", "config.json")
    assert says in str(caught.value)
    assert HIDDEN not in str(caught.value)
    assert "entailment" not in str(caught.value).replace("entailment label", "")


def test_the_graph_must_give_one_score_per_label(tmp_path: Path) -> None:
    ck = two_way(tmp_path)
    write_config(ck.folder, ("entailment", "neutral", "contradiction"), window=ck.window)
    with pytest.raises(VerifierError) as caught:
        NliVerifier.from_folder(ck.folder)
    assert caught.value.reason == "bad_model_output"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("model.onnx", "unreadable_model"),
        ("tokenizer.json", "unreadable_tokenizer"),
        ("config.json", "bad_config"),
    ],
)
def test_an_unreadable_file_is_refused_without_its_text(
    tmp_path: Path, name: str, reason: str
) -> None:
    ck = two_way(tmp_path)
    (ck.folder / name).write_text('{"model": "' + HIDDEN + '", [', encoding="utf-8")
    with pytest.raises(VerifierError) as caught:
        NliVerifier.from_folder(ck.folder)
    assert (caught.value.reason, caught.value.file) == (reason, name)
    assert HIDDEN not in str(caught.value)
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__


def test_no_window_without_positions_or_max_tokens(tmp_path: Path) -> None:
    ck = two_way(tmp_path)
    write_config(ck.folder, TWO_WAY, window=ck.window, extra={"max_position_embeddings": None})
    with pytest.raises(VerifierError) as caught:
        NliVerifier.from_folder(ck.folder)
    assert caught.value.reason == "no_window"
    assert NliVerifier.from_folder(ck.folder, max_tokens=32).window == 32


def test_the_extra_missing_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ck = two_way(tmp_path)
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(MissingExtraError) as caught:
        NliVerifier.from_folder(ck.folder)
    assert caught.value.extra == "nli"
    assert "citemark[nli]" in str(caught.value)


def test_verify_is_async_and_a_closed_verifier_refuses(tmp_path: Path) -> None:
    ck = two_way(tmp_path)
    verifier = NliVerifier.from_folder(ck.folder, threads=1)

    async def run() -> list[Verdict]:
        got = await verifier.verify([Premise(claim="baba", passages=("zebra",))])
        await verifier.aclose()
        return got

    assert asyncio.run(run()) == [Verdict(entailed=True)]
    with pytest.raises(VerifierError) as caught:
        verify_sync(verifier, [Premise(claim="baba", passages=("zebra",))])
    assert caught.value.reason == "closed"
