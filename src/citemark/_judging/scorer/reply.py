"""Validating the citation judge's reply, field by field, against the row it graded.

The reply is untrusted input. `check_reply` accepts one JSON object (optionally in
one code fence) parsed strictly by `citemark._model.strictjson`, then checks every field
the judge supplies, because each unchecked one has been a way to a wrong result:

- ``score`` must be a band 0, 1, 2 or 3, as a JSON number that is not a boolean.
  ``float(True)`` is 1.0 and ``True in (0, 1, 2, 3)`` holds, so booleans are refused
  before any numeric test; ``min(1.0, nan)`` is 1.0, so nothing is clamped either.
- ``verdicts`` must be a list of objects, each with an ``occurrence`` that is an
  ``int`` and not a ``bool`` (``True == 1`` and ``1.0 == 1`` would both credit
  occurrence 1) naming an occurrence that was graded, an ``outcome`` from the
  closed set, and only the fields that outcome takes, each a string when present.
  A verdict for an occurrence nobody asked about answers a different question, so
  it makes the reply invalid rather than being dropped while the row stays
  assessed; an optional field given as ``null`` is a field that is not a string,
  not an absent one (``dict.get`` cannot tell them apart, so presence is tested).
- ``explanation`` is used only if it is a string; anything else leaves it out rather
  than putting a Python ``repr`` into a report.

Evidence is then verified, and a verdict whose evidence fails is discarded (counted
and explained by a fixed code), not trusted: a ``supported`` verdict must quote the
block its occurrence cites; a ``misattributed`` one must name another, existing
block and quote text found there but not in the cited block (text both contain
cannot tell them apart). Quotes are compared after normalizing whitespace and
quotes and must be at least two characters. ``claim_span`` is advisory: kept as
``response_span`` when it occurs in the response, never binding.

Verification costs at most one evidence check per graded occurrence: a second (or
fifteen-thousandth) verdict for an occurrence already seen is not verified at all,
since the reply is contradictory whatever it says, and each (block, quote) pair is
checked once. A looping model's reply therefore costs time linear in the reply plus
the context, not their product.

Finally the reply must cover the row: exactly one verdict per occurrence (two are a
contradiction), a verified verdict for every occurrence (a discarded one established
nothing), and a score in the band the verified verdicts allow.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from citemark._model.strictjson import (
    MAX_TEXT_BYTES,
    StrictJSONError,
    loads_strict,
    strip_single_fence,
)
from citemark._sources.render import normalize_quoted

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "CONTRADICTORY",
    "INCOMPLETE",
    "INVALID",
    "SCORE_CONTRADICTS",
    "ReplyCheck",
    "check_reply",
]

INVALID: Final = "invalid_judge_output"
CONTRADICTORY: Final = "contradictory_judge_verdicts"
INCOMPLETE: Final = "incomplete_judge_verdicts"
SCORE_CONTRADICTS: Final = "judge_score_contradicts_verdicts"

SUPPORTED: Final = "supported"
MISATTRIBUTED: Final = "misattributed"
UNSUPPORTED: Final = "unsupported"
_OUTCOMES: Final = (SUPPORTED, MISATTRIBUTED, UNSUPPORTED)
# The fields each outcome takes besides "occurrence", "outcome" and "claim_span".
_TAKES: Final = {
    SUPPORTED: frozenset({"context_span"}),
    MISATTRIBUTED: frozenset({"context_span", "supporting_marker"}),
    UNSUPPORTED: frozenset(),
}
_OPTIONAL_TEXT: Final = ("context_span", "supporting_marker", "claim_span")
_VERDICT_FIELDS: Final = frozenset({"occurrence", "outcome", *_OPTIONAL_TEXT})
_REPLY_FIELDS: Final = frozenset({"score", "explanation", "verdicts"})
_BANDS: Final = (0, 1, 2, 3)
_ALL_SUPPORTED_BANDS: Final = frozenset({2, 3})
_FAULT_BANDS: Final = frozenset({0, 1})
_MIN_QUOTE: Final = 2
_MAX_LISTED: Final = 5
_MAX_SHOWN: Final = 64
_MAX_DIGITS: Final = 12
_MISSING: Final = object()


class ReplyCheck(NamedTuple):
    """What a judge reply established, and the first rule it broke, if any."""

    reason: str | None
    """None for a usable reply; otherwise one of the four reply reason codes."""
    problem: str
    """For a rejected reply, what was wrong, in structural terms only."""
    score: int | None
    """The judge's band, when it is a valid one (kept even if the reply is rejected)."""
    rejected_score: str | None
    """An invalid score as JSON text (cut to 64 characters), for audit."""
    explanation: str | None
    """The judge's explanation when it is a string."""
    verdicts: list[dict[str, Any]]
    """The verdicts whose evidence verified."""
    discarded: list[dict[str, Any]]
    """The verdicts that were well-formed but did not verify, with why."""
    reply_type: str
    """The JSON type of the reply: "object", "array", ..., or "not JSON"."""


