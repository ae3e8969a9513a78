"""The planted-marker echo check (SPEC §3.10): does a pipeline cite what it was shown?

For each case the check writes two short documents to a fresh temporary folder: a
*positive* one whose answer-bearing passage carries a high-entropy marker
(``CM-ECHO-`` and 32 hex digits, 128 random bits) and a lexically similar *decoy*
carrying another. Both passages are presented to the pipeline as sources, with
exact offsets into their files. A third marker is written nowhere and presented
nowhere. The answer's citations are then re-read from the files with
`citemark.verify_citation` and `citemark.FileReader`:

- the positive side passes only if a verified citation holds the positive marker;
  a verified citation holding the decoy's marker is ``wrong_source``;
- the negative side looks for the absent marker in the answer text and in every
  field of every citation; a hit is a ``leak``, because nothing the pipeline was
  given contained it.

The corpus is planned by `citemark._judging.echo.plan.plan_echo`. Markers come from
``os.urandom`` unless a seed is given, in which case a seeded `random.Random`
reproduces the same corpus exactly. They exist only in memory and in the temporary
folders, never in a committed file, so no model can have memorized them. The
results go to their own artifact, `EchoReport`, because the corpus is the check's
own and shares no provenance with any evaluation input (ADR decision 4).
"""

from __future__ import annotations

import asyncio
import inspect
import tempfile
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, Protocol, TypeAlias, get_args

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from citemark._contract.artifacts import (
    ModelIdentity,
    citemark_version,
    identity_of,
    utc_now,
    write_report_atomically,
)
from citemark._contract.errors import ChatError, SynthesisError
from citemark._contract.models import Citation, CitedAnswer, Source
from citemark._contract.sync import run_sync
from citemark._judging.echo.plan import (
    DEFAULT_ECHO_CASES,
    ECHO_REPORT_NAME,
    MARKER_BITS,
    MARKER_PREFIX,
    EchoCase,
    PlannedCase,
    plan_echo,
)
from citemark._sources.spans import FileReader, Outcome, verify_citation

if TYPE_CHECKING:
    import os
    from collections.abc import Awaitable, Callable, Sequence

    from citemark._sources.spans import DocumentReader

__all__ = [
    "ECHO_REPORT_NAME",
    "EchoCaseResult",
    "EchoCitation",
    "EchoCorpus",
    "EchoOutcome",
    "EchoPipeline",
    "EchoReport",
    "run_echo_check",
    "run_echo_check_sync",
]

EchoOutcome: TypeAlias = Literal[
    "pass", "wrong_source", "uncited", "leak", "rejected", "call_failed"
]
"""The outcome of one echo case; see `EchoCaseResult.outcome` for the precedence."""


_DESCRIPTION: Final = (
    "Synthetic policy excerpts written by citemark's echo check, independent of any "
    "user corpus. Per case: a positive and a lexically similar decoy document, each "
    "written to a fresh temporary folder that is deleted after the case, each with one "
    "presented passage carrying its own marker; and a third marker written and "
    "presented nowhere."
)
_CONFIG: Final = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class _Synthesizing(Protocol):
    def synthesize(
        self, question: str, sources: Sequence[Source], /
    ) -> CitedAnswer | Awaitable[CitedAnswer]: ...


EchoPipeline: TypeAlias = (
    "Callable[[str, Sequence[Source]], CitedAnswer | Awaitable[CitedAnswer]] | _Synthesizing"
)
"""What the echo check can run: an async or sync callable of ``(question, sources)``
returning a `CitedAnswer`, or an object whose ``synthesize`` is one (a
`Synthesizer`, an adapter chain)."""


class EchoCitation(BaseModel):
    """One citation of an echo answer, as re-read from the planted files."""

    model_config = _CONFIG

    marker: int
    """The source number the answer cited."""

    verification: Outcome
    """What re-reading the cited span from its file gave."""

    document: Literal["positive", "decoy"] | None
    """Which planted passage the verified span holds; ``None`` when it did not verify
    or holds neither marker."""


