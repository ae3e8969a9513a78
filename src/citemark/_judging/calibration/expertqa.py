r"""ExpertQA's human support labels, read as claim-level entailment labels (issue 36, part 5).

ExpertQA (Malaviya et al., NAACL 2024; MIT licence) publishes, per answer claim,
the evidence the answering system cited and an expert's ``support`` label:
``Complete``, ``Partial``, ``Incomplete``, ``Missing`` or ``N/A`` (and ``null`` on a
few claims). Its ``data/lfqa/{rand,domain}_{train,val,test}.jsonl`` files hold one
question a line, in this shape (only the fields read here are shown)::

    {"question": str,
     "answers": {<system name>: {"claims": [
         {"claim_string": str,              # one answer sentence, its [n] markers kept
          "evidence": [str, ...],           # "[n] <url>" or "[n] <url>\n\n<passage>"
          "support": str | null, ...}]}, ...}, ...}

This module owns reading those files into `ExpertQAClaim` records, one per claim
that a `SupportMapping` turns into a yes/no entailment label, and counting every
claim it leaves out and why (`ExpertQACounts`). A claim's ``claim`` and
``passages`` are what a verifier's premise asks about: does the passages' text,
joined, entail the claim?

The mapping is the caller's choice, always explicit, because the files decide
what a mapping can give. In every split published (``{rand,domain}_{val,test}``
counted) a ``Missing`` claim has an empty evidence list: ``Missing`` marks a claim
with no citation, not a citation that fails to support it. A claim with no
evidence text cannot be a premise, so `COMPLETE_VS_MISSING` yields only
entailed claims. `COMPLETE_VS_INCOMPLETE` keeps the two labels given to claims
with cited evidence that are clear-cut either way; `COMPLETE_VS_REST` is the
binary ExpertQA's own AutoAIS fine-tuning script uses (``Complete`` is
supported, any other label is not).

A claim is left out, and counted under ``(reason, label)``, when:

- ``unlabelled``: its ``support`` is ``null``;
- ``label_excluded``: the mapping excludes its label;
- ``no_evidence``: its evidence list is empty;
- ``evidence_url_only``: an evidence item is a URL with no passage (the
  labeller read the page; the file does not hold it).

Reading is strict and streams: one line at a time, each parsed by
`citemark._model.strictjson.loads_strict`, under a per-line cap. A line that is
not UTF-8, not strict JSON or not the shape above, or a support label outside
the five, is a `LabelSetError` naming the line (and the answer and claim
positions) only, never a character of the file, and raised from ``None``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final, NoReturn, TypeAlias

from citemark._contract.errors import LabelSetError, StrictJSONError
from citemark._model.strictjson import loads_strict

if TYPE_CHECKING:
    import os

__all__ = [
    "COMPLETE_VS_INCOMPLETE",
    "COMPLETE_VS_MISSING",
    "COMPLETE_VS_REST",
    "MAX_LINE_BYTES",
    "SUPPORT_LABELS",
    "UNLABELLED",
    "ExpertQAClaim",
    "ExpertQACounts",
    "SupportMapping",
    "iter_expertqa",
    "read_expertqa",
]

SUPPORT_LABELS: Final = frozenset({"Complete", "Partial", "Incomplete", "Missing", "N/A"})
"""The five ``support`` values ExpertQA's labellers chose from."""

SupportMapping: TypeAlias = Mapping[str, bool | None]
"""Each of the five labels to ``True`` (entailed), ``False`` (not) or ``None`` (left out)."""

COMPLETE_VS_MISSING: Final[SupportMapping] = {
    "Complete": True,
    "Missing": False,
    "Partial": None,
    "Incomplete": None,
    "N/A": None,
}
"""Complete is entailed, Missing is not, the rest left out.

Every ``Missing`` claim in the published splits has no evidence, so all of them
are left out as ``no_evidence``: this mapping yields entailed claims only.
"""

COMPLETE_VS_INCOMPLETE: Final[SupportMapping] = {
    "Complete": True,
    "Incomplete": False,
    "Partial": None,
    "Missing": None,
    "N/A": None,
}
"""Complete is entailed, Incomplete is not; Partial, Missing and N/A left out."""

COMPLETE_VS_REST: Final[SupportMapping] = {
    "Complete": True,
    "Partial": False,
    "Incomplete": False,
    "Missing": False,
    "N/A": False,
}
"""Complete is entailed, every other label is not (ExpertQA's own AutoAIS binary)."""

MAX_LINE_BYTES: Final = 8_000_000
"""The longest line read, in bytes (8 MB); the longest published val/test line is 51 kB."""

