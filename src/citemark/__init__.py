"""citemark: citations a RAG answer cannot fake.

The top level holds the core API: the models, the marker grammar, rendering,
resolution, verification, the chat seam, synthesis, the judge, the scorer, the echo
check and the error tree. Secondary surfaces live in public domain modules:
`citemark.evaluation` (scorer findings and reason codes), `citemark.calibration`,
`citemark.echo`, `citemark.reports`, `citemark.syntax`, `citemark.text`,
`citemark.providers`, `citemark.otel` and `citemark.testing`.

``import citemark`` loads the contract only (the models, the marker grammar,
rendering, resolution and the errors); every other top-level name loads its module
the first time it is read, so the model side (httpx), BM25 (numpy), the judge, the
scorer, echo and the reports cost nothing until used.

Deprecated: the names below were top-level in citemark 0.1 and still import from
here for one release (0.2), without a warning; import them from their new homes.

- from `citemark.calibration`: ``Agreement``, ``Applicability``, ``CalibrationReport``,
  ``ConfusionMatrix``, ``LabelSet``, ``LabelledItem``, ``Registration``, ``Threshold``,
  ``agreement_rate``, ``cohen_kappa``, ``confusion_matrix``, ``measure_agreement``,
  ``precision_recall``, ``register_threshold``, ``run_calibration``,
  ``run_calibration_sync``;
- from `citemark.echo`: ``DEFAULT_ECHO_CASES``, ``EchoCase``, ``EchoCaseResult``,
  ``EchoPlan``, ``PlannedCase``, ``plan_echo``, ``run_echo_check_sync``;
- from `citemark.reports`: ``DEFAULT_RESULTS_DIR``, ``CheckSummary``,
  ``ModelIdentity``, ``VerdictCounts``, ``dataset_sha256``, ``run_synthesis``,
  ``run_synthesis_sync``, ``write_report_atomically``.

Moved in the release after 0.2, under the same rule (they import from here, without a
warning, for one more release): ``EchoReport`` and ``run_echo_check`` to
`citemark.echo`, ``EvalReport`` and ``SynthesisReport`` to `citemark.reports`,
``coverage_report`` to `citemark.evaluation`.
"""

import importlib as _importlib
import typing as _typing
from typing import Any as _Any

from citemark._contract.errors import (
    BlankQueryError,
    CalibrationError,
    ChatConfigError,
    ChatError,
    CitemarkError,
    JudgeError,
    LabelSetError,
    MarkerOutOfRangeError,
    MissingExtraError,
    NoRowsError,
    NoSourcesError,
    QueryRewriteError,
    QuoteNotInSourceError,
    StrictJSONError,
    StructuredAnswerError,
    SynthesisError,
    TruncatedAnswerError,
    UnrecognizedCitationError,
)
from citemark._contract.models import Citation, CitedAnswer, Source, UnrecognizedToken
from citemark._markers.grammar import MarkerOccurrence, MaskedSpan, masked_spans, parse_markers
from citemark._markers.nearmiss import find_unrecognized
from citemark._markers.resolve import resolve
from citemark._sources.render import (
    DEFAULT_SYNTHESIS_PROMPT,
    indent_block,
    recover_numbering,
    render_prompt,
    render_sources,
)

if _typing.TYPE_CHECKING:
    from citemark._judging.judge import DEFAULT_JUDGE_PROMPT, FaithfulnessJudge, FaithfulnessVerdict
    from citemark._judging.scorer.scorer import CitationScore, CitationScorer, ScoreRow
    from citemark._markers.stream import StreamingResolver
    from citemark._model.chat import OpenAIChat
    from citemark._model.completion import ChatModel, Completion
    from citemark._model.redaction import RedactingChat, RedactionReport
    from citemark._model.synthesis import DEFAULT_REWRITE_PROMPT, QueryRewriter, Synthesizer
    from citemark._sources.retrieval import BM25Retriever
    from citemark._sources.spans import (
        DocumentReader,
        FileReader,
        MappingReader,
        Verification,
        locate_span,
        verify_citation,
    )
    from citemark._sources.structured import (
        StructuredCitation,
        StructuredCitedAnswer,
        StructuredFindings,
        check_structured,
        resolve_structured,
    )

__all__ = [
    "DEFAULT_JUDGE_PROMPT",
    "DEFAULT_REWRITE_PROMPT",
    "DEFAULT_SYNTHESIS_PROMPT",
    "BM25Retriever",
    "BlankQueryError",
    "CalibrationError",
    "ChatConfigError",
    "ChatError",
    "ChatModel",
    "Citation",
    "CitationScore",
    "CitationScorer",
    "CitedAnswer",
    "CitemarkError",
    "Completion",
    "DocumentReader",
    "FaithfulnessJudge",
    "FaithfulnessVerdict",
    "FileReader",
    "JudgeError",
    "LabelSetError",
    "MappingReader",
    "MarkerOccurrence",
    "MarkerOutOfRangeError",
    "MaskedSpan",
    "MissingExtraError",
    "NoRowsError",
    "NoSourcesError",
    "OpenAIChat",
    "QueryRewriteError",
    "QueryRewriter",
    "QuoteNotInSourceError",
    "RedactingChat",
    "RedactionReport",
    "ScoreRow",
    "Source",
    "StreamingResolver",
    "StrictJSONError",
    "StructuredAnswerError",
    "StructuredCitation",
    "StructuredCitedAnswer",
    "StructuredFindings",
    "SynthesisError",
    "Synthesizer",
    "TruncatedAnswerError",
    "UnrecognizedCitationError",
    "UnrecognizedToken",
    "Verification",
    "check_structured",
    "find_unrecognized",
    "indent_block",
    "locate_span",
    "masked_spans",
    "parse_markers",
    "recover_numbering",
    "render_prompt",
    "render_sources",
    "resolve",
    "resolve_structured",
    "verify_citation",
]

