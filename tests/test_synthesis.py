"""Synthesis and query rewriting with a scripted model, SPEC §3.7."""

from __future__ import annotations

import asyncio

import pytest

from citemark import (
    ChatError,
    MarkerOutOfRangeError,
    NoSourcesError,
    QueryRewriteError,
    QueryRewriter,
    Source,
    SynthesisError,
    Synthesizer,
)
from citemark.testing import ScriptedChat, ScriptExhaustedError

SOURCES = [
    Source(text="The patent license terminates when litigation is filed.", doc_id="Apache-2.0"),
    Source(text="Redistributions must retain the copyright notice.", doc_id="BSD"),
]
QUESTION = "When does the patent license end?"


class TestSynthesizer:
    def test_resolves_the_answer(self):
        """A cited answer resolves against the sources that were rendered, after one call."""
        chat = ScriptedChat(["It ends when litigation is filed [1]."])
        answer = Synthesizer(chat).synthesize_sync(QUESTION, SOURCES)
        assert ["Apache-2.0"] == [c.doc_id for c in answer.citations]
        assert 1 == len(chat.prompts)
        assert QUESTION in chat.prompts[0]
        assert "[1] The patent license" in chat.prompts[0]

    def test_out_of_range_marker_is_rejected_after_one_call(self):
        """An answer citing [3] of 2 raises MarkerOutOfRangeError; exactly one prompt was sent."""
        chat = ScriptedChat(["It ends on filing [3]."])
        with pytest.raises(MarkerOutOfRangeError) as info:
            Synthesizer(chat).synthesize_sync(QUESTION, SOURCES)
        assert (3, 2) == (info.value.marker, info.value.valid_count)
        assert 1 == len(chat.prompts)

    def test_no_markers_is_an_abstention(self):
        """An answer without markers is valid, with citations == ()."""
        chat = ScriptedChat(["The sources do not say."])
        assert () == Synthesizer(chat).synthesize_sync(QUESTION, SOURCES).citations

    def test_empty_sources_fail_before_any_call(self):
        """Empty sources raise NoSourcesError and no prompt is recorded."""
        chat = ScriptedChat(["[1]"])
        with pytest.raises(NoSourcesError):
            Synthesizer(chat).synthesize_sync(QUESTION, [])
        assert [] == chat.prompts

    @pytest.mark.parametrize("question", ["", "   \n\t", "\x00\x01"])
    def test_blank_question_fails_before_any_call(self, question):
        """A blank question is a SynthesisError and no prompt is recorded."""
        chat = ScriptedChat(["[1]"])
        with pytest.raises(SynthesisError, match="question is blank"):
            Synthesizer(chat).synthesize_sync(question, SOURCES)
        assert [] == chat.prompts

    @pytest.mark.parametrize("completion", ["", "  \n "])
    def test_blank_completion_is_rejected(self, completion):
        """A blank completion is a SynthesisError, not an abstention."""
        chat = ScriptedChat([completion])
        with pytest.raises(SynthesisError, match="answer is blank"):
            Synthesizer(chat).synthesize_sync(QUESTION, SOURCES)

    def test_chat_errors_propagate_unretried(self):
        """A ChatError reaches the caller after one call; the second reply is never used."""
        chat = ScriptedChat([ChatError("timed out", provider="p", model="m"), "It ends [1]."])
        with pytest.raises(ChatError):
            Synthesizer(chat).synthesize_sync(QUESTION, SOURCES)
        assert 1 == chat.remaining

    def test_prompt_hash_tracks_the_template(self):
        """prompt_sha256 changes when the template changes."""
        chat = ScriptedChat([])
        default = Synthesizer(chat)
        custom = Synthesizer(chat, "Q: {question}\n{sources}")
        assert default.prompt_sha256 != custom.prompt_sha256
        assert 64 == len(default.prompt_sha256)


class TestQueryRewriter:
    def test_rewrite_is_returned(self):
        """The model's rewrite is returned without surrounding whitespace."""
        chat = ScriptedChat(["  apache patent license termination litigation \n"])
        assert "apache patent license termination litigation" == QueryRewriter(chat).rewrite_sync(
            "when does my patent license end if I sue?"
        )

    @pytest.mark.parametrize("reply", ["", " \n\t ", "\u200b"])
    def test_blank_rewrite_raises_and_never_falls_back(self, reply):
        """A blank rewrite raises QueryRewriteError instead of returning the query."""
        chat = ScriptedChat([reply])
        with pytest.raises(QueryRewriteError):
            QueryRewriter(chat).rewrite_sync("original query")

    def test_blank_query_is_not_sent(self):
        """A blank query is a ValueError before any model call."""
        chat = ScriptedChat(["x"])
        with pytest.raises(ValueError, match="query is blank"):
            QueryRewriter(chat).rewrite_sync("  ")
        assert [] == chat.prompts


class TestScriptedChat:
    def test_exhausted_script_is_a_clear_error(self):
        """Asking for more replies than scripted raises ScriptExhaustedError, not a ChatError."""
        chat = ScriptedChat(["only one"])
        asyncio.run(chat.complete("a"))
        with pytest.raises(
            ScriptExhaustedError, match="scripted with 1 replies and asked for reply 2"
        ):
            asyncio.run(chat.complete("b"))
        assert ["a", "b"] == chat.prompts

    def test_identity_is_reported(self):
        """Provider and model name are what the script says."""
        chat = ScriptedChat([], provider="acme", model_name="m-1")
        assert ("acme", "m-1") == (chat.provider, chat.model_name)