UNLABELLED: Final = "<null>"
"""The label key under which claims whose ``support`` is ``null`` are counted."""

# "[3] https://example.org/page", optionally followed by a blank line and the passage.
_EVIDENCE_HEADER: Final = re.compile(r"\[\d+\] \S+")
_PASSAGE_SEPARATOR: Final = "\n\n"


@dataclass(frozen=True)
class ExpertQAClaim:
    """One labelled claim: does the text of ``passages``, joined, entail ``claim``?"""

    id: str
    """The claim's position: ``L<line>-A<answer>-C<claim>``, each counted from 1."""

    line: int
    """The file line of the question the claim answers."""

    system: str
    """The answering system, as the file names it (``rr_gs_gpt4``, ...)."""

    question: str
    """The expert's question."""

    claim: str
    """The claim as the file gives it (``claim_string``), its ``[n]`` markers kept."""

    passages: tuple[str, ...]
    """The cited passages' text, in the claim's evidence order, at least one."""

    urls: tuple[str, ...]
    """Each passage's URL, as its evidence header gives it."""

    support: str
    """The labeller's ``support`` value, one of `SUPPORT_LABELS`."""

    entailed: bool
    """The label under the mapping the file was read with."""


@dataclass
class ExpertQACounts:
    """What a read saw, kept, and left out (with why); filled as the claims stream."""

    records: int = 0
    """Questions (lines) read."""

    answers: int = 0
    """Answers read (one per system per question)."""

    claims: int = 0
    """Claims read, kept or not."""

    by_label: Counter[str] = field(default_factory=Counter)
    """Every claim read, by ``support`` label (`UNLABELLED` for ``null``)."""

    kept: Counter[str] = field(default_factory=Counter)
    """Claims yielded, by label."""

    excluded: Counter[tuple[str, str]] = field(default_factory=Counter)
    """Claims left out, by ``(reason, label)``; the reasons are in the module docstring."""

    entailed: int = 0
    """Claims yielded labelled entailed."""

    not_entailed: int = 0
    """Claims yielded labelled not entailed."""

    def as_dict(self) -> dict[str, object]:
        """The counts as plain JSON-ready data, keys sorted."""
        return {
            "records": self.records,
            "answers": self.answers,
            "claims": self.claims,
            "entailed": self.entailed,
            "not_entailed": self.not_entailed,
            "by_label": dict(sorted(self.by_label.items())),
            "kept": dict(sorted(self.kept.items())),
            "excluded": {
                f"{reason}:{label}": n for (reason, label), n in sorted(self.excluded.items())
            },
        }


def iter_expertqa(
    path: str | os.PathLike[str],
    *,
    mapping: SupportMapping,
    counts: ExpertQACounts | None = None,
) -> Iterator[ExpertQAClaim]:
    """Yield the file's claims that ``mapping`` labels, reading one line at a time.

    ``counts``, when given, is updated as the claims stream; it is complete once
    the iterator is exhausted.

    Raises:
        ValueError: ``mapping`` does not give each of the five labels exactly.
        LabelSetError: a line is too long, blank, not UTF-8, not strict JSON or
            not ExpertQA's shape, or a claim's label is not one of the five. The
            message names the line (and answer and claim positions) only.
        OSError: the file cannot be opened or read.
    """
    _check_mapping(mapping)
    tally = counts if counts is not None else ExpertQACounts()
    with Path(path).open("rb") as file:
        line = 0
        while raw := file.readline(MAX_LINE_BYTES + 1):
            line += 1
            record = _parse_line(raw, line)
            tally.records += 1
            yield from _claims_of(record, line, mapping, tally)


def read_expertqa(
    path: str | os.PathLike[str], *, mapping: SupportMapping
) -> tuple[tuple[ExpertQAClaim, ...], ExpertQACounts]:
    """Read the whole file: its labelled claims, and the counts of what was left out.

    Raises:
        ValueError, LabelSetError, OSError: as `iter_expertqa` says.
    """
    counts = ExpertQACounts()
    claims = tuple(iter_expertqa(path, mapping=mapping, counts=counts))
    return claims, counts


def _check_mapping(mapping: SupportMapping) -> None:
    if set(mapping) != SUPPORT_LABELS:
        msg = "the support mapping must give exactly the five ExpertQA labels"
        raise ValueError(msg)
    if not all(value is None or isinstance(value, bool) for value in mapping.values()):
        msg = "the support mapping's values must be True, False or None"
        raise ValueError(msg)


def _fail(where: tuple[int, ...], problem: str) -> NoReturn:
    """Raise the structural error for ``where``: (line[, answer[, claim]]), counted from 1."""
    names = ("line", "answer", "claim")
    place = ", ".join(f"{name} {number}" for name, number in zip(names, where, strict=False))
    msg = f"ExpertQA file {place}: {problem}"
    raise LabelSetError(msg)


