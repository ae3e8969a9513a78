"""report.html stays bounded by --html-rows however many sources a row has (issue 17, item 3).

500 rows x 2,000 small sources used to write every source of every shown row (a
186 MB page). A row now shows its cited sources plus at most
``MAX_UNCITED_SOURCES`` others, and says how many more it left out; rows.jsonl
lists every label.
"""

from __future__ import annotations

import json

import pytest
from fake_openai import run_cli

from citemark import CitationScorer, Source
from citemark._pipelines.check import html as page_module
from citemark._pipelines.check import page

SOURCES = 2_000
ROWS = 40


def row(n: int) -> dict[str, object]:
    sources = [
        {"text": f"Clause {k} of policy {n}: fees are due monthly.", "doc_id": f"p{n}-{k}"}
        for k in range(1, SOURCES + 1)
    ]
    return {"id": f"r{n}", "answer": "Fees are due monthly [1] and [1500].", "sources": sources}


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bounds")
    runs = folder / "runs.jsonl"
    runs.write_text("".join(json.dumps(row(n)) + "\n" for n in range(ROWS)), encoding="utf-8")
    done = run_cli("check", str(runs), "--out", str(folder / "out"))
    assert 0 == done.returncode, done.stderr
    return folder / "out"


def test_page_size_is_bounded_per_row(checked):
    page = (checked / "report.html").read_text(encoding="utf-8")
    per_row = len(page.encode()) / ROWS

    assert per_row < 20_000
    # The rows are the page's data (issue 12): each row lists its sources as flat
    # (number, description, text) triples, a cited one's number bit-inverted.
    data = json.loads(page.split('id="data">', 1)[1].split("</script>", 1)[0])
    rows = data["rows"]
    assert ROWS == len(rows)
    for record in rows:
        assert page_module.MAX_UNCITED_SOURCES + 2 == len(record[8]) // 3
        # Both cited sources, [1] and [1500], are shown and are link targets.
        assert [1, 1500] == [~k for k in record[8][::3] if k < 0]
        more = [data["texts"][i] for i in record[11]]
        assert [f"and {SOURCES - 2 - page_module.MAX_UNCITED_SOURCES} more not shown"] == more


def test_rows_file_lists_every_source(checked):
    """Nothing is dropped: the left-out sources are counted on the page, listed here."""
    first = json.loads((checked / "rows.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert SOURCES == len(first["details"]["labels"])


def test_naive_page_grows_with_the_sources(monkeypatch):
    """The naive variant (every source written) breaks the same per-row bound."""
    sources = [Source(**s) for s in row(0)["sources"]]  # type: ignore[arg-type]

    scorer = CitationScorer()
    answer = "Fees are due monthly [1] and [1500]."
    score = scorer.score_sync(answer, sources)

    def rendered() -> int:
        table = page.TextTable()
        record = page.row_record(
            line=1,
            row_id="r",
            question="",
            answer=answer,
            sources=sources,
            score=score,
            label_pattern=scorer.label_pattern,
            citation_pattern=scorer.citation_pattern,
            table=table,
        )
        return len(json.dumps([record, table.texts]).encode())

    bounded = rendered()
    monkeypatch.setattr(page, "MAX_UNCITED_SOURCES", 10**9)
    naive = rendered()
    assert bounded < 20_000
    assert naive > 20_000
