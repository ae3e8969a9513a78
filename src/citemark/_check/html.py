"""The self-contained ``report.html`` of ``citemark check``: a report for looking, not reading.

``citemark check`` writes the page of ``citemark._check.page``, which draws rows from
data; this module keeps the header sections and the marker placement it uses, and
`render_row`, the static rendering of one row.

Each row shows its outcome as a coloured badge, the answer with every citation
marker turned into a link, and the sources the answer was given. A resolved marker
links to the source it names (``#row-<line>-src-<k>``), which is highlighted when
followed; a fabricated or ambiguous marker is styled as a failure and links to the
finding that explains it (``#row-<line>-issue-<j>``); an ignored token is shown, not
linked. Markers are placed from the scorer's own per-occurrence details (the group
offsets it recorded) and, for integer markers, from `citemark.parse_markers`, so the
page shows exactly what the scorer decided.

Everything untrusted (answers, questions, sources, labels, the judge's words) is
escaped with `html.escape`. The page has no external asset and cannot load one: a
Content-Security-Policy allows only the inline style and script, by hash. Without
JavaScript every row is shown; with it, checkboxes filter rows by outcome, and a URL
fragment such as ``#show=failed,unassessed`` sets them on load.
"""

from __future__ import annotations

import base64
import hashlib
import html
import importlib.resources
from typing import TYPE_CHECKING, Final, NamedTuple

from citemark._artifacts import write_report_atomically
from citemark._check.provider_html import provider_citations_html, provider_summary_html
from citemark._markers import parse_markers
from citemark._reasons import REASONS
from citemark._runs import CheckRow
from citemark._scorer.findings import UnresolvedMarker
from citemark._scorer.labels import classify_labelled

if TYPE_CHECKING:
    import re
    from collections.abc import Mapping, Sequence
    from datetime import datetime

    from citemark._check.sinks import CheckedRow, RunFacts, SinkOptions
    from citemark._models import Source
    from citemark._providers._model import SentDocument
    from citemark._reports import CheckSummary
    from citemark._scorer.findings import ScoreFindings
    from citemark._scorer.result import CitationScore

# The page's only style and script, shipped as package data and inlined (the page
# loads nothing); the Content-Security-Policy allows exactly these, by hash.
_ASSETS: Final = importlib.resources.files("citemark._check") / "assets"
_STYLE: Final = (_ASSETS / "report.css").read_text(encoding="utf-8")
_SCRIPT: Final = (_ASSETS / "report.js").read_text(encoding="utf-8")

__all__ = ["HTML_NAME", "OUTCOMES", "HtmlSink", "render_report", "render_row"]

HTML_NAME: Final = "report.html"

OUTCOMES: Final = ("failed", "unassessed", "passed")
"""The outcomes a row can have, in the order the page lists them."""

_FILTER_NAMES: Final = {"failed": "failed", "unassessed": "un-assessed", "passed": "passed"}

# Display caps: the page is for looking, and rows.jsonl keeps every finding.
_MAX_ANSWER_CHARS: Final = 200_000
_MAX_SOURCE_CHARS: Final = 20_000
# The uncited sources (or context blocks) a row shows besides every cited one; the
# rest are counted ("and N more not shown"). rows.jsonl keeps them all.
MAX_UNCITED_SOURCES: Final = 20
_MAX_ISSUES: Final = 50

_AMBIGUOUS_WHY: Final = {
    "names_excluded_label": "names a block that cannot be cited (empty, or given twice)",
    "matches_label_case_only": "matches a label only in another letter case",
    "bracketed_in_context": "is written in brackets inside the context, so it cannot be told "
    "from a label",
}
_IGNORED_WHY: Final = {
    "not_label_shaped": "not a citation: not shaped like this context's labels",
    "link_text": "not a citation: Markdown link text naming no block",
    "labels_not_distinguishable": "not a citation: this context's labels cannot be told "
    "from ordinary brackets",
    "context_has_no_labels": "not a citation: the context has no labels",
}


class _Piece(NamedTuple):
    """One marker inside a bracket group, placed at its offsets in the answer."""

    start: int
    end: int
    label: str
    kind: str
    why: str | None


