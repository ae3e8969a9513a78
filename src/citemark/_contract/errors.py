"""The citemark error tree.

Every error citemark raises on purpose derives from `CitemarkError`. The tree is
drawn once, here and in ``docs/errors.md``::

    CitemarkError
    ├── SynthesisError            the synthesis contract failed
    │   ├── NoSourcesError        nothing citable was given
    │   ├── MarkerOutOfRangeError an answer cited [n] outside 1..N
    │   ├── UnrecognizedCitationError strict mode met citation-like text
    │   ├── UnsentDocumentError   a provider citation named a document not sent
    │   ├── QuoteNotInSourceError a structured answer quoted what its source lacks
    │   ├── StructuredAnswerError a structured answer's citations cannot be read
    │   └── TruncatedAnswerError  the model stopped at its token limit
    ├── QueryRewriteError         a query rewrite came back blank
    ├── BlankQueryError           a blank query was given to rewrite
    ├── JudgeError                a judge reply failed to parse or validate
    ├── StrictJSONError           a text is not strict JSON
    ├── ChatError                 the model transport or provider failed
    │   └── JudgeReplyNotRecordedError  a replayed judge prompt was never recorded
    ├── ChatConfigError           a chat's configuration was refused
    ├── CalibrationError          a calibration step was refused
    │   └── LabelSetError         a label file failed its checks
    ├── NoRowsError               a check input held no readable row
    ├── ReplayError               a recorded run cannot be replayed
    ├── RunDiffError              two check runs cannot be compared
    ├── PartMismatchError         a Ray worker's part file is not what it wrote
    ├── RayRunError               a Ray run lost a worker or its node
    ├── ProviderResponseError     a provider response is not of its documented shape
    ├── OffsetUnitError           an offset fell inside a character or out of range
    ├── VerifierError             a support verifier cannot be built or used
    └── MissingExtraError         a feature needs an extra that is not installed

`QueryRewriteError`, `JudgeError` and `ChatError` are siblings of
`SynthesisError`, not subclasses: a caller who catches synthesis failures must not
swallow a broken transport by accident.

`MissingExtraError` is also an `ImportError`, the type Python code expects for a
missing optional dependency.

The refusals of a caller's input (`BlankQueryError`, `StrictJSONError`,
`ChatConfigError`, `CalibrationError`, `LabelSetError`, `NoRowsError`) were
`ValueError` before they were `CitemarkError`, and each still derives from
`ValueError` as well, so code written against citemark 0.1 that catches
`ValueError` keeps working; new code should catch the citemark class.

Messages carry structural facts only (marker numbers, counts, identities, HTTP
statuses). Answers, source text, queries and provider bodies are untrusted and never
enter a message; the same facts travel as attributes so handlers need not parse
the message. None of these classes derives from `RuntimeError`, because LlamaIndex's
sync path rewrites a `RuntimeError` into an unrelated "nested async" error, nor
from LangChain's ``OutputParserException``, because LangChain's fixing and retrying
parsers catch that type and "repair" a fabricated citation into a plausible one.
"""

from __future__ import annotations

import re
from typing import ClassVar, Final

__all__ = [
    "BlankQueryError",
    "CalibrationError",
    "ChatConfigError",
    "ChatError",
    "CitemarkError",
    "JudgeError",
    "JudgeReplyNotRecordedError",
    "LabelSetError",
    "MarkerOutOfRangeError",
    "MissingExtraError",
    "NoRowsError",
    "NoSourcesError",
    "OffsetUnitError",
    "PartMismatchError",
    "ProviderResponseError",
    "QueryRewriteError",
    "QuoteNotInSourceError",
    "RayRunError",
    "ReplayError",
    "RunDiffError",
    "StrictJSONError",
    "StructuredAnswerError",
    "SynthesisError",
    "TruncatedAnswerError",
    "UnsentDocumentError",
    "VerifierError",
]

# Integers with more digits than this are described by their length in messages:
# a marker is structural, but a 4,000-digit one would still flood a log line.
_MAX_PRINTED_DIGITS = 20
# Integers longer than this many bits are never converted with str() (Python's limit is
# 4,300 digits, about 14,280 bits); their length is estimated from the bits instead.
_MAX_STR_BITS = 14_000
_LOG10_2 = 0.30103


