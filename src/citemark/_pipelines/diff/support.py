"""A row's advisory support verdicts, as a comparison of two runs reads and compares them.

``citemark check --verifier`` records, per row, which verifier judged it and each
sentence's recall and each citation's verdict alone (``details.support`` in
``rows.jsonl``). A comparison reads only those verdicts (`SupportMarks`): per
sentence its index and recall, per citation its source number and its ``alone``
verdict; claims, re-attribution and counts are left out. The old run's rows are
indexed with a short key (`SupportMarks.key`: the verifier's digest and a 64-bit
digest of the verdicts), not the verdicts themselves, so the index grows by a constant
per row; the verdicts are read again only for a row whose key changed.

Two runs' verdicts are compared only where both runs were checked by verifiers of the
same identity (kind, name, version and digest); otherwise the comparison says once why
not (`why_not_compared`), in structural words: a verifier's identity, never text.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Final, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, ValidationError

if TYPE_CHECKING:
    from pydantic import JsonValue

__all__ = [
    "SupportFlip",
    "SupportMarks",
    "SupportVerifier",
    "flips",
    "support_marks",
    "verifier_label",
    "why_not_compared",
]

_KEY_CHARS: Final = 16
_WORDS: Final = {
    "entailed": "supported",
    "not_entailed": "not supported",
    "unjudged": "unjudged",
    "not_asked": "not asked",
}


class SupportVerifier(BaseModel):
    """A support verifier's identity as ``rows.jsonl`` and ``report.json`` record it."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    kind: str
    name: str
    version: str
    digest: str


class _Citation(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    source: int
    alone: Literal["entailed", "not_entailed", "unjudged", "not_asked"]


class _Sentence(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    index: int
    recall: int | None = None
    citations: tuple[_Citation, ...] = ()


class _Support(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    verifier: SupportVerifier
    sentences: tuple[_Sentence, ...] = ()


Sentence = tuple[int, int | None, tuple[tuple[int, str], ...]]
"""One sentence's index, recall and citations (source number, verdict alone)."""


class SupportMarks(NamedTuple):
    """One row's support verdicts: what judged them, and each sentence's."""

    verifier: SupportVerifier
    sentences: tuple[Sentence, ...]

    @property
    def key(self) -> str:
        """The verifier's digest and a 64-bit digest of the verdicts, as one short string."""
        text = json.dumps(self.sentences, separators=(",", ":"), ensure_ascii=True)
        verdicts = hashlib.sha256(text.encode("ascii")).hexdigest()[:_KEY_CHARS]
        return f"{_identity(self.verifier)}|{verdicts}"


class SupportFlip(BaseModel):
    """One citation whose verdict alone changed, or one sentence whose recall did."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    sentence: int
    """The sentence, counted from 1 (``rows.jsonl``'s ``index`` plus 1)."""
    source: int | None
    """The source the citation names; None for the sentence's recall."""
    old: str | None
    """The old verdict (``supported``, ``not supported``, ``unjudged``, ``not asked``) or
    recall (``1``, ``0``); None where the old run did not judge it."""
    new: str | None
    """The new one, the same way."""

    def text(self) -> str:
        """``sentence 2, [3] supported -> not supported`` or ``sentence 2 recall 1 -> 0``."""
        old, new = self.old or "absent", self.new or "absent"
        if self.source is None:
            return f"sentence {self.sentence} recall {old} -> {new}"
        return f"sentence {self.sentence}, [{self.source}] {old} -> {new}"


def _identity(verifier: SupportVerifier) -> str:
    text = json.dumps(
        [verifier.kind, verifier.name, verifier.version, verifier.digest], ensure_ascii=True
    )
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:_KEY_CHARS]


def support_marks(support: dict[str, JsonValue] | None) -> SupportMarks | None:
    """A record's ``details.support`` as verdicts; None when it has none or not in that shape."""
    if support is None:
        return None
    try:
        parsed = _Support.model_validate(support)
    except ValidationError:
        return None
    return SupportMarks(
        parsed.verifier,
        tuple(
            (s.index, s.recall, tuple((c.source, c.alone) for c in s.citations))
            for s in parsed.sentences
        ),
    )


def verifier_label(verifier: SupportVerifier | None) -> str:
    """``lexical sha256:0b7df25ff99a`` (12 hex digits), or ``none``."""
    if verifier is None:
        return "none"
    digest = verifier.digest
    kind, _, hexed = digest.partition(":")
    short = f"{kind}:{hexed[:12]}" if hexed else digest[:19]
    return f"{verifier.kind} {short}"


def why_not_compared(old: SupportVerifier | None, new: SupportVerifier | None) -> str | None:
    """Why two runs' support verdicts are not compared, or None when they are."""
    if old is None and new is None:
        return "neither run was checked with --verifier"
    if old is None or new is None:
        which = "old" if old is None else "new"
        return f"the {which} run was not checked with --verifier"
    if old != new:
        return (
            f"the runs' verifiers differ (old {verifier_label(old)}, new {verifier_label(new)}): "
            "two instruments, not one"
        )
    return None


def _recall(value: int | None) -> str | None:
    return None if value is None else str(value)


def flips(old: SupportMarks, new: SupportMarks) -> tuple[SupportFlip, ...]:
    """Each citation (by sentence and source) whose verdict alone, or recall, changed.

    Sentences are paired by index and citations within them by source number,
    occurrence by occurrence; one present on one side only is a change from or to
    None.
    """
    old_by = {s[0]: s for s in old.sentences}
    new_by = {s[0]: s for s in new.sentences}
    found: list[SupportFlip] = []
    for index in sorted(old_by.keys() | new_by.keys()):
        before, after = old_by.get(index), new_by.get(index)
        was = None if before is None else _recall(before[1])
        now = None if after is None else _recall(after[1])
        if was != now:
            found.append(SupportFlip(sentence=index + 1, source=None, old=was, new=now))
        found.extend(_citation_flips(index, before, after))
    return tuple(found)


def _citation_flips(
    index: int, before: Sentence | None, after: Sentence | None
) -> list[SupportFlip]:
    olds = _numbered(() if before is None else before[2])
    news = _numbered(() if after is None else after[2])
    found: list[SupportFlip] = []
    for key in sorted(olds.keys() | news.keys()):
        was, now = olds.get(key), news.get(key)
        if was != now:
            found.append(
                SupportFlip(
                    sentence=index + 1,
                    source=key[0],
                    old=None if was is None else _WORDS[was],
                    new=None if now is None else _WORDS[now],
                )
            )
    return found


def _numbered(citations: tuple[tuple[int, str], ...]) -> dict[tuple[int, int], str]:
    """Each citation's verdict keyed by (source, its occurrence of that source)."""
    seen: dict[int, int] = {}
    keyed: dict[tuple[int, int], str] = {}
    for source, alone in citations:
        seen[source] = seen.get(source, 0) + 1
        keyed[(source, seen[source])] = alone
    return keyed