def render_row(  # noqa: PLR0913 - the row's parts, as the checker read them
    *,
    line: int,
    row_id: str | None,
    question: str,
    answer: str,
    sources: Sequence[Source] | str,
    score: CitationScore,
    label_pattern: re.Pattern[str],
    citation_pattern: re.Pattern[str],
    documents: Sequence[SentDocument] = (),
) -> str:
    """Render one scored row as an HTML ``<section>``.

    Args:
        line: The row's line number in the input; it makes every id on the page unique.
        row_id: The row's own id, or ``None``.
        question: The question, possibly empty.
        answer: The answer as the pipeline wrote it.
        sources: The sources, or the labelled context string.
        score: The row's score; its typed findings place every marker.
        label_pattern: The scorer's label pattern, to split a context into blocks.
        citation_pattern: The scorer's citation pattern.
        documents: For a row with a provider response, the documents sent, whose
            provider citations are shown beside the markers.

    Returns:
        The fragment; every untrusted string in it is escaped.
    """
    outcome = score.outcome
    findings = score.findings
    prefix = f"row-{line}"
    if isinstance(sources, str):
        found = classify_labelled("", sources, label_pattern, citation_pattern)
        blocks = [(found.headers[label], text) for label, text in found.blocks.items()]
        excluded = found.excluded
        numbers = {label: k for k, label in enumerate(found.blocks, start=1)}
    else:
        blocks = []
        excluded = [(str(k), "empty") for k, s in enumerate(sources, start=1) if not s.text.strip()]
        numbers = {str(k): k for k, s in enumerate(sources, start=1) if s.text.strip()}
    pieces = _pieces(answer, sources, findings)
    issues: list[str] = []
    cited: set[int] = set()
    given = len(numbers) + len(excluded)
    answer_html = _answer_html(
        answer,
        pieces,
        prefix,
        numbers=numbers,
        count=given,
        issues=issues,
        cited=cited,
        numbered=not isinstance(sources, str),
    )

    badge = f'<span class="badge {outcome}">{outcome}</span>'
    codes = _finding_codes(score)
    title = _e(row_id) if row_id is not None else f"line {line}"
    parts = [
        f'<section class="row {outcome}" id="{prefix}" data-outcome="{outcome}">',
        (
            f'<header>{badge} <span class="rid">{title}</span> '
            f'<span class="line">line {line}</span>{codes}</header>'
        ),
    ]
    parts.append('<div class="cols"><div class="main">')
    if question:
        parts.append(f'<p class="question"><span class="k">Q</span> {_e(question)}</p>')
    parts.append(f'<div class="answer">{answer_html}</div>')
    parts.append(f'<p class="explanation">{_e(score.explanation)}</p>')
    coverage = findings.sentence_coverage
    if coverage is not None and coverage.sentences:
        parts.append(
            f'<p class="coverage">{coverage.cited_sentences} of '
            f"{coverage.sentences} sentences carry a resolved citation</p>"
        )
    if findings.unverifiable_sources:
        listed = ", ".join(_e(label) for label in findings.unverifiable_sources)
        parts.append(
            f'<p class="unverifiable">Unverifiable sources (no text, or only a URL; '
            f"never graded): {listed}</p>"
        )
    if findings.unrecognized:
        kinds = ", ".join(sorted({_e(t.kind) for t in findings.unrecognized}))
        parts.append(
            f'<p class="unrecognized">{len(findings.unrecognized)} citation-like tokens '
            f"that are not markers: {kinds}</p>"
        )
    if issues:
        shown = "".join(issues[:_MAX_ISSUES])
        more = len(issues) - _MAX_ISSUES
        extra = f"<li>and {more} more</li>" if more > 0 else ""
        parts.append(f'<ul class="issues" id="{prefix}-issues">{shown}{extra}</ul>')
    parts.append(provider_citations_html(prefix, answer, findings, documents))
    parts.append("</div>")
    parts.append(_sources_html(sources, blocks, excluded, prefix, cited))
    parts.append("</div></section>")
    return "\n".join(parts)


