"""``citemark check --group-by FIELD`` and the top failure causes (issue 12, item 5).

Rows from several pipelines are checked in one run and read back by group: the
terminal summary, ``report.json`` and ``report.html`` break every count down by the
field's value, and identical failures are collapsed into one cause with a count. Each
test also runs the naive variant (counting without grouping, or listing failures one
per row) to show the assertion tells them apart.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from citemark._pipelines.check.groups import (
    MAX_GROUP_CHARS,
    MAX_GROUPS,
    NO_GROUP,
    OTHER_GROUP,
    group_name,
)
from citemark._pipelines.cli.main import main

if TYPE_CHECKING:
    from pathlib import Path

SOURCES = [{"text": "The tower was completed in 1889.", "doc_id": "eiffel"}]


def row(number: int, model: object, answer: str) -> dict[str, object]:
    out: dict[str, object] = {"id": f"r{number}", "answer": answer, "sources": SOURCES}
    if model is not None:
        out["model"] = model
    return out


def write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def run(tmp_path: Path, capsys, *extra: str) -> tuple[dict, str, str]:
    rows = [row(i, "gpt-4o", "It opened in 1889 [1].") for i in range(3)]
    rows += [row(10 + i, "llama", "It opened in 1889 [0].") for i in range(4)]
    rows += [row(20, 7, "It opened in 1889 [2]."), row(21, None, "It opened in 1889 [1].")]
    runs = write(tmp_path / "runs.jsonl", rows)
    out = tmp_path / "out"
    main(["check", str(runs), "--out", str(out), *extra])
    printed = capsys.readouterr().out
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))["check"]
    page = (out / "report.html").read_text(encoding="utf-8")
    return report, printed, page


def test_counts_are_broken_down_by_group(tmp_path, capsys):
    report, printed, page = run(tmp_path, capsys, "--group-by", "model")
    groups = report["groups"]
    assert report["group_by"] == "model"
    assert list(groups) == ["llama", "gpt-4o", NO_GROUP]  # most rows first
    assert groups["llama"]["rows"] == 4
    assert groups["llama"]["deterministic_failures"] == 4
    assert groups["llama"]["possible_zero_based_numbering"] == 4
    assert groups["llama"]["violations"] == {"fabricated_citation": 4}
    assert groups["gpt-4o"]["citations_all_resolve"] == 3
    assert groups["gpt-4o"]["deterministic_failures"] == 0
    # The non-string 7 and the missing field are both "(none)": one failed, one fine.
    assert groups[NO_GROUP]["rows"] == 2
    assert groups[NO_GROUP]["deterministic_failures"] == 1
    # The groups add up to the whole run; a naive breakdown by the raw value would
    # have a group for 7 and lose the row without the field.
    assert sum(g["rows"] for g in groups.values()) == report["rows"] == 9
    assert "7" not in groups
    assert "by model" in printed
    assert "llama" in printed
    assert '<section class="groups"><h2>By model</h2>' in page
    assert '<td><a href="#group=llama">llama</a></td><td>4</td>' in page


def test_identical_failures_are_one_cause(tmp_path, capsys):
    report, printed, page = run(tmp_path, capsys, "--group-by", "model")
    causes = report["failure_causes"]
    # Five fabrications (four [0], one [2]) collapse into one cause; the no_judge rows
    # are the run's choice, not failures.
    assert causes == [
        {
            "outcome": "failed",
            "cause": "fabricated_citation",
            "rows": 5,
            "groups": {"llama": 4, NO_GROUP: 1},
        }
    ]
    # Naive: one line per failed row, five lines saying the same thing.
    assert report["deterministic_failures"] == 5
    # Without a judge a failed row is named by the headline's word: a violation.
    assert "top failure causes: 5 violation fabricated_citation" in printed
    assert "<h2>Top failure causes</h2>" in page
    assert page.count("<code>fabricated_citation</code>") >= 1


def test_without_group_by_there_are_no_groups(tmp_path, capsys):
    report, printed, page = run(tmp_path, capsys)
    assert report["group_by"] is None
    assert report["groups"] == {}
    assert report["failure_causes"][0]["groups"] == {}
    assert "by model" not in printed
    assert 'class="groups"' not in page


def test_group_names_are_bounded_and_printable(tmp_path, capsys):
    long = "m" * 500
    assert group_name(long) == "m" * MAX_GROUP_CHARS + "\u2026"
    assert group_name("a\x1b[31mb\ud800") == "a\ufffd[31mb\ufffd"
    assert group_name(["list"]) == NO_GROUP
    rows = [row(i, f"model-{i}", "It opened in 1889 [1].") for i in range(MAX_GROUPS + 20)]
    runs = write(tmp_path / "many.jsonl", rows)
    out = tmp_path / "many"
    main(["check", str(runs), "--out", str(out), "--group-by", "model", "--json"])
    capsys.readouterr()
    groups = json.loads((out / "report.json").read_text(encoding="utf-8"))["check"]["groups"]
    assert len(groups) == MAX_GROUPS + 1
    assert groups[OTHER_GROUP]["rows"] == 20
    assert sum(g["rows"] for g in groups.values()) == MAX_GROUPS + 20
