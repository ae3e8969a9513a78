"""Planning the echo check's corpus: case templates, markers and documents, with no side effects.

`plan_echo` decides everything an echo run will plant before anything is written
or asked: for each case, a positive document whose answer-bearing passage carries
a fresh marker, a lexically similar decoy document carrying another, a third marker
that goes nowhere, and the order the two passages are presented in (drawn at
random, so "always cite [1]" is not a strategy that passes). A marker is
``CM-ECHO-`` and 32 lowercase hex digits: 128 random bits, from ``os.urandom``
(through `secrets.SystemRandom`) or, when a seed is given, from a seeded
`random.Random`, so the same seed plans the same corpus exactly. Being a pure
function of ``(seed, cases)``, the plan is also how a test learns the absent
marker that the pipeline is never shown.
"""

from __future__ import annotations

import hashlib
import json
import random
import secrets
from typing import TYPE_CHECKING, Final, Literal

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from citemark._contract.models import Source

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "DEFAULT_ECHO_CASES",
    "ECHO_REPORT_NAME",
    "MARKER_BITS",
    "MARKER_PREFIX",
    "EchoCase",
    "EchoDocument",
    "EchoPlan",
    "PlannedCase",
    "plan_echo",
]

ECHO_REPORT_NAME: Final = "echo-latest.json"
"""The file name the echo report is written under, inside ``out_dir``."""

MARKER_PREFIX: Final = "CM-ECHO-"
"""What every planted marker starts with."""

MARKER_BITS: Final = 128
"""Random bits per marker; the SPEC asks for at least 64."""

_MARKER_DIGITS: Final = MARKER_BITS // 4
_HEADER: Final = "Policy excerpt. This document is synthetic: citemark's echo check wrote it."
_CONFIG: Final = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class EchoCase(BaseModel):
    """One case template: a question, the passage that answers it, and a decoy like it.

    The check appends each passage's marker itself (``Reference code: CM-ECHO-...``),
    so a template holds none: a marker written into a template would be committed,
    and could be memorized.
    """

    model_config = _CONFIG

    question: str
    """The question put to the pipeline."""

    passage: str
    """The passage that answers the question; it goes into the positive document."""

    decoy: str
    """A passage worded like ``passage`` that does not answer the question."""

    @field_validator("question", "passage", "decoy")
    @classmethod
    def _check_text(cls, value: str) -> str:
        if not value.strip():
            msg = "echo case texts must not be blank"
            raise ValueError(msg)
        if MARKER_PREFIX.casefold() in value.casefold():
            msg = f"echo case texts must not contain {MARKER_PREFIX!r}: markers are planted per run"
            raise ValueError(msg)
        return value

    @model_validator(mode="after")
    def _check_distinct(self) -> EchoCase:
        if self.passage == self.decoy:
            msg = "the decoy must differ from the passage"
            raise ValueError(msg)
        return self


DEFAULT_ECHO_CASES: Final = (
    EchoCase(
        question=(
            "How many unused leave days may full-time employees of Harrow & Quill "
            "carry over into the next calendar year?"
        ),
        passage=(
            "Harrow & Quill leave policy, section 4: full-time employees may carry over "
            "up to 12 unused leave days into the next calendar year."
        ),
        decoy=(
            "Harrow & Quill leave policy, section 4: part-time contractors may carry over "
            "up to 3 unused leave days into the next calendar year."
        ),
    ),
    EchoCase(
        question=(
            "Within how many days must Lindqvist Freight staff submit their travel expense claims?"
        ),
        passage=(
            "Lindqvist Freight expense policy, section 2: staff must submit travel expense "
            "claims within 30 days of returning from the trip."
        ),
        decoy=(
            "Lindqvist Freight expense policy, section 2: staff must submit equipment expense "
            "claims within 90 days of the purchase date."
        ),
    ),
    EchoCase(
        question="How long is a visitor badge valid at the Orsolya Research Campus?",
        passage=(
            "Orsolya Research Campus security policy: a visitor badge is valid for 8 hours "
            "from issue and must be returned at the north gate."
        ),
        decoy=(
            "Orsolya Research Campus security policy: a contractor badge is valid for 30 days "
            "from issue and must be returned at the south gate."
        ),
    ),
)
"""The default suite: three fictional policies, each with a decoy that shares most
of its words but answers a different question."""


class EchoDocument(BaseModel):
    """One planted document: its file, its marker, and the passage presented from it."""

    model_config = _CONFIG

    doc_id: str
    """The file's path relative to the case's temporary folder."""

    text: str
    """The file's whole content."""

    marker: str
    """The marker its passage carries."""

    passage: Source
    """The passage as presented to the pipeline, with exact offsets into ``text``."""