class EchoCaseResult(BaseModel):
    """The outcome of one echo case, with every marker it planted."""

    model_config = _CONFIG

    case: int
    """The case's 1-based position in the run."""

    question: str
    """The question put to the pipeline."""

    outcome: EchoOutcome
    """What happened, by this precedence (the first that applies):

    1. ``rejected``: the pipeline raised a `SynthesisError` (for example
       `MarkerOutOfRangeError`); ``call_failed``: it raised a `ChatError`. There is
       no answer to check.
    2. ``leak``: the absent marker occurs (case-insensitively) in the answer text or
       in a field of a citation. It dominates everything else: an answer holding text
       it was never given says nothing good about its citations.
    3. ``wrong_source``: a verified citation holds the decoy's passage, whether or
       not the positive one is cited too; otherwise a pipeline that cites every
       source would always pass.
    4. ``uncited``: no verified citation holds the positive passage (an abstention,
       or citations that fail to verify).
    5. ``pass``: a verified citation holds the positive passage, and nothing above
       applies.
    """

    positive_marker: str
    """The marker planted in the answer-bearing passage."""

    decoy_marker: str
    """The marker planted in the decoy passage."""

    absent_marker: str
    """The marker planted nowhere."""

    positive_source: Literal[1, 2]
    """The source number the positive passage was presented as."""

    answer: str | None = None
    """The answer text as the pipeline returned it; ``None`` without an answer."""

    citations: tuple[EchoCitation, ...] = ()
    """The answer's citations, re-read from the planted files."""

    leaked_in: tuple[Literal["answer", "citation"], ...] = ()
    """Where the absent marker was found."""

    error: str | None = None
    """The type name of the error a ``rejected`` or ``call_failed`` case raised."""

    reason: str | None = None
    """Why a ``rejected`` or ``call_failed`` case failed, as a stable code: the
    `citemark.SynthesisError.reason` (``truncated``, ``marker_out_of_range``, ...) or
    the `citemark.ChatError.reason` (``timeout``, ``connect``, ``http_status``, ...)."""

    status: int | None = None
    """For ``call_failed``: the HTTP status, or None when no response arrived."""

    provider_code: str | None = None
    """For ``call_failed``: the provider's machine error code, when it sent one."""


class EchoCorpus(BaseModel):
    """What the echo check ran over: its own synthetic corpus, never the user's."""

    model_config = _CONFIG

    description: str
    """How the corpus is made, in words."""

    cases: int
    """How many cases were planted."""

    documents: int
    """How many documents were written (two per case)."""

    marker_pattern: str
    """The shape of every marker, as a regular expression."""

    marker_bits: int
    """Random bits per marker."""

    generator: Literal["os.urandom", "random.Random(seed)"]
    """Where the markers' randomness came from."""

    sha256: str
    """SHA-256 over every document's id and text: equal for equal seeds."""


class EchoReport(BaseModel):
    """The echo check's own artifact: one result per case and every marker it planted.

    It is written to ``<out_dir>/echo-latest.json``. Every marker is recorded here
    only once the run is over; none of them is in any committed file.
    """

    model_config = _CONFIG

    schema_version: Literal[1] = 1
    """The report format's version. New fields come with defaults."""

    citemark_version: str = Field(default_factory=citemark_version)
    """The citemark version that ran the check."""

    created_at: AwareDatetime = Field(default_factory=utc_now)
    """When the run finished, in UTC."""

    seed: int | None
    """The seed the corpus was planned from, or ``None`` for ``os.urandom``."""

    pipeline: str
    """The pipeline's type, e.g. ``citemark.Synthesizer`` or a function's qualified name."""

    synthesis: ModelIdentity | None
    """The model and prompt behind the pipeline where known (a `Synthesizer`, or an
    identity passed in); ``None`` otherwise."""

    corpus: EchoCorpus
    """The synthetic corpus the check ran over."""

    cases: tuple[EchoCaseResult, ...]
    """One result per case, in order."""

    failure_reasons: dict[str, int] = Field(default_factory=dict)
    """How many ``rejected`` and ``call_failed`` cases failed per reason code (see
    `EchoCaseResult.reason`), most frequent first."""

    @property
    def passed(self) -> bool:
        """Whether every case passed."""
        return all(case.outcome == "pass" for case in self.cases)

    @property
    def counts(self) -> dict[str, int]:
        """How many cases ended in each outcome, every outcome listed."""
        found = Counter(case.outcome for case in self.cases)
        return {outcome: found[outcome] for outcome in get_args(EchoOutcome)}

    @property
    def markers(self) -> tuple[str, ...]:
        """Every marker the run planted, absent ones included, in case order."""
        return tuple(
            marker
            for case in self.cases
            for marker in (case.positive_marker, case.decoy_marker, case.absent_marker)
        )


