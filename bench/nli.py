"""Benchmark of the ``nli`` verifier against a bare onnxruntime loop (issue 36).

Both run in this process over the same pairs, the same checkpoint, the same batch size
and the same ``tokenizers`` tokenizer, tokenization included in both:

- ``NliVerifier.verify`` (through ``verify_sync``): one call with every premise.
- The floor: ``tokenizer.encode_batch`` on ``(premise, claim)`` pairs with the
  tokenizer's own padding to the longest in the batch, ``InferenceSession.run``,
  ``argmax``. No windowing: every pair fits the window, so the floor is the least a
  correct caller must do.
- ``floor_once``, a leaner floor: one ``encode_batch`` over all pairs, no tokenizer
  padding, each batch padded into numpy arrays (what the verifier does when nothing
  needs a window, less the window check and the label map).

The checkpoint is built by ``tests/nli_checkpoint.py`` (random weights, a real ONNX graph
and WordLevel tokenizer): window 256 tokens, about 2,000 words, hidden size 64. The graph
is tiny, so the figure weighs the verifier's overhead (tokenizing, padding, reading the
label map) far more than a real NLI model would, where the session dominates.
Target: verifier pairs/s >= 0.9x the floor's. Runs are interleaved; best and median
reported, by the wall clock and by the process's CPU time (steadier on a shared machine;
with ``RAYON_NUM_THREADS=1`` and ``--threads 1`` both sides use one core). The verdicts of both are checked equal.

With ``--premise-words`` large enough that pairs exceed the window, only the verifier is
timed (the floors cannot window): pairs/s with every window scored.

Run: ``.venv/bin/python bench/nli.py`` (``--pairs N``, ``--batch-size B``,
``--threads T``, ``--repeat R``, ``--premise-words W``).
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from nli_checkpoint import Checkpoint, build_checkpoint

from citemark._judging.verifiers.base import Premise, verify_sync
from citemark._judging.verifiers.nli import NliVerifier


def make_premises(ck: Checkpoint, count: int, premise_words: int, seed: int) -> list[Premise]:
    """Premises of about ``premise_words`` words in 1-3 passages, claims of 8-24 words."""
    rng = np.random.default_rng(seed)
    words = np.array(ck.words)
    premises = []
    for _ in range(count):
        total = int(rng.integers(premise_words // 2, premise_words + 1))
        cuts = sorted(int(c) for c in rng.integers(1, total, int(rng.integers(0, 3))))
        bounds = [0, *cuts, total]
        text = rng.choice(words, total)
        passages = tuple(" ".join(text[a:b]) + "." for a, b in itertools.pairwise(bounds) if b > a)
        claim = " ".join(rng.choice(words, int(rng.integers(8, 25)))) + "."
        premises.append(Premise(claim=claim, passages=passages))
    return premises


class BareLoop:
    """The floor: encode pairs, pad to the batch's longest, run, argmax (entailment = 0)."""

    def __init__(self, folder: Path, batch_size: int, threads: int) -> None:
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 - a token
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(
            str(folder / "model.onnx"), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self.batch_size = batch_size

    def run(self, premises: list[Premise]) -> list[bool]:
        pairs = [("\n\n".join(p.passages), p.claim) for p in premises]
        out: list[bool] = []
        for start in range(0, len(pairs), self.batch_size):
            encs = self.tokenizer.encode_batch(pairs[start : start + self.batch_size])
            feed = {
                "input_ids": np.array([e.ids for e in encs], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encs], dtype=np.int64),
            }
            (logits,) = self.session.run(None, feed)
            out.extend(bool(i == 0) for i in logits.argmax(axis=1))
        return out

    def run_tokenized_once(self, premises: list[Premise]) -> list[bool]:
        """The leaner floor: one encode_batch for all pairs, padded with numpy per batch."""
        self.tokenizer.no_padding()
        try:
            encs = self.tokenizer.encode_batch(
                [("\n\n".join(p.passages), p.claim) for p in premises]
            )
        finally:
            self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 - a token
        out: list[bool] = []
        for start in range(0, len(encs), self.batch_size):
            batch = encs[start : start + self.batch_size]
            shape = (len(batch), max(len(e) for e in batch))
            ids = np.zeros(shape, dtype=np.int64)
            mask = np.zeros(shape, dtype=np.int64)
            for row, e in enumerate(batch):
                ids[row, : len(e)] = e.ids
                mask[row, : len(e)] = 1
            (logits,) = self.session.run(None, {"input_ids": ids, "attention_mask": mask})
            out.extend(bool(i == 0) for i in logits.argmax(axis=1))
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=4000)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--premise-words", type=int, default=200)
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="citemark-nli-bench-")) / "tiny-nli-bench"
    ck = build_checkpoint(
        folder,
        labels=("entailment", "not_entailment"),
        window=256,
        hidden=64,
        vocab_size=2000,
        seed=0,
    )
    premises = make_premises(ck, args.pairs, args.premise_words, seed=1)
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    lengths = [
        len(e.ids)
        for e in tokenizer.encode_batch([("\n\n".join(p.passages), p.claim) for p in premises])
    ]
    if max(lengths) > ck.window:
        # The floors cannot window: time the verifier alone (pairs/s with their windows).
        verifier = NliVerifier.from_folder(folder, batch_size=args.batch_size, threads=args.threads)
        spent = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            verify_sync(verifier, premises)
            spent.append(time.perf_counter() - start)
        over = sum(n > ck.window for n in lengths)
        print(
            f"{args.pairs} pairs, {over} longer than the window {ck.window} (tokens per pair "
            f"up to {max(lengths)}): verifier only, best {args.pairs / min(spent):.0f} pairs/s, "
            f"median {args.pairs / statistics.median(spent):.0f} pairs/s"
        )
        return

    # Both load once, outside the timing: pairs/s is the steady state.
    verifier = NliVerifier.from_folder(folder, batch_size=args.batch_size, threads=args.threads)
    floor = BareLoop(folder, args.batch_size, args.threads)

    def run_verifier() -> list[bool]:
        return [bool(v.entailed) for v in verify_sync(verifier, premises)]

    def run_floor() -> list[bool]:
        return floor.run(premises)

    def run_floor_once() -> list[bool]:
        return floor.run_tokenized_once(premises)

    if not run_verifier() == run_floor() == run_floor_once():
        raise SystemExit("the verifier and the floor disagree")
    runs = (("verifier", run_verifier), ("floor", run_floor), ("floor_once", run_floor_once))
    wall: dict[str, list[float]] = {name: [] for name, _ in runs}
    cpu: dict[str, list[float]] = {name: [] for name, _ in runs}
    for _ in range(args.repeat):
        for name, fn in runs:
            start, start_cpu = time.perf_counter(), time.process_time()
            fn()
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    print(
        f"{args.pairs} pairs, tokens per pair {min(lengths)}..{max(lengths)} "
        f"(mean {statistics.mean(lengths):.0f}), window {ck.window}, batch {args.batch_size}, "
        f"intra-op threads {args.threads}, onnxruntime {ort.__version__}"
    )
    for clock, times in (("wall", wall), ("cpu", cpu)):
        rates = {}
        for name, values in times.items():
            best, median = args.pairs / min(values), args.pairs / statistics.median(values)
            rates[name] = (best, median)
            print(f"{clock:>4} {name:>10}: best {best:8.0f} pairs/s, median {median:8.0f} pairs/s")
        for floor_name in ("floor", "floor_once"):
            print(
                f"{clock:>4} verifier / {floor_name}: "
                f"best {rates['verifier'][0] / rates[floor_name][0]:.3f}x, "
                f"median {rates['verifier'][1] / rates[floor_name][1]:.3f}x (target >= 0.9x)"
            )


if __name__ == "__main__":
    main()