def check_reply(
    reply: str, graded: Sequence[str], blocks: Mapping[str, str], response: str
) -> ReplyCheck:
    """Validate a judge reply against the occurrences it was asked to grade.

    Args:
        reply: The judge's reply, untrusted.
        graded: The label each occurrence cites; occurrence ``k`` is ``graded[k-1]``.
        blocks: The citable blocks, label to text.
        response: The response as written (without tags), for ``claim_span``.

    Returns:
        The check. ``reason`` is, in order of precedence: `INVALID` (not strict JSON,
        not an object, a bad score, a malformed verdict, or a verdict for an
        occurrence that was not graded), `CONTRADICTORY` (two verdicts for one
        occurrence), `INCOMPLETE` (an occurrence without a verified verdict) and
        `SCORE_CONTRADICTS` (a band the verified verdicts do not allow).
    """
    try:
        value = loads_strict(strip_single_fence(reply))
    except StrictJSONError as exc:
        problem = (
            f"the reply is larger than {MAX_TEXT_BYTES} bytes"
            if exc.kind == "too large"
            else f"the reply is not strict JSON ({exc.kind})"
        )
        return ReplyCheck(INVALID, problem, None, None, None, [], [], "not JSON")
    if not isinstance(value, dict):
        kind = _json_type(value)
        return ReplyCheck(INVALID, "the reply is not a JSON object", None, None, None, [], [], kind)

    problems: list[str] = []
    if set(value) - _REPLY_FIELDS:
        problems.append("the reply has an unexpected field")
    explanation = value.get("explanation")
    score, rejected = _check_score(value.get("score", _MISSING), problems)
    well_formed = _well_formed_verdicts(value.get("verdicts", _MISSING), len(graded), problems)
    verdicts, discarded = _verify(well_formed, graded, blocks, response)
    explanation = explanation if isinstance(explanation, str) else None

    def result(reason: str | None, problem: str) -> ReplyCheck:
        return ReplyCheck(
            reason, problem, score, rejected, explanation, verdicts, discarded, "object"
        )

    if problems:
        if len(problems) > _MAX_LISTED:
            problems[_MAX_LISTED:] = [f"and {len(problems) - _MAX_LISTED} more"]
        return result(INVALID, "; ".join(problems))
    counts = Counter(v["occurrence"] for v in well_formed)
    repeated = sorted(number for number, count in counts.items() if count > 1)
    if repeated:
        return result(CONTRADICTORY, f"more than one verdict for occurrence {_numbers(repeated)}")
    covered = {v["occurrence"] for v in verdicts}
    missing = [k for k in range(1, len(graded) + 1) if k not in covered]
    if missing:
        return result(INCOMPLETE, f"no verified verdict for occurrence {_numbers(missing)}")
    allowed = (
        _ALL_SUPPORTED_BANDS if all(v["outcome"] == SUPPORTED for v in verdicts) else _FAULT_BANDS
    )
    if score not in allowed:
        bands = " or ".join(str(band) for band in sorted(allowed))
        return result(
            SCORE_CONTRADICTS, f"the score is {score}, but the verified verdicts allow {bands}"
        )
    return result(None, "")


def _check_score(raw: object, problems: list[str]) -> tuple[int | None, str | None]:
    if raw is _MISSING:
        problems.append("the reply has no 'score'")
        return None, None
    # bool first: True is an int, equals 1 and converts to 1.0, so no numeric test
    # catches it. NaN and infinities cannot arrive (strict JSON refuses them) and
    # would compare unequal to every band anyway.
    if isinstance(raw, bool) or not isinstance(raw, int | float) or raw not in _BANDS:
        problems.append("'score' must be one of the bands 0, 1, 2, 3")
        return None, _shown(raw)
    return int(raw), None


def _well_formed_verdicts(
    raw: object, occurrences: int, problems: list[str]
) -> list[dict[str, Any]]:
    if raw is _MISSING:
        problems.append("the reply has no 'verdicts'")
        return []
    if not isinstance(raw, list):
        problems.append("'verdicts' must be a list")
        return []
    kept: list[dict[str, Any]] = []
    for number, item in enumerate(raw, start=1):
        problem = _verdict_problem(item, occurrences)
        if problem is None:
            kept.append(item)
        else:
            problems.append(f"verdict {number} {problem}")
    return kept