def printable_int(value: int) -> str:
    """An integer for a message, or its length when it is too long to print (a structural fact).

    Python refuses to convert an integer of more than 4,300 digits to text; such a
    number is described by its approximate length, computed from its bits.
    """
    if value.bit_length() > _MAX_STR_BITS:
        return f"<number of about {int(value.bit_length() * _LOG10_2) + 1} digits>"
    shown = str(value)
    return shown if len(shown) <= _MAX_PRINTED_DIGITS else f"<{len(shown)}-digit number>"


class CitemarkError(Exception):
    """Base class of every error citemark raises on purpose."""


class SynthesisError(CitemarkError):
    """Raised when an answer breaks the synthesis contract.

    Raised directly for a blank question or a blank completion; the subclasses
    name the other ways the contract fails.

    Attributes:
        reason: A stable code for the kind of rejection, the same for every instance
            of a class (``synthesis_error`` here; ``no_sources``,
            ``marker_out_of_range``, ``unsent_document``, ``truncated`` in the
            subclasses), so reports can count rejections per reason.
    """

    reason: ClassVar[str] = "synthesis_error"


class NoSourcesError(SynthesisError):
    """Raised when there is nothing to cite: the source list is empty.

    It is raised before any model call. Synthesis with nothing citable is not an
    abstention, it is an invocation error.
    """

    reason: ClassVar[str] = "no_sources"

    def __init__(self) -> None:
        """Create the error; it has no parameters because it has no facts."""
        msg = "no sources were given: there is nothing an answer could cite"
        super().__init__(msg)

    def __reduce__(self) -> tuple[type[NoSourcesError], tuple[()]]:
        """Pickle without the message, which the constructor writes itself."""
        return (type(self), ())


class MarkerOutOfRangeError(SynthesisError):
    """Raised when an answer cites a marker outside ``1..valid_count``.

    Attributes:
        marker: The cited integer (``[0]`` gives 0).
        valid_count: How many sources the answer was given.
    """

    reason: ClassVar[str] = "marker_out_of_range"
    marker: int
    valid_count: int

    def __init__(self, marker: int, valid_count: int, index_base: int = 1) -> None:
        """Create the error from the offending marker, the source count and the base."""
        self.marker = marker
        self.valid_count = valid_count
        self.index_base = index_base
        shown = printable_int(marker)
        noun = "source" if valid_count == 1 else "sources"
        last = valid_count - 1 + index_base
        msg = (
            f"marker [{shown}] is out of range: the answer was given "
            f"{valid_count} {noun}, so markers must lie in {index_base}..{last}"
        )
        super().__init__(msg)

    def __reduce__(self) -> tuple[type[MarkerOutOfRangeError], tuple[int, int, int]]:
        """Pickle with the constructor's arguments, not the message."""
        return (type(self), (self.marker, self.valid_count, self.index_base))


class UnrecognizedCitationError(SynthesisError):
    """Raised in strict mode when an answer holds citation-like text that is not a marker.

    ``[1-3]``, ``[^1]``, ``【1】``, a provider's leaked marker: by default such text is
    reported in `CitedAnswer.unrecognized` and cites nothing; with ``strict=True``
    (``--strict-markers``) the first one rejects the answer. The message names its
    kind and offset, never its text.

    Attributes:
        kind: What the text looks like, e.g. ``range`` or ``footnote``.
        start: Its offset in the answer.
    """

    kind: str
    start: int

    def __init__(self, kind: str, start: int) -> None:
        """Create the error from the first unrecognized token's kind and offset."""
        self.kind = kind
        self.start = start
        msg = (
            f"the answer holds citation-like text that is not a marker "
            f"(kind {kind}, at offset {start}); strict mode rejects it"
        )
        super().__init__(msg)

    def __reduce__(self) -> tuple[type[UnrecognizedCitationError], tuple[str, int]]:
        """Pickle with the constructor's arguments, not the message."""
        return (type(self), (self.kind, self.start))