class PlannedCase(BaseModel):
    """One case as planned: its documents, its three markers and the presentation order."""

    model_config = _CONFIG

    number: int
    """The case's 1-based position in the run."""

    question: str
    """The question put to the pipeline."""

    positive: EchoDocument
    """The document whose passage answers the question."""

    decoy: EchoDocument
    """The lexically similar document whose passage does not."""

    absent_marker: str
    """The marker written nowhere and presented nowhere."""

    positive_number: Literal[1, 2]
    """The source number ``[n]`` the positive passage is presented as."""

    @property
    def sources(self) -> tuple[Source, Source]:
        """The two passages in the order they are presented."""
        if self.positive_number == 1:
            return (self.positive.passage, self.decoy.passage)
        return (self.decoy.passage, self.positive.passage)

    @property
    def markers(self) -> tuple[str, str, str]:
        """The positive, decoy and absent markers."""
        return (self.positive.marker, self.decoy.marker, self.absent_marker)


class EchoPlan(BaseModel):
    """Everything a run will plant, computed before anything is written or asked."""

    model_config = _CONFIG

    seed: int | None
    """The seed, or ``None`` for markers from ``os.urandom``."""

    cases: tuple[PlannedCase, ...]
    """The planned cases, in order."""

    @property
    def corpus_sha256(self) -> str:
        """SHA-256 over every document's id and text, in case order."""
        documents = [
            [document.doc_id, document.text]
            for case in self.cases
            for document in sorted((case.positive, case.decoy), key=lambda d: d.doc_id)
        ]
        encoded = json.dumps(documents, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(encoded.encode("utf-8")).hexdigest()


def plan_echo(seed: int | None, cases: int | Sequence[EchoCase] = DEFAULT_ECHO_CASES) -> EchoPlan:
    """Plan an echo run: every document, marker and presentation order, without side effects.

    With a seed, the plan is a pure function of ``(seed, cases)``: the same seed
    gives the same corpus and the same markers. A test uses this to know the absent
    marker, which the pipeline is never shown. With ``None``, each call draws fresh
    markers from ``os.urandom``.

    Args:
        seed: An integer seed, or ``None``.

        cases: The case templates, or a number of cases drawn from
            `DEFAULT_ECHO_CASES` in turn.

    Returns:
        The plan.

    Raises:
        ValueError: ``cases`` is empty, or a number below 1.

    Example:
        ```python
        from citemark import plan_echo

        plan = plan_echo(7, cases=2)
        print(len(plan.cases), plan.cases[0].absent_marker[:8])
        #> 2 CM-ECHO-
        print(plan == plan_echo(7, cases=2), plan == plan_echo(8, cases=2))
        #> True False
        ```
    """
    templates = _templates(cases)
    # Seeded runs must be reproducible, so they use the Mersenne Twister on purpose;
    # unseeded runs draw from the operating system's generator.
    rng = random.Random(seed) if seed is not None else secrets.SystemRandom()  # noqa: S311
    used: set[str] = set()

    def fresh() -> str:
        while True:
            marker = f"{MARKER_PREFIX}{rng.getrandbits(MARKER_BITS):0{_MARKER_DIGITS}x}"
            if marker not in used:
                used.add(marker)
                return marker

    planned = []
    for number, template in enumerate(templates, start=1):
        positive_marker, decoy_marker, absent_marker = fresh(), fresh(), fresh()
        positive_number: Literal[1, 2] = 1 if rng.getrandbits(1) else 2
        decoy_number = 3 - positive_number
        planned.append(
            PlannedCase(
                number=number,
                question=template.question,
                positive=_document(positive_number, template.passage, positive_marker),
                decoy=_document(decoy_number, template.decoy, decoy_marker),
                absent_marker=absent_marker,
                positive_number=positive_number,
            )
        )
    return EchoPlan(seed=seed, cases=tuple(planned))


def _templates(cases: int | Sequence[EchoCase]) -> tuple[EchoCase, ...]:
    if isinstance(cases, int) and not isinstance(cases, bool):
        if cases < 1:
            msg = f"cases must be at least 1 (got {cases})"
            raise ValueError(msg)
        return tuple(DEFAULT_ECHO_CASES[i % len(DEFAULT_ECHO_CASES)] for i in range(cases))
    if isinstance(cases, bool) or not cases:
        msg = "cases must be a positive number or a non-empty sequence of EchoCase"
        raise ValueError(msg)
    return tuple(EchoCase.model_validate(case) for case in cases)


def _document(number: int, passage: str, marker: str) -> EchoDocument:
    """The file presented as source ``number``, its passage carrying ``marker``."""
    doc_id = f"document-{number}.txt"
    carried = f"{passage} Reference code: {marker}."
    text = f"{_HEADER}\n\n{carried}\n"
    start = len(_HEADER) + 2
    source = Source(text=carried, doc_id=doc_id, start=start, end=start + len(carried))
    return EchoDocument(doc_id=doc_id, text=text, marker=marker, passage=source)
