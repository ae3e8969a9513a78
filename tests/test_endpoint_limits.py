"""Real endpoints (issue 13): finish reasons, failure codes, error-body codes and the /v1 hint.

Every test talks to a real ``ThreadingHTTPServer`` on 127.0.0.1 whose reply is chosen
by the test: the body, the status and the ``finish_reason``. What is asserted is what
a person sees afterwards: the `citemark.ChatError`'s stable ``reason`` and
``provider_code``, a truncated answer rejected as ``truncated``, a truncated judge
reply left un-assessed as ``judge_reply_truncated`` with its raw text kept as data.
"""

from __future__ import annotations

import asyncio
import json
import pickle
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self

import httpx
import pytest

from citemark import (
    ChatError,
    CitationScorer,
    Completion,
    FaithfulnessJudge,
    JudgeError,
    OpenAIChat,
    RedactingChat,
    Source,
    Synthesizer,
    TruncatedAnswerError,
)
from citemark._model.chat import finish_reason_of, is_truncated
from citemark.evaluation import CHAT_REASONS, REASONS, REJECTION_REASONS

CANARY = "CANARY-endpoint-4b7c"
MODEL = "m"
SOURCES = [Source(text="The fee is 5%.", doc_id="fees")]
CONTEXT = "[doc-1] The late fee is 5%.\n[doc-2] Members pay no fee.\n"
PASSING = json.dumps(
    {
        "score": 3,
        "explanation": "ok",
        "verdicts": [{"occurrence": 1, "outcome": "supported", "context_span": "late fee is 5%"}],
    }
)