__version__ = "0.1.0"

# Public names whose modules load on first use (PEP 562): the model side (httpx), BM25
# (whose rank-bm25 and numpy, from the ``retrieval`` extra, load when an index is
# built), the judge, the scorer, echo and the reports stay out of `import citemark`,
# which loads the contract alone.
_LAZY: dict[str, str] = {
    **dict.fromkeys(("ChatModel", "Completion"), "citemark._model.completion"),
    "OpenAIChat": "citemark._model.chat",
    **dict.fromkeys(
        ("DEFAULT_JUDGE_PROMPT", "FaithfulnessJudge", "FaithfulnessVerdict"),
        "citemark._judging.judge",
    ),
    **dict.fromkeys(("RedactingChat", "RedactionReport"), "citemark._model.redaction"),
    "BM25Retriever": "citemark._sources.retrieval",
    **dict.fromkeys(
        ("CitationScore", "CitationScorer", "ScoreRow"),
        "citemark._judging.scorer.scorer",
    ),
    "StreamingResolver": "citemark._markers.stream",
    **dict.fromkeys(
        (
            "StructuredCitation",
            "StructuredCitedAnswer",
            "StructuredFindings",
            "check_structured",
            "resolve_structured",
        ),
        "citemark._sources.structured",
    ),
    **dict.fromkeys(
        ("DEFAULT_REWRITE_PROMPT", "QueryRewriter", "Synthesizer"), "citemark._model.synthesis"
    ),
    **dict.fromkeys(
        (
            "DocumentReader",
            "FileReader",
            "MappingReader",
            "Verification",
            "locate_span",
            "verify_citation",
        ),
        "citemark._sources.spans",
    ),
}


def _present_at_top_level(obj: object) -> None:
    """Report a public class or function as `citemark.X`, not `citemark._mod.X`."""
    if isinstance(obj, type) or callable(obj):
        obj.__module__ = "citemark"


for _name in __all__:
    if _name not in _LAZY:
        _present_at_top_level(globals()[_name])
del _name

# Deprecated top-level names (see the module docstring), each read from its new home.
_MOVED: dict[str, str] = {
    **dict.fromkeys(
        (
            "Agreement",
            "Applicability",
            "CalibrationReport",
            "ConfusionMatrix",
            "LabelSet",
            "LabelledItem",
            "Registration",
            "Threshold",
            "agreement_rate",
            "cohen_kappa",
            "confusion_matrix",
            "measure_agreement",
            "precision_recall",
            "register_threshold",
            "run_calibration",
            "run_calibration_sync",
        ),
        "citemark.calibration",
    ),
    **dict.fromkeys(
        (
            "DEFAULT_ECHO_CASES",
            "EchoCase",
            "EchoCaseResult",
            "EchoPlan",
            "PlannedCase",
            "plan_echo",
            "run_echo_check",
            "run_echo_check_sync",
            "EchoReport",
        ),
        "citemark.echo",
    ),
    **dict.fromkeys(
        (
            "DEFAULT_RESULTS_DIR",
            "CheckSummary",
            "EvalReport",
            "SynthesisReport",
            "ModelIdentity",
            "VerdictCounts",
            "dataset_sha256",
            "run_synthesis",
            "run_synthesis_sync",
            "write_report_atomically",
        ),
        "citemark.reports",
    ),
    "coverage_report": "citemark.evaluation",
}


def __getattr__(name: str) -> _Any:  # noqa: ANN401 - whatever the named object is
    """Load a public name's module on first use, or serve a deprecated name (0.2 only).

    A public name is bound in this module once loaded, so later reads are plain
    attribute reads. A deprecated name is read from its new home each time and is
    never bound here: it stays out of ``dir(citemark)`` and ``vars(citemark)``.
    """
    home = _LAZY.get(name)
    if home is not None:
        obj = getattr(_importlib.import_module(home), name)
        _present_at_top_level(obj)
        globals()[name] = obj
        return obj
    moved_to = _MOVED.get(name)
    if moved_to is None:
        msg = f"module 'citemark' has no attribute {name!r}"
        raise AttributeError(msg)
    return getattr(_importlib.import_module(moved_to), name)


def __dir__() -> list[str]:
    """The module's names, counting the public names not loaded yet."""
    return sorted({*globals(), *__all__})