def _parse_line(raw: bytes, line: int) -> dict[str, object]:
    """The line's JSON object, or a `LabelSetError` with no chained exception.

    Every error is raised after its handler has ended: the decoder's exceptions
    hold the line (``UnicodeDecodeError.object``, ``JSONDecodeError.doc``).
    """
    if len(raw) > MAX_LINE_BYTES:
        _fail((line,), f"the line is longer than {MAX_LINE_BYTES} bytes")
    text: str | None
    try:
        text = raw.decode("utf-8-sig" if line == 1 else "utf-8")
    except UnicodeDecodeError:
        text = None
    if text is None:
        _fail((line,), "not UTF-8 text")
    if not text.strip():
        _fail((line,), "a blank line")
    kind: str | None = None
    value: object = None
    try:
        value = loads_strict(text, max_bytes=None)
    except StrictJSONError as exc:
        kind = exc.kind
    if kind is not None:
        _fail((line,), f"not strict JSON ({kind})")
    if not isinstance(value, dict):
        _fail((line,), "not a JSON object")
    return value


def _claims_of(
    record: dict[str, object], line: int, mapping: SupportMapping, tally: ExpertQACounts
) -> Iterator[ExpertQAClaim]:
    question = record.get("question")
    answers = record.get("answers")
    if not isinstance(question, str):
        _fail((line,), "'question' is missing or not a string")
    if not isinstance(answers, dict):
        _fail((line,), "'answers' is missing or not an object")
    for a, (system, answer) in enumerate(answers.items(), start=1):
        tally.answers += 1
        claims = answer.get("claims") if isinstance(answer, dict) else None
        if not isinstance(claims, list):
            _fail((line, a), "the answer is not an object with a 'claims' list")
        for c, claim in enumerate(claims, start=1):
            kept = _labelled(claim, (line, a, c), mapping, tally)
            if kept is not None:
                text, support, passages, urls, entailed = kept
                yield ExpertQAClaim(
                    id=f"L{line}-A{a}-C{c}",
                    line=line,
                    system=system,
                    question=question,
                    claim=text,
                    passages=passages,
                    urls=urls,
                    support=support,
                    entailed=entailed,
                )


def _labelled(
    claim: object, where: tuple[int, int, int], mapping: SupportMapping, tally: ExpertQACounts
) -> tuple[str, str, tuple[str, ...], tuple[str, ...], bool] | None:
    """The claim's text, label, passages, URLs and verdict, or None (counted) when left out.

    Every claim's shape is checked, kept or not, so a file reads the same under
    any mapping.
    """
    if not isinstance(claim, dict):
        _fail(where, "the claim is not an object")
    text = claim.get("claim_string")
    evidence = claim.get("evidence")
    if not isinstance(text, str):
        _fail(where, "'claim_string' is missing or not a string")
    if not isinstance(evidence, list) or not all(isinstance(item, str) for item in evidence):
        _fail(where, "'evidence' is missing or not a list of strings")
    if "support" not in claim:
        _fail(where, "'support' is missing")
    support = claim["support"]
    if support is not None and support not in SUPPORT_LABELS:
        _fail(where, "'support' is not null or one of the five ExpertQA labels")
    split = [_split_evidence(item, where, number) for number, item in enumerate(evidence, 1)]
    tally.claims += 1
    label = UNLABELLED if support is None else str(support)
    tally.by_label[label] += 1
    verdict = None if support is None else mapping[label]
    if support is None:
        reason = "unlabelled"
    elif verdict is None:
        reason = "label_excluded"
    elif not split:
        reason = "no_evidence"
    elif not all(passage.strip() for _, passage in split):
        reason = "evidence_url_only"
    else:
        reason = ""
    if reason or verdict is None:
        tally.excluded[(reason, label)] += 1
        return None
    tally.kept[label] += 1
    if verdict:
        tally.entailed += 1
    else:
        tally.not_entailed += 1
    urls = tuple(url for url, _ in split)
    passages = tuple(passage for _, passage in split)
    return text, label, passages, urls, verdict


def _split_evidence(item: str, where: tuple[int, int, int], number: int) -> tuple[str, str]:
    """An evidence item's URL and passage (empty when the item is a URL only)."""
    header, _, passage = item.partition(_PASSAGE_SEPARATOR)
    header = header.strip()
    if _EVIDENCE_HEADER.fullmatch(header) is None:
        _fail(where, f"evidence item {number} does not open with '[n] <url>'")
    return header.partition(" ")[2], passage