def _verdict_problem(item: object, occurrences: int) -> str | None:
    if not isinstance(item, dict):
        return "is not an object"
    if set(item) - _VERDICT_FIELDS:
        return "has an unexpected field"
    occurrence = item.get("occurrence")
    # An int that is not a bool: True and 1.0 both equal 1.
    if isinstance(occurrence, bool) or not isinstance(occurrence, int):
        return "needs an integer 'occurrence'"
    # A verdict for an occurrence that was not graded answers a question nobody
    # asked; dropping it and grading the rest would keep a reply that ignored the
    # list it was given.
    if not 1 <= occurrence <= occurrences:
        return f"names occurrence {_numbers([occurrence])}, which was not graded"
    outcome = item.get("outcome")
    if outcome not in _OUTCOMES or not isinstance(outcome, str):
        return "needs an 'outcome' of supported, misattributed or unsupported"
    for field in _OPTIONAL_TEXT:
        # Presence, not .get(): "field": null is a field that is not a string.
        if field not in item:
            continue
        if not isinstance(item[field], str):
            return f"has a '{field}' that is not a string"
        if field != "claim_span" and field not in _TAKES[outcome]:
            return f"has a '{field}', which a {outcome} verdict does not take"
    return None


def _verify(
    well_formed: list[dict[str, Any]],
    graded: Sequence[str],
    blocks: Mapping[str, str],
    response: str,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    normalized: dict[str, str] = {}

    def block(label: str) -> str:
        if label not in normalized:
            normalized[label] = normalize_quoted(blocks[label])
        return normalized[label]

    checked: dict[tuple[str, str | None, str | None], str | None] = {}

    def evidence(span: str | None, label: str, cited: str | None) -> str | None:
        # Once per (quote, block, cited block): a reply repeating one quote costs one scan.
        key = (label, cited, span)
        if key not in checked:
            checked[key] = _evidence_problem(
                span, block(label), None if cited is None else block(cited)
            )
        return checked[key]

    response_text: list[str] = []
    kept: list[dict[str, Any]] = []
    discarded: list[dict[str, Any]] = []
    seen: set[int] = set()
    for item in well_formed:
        occurrence: int = item["occurrence"]  # in range: checked by _verdict_problem
        if occurrence in seen:
            # A surplus verdict: the reply is contradictory whatever it says (the
            # caller counts it from well_formed), so its evidence is never scanned.
            continue
        seen.add(occurrence)
        cited = graded[occurrence - 1]
        outcome: str = item["outcome"]
        record: dict[str, Any] = {"occurrence": occurrence, "cited": cited, "outcome": outcome}
        why = None
        if outcome == SUPPORTED:
            why = evidence(item.get("context_span"), cited, None)
        elif outcome == MISATTRIBUTED:
            marker = item.get("supporting_marker")
            if marker is None:
                why = "missing_supporting_marker"
            elif marker not in blocks:
                why = "unknown_supporting_block"
            elif marker == cited:
                why = "supporting_block_is_cited_block"
            else:
                why = evidence(item.get("context_span"), marker, cited)
                record["supporting_marker"] = marker
        if why is not None:
            discarded.append({"occurrence": occurrence, "why": why})
            continue
        if outcome != UNSUPPORTED:
            record["context_span"] = item["context_span"]
        claim = item.get("claim_span")
        if claim is not None:
            if not response_text:
                response_text.append(normalize_quoted(response))
            quoted = normalize_quoted(claim)
            if len(quoted) >= _MIN_QUOTE and quoted in response_text[0]:
                record["response_span"] = claim
        kept.append(record)
    return kept, discarded


def _evidence_problem(span: str | None, source: str, cited: str | None) -> str | None:
    """Why ``span`` does not prove what it should, or None when it does."""
    if span is None:
        return "missing_context_span"
    quoted = normalize_quoted(span)
    if len(quoted) < _MIN_QUOTE:
        return "context_span_too_short"
    if quoted not in source:
        return "context_span_not_in_cited_block" if cited is None else "context_span_not_in_block"
    if cited is not None and quoted in cited:
        return "context_span_also_in_cited_block"
    return None


def _shown(value: object) -> str:
    """A rejected value as JSON text, cut short; never a float that JSON cannot hold."""
    try:
        text = json.dumps(value, allow_nan=False)
    except (ValueError, TypeError, RecursionError):
        text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    return "number"


def _numbers(numbers: list[int]) -> str:
    # An occurrence number comes from the reply: a long one is described, not printed.
    shown = ", ".join(
        str(n) if len(str(n)) <= _MAX_DIGITS else f"<{len(str(n))}-digit number>"
        for n in numbers[:_MAX_LISTED]
    )
    if len(numbers) > _MAX_LISTED:
        shown += f" and {len(numbers) - _MAX_LISTED} more"
    return shown
