"""A run comparison as text for a terminal and as a self-contained HTML page.

The page uses ``report.html``'s own style sheet, so a diff looks like the reports it
compares; it has no script, and its content security policy allows only that style.
Row ids are untrusted text from the input and are escaped; everything else on the
page is a count, a code, a hash or a model identity. In the text, every line is
passed through `citemark._check.terminal.printable`: an id (or a recorded reason or
judge name) holding a terminal escape or a newline is shown, never obeyed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from citemark._check.html import _STYLE as REPORT_STYLE
from citemark._check.html import _counts_html, _csp_hash, _e
from citemark._check.terminal import printable

if TYPE_CHECKING:
    from citemark._artifacts import ModelIdentity
    from citemark._diff.compare import RowChange, RowState, RunDiff

__all__ = ["render_html", "render_text"]

_STYLE: Final = (
    REPORT_STYLE
    + "table.diff{border-collapse:collapse;background:#fff;font-size:14px}"
    + "table.diff td,table.diff th{border:1px solid var(--line);padding:4px 10px;text-align:left}"
)
_MAX_TEXT_ROWS: Final = 50


def _judge(identity: ModelIdentity | None) -> str:
    if identity is None:
        return "none"
    return f"{identity.provider} / {identity.model} (prompt {identity.prompt_sha256[:12]}...)"


def _state(state: RowState | None) -> str:
    if state is None:
        return "-"
    reason = f" ({state.reason})" if state.reason else ""
    band = f" band {state.judge_band}" if state.judge_band is not None else ""
    return f"{state.outcome}{reason}{band}"


def _name(change: RowChange) -> str:
    line = (change.new or change.old).line  # type: ignore[union-attr]
    return f"{change.id} (line {line})" if change.id is not None else f"line {line}"


def _judge_note(diff: RunDiff) -> str:
    if diff.same_judge:
        return f"judge: the same in both runs: {_judge(diff.new_judge)}"
    return (
        f"judge: DIFFERENT, two instruments, not one: old {_judge(diff.old_judge)}, "
        f"new {_judge(diff.new_judge)}"
    )


def render_text(diff: RunDiff, *, most: int = _MAX_TEXT_ROWS) -> str:
    """The comparison as lines of text: totals, the judges, then up to ``most`` changed rows."""
    inputs = (
        f"input: the same (sha256 {diff.new_input_sha256[:12]}...)"
        if diff.same_input
        else (
            f"input: DIFFERENT (old sha256 {diff.old_input_sha256[:12]}..., "
            f"new {diff.new_input_sha256[:12]}...): rows matched by id or line"
        )
    )
    lines = [
        inputs,
        _judge_note(diff),
        (
            f"rows: {diff.compared} compared, {diff.unchanged} unchanged, {diff.changed} "
            f"changed, {diff.added} added, {diff.removed} removed"
        ),
    ]
    if diff.why:
        lines.append("why: " + ", ".join(f"{kind} {count}" for kind, count in diff.why.items()))
    if diff.transitions:
        lines.append(
            "outcomes: " + ", ".join(f"{pair} {count}" for pair, count in diff.transitions.items())
        )
    lines.extend(
        f"  {_name(change)}: {_state(change.old)} -> {_state(change.new)} [{', '.join(change.why)}]"
        for change in diff.changes[:most]
    )
    left = len(diff.changes) - most
    if left > 0:
        lines.append(f"  and {left} more (--json lists every row)")
    return "\n".join(printable(line) for line in lines) + "\n"


def render_html(diff: RunDiff, *, old_name: str, new_name: str) -> str:
    """The comparison as a self-contained page in the style of ``report.html``."""
    policy = (
        "default-src 'none'; base-uri 'none'; form-action 'none'; img-src 'none'; "
        f"style-src '{_csp_hash(_STYLE)}'"
    )
    counts = _counts_html(
        (
            ("rows", "compared", diff.compared),
            ("passed", "unchanged", diff.unchanged),
            ("failed", "changed", diff.changed),
            ("unassessed", "added", diff.added),
            ("unassessed", "removed", diff.removed),
        )
    )
    why = "".join(f"<li><code>{_e(k)}</code> {v}</li>" for k, v in diff.why.items())
    rows = "".join(
        f"<tr><td>{_e(_name(change))}</td><td>{_e(_state(change.old))}</td>"
        f"<td>{_e(_state(change.new))}</td>"
        f"<td>{' '.join(f'<code>{_e(kind)}</code>' for kind in change.why)}</td></tr>"
        for change in diff.changes
    )
    warning = (
        ""
        if diff.same_judge
        else '<p class="left-out">The judges differ: two instruments, not one.</p>'
    )
    inputs = (
        "the same input"
        if diff.same_input
        else '<span class="left-out">different inputs, compared anyway</span>'
    )
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{policy}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>citemark diff: {_e(old_name)} / {_e(new_name)}</title>",
            f"<style>{_STYLE}</style></head><body>",
            '<header class="top"><h1>citemark diff</h1>',
            (
                f'<p class="meta">old <code>{_e(old_name)}</code> &middot; new '
                f"<code>{_e(new_name)}</code> &middot; {inputs}<br>"
                f"{_e(_judge_note(diff))}</p>"
            ),
            warning,
            f'<dl class="counts">{counts}</dl>',
            f'<ul class="reasons">{why}</ul>' if why else "",
            "</header>",
            (
                '<main><table class="diff"><thead><tr><th>row</th><th>old</th><th>new</th>'
                f"<th>why</th></tr></thead><tbody>{rows}</tbody></table></main>"
            ),
            "</body></html>",
            "",
        ]
    )
