"""Structured quotes are searched through one index per answer, not quote by source (issue 38).

Before, every quote was looked for in every source: 600 quotes against a 10 MiB
source line cost 600 full scans. Now the sources are normalized and joined once,
each distinct quote is searched once in the joined text (its first occurrence names
its first holder), and only a quote first held before the source it cites is looked
for again, in that source alone; many quotes go through one Aho-Corasick pass.

`naive_quote_findings` below is the old implementation, kept as the oracle: the
differential tests compare every outcome and every ``in_other_source`` with it, on
both search paths (one `str.find` per quote, and the automaton). Speed is measured in
``bench/structured_quotes.py``; here the work is counted.
"""

from __future__ import annotations

import json
import math
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from citemark import Source, check_structured
from citemark._pipelines.cli.main import main
from citemark._sources import structured
from citemark._sources.structured import normalize_quote

if TYPE_CHECKING:
    from collections.abc import Iterator

# Few letters so that quotes overlap, recur and straddle sources; a space, a newline,
# a control character and typographic quotes so that normalization is exercised.
_ALPHABET = "ab \n\x01\u201c\u201d\"'\u2019"


def naive_quote_findings(
    entries: list[Any], sources: list[Source], base: int
) -> tuple[list[tuple[str, int | None]], list[int]]:
    """The old check: each quote searched in every source; (outcome, other) and cited ids."""
    texts = [normalize_quote(s.text) for s in sources]
    cited: dict[int, None] = {}
    results: list[tuple[str, int | None]] = []
    for entry in entries:
        source_id = entry if isinstance(entry, int) else entry["source_id"]
        in_range = base <= source_id < len(sources) + base
        if isinstance(entry, int):
            if in_range:
                cited.setdefault(source_id)
            results.append(("resolved" if in_range else "out_of_range", None))
            continue
        needle = normalize_quote(entry["quote"])
        holders = [n for n, text in enumerate(texts, start=base) if needle and needle in text]
        if not in_range:
            outcome = "out_of_range"
        elif not needle:
            outcome = "blank_quote"
        elif source_id in holders:
            cited.setdefault(source_id)
            outcome = "verified"
        else:
            outcome = "quote_not_in_source"
        other = (
            next((n for n in holders if n != source_id), None) if outcome != "verified" else None
        )
        results.append((outcome, other))
    return results, list(cited)


def _findings(entries: list[Any], sources: list[Source], base: int) -> tuple[list, list]:
    checked = check_structured({"citations": entries}, sources, index_base=base)
    results = [(c.outcome, c.in_other_source) for c in checked.findings.citations]
    return results, [c.marker for c in checked.citations]


@st.composite
def rows(draw: st.DrawFn) -> tuple[list[Any], list[Source], int]:
    """Sources of a small alphabet, and ids and quotes cut from them or made up."""
    base = draw(st.sampled_from([0, 1]))
    texts = draw(st.lists(st.text(_ALPHABET, max_size=30), min_size=1, max_size=6))
    sources = [Source(text=t, doc_id=f"d{i}") for i, t in enumerate(texts)]
    ids = st.integers(min_value=base - 1, max_value=len(texts) + base)

    @st.composite
    def quote(draw: st.DrawFn) -> str:
        if draw(st.booleans()):
            text = draw(st.sampled_from(texts))
            start = draw(st.integers(0, len(text)))
            return text[start : draw(st.integers(start, len(text)))]
        return draw(st.text(_ALPHABET, max_size=8))

    entry = ids | st.builds(lambda i, q: {"source_id": i, "quote": q}, ids, quote())
    return draw(st.lists(entry, max_size=24)), sources, base


# Each differential test runs on both search paths: `str.find` per quote, and the automaton.
PATHS = pytest.mark.parametrize("search_path", ["direct", "automaton"])


@contextmanager
def _forced(path: str, batch: int = 7) -> Iterator[None]:
    """With "automaton", every search goes through the automaton, in small batches."""
    with pytest.MonkeyPatch.context() as patch:
        if path == "automaton":
            patch.setattr(structured, "_DIRECT_SEARCHES", 0)
            patch.setattr(structured, "_DIRECT_BUDGET", 0)
            patch.setattr(structured, "_BATCH_CHARS", batch)
            patch.setattr(structured, "_LONG_QUOTE", 3)  # longer needles: one find each
        yield


class TestSameFindingsAsTheNaiveSearch:
    @PATHS
    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(row=rows())
    def test_outcomes_and_other_sources_match_the_old_search(self, search_path, row):
        entries, sources, base = row
        with _forced(search_path):
            assert naive_quote_findings(entries, sources, base) == _findings(entries, sources, base)

    @settings(max_examples=300, deadline=None)
    @given(
        text=st.text("abc\x00", max_size=60),
        needles=st.lists(st.text("abc", min_size=1, max_size=6), unique=True, max_size=20),
    )
    def test_the_automaton_finds_each_first_start_as_str_find_does(self, text, needles):
        with _forced("automaton", batch=5):
            assert [text.find(n) for n in needles] == structured._first_starts(needles, text)

    def test_nested_and_overlapping_needles_are_each_reported(self):
        needles = ["aab", "ab", "b", "abab", "ba", "aaab", "c"]
        text = "xaababab\x00aaab"
        with _forced("automaton", batch=1000):
            assert [text.find(n) for n in needles] == structured._first_starts(needles, text)

    @PATHS
    def test_a_quote_held_first_elsewhere_is_still_verified_in_its_own_source(self, search_path):
        sources = [Source(text=f"s{i} shared words", doc_id=f"d{i}") for i in range(5)]
        entries = [{"source_id": 3, "quote": "shared words"}, {"source_id": 4, "quote": "s0"}]
        with _forced(search_path):
            assert [("verified", None), ("quote_not_in_source", 0)] == _findings(
                entries, sources, 0
            )[0]


