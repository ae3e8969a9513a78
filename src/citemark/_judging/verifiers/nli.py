"""The ``nli`` verifier: a local NLI model, read from a folder, run on ONNX Runtime.

This module owns reading an exported NLI checkpoint and answering entailment
questions with it. The folder is the layout an ONNX export writes and nothing is ever
downloaded:

- ``model.onnx``: takes ``input_ids`` and, when the graph has them,
  ``attention_mask`` and ``token_type_ids`` (int64, ``[batch, tokens]``); its first
  output is the logits, ``[batch, labels]``. External weights beside it
  (``model.onnx_data``, ``model.onnx.data``, any ``model.onnx*``) are hashed too.
- ``tokenizer.json``: a ``tokenizers`` tokenizer whose pair template builds the
  model's input (``[CLS] premise [SEP] claim [SEP]`` or the model's own form). Its
  own truncation and padding settings are switched off: this module windows and pads.
- ``config.json``: ``id2label`` with two or three labels, exactly one of which is the
  entailment label (its letters, lowercased, start with ``entail``: ``ENTAILMENT``,
  ``entailment``; not ``not_entailment``). A claim is entailed when that label's
  logit is the largest. ``max_position_embeddings`` gives the window (less 2 for the
  RoBERTa family, whose position table reserves two rows) unless ``max_tokens`` is given.

The premise is the passages joined by a blank line, paired with the claim as
``(premise, claim)``. When the pair does not fit the window, the premise is cut into
token windows as long as the window leaves beside the claim and the special tokens,
each overlapping the one before by a quarter of its length, and every window is
paired with the whole claim. The claim is entailed when ANY window's answer is
entailment: the evidence for a claim can sit anywhere in a long source, and a window
that lacks it says "not entailed" about the window, not the source (the max over
chunks that ALCE's and TRUE's long-input evaluations take). A claim that leaves less
than half the window to the premise is not cut: its verdict is ``claim_too_long``.

Every pair and window of one `NliVerifier.verify` call goes through the session in
batches of ``batch_size``, each padded to its longest member. A batch the session
fails on gives its premises ``call_failed``; nothing is retried. The identity's digest
is SHA-256 over the files' names and SHA-256s, in name order, so one changed weight
changes it. Messages name files, counts and codes; never a label, a passage or a claim.

onnxruntime, tokenizers and numpy are the ``nli`` extra, imported by
`NliVerifier.from_folder`; without them it raises `MissingExtraError`.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from citemark._contract.errors import MissingExtraError, VerifierError
from citemark._judging.verifiers.base import Verdict, VerifierIdentity

if TYPE_CHECKING:
    import os
    from collections.abc import Sequence

    from tokenizers import Encoding, Tokenizer

    from citemark._judging.verifiers.base import Premise

__all__ = ["NliVerifier", "is_entailment_label"]

_EXTRA: Final = "nli"
_EXTRA_MODULES: Final = frozenset({"onnxruntime", "tokenizers", "numpy"})
_MODEL: Final = "model.onnx"
_TOKENIZER: Final = "tokenizer.json"
_CONFIG: Final = "config.json"
_JOINER: Final = "\n\n"
# Model types whose position table holds max_position_embeddings - 2 usable rows.
_OFFSET_POSITIONS: Final = frozenset({"roberta", "xlm-roberta", "camembert", "longformer"})
_FED: Final = ("input_ids", "attention_mask", "token_type_ids")
_MAX_VERSION_CHARS: Final = 200
_CHUNK: Final = 1 << 20


def is_entailment_label(label: str) -> bool:
    """Whether ``label`` names entailment: its letters, lowercased, start with ``entail``."""
    return re.sub(r"[^a-z]", "", label.lower()).startswith("entail")


class NliVerifier:
    """Answers entailment questions with a local NLI model on ONNX Runtime (CPU).

    Build it with `from_folder`. It holds one inference session; `verify` runs on a
    worker thread so an event loop keeps turning, and `verify_blocking` is the same
    work for a caller already off the loop (a Ray worker).
    """

    def __init__(  # noqa: PLR0913 - one field each; from_folder is the public way in
        self,
        *,
        session: Any,  # noqa: ANN401 - onnxruntime ships no types
        session_errors: tuple[type[BaseException], ...],
        tokenizer: Tokenizer,
        entail_index: int,
        n_labels: int,
        window: int,
        pad_id: int,
        batch_size: int,
        identity: VerifierIdentity,
    ) -> None:
        """Hold a loaded model; use `from_folder` instead of calling this."""
        self._session: Any = session
        self._session_errors = session_errors
        self._tokenizer = tokenizer
        self._entail_index = entail_index
        self._n_labels = n_labels
        self._window = window
        self._pad_id = pad_id
        self._batch_size = batch_size
        self._identity = identity
        self._inputs = [i.name for i in session.get_inputs()]
        self._output = session.get_outputs()[0].name
        self._specials = tokenizer.num_special_tokens_to_add(is_pair=True)

    @classmethod
    def from_folder(
        cls,
        path: str | os.PathLike[str],
        *,
        batch_size: int = 16,
        max_tokens: int | None = None,
        threads: int | None = None,
    ) -> NliVerifier:
        """Load ``model.onnx``, ``tokenizer.json`` and ``config.json`` from ``path``.

        Args:
            path: The checkpoint folder; its name is the identity's name.
            batch_size: Pairs (or premise windows) per session run.
            max_tokens: The window in tokens, special tokens included; at most the
                model's own (from ``config.json``), which is the default.
            threads: ONNX Runtime's intra-op threads; None leaves its default (one per
                physical core). One per process suits a Ray worker.

        Raises:
            MissingExtraError: onnxruntime, tokenizers or numpy is not installed.
            VerifierError: a file is missing or unreadable, the label map is not two-
                or three-way with one entailment label, or the graph's inputs or
                output do not fit.
        """
        if batch_size < 1 or (threads is not None and threads < 1):
            msg = "batch_size and threads must be at least 1"
            raise ValueError(msg)
        ort, tokenizers = _extra()
        folder = Path(path)
        for name in (_CONFIG, _MODEL, _TOKENIZER):
            if not (folder / name).is_file():
                msg = f"the NLI model folder has no {name}"
                raise VerifierError("missing_file", msg, name)
        config_bytes = (folder / _CONFIG).read_bytes()
        tokenizer_bytes = (folder / _TOKENIZER).read_bytes()
        config = _read_config(config_bytes)
        labels = _read_labels(config)
        entail = [i for i, label in enumerate(labels) if is_entailment_label(label)]
        if len(entail) != 1:
            msg = (
                f"config.json: id2label has {len(entail)} entailment labels among "
                f"{len(labels)}; the nli verifier needs exactly one"
            )
            raise VerifierError("bad_label_map", msg, _CONFIG)
        window = _window(config, max_tokens)
        try:
            tokenizer = tokenizers.Tokenizer.from_str(tokenizer_bytes.decode("utf-8"))
        except Exception:  # noqa: BLE001 - its message may quote the file
            msg = "tokenizer.json cannot be read by tokenizers"
            raise VerifierError("unreadable_tokenizer", msg, _TOKENIZER) from None
        tokenizer.no_truncation()
        tokenizer.no_padding()
        session_errors = _session_errors(ort)
        options = ort.SessionOptions()
        options.log_severity_level = 3
        if threads is not None:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        try:
            session = ort.InferenceSession(
                str(folder / _MODEL), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except session_errors:
            msg = "model.onnx cannot be loaded by onnxruntime"
            raise VerifierError("unreadable_model", msg, _MODEL) from None
        _check_graph(session, len(labels))
        files = sorted(
            [_CONFIG, _TOKENIZER, _MODEL]
            + [p.name for p in folder.glob("model.onnx?*") if p.is_file()]
        )
        digests = {_CONFIG: _sha256(config_bytes), _TOKENIZER: _sha256(tokenizer_bytes)}
        listing = "".join(
            f"{name}\0{digests.get(name) or _file_sha256(folder / name)}\n" for name in files
        )
        identity = VerifierIdentity(
            kind="nli",
            name=folder.resolve().name,
            version=_version(config),
            digest="sha256:" + _sha256(listing.encode("utf-8")),
        )
        return cls(
            session=session,
            session_errors=session_errors,
            tokenizer=tokenizer,
            entail_index=entail[0],
            n_labels=len(labels),
            window=window,
            pad_id=_pad_id(config, tokenizer),
            batch_size=batch_size,
            identity=identity,
        )

    @property
    def identity(self) -> VerifierIdentity:
        """``nli``, the folder's name, the config's model name, the files' digest."""
        return self._identity

    @property
    def window(self) -> int:
        """The most tokens one model input holds, special tokens included."""
        return self._window

    async def verify(self, premises: Sequence[Premise]) -> list[Verdict]:
        """One verdict per premise, in order, computed on a worker thread."""
        return await asyncio.to_thread(self.verify_blocking, premises)

    async def aclose(self) -> None:
        """Drop the inference session; a later `verify` raises `VerifierError`."""
        self._session = None

    def verify_blocking(self, premises: Sequence[Premise]) -> list[Verdict]:
        """`verify`'s work on the calling thread: tokenize, window, batch, read labels."""
        if self._session is None:
            msg = "the nli verifier was closed"
            raise VerifierError("closed", msg)
        verdicts: list[Verdict | None] = [None] * len(premises)
        units: list[tuple[int, Encoding]] = []
        texts = [_JOINER.join(p.passages) for p in premises]
        claims = [p.claim for p in premises]
        long: list[int] = []
        for index, pair in enumerate(
            self._tokenizer.encode_batch(list(zip(texts, claims, strict=True)))
        ):
            if len(pair) <= self._window:
                units.append((index, pair))
            else:
                long.append(index)
        for index, refused in self._windows(long, texts, claims, units).items():
            verdicts[index] = refused
        entailed: set[int] = set()
        failed: set[int] = set()
        for start in range(0, len(units), self._batch_size):
            batch = units[start : start + self._batch_size]
            answers = self._run([encoding for _, encoding in batch])
            owners = [index for index, _ in batch]
            if answers is None:
                failed.update(owners)
            else:
                entailed.update(i for i, yes in zip(owners, answers, strict=True) if yes)
        for index, verdict in enumerate(verdicts):
            if verdict is None:
                verdicts[index] = (
                    Verdict(entailed=True)
                    if index in entailed
                    else Verdict(entailed=None, problem="call_failed")
                    if index in failed
                    else Verdict(entailed=False)
                )
        return [verdict for verdict in verdicts if verdict is not None]

    def _windows(
        self,
        indices: list[int],
        texts: list[str],
        claims: list[str],
        units: list[tuple[int, Encoding]],
    ) -> dict[int, Verdict]:
        """Append the windows of each too-long premise to ``units``; verdicts for those refused."""
        refused: dict[int, Verdict] = {}
        singles = self._tokenizer.encode_batch(
            [texts[i] for i in indices] + [claims[i] for i in indices], add_special_tokens=False
        )
        for index, premise, claim in zip(
            indices, singles[: len(indices)], singles[len(indices) :], strict=True
        ):
            room = self._window - self._specials - len(claim.ids)
            if room < self._window // 2:
                refused[index] = Verdict(entailed=None, problem="claim_too_long")
                continue
            premise.truncate(room, stride=room // 4)
            first = self._tokenizer.post_process(premise, claim)
            units.extend((index, window) for window in [first, *first.overflowing])
        return refused

    def _run(self, batch: list[Encoding]) -> list[bool] | None:
        """Whether the model's answer for each input is entailment; None if the run failed."""
        import numpy as np  # noqa: PLC0415 - the nli extra, loaded by from_folder

        shape = (len(batch), max(len(e) for e in batch))
        ids = np.full(shape, self._pad_id, dtype=np.int64)
        # Unpadded encodings attend to every token they hold; the rest is padding.
        mask = np.zeros(shape, dtype=np.int64)
        types = np.zeros(shape, dtype=np.int64) if "token_type_ids" in self._inputs else None
        for row, encoding in enumerate(batch):
            ids[row, : len(encoding)] = encoding.ids
            mask[row, : len(encoding)] = 1
            if types is not None:
                types[row, : len(encoding)] = encoding.type_ids
        columns = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        feed = {name: columns[name] for name in self._inputs}
        try:
            (logits,) = self._session.run([self._output], feed)
        except self._session_errors:
            return None
        if logits.shape != (len(batch), self._n_labels):
            msg = (
                f"model.onnx gave logits of shape {tuple(logits.shape)} for {len(batch)} "
                f"inputs and {self._n_labels} labels"
            )
            raise VerifierError("bad_model_output", msg, _MODEL)
        return [bool(i == self._entail_index) for i in logits.argmax(axis=1)]


def _extra() -> tuple[Any, Any]:
    """The modules onnxruntime and tokenizers (numpy too); `MissingExtraError` without them.

    onnxruntime ships no types, so it is imported by name and used as `Any`.
    """
    try:
        import numpy as np  # noqa: F401, PLC0415 - the nli extra, on first use
        import tokenizers  # noqa: PLC0415

        onnxruntime = importlib.import_module("onnxruntime")
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in _EXTRA_MODULES:
            raise
        raise MissingExtraError("NliVerifier", _EXTRA, exc.name or "onnxruntime") from None
    return onnxruntime, tokenizers


def _session_errors(ort: Any) -> tuple[type[BaseException], ...]:  # noqa: ANN401
    """The exception types onnxruntime raises on a failed load or run."""
    state = ort.capi.onnxruntime_pybind11_state
    found = [getattr(state, name, None) for name in dir(state)]
    return tuple(t for t in found if isinstance(t, type) and issubclass(t, Exception))


def _read_config(data: bytes) -> dict[str, Any]:
    try:
        config = json.loads(data)
    except (UnicodeDecodeError, ValueError):
        msg = "config.json is not JSON"
        raise VerifierError("bad_config", msg, _CONFIG) from None
    if not isinstance(config, dict):
        msg = "config.json is not a JSON object"
        raise VerifierError("bad_config", msg, _CONFIG)
    return config


def _read_labels(config: dict[str, Any]) -> list[str]:
    """``id2label`` as a list indexed by id: ids 0..n-1, n of 2 or 3, names strings."""
    raw = config.get("id2label")
    if not isinstance(raw, dict):
        msg = "config.json has no id2label object"
        raise VerifierError("bad_label_map", msg, _CONFIG)
    labels: dict[int, str] = {}
    for key, value in raw.items():
        if not (isinstance(key, str) and key.isascii() and key.isdigit()) or not isinstance(
            value, str
        ):
            msg = f"config.json: id2label's {len(raw)} entries are not id -> name"
            raise VerifierError("bad_label_map", msg, _CONFIG)
        labels[int(key)] = value
    if sorted(labels) != list(range(len(raw))) or len(raw) not in (2, 3):
        msg = (
            f"config.json: id2label has {len(raw)} labels; the nli verifier reads a two- "
            "or three-way label map with ids from 0"
        )
        raise VerifierError("bad_label_map", msg, _CONFIG)
    return [labels[i] for i in range(len(raw))]


def _window(config: dict[str, Any], max_tokens: int | None) -> int:
    """The model's window in tokens: config's positions (RoBERTa family: less 2), or less."""
    positions = config.get("max_position_embeddings")
    model_type = config.get("model_type")
    own: int | None = None
    if isinstance(positions, int) and not isinstance(positions, bool) and positions > 0:
        own = positions - 2 if model_type in _OFFSET_POSITIONS else positions
    if max_tokens is None:
        if own is None:
            msg = "config.json gives no max_position_embeddings: pass max_tokens"
            raise VerifierError("no_window", msg, _CONFIG)
        return own
    if max_tokens < 8 or (own is not None and max_tokens > own):  # noqa: PLR2004
        msg = f"max_tokens must lie in 8..{own if own is not None else 'the model window'}"
        raise VerifierError("no_window", msg, _CONFIG)
    return max_tokens


def _check_graph(session: Any, n_labels: int) -> None:  # noqa: ANN401
    names = [i.name for i in session.get_inputs()]
    if "input_ids" not in names or any(name not in _FED for name in names):
        unknown = sum(name not in _FED for name in names)
        msg = (
            f"model.onnx has {len(names)} inputs ({unknown} other than input_ids, "
            "attention_mask, token_type_ids); it needs input_ids"
        )
        raise VerifierError("bad_model_inputs", msg, _MODEL)
    shape = session.get_outputs()[0].shape
    last = shape[-1] if shape else None
    if len(shape) != 2 or (isinstance(last, int) and last != n_labels):  # noqa: PLR2004
        msg = f"model.onnx's first output is not [batch, {n_labels}] as id2label implies"
        raise VerifierError("bad_model_output", msg, _MODEL)


def _pad_id(config: dict[str, Any], tokenizer: Tokenizer) -> int:
    """The id a shorter input is padded with (masked out; any valid id would do)."""
    pad = config.get("pad_token_id")
    if isinstance(pad, int) and not isinstance(pad, bool) and pad >= 0:
        return pad
    for token in ("[PAD]", "<pad>"):
        found = tokenizer.token_to_id(token)
        if found is not None:
            return found
    return 0


def _version(config: dict[str, Any]) -> str:
    for key in ("_name_or_path", "model_type"):
        value = config.get(key)
        if isinstance(value, str) and 0 < len(value) <= _MAX_VERSION_CHARS and value.isprintable():
            return value
    return "unknown"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
