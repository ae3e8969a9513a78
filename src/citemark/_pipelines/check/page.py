"""``report.html`` at scale: rows as data, each distinct text once, rendered a page at a time.

The page's header (counts, failure causes, groups, filters) is HTML. The rows are not:
they are one JSON document in a ``<script type="application/json">`` data block (never
executed; the Content-Security-Policy still allows only the page's own script and
style, by hash), and the page's script builds a hundred rows at a time from it, with a
pager, so a page of 10,000 rows opens as fast as one of a hundred. Each distinct
source text (and source description) is stored once in a table the rows refer to by
index: a corpus cited by every row costs its bytes once, not once per row.

The data is built from the scorer's findings exactly as the static rows were
(`citemark._pipelines.check.html` places every marker), and every untrusted string reaches the
page's DOM through ``textContent``, never as markup: an answer holding ``<img>`` is
text. In the data block ``<``, ``>`` and ``&`` are written as JSON escapes, so no text
can close the block. Without JavaScript the header and counts are shown, and a notice
says the rows need the script (``rows.jsonl`` holds every row in full).

A row is a JSON array: ``[line, id, outcome, question, answer, explanation, codes,
issues, sources, notes, source_title, more, group, title, support]``. ``outcome`` indexes
`OUTCOMES` (without a judge, the row's headline category in its place: `page_outcome`,
shown in the words of ``names``); ``title`` is the row's title
(`citemark._pipelines.check.titles.row_title`: its readable id, else its question cut short);
``answer`` is a list of plain strings and ``[kind, target, text]`` markers (kind 0
resolved, target the source's number; 1 fabricated and 2 ambiguous, target the
issue's number; 3 ignored, target the explanation), and ``[4, k, text, ok]`` for
text that provider citation ``k`` covers (``ok`` 1 when it verified, else 0; the
row's note on that citation is its link target); ``sources`` is flat triples
``number, description, text`` (a cited source's number written as ``~number``, that is
``-number - 1``, so that a cited source 0 is told from an uncited one); ``notes`` is
flat pairs ``class, text``; ``group`` is the row's ``--group-by`` group (the name the
summary counts it under), or null without ``--group-by``. Every other string (the
question, the explanation, codes, descriptions, source texts, the group) is an index
into the text table, so a question asked of several pipelines is stored once too.
With ``--group-by``, a menu beside the outcome filters shows one group's rows.

With ``check --verifier`` a resolved marker is ``[0, k, text, verdict]``: its source's
advisory verdict alone (0 supported, 1 not supported, 2 unjudged, 3 not asked), and
``support`` is ``[recall, precision, reattributed]``, ``reattributed`` at most 20
``[sentence, source, [other sources]]``: a citation its source does not support whose
claim other given sources do (numbers only; the claim is the answer's own text). The
header names the verifier's whole identity, beside the run's support figures. Without
a verifier ``support`` is null and markers have three elements.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import itertools
import json
from typing import TYPE_CHECKING, Final, NamedTuple

from citemark._contract.artifacts import write_report_atomically
from citemark._contract.reasons import REASONS
from citemark._judging.assertions import citation_outcome
from citemark._judging.scorer.labels import classify_labelled
from citemark._judging.scorer.sentences import coverage_words
from citemark._pipelines.check.groups import GroupNames
from citemark._pipelines.check.html import (
    _IGNORED_WHY,
    _MAX_ANSWER_CHARS,
    _MAX_ISSUES,
    _MAX_SOURCE_CHARS,
    _STYLE,
    HTML_NAME,
    MAX_PROVIDER_CITATIONS,
    MAX_UNCITED_SOURCES,
    OUTCOMES,
    _causes_html,
    _counts_html,
    _csp_hash,
    _e,
    _finding_codes_list,
    _groups_html,
    _issue_message,
    _judge_calls,
    _pieces,
    provider_summary_html,
    tier,
)
from citemark._pipelines.check.titles import row_title
from citemark._pipelines.eval_report import (
    CheckSummary,
    counted,
    headline_text,
    judge_text,
    unchecked_scope_text,
)
from citemark._pipelines.readers.citemark_rows import CheckRow

if TYPE_CHECKING:
    import re
    from collections.abc import Mapping, Sequence
    from datetime import datetime

    from pydantic import JsonValue

    from citemark._contract.models import Source
    from citemark._judging.scorer.findings import ScoreFindings
    from citemark._judging.scorer.result import CitationScore
    from citemark._pipelines.check.protocol import CheckedRow, RunFacts, SinkOptions
    from citemark._pipelines.eval_report import GroupCounts

__all__ = ["PAGE_ROWS", "HtmlSink", "TextTable", "render_page", "row_record"]

_SCRIPT: Final = (
    importlib.resources.files("citemark._pipelines.check") / "assets" / "page.js"
).read_text(encoding="utf-8")
PAGE_ROWS: Final = 100
"""How many rows the page's script builds at a time."""
_KINDS: Final = {"resolved": 0, "fabricated": 1, "ambiguous": 2}
_FILTER_NAMES: Final = {"failed": "failed", "unassessed": "un-assessed", "passed": "passed"}