async def run_echo_check(
    pipeline: EchoPipeline,
    cases: int | Sequence[EchoCase] = DEFAULT_ECHO_CASES,
    seed: int | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    *,
    identity: ModelIdentity | None = None,
) -> EchoReport:
    r"""Run the planted-marker echo check against ``pipeline``.

    Each case gets a fresh temporary folder holding its two documents; the pipeline
    is asked once, with both passages as sources, and its answer is checked against
    the files before the folder is deleted. A sync pipeline runs in a worker
    thread, so one that calls `asyncio.run` itself still works. Cases run one after
    another; a `SynthesisError` or `ChatError` ends only its own case.

    Args:
        pipeline: An async or sync callable of ``(question, sources)`` returning a
            `CitedAnswer`, or an object whose ``synthesize`` is one.

        cases: The case templates, or a number of default cases.

        seed: ``None`` for fresh markers from ``os.urandom``; an integer to reproduce
            a corpus exactly.

        out_dir: Where to write ``echo-latest.json`` (atomically); ``None`` writes
            nothing. `citemark.DEFAULT_RESULTS_DIR` is the usual place.

        identity: The model and prompt behind ``pipeline``, for a pipeline that does
            not expose them; read from a `Synthesizer` when not given.

    Returns:
        The report: one result per case, every marker planted.

    Raises:
        TypeError: the pipeline returned something other than a `CitedAnswer`.

    Any other exception the pipeline raises (a bug, an exhausted test script) ends
    the run and is raised unchanged; nothing is written then.

    Example:
        ```python
        import asyncio
        import re

        from citemark import Synthesizer
        from citemark.echo import run_echo_check
        from citemark.testing import ScriptedChat


        def cite_the_passage_with_the_answer(prompt: str) -> str:
            number = re.search(r"^\[(\d)\] .*carry over up to 12", prompt, re.M).group(1)
            return f"Up to 12 days [{number}]."


        chat = ScriptedChat([cite_the_passage_with_the_answer])
        report = asyncio.run(run_echo_check(Synthesizer(chat), cases=1))
        print(report.cases[0].outcome, report.passed)
        #> pass True
        ```
    """
    plan = plan_echo(seed, cases)
    results = []
    for case in plan.cases:
        with tempfile.TemporaryDirectory(prefix="citemark-echo-") as folder:
            root = Path(folder)
            for document in (case.positive, case.decoy):
                (root / document.doc_id).write_text(document.text, encoding="utf-8", newline="")
            results.append(await _run_case(pipeline, case, FileReader(root)))
    report = EchoReport(
        seed=seed,
        pipeline=_describe(pipeline),
        synthesis=identity if identity is not None else identity_of(pipeline),
        corpus=EchoCorpus(
            description=_DESCRIPTION,
            cases=len(plan.cases),
            documents=2 * len(plan.cases),
            marker_pattern=f"{MARKER_PREFIX}[0-9a-f]{{{MARKER_BITS // 4}}}",
            marker_bits=MARKER_BITS,
            generator="os.urandom" if seed is None else "random.Random(seed)",
            sha256=plan.corpus_sha256,
        ),
        cases=tuple(results),
        failure_reasons=_failure_reasons(results),
    )
    if out_dir is not None:
        write_report_atomically(Path(out_dir) / ECHO_REPORT_NAME, report)
    return report


def run_echo_check_sync(
    pipeline: EchoPipeline,
    cases: int | Sequence[EchoCase] = DEFAULT_ECHO_CASES,
    seed: int | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    *,
    identity: ModelIdentity | None = None,
) -> EchoReport:
    """Run `run_echo_check` to completion with `asyncio.run`, for code without an event loop.

    Example:
        ```python
        from citemark import Synthesizer, run_echo_check_sync
        from citemark.testing import ScriptedChat

        chat = ScriptedChat(["The sources do not say."] * 3)
        report = run_echo_check_sync(Synthesizer(chat), seed=1)
        print(report.counts["uncited"], report.passed)
        #> 3 False
        ```
    """
    return run_sync(lambda: run_echo_check(pipeline, cases, seed, out_dir, identity=identity))


