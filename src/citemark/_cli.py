"""The ``citemark`` command line.

Exit codes are part of the interface and documented in ``docs/cli.md``:

- 0: the command did its job (an abstention is a valid answer);
- 1: a deterministic contract violation (the answer was rejected);
- 2: a usage or configuration error (bad arguments, a missing folder, no endpoint);
- 3: the model could not be reached or failed (a `ChatError`).

Errors are printed as one line on standard error, never as a traceback, and carry
structural facts only. ``--json`` prints one JSON object on standard output instead
of text, for machines.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import httpx

from citemark._chat import OpenAIChat
from citemark._errors import ChatError, MarkerOutOfRangeError, SynthesisError
from citemark._retrieval import BM25Retriever
from citemark._synthesis import Synthesizer
from citemark._verify import FileReader, verify_citation

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["EXIT_CHAT", "EXIT_OK", "EXIT_USAGE", "EXIT_VIOLATION", "main"]

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_USAGE = 2
EXIT_CHAT = 3


class _UsageError(Exception):
    """A problem with the command line or the configuration; printed as one line."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except _UsageError as exc:
        return _fail(args, str(exc), EXIT_USAGE)
    except ChatError as exc:
        return _fail(args, str(exc), EXIT_CHAT)
    except KeyboardInterrupt:
        return _fail(args, "interrupted", 130)


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit code 2, like every error."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="citemark", description="Checkable citations for RAG answers.")
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_Parser
    )

    answer = commands.add_parser(
        "answer",
        help="answer a question from a folder of documents, with verified citations",
        description=(
            "Retrieve passages with BM25 from --docs, ask an OpenAI-compatible endpoint "
            "(CITEMARK_BASE_URL, CITEMARK_MODEL, CITEMARK_API_KEY) to answer with [n] "
            "markers, resolve them and verify each citation against its file."
        ),
    )
    answer.add_argument("question")
    answer.add_argument("--docs", required=True, type=Path, help="folder of documents")
    answer.add_argument(
        "--pattern",
        action="append",
        dest="patterns",
        help="file pattern to index, repeatable (default: *.txt and *.md)",
    )
    answer.add_argument("-k", type=int, default=4, help="passages to retrieve (default 4)")
    _model_options(answer)
    answer.add_argument("--json", action="store_true", help="print one JSON object")
    answer.set_defaults(run=_answer)
    return parser


def _model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--base-url", help="OpenAI-compatible base URL, e.g. http://localhost:11434/v1"
    )
    parser.add_argument("--model", help="model name")
    parser.add_argument("--api-key", help="API key (prefer CITEMARK_API_KEY)")
    parser.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help="seconds to wait for the model's reply (default 120; connecting waits 5)",
    )


def _chat(args: argparse.Namespace) -> OpenAIChat:
    try:
        timeout = httpx.Timeout(connect=5.0, read=args.timeout, write=30.0, pool=10.0)
        return OpenAIChat(args.base_url, args.model, args.api_key, timeout=timeout)
    except ValueError as exc:
        raise _UsageError(str(exc)) from None


def _answer(args: argparse.Namespace) -> int:
    docs: Path = args.docs
    if not docs.is_dir():
        msg = "--docs must name an existing folder"
        raise _UsageError(msg)
    if args.k < 1:
        msg = "-k must be at least 1"
        raise _UsageError(msg)
    chat = _chat(args)
    retriever = BM25Retriever.from_directory(docs, patterns=args.patterns or ("*.txt", "*.md"))
    sources = retriever.retrieve(args.question, k=args.k)
    if not sources:
        msg = (
            f"no passage among {len(retriever.chunks)} chunks shares a word with the "
            "question: there is nothing to cite"
        )
        raise _UsageError(msg)
    synthesizer = Synthesizer(chat)
    try:
        answer = asyncio.run(synthesizer.synthesize(args.question, sources))
    except MarkerOutOfRangeError as exc:
        return _fail(args, f"answer rejected: {exc}", EXIT_VIOLATION, marker=exc.marker)
    except SynthesisError as exc:
        return _fail(args, f"answer rejected: {exc}", EXIT_VIOLATION)
    reader = FileReader(docs)
    checks = [verify_citation(c, reader) for c in answer.citations]
    if args.json:
        _print_json(
            {
                "answer": answer.text,
                "citations": [{**v.citation.model_dump(), "outcome": v.outcome} for v in checks],
                "model": {"provider": chat.provider, "name": chat.model_name},
                "prompt_sha256": synthesizer.prompt_sha256,
            }
        )
        return EXIT_OK
    out = sys.stdout
    out.write(answer.text.rstrip() + "\n\n")
    if not checks:
        out.write("No citations: the model abstained.\n")
    for check in checks:
        c = check.citation
        out.write(f"[{c.marker}] {c.doc_id} {c.chunk_id or ''} {c.start}-{c.end} {check.outcome}\n")
    return EXIT_OK


def _fail(args: argparse.Namespace, message: str, code: int, **facts: int) -> int:
    if getattr(args, "json", False):
        _print_json({"error": message, "exit_code": code, **facts})
    else:
        sys.stderr.write(f"citemark: error: {message}\n")
    return code


def _print_json(value: object) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, allow_nan=False) + "\n")