class QuoteNotInSourceError(SynthesisError):
    """Raised when a structured answer's quote does not occur in the source it cites.

    A quote citation (``{"source_id": n, "quote": "..."}``) is the model's claim that
    the words are in source ``n``; they are re-read there (control characters, whitespace
    runs and quote characters normalized, nothing else) and a quote that is not found rejects the
    answer. It is never moved to the source that does hold it: ``in_other_source``
    only tells a misattribution from an invented quote.

    Attributes:
        source_id: The cited source id, in the pipeline's numbering.
        citation: The citation's 1-based position in the citations list.
        in_other_source: The id of the first other source that holds the quote, or
            None when no source does (or the quote is blank).
    """

    reason: ClassVar[str] = "quote_not_in_source"
    source_id: int
    citation: int
    in_other_source: int | None

    def __init__(self, source_id: int, citation: int, in_other_source: int | None = None) -> None:
        """Create the error from the cited id, the citation's position and any other holder."""
        self.source_id = source_id
        self.citation = citation
        self.in_other_source = in_other_source
        where = (
            f"; it occurs in source {printable_int(in_other_source)}"
            if in_other_source is not None
            else "; no source holds it"
        )
        cited = printable_int(source_id)
        msg = f"citation {citation} quotes text that source {cited} does not hold{where}"
        super().__init__(msg)

    def __reduce__(
        self,
    ) -> tuple[type[QuoteNotInSourceError], tuple[int, int, int | None]]:
        """Pickle with the constructor's arguments, not the message."""
        return (type(self), (self.source_id, self.citation, self.in_other_source))


class StructuredAnswerError(SynthesisError):
    """Raised when a structured answer is not of a shape whose citations can be read.

    The answer object must hold its citations where the caller said (a JSON pointer)
    or in one of the documented shapes: ``citations`` as a list of integer source ids,
    or of objects with an integer ``source_id`` (and a string ``quote``). A citation
    that is not one of those (a string id, a boolean, a missing ``source_id``) is not
    read as a guess. The message is structural: field positions, never values.
    """

    reason: ClassVar[str] = "structured_answer_malformed"


class TruncatedAnswerError(SynthesisError):
    """Raised when the model stopped at its token limit (``finish_reason: "length"``).

    A cut-off answer may have lost a sentence, a citation, or the half of a marker
    group that makes it one, so it is rejected as it is, never resolved as if it
    were whole. Raise the limit (``max_tokens``, ``--max-tokens``) or shorten the
    prompt; nothing retries it.
    """

    reason: ClassVar[str] = "truncated"

    def __init__(self) -> None:
        """Create the error; its only fact is its class."""
        msg = (
            "the answer was cut off at the model's token limit (finish_reason length): "
            "a truncated answer is rejected, not resolved"
        )
        super().__init__(msg)

    def __reduce__(self) -> tuple[type[TruncatedAnswerError], tuple[()]]:
        """Pickle without the message, which the constructor writes itself."""
        return (type(self), ())


class QueryRewriteError(CitemarkError):
    """Raised when a query rewrite comes back blank.

    citemark never falls back to the original query: a run with rewriting on must
    not be indistinguishable from one with it off.
    """


class BlankQueryError(CitemarkError, ValueError):
    """Raised when a query given to rewrite is blank; no model call is made.

    It is the caller's mistake, not the model's, so it is not a `QueryRewriteError`.
    It is also a `ValueError`, as it was in citemark 0.1.
    """


class JudgeError(CitemarkError):
    """Raised when a judge reply does not parse or fails its schema.

    The message names the kind of failure (error types, known field names), never
    text taken from the reply.

    Attributes:
        reason: The un-assessed reason code it stands for: ``invalid_judge_output``,
            or ``judge_reply_truncated`` for a reply cut off at its token limit.
    """

    reason: str = "invalid_judge_output"


class StrictJSONError(CitemarkError, ValueError):
    """Raised when a text is not strict JSON (see ``citemark._model.strictjson``).

    It is also a `ValueError`, as it was in citemark 0.1.

    Attributes:
        kind: What was wrong, one of ``"too large"``, ``"not JSON"``,
            ``"duplicate key"``, ``"non-finite number"`` and ``"nesting too deep"``.
            It is also the whole message.
    """

    kind: str

    def __init__(self, kind: str) -> None:
        """Create the error from a fixed description written by citemark."""
        self.kind = kind
        super().__init__(kind)

    def __reduce__(self) -> tuple[type[StrictJSONError], tuple[str]]:
        """Pickle with the constructor's argument."""
        return (type(self), (self.kind,))


