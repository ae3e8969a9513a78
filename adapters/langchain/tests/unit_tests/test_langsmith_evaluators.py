"""The LangSmith evaluators, run through langsmith.evaluate/aevaluate locally, offline.

The client is pointed at a server on 127.0.0.1 started by the test, which records
every request: nothing may reach it but the client's own GET /info probe, so no run,
feedback or example is uploaded (and nothing could leave the machine anyway).
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import langsmith
import pytest
from agent_fakes import CORPUS
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langsmith.evaluation import EvaluationResult
from langsmith.schemas import Example

from citemark.testing import ScriptedChat
from langchain_citemark import (
    acitations_valid_evaluator,
    citation_feedback,
    citations_valid_evaluator,
)
from langchain_citemark.langsmith_evaluators import ADVISORY_KEY, KEY


class _Recorder(BaseHTTPRequestHandler):
    requests: list[tuple[str, str]]

    def _answer(self):
        self.requests.append((self.command, self.path))
        body = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PATCH = do_PUT = _answer  # noqa: N815 - http.server names

    def log_message(self, *args):
        """Quiet: a test reads what the server got, not its log."""


@pytest.fixture
def client(monkeypatch):
    """A LangSmith client whose endpoint is a recording server on 127.0.0.1."""
    requests: list[tuple[str, str]] = []
    handler = type("Handler", (_Recorder,), {"requests": requests})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_port}"
    monkeypatch.setenv("LANGSMITH_TRACING", "false")
    monkeypatch.setenv("LANGCHAIN_TRACING_V2", "false")
    monkeypatch.setenv("LANGSMITH_ENDPOINT", url)
    monkeypatch.setenv("LANGSMITH_API_KEY", "offline-test-key")
    yield langsmith.Client(api_url=url, api_key="offline-test-key"), requests
    server.shutdown()
    server.server_close()
    thread.join()
    uploads = [r for r in requests if r != ("GET", "/info")]
    assert [] == uploads


def example(inputs):
    return Example(id=uuid.uuid4(), dataset_id=uuid.uuid4(), inputs=inputs, outputs=None)


ANSWERS = {
    "good": "Patent licenses terminate on filing [1].",
    "fabricated": "They terminate [1]; grants stay [4] [6].",
    "uncited": "The sources do not say.",
}
DOCS = CORPUS[:2]


def target(inputs):
    return {"answer": ANSWERS[inputs["case"]]}


def run_local(client, evaluator, data, asynchronous=False):
    with warnings.catch_warnings():
        # upload_runs=False is LangSmith's local mode; it warns that it is in beta.
        warnings.filterwarnings("ignore", message=".upload_runs. parameter is in beta")
        if asynchronous:

            async def atarget(inputs):
                return target(inputs)

            results = asyncio.run(
                langsmith.aevaluate(
                    atarget, data=data, evaluators=[evaluator], upload_runs=False, client=client
                )
            )

            async def collect():
                return [row async for row in results]

            rows = asyncio.run(collect())
        else:
            rows = list(
                langsmith.evaluate(
                    target, data=data, evaluators=[evaluator], upload_runs=False, client=client
                )
            )
    return {
        row["example"].inputs["case"]: [
            (r.key, r.score, r.value, r.comment) for r in row["evaluation_results"]["results"]
        ]
        for row in rows
    }


CASES = [example({"case": case, "question": "When?", "documents": DOCS}) for case in ANSWERS]


class TestEvaluate:
    def test_deterministic_results_through_local_evaluate(self, client):
        """evaluate(upload_runs=False) gets a boolean citations_valid per run, structural comments."""
        lsclient, _ = client
        results = run_local(lsclient, citations_valid_evaluator(), CASES)
        assert {
            "good": [(KEY, True, None, "1 citation resolved to the 2 given sources")],
            "fabricated": [
                (
                    KEY,
                    False,
                    None,
                    "markers [4], [6] are outside 1..2 (2 of 3 citations fabricated)",
                )
            ],
            "uncited": [(KEY, None, None, "not assessed: no_resolved_citations")],
        } == results

    def test_aevaluate_with_a_judge_adds_an_advisory_value_never_a_score(self, client):
        """With a judge, a second result carries the opinion as a value, with score None."""
        lsclient, _ = client
        reply = json.dumps(
            {
                "score": 3,
                "explanation": "Supported.",
                "verdicts": [
                    {"occurrence": 1, "outcome": "supported", "context_span": "terminate as of"}
                ],
            }
        )
        judge = ScriptedChat([reply], provider="local", model_name="judge-1")
        evaluator = acitations_valid_evaluator(judge)
        results = run_local(lsclient, evaluator, CASES[:1], asynchronous=True)
        (deterministic, advisory) = results["good"]
        assert (KEY, True) == deterministic[:2]
        key, score, value, comment = advisory
        assert (ADVISORY_KEY, None, "supported") == (key, score, value)
        assert comment.startswith("advisory opinion of local/judge-1 (prompt ")
        assert comment.endswith("band 3 of 0..3 over 1 citation; not a score")
        assert 1 == len(judge.prompts)

    def test_agent_outputs_are_read_from_their_messages(self, client):
        """An agent's output messages: the last AI reply is the answer, tool artifacts the sources."""
        lsclient, _ = client

        def agent_target(inputs):
            return {
                "messages": [
                    HumanMessage("When?"),
                    AIMessage("", tool_calls=[{"name": "s", "args": {}, "id": "1"}]),
                    ToolMessage("raw", tool_call_id="1", artifact=DOCS),
                    AIMessage("They terminate [2] and [3]."),
                ]
            }

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".upload_runs. parameter is in beta")
            (row,) = langsmith.evaluate(
                agent_target,
                data=[example({"question": "When?"})],
                evaluators=[citations_valid_evaluator()],
                upload_runs=False,
                client=lsclient,
            )
        (result,) = row["evaluation_results"]["results"]
        assert (False, "marker [3] is outside 1..2 (1 of 2 citations fabricated)") == (
            result.score,
            result.comment,
        )

    def test_a_run_without_documents_is_not_assessed(self, client):
        """No documents anywhere in the run: score None, and the comment says why."""
        lsclient, _ = client
        data = [example({"case": "good", "question": "When?"})]
        assert {"good": [(KEY, None, None, "not assessed: empty_context")]} == run_local(
            lsclient, citations_valid_evaluator(), data
        )