def render_report(  # noqa: PLR0913 - the page's parts, each computed once by the checker
    *,
    summary: CheckSummary,
    rows: Sequence[str],
    shown: Mapping[str, int],
    strip: Sequence[tuple[int, str]],
    input_name: str,
    input_sha256: str,
    created_at: datetime,
    version: str,
) -> str:
    """Render the whole page around the row fragments.

    Args:
        summary: The run's counts.
        rows: The row fragments from `render_row`, in the order to show them.
        shown: How many rows of each outcome are on the page.
        strip: ``(line, outcome)`` of every row on the page, in order, for the
            overview strip.
        input_name: The input file's name, as given.
        input_sha256: The SHA-256 of the input bytes.
        created_at: When the run was made.
        version: The citemark version.

    Returns:
        The complete, self-contained HTML document.
    """
    totals = {"failed": summary.failed, "unassessed": summary.unassessed, "passed": summary.passed}
    judge = (
        f"{_e(summary.judge.provider)} / {_e(summary.judge.model)} "
        f"(prompt {summary.judge.prompt_sha256[:12]}&hellip;)"
        if summary.judge is not None
        else "none: deterministic findings only"
    )
    counts = "".join(
        f'<div class="count {key}"><dt>{label}</dt><dd>{value}</dd></div>'
        for key, label, value in (
            ("rows", "rows", summary.rows),
            ("failed", "failed", summary.failed),
            ("unassessed", "un-assessed", summary.unassessed),
            ("passed", "passed", summary.passed),
            ("violations", "deterministic failures", summary.deterministic_failures),
            ("malformed", "malformed lines", summary.malformed),
        )
    )
    filters = "".join(
        f'<label class="filter {o}"><input type="checkbox" name="outcome" value="{o}" checked> '
        f"{_FILTER_NAMES[o]} <span>({shown.get(o, 0)} shown of {totals[o]})</span></label>"
        for o in OUTCOMES
    )
    left_out = sum(totals.values()) - sum(shown.get(o, 0) for o in OUTCOMES)
    order = (
        "Rows are listed failed first, then un-assessed with a reason other than no_judge, "
        "then the rest, each in input order; the strip shows them in input order."
    )
    notice = (
        f'<p class="left-out">This page shows {sum(shown.values())} of {summary.rows} rows; '
        f"{left_out} were left out. rows.jsonl holds every row. {order}</p>"
        if left_out > 0
        else f'<p class="order">{order}</p>'
    )
    cells = "".join(
        f'<a class="cell {outcome}" href="#row-{line}" title="line {line}: {outcome}"></a>'
        for line, outcome in strip
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
        more = summary.malformed - len(summary.malformed_lines)
        extra = f"<li>and {more} more (see rows.jsonl)</li>" if more > 0 else ""
        malformed = (
            '<section class="malformed"><h2>Lines that could not be read as a row</h2>'
            f"<ul>{items}{extra}</ul></section>"
        )
    policy = (
        "default-src 'none'; base-uri 'none'; form-action 'none'; img-src 'none'; "
        f"style-src '{_csp_hash(_STYLE)}'; script-src '{_csp_hash(_SCRIPT)}'"
    )
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
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
            f'<dl class="counts">{counts}</dl>',
            f'<ul class="reasons">{reasons}</ul>' if reasons else "",
            _causes_html(summary),
            _groups_html(summary),
            _judge_calls(summary),
            provider_summary_html(summary),
            (
                '<p class="judge-note">A verdict is advice: only deterministic findings can '
                "fail the run, and only with --fail-on-violation.</p>"
            ),
            f'<form id="filters">{filters}</form>',
            notice,
            f'<nav class="strip" aria-label="rows at a glance">{cells}</nav>',
            "</header>",
            malformed,
            '<main id="rows">',
            *rows,
            "</main>",
            f"<script>{_SCRIPT}</script>",
            "</body></html>",
            "",
        ]
    )


def _pieces(answer: str, sources: Sequence[Source] | str, findings: ScoreFindings) -> list[_Piece]:
    """Every marker of the answer, at its own offsets, with the class the scorer gave it."""
    groups: dict[tuple[int, int], list[tuple[str, str, str | None]]] = {}
    for marker_class, entry in findings.classified():
        why = entry.why if isinstance(entry, UnresolvedMarker) else None
        groups.setdefault((entry.start, entry.end), []).append((entry.label, marker_class, why))
    pieces: list[_Piece] = []
    if not isinstance(sources, str):
        # Integer markers: parse_markers gives each number's own digits inside its group.
        for occ in parse_markers(answer):
            entries = groups.get((occ.group_start, occ.group_end))
            if not entries:
                continue
            digits = answer[occ.start : occ.end]
            named = {label: (kind, why) for label, kind, why in entries}
            kind, why = named.get(digits) or named.get(str(occ.number)) or ("unknown", None)
            pieces.append(_Piece(occ.start, occ.end, digits, kind, why))
        return _whole_groups(pieces, answer)
    for (start, end), entries in sorted(groups.items()):
        text = answer[start:end]
        used: set[int] = set()
        placed: list[_Piece] = []
        for label, kind, why in entries:
            at = _find_label(text, label, used)
            if at is None:  # a custom pattern that rewrites labels: mark the whole group
                placed = [_Piece(start, end, label, kind, why)]
                break
            used.add(at)
            placed.append(_Piece(start + at, start + at + len(label), label, kind, why))
        pieces.extend(sorted(placed))
    return _whole_groups(pieces, answer)


