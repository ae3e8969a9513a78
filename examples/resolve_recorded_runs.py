"""Retrieve, render, resolve and verify recorded answers, with no model.

First, BM25 over the bundled license corpus retrieves four chunks for a question
and renders them as the numbered list a model would see. Then, for each recorded
pipeline run in examples/data/example-runs.jsonl that has integer-marker sources,
the recorded answer is resolved against the list that model was shown, and every
citation is verified by re-reading the license file it points into. The last column
says whether citemark's own BM25 retrieves the same four spans in the same order.

`make demo` checks the same runs with `citemark check`, which grades every row
(labelled contexts too) and writes report.json and report.html; this example shows
the library calls underneath, resolution and verification, one row at a time.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from citemark import (
    BM25Retriever,
    FileReader,
    MarkerOutOfRangeError,
    Source,
    render_sources,
    resolve,
    verify_citation,
)

DATA = Path(__file__).resolve().parent / "data"
LICENSES = DATA / "licenses"


def main() -> int:
    console = Console(highlight=False)
    retriever = BM25Retriever.from_directory(LICENSES, patterns=("*",))
    reader = FileReader(DATA)
    lines = (DATA / "example-runs.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    runs = [row for row in rows if "sources" in row]

    first = runs[0]
    sources = retriever.retrieve(first["question"], k=4)
    console.print(f"[bold]Question:[/bold] {first['question']}")
    console.print(
        f"[bold]BM25 over {len(retriever.chunks)} chunks of {LICENSES.name}/ "
        "rendered as the model sees it:[/bold]"
    )
    console.print(render_sources(sources), markup=False)
    console.print()

    table = Table(title="Recorded answers, resolved and re-read from the license files")
    for column in ("run", "outcome", "citations: marker, document, span, check", "BM25 same"):
        table.add_column(column, overflow="fold")
    for row in runs:
        recorded = [Source.model_validate(source) for source in row["sources"]]
        retrieved = retriever.retrieve(row["question"], k=4)
        same = "yes" if _spans(retrieved) == _spans(recorded) else "no"
        try:
            answer = resolve(row["answer"], recorded)
        except MarkerOutOfRangeError as exc:
            table.add_row(
                row["id"],
                "[red]rejected[/red]",
                f"marker [{exc.marker}] of {exc.valid_count}",
                same,
            )
            continue
        if not answer.citations:
            table.add_row(row["id"], "[yellow]abstained[/yellow]", "no markers", same)
            continue
        checks = []
        for citation in answer.citations:
            outcome = verify_citation(citation, reader).outcome
            colour = "green" if outcome == "verified" else "red"
            checks.append(
                f"[{citation.marker}]: {citation.doc_id} {citation.start}-{citation.end} "
                f"[{colour}]{outcome}[/{colour}]"
            )
        table.add_row(row["id"], "[green]answered[/green]", "\n".join(checks), same)
    console.print(table)
    return 0


def _spans(sources: list[Source]) -> list[tuple[str, int | None, int | None]]:
    return [(source.doc_id, source.start, source.end) for source in sources]


if __name__ == "__main__":
    sys.exit(main())