class ChatError(CitemarkError):
    """Raised when the model transport or provider fails.

    Covers HTTP error statuses, timeouts, refused connections, malformed provider
    envelopes and ``null`` content. The provider's response body never reaches the
    message or the attributes, with one exception: the short machine code of an
    OpenAI-style error body (``error.code`` or ``error.type``), kept only when it
    matches ``^[a-z0-9_.-]{1,64}$``, never the error's message.

    Attributes:
        provider: The provider name, e.g. ``"openai-compatible"``.
        model: The model name the request asked for.
        status: The HTTP status, or ``None`` when no response arrived.
        reason: A stable code for the kind of failure, one of
            ``citemark.evaluation.CHAT_REASONS``: ``timeout``, ``connect``,
            ``http_status``, ``protocol``, ``transport``, ``bad_envelope``,
            ``null_content``, ``deadline``, ``reply_too_large``.
        detail: The fixed, structural sentence describing the failure, written by
            citemark (the phase that timed out, the envelope field that was wrong).
        provider_code: The provider's machine error code (e.g.
            ``context_length_exceeded``), or ``None``.
    """

    provider: str
    model: str
    status: int | None
    reason: str
    detail: str
    provider_code: str | None

    def __init__(  # noqa: PLR0913 - structural facts, keyword-only past the detail
        self,
        detail: str,
        *,
        provider: str,
        model: str,
        status: int | None = None,
        reason: str | None = None,
        provider_code: str | None = None,
    ) -> None:
        """Create the error.

        Args:
            detail: A fixed, structural description written by citemark (for
                example ``"timed out reading the response"``), never text from the provider.
            provider: The provider name.
            model: The model name.
            status: The HTTP status, or ``None`` when no response arrived.
            reason: The stable code; by default ``transport`` without a status,
                ``bad_envelope`` with a 200 and ``http_status`` with any other.
            provider_code: The provider's machine error code, already checked
                against ``^[a-z0-9_.-]{1,64}$``; anything else is dropped here too.
        """
        self.provider = provider
        self.model = model
        self.status = status
        self.detail = detail
        self.reason = reason if reason is not None else _default_chat_reason(status)
        self.provider_code = (
            provider_code
            if provider_code is not None and _PROVIDER_CODE.fullmatch(provider_code)
            else None
        )
        where = f"status {status}" if status is not None else "no response"
        code = f", provider code {self.provider_code}" if self.provider_code else ""
        msg = (
            f"{provider} chat call to model {model!r} failed ({where}, {self.reason}{code}): "
            f"{detail}"
        )
        super().__init__(msg)

    def __reduce__(self) -> tuple[object, ...]:
        """Pickle with the constructor's arguments, not the message."""
        return (
            _rebuild_chat_error,
            (self.detail, self.provider, self.model, self.status, self.reason, self.provider_code),
        )


# A provider's machine error code: short, lowercase, no spaces. Anything else in an
# error body may be prose, which may quote the prompt, and is never kept.
_PROVIDER_CODE: Final = re.compile(r"[a-z0-9_.-]{1,64}")

_HTTP_OK: Final = 200


def _default_chat_reason(status: int | None) -> str:
    if status is None:
        return "transport"
    return "bad_envelope" if status == _HTTP_OK else "http_status"


def _rebuild_chat_error(  # noqa: PLR0913, PLR0917 - the pickled constructor arguments
    detail: str,
    provider: str,
    model: str,
    status: int | None,
    reason: str | None = None,
    provider_code: str | None = None,
) -> ChatError:
    return ChatError(
        detail,
        provider=provider,
        model=model,
        status=status,
        reason=reason,
        provider_code=provider_code,
    )


class ChatConfigError(CitemarkError, ValueError):
    """Raised when a chat is built with a configuration it refuses, before any request.

    A missing base URL or model, a URL that is not ``http(s)`` with a host, an API
    key with invisible characters, an unbounded timeout, a bad sampling option. The
    message names the rule, never the URL or the key. It is also a `ValueError`, as
    it was in citemark 0.1.
    """


class CalibrationError(CitemarkError, ValueError):
    """Raised when a calibration step is refused (SPEC §3.11).

    A registration over an existing file, a registration after a measurement of the
    same label set, or a measurement under a registration made for another label
    set. Messages are structural. It is also a `ValueError`, as it was in citemark 0.1.
    """


class LabelSetError(CalibrationError):
    """Raised when a label file fails its checks: size, UTF-8, strict JSON, schema, hashes.

    The message names item positions and fields, never item text, and carries no
    chained exception.
    """


class NoRowsError(CitemarkError, ValueError):
    """Raised when a ``citemark check`` input holds no readable row; nothing is written then.

    It is also a `ValueError`, as it was in citemark 0.1.
    """