def _t(text: str) -> str:
    r"""Text as the page shows it: a lone surrogate (not valid in UTF-8) as ``\ud800``."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class TextTable:
    """Distinct strings, each stored once, by index."""

    def __init__(self) -> None:
        self._index: dict[str, int] = {}
        self.texts: list[str] = []

    def ref(self, text: str) -> int:
        """The index of ``text``, adding it the first time."""
        at = self._index.get(text)
        if at is None:
            at = len(self.texts)
            self._index[text] = at
            self.texts.append(text)
        return at


def row_record(  # noqa: PLR0913, PLR0915 - one pass over the row, as the checker read it
    *,
    line: int,
    row_id: str | None,
    question: str,
    answer: str,
    sources: Sequence[Source] | str,
    score: CitationScore,
    label_pattern: re.Pattern[str],
    citation_pattern: re.Pattern[str],
    table: TextTable,
    group: str | None = None,
    judged: bool = True,
    opaque_id: bool = False,
) -> list[JsonValue]:
    """One scored row as the page's data (see the module docstring for its shape).

    ``judged`` says a judge ran; without one the row's outcome is its headline
    category (`page_outcome`).
    """
    findings = score.findings
    if isinstance(sources, str):
        found = classify_labelled("", sources, label_pattern, citation_pattern)
        entries = [
            (k, found.headers[label], text)
            for k, (label, text) in enumerate(found.blocks.items(), start=1)
        ]
        excluded = list(found.excluded)
        numbers = {label: k for k, label in enumerate(found.blocks, start=1)}
        kind = "context block"
    else:
        # A 0-based row (``--index-base 0`` or its own ``index_base``) shows its
        # sources numbered from 0, as the answer cites them.
        base = 1 if findings.index_base is None else findings.index_base
        entries = []
        for number, source in enumerate(sources, start=base):
            if not source.text.strip():
                continue
            where = [f"[{number}] {source.doc_id}"]
            if source.chunk_id is not None:
                where.append(source.chunk_id)
            if source.start is not None and source.end is not None:
                where.append(f"{source.start}\u2013{source.end}")
            if source.uri is not None:
                where.append(source.uri)
            entries.append((number, " \u00b7 ".join(where), source.text))
        excluded = [
            (str(k), "empty") for k, s in enumerate(sources, start=base) if not s.text.strip()
        ]
        numbers = {str(k): k for k, s in enumerate(sources, start=base) if s.text.strip()}
        kind = "source"
    given = len(numbers) + len(excluded)
    numbered = not isinstance(sources, str)
    pieces: list[JsonValue] = []
    issues: list[JsonValue] = []
    cited: set[int] = set()
    cursor = 0
    limit = min(len(answer), _MAX_ANSWER_CHARS)
    spans = _provider_spans(findings, limit)
    support = _row_support(findings.support)
    for piece in _pieces(answer, sources, findings):
        if piece.start < cursor or piece.end > limit:
            continue
        if piece.start > cursor:
            pieces.extend(_plain(answer, cursor, piece.start, spans))
        text = _t(answer[piece.start : piece.end])
        k = numbers.get(piece.label)
        if k is None and piece.label.isdigit():
            # int() refuses more than 4,300 digits: a long label is looked up as written
            # (issue 38, item 1); no source is numbered with 19 digits.
            digits = piece.label.lstrip("0") or "0"
            k = numbers.get(str(int(digits)) if len(digits) < 19 else digits)  # noqa: PLR2004
        if piece.kind == "resolved" and k is not None:
            cited.add(k)
            verdict = _marker_verdict(support, piece.start, k)
            pieces.append([0, k, text] if verdict is None else [0, k, text, verdict])
        elif piece.kind in ("fabricated", "ambiguous"):
            message = _issue_message(piece, given, numbered=numbered)
            issues.append([_t(piece.label), piece.kind, table.ref(message)])
            number = len(issues)
            pieces.append([_KINDS[piece.kind], number if number <= _MAX_ISSUES else 0, text])
        else:
            pieces.append([3, table.ref(_IGNORED_WHY.get(piece.why or "", "not a citation")), text])
        cursor = piece.end
    if limit > cursor:
        pieces.extend(_plain(answer, cursor, limit, spans))
    # A source a verified provider citation names is cited, as a resolved marker's is.
    cited.update(_provider_cited(findings, sources, numbers))
    notes = _notes(findings, len(answer), limit) + _provider_notes(findings, answer)
    shown: list[JsonValue] = []
    others = hidden = 0
    for k, meta, text in entries:
        if k not in cited:
            others += 1
            if others > MAX_UNCITED_SOURCES:
                hidden += 1
                continue
        clipped = text if len(text) <= _MAX_SOURCE_CHARS else text[:_MAX_SOURCE_CHARS] + "\u2026"
        # Flat triples; a cited source's number is bit-inverted (~0 is -1).
        shown.extend((~k if k in cited else k, table.ref(_t(meta)), table.ref(_t(clipped))))
    more: list[str] = []
    if hidden:
        more.append(f"and {hidden} more not shown")
    if excluded:
        listed = ", ".join(f"{_t(label)} ({why})" for label, why in excluded[:MAX_UNCITED_SOURCES])
        if len(excluded) > MAX_UNCITED_SOURCES:
            listed += f" and {len(excluded) - MAX_UNCITED_SOURCES} more"
        more.append(f"Not citable: {listed}")
    # Everything but the question and the answer recurs from row to row (reason
    # sentences, codes, notes): each distinct string is stored once, by index.
    return [
        line,
        None if row_id is None else _t(row_id),
        OUTCOMES.index(page_outcome(score, judged=judged)),
        table.ref(_t(question)) if question else None,
        pieces,
        table.ref(_t(score.explanation)),
        [table.ref(_t(code)) for code in _finding_codes_list(score)],
        issues[:_MAX_ISSUES],
        shown,
        [ref for cls, text in notes for ref in (table.ref(cls), table.ref(text))],
        table.ref(f"{counted(len(entries), kind)}, {len(cited)} cited"),
        [table.ref(text) for text in more],
        None if group is None else table.ref(group),
        table.ref(row_title(row_id, question, line, opaque=opaque_id)),
        None if support is None else support.record(),
    ]


def _support_html(summary: CheckSummary) -> str:
    """The verifier's identity, and its figures when the scope note does not give them."""
    support = summary.support
    if support is None:
        return ""
    who = " ".join(support.verifier.get(key, "?") for key in ("kind", "name", "version", "digest"))
    figures = f"{support.text()}. " if summary.judge is not None else ""
    return (
        f'<p class="facts support">{_e(figures)}Verifier: <code>{_e(who)}</code>; each '
        "resolved marker shows its source's verdict alone (advisory: it fails no row).</p>"
    )


