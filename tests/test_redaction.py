"""Redaction of personal data before a prompt leaves the process, SPEC §3.7."""

from __future__ import annotations

import asyncio
import re

import pytest

from citemark import RedactingChat, Source, Synthesizer, parse_markers
from citemark._model.redaction import redact, restore
from citemark.testing import ScriptedChat


class TestDetectors:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("mail jane.roe+x@mail.example.org now", "mail [EMAIL_1] now"),
            ("from 192.168.0.1.", "from [IPV4_1]."),
            ("not an ip 999.1.1.1 nor 1.2.3", "not an ip 999.1.1.1 nor 1.2.3"),
            ("v6 2001:db8::8a2e:370:7334 here", "v6 [IPV6_1] here"),
            ("at 12:30:45 sharp", "at 12:30:45 sharp"),
            ("card 4111 1111 1111 1111", "card [CARD_1]"),
            ("card 4111-1111-1111-1111", "card [CARD_1]"),
            ("not luhn 4111 1111 1111 1112", "not luhn 4111 1111 1111 1112"),
            ("call +44 20 7946 0958", "call [PHONE_1]"),
            ("call (415) 555-0100", "call [PHONE_1]"),
            ("dated 2026-11-30, version 2.0.1", "dated 2026-11-30, version 2.0.1"),
            ("mail o'brien@example.com", "mail [EMAIL_1]"),
            ("v6 ::ffff:192.0.2.1 end", "v6 [IPV6_1] end"),
            ("call +49 30 1234567", "call [PHONE_1]"),
            ("call 4155550100", "call [PHONE_1]"),
        ],
    )
    def test_detects(self, text, expected):
        """Each kind of personal data becomes a token; look-alikes stay."""
        assert expected == redact(text)[0]

    def test_same_value_same_token(self):
        """Within one call the same value always gets the same token."""
        text, tokens, counts = redact("a@x.org b@x.org a@x.org")
        assert "[EMAIL_1] [EMAIL_2] [EMAIL_1]" == text
        assert {"EMAIL": 2} == dict(counts)
        assert {"[EMAIL_1]": "a@x.org", "[EMAIL_2]": "b@x.org"} == tokens

    def test_caller_terms_win_longest_first(self):
        """Caller-supplied terms are redacted by kind, longest match first."""
        text, _, _ = redact("Jane Roe met Jane.", {"Jane Roe": "PERSON", "Jane": "PERSON"})
        assert "[PERSON_1] met [PERSON_2]." == text

    def test_existing_token_text_is_not_reused(self):
        """A literal [EMAIL_1] already in the text is skipped, so restoring cannot corrupt it."""
        text, tokens, _ = redact("literal [EMAIL_1] and a@x.org")
        assert "literal [EMAIL_1] and [EMAIL_2]" == text
        assert {"[EMAIL_2]": "a@x.org"} == tokens


class TestTermsAndMarkers:
    def test_terms_never_match_inside_marker_groups(self):
        """A numeric term leaves citemark's own [2] header alone."""
        text, _, _ = redact("[2] clause 2 applies", {"2": "CLAUSE"})
        assert "[2] clause [CLAUSE_1] applies" == text

    def test_restoring_never_creates_a_marker(self):
        """[[TERM_1]] for the term "2" stays a token instead of becoming [2]."""
        assert "see [[CLAUSE_1]]" == restore("see [[CLAUSE_1]]", {"[CLAUSE_1]": "2"})

    def test_naive_restore_is_caught(self):
        """Plain token substitution would turn it into citation 2."""
        naive = "see [[CLAUSE_1]]".replace("[CLAUSE_1]", "2")
        assert [2] == [o.number for o in parse_markers(naive)]
        assert [] == [
            o.number for o in parse_markers(restore("see [[CLAUSE_1]]", {"[CLAUSE_1]": "2"}))
        ]

    def test_other_tokens_still_restore(self):
        """Only a clashing token stays; the others are restored."""
        tokens = {"[CLAUSE_1]": "2", "[EMAIL_1]": "a@x.org"}
        assert "[[CLAUSE_1]] a@x.org" == restore("[[CLAUSE_1]] [EMAIL_1]", tokens)


class TestRedactingChat:
    def test_prompt_is_redacted_and_completion_restored(self):
        """The model sees tokens; the caller sees the values again."""
        inner = ScriptedChat(["Write to [EMAIL_1] about [PERSON_1] [1]."])
        chat = RedactingChat(inner, {"Jane Roe": "PERSON"})
        completion = asyncio.run(chat.complete("Jane Roe <jane@example.org> asked."))
        assert ["[PERSON_1] <[EMAIL_1]> asked."] == inner.prompts
        assert "Write to jane@example.org about Jane Roe [1]." == completion

    def test_report_counts_never_values(self):
        """The report says redaction applied and counts per kind, without any value."""
        inner = ScriptedChat(["ok", "ok"])
        chat = RedactingChat(inner, ["Project Falcon"])
        asyncio.run(chat.complete("jane@example.org and Project Falcon"))
        asyncio.run(chat.complete("10.0.0.1"))
        report = chat.report()
        assert (True, 2, {"EMAIL": 1, "IPV4": 1, "TERM": 1}) == (
            report.applied,
            report.calls,
            report.replaced,
        )
        assert "jane" not in report.model_dump_json()
        assert "Falcon" not in report.model_dump_json()

    def test_bad_kind_is_refused(self):
        """Kinds must be uppercase names, so every token stays unambiguous."""
        with pytest.raises(ValueError, match="uppercase"):
            RedactingChat(ScriptedChat([]), {"x": "person"})


def loose_markers(text: str) -> list[str]:
    """The looser pattern SPEC §3.7 warns against."""
    return re.findall(r"\[(\w+)\]", text)


def strict_markers(text: str) -> list[str]:
    return [str(o.number) for o in parse_markers(text)]


class TestRestoredTokensNeverCite:
    """The redaction regression: restoration runs before marker parsing."""

    # The model answers with a token that does not belong to this call, so it
    # stays in the restored text as written.
    REPLY = "Ask [PERSON_1] to sign; the clause is in [1]."

    def check(self, parse) -> None:
        assert ["1"] == parse(self.REPLY)

    def test_token_is_not_a_marker(self):
        """A restored-looking [PERSON_1] is never read as citation 1."""
        self.check(strict_markers)

    def test_looser_pattern_is_caught(self):
        """The same check fails against the \\[(\\w+)\\] pattern."""
        with pytest.raises(AssertionError):
            self.check(loose_markers)

    def test_synthesis_through_redaction(self):
        """Synthesis over a redacting chat cites only the real marker."""
        inner = ScriptedChat([lambda prompt: "[PERSON_1] wrote it [1]; see [EMAIL_1] too."])
        sources = [Source(text="Signed by Jane Roe, jane@example.org.", doc_id="contract")]
        chat = RedactingChat(inner, {"Jane Roe": "PERSON"})
        answer = Synthesizer(chat).synthesize_sync("Who signed?", sources)
        assert "Jane Roe wrote it [1]; see jane@example.org too." == answer.text
        assert [1] == [c.marker for c in answer.citations]
        assert "Jane Roe" not in inner.prompts[0]
        assert "jane@example.org" not in inner.prompts[0]
