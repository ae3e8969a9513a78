"""report.html (issue 23): the headline leads, and the filter labels and count cards follow the page.

The static tests read the page citemark wrote; the browser tests load it in headless
Chromium (the fixture of ``test_report_html``) and read the DOM after the page's
script ran, with ``#show=`` and ``#group=`` fragments.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from test_report_html import (  # noqa: F401 - the fixtures are used by name
    DOM,
    EXAMPLE_RUNS,
    check,
    chromium,
    grouped_report,
    provider_report,
)

if TYPE_CHECKING:
    from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory) -> Path:
    return check(EXAMPLE_RUNS, tmp_path_factory.mktemp("demo"))


def page_texts(report: Path) -> list[str]:
    """The page's text table: every distinct string its rows refer to."""
    data = DOM(report.read_text(encoding="utf-8")).ids()["data"].text
    texts: list[str] = json.loads(data)["texts"]
    return texts


def labels(dom: DOM) -> dict[str, str]:
    """Each outcome filter's count label, by outcome."""
    return {e.attrs["data-shown"]: e.text for e in dom.find("span") if "data-shown" in e.attrs}


def cards(dom: DOM) -> dict[str, str]:
    """Each count card's value, by key."""
    return {e.attrs["data-card"]: e.text for e in dom.find("dd") if "data-card" in e.attrs}


class TestStaticHeadline:
    def test_the_headline_leads_and_the_judge_line_is_apart(self, demo_report):
        """13 of 16 rows cite only given sources, 3 fabricate; no judge reads 'not asked'."""
        dom = DOM(demo_report.read_text(encoding="utf-8"))
        facts = [e.text for e in dom.find("p", "facts")]
        assert [
            (
                "13 of 16 rows cite only sources they were given (2 cite nothing); 3 have a "
                "violation (3 cite a source they were not given); 0 could not be checked; "
                "0 lines unreadable."
            ),
            "judge: not asked (deterministic findings only).",
            "not checked without a judge: whether a cited source supports its sentence.",
        ] == facts
        assert ("16", "13", "2", "3", "0") == tuple(
            cards(dom)[key] for key in ("rows", "given", "nothing", "violations", "unchecked")
        )

    def test_the_page_names_no_command_line_flag(self, demo_report):
        """The page is also the pytest plugin's report: it never tells of --fail-on-violation."""
        assert "--fail-on-violation" not in demo_report.read_text(encoding="utf-8")

    def test_one_source_is_not_plural(self, grouped_report):  # noqa: F811
        """A row given one source says '1 source', never '1 sources'."""
        assert ["1 source, 0 cited", "1 source, 1 cited"] == sorted(
            t for t in page_texts(grouped_report) if t.startswith("1 source")
        )

    def test_a_verified_provider_citation_cites_its_source(self, provider_report):  # noqa: F811
        """A row whose provider citation verified reads '1 cited', not '0 cited'."""
        counts = [t for t in page_texts(provider_report) if " cited" in t and "source" in t]
        assert "1 cited" in counts[0]
        assert counts[0].endswith("1 cited")


class TestLabelsFollowTheFilters:
    def test_hidden_rows_are_not_counted_as_shown(self, chromium, demo_report):  # noqa: F811
        """#show=failed: the label of the 13 rows citing only given sources says 0 shown of 13.

        Without a judge the three filters are the headline's counts (issue 35): 3 with
        a violation, 0 that could not be checked, 13 that cite only given sources.
        """
        dom = DOM(chromium(demo_report.as_uri() + "#show=failed", "--dump-dom"))
        assert {
            "failed": "(3 shown of 3)",
            "unassessed": "(0 shown of 0)",
            "passed": "(0 shown of 13)",
        } == labels(dom)

    def test_every_row_shown_by_default(self, chromium, demo_report):  # noqa: F811
        dom = DOM(chromium(demo_report.as_uri(), "--dump-dom"))
        assert {
            "failed": "(3 shown of 3)",
            "unassessed": "(0 shown of 0)",
            "passed": "(13 shown of 13)",
        } == labels(dom)


class TestCardsFollowTheGroup:
    def test_a_group_shows_its_own_counts(self, chromium, grouped_report):  # noqa: F811
        """#group=gpt-4o: the cards count that group's 2 rows, 1 citing only given sources, 1 violation."""
        dom = DOM(chromium(grouped_report.as_uri() + "#group=gpt-4o", "--dump-dom"))
        shown = cards(dom)
        assert ("2", "1", "1") == (shown["rows"], shown["given"], shown["violations"])
        # No judge ran: no judge-era tile is on the page.
        assert not {"failed", "unassessed", "passed"} & set(shown)
        assert {
            "failed": "(1 shown of 1)",
            "unassessed": "(0 shown of 0)",
            "passed": "(1 shown of 1)",
        } == labels(dom)
        assert "gpt-4o" in dom.ids()["scope"].text

    def test_every_group_shows_the_totals(self, chromium, grouped_report):  # noqa: F811
        dom = DOM(chromium(grouped_report.as_uri(), "--dump-dom"))
        assert ("3", "2", "1") == tuple(cards(dom)[k] for k in ("rows", "given", "violations"))
        assert "Counts of every row." == dom.ids()["scope"].text