class TestWorkIsBounded:
    """Counted, not timed: the calls into the search primitive and what they read."""

    def _count(self, monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
        calls: list[tuple[int, int]] = []
        search = structured._first_starts

        def counting(needles: list[str], text: str) -> list[int]:
            calls.append((len(needles), len(text)))
            return search(needles, text)

        monkeypatch.setattr(structured, "_first_starts", counting)
        return calls

    def test_600_quotes_read_each_source_at_most_twice_not_600_times(self, monkeypatch):
        calls = self._count(monkeypatch)
        sources = [Source(text=f"source {i} " + "ab " * 300, doc_id=f"d{i}") for i in range(20)]
        # Verified, misattributed (held by an earlier source than the one cited), invented.
        entries: list[Any] = [
            {"source_id": i % 20, "quote": f"source {i % 20}"} for i in range(200)
        ]
        entries += [{"source_id": 19, "quote": f"ab ab source {i % 19}"} for i in range(200)]
        entries += [{"source_id": i % 20, "quote": f"made up {i}"} for i in range(200)]
        checked = check_structured({"citations": entries}, sources, index_base=0)
        assert 400 == len(checked.findings.wrong_quotes)
        joined = sum(len(normalize_quote(s.text)) + 1 for s in sources)
        # The old search: one `in` per quote and source, 600 x 20 = 12,000 scans.
        assert len(calls) <= 2  # the joined sources, then source 19 for the misattributed
        assert sum(size for _, size in calls) <= 2 * joined
        assert calls[0][0] == len({normalize_quote(e["quote"]) for e in entries})

    def test_many_quotes_take_one_automaton_pass_per_batch(self, monkeypatch):
        passes: list[int] = []
        scan = structured._scan
        monkeypatch.setattr(
            structured, "_scan", lambda n, b, t, f: (passes.append(len(t)), scan(n, b, t, f))
        )
        monkeypatch.setattr(structured, "_BATCH_CHARS", 1000)
        text = "a" * 200_000
        needles = [f"{'a' * (60 + i % 50)}b{i}" for i in range(600)]
        found = structured._first_starts(needles, text)
        assert [-1] * 600 == found
        chars = sum(map(len, needles))
        # Batches close at the first needle past 1,000 characters: at most one extra each.
        assert len(passes) <= math.ceil(chars / 1000) + 1
        assert all(size == len(text) for size in passes)

    def test_a_quote_longer_than_the_text_is_not_searched(self, monkeypatch):
        monkeypatch.setattr(structured, "_DIRECT_SEARCHES", 0)
        monkeypatch.setattr(structured, "_DIRECT_BUDGET", 0)
        passes: list[int] = []
        monkeypatch.setattr(structured, "_scan", lambda *args: passes.append(1))
        assert [-1, -1] == structured._first_starts(["abcd", "abcde"], "abc")
        assert not passes

    def test_citemark_check_reads_a_600_quote_row_through_the_index(
        self, monkeypatch, tmp_path, capsys
    ):
        """The row as ``citemark check`` is given it: one JSONL line, an answer object."""
        calls = self._count(monkeypatch)
        texts = [f"source {i} " + "words in a row " * 200 for i in range(10)]
        citations = [{"source_id": i % 10, "quote": f"source {i % 10} words"} for i in range(300)]
        citations += [{"source_id": 9, "quote": f"source {i % 9} words"} for i in range(300)]
        row = {
            "id": "long",
            "index_base": 0,
            "answer": {"answer": "An answer.", "citations": citations},
            "sources": [{"text": t, "doc_id": f"d{i}"} for i, t in enumerate(texts)],
        }
        path = tmp_path / "rows.jsonl"
        path.write_text(json.dumps(row) + "\n", encoding="utf-8")
        assert 0 == main(["check", str(path), "--out", str(tmp_path / "out")])
        capsys.readouterr()
        (done,) = [
            json.loads(x) for x in (tmp_path / "out" / "rows.jsonl").read_text().splitlines()
        ]
        assert ["quote_not_in_source"] == done["details"]["deterministic_failures"]
        found = done["details"]["structured"]["citations"]
        assert [i % 9 for i in range(300)] == [c["in_other_source"] for c in found[300:]]
        assert 2 == len(calls)  # the joined sources, then source 9 alone
        assert calls[1] == (9, len(normalize_quote(texts[9])))

    def test_a_quote_longer_than_a_quarter_batch_gets_no_trie_node(self, monkeypatch):
        monkeypatch.setattr(structured, "_BATCH_CHARS", 40)
        monkeypatch.setattr(structured, "_LONG_QUOTE", 10)
        batches: list[list[str]] = []
        scan = structured._scan
        monkeypatch.setattr(
            structured,
            "_scan",
            lambda n, b, t, f: (batches.append([n[i] for i in b]), scan(n, b, t, f)),
        )
        text = "ab" * 5000
        needles = [*(f"{'ab' * i}x" for i in range(1, 40)), "ab" * 20, "ab" * 21 + "a"]
        assert [text.find(n) for n in needles] == structured._first_starts(needles, text)
        in_tries = [n for batch in batches for n in batch]
        assert all(len(n) <= 10 for n in in_tries)
        assert all(sum(map(len, batch)) < 40 + 10 for batch in batches)
