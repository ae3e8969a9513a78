"""citemark: citations a RAG answer cannot fake."""

from citemark._agreement import (
    Agreement,
    ConfusionMatrix,
    agreement_rate,
    cohen_kappa,
    confusion_matrix,
    measure_agreement,
    precision_recall,
)
from citemark._artifacts import (
    DEFAULT_RESULTS_DIR,
    ModelIdentity,
    dataset_sha256,
    write_report_atomically,
)
from citemark._calibration import (
    Applicability,
    CalibrationReport,
    Registration,
    Threshold,
    register_threshold,
    run_calibration,
    run_calibration_sync,
)
from citemark._chat import ChatModel, OpenAIChat
from citemark._echo import EchoCaseResult, EchoReport, run_echo_check, run_echo_check_sync
from citemark._echo_plan import DEFAULT_ECHO_CASES, EchoCase, EchoPlan, PlannedCase, plan_echo
from citemark._errors import (
    BlankQueryError,
    CalibrationError,
    ChatConfigError,
    ChatError,
    CitemarkError,
    JudgeError,
    LabelSetError,
    MarkerOutOfRangeError,
    NoRowsError,
    NoSourcesError,
    QueryRewriteError,
    StrictJSONError,
    SynthesisError,
)
from citemark._judge import DEFAULT_JUDGE_PROMPT, FaithfulnessJudge, FaithfulnessVerdict
from citemark._labelset import LabelledItem, LabelSet
from citemark._markers import MarkerOccurrence, MaskedSpan, masked_spans, parse_markers
from citemark._models import Citation, CitedAnswer, Source
from citemark._redaction import RedactingChat, RedactionReport
from citemark._render import (
    DEFAULT_SYNTHESIS_PROMPT,
    indent_block,
    recover_numbering,
    render_prompt,
    render_sources,
)
from citemark._reports import (
    CheckSummary,
    EvalReport,
    SynthesisReport,
    VerdictCounts,
    run_synthesis,
    run_synthesis_sync,
)
from citemark._resolve import resolve
from citemark._retrieval import BM25Retriever
from citemark._scorer.scorer import CitationScore, CitationScorer, ScoreRow, coverage_report
from citemark._stream import StreamingResolver
from citemark._synthesis import DEFAULT_REWRITE_PROMPT, QueryRewriter, Synthesizer
from citemark._verify import (
    DocumentReader,
    FileReader,
    MappingReader,
    Verification,
    locate_span,
    verify_citation,
)

__all__ = [
    "DEFAULT_ECHO_CASES",
    "DEFAULT_JUDGE_PROMPT",
    "DEFAULT_RESULTS_DIR",
    "DEFAULT_REWRITE_PROMPT",
    "DEFAULT_SYNTHESIS_PROMPT",
    "Agreement",
    "Applicability",
    "BM25Retriever",
    "BlankQueryError",
    "CalibrationError",
    "CalibrationReport",
    "ChatConfigError",
    "ChatError",
    "ChatModel",
    "CheckSummary",
    "Citation",
    "CitationScore",
    "CitationScorer",
    "CitedAnswer",
    "CitemarkError",
    "ConfusionMatrix",
    "DocumentReader",
    "EchoCase",
    "EchoCaseResult",
    "EchoPlan",
    "EchoReport",
    "EvalReport",
    "FaithfulnessJudge",
    "FaithfulnessVerdict",
    "FileReader",
    "JudgeError",
    "LabelSet",
    "LabelSetError",
    "LabelledItem",
    "MappingReader",
    "MarkerOccurrence",
    "MarkerOutOfRangeError",
    "MaskedSpan",
    "ModelIdentity",
    "NoRowsError",
    "NoSourcesError",
    "OpenAIChat",
    "PlannedCase",
    "QueryRewriteError",
    "QueryRewriter",
    "RedactingChat",
    "RedactionReport",
    "Registration",
    "ScoreRow",
    "Source",
    "StreamingResolver",
    "StrictJSONError",
    "SynthesisError",
    "SynthesisReport",
    "Synthesizer",
    "Threshold",
    "VerdictCounts",
    "Verification",
    "agreement_rate",
    "cohen_kappa",
    "confusion_matrix",
    "coverage_report",
    "dataset_sha256",
    "indent_block",
    "locate_span",
    "masked_spans",
    "measure_agreement",
    "parse_markers",
    "plan_echo",
    "precision_recall",
    "recover_numbering",
    "register_threshold",
    "render_prompt",
    "render_sources",
    "resolve",
    "run_calibration",
    "run_calibration_sync",
    "run_echo_check",
    "run_echo_check_sync",
    "run_synthesis",
    "run_synthesis_sync",
    "verify_citation",
    "write_report_atomically",
]

__version__ = "0.1.0"

# Report public names as `citemark.X` in tracebacks and reprs, not `citemark._mod.X`.
for _name in __all__:
    _obj = globals()[_name]
    if isinstance(_obj, type) or callable(_obj):
        _obj.__module__ = "citemark"
del _name, _obj
