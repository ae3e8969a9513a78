"""Un-assessed reason codes and their sentences: one vocabulary for the core and both adapters.

A row that cannot be graded honestly carries a stable code (SPEC §3.9) and a sentence
a person reads. The scorer, ``citemark check``, the HTML report, the LangChain
callback and evaluator and the LlamaIndex evaluator all take both from `REASONS`, so
the same input gets the same code wherever it is checked. Codes keep their meaning
once published; new ones may be added.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

__all__ = [
    "ADAPTER_REASONS",
    "CHAT_REASONS",
    "REASONS",
    "RECORDED_REASONS",
    "REJECTION_REASONS",
    "SCORER_REASONS",
    "explain",
]

_SCORER: Final = {
    "empty_context": "the context is empty, so there is nothing a citation could name",
    "no_resolved_citations": "the response has no citation that names a source",
    "unsupported_label_style": "source labels are not distinguishable from ordinary text",
    "partial_citation_coverage": "only some of the response's citations could be resolved",
    "no_judge": "no judge was configured to grade the resolved citations",
    "judge_call_failed": "the call to the judge failed",
    "judge_reply_truncated": "the judge's reply was cut off at its token limit",
    "judge_reply_not_recorded": "the replayed judge holds no recorded reply for this prompt",
    "invalid_judge_output": "the judge returned unusable output",
    "incomplete_judge_verdicts": "the judge did not assess every citation",
    "contradictory_judge_verdicts": "the judge returned more than one verdict for a citation",
    "judge_score_contradicts_verdicts": "the judge's score contradicts its own verdicts",
    "occurrence_tagging_failed": "the response could not be tagged for the judge",
    "scoring_error": "scoring this row raised an error",
    "unverifiable_sources_only": "every resolved citation names a source with no text or only "
    "a URL, which cannot be graded",
}

# What an adapter meets before the scorer runs: no answer where one was expected,
# documents whose numbering cannot be recovered, or its own failure.
_ADAPTER: Final = {
    "no_answer": "the response has no answer text",
    "numbering_unknown": "the sources are not numbered [1]..[N] once each",
    "evaluation_error": "evaluating this row raised an error",
    "chain_error": "the chain raised before it produced an answer",
    "provider_citations_not_graded": "the provider's citations re-read from the documents "
    "sent, but nothing grades whether they support the answer",
    "structured_citations_not_graded": "the structured answer's citations name sources it "
    "was given (and its quotes re-read from them), but nothing grades whether they support "
    "the answer",
}

# What a reader of another tool's recorded runs (`citemark check --from`) meets: the
# numbering the model saw cannot be known, so the row is never resolved against a guess.
_RECORDED: Final = {
    "source_order_not_recorded": "the record does not say in what order the model saw its "
    "sources, so their numbering cannot be known",
    "contexts_joined": "the record joined the sources into one string, so where one ends "
    "and the next begins cannot be known; save the dataset as JSON, which keeps each "
    'source apart (DeepEval: save_as(file_type="json", ...))',
    "sources_truncated": "the record holds the sources cut short or with some missing "
    "(a trace attribute limit), so they are not the list the model saw",
    "no_retrieval_recorded": "the record holds no retrieved sources for the answer",
    "several_retrievals": "the record holds more than one retrieval, and nothing ties one "
    "of them to the answer",
    "trace_incomplete": "the trace's spans are not one whole tree (its root never "
    "recorded, a span's parent lost, two spans under one id, or parents in a cycle), so "
    "its answer is not known",
    "structured_output_not_parsed": "the structured answer failed its own schema, so its "
    "citations could not be read",
}

# Why a model call failed: `citemark.ChatError.reason`. Recorded per row and counted
# per code in reports, next to the HTTP status and any provider machine code.
_CHAT: Final = {
    "timeout": "the call timed out before the reply was complete",
    "connect": "no connection could be made to the endpoint",
    "http_status": "the endpoint answered with an HTTP status other than 200",
    "protocol": "the HTTP exchange with the endpoint was malformed",
    "transport": "the transport failed",
    "bad_envelope": "the reply was not an OpenAI-style completion",
    "null_content": "the reply's content was null",
    "deadline": "the whole call ran past its deadline",
    "reply_too_large": "the decoded reply grew past the size cap",
}

# Why an answer was rejected: `citemark.SynthesisError.reason`, one code per class.
_REJECTION: Final = {
    "synthesis_error": "the answer broke the synthesis contract (a blank question or answer)",
    "no_sources": "there were no sources to cite",
    "marker_out_of_range": "the answer cited a marker outside the sources it was given",
    "unsent_document": "a provider citation named a document that was not sent",
    "quote_not_in_source": "a structured answer quoted text its cited source does not hold",
    "structured_answer_malformed": "a structured answer's citations could not be read",
    "truncated": "the answer was cut off at the model's token limit",
}

SCORER_REASONS: Final = MappingProxyType(_SCORER)
"""The codes `citemark.CitationScorer` can leave a row un-assessed with."""

ADAPTER_REASONS: Final = MappingProxyType(_ADAPTER)
"""The codes an adapter adds for what it meets before the scorer runs."""

RECORDED_REASONS: Final = MappingProxyType(_RECORDED)
"""The codes a reader of another tool's recorded runs leaves a row un-assessed with."""

REASONS: Final = MappingProxyType(_SCORER | _ADAPTER | _RECORDED)
"""Every un-assessed reason code and the sentence that explains it."""

CHAT_REASONS: Final = MappingProxyType(_CHAT)
"""Every `citemark.ChatError.reason` code and the sentence that explains it."""

REJECTION_REASONS: Final = MappingProxyType(_REJECTION)
"""Every `citemark.SynthesisError.reason` code and the sentence that explains it."""


def explain(code: str, particulars: str = "") -> str:
    """The explanation of a row left un-assessed under ``code``.

    Args:
        code: A code from `REASONS`.
        particulars: Structural facts to add in parentheses (counts, numbers); never
            untrusted text.

    Returns:
        ``"Not assessed: <sentence>."``, with the particulars before the period.

    Raises:
        KeyError: ``code`` is not a known reason code.

    Example:
        ```python
        from citemark.evaluation import explain

        print(explain("no_judge"))
        #> Not assessed: no judge was configured to grade the resolved citations.
        ```
    """
    sentence = REASONS[code]
    return f"Not assessed: {sentence}" + (f" ({particulars})." if particulars else ".")
