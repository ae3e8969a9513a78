"""The provider citations of a ``report.html`` row, highlighted like its markers.

A row recorded with a provider's raw response shows, next to its marker citations,
its provider-native citations: the answer again with each cited response span
marked (a verified citation styled as a resolved marker, a failing one as a
fabricated marker, one that could not be checked as an ambiguous one), each span
linking to the citation's entry, and that entry showing the outcome, the document
it names and the document's text with the cited span marked. The page's classes
are reused, so the style (and its Content-Security-Policy hash) is unchanged.
Everything untrusted (answer, documents, cited text, ids, URLs) is escaped.
"""

from __future__ import annotations

import html
import itertools
from typing import TYPE_CHECKING, Final

from citemark._errors import OffsetUnitError
from citemark._provider_rows import FAILING_OUTCOMES
from citemark._providers._offsets import Unit, to_code_points

if TYPE_CHECKING:
    from collections.abc import Sequence

    from citemark._providers._model import ProviderVerification, SentDocument
    from citemark._reports import CheckSummary
    from citemark._scorer.findings import ScoreFindings

__all__ = ["MAX_PROVIDER_CITATIONS", "provider_citations_html", "provider_summary_html"]

MAX_PROVIDER_CITATIONS: Final = 50
"""How many provider citations a row lists; rows.jsonl keeps them all."""
_CONTEXT_CHARS: Final = 240
_MAX_QUOTE_CHARS: Final = 2_000
_MAX_ANSWER_CHARS: Final = 200_000
_OUTCOME_TEXT: Final = {
    "verified": "verified: re-read from the document sent",
    "mismatch": "mismatch: the document sent does not hold what the provider says",
    "drifted": "drifted: the span runs past the end of the document sent",
    "unknown_document": "names a document that was not sent",
    "no_source_span": "not checked: the provider gives no span or text to compare",
    "unit_error": "unit error: an offset is not a character boundary in its stated unit",
    "unreadable": "not checked: the document's text was not given",
}


def _css(outcome: str) -> str:
    """The marker class a citation of ``outcome`` is drawn with."""
    if outcome in FAILING_OUTCOMES:
        return "fabricated"
    return "resolved" if outcome == "verified" else "ambiguous"


def provider_citations_html(
    prefix: str, answer: str, findings: ScoreFindings, documents: Sequence[SentDocument]
) -> str:
    """The row's provider-citation block, or ``""`` when it has none.

    Args:
        prefix: The row's id prefix (``row-<line>``).
        answer: The answer text (the provider response's text).
        findings: The row's findings; ``provider_citations`` is read.
        documents: The documents sent, to show each cited span in its document.

    Returns:
        The fragment; every untrusted string in it is escaped.
    """
    checked = findings.provider_citations
    if not checked:
        return ""
    by_id = {d.doc_id: d for d in documents}
    counts: dict[str, int] = {}
    for v in checked:
        counts[v.outcome] = counts.get(v.outcome, 0) + 1
    tally = ", ".join(f"{n} {_e(o)}" for o, n in counts.items())
    provider = _e(checked[0].citation.provider)
    items = [_entry(prefix, k, v, by_id) for k, v in enumerate(checked[:MAX_PROVIDER_CITATIONS], 1)]
    more = len(checked) - MAX_PROVIDER_CITATIONS
    noun = "citation" if len(checked) == 1 else "citations"
    if more > 0:
        items.append(f"<li>and {more} more (see rows.jsonl)</li>")
    return (
        f'<div class="provider-citations" id="{prefix}-pc">'
        f'<p class="src-title">{len(checked)} provider {noun} ({provider}): {tally}</p>'
        f'<div class="answer">{_answer(prefix, answer, checked)}</div>'
        f'<ul class="issues">{"".join(items)}</ul></div>'
    )


def _answer(prefix: str, answer: str, checked: Sequence[ProviderVerification]) -> str:
    """The answer with every response span marked, each piece linking to its first citation."""
    limit = min(len(answer), _MAX_ANSWER_CHARS)
    spans: list[tuple[int, int, int, str]] = []
    for k, v in enumerate(checked[:MAX_PROVIDER_CITATIONS], start=1):
        rs = v.citation.response_span
        if rs is None or rs.start is None or rs.end is None or rs.start >= rs.end:
            continue
        spans.append((min(rs.start, limit), min(rs.end, limit), k, v.outcome))
    cuts = sorted({0, limit} | {s for s, _, _, _ in spans} | {e for _, e, _, _ in spans})
    out: list[str] = []
    for a, b in itertools.pairwise(cuts):
        if a >= b:
            continue
        text = _e(answer[a:b])
        covering = [(k, o) for s, e, k, o in spans if s <= a and b <= e]
        if not covering:
            out.append(text)
            continue
        outcomes = {o for _, o in covering}
        worst = next((o for o in outcomes if o in FAILING_OUTCOMES), None)
        shown = worst or ("verified" if "verified" in outcomes else covering[0][1])
        first = next(k for k, o in covering if o == shown)
        numbers = ", ".join(str(k) for k, _ in covering)
        out.append(
            f'<a class="marker {_css(shown)}" href="#{prefix}-pc-{first}" '
            f'title="provider citations {numbers}: {_e(shown)}">{text}</a>'
        )
    if limit < len(answer):
        out.append(
            f'<span class="truncated">&hellip; {len(answer) - limit} more characters '
            "not shown</span>"
        )
    return "".join(out)


