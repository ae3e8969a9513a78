"""citemark: citations a RAG answer cannot fake."""

from citemark._chat import ChatModel, OpenAIChat
from citemark._errors import (
    ChatError,
    CitemarkError,
    JudgeError,
    MarkerOutOfRangeError,
    NoSourcesError,
    QueryRewriteError,
    SynthesisError,
)
from citemark._judge import DEFAULT_JUDGE_PROMPT, FaithfulnessJudge, FaithfulnessVerdict
from citemark._markers import MarkerOccurrence, MaskedSpan, masked_spans, parse_markers
from citemark._models import Citation, CitedAnswer, Source
from citemark._redaction import RedactingChat, RedactionReport
from citemark._render import (
    DEFAULT_SYNTHESIS_PROMPT,
    recover_numbering,
    render_prompt,
    render_sources,
)
from citemark._resolve import resolve
from citemark._retrieval import BM25Retriever
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
    "DEFAULT_JUDGE_PROMPT",
    "DEFAULT_REWRITE_PROMPT",
    "DEFAULT_SYNTHESIS_PROMPT",
    "BM25Retriever",
    "ChatError",
    "ChatModel",
    "Citation",
    "CitedAnswer",
    "CitemarkError",
    "DocumentReader",
    "FaithfulnessJudge",
    "FaithfulnessVerdict",
    "FileReader",
    "JudgeError",
    "MappingReader",
    "MarkerOccurrence",
    "MarkerOutOfRangeError",
    "MaskedSpan",
    "NoSourcesError",
    "OpenAIChat",
    "QueryRewriteError",
    "QueryRewriter",
    "RedactingChat",
    "RedactionReport",
    "Source",
    "StreamingResolver",
    "SynthesisError",
    "Synthesizer",
    "Verification",
    "locate_span",
    "masked_spans",
    "parse_markers",
    "recover_numbering",
    "render_prompt",
    "render_sources",
    "resolve",
    "verify_citation",
]

__version__ = "0.1.0"

# Report public names as `citemark.X` in tracebacks and reprs, not `citemark._mod.X`.
for _name in __all__:
    _obj = globals()[_name]
    if isinstance(_obj, type) or callable(_obj):
        _obj.__module__ = "citemark"
del _name, _obj
