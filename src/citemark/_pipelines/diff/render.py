"""A run comparison as text for a terminal, as JSON, and as a self-contained HTML page.

Each form is written from the totals and a stream of changes (`write_text`,
`write_json`, `write_html`), so ``citemark diff`` never holds every changed row; the
``render_*`` functions are the same forms of a `RunDiff` held whole.

The page uses ``report.html``'s own style sheet, so a diff looks like the reports it
compares; it has no script, and its content security policy allows only that style.
Each row links to its record in both runs: ``report.html#row-N`` where that run's
page shows the row, else its line of ``rows.jsonl``. Row ids are untrusted text from
the input and are escaped; everything else on the page is a count, a code, a hash, an
option value or a model identity. In the text, every line is passed through
`citemark._pipelines.check.terminal.printable`: an id (or a recorded reason, option value or
judge name) holding a terminal escape or a newline is shown, never obeyed.
"""

from __future__ import annotations

import json
import os
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Final

from citemark._pipelines.check.html import _STYLE as REPORT_STYLE
from citemark._pipelines.check.html import _counts_html, _csp_hash, _e
from citemark._pipelines.check.terminal import json_printable, printable
from citemark._pipelines.diff.support import verifier_label

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from pydantic import JsonValue

    from citemark._contract.artifacts import ModelIdentity
    from citemark._pipelines.diff.compare import (
        Difference,
        RowChange,
        RowState,
        RunDiff,
        SupportRowChange,
    )

__all__ = [
    "folder_href",
    "render_html",
    "render_text",
    "write_html",
    "write_json",
    "write_text",
]

_STYLE: Final = (
    REPORT_STYLE
    + "table.diff{border-collapse:collapse;background:#fff;font-size:14px}"
    + "table.diff td,table.diff th{border:1px solid var(--line);padding:4px 10px;text-align:left}"
)
_MAX_TEXT_ROWS: Final = 50
_MAX_VALUE_CHARS: Final = 60
_MATCH_KINDS: Final = ("id", "question", "line")


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


def _value(value: JsonValue) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    if len(text) > _MAX_VALUE_CHARS:
        return text[: _MAX_VALUE_CHARS - 3] + "..."
    return text


def _listed(differences: Iterable[Difference]) -> str:
    return "; ".join(f"{d.name} {_value(d.old)} -> {_value(d.new)}" for d in differences)


def _judge_note(diff: RunDiff) -> str:
    if diff.same_judge:
        return f"judge: the same in both runs: {_judge(diff.new_judge)}"
    return (
        f"judge: DIFFERENT, two instruments, not one: old {_judge(diff.old_judge)}, "
        f"new {_judge(diff.new_judge)} ({_listed(diff.judge_differences)})"
    )


def _inputs_note(diff: RunDiff) -> str:
    if diff.same_input:
        return f"input: the same (sha256 {diff.new_input_sha256[:12]}...)"
    return (
        f"input: DIFFERENT (old sha256 {diff.old_input_sha256[:12]}..., "
        f"new {diff.new_input_sha256[:12]}...): rows matched by id, question or line"
    )


def _changes_note(diff: RunDiff) -> str:
    if not diff.inputs_recorded:
        return (
            "inputs: not recorded (no input digests in these rows.jsonl): changes of "
            "answer, sources and question not counted"
        )
    counts = diff.inputs_changed
    of = "" if diff.inputs_recorded == diff.compared else f" (of {diff.inputs_recorded} recorded)"
    return (
        f"inputs: of {diff.compared} compared rows{of}, answer changed in "
        f"{counts.get('answer', 0)}, sources in {counts.get('sources', 0)}, "
        f"question in {counts.get('question', 0)}"
    )


def _rule(diff: RunDiff) -> str:
    if diff.match != "auto":
        return f"{diff.match} only (--match {diff.match})"
    if diff.ids_compared:
        return "id where the row has one (the runs share ids), else question, else line"
    return "question, else line; ids not compared: the runs share none"