class TestCitationFeedback:
    def test_results_are_valid_langsmith_feedback(self):
        """Each dict builds a LangSmith EvaluationResult, as log_feedback(**item) needs."""
        judge = ScriptedChat(["not json"], provider="local", model_name="judge-1")
        items = citation_feedback(ANSWERS["good"], DOCS, "When?", judge=judge)
        built = [EvaluationResult(**item) for item in items]
        assert [(KEY, True, None), (ADVISORY_KEY, None, "not_assessed")] == [
            (r.key, r.score, r.value) for r in built
        ]
        assert "no usable opinion (invalid_judge_output)" in built[1].comment
        assert {"judge_provider": "local", "judge_model": "judge-1", "advisory": True} == {
            k: v for k, v in built[1].metadata.items() if k != "prompt_sha256"
        }

    def test_works_inside_a_running_event_loop(self):
        """In an async test there is a running loop; citation_feedback still returns."""

        async def inside():
            return citation_feedback(ANSWERS["fabricated"], DOCS)

        ((key, score),) = [(r["key"], r["score"]) for r in asyncio.run(inside())]
        assert (KEY, False) == (key, score)

    def test_sources_may_be_citemark_sources(self):
        """citemark Sources work as well as Documents; a mix is refused."""
        from citemark import Source

        sources = [Source(text="Keep notices.", doc_id="bsd")]
        assert True is citation_feedback("Keep them [1].", sources)[0]["score"]
        with pytest.raises(TypeError):
            citation_feedback("x [1]", [*sources, Document("y")])
