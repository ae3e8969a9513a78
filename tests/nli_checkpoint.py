"""Builds a tiny, real NLI checkpoint folder for the ``nli`` verifier's tests and bench.

The folder has the layout an ONNX export writes: ``model.onnx`` (a real ONNX graph that
onnxruntime runs), ``tokenizer.json`` (a real ``tokenizers`` WordLevel tokenizer with a
pair template ``[CLS] A [SEP] B [SEP]``, truncation and padding off) and ``config.json``
(``id2label``, ``max_position_embeddings``, ``_name_or_path``, ``model_type``).

The graph: token embedding + position embedding (+ token-type embedding when asked) ->
mean over the attention mask -> linear -> logits ``[batch, n_labels]``. Position
embeddings have exactly ``window`` rows, so a sequence longer than the window makes
onnxruntime's Gather fail, as a real model's would.

Weights are random from a fixed seed. Verdicts can be made *determined*: each word in
``triggers`` owns one hidden dimension, where its embedding is ``4 * window`` and every
other token's (and every position's) is 0; the head maps that dimension to the output
row of the label the trigger names. With no trigger in the input, the ``default`` label's
output wins by a margin of 1 (the random rest of the head is scaled so it moves a logit by
at most about 0.05). A trigger anywhere in a sequence of at most ``window`` tokens lifts its
label's logit by at least 4 - 1, so it wins. Triggers are matched in either text of the
pair; tests put them in the premise.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
from tokenizers.models import WordLevel

SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]")
_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"


def plain_words(count: int) -> list[str]:
    """``count`` distinct lowercase pseudo-words (``baba``, ``babe``, ...), deterministic."""
    syllables = [c + v for c in _CONSONANTS for v in _VOWELS]
    words = [a + b for a in syllables for b in syllables]
    if count > len(words):
        words += [a + b + c for a in syllables for b in syllables for c in syllables]
    return words[:count]


@dataclass(frozen=True)
class Checkpoint:
    """A built checkpoint: its folder, the plain (non-trigger) words and its window."""

    folder: Path
    words: tuple[str, ...]
    window: int
    labels: tuple[str, ...]


def build_tokenizer(words: Sequence[str]) -> Tokenizer:
    """A WordLevel tokenizer over ``SPECIALS + words``: lowercase, whitespace/punctuation split."""
    vocab = {token: index for index, token in enumerate([*SPECIALS, *words])}
    tokenizer = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))  # noqa: S106 - a token
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tokenizer.add_special_tokens(list(SPECIALS))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def write_config(
    folder: Path,
    labels: Sequence[str],
    *,
    window: int,
    name_or_path: str = "tiny-nli",
    extra: Mapping[str, object] | None = None,
) -> None:
    """Write ``config.json``: ``id2label`` in the order of ``labels`` (id i -> labels[i])."""
    config: dict[str, object] = {
        "_name_or_path": name_or_path,
        "model_type": "tiny-nli",
        "id2label": {str(i): label for i, label in enumerate(labels)},
        "label2id": {label: i for i, label in enumerate(labels)},
        "max_position_embeddings": window,
    }
    config.update(extra or {})
    (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")


def _weights(  # noqa: PLR0913 - keyword-only knobs
    *,
    vocab: Mapping[str, int],
    labels: Sequence[str],
    triggers: Mapping[str, str],
    default: str | None,
    window: int,
    hidden: int,
    seed: int,
) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    n_labels = len(labels)
    tokens = rng.uniform(-1.0, 1.0, (len(vocab), hidden)).astype(np.float32)
    positions = rng.uniform(-0.1, 0.1, (window, hidden)).astype(np.float32)
    types = rng.uniform(-0.1, 0.1, (2, hidden)).astype(np.float32)
    if not triggers:
        head = rng.normal(0.0, hidden**-0.5, (hidden, n_labels)).astype(np.float32)
        bias = np.zeros(n_labels, dtype=np.float32)
        return {
            "tokens": tokens,
            "positions": positions,
            "types": types,
            "head": head,
            "bias": bias,
        }
    if len(triggers) >= hidden:
        raise ValueError("more triggers than hidden dimensions")
    # Pooled features are means of values in [-1.2, 1.2]; this bound keeps the random part
    # of the head from moving any logit by more than 0.06.
    scale = 0.05 / hidden
    head = rng.uniform(-scale, scale, (hidden, n_labels)).astype(np.float32)
    bias = np.full(n_labels, -1.0, dtype=np.float32)
    bias[labels.index(default or labels[-1])] = 0.0
    for dim, (word, label) in enumerate(sorted(triggers.items())):
        tokens[:, dim] = 0.0
        positions[:, dim] = 0.0
        types[:, dim] = 0.0
        tokens[vocab[word], dim] = 4.0 * window
        head[dim, :] = 0.0
        head[dim, labels.index(label)] = 1.0
    return {"tokens": tokens, "positions": positions, "types": types, "head": head, "bias": bias}


def build_graph(weights: Mapping[str, np.ndarray], *, token_type_ids: bool) -> onnx.ModelProto:
    """The ONNX graph: embeddings -> masked mean pool -> linear -> logits."""
    n_labels = int(weights["head"].shape[1])
    init = [numpy_helper.from_array(np.asarray(v), name=k) for k, v in weights.items()]
    init += [
        numpy_helper.from_array(np.array(1, dtype=np.int64), name="one_scalar"),
        numpy_helper.from_array(np.array(0, dtype=np.int64), name="zero_scalar"),
        numpy_helper.from_array(np.array([1], dtype=np.int64), name="axis1"),
        numpy_helper.from_array(np.array([2], dtype=np.int64), name="axis2"),
        numpy_helper.from_array(np.array(1.0, dtype=np.float32), name="one_float"),
    ]
    nodes = [
        helper.make_node("Gather", ["tokens", "input_ids"], ["tok"]),
        helper.make_node("Shape", ["input_ids"], ["shape"]),
        helper.make_node("Gather", ["shape", "one_scalar"], ["seq_len"], axis=0),
        helper.make_node("Range", ["zero_scalar", "seq_len", "one_scalar"], ["pos_ids"]),
        helper.make_node("Gather", ["positions", "pos_ids"], ["pos"]),
        helper.make_node("Add", ["tok", "pos"], ["x0"]),
    ]
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]),
    ]
    embedded = "x0"
    if token_type_ids:
        inputs.append(
            helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["batch", "seq"])
        )
        nodes += [
            helper.make_node("Gather", ["types", "token_type_ids"], ["typ"]),
            helper.make_node("Add", ["x0", "typ"], ["x1"]),
        ]
        embedded = "x1"
    nodes += [
        helper.make_node("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mask", "axis2"], ["mask3"]),
        helper.make_node("Mul", [embedded, "mask3"], ["masked"]),
        helper.make_node("ReduceSum", ["masked", "axis1"], ["summed"], keepdims=0),
        helper.make_node("ReduceSum", ["mask", "axis1"], ["count0"], keepdims=1),
        helper.make_node("Max", ["count0", "one_float"], ["count"]),
        helper.make_node("Div", ["summed", "count"], ["pooled"]),
        helper.make_node("MatMul", ["pooled", "head"], ["scores"]),
        helper.make_node("Add", ["scores", "bias"], ["logits"]),
    ]
    if not token_type_ids:
        init = [t for t in init if t.name != "types"]
    output = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", n_labels])
    graph = helper.make_graph(nodes, "tiny_nli", inputs, [output], init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def build_checkpoint(  # noqa: PLR0913 - keyword-only knobs
    folder: Path,
    *,
    labels: Sequence[str] = ("entailment", "not_entailment"),
    triggers: Mapping[str, str] | None = None,
    default: str | None = None,
    window: int = 64,
    hidden: int = 16,
    vocab_size: int = 200,
    seed: int = 0,
    token_type_ids: bool = False,
    name_or_path: str = "tiny-nli",
) -> Checkpoint:
    """Write a checkpoint into ``folder`` (created) and describe it.

    Args:
        labels: ``id2label`` in id order; output row i of the graph is label i.
        triggers: word -> label name that word drives (determined verdicts); None or
            empty gives a fully random head.
        default: the label that wins when no trigger is present (default: the last).
        window: ``max_position_embeddings`` and the position table's row count.
        vocab_size: how many plain words the tokenizer knows besides specials and triggers.
    """
    triggers = dict(triggers or {})
    for label in [*triggers.values(), *([default] if default else [])]:
        if label not in labels:
            raise ValueError("a trigger or default names a label not in labels")
    folder.mkdir(parents=True, exist_ok=True)
    words = plain_words(vocab_size)
    tokenizer = build_tokenizer([*words, *sorted(triggers)])
    vocab = tokenizer.get_vocab()
    weights = _weights(
        vocab=vocab,
        labels=labels,
        triggers=triggers,
        default=default,
        window=window,
        hidden=hidden,
        seed=seed,
    )
    onnx.save(build_graph(weights, token_type_ids=token_type_ids), str(folder / "model.onnx"))
    tokenizer.save(str(folder / "tokenizer.json"))
    write_config(folder, labels, window=window, name_or_path=name_or_path)
    return Checkpoint(folder=folder, words=tuple(words), window=window, labels=tuple(labels))


def nudge_one_weight(folder: Path, initializer: str = "head", delta: float = 1e-3) -> None:
    """Add ``delta`` to the first value of one initializer of ``folder/model.onnx``, in place."""
    path = folder / "model.onnx"
    model = onnx.load(str(path))
    for index, tensor in enumerate(model.graph.initializer):
        if tensor.name == initializer:
            values = numpy_helper.to_array(tensor).copy()
            values.flat[0] += delta
            model.graph.initializer[index].CopyFrom(numpy_helper.from_array(values, initializer))
            onnx.save(model, str(path))
            return
    raise KeyError(initializer)
