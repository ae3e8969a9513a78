"""The verifier seam: one entailment question per premise, one attempt, an identity.

A `Premise` asks whether its passages, joined in order, entail its claim (one
sentence of an answer with its markers removed). A `Verifier` answers a batch of
premises with one `Verdict` each, in order, and never retries: a verdict it could not
reach is ``entailed=None`` with a structural ``problem`` code, never a guess. Its
`VerifierIdentity` names what answered (kind, name, version, and the SHA-256 of the
weights, the prompt or the rule), so two figures are compared only when their
identities are equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from citemark._contract.sync import run_sync
from citemark._contract.words import counted

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["Premise", "Verdict", "Verifier", "VerifierIdentity", "support_line", "verify_sync"]


@dataclass(frozen=True)
class VerifierIdentity:
    """What answered: a verifier's kind, name, version and content digest."""

    kind: str
    """``"lexical"``, ``"nli"`` or ``"judge"``."""

    name: str
    """The rule's, the model folder's or the chat model's name."""

    version: str
    """The rule's version, the model's recorded version, or the endpoint's model id."""

    digest: str
    """``sha256:<hex>`` of the rule text, the model files or the prompt template."""

    def label(self) -> str:
        """A short form for a report line: ``nli sha256:1a2b3c4d5e6f``."""
        return f"{self.kind} {self.digest[:19]}"

    def as_dict(self) -> dict[str, str]:
        """The identity as JSON-ready fields."""
        return {
            "kind": self.kind,
            "name": self.name,
            "version": self.version,
            "digest": self.digest,
        }


@dataclass(frozen=True)
class Premise:
    """One entailment question: do ``passages``, joined in order, entail ``claim``?"""

    claim: str
    """One sentence of the answer, citation markers removed."""

    passages: tuple[str, ...]
    """The texts of one or more given sources, in the order they were cited."""


@dataclass(frozen=True)
class Verdict:
    """A verifier's answer to one premise."""

    entailed: bool | None
    """Whether the passages entail the claim; None when no answer was reached."""

    problem: str | None = None
    """Why no answer was reached, as a code (``unparseable_reply``, ``call_failed``)."""


@runtime_checkable
class Verifier(Protocol):
    """Answers entailment questions in batches; one attempt per premise, no retry."""

    @property
    def identity(self) -> VerifierIdentity:
        """What answers."""
        ...

    async def verify(self, premises: Sequence[Premise]) -> list[Verdict]:
        """One verdict per premise, in the same order."""
        ...

    async def aclose(self) -> None:
        """Release what the verifier holds (a session, a client)."""
        ...


def verify_sync(verifier: Verifier, premises: Sequence[Premise]) -> list[Verdict]:
    """`Verifier.verify` for synchronous callers."""
    return run_sync(lambda: verifier.verify(premises))


def support_line(
    identity: VerifierIdentity, recall: float | None, precision: float | None, sentences: int
) -> str:
    """The one sentence every report gives a run's support figures, with what judged them."""
    shown = ["n/a" if value is None else f"{value:.2f}" for value in (recall, precision)]
    return (
        f"support, advisory, verifier {identity.label()}: citation recall {shown[0]}, "
        f"precision {shown[1]} over {counted(sentences, 'sentence')}"
    )
