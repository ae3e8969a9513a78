"""citemark: citations a RAG answer cannot fake."""

from citemark._errors import (
    ChatError,
    CitemarkError,
    JudgeError,
    MarkerOutOfRangeError,
    NoSourcesError,
    QueryRewriteError,
    SynthesisError,
)
from citemark._markers import MarkerOccurrence, MaskedSpan, masked_spans, parse_markers
from citemark._models import Citation, CitedAnswer, Source
from citemark._render import DEFAULT_SYNTHESIS_PROMPT, render_prompt, render_sources
from citemark._resolve import resolve
from citemark._retrieval import BM25Retriever
from citemark._verify import (
    DocumentReader,
    FileReader,
    MappingReader,
    Verification,
    verify_citation,
)

__all__ = [
    "DEFAULT_SYNTHESIS_PROMPT",
    "BM25Retriever",
    "ChatError",
    "Citation",
    "CitedAnswer",
    "CitemarkError",
    "DocumentReader",
    "FileReader",
    "JudgeError",
    "MappingReader",
    "MarkerOccurrence",
    "MarkerOutOfRangeError",
    "MaskedSpan",
    "NoSourcesError",
    "QueryRewriteError",
    "Source",
    "SynthesisError",
    "Verification",
    "masked_spans",
    "parse_markers",
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
