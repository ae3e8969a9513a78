"""`citemark check` on rows recorded with a provider's raw response (issue 14, item 4).

Every run goes through the real entry point (``python -m citemark check``). The rows
hold Anthropic Messages and Gemini ``generateContent`` responses with non-ASCII text
(emoji, CJK, a combining mark), so the code-point, UTF-16 and UTF-8 conversions are all
on the path; each provider has a correct citation, one shifted by one unit, and one
naming a document that was not sent.
"""

from __future__ import annotations

import json
from pathlib import Path

from fake_openai import run_cli

from citemark._pipelines.readers.citemark_rows import CheckRow, parse_row
from citemark._pipelines.readers.provider_rows import read_provider_row
from citemark.providers import parse_provider_response

CANARY = "CANARY-9e1d"
TEA = f"🍵 Matcha 抹茶 is powdered green tea. Café au lait is not. {CANARY}"
CITED = "抹茶 is powdered green tea."
START = TEA.index(CITED)  # code points: the emoji before it is one, in UTF-16 it is two
GEMINI_DOC = f"Matcha is powdered green tea from 日本. {CANARY}"
GEMINI_PARTS = [{"text": "Tea! 🍵 "}, {"text": f"日本: matcha is powdered. {CANARY}"}]


def anthropic_row(row_id: str, *, start: int = START, index: int = 0) -> dict[str, object]:
    citation = {
        "type": "char_location",
        "cited_text": CITED,
        "document_index": index,
        "document_title": None,
        "start_char_index": start,
        "end_char_index": start + len(CITED),
    }
    return {
        "id": row_id,
        "question": f"What is matcha? {CANARY}",
        "provider": "anthropic",
        "provider_response": {
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"{CANARY} says: "},
                {"type": "text", "text": "it is powdered green tea.", "citations": [citation]},
            ],
        },
        "documents": [{"id": "tea", "text": TEA, "metadata": {"shelf": CANARY}}],
    }


def gemini_row(row_id: str, *, start: int = 8, uri: str = "gs://kb/tea.txt") -> dict[str, object]:
    # "日本: " is 8 UTF-8 bytes (3 + 3 + 1 + 1) but 4 code points.
    support = {
        "segment": {
            "partIndex": 1,
            "startIndex": start,
            "endIndex": 8 + len(b"matcha is powdered."),
            "text": "matcha is powdered.",
        },
        "groundingChunkIndices": [0],
    }
    chunk = {"retrievedContext": {"uri": uri, "text": "Matcha is powdered green tea"}}
    return {
        "id": row_id,
        "provider": "gemini",
        "provider_response": {
            "candidates": [
                {
                    "content": {"role": "model", "parts": GEMINI_PARTS},
                    "groundingMetadata": {
                        "groundingChunks": [chunk],
                        "groundingSupports": [support],
                    },
                }
            ]
        },
        "documents": [{"doc_id": "tea-jp", "provider_id": "gs://kb/tea.txt", "text": GEMINI_DOC}],
    }