def _whole_groups(pieces: list[_Piece], answer: str) -> list[_Piece]:
    """Widen a marker that is alone in its ``[...]`` group to the whole group."""
    widened: list[_Piece] = []
    for i, piece in enumerate(pieces):
        open_at = answer.rfind("[", 0, piece.start)
        close_at = answer.find("]", piece.end)
        alone = (
            open_at >= 0
            and close_at >= 0
            and not answer[open_at + 1 : piece.start].strip(" \t")
            and not answer[piece.end : close_at].strip(" \t")
            and (i == 0 or pieces[i - 1].end <= open_at)
        )
        if alone:
            piece = piece._replace(start=open_at, end=close_at + 1)  # noqa: PLW2901
        widened.append(piece)
    return widened


def _find_label(text: str, label: str, used: set[int]) -> int | None:
    """Where ``label`` stands as a whole item inside a group's text, not yet taken."""
    at = text.find(label)
    while at >= 0:
        before = text[at - 1] if at > 0 else "["
        after = text[at + len(label)] if at + len(label) < len(text) else "]"
        if at not in used and before in "[, \t" and after in "], \t":
            return at
        at = text.find(label, at + 1)
    return None


def _answer_html(  # noqa: PLR0913 - the pieces and the row's lookup tables
    answer: str,
    pieces: list[_Piece],
    prefix: str,
    *,
    numbers: Mapping[str, int],
    count: int,
    issues: list[str],
    cited: set[int],
    numbered: bool,
) -> str:
    out: list[str] = []
    cursor = 0
    limit = min(len(answer), _MAX_ANSWER_CHARS)
    for piece in pieces:
        if piece.start < cursor or piece.end > limit:
            continue
        out.append(_e(answer[cursor : piece.start]))
        text = _e(answer[piece.start : piece.end])
        k = numbers.get(piece.label)
        if k is None and piece.label.isdigit():
            k = numbers.get(str(int(piece.label)))
        if piece.kind == "resolved" and k is not None:
            cited.add(k)
            out.append(
                f'<a class="marker resolved" href="#{prefix}-src-{k}" '
                f'title="cites source {k}">{text}</a>'
            )
        elif piece.kind in ("fabricated", "ambiguous"):
            message = _issue_message(piece, count, numbered=numbered)
            number = len(issues) + 1
            target = f"{prefix}-issue-{number}" if number <= _MAX_ISSUES else f"{prefix}-issues"
            issues.append(
                f'<li id="{prefix}-issue-{number}" class="{piece.kind}">'
                f"<code>{_e(piece.label)}</code> {piece.kind}: {message}</li>"
            )
            out.append(
                f'<a class="marker {piece.kind}" href="#{target}" title="{piece.kind}">{text}</a>'
            )
        else:
            why = _IGNORED_WHY.get(piece.why or "", "not a citation")
            out.append(f'<span class="marker ignored" title="{_e(why)}">{text}</span>')
        cursor = piece.end
    out.append(_e(answer[cursor:limit]))
    if limit < len(answer):
        out.append(
            f'<span class="truncated">&hellip; {len(answer) - limit} more characters '
            "not shown</span>"
        )
    return "".join(out)


def _issue_message(piece: _Piece, count: int, *, numbered: bool) -> str:
    if piece.kind == "ambiguous":
        return _AMBIGUOUS_WHY.get(piece.why or "", "cannot be resolved to exactly one block")
    if numbered:
        noun = "source" if count == 1 else "sources"
        return f"names no source: this row was given {count} {noun}"
    return "names no block in the context"