class Endpoint:
    """A loopback server answering every POST with the status and body it was given."""

    def __init__(self, status: int = 200, body: bytes = b"") -> None:
        self.status = status
        self.body = body
        self.requests = 0
        self.paths: list[str] = []
        self._server: ThreadingHTTPServer | None = None

    @classmethod
    def completion(cls, content: object, finish_reason: object = "stop") -> Endpoint:
        choice = {
            "message": {"role": "assistant", "content": content},
            "finish_reason": finish_reason,
        }
        return cls(200, json.dumps({"choices": [choice]}).encode())

    def url(self, path: str = "/v1") -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}{path}"

    def __enter__(self) -> Self:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                """Quiet: a test reads what the server got, not its log."""

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                endpoint.requests += 1
                endpoint.paths.append(self.path)
                self.send_response(endpoint.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(endpoint.body)))
                self.end_headers()
                self.wfile.write(endpoint.body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()


def call(url: str, **options: object) -> Completion:
    return asyncio.run(OpenAIChat(url, MODEL, **options).complete("q"))  # type: ignore[arg-type]


def failure(url: str, **options: object) -> ChatError:
    with pytest.raises(ChatError) as info:
        call(url, **options)
    return info.value


def error_body(**error: object) -> bytes:
    return json.dumps({"error": {"message": CANARY, **error}}).encode()


class TestFinishReason:
    @pytest.mark.parametrize("finish", ["stop", "length", "content_filter", None])
    def test_the_finish_reason_travels_with_the_text(self, finish):
        """OpenAIChat returns a Completion: the text itself, with choices[0].finish_reason."""
        with Endpoint.completion("The fee is 5% [1].", finish) as endpoint:
            reply = call(endpoint.url())
        assert ("The fee is 5% [1].", finish) == (reply, reply.finish_reason)
        assert isinstance(reply, str)
        assert (finish == "length") is is_truncated(reply)

    @pytest.mark.parametrize("finish", [CANARY, "x" * 65, 7, ["length"]])
    def test_a_finish_reason_that_is_not_a_machine_code_is_dropped(self, finish):
        """Provider text in finish_reason is never kept: only ^[a-z0-9_.-]{1,64}$."""
        with Endpoint.completion("ok", finish) as endpoint:
            reply = call(endpoint.url())
        assert None is reply.finish_reason

    def test_a_plain_str_has_no_finish_reason(self):
        """A chat that does not report one (a plain str) is never treated as truncated."""
        assert (None, False) == (finish_reason_of("text"), is_truncated("text"))

    def test_a_completion_pickles_with_its_finish_reason(self):
        """The side channel survives pickling (a process pool, a cache)."""
        copy = pickle.loads(pickle.dumps(Completion("cut", "length")))  # noqa: S301 - our own bytes
        assert ("cut", "length", Completion) == (copy, copy.finish_reason, type(copy))


class TestTruncatedSynthesis:
    def test_a_length_finish_rejects_the_answer_as_truncated(self):
        """finish_reason length is a rejection with its own reason, after one request."""
        with Endpoint.completion("The fee is 5% [1]. Members", "length") as endpoint:
            synthesizer = Synthesizer(OpenAIChat(endpoint.url(), MODEL, max_tokens=8))
            with pytest.raises(TruncatedAnswerError) as info:
                synthesizer.synthesize_sync("What is the fee?", SOURCES)
            assert 1 == endpoint.requests
        assert "truncated" == info.value.reason
        assert "truncated" in REJECTION_REASONS

    def test_the_same_answer_finished_normally_resolves(self):
        """The naive reader (finish reason ignored) accepts the cut-off answer: the check is real."""
        with Endpoint.completion("The fee is 5% [1]. Members", "stop") as endpoint:
            answer = Synthesizer(OpenAIChat(endpoint.url(), MODEL)).synthesize_sync("Fee?", SOURCES)
        assert ["fees"] == [c.doc_id for c in answer.citations]

    def test_redaction_keeps_the_finish_reason(self):
        """RedactingChat restores the text and keeps the finish reason with it."""
        with Endpoint.completion("Mail [EMAIL_1] about it [1].", "length") as endpoint:
            chat = RedactingChat(OpenAIChat(endpoint.url(), MODEL))
            with pytest.raises(TruncatedAnswerError):
                Synthesizer(chat).synthesize_sync("Mail a@example.com?", SOURCES)


class TestTruncatedJudge:
    def test_a_truncated_scorer_reply_is_unassessed_and_kept(self):
        """The reply is not read: the row is judge_reply_truncated and the raw text is data."""
        cut = PASSING[:40]
        with Endpoint.completion(cut, "length") as endpoint:
            score = CitationScorer(OpenAIChat(endpoint.url(), MODEL)).score_sync(
                "The late fee is 5% [doc-1].", CONTEXT
            )
        assert (False, "judge_reply_truncated") == (score.assessed, score.reason)
        assert (True, cut) == (score.findings.judge_reply_truncated, score.findings.judge_raw_reply)
        assert "judge_reply_truncated" in REASONS

    def test_a_whole_reply_that_says_length_is_still_not_graded(self):
        """Even a reply that happens to parse is not graded when the judge was cut off.

        The naive variant (grading what parsed) passes the row; the scorer must not.
        """
        with Endpoint.completion(PASSING, "stop") as endpoint:
            naive = CitationScorer(OpenAIChat(endpoint.url(), MODEL)).score_sync(
                "The late fee is 5% [doc-1].", CONTEXT
            )
        assert True is naive.passed
        with Endpoint.completion(PASSING, "length") as endpoint:
            cut = CitationScorer(OpenAIChat(endpoint.url(), MODEL)).score_sync(
                "The late fee is 5% [doc-1].", CONTEXT
            )
        assert (None, "judge_reply_truncated") == (cut.passed, cut.reason)

    def test_an_invalid_reply_is_kept_raw(self):
        """A reply that fails validation is kept verbatim in the findings (rows.jsonl data)."""
        reply = f"I think it is fine. {CANARY}"
        with Endpoint.completion(reply) as endpoint:
            score = CitationScorer(OpenAIChat(endpoint.url(), MODEL)).score_sync(
                "The late fee is 5% [doc-1].", CONTEXT
            )
        assert ("invalid_judge_output", reply) == (score.reason, score.findings.judge_raw_reply)
        # Data, not a message: the explanation stays structural.
        assert CANARY not in score.explanation

    def test_a_usable_reply_is_not_duplicated(self):
        """A reply that validated is recorded as verdicts, not as raw text."""
        with Endpoint.completion(PASSING) as endpoint:
            score = CitationScorer(OpenAIChat(endpoint.url(), MODEL)).score_sync(
                "The late fee is 5% [doc-1].", CONTEXT
            )
        assert (True, None) == (score.passed, score.findings.judge_raw_reply)

    def test_the_faithfulness_judge_rejects_a_truncated_reply(self):
        """FaithfulnessJudge raises JudgeError with reason judge_reply_truncated."""
        whole = json.dumps({"faithful": True, "unsupported_claims": [], "reasoning": "ok"})
        with Endpoint.completion(whole, "length") as endpoint:
            judge = FaithfulnessJudge(OpenAIChat(endpoint.url(), MODEL))
            with pytest.raises(JudgeError) as info:
                judge.judge_sync("Fee?", "The fee is 5% [1].", SOURCES)
        assert "judge_reply_truncated" == info.value.reason


class TestJudgeSkippedOnViolations:
    FABRICATED = "The late fee is 5% [doc-1] and [doc-9]."

    def test_no_call_for_a_row_that_already_failed(self):
        """judge_violations=False saves the call; the row fails the same way."""
        with Endpoint.completion(PASSING) as endpoint:
            chat = OpenAIChat(endpoint.url(), MODEL)
            skipped = CitationScorer(chat, judge_violations=False).score_sync(
                self.FABRICATED, CONTEXT
            )
            assert 0 == endpoint.requests
            called = CitationScorer(chat).score_sync(self.FABRICATED, CONTEXT)
            assert 1 == endpoint.requests
        assert (False, 0.0) == (skipped.passed, skipped.score) == (called.passed, called.score)
        assert (True, False) == (skipped.findings.judge_skipped, skipped.findings.judge_called)
        assert (False, True) == (called.findings.judge_skipped, called.findings.judge_called)

    def test_a_clean_row_is_still_judged(self):
        """Only rows failed in code are skipped."""
        with Endpoint.completion(PASSING) as endpoint:
            chat = OpenAIChat(endpoint.url(), MODEL)
            score = CitationScorer(chat, judge_violations=False).score_sync(
                "The late fee is 5% [doc-1].", CONTEXT
            )
            assert 1 == endpoint.requests
        assert True is score.passed


class TestReasonCodes:
    @pytest.mark.parametrize(
        ("body", "code"),
        [
            (
                error_body(code="context_length_exceeded", type="invalid_request_error"),
                "context_length_exceeded",
            ),
            (error_body(type="invalid_request_error"), "invalid_request_error"),
            # llama.cpp sends the status as an integer code: the type is used.
            (error_body(code=400, type="invalid_request_error"), "invalid_request_error"),
            (error_body(code=CANARY, type="Bad Request"), None),
            (error_body(code="x" * 65), None),
            (json.dumps({"error": CANARY}).encode(), None),
            (f"<html>{CANARY}</html>".encode(), None),
            (b"{" * 100_000, None),
        ],
    )
    def test_an_error_status_keeps_only_a_machine_code(self, body, code):
        """reason http_status, the status, and error.code/.type only when it is a machine code."""
        with Endpoint(400, body) as endpoint:
            error = failure(endpoint.url())
            assert 1 == endpoint.requests
        assert ("http_status", 400, code) == (error.reason, error.status, error.provider_code)
        assert CANARY not in str(error) + repr(vars(error))
        if code is not None:
            assert f"provider code {code}" in str(error)

    def test_a_200_error_body_is_a_bad_envelope_with_its_code(self):
        """A server that answers 200 with an OpenAI error object: bad_envelope plus the code."""
        with Endpoint(200, error_body(code="model_not_found")) as endpoint:
            error = failure(endpoint.url())
        assert ("bad_envelope", "model_not_found") == (error.reason, error.provider_code)

    def test_null_content_has_its_own_code_and_the_finish_reason(self):
        """A reasoning model that spent its budget sends null content with finish length."""
        with Endpoint.completion(None, "length") as endpoint:
            error = failure(endpoint.url())
        assert "null_content" == error.reason
        assert "choices[0].message.content is null (finish_reason length)" == error.detail

    @pytest.mark.parametrize("body", [b"not json", b"[]", b'{"choices": []}'])
    def test_malformed_envelopes_are_bad_envelope(self, body):
        with Endpoint(200, body) as endpoint:
            assert "bad_envelope" == failure(endpoint.url()).reason

    def test_a_refused_connection_is_connect(self):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        try:
            error = failure(f"http://127.0.0.1:{port}/v1")
        finally:
            sock.close()
        assert ("connect", None) == (error.reason, error.status)

    def test_a_read_timeout_is_timeout(self):
        """A server that accepts and never answers: reason timeout, no status."""
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        try:
            # A structured timeout sets the read phase alone; a plain number would be the
            # whole call's deadline (reason "deadline", tested with the other faults).
            error = failure(
                f"http://127.0.0.1:{listener.getsockname()[1]}/v1", timeout=httpx.Timeout(0.3)
            )
        finally:
            listener.close()
        assert ("timeout", None, "timed out reading the response") == (
            error.reason,
            error.status,
            error.detail,
        )

    def test_every_code_has_a_sentence(self):
        """The codes OpenAIChat raises are the documented vocabulary."""
        assert {
            "timeout",
            "deadline",
            "reply_too_large",
            "connect",
            "http_status",
            "protocol",
            "transport",
            "bad_envelope",
            "null_content",
        } == set(CHAT_REASONS)

    def test_the_codes_survive_pickling(self):
        error = ChatError(
            "d",
            provider="p",
            model="m",
            status=429,
            reason="http_status",
            provider_code="rate_limit_exceeded",
        )
        copy = pickle.loads(pickle.dumps(error))  # noqa: S301 - our own bytes
        assert (copy.reason, copy.provider_code, copy.detail, str(copy)) == (
            error.reason,
            error.provider_code,
            error.detail,
            str(error),
        )

    def test_a_provider_code_is_checked_again_by_the_error(self):
        """ChatError itself refuses a code that is not a machine code (an adapter's, say)."""
        assert None is ChatError("d", provider="p", model="m", provider_code=CANARY).provider_code


class TestNotFoundHint:
    def test_a_404_without_v1_says_to_add_it(self):
        """The base URL lacks /v1 and the server answers 404: the detail says to add /v1."""
        with Endpoint(404, b'{"detail": "Not Found"}') as endpoint:
            error = failure(endpoint.url(""))
            assert ["/chat/completions"] == endpoint.paths
        assert (404, "http_status") == (error.status, error.reason)
        assert "try adding /v1 to the base URL" in str(error)

    @pytest.mark.parametrize("path", ["/v1", "/v1/", "/openai/v1"])
    def test_a_404_with_v1_gives_no_hint(self, path):
        """With /v1 already there the hint would mislead (a wrong model name, say)."""
        with Endpoint(404, b"{}") as endpoint:
            error = failure(endpoint.url(path))
        assert "/v1" not in str(error)

    def test_the_hint_names_no_part_of_the_url(self):
        """The URL may hold credentials; the message has only the rule."""
        with Endpoint(404, b"{}") as endpoint:
            url = endpoint.url("/secret-path").replace("http://", f"http://user:{CANARY}@")
            error = failure(url)
        assert CANARY not in str(error)
        assert "secret-path" not in str(error)


class TestSeed:
    def test_seed_is_sent(self):
        seen: list[dict[str, object]] = []

        def handler(request: httpx.Request) -> httpx.Response:
            seen.append(json.loads(request.content))
            return httpx.Response(200, json={"choices": [{"message": {"content": "ok"}}]})

        async def run() -> None:
            async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
                await OpenAIChat(
                    "http://x/v1", MODEL, client=client, seed=7, max_tokens=5
                ).complete("q")

        asyncio.run(run())
        assert (7, 5) == (seen[0]["seed"], seen[0]["max_tokens"])

    @pytest.mark.parametrize("seed", [True, 1.5, "1"])
    def test_a_bad_seed_is_refused(self, seed):
        from citemark import ChatConfigError

        with pytest.raises(ChatConfigError, match="seed must be an integer"):
            OpenAIChat("http://x/v1", MODEL, seed=seed)
