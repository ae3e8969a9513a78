"""The parts of ``report.html`` that are HTML, and where each marker of a row stands.

``citemark check`` writes the page of ``citemark._pipelines.check.page``, whose rows are data
drawn by the page's script. This module holds what that page takes from here: the
header sections (failure causes, the ``--group-by`` table, judge calls, provider
citations), the display caps, the style and its Content-Security-Policy hash, and
`_pieces`, which places every marker of an answer at its own offsets with the class
the scorer gave it (from the scorer's typed findings and, for integer markers,
`citemark.parse_markers`), so the page shows exactly what the scorer decided.

Everything untrusted that reaches HTML here (group names, reason codes, the judge's
identity) is escaped with `html.escape`; the rows' strings reach the DOM through
``textContent`` only.
"""

from __future__ import annotations

import base64
import hashlib
import html
import importlib.resources
from typing import TYPE_CHECKING, Final, NamedTuple
from urllib.parse import quote

from citemark._judging.scorer.findings import UnresolvedMarker
from citemark._markers.grammar import parse_markers
from citemark._pipelines.check.names import HTML_NAME
from citemark._pipelines.eval_report import cause_outcome_word

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from citemark._contract.models import Source
    from citemark._judging.scorer.findings import ScoreFindings
    from citemark._judging.scorer.result import CitationScore
    from citemark._pipelines.eval_report import CheckSummary

# The page's only style and script, shipped as package data and inlined (the page
# loads nothing); the Content-Security-Policy allows exactly these, by hash.
_ASSETS: Final = importlib.resources.files("citemark._pipelines.check") / "assets"
_STYLE: Final = (_ASSETS / "report.css").read_text(encoding="utf-8")

__all__ = ["HTML_NAME", "MAX_PROVIDER_CITATIONS", "MAX_UNCITED_SOURCES", "OUTCOMES", "tier"]


OUTCOMES: Final = ("failed", "unassessed", "passed")
"""The outcomes a row can have, in the order the page lists them."""

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


def _issue_message(piece: _Piece, count: int, *, numbered: bool) -> str:
    if piece.kind == "ambiguous":
        return _AMBIGUOUS_WHY.get(piece.why or "", "cannot be resolved to exactly one block")
    if numbered:
        noun = "source" if count == 1 else "sources"
        return f"names no source: this row was given {count} {noun}"
    return "names no block in the context"


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
    judged = summary.judge is not None
    for cause in summary.failure_causes:
        where = ", ".join(f"{_e(name)} {count}" for name, count in cause.groups.items())
        word = cause_outcome_word(cause.outcome, judged=judged)
        items.append(
            f'<li><span class="n">{cause.rows}</span> {word} '
            f"<code>{_e(cause.cause)}</code>{f' &middot; {where}' if where else ''}</li>"
        )
    return f'<section class="causes"><h2>Top failure causes</h2><ol>{"".join(items)}</ol></section>'


def _groups_html(summary: CheckSummary) -> str:
    """Every count by ``--group-by`` group, one table row per group."""
    if summary.group_by is None:
        return ""
    judged = summary.judge is not None
    names = [
        "group",
        "rows",
        "cite only sources they were given",
        "violations",
        "could not be checked",
        "unrecognized text",
    ]
    if judged:
        names += ["passed", "failed", "un-assessed"]
    head = "".join(f"<th>{name}</th>" for name in names)
    body = "".join(
        f'<tr><td><a href="#group={_e(quote(name, safe=""))}">{_e(name)}</a></td>'
        f"<td>{g.rows}</td><td>{g.cite_only_given_sources}</td>"
        f"<td>{g.deterministic_failures}</td><td>{g.unchecked}</td>"
        f"<td>{g.rows_with_unrecognized}</td>"
        + (f"<td>{g.passed}</td><td>{g.failed}</td><td>{g.unassessed}</td>" if judged else "")
        + "</tr>"
        for name, g in summary.groups.items()
    )
    return (
        f'<section class="groups"><h2>By {_e(summary.group_by)}</h2>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></section>"
    )


MAX_PROVIDER_CITATIONS: Final = 50
"""How many provider citations a row lists; rows.jsonl keeps them all."""


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


def _e(text: str) -> str:
    r"""Escape text for HTML; a lone surrogate (not valid in UTF-8) shows as ``\ud800``."""
    return html.escape(text.encode("utf-8", "backslashreplace").decode("utf-8"), quote=True)


def _counts_html(counts: Iterable[tuple[str, str, int]]) -> str:
    """The count cards of a page's header: ``(css class, label, value)`` each."""
    return "".join(
        f'<div class="count {key}"><dt>{label}</dt><dd data-card="{key}">{value}</dd></div>'
        for key, label, value in counts
    )


def _csp_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


def tier(score: CitationScore) -> int:
    """A row's tier on the page: 0 failed, 1 un-assessed (but not ``no_judge``), 2 the rest.

    The page keeps and shows rows by (tier, line); the Ray engine's shards keep their
    candidates for the page by the same order.
    """
    if score.outcome == "failed":
        return 0
    if score.outcome == "unassessed" and score.reason != "no_judge":
        return 1
    return 2