def _entry(prefix: str, k: int, v: ProviderVerification, by_id: dict[str, SentDocument]) -> str:
    c = v.citation
    outcome = v.outcome
    css = _css(outcome)
    if c.doc_id is None:
        named = f"names <code>{_e(str(c.document_ref))}</code>, which was not sent"
    else:
        named = f"document <code>{_e(c.doc_id)}</code>"
    where = ""
    span = c.source_span
    if span is not None:
        incl = "inclusive" if span.end_inclusive else "exclusive"
        where = (
            f" &middot; {span.kind} {span.start}&ndash;{span.end} "
            f"({_e(str(span.unit))}, from {span.base}, end {incl})"
        )
    head = (
        f'<li id="{prefix}-pc-{k}" class="{css}"><code>{k}</code> '
        f"{_e(c.location)} &middot; {named}{where} &middot; "
        f'<a class="marker {css}" href="#{prefix}-pc-{k}-doc" title="{_e(v.detail)}">'
        f"{_e(outcome)}</a> {_OUTCOME_TEXT.get(outcome, '')} (<code>{_e(v.detail)}</code>)"
    )
    parts = [head]
    document = by_id.get(c.doc_id) if c.doc_id is not None else None
    excerpt = _excerpt(v, document)
    if excerpt:
        parts.append(f'<div class="span" id="{prefix}-pc-{k}-doc">{excerpt}</div>')
    quoted = c.cited_text if c.cited_text is not None else " ".join(c.retrieved_texts) or None
    if quoted is not None and outcome != "verified":
        parts.append(
            f'<div class="span">the provider says it cited: <q>{_e(_clip(quoted))}</q></div>'
        )
    if c.url is not None:
        parts.append(f'<div class="src-meta">url {_e(c.url)}</div>')
    parts.append("</li>")
    return "".join(parts)


def _excerpt(v: ProviderVerification, document: SentDocument | None) -> str:
    """The document's text around the cited span, the span marked; ``""`` when unknown."""
    c = v.citation
    span = c.source_span
    if document is None or document.text is None:
        return ""
    text = document.text
    if span is None or span.kind != "chars" or v.outcome in ("drifted", "unit_error"):
        if v.outcome == "verified" and c.retrieved_texts:
            at = text.find(c.retrieved_texts[0])
            if at >= 0:
                return _marked(text, at, at + len(c.retrieved_texts[0]))
        return ""
    unit: Unit = "code_point"
    if span.unit == "utf16" or span.unit == "utf8":  # noqa: PLR1714 - narrows the Literal
        unit = span.unit
    try:
        start = to_code_points(text, span.first, unit)
        end = to_code_points(text, span.stop, unit)
    except OffsetUnitError:
        return ""
    return _marked(text, start, end) if 0 <= start <= end <= len(text) else ""


def _marked(text: str, start: int, end: int) -> str:
    head = max(0, start - _CONTEXT_CHARS)
    tail = min(len(text), end + _CONTEXT_CHARS)
    before = ("&hellip;" if head else "") + _e(text[head:start])
    after = _e(text[end:tail]) + ("&hellip;" if tail < len(text) else "")
    return f"{before}<mark>{_e(_clip(text[start:end]))}</mark>{after}"


def _clip(text: str) -> str:
    if len(text) <= _MAX_QUOTE_CHARS:
        return text
    return text[:_MAX_QUOTE_CHARS] + f"... ({len(text) - _MAX_QUOTE_CHARS} more characters)"


def _e(text: str) -> str:
    r"""Escape text for HTML; a lone surrogate (not valid in UTF-8) shows as ``\ud800``."""
    return html.escape(text.encode("utf-8", "backslashreplace").decode("utf-8"), quote=True)


def provider_summary_html(summary: CheckSummary) -> str:
    """The run's provider citations by outcome; ``""`` when no row had any."""
    if not summary.provider_citations:
        return ""
    listed = " &middot; ".join(
        f"<code>{_e(outcome)}</code> {count}"
        for outcome, count in summary.provider_citations.items()
    )
    rows = summary.rows_with_provider_citations
    return (
        f'<p class="judge-calls">provider citations in {rows} '
        f"{'row' if rows == 1 else 'rows'}: {listed}</p>"
    )