def _match_note(diff: RunDiff) -> str:
    """Which rule matched how many rows, what each side left unmatched, and why."""
    counts = ", ".join(f"{kind} {diff.matched_by.get(kind, 0)}" for kind in _MATCH_KINDS)
    per_run = ""
    if any(diff.per_run_ids.values()):
        per_run = (
            f"; per-run ids, never matched by: old {diff.per_run_ids.get('old', 0)}, "
            f"new {diff.per_run_ids.get('new', 0)}"
        )
    return (
        f"matched by: {counts}; left unmatched: old {diff.removed}, new {diff.added} "
        f"(rule: {_rule(diff)}{per_run}){_renumbered(diff)}"
    )


def _renumbered(diff: RunDiff) -> str:
    """A hint when rows matched by id ask other questions: the ids may not name questions.

    Under ``auto`` only an id match can pair two different questions (a question
    match pairs equal digests, a line match rows without one), so the count of
    changed questions is the count among rows matched by id.
    """
    moved = diff.inputs_changed.get("question", 0)
    if diff.match != "auto" or not diff.ids_compared or not moved:
        return ""
    rows = "row" if moved == 1 else "rows"
    return (
        f"; {moved} {rows} matched by id ask another question: if these runs' ids do not "
        "name the same questions, --match question pairs rows by question"
    )


def _options_note(diff: RunDiff) -> str:
    if not diff.option_differences:
        return "options: the same"
    return f"options: DIFFERENT: {_listed(diff.option_differences)}"


def _support_note(diff: RunDiff) -> str | None:
    """The support line: what was compared and how much changed, or why it was not."""
    support = diff.support
    if support is None or (support.old_verifier is None and support.new_verifier is None):
        return None
    if not support.compared:
        return f"support (advisory): not compared: {support.why_not}"
    return (
        f"support (advisory, verifier {verifier_label(support.new_verifier)}): of "
        f"{support.rows} rows judged in both runs, {support.rows_changed} changed: "
        f"{support.citations_changed} citation verdicts, {support.recalls_changed} "
        "sentence recalls"
    )


def _support_line(change: SupportRowChange) -> str:
    name = f"line {change.new_line}"
    if change.id is not None:
        name = f"{change.id} ({name})"
    return f"  {name}: {'; '.join(flip.text() for flip in change.flips)}"


def _head_lines(diff: RunDiff) -> list[str]:
    support = _support_note(diff)
    lines = [
        _inputs_note(diff),
        _judge_note(diff),
        *([] if support is None else [support]),
        (
            f"rows: {diff.compared} compared, {diff.unchanged} unchanged, {diff.changed} "
            f"changed, {diff.added} added, {diff.removed} removed"
        ),
        _match_note(diff),
        _changes_note(diff),
        _options_note(diff),
    ]
    if diff.version_differences:
        lines.append(f"versions: DIFFERENT: {_listed(diff.version_differences)}")
    if diff.why:
        lines.append("why: " + ", ".join(f"{kind} {count}" for kind, count in diff.why.items()))
    if diff.transitions:
        lines.append(
            "outcomes: " + ", ".join(f"{pair} {count}" for pair, count in diff.transitions.items())
        )
    return lines


def _change_line(change: RowChange) -> str:
    inputs = f" ({', '.join(change.inputs_changed)} changed)" if change.inputs_changed else ""
    return (
        f"  {_name(change)}: {_state(change.old)} -> {_state(change.new)} "
        f"[{', '.join(change.why)}]{inputs}"
    )