# The support verdict of a resolved marker, as the page's script reads it (SUPPORT in page.js).
_VERDICTS: Final = ("entailed", "not_entailed", "unjudged", "not_asked")
# At most this many re-attributed citations per row, and other sources per citation.
_MAX_REATTRIBUTED: Final = 20
_MAX_OTHERS: Final = 10


class _Sentence(NamedTuple):
    start: int
    end: int
    number: int
    # Each citation's source number and verdict alone, as the verifier judged it.
    verdicts: tuple[tuple[int, int], ...]
    # Each citation not supported alone whose re-attribution found others that are.
    others: tuple[tuple[int, tuple[int, ...]], ...]


class _RowSupport(NamedTuple):
    recall: float | None
    precision: float | None
    sentences: tuple[_Sentence, ...]

    def record(self) -> list[JsonValue]:
        """``[recall, precision, [[sentence, source, [other sources]], ...]]`` (bounded)."""
        moved: list[JsonValue] = []
        for sentence in self.sentences:
            for source, others in sentence.others:
                if len(moved) < _MAX_REATTRIBUTED:
                    moved.append([sentence.number + 1, source, list(others[:_MAX_OTHERS])])
        return [self.recall, self.precision, moved]


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _row_support(support: dict[str, JsonValue] | None) -> _RowSupport | None:
    """The row's support verdicts (``details.support``) as the page draws them; None if none."""
    if not isinstance(support, dict) or not isinstance(support.get("sentences"), list):
        return None
    sentences: list[_Sentence] = []
    for raw in support["sentences"]:  # type: ignore[union-attr]
        if not isinstance(raw, dict):
            continue
        start, end, index = raw.get("start"), raw.get("end"), raw.get("index")
        if not (isinstance(start, int) and isinstance(end, int) and isinstance(index, int)):
            continue
        verdicts: list[tuple[int, int]] = []
        others: list[tuple[int, tuple[int, ...]]] = []
        citations = raw.get("citations")
        for citation in citations if isinstance(citations, list) else []:
            if not isinstance(citation, dict):
                continue
            source, alone = citation.get("source"), citation.get("alone")
            if not isinstance(source, int) or alone not in _VERDICTS:
                continue
            verdicts.append((source, _VERDICTS.index(str(alone))))
            moved = citation.get("reattribution")
            found = moved.get("supported_by_other_source") if isinstance(moved, dict) else None
            if isinstance(found, list) and found:
                others.append((source, tuple(k for k in found if isinstance(k, int))))
        sentences.append(_Sentence(start, end, index, tuple(verdicts), tuple(others)))
    return _RowSupport(
        _number(support.get("recall")), _number(support.get("precision")), tuple(sentences)
    )


