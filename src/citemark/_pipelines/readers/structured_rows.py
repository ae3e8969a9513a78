"""Structured answers in ``citemark check``: a row whose ``answer`` is an object.

A pipeline built on structured output records the parsed object, not marked-up text::

    {"id": "q1", "question": "...", "sources": [...],
     "answer": {"answer": "About 100 km/h.", "citations": [{"source_id": 0, "quote": "..."}]}}

The object is read by `citemark.check_structured` against the row's sources, numbered
with the row's base: the text is where ``--answer-field`` points (default ``/answer``),
the citations where ``--citations-field`` points (default ``/citations``: a list of
integer ids, or of objects with an integer ``source_id`` and a string ``quote``).
LangChain's ``include_raw=True`` output (``{"raw", "parsed", "parsing_error"}``) is
recognized too: the parsed object is read, and a reply that failed its own schema
(``parsing_error`` set, or ``parsed`` null) leaves the row un-assessed with
``structured_output_not_parsed``; it is never read from ``raw`` instead.

The row's text is scored as any answer is (its markers, the judge); then
`with_structured_findings` adds the structured checks: an id naming no source fails
the row (``fabricated_citation``), as does a quote its source does not hold
(``quote_not_in_source``, naming any other source that holds it). A row whose only
citations are structured ones, all sound, is un-assessed with
``structured_citations_not_graded``: nothing grades whether they support the answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from citemark._contract.errors import printable_int
from citemark._judging.scorer.result import failed_after, unassessed, with_findings

if TYPE_CHECKING:
    from collections.abc import Mapping

    from citemark._judging.scorer.findings import ViolationCode
    from citemark._judging.scorer.result import CitationScore
    from citemark._sources.structured import StructuredCitedAnswer, StructuredFindings

__all__ = ["NOT_PARSED", "parsed_object", "with_structured_findings"]

NOT_PARSED: Final = "structured_output_not_parsed"
"""The un-assessed code of a structured reply that failed its own schema."""

_RAW_KEYS: Final = frozenset({"parsed", "parsing_error"})
_LISTED: Final = 10


def parsed_object(answer: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The structured object a recorded answer holds, or None when it failed to parse.

    An ``include_raw=True`` record (``parsed`` and ``parsing_error`` keys) gives its
    ``parsed`` object, or None when ``parsing_error`` is set or nothing was parsed;
    any other object is the structured answer itself.
    """
    if not answer.keys() >= _RAW_KEYS:
        return answer
    parsed = answer["parsed"]
    if answer["parsing_error"] is not None or not isinstance(parsed, dict):
        return None
    return parsed


def with_structured_findings(
    score: CitationScore, checked: StructuredCitedAnswer | None, *, strict: bool = False
) -> CitationScore:
    """The row's score with its structured citations recorded, failed on a violation.

    With ``strict`` (``--strict-markers``), citation-like text that is not a marker in
    the object's other string fields fails the row as it does in the text.
    """
    if checked is None:
        return score
    found = checked.findings
    codes: list[ViolationCode] = []
    failures: list[str] = []
    if found.out_of_range:
        codes.append("fabricated_citation")
        failures.append(_out_of_range(found))
    if found.wrong_quotes:
        codes.append("quote_not_in_source")
        failures.append(_wrong_quotes(found))
    if strict and found.field_tokens:
        codes.append("unrecognized_citation")
        count = len(found.field_tokens)
        kinds = ", ".join(sorted({t.token.kind for t in found.field_tokens}))
        noun = "tokens" if count != 1 else "token"
        failures.append(
            f"{count} citation-like {noun} in the structured answer's fields "
            f"{'are' if count != 1 else 'is'} not a marker (strict mode; {kinds})"
        )
    findings = score.findings.model_copy(update={"structured": found})
    if failures:
        return failed_after(score, findings, codes, failures)
    if checked.citations and score.reason == "no_resolved_citations":
        noun = "source" if len(checked.citations) == 1 else "sources"
        return unassessed(
            "structured_citations_not_graded", findings, f"{len(checked.citations)} {noun} cited"
        )
    return with_findings(score, findings)


def _out_of_range(found: StructuredFindings) -> str:
    wrong = [c for c in found.citations if c.outcome == "out_of_range"]
    listed = [f"id {printable_int(c.source_id)} at {c.pointer}" for c in wrong]
    # A field's pointer is made of the answer's own keys: data, named in the findings only.
    listed += [
        f"[{printable_int(m.marker)}] in a field" for m in found.field_markers if not m.in_range
    ]
    shown = ", ".join(listed[:_LISTED]) + (
        f" and {len(listed) - _LISTED} more" if len(listed) > _LISTED else ""
    )
    many = len(listed) != 1
    noun = "citations name" if many else "citation names"
    return f"{len(listed)} structured {noun} no source: {shown}"


def _wrong_quotes(found: StructuredFindings) -> str:
    wrong = found.wrong_quotes
    parts = []
    for c in wrong[:_LISTED]:
        if c.outcome == "blank_quote":
            parts.append(f"{c.pointer} is blank")
        elif c.in_other_source is not None:
            parts.append(
                f"{c.pointer} is not in source {printable_int(c.source_id)} "
                f"but in source {printable_int(c.in_other_source)}"
            )
        else:
            parts.append(f"{c.pointer} is in no source")
    more = f" and {len(wrong) - _LISTED} more" if len(wrong) > _LISTED else ""
    many = len(wrong) != 1
    noun = "quotes do" if many else "quote does"
    return f"{len(wrong)} {noun} not occur in the source cited: " + ", ".join(parts) + more