class UnsentDocumentError(SynthesisError):
    """Raised when a provider-native citation names a document that was not sent.

    The provider-citation counterpart of `MarkerOutOfRangeError`: the answer is
    rejected whole, nothing is repaired or dropped.

    Attributes:
        provider: The provider name, e.g. ``"anthropic"``.
        citation_index: The position of the first such citation in the answer's
            citation list (0-based).
        unsent_count: How many of the answer's citations name an unsent document.
        sent_count: How many documents were sent.
    """

    reason: ClassVar[str] = "unsent_document"
    provider: str
    citation_index: int
    unsent_count: int
    sent_count: int

    def __init__(
        self, provider: str, *, citation_index: int, unsent_count: int, sent_count: int
    ) -> None:
        """Create the error from structural facts only (never a document id or URL)."""
        self.provider = provider
        self.citation_index = citation_index
        self.unsent_count = unsent_count
        self.sent_count = sent_count
        noun = "document was" if sent_count == 1 else "documents were"
        citations = "1 citation names" if unsent_count == 1 else f"{unsent_count} citations name"
        msg = (
            f"{provider} answer rejected: {citations} a document that "
            f"was not sent (first at citation {citation_index}); {sent_count} {noun} sent"
        )
        super().__init__(msg)

    def __reduce__(self) -> tuple[object, ...]:
        """Pickle with the constructor's arguments, not the message."""
        return (
            _rebuild_unsent_document_error,
            (self.provider, self.citation_index, self.unsent_count, self.sent_count),
        )


def _rebuild_unsent_document_error(
    provider: str, citation_index: int, unsent_count: int, sent_count: int
) -> UnsentDocumentError:
    return UnsentDocumentError(
        provider,
        citation_index=citation_index,
        unsent_count=unsent_count,
        sent_count=sent_count,
    )


class ProviderResponseError(CitemarkError):
    """Raised when a provider response is not of the provider's documented shape.

    Attributes:
        provider: The provider name, e.g. ``"gemini"``.
        reason: A fixed, structural description written by citemark (field names and
            positions only), never text from the response.
    """

    provider: str
    reason: str

    def __init__(self, provider: str, reason: str) -> None:
        """Create the error from the provider name and a citemark-written reason."""
        self.provider = provider
        self.reason = reason
        super().__init__(f"{provider} response is not of the documented shape: {reason}")

    def __reduce__(self) -> tuple[type[ProviderResponseError], tuple[str, str]]:
        """Pickle with the constructor's arguments, not the message."""
        return (type(self), (self.provider, self.reason))


class OffsetUnitError(CitemarkError):
    """Raised when an offset cannot be converted exactly between text units.

    An offset that falls inside a UTF-8 sequence or between the two halves of a
    UTF-16 surrogate pair names no character boundary; citemark never rounds it to
    the nearest one.

    Attributes:
        offset: The offset as given.
        unit: The unit it was given in: ``"utf8"``, ``"utf16"`` or ``"code_point"``.
        reason: ``"inside_utf8_sequence"``, ``"inside_surrogate_pair"``,
            ``"negative"`` or ``"past_end"``.
        length: The length of the indexed text, in ``unit``.
    """

    offset: int
    unit: str
    reason: str
    length: int

    def __init__(self, offset: int, *, unit: str, reason: str, length: int) -> None:
        """Create the error from the offset, its unit, the reason code and the length."""
        self.offset = offset
        self.unit = unit
        self.reason = reason
        self.length = length
        msg = f"offset {offset} ({unit}) is not a character boundary: {reason} (length {length})"
        super().__init__(msg)

    def __reduce__(self) -> tuple[object, ...]:
        """Pickle with the constructor's arguments, not the message."""
        return (_rebuild_offset_unit_error, (self.offset, self.unit, self.reason, self.length))


def _rebuild_offset_unit_error(offset: int, unit: str, reason: str, length: int) -> OffsetUnitError:
    return OffsetUnitError(offset, unit=unit, reason=reason, length=length)


class JudgeReplyNotRecordedError(ChatError):
    """Raised by a replayed judge for a prompt no recorded call holds; no model is called.

    A `ChatError`, so every caller that survives a failed judge call survives this
    one; the scorer names it apart, as the reason code ``judge_reply_not_recorded``.

    Attributes:
        prompt_sha256: The SHA-256 of the whole prompt that has no recorded reply.
    """

    prompt_sha256: str

    def __init__(self, prompt_sha256: str, *, provider: str, model: str) -> None:
        """Create the error from the prompt's hash and the recorded judge's identity."""
        self.prompt_sha256 = prompt_sha256
        super().__init__(
            f"no reply is recorded for this prompt (sha256 {prompt_sha256})",
            provider=provider,
            model=model,
        )

    def __reduce__(self) -> tuple[object, ...]:
        """Pickle with the constructor's arguments, not the message."""
        return (_rebuild_not_recorded, (self.prompt_sha256, self.provider, self.model))


