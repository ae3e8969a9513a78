"""``report.html`` with ``check --verifier``: each marker's verdict, the verifier, re-attribution.

The page is a real ``citemark check --verifier lexical`` page (made in this process);
its rows carry untrusted text that must stay text, in the data and once the page's
script has drawn it in headless Chromium.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from test_report_html import DOM, chromium  # noqa: F401 - the fixture is used by name

from citemark._pipelines.cli.main import main

if TYPE_CHECKING:
    from pathlib import Path

SOURCES = [
    {"doc_id": "eiffel", "text": "The Eiffel Tower is 330 metres tall and stands in Paris."},
    {"doc_id": "everest", "text": "Mount Everest rises 8849 metres above sea level."},
    {"doc_id": "banana", "text": "Bananas are berries that grow in tropical climates."},
]
HOSTILE_ID = "<img src=x onerror=alert(1)></script>"
ROWS = [
    # Supported by the source it cites.
    {
        "id": HOSTILE_ID,
        "answer": "The Eiffel Tower <b>is</b> 330 metres tall [1].",
        "sources": SOURCES,
    },
    # Not supported by [3]; [2] says it: re-attributed.
    {"id": "wrong", "answer": "Mount Everest rises 8849 metres [3].", "sources": SOURCES},
]


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("support-page")
    runs = folder / "runs.jsonl"
    runs.write_text("".join(json.dumps(row) + "\n" for row in ROWS), encoding="utf-8")
    assert 0 == main(["check", str(runs), "--out", str(folder / "out"), "--verifier", "lexical"])
    return folder / "out" / "report.html"


def data_of(page: Path) -> dict[str, object]:
    text = page.read_text(encoding="utf-8")
    block = text.split('<script type="application/json" id="data">', 1)[1].split("</script>", 1)[0]
    record: dict[str, object] = json.loads(block)
    return record


def by_id(page: Path) -> dict[str, list[object]]:
    rows = data_of(page)["rows"]
    assert isinstance(rows, list)
    return {row[1]: row for row in rows}


class TestData:
    def test_each_resolved_marker_carries_its_verdict(self, page):
        rows = by_id(page)
        markers = {
            row_id: [p for p in row[4] if isinstance(p, list) and p[0] == 0]
            for row_id, row in rows.items()
        }
        # 0 supported (entailed), 1 not supported: the verdict alone of the cited source.
        assert [[0, 1, "[1]", 0]] == markers[HOSTILE_ID]
        assert [[0, 3, "[3]", 1]] == markers["wrong"]

    def test_each_row_carries_its_figures_and_reattribution(self, page):
        rows = by_id(page)
        assert [1.0, 1.0, []] == rows[HOSTILE_ID][14]
        assert [0.0, 0.0, [[1, 3, [2]]]] == rows["wrong"][14]

    def test_the_header_names_the_verifier_and_the_run_figures(self, page):
        text = page.read_text(encoding="utf-8")
        report = json.loads((page.parent / "report.json").read_text(encoding="utf-8"))
        digest = report["check"]["support"]["verifier"]["digest"]
        assert f"<code>lexical lexical 1 {digest}</code>" in text
        assert "support, advisory, verifier lexical sha256:" in text

    def test_untrusted_text_stays_escaped_in_the_data(self, page):
        text = page.read_text(encoding="utf-8")
        for hostile in ("<img", "</script><", "<b>is"):
            assert hostile not in text
        assert HOSTILE_ID in by_id(page)


class TestInChromium:
    def test_markers_show_their_verdict_and_nothing_hostile_runs(self, chromium, page):  # noqa: F811
        dom = DOM(chromium(page.as_uri(), "--dump-dom"))
        markers = {m.attrs["data-support"]: m for m in dom.find("a", "marker")}
        assert {"entailed", "not_entailed"} == set(markers)
        assert markers["entailed"].attrs["title"] == "cites source 1; support (advisory): supported"
        assert "support-not_entailed" in markers["not_entailed"].classes
        moved = [li.text for li in dom.find("li") if li.within("ul") is not None]
        assert "sentence 1: [3] not supported alone; supported by [2]" in moved
        assert [] == dom.find("img") + dom.find("b")
        assert ["application/json", None] == [e.attrs.get("type") for e in dom.find("script")]