def _failure_reasons(results: Sequence[EchoCaseResult]) -> dict[str, int]:
    found = Counter(case.reason for case in results if case.reason is not None)
    return dict(sorted(found.items(), key=lambda item: (-item[1], item[0])))


async def _run_case(
    pipeline: EchoPipeline, case: PlannedCase, reader: DocumentReader
) -> EchoCaseResult:
    planted = {
        "case": case.number,
        "question": case.question,
        "positive_marker": case.positive.marker,
        "decoy_marker": case.decoy.marker,
        "absent_marker": case.absent_marker,
        "positive_source": case.positive_number,
    }
    try:
        answer = await _ask(pipeline, case.question, list(case.sources))
    except SynthesisError as exc:
        return EchoCaseResult.model_validate(
            {**planted, "outcome": "rejected", "error": type(exc).__name__, "reason": exc.reason}
        )
    except ChatError as exc:
        return EchoCaseResult.model_validate(
            {
                **planted,
                "outcome": "call_failed",
                "error": type(exc).__name__,
                "reason": exc.reason,
                "status": exc.status,
                "provider_code": exc.provider_code,
            }
        )
    if not isinstance(answer, CitedAnswer):
        msg = f"the pipeline returned a {type(answer).__name__}, not a CitedAnswer"
        raise TypeError(msg)
    citations = tuple(_reread(citation, case, reader) for citation in answer.citations)
    leaked_in = _leaks(answer, case.absent_marker)
    documents = {citation.document for citation in citations}
    outcome: EchoOutcome
    if leaked_in:
        outcome = "leak"
    elif "decoy" in documents:
        outcome = "wrong_source"
    elif "positive" not in documents:
        outcome = "uncited"
    else:
        outcome = "pass"
    return EchoCaseResult.model_validate(
        {
            **planted,
            "outcome": outcome,
            "answer": answer.text,
            "citations": citations,
            "leaked_in": leaked_in,
        }
    )


async def _ask(pipeline: EchoPipeline, question: str, sources: list[Source]) -> object:
    """Call the pipeline once, however it is shaped, and return what it answered."""
    target = getattr(pipeline, "synthesize", pipeline)
    if not callable(target):
        msg = f"a {type(pipeline).__name__} is neither callable nor has a synthesize method"
        raise TypeError(msg)
    if inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(
        getattr(target, "__call__", None)  # noqa: B004 - an async __call__ on an instance
    ):
        result: object = target(question, sources)
    else:
        result = await asyncio.to_thread(target, question, sources)
    if inspect.isawaitable(result):
        result = await result
    return result


def _reread(citation: Citation, case: PlannedCase, reader: DocumentReader) -> EchoCitation:
    verification = verify_citation(citation, reader)
    document: Literal["positive", "decoy"] | None = None
    if verification.ok:
        if case.positive.marker in citation.text:
            document = "positive"
        elif case.decoy.marker in citation.text:
            document = "decoy"
    return EchoCitation(
        marker=citation.marker, verification=verification.outcome, document=document
    )


def _leaks(answer: CitedAnswer, absent: str) -> tuple[Literal["answer", "citation"], ...]:
    needle = absent.casefold()
    found: list[Literal["answer", "citation"]] = []
    if needle in answer.text.casefold():
        found.append("answer")
    fields = (
        value
        for citation in answer.citations
        for value in (citation.text, citation.doc_id, citation.chunk_id, citation.uri)
    )
    if any(value is not None and needle in value.casefold() for value in fields):
        found.append("citation")
    return tuple(found)


def _describe(pipeline: object) -> str:
    """The pipeline's type as a dotted name: a function's own name, else its class's."""
    named = (
        pipeline if inspect.isfunction(pipeline) or inspect.ismethod(pipeline) else type(pipeline)
    )
    module = getattr(named, "__module__", None) or "?"
    return f"{module}.{getattr(named, '__qualname__', type(named).__name__)}"