def _marker_verdict(support: _RowSupport | None, at: int, source: int) -> int | None:
    """The verdict alone of the citation of ``source`` in the sentence holding offset ``at``."""
    if support is None:
        return None
    for sentence in support.sentences:
        if sentence.start <= at < sentence.end or (at == sentence.end and at > sentence.start):
            for cited, verdict in sentence.verdicts:
                if cited == source:
                    return verdict
            return None
    return None


def page_outcome(score: CitationScore, *, judged: bool) -> str:
    """Which of the page's three outcomes a row is listed under.

    With a judge, the scorer's outcome (``failed``, ``unassessed``, ``passed``).
    Without one, its headline category (`citemark._judging.assertions.citation_outcome`),
    in the same three places: a violation, could not be checked, cites only sources
    it was given; so no filter or tile counts a row the headline counts elsewhere.
    """
    if judged:
        return score.outcome
    return _HEADLINE_PLACES[citation_outcome(score.findings)]


# Without a judge: each headline category's place among the page's outcomes.
_HEADLINE_PLACES: Final = {
    "violation": "failed",
    "unchecked": "unassessed",
    "cited": "passed",
    "cites_nothing": "passed",
}


def outcome_names(summary: CheckSummary) -> dict[str, str]:
    """The words for the page's three outcomes: the judge era's, or the headline's."""
    if summary.judge is not None:
        return dict(_FILTER_NAMES)
    return dict(_HEADLINE_NAMES)


_HEADLINE_NAMES: Final = {
    "failed": "violation",
    "unassessed": "could not be checked",
    "passed": "cites only sources it was given",
}


def _provider_cited(
    findings: ScoreFindings, sources: Sequence[Source] | str, numbers: Mapping[str, int]
) -> set[int]:
    """The numbers of the sources that a verified provider citation names, by doc_id."""
    verified = {v.citation.doc_id for v in findings.provider_citations if v.ok}
    if not verified or isinstance(sources, str):
        return set()
    base = 1 if findings.index_base is None else findings.index_base
    return {
        numbers[str(k)]
        for k, source in enumerate(sources, start=base)
        if source.doc_id in verified and str(k) in numbers
    }