def _sources_html(
    sources: Sequence[Source] | str,
    blocks: list[tuple[str, str]],
    excluded: Sequence[tuple[str, str]],
    prefix: str,
    cited: set[int],
) -> str:
    """The sources as a list: cited ones open and highlighted, the others folded."""
    items: list[str] = []
    if isinstance(sources, str):
        entries = [
            (k, f"<code>{_e(header)}</code>", text)
            for k, (header, text) in enumerate(blocks, start=1)
        ]
        kind = "context blocks"
    else:
        entries = []
        for number, source in enumerate(sources, start=1):
            if not source.text.strip():
                continue
            where = [f"<code>[{number}]</code> {_e(source.doc_id)}"]
            if source.chunk_id is not None:
                where.append(_e(source.chunk_id))
            if source.start is not None and source.end is not None:
                where.append(f"{source.start}&ndash;{source.end}")
            if source.uri is not None:
                where.append(_e(source.uri))
            entries.append((number, " &middot; ".join(where), source.text))
        kind = "sources"
    # Every cited entry is shown; of the others, only the first few, so a row given
    # thousands of sources stays a bounded piece of the page.
    others = 0
    hidden = 0
    for k, meta, text in entries:
        if k not in cited:
            others += 1
            if others > MAX_UNCITED_SOURCES:
                hidden += 1
                continue
        state, opened = (" cited", " open") if k in cited else ("", "")
        items.append(
            f'<li class="source{state}" id="{prefix}-src-{k}"><details{opened}>'
            f'<summary class="src-meta">{meta}</summary>'
            f'<div class="span">{_clip(text)}</div></details></li>'
        )
    more = f'<p class="excluded">and {hidden} more not shown</p>' if hidden else ""
    note = ""
    if excluded:
        shown_excluded = excluded[:MAX_UNCITED_SOURCES]
        listed = ", ".join(f"{_e(label)} ({why})" for label, why in shown_excluded)
        if len(excluded) > len(shown_excluded):
            listed += f" and {len(excluded) - len(shown_excluded)} more"
        note = f'<p class="excluded">Not citable: {listed}</p>'
    return (
        f'<div class="sources"><p class="src-title">{len(entries)} {kind}, '
        f"{len(cited)} cited</p><ol>{''.join(items)}</ol>{more}{note}</div>"
    )


def _finding_codes(score: CitationScore) -> str:
    codes = _finding_codes_list(score)
    return "".join(f' <code class="finding">{_e(code)}</code>' for code in codes)


def _finding_codes_list(score: CitationScore) -> list[str]:
    """The codes a row's header shows: reason, violations, what became of the judge."""
    codes: list[str] = []
    if not score.assessed and score.reason is not None:
        codes.append(score.reason)
    codes.extend(score.findings.deterministic_failures)
    codes.extend(_judge_codes(score))
    if score.assessed and not codes and score.score is not None:
        codes.append(f"judge band {round(score.score * 3)}/3")
    return codes


def _causes_html(summary: CheckSummary) -> str:
    """The top failure causes, identical failures collapsed into one line with a count."""
    if not summary.failure_causes:
        return ""
    items = []
    for cause in summary.failure_causes:
        where = ", ".join(f"{_e(name)} {count}" for name, count in cause.groups.items())
        items.append(
            f'<li><span class="n">{cause.rows}</span> {cause.outcome} '
            f"<code>{_e(cause.cause)}</code>{f' &middot; {where}' if where else ''}</li>"
        )
    return f'<section class="causes"><h2>Top failure causes</h2><ol>{"".join(items)}</ol></section>'


def _groups_html(summary: CheckSummary) -> str:
    """Every count by ``--group-by`` group, one table row per group."""
    if summary.group_by is None:
        return ""
    head = "".join(
        f"<th>{name}</th>"
        for name in (
            "group",
            "rows",
            "every citation resolves",
            "deterministic failures",
            "unrecognized text",
            "passed",
            "failed",
            "un-assessed",
        )
    )
    body = "".join(
        f"<tr><td>{_e(name)}</td><td>{g.rows}</td><td>{g.citations_all_resolve}</td>"
        f"<td>{g.deterministic_failures}</td><td>{g.rows_with_unrecognized}</td>"
        f"<td>{g.passed}</td><td>{g.failed}</td><td>{g.unassessed}</td></tr>"
        for name, g in summary.groups.items()
    )
    return (
        f'<section class="groups"><h2>By {_e(summary.group_by)}</h2>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></section>"
    )