def write_rows(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def check(tmp_path: Path, rows: list[dict[str, object]], *flags: str) -> tuple[int, Path, str]:
    runs = write_rows(tmp_path / "runs.jsonl", rows)
    out = tmp_path / "out"
    done = run_cli("check", str(runs), "--out", str(out), *flags)
    return done.returncode, out, done.stdout + done.stderr


def rows_by_id(out: Path) -> dict[str, dict[str, object]]:
    records = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
    return {record["id"]: record for record in records}


def outcomes(record: dict[str, object]) -> list[str]:
    details = record["details"]
    assert isinstance(details, dict)
    return [c["outcome"] for c in details["provider_citations"]]


class TestCorrectAndShifted:
    def test_correct_citations_verify_and_the_row_passes_the_gate(self, tmp_path):
        """Both providers' exact citations verify; the gate exits 0 and nothing fails."""
        code, out, _ = check(
            tmp_path, [anthropic_row("a-ok"), gemini_row("g-ok")], "--fail-on-violation"
        )
        rows = rows_by_id(out)
        assert code == 0
        assert outcomes(rows["a-ok"]) == ["verified"]
        assert outcomes(rows["g-ok"]) == ["verified"]
        for record in rows.values():
            assert record["outcome"] == "unassessed"
            assert record["reason"] == "provider_citations_not_graded"
            assert record["details"]["deterministic_failures"] == []
        summary = json.loads((out / "report.json").read_text())["check"]
        assert summary["provider_citations"] == {"verified": 2}
        assert summary["rows_with_provider_citations"] == 2
        assert summary["deterministic_failures"] == 0

    def test_a_verified_citation_counts_in_sentence_coverage(self, tmp_path):
        """A sentence a verified provider citation supports carries a citation (issue 23).

        Before, coverage counted markers only: "0 of 1 sentences" on a row whose one
        sentence the provider cited and citemark verified. A citation that does not
        verify (shifted by one) credits nothing.
        """
        _, out, _ = check(
            tmp_path,
            [anthropic_row("a-ok"), gemini_row("g-ok"), anthropic_row("a-off", start=START + 1)],
        )
        rows = rows_by_id(out)

        def coverage(row_id: str) -> tuple[int, int, list[str]]:
            found = rows[row_id]["details"]["sentence_coverage"]
            return found["cited_sentences"], found["sentences"], found["uncited_sentences"]

        assert coverage("a-ok") == (1, 1, [])
        assert coverage("g-ok") == (1, 3, ["Tea!", CANARY])
        assert coverage("a-off") == (0, 1, [f"{CANARY} says: it is powdered green tea."])
        assert rows["a-ok"]["citation_outcome"] == "cited"

    def test_the_response_span_is_in_code_points_of_the_whole_answer(self, tmp_path):
        """Gemini's part-relative UTF-8 offsets land on the right code points of the answer."""
        _, out, _ = check(tmp_path, [gemini_row("g-ok")])
        citation = rows_by_id(out)["g-ok"]["details"]["provider_citations"][0]["citation"]
        answer = "".join(part["text"] for part in GEMINI_PARTS)
        span = citation["response_span"]
        assert answer[span["start"] : span["end"]] == "matcha is powdered."
        # The naive reading (bytes used as code points, relative to the whole text) is not.
        assert answer[8 : 8 + len(b"matcha is powdered.")] != "matcha is powdered."

    def test_a_citation_shifted_by_one_unit_fails_in_code(self, tmp_path):
        """One code point (Anthropic) or one byte (Gemini) off is a deterministic failure."""
        shifted_a = anthropic_row("a-shift", start=START - 1)
        shifted_g = gemini_row("g-shift", start=9)
        code, out, _ = check(tmp_path, [shifted_a, shifted_g], "--fail-on-violation")
        rows = rows_by_id(out)
        assert code == 1
        assert outcomes(rows["a-shift"]) == ["mismatch"]
        assert outcomes(rows["g-shift"]) == ["mismatch"]
        for record in rows.values():
            assert record["outcome"] == "failed"
            assert record["details"]["deterministic_failures"] == ["provider_citation_mismatch"]
        summary = json.loads((out / "report.json").read_text())["check"]
        assert summary["violations"] == {"provider_citation_mismatch": 2}
        # The naive check (trust the provider's cited_text) passes the shifted citation.
        citation = rows["a-shift"]["details"]["provider_citations"][0]["citation"]
        assert citation["cited_text"] == CITED  # what a naive reader would accept
        assert TEA[citation["source_span"]["start"] : citation["source_span"]["end"]] != CITED

    def test_offsets_read_in_the_wrong_unit_are_a_unit_error(self, tmp_path):
        """Anthropic's code points read as UTF-16 (one more for the emoji) is a unit error."""
        utf16_start = len(TEA[:START].encode("utf-16-le")) // 2
        assert utf16_start == START + 1
        row = anthropic_row("a-utf16", start=utf16_start)
        row["provider_response"]["content"][1]["citations"][0]["end_char_index"] = (
            utf16_start + len(CITED)
        )
        code, out, _ = check(tmp_path, [row], "--fail-on-violation")
        citation = rows_by_id(out)["a-utf16"]["details"]["provider_citations"][0]
        assert (code, citation["outcome"]) == (1, "unit_error")


class TestUnsentDocuments:
    def test_a_citation_of_an_unsent_document_fails_the_gate(self, tmp_path):
        """document_index 1 of one sent document, or an unknown Gemini uri: unsent_document."""
        rows = [anthropic_row("a-ok"), anthropic_row("a-unsent", index=1)]
        rows.append(gemini_row("g-unsent", uri="gs://kb/other.txt"))
        code, out, _ = check(tmp_path, rows, "--fail-on-violation")
        assert code == 1
        records = rows_by_id(out)
        for row_id in ("a-unsent", "g-unsent"):
            record = records[row_id]
            assert outcomes(record) == ["unknown_document"]
            assert record["outcome"] == "failed"
            assert record["details"]["deterministic_failures"] == ["unsent_document"]
            assert record["details"]["provider_citations"][0]["citation"]["doc_id"] is None
        summary = json.loads((out / "report.json").read_text())["check"]
        assert summary["violations"] == {"unsent_document": 2}
        assert summary["provider_citations"] == {"unknown_document": 2, "verified": 1}
        # A row citing an unsent document is not one whose every citation resolves, and a
        # row whose only citations are the provider's does not cite nothing.
        assert (summary["citations_all_resolve"], summary["citations_all_resolve_none_cited"]) == (
            1,
            0,
        )
        # Without the flag the same rows are reported and the exit code is 0.
        assert check(tmp_path, rows)[0] == 0
        # A naive resolver that clamps the index to the last document sent would have
        # resolved the fabricated citation to a real document.
        naive = [d["id"] for d in rows[1]["documents"]][min(1, len(rows[1]["documents"]) - 1)]
        assert naive == "tea"

    def test_a_marker_beside_provider_citations_is_still_checked(self, tmp_path):
        """Without sources, the documents are the numbered list: [2] of one document fails."""
        row = anthropic_row("a-marker")
        row["provider_response"]["content"][1]["text"] = "it is powdered green tea [2]."
        code, out, _ = check(tmp_path, [row], "--fail-on-violation")
        record = rows_by_id(out)["a-marker"]
        assert code == 1
        assert record["details"]["deterministic_failures"] == ["fabricated_citation"]
        assert outcomes(record) == ["verified"]


def page_texts(page: str) -> list[str]:
    """The text table of report.html's data block (the page's script draws rows from it)."""
    data = page.split('<script type="application/json" id="data">', 1)[1]
    return json.loads(data.split("</script>", 1)[0])["texts"]


class TestReport:
    def test_the_page_shows_each_provider_citation_with_its_outcome(self, tmp_path):
        """Each provider citation is listed on its row, failures styled as failures."""
        rows = [anthropic_row("a-ok"), anthropic_row("a-unsent", index=1)]
        _, out, _ = check(tmp_path, rows)
        page = (out / "report.html").read_text(encoding="utf-8")
        texts = page_texts(page)
        ok = [t for t in texts if t.startswith("provider citation 1: verified")]
        bad = [t for t in texts if t.startswith("provider citation 1: unknown_document")]
        assert 1 == len(ok)
        assert 1 == len(bad)
        assert "cites: \u201cit is powdered green tea.\u201d" in ok[0]
        assert "a document that was not sent" in bad[0]
        assert "provider-citation resolved" in texts
        assert "provider-citation fabricated" in texts
        assert "provider citations in 2 rows" in page

    def test_untrusted_text_is_escaped(self, tmp_path):
        """Markup in a document, an answer or a provider's document reference is shown, not run."""
        row = anthropic_row("a-html", index=1)
        row["documents"][0]["text"] = TEA + " <script>alert(1)</script>"
        row["provider_response"]["content"][0]["text"] = "<img src=x onerror=alert(1)> "
        row["provider_response"]["content"][1]["citations"][0]["document_index"] = 0
        row["provider_response"]["content"][1]["citations"].append(
            {
                "type": "web_search_result_location",
                "cited_text": "<b>x</b>",
                "url": "<u>",
                "title": None,
                "encrypted_index": "e",
            }
        )
        _, out, _ = check(tmp_path, [row])
        page = (out / "report.html").read_text(encoding="utf-8")
        assert "<script>alert(1)" not in page
        assert "<img src=x" not in page
        # In the data block the text is JSON, its markup characters escaped...
        assert "\\u003cimg src=x onerror=alert(1)\\u003e" in page
        # ...and it is the answer's own text once decoded (drawn with textContent).
        data = page.split('<script type="application/json" id="data">', 1)[1].split("</script>")[0]
        assert "<img src=x onerror=alert(1)>" in json.dumps(json.loads(data), ensure_ascii=False)


class TestCanary:
    def test_no_answer_or_document_text_reaches_the_console(self, tmp_path):
        """Errors and logs carry codes and counts only; artifacts hold the text."""
        rows = [anthropic_row("a-ok"), anthropic_row("a-unsent", index=1)]
        rows.append(gemini_row("g-shift", start=9))
        broken = anthropic_row("a-broken")
        broken["provider_response"]["content"] = {"text": CANARY}
        rows.append(broken)
        code, out, console = check(tmp_path, rows, "--fail-on-violation")
        assert code == 1
        assert CANARY not in console
        assert (
            "provider citations in 3 rows: 1 mismatch, 1 unknown_document, 1 verified"
            in " ".join(console.split())
        )
        # The naive variant, a console that echoed the answer, would be caught.
        assert CANARY in console + rows[0]["provider_response"]["content"][0]["text"]
        summary = json.loads((out / "report.json").read_text())["check"]
        assert summary["malformed"] == 1
        reason = summary["malformed_lines"][0]["reason"]
        assert reason.startswith("provider_response is not of the documented shape")
        assert CANARY not in json.dumps(summary)
        assert CANARY in (out / "rows.jsonl").read_text()  # artifacts are data


class TestRowShape:
    def read(self, row: dict[str, object]) -> CheckRow | str:
        parsed = parse_row(1, json.dumps(row).encode())
        assert parsed is not None
        return parsed if isinstance(parsed, CheckRow) else parsed.reason

    def test_the_answer_is_the_response_text_and_documents_are_the_sources(self):
        row = self.read(anthropic_row("a"))
        assert isinstance(row, CheckRow)
        expected = parse_provider_response(
            "anthropic", anthropic_row("a")["provider_response"], [{"doc_id": "tea", "text": TEA}]
        ).text
        assert row.answer == expected
        assert [(s.doc_id, s.text) for s in row.sources] == [("tea", TEA)]
        assert row.provider is not None
        assert [v.outcome for v in row.provider.verifications] == ["verified"]

    def test_malformed_provider_rows_say_why_without_quoting(self):
        cases: list[tuple[dict[str, object], str]] = []
        bad = anthropic_row("a")
        bad["provider"] = CANARY
        cases.append((bad, "provider must be one of: anthropic, "))
        bad = anthropic_row("a")
        del bad["documents"]
        cases.append((bad, "documents is missing"))
        bad = anthropic_row("a")
        bad["documents"] = [{"id": "tea", "text": TEA, CANARY: 1}]
        cases.append((bad, "document 1 does not fit the SentDocument schema"))
        bad = anthropic_row("a")
        bad["answer"] = CANARY
        cases.append((bad, "answer differs from the provider response's text"))
        bad = anthropic_row("a")
        bad["documents"] = [{"id": "tea", "text": TEA}, {"doc_id": "tea", "text": CANARY}]
        cases.append((bad, "two documents share one"))
        bad = anthropic_row("a")
        bad["provider_response"]["content"][1]["text"] = 5
        cases.append((bad, "provider_response is not of the documented shape: content[1].text"))
        bad = anthropic_row("a")
        bad["documents"] = [
            {"id": "tea", "text": TEA},
            {"id": "tea-2", "provider_id": "tea", "text": CANARY},
        ]
        cases.append((bad, "documents 1 and 2 share one provider reference"))
        for row, expected in cases:
            reason = self.read(row)
            assert isinstance(reason, str)
            assert reason.startswith(expected), reason
            assert CANARY not in reason

    def test_an_equal_answer_beside_the_response_is_accepted(self):
        row = anthropic_row("a")
        row["answer"] = f"{CANARY} says: it is powdered green tea."
        value, provider = read_provider_row(row)
        assert value["answer"] == row["answer"]
        assert [v.outcome for v in provider.verifications] == ["verified"]


class TestTextThatIsNotAString:
    def test_a_non_string_answer_is_a_malformed_line(self, tmp_path):
        """Issue 26: an answer text of a list is refused, not graded as its str()."""
        good = anthropic_row("a-ok")
        broken = anthropic_row("a-list")
        broken["provider_response"]["content"][1]["text"] = [CANARY]
        code, out, console = check(tmp_path, [good, broken])
        assert code == 0
        assert CANARY not in console
        summary = json.loads((out / "report.json").read_text())["check"]
        assert summary["malformed"] == 1
        assert summary["malformed_lines"][0]["reason"] == (
            "provider_response is not of the documented shape: content[1].text is not a string"
        )
        records = [json.loads(line) for line in (out / "rows.jsonl").read_text().splitlines()]
        assert ["a-ok"] == [record["id"] for record in records if "id" in record]
