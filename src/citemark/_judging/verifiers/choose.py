"""Naming a verifier on the command line: ``lexical``, ``nli:PATH`` or ``judge``.

`parse_verifier_spec` checks the spelling only, so a command refuses a bad
``--verifier`` before it reads anything; `build_verifier` then makes the verifier,
loading an NLI model from the user's folder (never from the network) or wrapping
the chat model the command built for ``judge``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Final, NamedTuple

from citemark._contract.errors import VerifierError

if TYPE_CHECKING:
    from citemark._judging.verifiers.base import Verifier
    from citemark._model.completion import ChatModel

__all__ = ["VERIFIER_KINDS", "VerifierSpec", "build_verifier", "parse_verifier_spec"]

VERIFIER_KINDS: Final = ("lexical", "nli:PATH", "judge")
"""The spellings ``--verifier`` takes."""


class VerifierSpec(NamedTuple):
    """A parsed ``--verifier``: its kind and, for ``nli``, the model folder."""

    kind: str
    path: Path | None = None


def parse_verifier_spec(spec: str) -> VerifierSpec:
    """Read ``lexical``, ``judge`` or ``nli:PATH``.

    Raises:
        VerifierError: any other spelling (``bad_spec``; the message quotes none of it).
    """
    if spec in {"lexical", "judge"}:
        return VerifierSpec(spec)
    kind, sep, path = spec.partition(":")
    if kind == "nli" and sep and path:
        return VerifierSpec("nli", Path(path))
    msg = "--verifier takes lexical, judge or nli:PATH (a folder holding model.onnx)"
    raise VerifierError("bad_spec", msg)


def build_verifier(spec: VerifierSpec, *, chat: ChatModel | None = None) -> Verifier:
    """The verifier ``spec`` names; ``chat`` is the judge's model for ``judge``.

    Raises:
        VerifierError: ``judge`` without a chat model (``no_chat``), or the NLI folder
            cannot be read or its model does not fit.
        MissingExtraError: ``nli`` without the ``nli`` extra installed.
    """
    if spec.kind == "lexical":
        from citemark._judging.verifiers.lexical import LexicalVerifier  # noqa: PLC0415

        return LexicalVerifier()
    if spec.kind == "nli":
        from citemark._judging.verifiers.nli import NliVerifier  # noqa: PLC0415

        assert spec.path is not None  # noqa: S101 - parse_verifier_spec sets it
        return NliVerifier.from_folder(spec.path)
    if chat is None:
        msg = "--verifier judge needs the judge's model (--judge-model or CITEMARK_MODEL)"
        raise VerifierError("no_chat", msg)
    from citemark._judging.verifiers.judge import JudgeVerifier  # noqa: PLC0415

    return JudgeVerifier(chat)