def _provider_spans(findings: ScoreFindings, limit: int) -> list[tuple[int, int, int, bool]]:
    """The answer text each listed provider citation covers: ``(start, end, k, ok)``.

    Only the citations the row lists (the first `MAX_PROVIDER_CITATIONS`) with a
    converted response span are highlighted, clipped to the shown part of the answer.
    """
    spans = []
    for k, v in enumerate(findings.provider_citations[:MAX_PROVIDER_CITATIONS], start=1):
        at = v.citation.response_span
        if at is None or at.start is None or at.end is None:
            continue
        start, end = max(at.start, 0), min(at.end, limit)
        if start < end:
            spans.append((start, end, k, v.ok))
    return spans


def _plain(
    answer: str, start: int, end: int, spans: Sequence[tuple[int, int, int, bool]]
) -> list[JsonValue]:
    """``answer[start:end]`` as the page's pieces, provider-covered text marked.

    Plain text is a string; text that provider citation ``k`` covers is
    ``[4, k, text, ok]`` (the first of several that overlap; ``ok`` is 1 only when
    every covering citation verified).
    """
    inside = [span for span in spans if span[0] < end and span[1] > start]
    if not inside:
        return [_t(answer[start:end])]
    cuts = sorted({start, end}.union(*((max(a, start), min(b, end)) for a, b, _, _ in inside)))
    out: list[JsonValue] = []
    for left, right in itertools.pairwise(cuts):
        covering = [span for span in inside if span[0] <= left and span[1] >= right]
        text = _t(answer[left:right])
        if covering:
            out.append([4, covering[0][2], text, int(all(span[3] for span in covering))])
        else:
            out.append(text)
    return out


def _notes(findings: ScoreFindings, length: int, limit: int) -> list[tuple[str, str]]:
    """The lines under a row's answer, as ``(class, text)``: coverage, reference list..."""
    notes: list[tuple[str, str]] = []
    if limit < length:
        notes.append(("truncated", f"\u2026 {length - limit} more characters not shown"))
    coverage = findings.sentence_coverage
    if coverage is not None and coverage.sentences:
        notes.append(
            (
                "coverage",
                coverage_words(coverage.cited_sentences, coverage.sentences),
            )
        )
    refs = findings.reference_list
    if refs is not None:
        notes.append(
            (
                "reference-list",
                (
                    f"reference list of {refs.entries} "
                    f"{'entry' if refs.entries == 1 else 'entries'}: range-checked, not graded, "
                    "not counted in coverage"
                ),
            )
        )
    if findings.unverifiable_sources:
        listed = ", ".join(_t(label) for label in findings.unverifiable_sources)
        notes.append(
            (
                "unverifiable",
                f"Unverifiable sources (no text, or only a URL; never graded): {listed}",
            )
        )
    if findings.unrecognized:
        kinds = ", ".join(sorted({t.kind for t in findings.unrecognized}))
        many = len(findings.unrecognized)
        tokens = counted(many, "citation-like token")
        verb = "is not a marker" if many == 1 else "are not markers"
        notes.append(("unrecognized", f"{tokens} that {verb}: {kinds}"))
    return notes


def _provider_notes(findings: ScoreFindings, answer: str) -> list[tuple[str, str]]:
    """One line per provider-native citation (at most `MAX_PROVIDER_CITATIONS`).

    Its verification outcome, where it points and, for the answer, the text it
    covers; a failing one is styled as a failure. The page's script writes the text
    with ``textContent``, so nothing here is markup.
    """
    notes: list[tuple[str, str]] = []
    checked = findings.provider_citations
    for k, v in enumerate(checked[:MAX_PROVIDER_CITATIONS], start=1):
        c = v.citation
        named = f"document {c.doc_id}" if c.doc_id is not None else "a document that was not sent"
        line = f"provider citation {k}: {v.outcome} ({v.detail}) \u00b7 {c.location} \u00b7 {named}"
        span = c.source_span
        if span is not None:
            line += f" \u00b7 {span.kind} {span.start}-{span.end} ({span.unit}, from {span.base})"
        at = c.response_span
        if at is not None and at.start is not None and at.end is not None:
            line += f" \u00b7 cites: \u201c{_t(answer[at.start : at.end])}\u201d"
        notes.append(("provider-citation " + ("resolved" if v.ok else "fabricated"), line))
    if len(checked) > MAX_PROVIDER_CITATIONS:
        more = len(checked) - MAX_PROVIDER_CITATIONS
        notes.append(("truncated", f"and {more} more provider citations (rows.jsonl has all)"))
    return notes