def _judge_calls(summary: CheckSummary) -> str:
    """The judge's calls: made, saved, failed per reason code; empty without a judge."""
    if summary.judge is None:
        return ""
    parts = [f"{summary.judge_calls} made"]
    if summary.judge_calls_saved:
        parts.append(f"{summary.judge_calls_saved} saved on rows already failed in code")
    parts.extend(
        f"<code>{_e(code)}</code> {count} failed" for code, count in summary.judge_failures.items()
    )
    parts.extend(
        f"provider code <code>{_e(code)}</code> {count}"
        for code, count in summary.judge_provider_codes.items()
    )
    if summary.judge_replies_truncated:
        parts.append(f"{summary.judge_replies_truncated} replies cut off at the token limit")
    return f'<p class="judge-calls">judge calls: {" &middot; ".join(parts)}</p>'


def _judge_codes(score: CitationScore) -> list[str]:
    """What became of the judge call: why it failed, whether it was cut off or saved."""
    findings = score.findings
    codes: list[str] = []
    failure = findings.judge_error
    if failure is not None:
        facts = [failure.reason]
        if failure.status is not None:
            facts.append(f"HTTP {failure.status}")
        if failure.provider_code is not None:
            facts.append(failure.provider_code)
        codes.append(f"judge call: {' '.join(facts)}")
    if findings.judge_reply_truncated and score.reason != "judge_reply_truncated":
        codes.append("judge_reply_truncated")
    if findings.judge_skipped:
        codes.append("judge not asked: already failed in code")
    return codes


def _clip(text: str) -> str:
    if len(text) <= _MAX_SOURCE_CHARS:
        return _e(text)
    more = len(text) - _MAX_SOURCE_CHARS
    return (
        f"{_e(text[:_MAX_SOURCE_CHARS])}"
        f'<span class="truncated">&hellip; {more} more characters not shown</span>'
    )


def _e(text: str) -> str:
    r"""Escape text for HTML; a lone surrogate (not valid in UTF-8) shows as ``\ud800``."""
    return html.escape(text.encode("utf-8", "backslashreplace").decode("utf-8"), quote=True)


def _csp_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


class HtmlSink:
    """``report.html``: the page, showing at most ``html_rows`` rows, the most telling first.

    Rows fall in three tiers: failed; un-assessed for a reason other than
    ``no_judge``; everything else. A row enters while there is room; when the page is
    full, a row of a better tier displaces the latest row of the worst tier below it,
    so each tier keeps its earliest rows. Only kept rows are rendered, and the page is
    put together at the end.
    """

    name = HTML_NAME

    def __init__(self, options: SinkOptions) -> None:
        self.limit = max(options.html_rows, 0)
        self.tiers: tuple[list[tuple[int, str, str]], ...] = ([], [], [])
        self.count = 0
        self._out = options.out_dir / HTML_NAME
        self._label_pattern = options.label_pattern
        self._citation_pattern = options.citation_pattern

    def add(self, row: CheckedRow) -> None:
        """Render the row if the page has room for its tier."""
        item, score = row
        if score is None or not isinstance(item, CheckRow):
            return  # malformed lines are listed from the summary
        tier = _tier(score)
        if self.count >= self.limit:
            worse = next((t for t in (2, 1) if t > tier and self.tiers[t]), None)
            if worse is None:
                return
            self.tiers[worse].pop()
            self.count -= 1
        fragment = render_row(
            line=item.line,
            row_id=item.id,
            question=item.question,
            answer=item.answer,
            sources=item.sources,
            score=score,
            label_pattern=self._label_pattern,
            citation_pattern=self._citation_pattern,
            documents=item.provider.documents if item.provider is not None else (),
        )
        self.tiers[tier].append((item.line, score.outcome, fragment))
        self.count += 1

    def finish(self, facts: RunFacts) -> str:
        """Write the page atomically; return its SHA-256."""
        shown = dict.fromkeys(OUTCOMES, 0)
        for tier in self.tiers:
            for _, outcome, _ in tier:
                shown[outcome] += 1
        page = render_report(
            summary=facts.summary,
            rows=[fragment for tier in self.tiers for _, _, fragment in tier],
            shown=shown,
            strip=sorted((line, outcome) for tier in self.tiers for line, outcome, _ in tier),
            input_name=facts.input_name,
            input_sha256=facts.input_sha256,
            created_at=facts.created_at,
            version=facts.version,
        )
        data = page.encode("utf-8")
        write_report_atomically(self._out, data)
        return hashlib.sha256(data).hexdigest()

    def close(self) -> None:
        """Nothing to release: the page exists only once `finish` wrote it."""


def _tier(score: CitationScore) -> int:
    if score.outcome == "failed":
        return 0
    if score.outcome == "unassessed" and score.reason != "no_judge":
        return 1
    return 2
