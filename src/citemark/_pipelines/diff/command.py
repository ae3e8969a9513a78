"""``citemark diff``: compare two runs and write the text, JSON and page, streamed.

The command compares the runs once (`citemark._pipelines.diff.compare.compared`), then writes
the page (``--html``) and the standard output from the on-disk index, so neither run
nor the list of changes is ever held in memory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from citemark._contract.artifacts import AtomicFile
from citemark._contract.errors import RunDiffError
from citemark._pipelines.diff.compare import compared
from citemark._pipelines.diff.render import folder_href, write_html, write_json, write_text

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path
    from typing import TextIO

    from citemark._pipelines.diff.compare import RowChange, RunDiff, SupportRowChange
    from citemark._pipelines.diff.matching import MatchRule

__all__ = ["run_diff"]


def run_diff(  # noqa: PLR0913 - the command's options
    old: Path,
    new: Path,
    *,
    html: Path | None,
    as_json: bool,
    out: TextIO,
    exit_code: int,
    match: MatchRule = "auto",
) -> None:
    """Compare ``old`` with ``new``; write ``--html`` if asked, then the text or JSON to ``out``.

    ``match`` is ``--match``: how rows are paired (see `citemark._pipelines.diff.matching`).

    Raises:
        RunDiffError: the runs cannot be compared (see `citemark.diff.compare_runs`),
            or the page cannot be written.
    """
    with compared(old, new, match=match) as (summary, changes, support):
        if html is not None:
            problem: str | None = None
            try:
                _write_page(summary, changes(), support(), old=old, new=new, html=html)
            except OSError as exc:
                problem = exc.strerror or type(exc).__name__
            if problem is not None:
                # Raised outside the except block: the refusal chains nothing.
                msg = f"cannot write --html: {problem}"
                raise RunDiffError(msg)
        if as_json:
            write_json(
                summary, changes(), out.write, exit_code=exit_code, support_changes=support()
            )
        else:
            write_text(summary, changes(), out.write, support_changes=support())


def _write_page(  # noqa: PLR0913 - the page's parts
    summary: RunDiff,
    changes: Iterator[RowChange],
    support: Iterator[SupportRowChange],
    *,
    old: Path,
    new: Path,
    html: Path,
) -> None:
    html.parent.mkdir(parents=True, exist_ok=True)
    with AtomicFile(html) as page:
        write_html(
            summary,
            changes,
            lambda text: page.write(text.encode("utf-8", "backslashreplace")),
            old_name=str(old),
            new_name=str(new),
            old_href=folder_href(old, html),
            new_href=folder_href(new, html),
            support_changes=support,
        )
        page.commit()