def _data_block(value: object) -> str:
    """JSON that cannot end its ``<script>`` element, nor open a comment or markup."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return (
        text.replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def render_page(  # noqa: PLR0913 - the page's parts, each computed once by the checker
    *,
    summary: CheckSummary,
    rows: Sequence[list[JsonValue]],
    texts: Sequence[str],
    shown: Mapping[str, int],
    shown_groups: Mapping[str, int] | None = None,
    input_name: str,
    input_sha256: str,
    created_at: datetime,
    version: str,
    run_id: str = "",
) -> str:
    """The whole page: the header as HTML, the rows as data for the page's script.

    A ``run_id`` (a check's, see ``citemark._pipelines.check.output_set``) goes in a
    ``<meta name="citemark-run-id">`` element.
    """
    totals = _totals(summary)[""]
    names = outcome_names(summary)
    judge = (
        f"{_e(summary.judge.provider)} / {_e(summary.judge.model)} "
        f"(prompt {summary.judge.prompt_sha256[:12]}&hellip;)"
        if summary.judge is not None
        else "none: deterministic findings only"
    )
    cards = _cards(summary)
    counts = _counts_html(
        (key, label, cards[""][key])
        for key, label in _CARDS + (_JUDGE_CARDS if summary.judge is not None else ())
    )
    filters = "".join(
        f'<label class="filter {o}"><input type="checkbox" name="outcome" value="{o}" checked> '
        f'{names[o]} <span data-shown="{o}">({shown.get(o, 0)} shown of {totals[o]})'
        "</span></label>"
        for o in OUTCOMES
    )
    if summary.group_by is not None:
        seen = shown_groups or {}
        options = "".join(
            f'<option value="{_e(name)}">{_e(name)} ({seen.get(name, 0)} shown of '
            f"{counts.rows})</option>"
            for name, counts in summary.groups.items()
        )
        filters += (
            f'<label class="filter group">{_e(summary.group_by)} <select id="group" '
            f'name="group"><option value="" selected>every group</option>{options}'
            "</select></label>"
        )
    on_page = sum(shown.get(o, 0) for o in OUTCOMES)
    left_out = sum(totals.values()) - on_page
    order = (
        "Rows are listed failed first, then un-assessed with a reason other than no_judge, "
        f"then the rest, each in input order, {PAGE_ROWS} at a time."
        if summary.judge is not None
        else "Rows are listed with a violation first, then those that could not be checked, "
        f"then the rest, each in input order, {PAGE_ROWS} at a time."
    )
    notice = (
        f'<p class="left-out">This page shows {on_page} of {summary.rows} rows; '
        f"{left_out} were left out. rows.jsonl holds every row. {order}</p>"
        if left_out > 0
        else f'<p class="order">{order}</p>'
    )
    reasons = "".join(
        f"<li><code>{_e(code)}</code> {count} &middot; {_e(REASONS.get(code, code))}</li>"
        for code, count in summary.reasons.items()
    )
    malformed = ""
    if summary.malformed:
        items = "".join(
            f'<li id="line-{m.line}">line {m.line}: {_e(m.reason)}</li>'
            for m in summary.malformed_lines
        )
        extra = summary.malformed - len(summary.malformed_lines)
        tail = f"<li>and {extra} more (see rows.jsonl)</li>" if extra > 0 else ""
        malformed = (
            '<section class="malformed"><h2>Lines that could not be read as a row</h2>'
            f"<ul>{items}{tail}</ul></section>"
        )
    policy = (
        "default-src 'none'; base-uri 'none'; form-action 'none'; img-src 'none'; "
        f"style-src '{_csp_hash(_STYLE)}'; script-src '{_csp_hash(_SCRIPT)}'"
    )
    data = _data_block(
        {
            "page": PAGE_ROWS,
            "texts": list(texts),
            "rows": list(rows),
            "cards": cards,
            "totals": _totals(summary),
            "names": names,
        }
    )
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            *([f'<meta name="citemark-run-id" content="{_e(run_id)}">'] if run_id else []),
            f'<meta http-equiv="Content-Security-Policy" content="{policy}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>citemark check: {_e(input_name)}</title>",
            f"<style>{_STYLE}</style></head><body>",
            '<header class="top"><h1>citemark check</h1>',
            (
                f'<p class="meta">input <code>{_e(input_name)}</code> &middot; sha256 '
                f"<code>{input_sha256}</code><br>judge: {judge} &middot; citemark "
                f"{_e(version)} &middot; {created_at.isoformat(timespec='seconds')}</p>"
            ),
            f'<p class="facts headline">{_e(headline_text(summary))}.</p>',
            f'<p class="facts judge">{_e(judge_text(summary))}.</p>',
            *(
                [f'<p class="facts scope-note">{_e(scope)}.</p>']
                if (scope := unchecked_scope_text(summary)) is not None
                else []
            ),
            _support_html(summary),
            '<p class="scope" id="scope">Counts of every row.</p>',
            f'<dl class="counts">{counts}</dl>',
            f'<ul class="reasons">{reasons}</ul>' if reasons else "",
            _causes_html(summary),
            _groups_html(summary),
            provider_summary_html(summary),
            _judge_calls(summary),
            (
                '<p class="judge-note">A verdict is advice: only findings made in code can '
                "fail a row.</p>"
            ),
            f'<form id="filters">{filters}</form>',
            notice,
            '<nav class="strip" id="strip" aria-label="rows at a glance"></nav>',
            '<nav class="pager" id="pager"></nav>',
            "</header>",
            malformed,
            (
                '<noscript><p class="noscript">The rows of this page are drawn by its '
                "script, which is off: the counts above are complete, and rows.jsonl "
                "holds every row in full.</p></noscript>"
            ),
            '<main id="rows"></main>',
            f'<script type="application/json" id="data">{data}</script>',
            f"<script>{_SCRIPT}</script>",
            "</body></html>",
            "",
        ]
    )


# The count cards, in order: (data key, label). Each follows ``#group=`` (see page.js).
# The headline's words, the same as the terminal's
# (`citemark._pipelines.eval_report.headline_text`).
_CARDS: Final = (
    ("rows", "rows"),
    ("given", "cite only sources they were given"),
    ("nothing", "of which cite nothing"),
    ("violations", "violations"),
    ("unchecked", "could not be checked"),
    ("unrecognized", "unrecognized citation-like text"),
    ("malformed", "unreadable lines"),
)
# Only when a judge ran: the outcomes its advice decided, labelled as advice.
_JUDGE_CARDS: Final = (
    ("failed", "failed (violation, or judge: unfaithful)"),
    ("unassessed", "un-assessed"),
    ("passed", "passed (judge: faithful, advisory)"),
)


def _cards(summary: CheckSummary) -> dict[str, dict[str, int]]:
    """Each count card's value: for every row (key ``""``) and for each group.

    A group's cards leave out the unreadable lines, which belong to no group.
    """
    headline = summary.headline
    cards = {
        "": {
            "rows": summary.rows,
            "given": headline.cite_only_given_sources,
            "nothing": headline.cite_nothing,
            "violations": headline.violations,
            "unchecked": headline.unchecked,
            "unrecognized": summary.rows_with_unrecognized,
            "malformed": summary.malformed,
            "failed": summary.failed,
            "unassessed": summary.unassessed,
            "passed": summary.passed,
        }
    }
    for name, group in summary.groups.items():
        cards[name] = {
            "rows": group.rows,
            "given": group.cite_only_given_sources,
            "nothing": group.cite_nothing,
            "violations": group.deterministic_failures,
            "unchecked": group.unchecked,
            "unrecognized": group.rows_with_unrecognized,
            "failed": group.failed,
            "unassessed": group.unassessed,
            "passed": group.passed,
        }
    return cards


def _totals(summary: CheckSummary) -> dict[str, dict[str, int]]:
    """Rows per page outcome (`page_outcome`), for every row (key ``""``) and each group.

    The filters' totals: the judge era's outcomes when a judge ran, else the
    headline's categories in their places.
    """
    judged = summary.judge is not None

    def counts(rows: CheckSummary | GroupCounts) -> dict[str, int]:
        if judged:
            return {"failed": rows.failed, "unassessed": rows.unassessed, "passed": rows.passed}
        if isinstance(rows, CheckSummary):
            head = rows.headline
            return {
                "failed": head.violations,
                "unassessed": head.unchecked,
                "passed": head.cite_only_given_sources,
            }
        return {
            "failed": rows.deterministic_failures,
            "unassessed": rows.unchecked,
            "passed": rows.cite_only_given_sources,
        }

    totals = {"": counts(summary)}
    totals.update((name, counts(group)) for name, group in summary.groups.items())
    return totals


class HtmlSink:
    """``report.html``: at most ``html_rows`` rows, the most telling first, as page data.

    Rows fall in three tiers: failed; un-assessed for a reason other than
    ``no_judge``; everything else. A row enters while there is room; when the page is
    full, a row of a better tier displaces the latest row of the worst tier below it,
    so each tier keeps its earliest rows. Distinct source texts are stored once (a
    displaced row's texts may stay in the table; the table never outgrows the kept
    rows' sources by more than the rows displaced).
    """

    name = HTML_NAME

    def __init__(self, options: SinkOptions, groups: GroupNames | None = None) -> None:
        """Build the sink; ``groups`` names rows by group when the run knows them already.

        The Ray engine feeds the page only the rows it shows, once every
        shard's groups are counted: it passes the summary's names (`GroupNames`).
        """
        self.limit = max(options.html_rows, 0)
        self.tiers: tuple[list[tuple[str | None, CheckRow, CitationScore]], ...] = ([], [], [])
        self.count = 0
        self.table = TextTable()
        self._out = options.out_dir / HTML_NAME
        self._label_pattern = options.label_pattern
        self._citation_pattern = options.citation_pattern
        # Rows are named by group as the summary names them: the same bounded names,
        # assigned in the same input order.
        self._groups = None if options.group_by is None else groups or GroupNames()

    def add(self, row: CheckedRow) -> None:
        """Record the row if the page has room for its tier."""
        item, score = row
        if score is None or not isinstance(item, CheckRow):
            return  # malformed lines are listed from the summary
        group = None
        if self._groups is not None:
            group = self._groups.group_of(item.group)
        row_tier = tier(score)
        if self.count >= self.limit:
            worse = next((t for t in (2, 1) if t > row_tier and self.tiers[t]), None)
            if worse is None:
                return
            self.tiers[worse].pop()
            self.count -= 1
        self.tiers[row_tier].append((group, item, score))
        self.count += 1

    def _record(
        self, group: str | None, item: CheckRow, score: CitationScore, *, judged: bool = True
    ) -> list[JsonValue]:
        return row_record(
            line=item.line,
            row_id=item.id,
            question=item.question,
            answer=item.answer,
            sources=item.sources,
            score=score,
            label_pattern=self._label_pattern,
            citation_pattern=self._citation_pattern,
            table=self.table,
            group=group,
            judged=judged,
            opaque_id=getattr(item, "id_scope", None) == "run",
        )

    def finish(self, facts: RunFacts) -> str:
        """Write the page atomically; return its SHA-256."""
        judged = facts.summary.judge is not None
        shown = dict.fromkeys(OUTCOMES, 0)
        groups: dict[str, int] = {}
        for kept in self.tiers:
            for group, _, score in kept:
                shown[page_outcome(score, judged=judged)] += 1
                if group is not None:
                    groups[group] = groups.get(group, 0) + 1
        # Records are built only for the rows shown, in input order (which orders the
        # page's text table): a row displaced by a worse one costs nothing, and leaves
        # no text in the table.
        shown_rows = sorted((e for kept in self.tiers for e in kept), key=lambda e: e[1].line)
        records = {e[1].line: self._record(*e, judged=judged) for e in shown_rows}
        rows = [records[item.line] for kept in self.tiers for _, item, _ in kept]
        page = render_page(
            summary=facts.summary,
            rows=rows,
            texts=self.table.texts,
            shown=shown,
            shown_groups=groups,
            input_name=facts.input_name,
            input_sha256=facts.input_sha256,
            created_at=facts.created_at,
            version=facts.version,
            run_id=facts.run_id,
        )
        data = page.encode("utf-8")
        write_report_atomically(self._out, data)
        return hashlib.sha256(data).hexdigest()

    def close(self) -> None:
        """Nothing to release: the page exists only once `finish` wrote it."""
