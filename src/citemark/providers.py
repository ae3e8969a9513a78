"""Provider-native citations, re-checked against the caller's own documents.

Anthropic, OpenAI, Cohere, Gemini / Vertex and Bedrock return citations of their
own instead of ``[n]`` markers, each with its own units, bases and inclusivity.
This module parses each format into one model, `ProviderCitation` (the caller's
document, the source span with its unit stated, the response span in code points
of the whole answer, and the cited text), converts offsets exactly between UTF-8
bytes, UTF-16 code units and code points (`convert_offset`), and verifies every
citation against the documents the caller sent, with citemark's readers
(`verify_provider_answer`). As with markers, nothing is repaired: a citation of a
document that was not sent rejects the answer (`check_provider_response` raises
`UnsentDocumentError`). See docs/provider-citations.md.

Example:
    ```python
    from citemark.providers import SentDocument, check_provider_response

    docs = [SentDocument(doc_id="tea", text="Matcha 抹茶 is powdered green tea.")]
    message = {"content": [{"type": "text", "text": "It is powdered tea.", "citations": [
        {"type": "char_location", "cited_text": "抹茶 is powdered green tea.",
         "document_index": 0, "start_char_index": 7, "end_char_index": 32}]}]}
    result = check_provider_response("anthropic", message, docs)
    print(result.ok, [v.outcome for v in result.verifications])
    #> True ['verified']
    ```
"""

from __future__ import annotations

from citemark._contract.errors import OffsetUnitError, ProviderResponseError, UnsentDocumentError
from citemark._sources.providers._model import (
    Outcome,
    ProviderAnswer,
    ProviderCitation,
    ProviderVerification,
    ResponseSpan,
    SentDocument,
    SourceSpan,
)
from citemark._sources.providers._offsets import Unit, convert_offset, length_in, to_code_points
from citemark._sources.providers._spans import (
    PROVIDERS,
    ProviderCheck,
    check_provider_response,
    parse_provider_response,
    provider_citations_json,
    verify_provider_answer,
)
from citemark._sources.providers.anthropic import accumulate_anthropic_stream, parse_anthropic
from citemark._sources.providers.bedrock import parse_bedrock_converse
from citemark._sources.providers.cohere import parse_cohere
from citemark._sources.providers.gemini import parse_gemini
from citemark._sources.providers.openai import parse_openai_chat, parse_openai_responses

__all__ = [
    "PROVIDERS",
    "OffsetUnitError",
    "Outcome",
    "ProviderAnswer",
    "ProviderCheck",
    "ProviderCitation",
    "ProviderResponseError",
    "ProviderVerification",
    "ResponseSpan",
    "SentDocument",
    "SourceSpan",
    "Unit",
    "UnsentDocumentError",
    "accumulate_anthropic_stream",
    "check_provider_response",
    "convert_offset",
    "length_in",
    "parse_anthropic",
    "parse_bedrock_converse",
    "parse_cohere",
    "parse_gemini",
    "parse_openai_chat",
    "parse_openai_responses",
    "parse_provider_response",
    "provider_citations_json",
    "to_code_points",
    "verify_provider_answer",
]

# Report public names as `citemark.providers.X` in tracebacks and reprs.
for _name in __all__:
    _obj = globals()[_name]
    if isinstance(_obj, type) or callable(_obj):
        _obj.__module__ = __name__
del _name, _obj
