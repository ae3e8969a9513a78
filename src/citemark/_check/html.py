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

from citemark._check.provider_html import provider_citations_html
from citemark._markers import parse_markers
from citemark._scorer.findings import UnresolvedMarker
from citemark._scorer.labels import classify_labelled

if TYPE_CHECKING:
    import re
    from collections.abc import Mapping, Sequence

    from citemark._models import Source
    from citemark._providers._model import SentDocument
    from citemark._reports import CheckSummary
    from citemark._scorer.findings import ScoreFindings
    from citemark._scorer.result import CitationScore

# The page's only style and script, shipped as package data and inlined (the page
# loads nothing); the Content-Security-Policy allows exactly these, by hash.
_ASSETS: Final = importlib.resources.files("citemark._check") / "assets"
_STYLE: Final = (_ASSETS / "report.css").read_text(encoding="utf-8")

__all__ = ["HTML_NAME", "OUTCOMES", "render_row"]

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


def _tier(score: CitationScore) -> int:
    if score.outcome == "failed":
        return 0
    if score.outcome == "unassessed" and score.reason != "no_judge":
        return 1
    return 2