def write_text(
    diff: RunDiff,
    changes: Iterable[RowChange],
    write: Callable[[str], object],
    *,
    most: int = _MAX_TEXT_ROWS,
    support_changes: Iterable[SupportRowChange] = (),
) -> None:
    """Write the comparison as text: totals, instruments, then up to ``most`` changed rows.

    Only the first ``most`` changes are read from ``changes``, and of
    ``support_changes`` (the rows whose advisory support verdicts changed) the first
    ``most``, listed after them.
    """
    lines = _head_lines(diff)
    shown = 0
    for change in changes:
        if shown >= most:
            break
        lines.append(_change_line(change))
        shown += 1
    left = diff.changed + diff.added + diff.removed - shown
    if left > 0:
        lines.append(f"  and {left} more (--json lists every row)")
    support = diff.support
    if support is not None and support.rows_changed:
        lines.append("support verdicts changed (advisory):")
        listed = 0
        for support_change in support_changes:
            if listed >= most:
                break
            lines.append(_support_line(support_change))
            listed += 1
        if support.rows_changed > listed:
            lines.append(f"  and {support.rows_changed - listed} more (--json lists every row)")
    write("\n".join(printable(line) for line in lines) + "\n")


def render_text(diff: RunDiff, *, most: int = _MAX_TEXT_ROWS) -> str:
    """The comparison as lines of text: totals, instruments, then up to ``most`` changed rows."""
    parts: list[str] = []
    write_text(diff, diff.changes, parts.append, most=most, support_changes=diff.support_changes)
    return "".join(parts)


def write_json(
    diff: RunDiff,
    changes: Iterable[RowChange],
    write: Callable[[str], object],
    *,
    exit_code: int,
    support_changes: Iterable[SupportRowChange] = (),
) -> None:
    """Write ``{"exit_code": ..., "diff": ...}`` as one JSON line, the changes streamed.

    The text is what `json.dumps` of the whole value would give (``diff.changes`` and
    ``diff.support_changes`` are ignored: ``changes`` and ``support_changes`` are
    written in their place), with DEL and C1 escaped.
    """
    head = json.dumps(
        {
            "exit_code": exit_code,
            "diff": diff.model_dump(mode="json", exclude={"changes", "support_changes"}),
        },
        ensure_ascii=False,
        allow_nan=False,
    )
    write(json_printable(head[:-2]) + ', "changes": [')
    for number, change in enumerate(changes):
        text = json.dumps(change.model_dump(mode="json"), ensure_ascii=False, allow_nan=False)
        write((", " if number else "") + json_printable(text))
    write('], "support_changes": [')
    for number, support_change in enumerate(support_changes):
        text = json.dumps(support_change.model_dump(mode="json"), ensure_ascii=False)
        write((", " if number else "") + json_printable(text))
    write("]}}\n")


def folder_href(folder: str | os.PathLike[str], page: str | os.PathLike[str]) -> str:
    """The URL of ``folder`` (ending in ``/``) as seen from a page written at ``page``."""
    target, base = Path(folder).resolve(), Path(page).resolve().parent
    try:
        relative = Path(os.path.relpath(target, base)).as_posix()
    except ValueError:  # another drive: only an absolute URL reaches it
        return target.as_uri() + "/"
    return urllib.parse.quote(relative, safe="/") + "/"


def _link(state: RowState | None, href: str | None) -> str:
    if state is None or href is None:
        return ""
    if state.on_page:
        target, text = f"report.html#row-{state.line}", f"report.html#row-{state.line}"
    elif state.on_page is None:
        target, text = "report.html", "report.html"
    else:
        target, text = "rows.jsonl", f"rows.jsonl line {state.record}"
    return f' <a href="{_e(href + target)}">{_e(text)}</a>'


def _row_html(change: RowChange, old_href: str | None, new_href: str | None) -> str:
    inputs = " ".join(f"<code>{_e(part)}</code>" for part in change.inputs_changed)
    return (
        f"<tr><td>{_e(_name(change))}</td>"
        f"<td>{_e(_state(change.old))}{_link(change.old, old_href)}</td>"
        f"<td>{_e(_state(change.new))}{_link(change.new, new_href)}</td>"
        f"<td>{' '.join(f'<code>{_e(kind)}</code>' for kind in change.why)}</td>"
        f"<td>{inputs}</td></tr>"
    )