def _rebuild_not_recorded(prompt_sha256: str, provider: str, model: str) -> ChatError:
    return JudgeReplyNotRecordedError(prompt_sha256, provider=provider, model=model)


class ReplayError(CitemarkError, ValueError):
    """Raised when a recorded run cannot be replayed: no recording, or one that fails its checks.

    A missing ``judge-calls.jsonl``, one whose SHA-256 differs from the one
    ``report.json`` records, a line that is not a recorded call, or calls of more than
    one judge. The message names the file, the line number and the field, never a
    prompt or a reply.
    """


class RunDiffError(CitemarkError, ValueError):
    """Raised when two ``citemark check`` runs cannot be compared.

    A folder without ``report.json`` or ``rows.jsonl``, a line that is not a row
    record, or two runs that share no row (matched by id, else question, else line).
    The message carries hashes, line numbers and counts only.
    """


class PartMismatchError(CitemarkError):
    """Raised when a Ray worker's part file is not the bytes it reported writing.

    Its size or SHA-256 differs from the worker's summary (two runs sharing one
    output folder, a full disk). The message names the shard and the output file.
    """


class RayRunError(CitemarkError):
    """Raised when a Ray run cannot finish: a worker or the node it depends on was lost.

    A ``ShardChecker`` worker that died (killed, out of memory), a task that failed
    outside any row's guard, or a Ray node that stopped answering (its GCS or raylet
    gone) for longer than the run's ``node_timeout``. The run publishes nothing and
    leaves the output folder as it was. The message carries structural facts only
    (the reason, a shard number, an exception's class name, a count of seconds).

    Attributes:
        reason: ``worker_lost``, ``worker_failed`` or ``node_lost``.
    """

    def __init__(self, message: str, reason: str) -> None:
        """Create the error with its message and reason code."""
        super().__init__(message)
        self.reason = reason

    def __reduce__(self) -> tuple[type[RayRunError], tuple[str, str]]:
        """Pickle with the reason, which the constructor needs."""
        return (type(self), (str(self), self.reason))


class VerifierError(CitemarkError, ValueError):
    """Raised when a support verifier cannot be built from what it was given, or is used closed.

    The ``nli`` verifier's model folder lacks a file, holds one that cannot be read,
    or a label map that is not two- or three-way with one entailment label; its graph's
    inputs or output do not fit; no window is known. The message names the file and
    counts, never a label, a passage or a claim. It is also a `ValueError`.

    Attributes:
        reason: A code: ``missing_file``, ``bad_config``, ``bad_label_map``,
            ``unreadable_model``, ``unreadable_tokenizer``, ``bad_model_inputs``,
            ``bad_model_output``, ``no_window``, ``closed``; and from naming one on
            the command line, ``bad_spec`` (not ``lexical``, ``judge`` or
            ``nli:PATH``) and ``no_chat`` (``judge`` without a model).
        file: The file the problem is in (a name such as ``config.json``), or None.
    """

    reason: str
    file: str | None

    def __init__(self, reason: str, message: str, file: str | None = None) -> None:
        """Create the error from its code, its structural message and its file name."""
        super().__init__(message)
        self.reason = reason
        self.file = file

    def __reduce__(self) -> tuple[object, ...]:
        """Pickle with the constructor's arguments."""
        return (type(self), (self.reason, str(self), self.file))


class MissingExtraError(CitemarkError, ImportError):
    """Raised when a feature needs an optional extra of citemark that is not installed.

    `BM25Retriever` (and ``citemark answer``, which retrieves with it) needs the
    ``retrieval`` extra, rank-bm25 and the numpy it brings, which the core leaves
    out. The message is one line naming the command that installs it:
    ``pip install 'citemark[retrieval]'``. It is also an `ImportError`, whose
    ``name`` is the module that could not be imported.

    Attributes:
        feature: What needed the extra, e.g. ``"BM25Retriever"``.
        extra: The extra that installs it, e.g. ``"retrieval"``.
    """

    feature: str
    extra: str

    def __init__(self, feature: str, extra: str, module: str) -> None:
        """Create the error from the feature, the extra and the module that is missing."""
        self.feature = feature
        self.extra = extra
        msg = f"{feature} needs the {extra} extra: pip install 'citemark[{extra}]'"
        super().__init__(msg, name=module)

    def __reduce__(self) -> tuple[object, ...]:
        """Pickle with the constructor's arguments, not the message."""
        return (type(self), (self.feature, self.extra, self.name))