def _differences_html(diff: RunDiff) -> str:
    items = [
        f"<li>{_e(kind)} <code>{_e(d.name)}</code>: <code>{_e(_value(d.old))}</code> &rarr; "
        f"<code>{_e(_value(d.new))}</code></li>"
        for kind, differences in (
            ("option", diff.option_differences),
            ("version", diff.version_differences),
            ("judge", diff.judge_differences),
        )
        for d in differences
    ]
    if not items:
        return '<p class="meta">options, versions and judge: the same in both runs</p>'
    return f'<ul class="reasons differences">{"".join(items)}</ul>'


def write_html(  # noqa: PLR0913 - the page's parts
    diff: RunDiff,
    changes: Iterable[RowChange],
    write: Callable[[str], object],
    *,
    old_name: str,
    new_name: str,
    old_href: str | None = None,
    new_href: str | None = None,
    support_changes: Iterable[SupportRowChange] = (),
) -> None:
    """Write the comparison as a self-contained page in the style of ``report.html``.

    Args:
        diff: The totals.
        changes: The changed rows, in order, written one at a time.
        write: Where the page's text goes.
        old_name: The old run's name, as shown.
        new_name: The new run's name, as shown.
        old_href: The old run's folder URL as seen from the page (see `folder_href`),
            for each row's links; None for no links.
        new_href: The same for the new run.
        support_changes: The rows whose advisory support verdicts changed, in order.
    """
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
    warning = (
        ""
        if diff.same_judge
        else '<p class="left-out">The judges differ: two instruments, not one.</p>'
    )
    inputs = (
        "the same input"
        if diff.same_input
        else '<span class="left-out">different inputs: rows matched by id, question or line</span>'
    )
    write(
        "\n".join(
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
                    f"{_e(_judge_note(diff))}<br>{_e(_match_note(diff))}<br>"
                    f"{_e(_changes_note(diff))}</p>"
                ),
                warning,
                _differences_html(diff),
                f'<dl class="counts">{counts}</dl>',
                f'<ul class="reasons">{why}</ul>' if why else "",
                "</header>",
                (
                    '<main><table class="diff"><thead><tr><th>row</th><th>old</th><th>new</th>'
                    "<th>why</th><th>inputs changed</th></tr></thead><tbody>"
                ),
            ]
        )
    )
    for change in changes:
        write(_row_html(change, old_href, new_href))
    write("</tbody></table>")
    _write_support_html(diff, support_changes, write)
    write("</main>\n</body></html>\n")


def _write_support_html(
    diff: RunDiff, changes: Iterable[SupportRowChange], write: Callable[[str], object]
) -> None:
    """The support section: the note, then one row per changed row (advisory)."""
    note = _support_note(diff)
    if note is None:
        return
    write(f'<section class="support"><h2>Support (advisory)</h2><p class="meta">{_e(note)}</p>')
    if diff.support is not None and diff.support.rows_changed:
        write(
            '<table class="diff"><thead><tr><th>row</th><th>changed verdicts</th></tr>'
            "</thead><tbody>"
        )
        for change in changes:
            name = f"line {change.new_line}"
            if change.id is not None:
                name = f"{change.id} ({name})"
            flips = "<br>".join(_e(flip.text()) for flip in change.flips)
            write(f"<tr><td>{_e(name)}</td><td>{flips}</td></tr>")
        write("</tbody></table>")
    write("</section>")


def render_html(
    diff: RunDiff,
    *,
    old_name: str,
    new_name: str,
    old_href: str | None = None,
    new_href: str | None = None,
) -> str:
    """The comparison as a self-contained page in the style of ``report.html``."""
    parts: list[str] = []
    write_html(
        diff,
        diff.changes,
        parts.append,
        old_name=old_name,
        new_name=new_name,
        old_href=old_href,
        new_href=new_href,
        support_changes=diff.support_changes,
    )
    return "".join(parts)
