"""The ``citemark`` command line: ``answer``, ``check``, ``echo`` and ``calibrate``.

Exit codes are part of the interface and documented in ``docs/cli.md``:

- 0: the command did its job. A measurement is not a gate: ``check`` exits 0 whatever
  the judge said, ``echo`` whatever the cases' outcomes, ``calibrate run`` whether or
  not the threshold was met;
- 1: a deterministic contract violation: ``answer`` rejected the answer, or ``check
  --fail-on-violation`` found a row with a deterministic violation or a line it could
  not read;
- 2: a usage or configuration error (bad arguments, a missing file, no endpoint, an
  input with no readable row, a refused registration);
- 3: the model could not be reached or failed (a `ChatError`): ``answer``'s one call,
  or every call of ``echo`` or ``calibrate run``. ``check`` never exits 3: its judge
  is optional, and a failed judge call leaves that row un-assessed.

Errors are printed as one line on standard error, never as a traceback, and carry
structural facts only. ``--json`` prints one JSON object on standard output instead
of text, for machines. The work happens in plain functions elsewhere
(`citemark._check.run_check`, `citemark.run_echo_check`, `citemark.register_threshold`,
`citemark.run_calibration`); this module parses arguments and prints.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, TypeVar, get_args

import httpx
from pydantic import ValidationError

from citemark._artifacts import DEFAULT_RESULTS_DIR, write_report_atomically
from citemark._calibration.labelset import LabelSet
from citemark._calibration.run import (
    Metric,
    Threshold,
    register_threshold,
    run_calibration,
)
from citemark._chat import ChatModel, OpenAIChat
from citemark._check import DEFAULT_HTML_ROWS, CheckResult, run_check
from citemark._check.sinks import FORMATS
from citemark._check.terminal import json_printable, printable
from citemark._cli.console import CheckProgress, print_calibration, print_check, print_echo
from citemark._diff import compare_runs, render_html, render_text
from citemark._echo.plan import DEFAULT_ECHO_CASES
from citemark._echo.run import ECHO_REPORT_NAME, run_echo_check
from citemark._errors import (
    CalibrationError,
    ChatConfigError,
    ChatError,
    LabelSetError,
    MarkerOutOfRangeError,
    NoRowsError,
    ReplayError,
    RunDiffError,
    SynthesisError,
)
from citemark._formats import FORMAT_NAMES, Reader, ReadOptions, reader_for
from citemark._formats.mapped import MappingError, check_mapping
from citemark._judge import FaithfulnessJudge
from citemark._replay.replay import ReplayChat
from citemark._retrieval import BM25Retriever
from citemark._runs import RowOptions
from citemark._scorer.scorer import CitationScorer
from citemark._syntax import DEFAULT_CITATION_PATTERN, DEFAULT_LABEL_PATTERN
from citemark._synthesis import Synthesizer
from citemark._validation import describe_validation_error
from citemark._verify import FileReader, verify_citation

if TYPE_CHECKING:
    from collections.abc import Sequence

    from citemark._calibration.run import CalibrationReport
    from citemark._echo.run import EchoReport

__all__ = ["EXIT_CHAT", "EXIT_OK", "EXIT_USAGE", "EXIT_VIOLATION", "main"]

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_USAGE = 2
EXIT_CHAT = 3

ANSWER_MAX_TOKENS = 1024
"""``--max-tokens`` by default for ``answer`` and ``echo``: room for a cited answer."""
JUDGE_MAX_TOKENS = 512
"""``--max-tokens`` by default for a judge (``check``, ``calibrate run``): a verdict is short."""


class _UsageError(Exception):
    """A problem with the command line or the configuration; printed as one line."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    _escape_unencodable_output()
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except _UsageError as exc:
        return _fail(args, str(exc), EXIT_USAGE)
    except ChatError as exc:
        facts: dict[str, int | str] = {"reason": exc.reason}
        if exc.status is not None:
            facts["status"] = exc.status
        if exc.provider_code is not None:
            facts["provider_code"] = exc.provider_code
        return _fail(args, str(exc), EXIT_CHAT, **facts)
    except KeyboardInterrupt:
        return _fail(args, "interrupted", 130)


def _escape_unencodable_output() -> None:
    r"""Print what the terminal's encoding cannot hold as ``\uXXXX`` escapes, never crash.

    A model may send a lone surrogate (JSON ``"\ud800"``) and a file name may hold
    one (bytes that are not UTF-8); a strict stream raises on the first such
    character, after the command's work is done. Escaped, the text survives, and in
    ``--json`` output the escape is the JSON escape that reads back as the same string.
    """
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit code 2, like every error."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {printable(message)} (see --help)\n")


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
    _generation_options(answer, max_tokens=ANSWER_MAX_TOKENS, seed_flag="--seed")
    answer.add_argument("--json", action="store_true", help="print one JSON object")
    answer.set_defaults(run=_answer)
    _check_parser(commands)
    _diff_parser(commands)
    _echo_parser(commands)
    _calibrate_parser(commands)
    return parser


def _check_parser(commands: argparse._SubParsersAction[_Parser]) -> None:
    check = commands.add_parser(
        "check",
        help="check the citations of recorded pipeline outputs (JSONL), without a model",
        description=(
            "Read RUNS.jsonl line by line (rows with answer, optional question and id, "
            "and sources or a labelled context), check every citation deterministically, "
            "optionally ask an advisory judge, print a summary and write report.json, "
            "report.html and rows.jsonl to --out. A verdict never changes the exit code."
        ),
    )
    check.add_argument("runs", type=Path, metavar="RUNS.jsonl", help="recorded runs, one per line")
    check.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_RESULTS_DIR,
        metavar="DIR",
        help=f"folder for the reports (default {DEFAULT_RESULTS_DIR}/)",
    )
    _judge_options(check, required=False)
    _generation_options(check, max_tokens=JUDGE_MAX_TOKENS, seed_flag="--seed")
    check.add_argument(
        "--judge-violations",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="also ask the judge about rows that already failed in code, whose outcome its "
        "verdict cannot change (default: no, and the report counts the calls saved)",
    )
    check.add_argument("--quiet", action="store_true", help="no progress bar on standard error")
    check.add_argument(
        "--concurrency",
        type=int,
        default=32,
        metavar="N",
        help="rows judged at once (default 32)",
    )
    check.add_argument(
        "--fail-on-violation",
        action="store_true",
        help="exit 1 when a row has a deterministic violation or a line cannot be read",
    )
    check.add_argument(
        "--min-sentence-coverage",
        type=float,
        metavar="SHARE",
        help="fail rows whose share of cited sentences is below SHARE (0..1; default: report only)",
    )
    check.add_argument(
        "--html-rows",
        type=int,
        default=DEFAULT_HTML_ROWS,
        metavar="N",
        help=f"rows shown in report.html at most, failures first (default {DEFAULT_HTML_ROWS})",
    )
    check.add_argument(
        "--format",
        action="append",
        default=[],
        dest="formats",
        choices=sorted(FORMATS),
        help="also write this format (junit: report.junit.xml, one test case per row); "
        "may be given more than once",
    )
    check.add_argument(
        "--label-pattern",
        default=DEFAULT_LABEL_PATTERN,
        metavar="REGEX",
        help="how a labelled context names its blocks: a regex matched at line starts, the "
        "label in group 1 or group 'label' (default: [label] at the start of a line)",
    )
    check.add_argument(
        "--citation-pattern",
        default=DEFAULT_CITATION_PATTERN,
        metavar="REGEX",
        help="how an answer cites a label: a regex with the label (or comma-separated labels) "
        "in group 1 or group 'label' (default: [label] or [label, label])",
    )
    check.add_argument(
        "--index-base",
        type=int,
        choices=(0, 1),
        default=None,
        help="the number of the first source: 1 (default) or 0 for pipelines that number "
        "from 0; a row's own index_base field wins",
    )
    check.add_argument(
        "--from",
        dest="from_format",
        choices=[name for name in FORMAT_NAMES if name != "map"],
        default=None,
        help="read RUNS in another tool's format: a Ragas dataset, DeepEval test cases, "
        "LangSmith runs, OpenInference spans (OTLP JSON, SDK JSON, Phoenix Parquet) or "
        "MLflow traces",
    )
    check.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="FIELD=POINTER",
        help="read any other JSONL: where each row field is, as a JSON pointer into a line "
        "(answer=, question=, id=, index_base=, and sources= or context=) or into each "
        "source (source.text=, source.doc_id=, source.chunk_id=, source.start=, "
        "source.end=, source.uri=, source.metadata=); may be given more than once",
    )
    check.add_argument(
        "--answer-field",
        metavar="POINTER",
        default=None,
        help="in a structured answer (an object), the JSON pointer of its text (default /answer)",
    )
    check.add_argument(
        "--citations-field",
        metavar="POINTER",
        default=None,
        help="in a structured answer, the JSON pointer of its citations: source ids, or "
        "objects with source_id and quote (default /citations)",
    )
    check.add_argument(
        "--strict-markers",
        action="store_true",
        help="fail rows holding citation-like text that is not a marker ([1-3], [^1], ...) "
        "instead of only reporting it",
    )
    check.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="local: this process (default); ray: Ray Data workers (needs citemark[ray])",
    )
    check.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="the Ray cluster to join (default: start a local one)",
    )
    check.add_argument(
        "--ray-workers",
        type=int,
        default=2,
        metavar="N",
        help="Ray workers scoring rows; --concurrency is split across them (default 2)",
    )
    check.add_argument(
        "--replay-judge",
        type=Path,
        metavar="DIR",
        help="answer every judge call from the judge-calls.jsonl a check wrote to DIR, "
        "never from a live model; an unrecorded prompt leaves its row un-assessed",
    )
    check.add_argument(
        "--group-by",
        metavar="FIELD",
        default=None,
        help="break every count down by this row field (e.g. model or origin): the terminal "
        "summary, report.json and report.html; a missing or non-string value is '(none)'",
    )
    check.add_argument("--json", action="store_true", help="print one JSON object")
    check.set_defaults(run=_check)


def _diff_parser(commands: argparse._SubParsersAction[_Parser]) -> None:
    diff = commands.add_parser(
        "diff",
        help="what changed between two check runs, row by row",
        description=(
            "Compare the check outputs in OLD_DIR and NEW_DIR row by row (by id, else by "
            "line): which rows changed outcome and why, with totals. Runs over different "
            "inputs are refused unless --allow-different-inputs; a different judge or "
            "prompt hash is reported."
        ),
    )
    diff.add_argument("old", type=Path, metavar="OLD_DIR", help="the earlier run's --out folder")
    diff.add_argument("new", type=Path, metavar="NEW_DIR", help="the later run's --out folder")
    diff.add_argument(
        "--allow-different-inputs",
        action="store_true",
        help="compare runs whose input_sha256 differ",
    )
    diff.add_argument("--html", type=Path, metavar="PATH", help="also write the comparison page")
    diff.add_argument("--json", action="store_true", help="print one JSON object")
    diff.set_defaults(run=_diff)


def _echo_parser(commands: argparse._SubParsersAction[_Parser]) -> None:
    echo = commands.add_parser(
        "echo",
        help="run the planted-marker echo check against a model",
        description=(
            "Plant fresh markers in a synthetic corpus, ask the model (CITEMARK_BASE_URL, "
            "CITEMARK_MODEL, CITEMARK_API_KEY) to answer with [n] citations, and report "
            "per case whether it cited the right passage and whether it leaked a marker "
            "it was never given. A measurement, not a gate: the outcomes do not set the "
            "exit code."
        ),
    )
    echo.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_RESULTS_DIR,
        metavar="DIR",
        help=f"folder for {ECHO_REPORT_NAME} (default {DEFAULT_RESULTS_DIR}/)",
    )
    echo.add_argument(
        "--seed", type=int, metavar="N", help="reproduce a corpus (default: fresh markers)"
    )
    echo.add_argument(
        "--cases",
        type=int,
        default=len(DEFAULT_ECHO_CASES),
        metavar="N",
        help=f"how many cases (default {len(DEFAULT_ECHO_CASES)})",
    )
    _model_options(echo)
    # --seed already names the corpus seed here.
    _generation_options(echo, max_tokens=ANSWER_MAX_TOKENS, seed_flag="--model-seed")
    echo.add_argument("--json", action="store_true", help="print one JSON object")
    echo.set_defaults(run=_echo)


def _calibrate_parser(commands: argparse._SubParsersAction[_Parser]) -> None:
    calibrate = commands.add_parser(
        "calibrate",
        help="register a threshold, then measure a judge against human labels",
        description="Calibration of the faithfulness judge: register first, then run.",
    )
    actions = calibrate.add_subparsers(
        dest="action", required=True, metavar="ACTION", parser_class=_Parser
    )
    register = actions.add_parser(
        "register",
        help="register the agreement threshold for a label set, before any measurement",
        description=(
            "Write the threshold, with the label set's hash and the time, to its own file. "
            "Refused once a measurement of the same label set exists beside it."
        ),
    )
    register.add_argument("labels", type=Path, metavar="LABELS.json", help="the label set")
    register.add_argument(
        "--threshold",
        action="append",
        required=True,
        metavar="METRIC=MIN",
        help=f"a registered minimum, repeatable; METRIC is one of {', '.join(get_args(Metric))}",
    )
    register.add_argument(
        "--out", type=Path, required=True, metavar="REG.json", help="the registration file"
    )
    register.add_argument("--json", action="store_true", help="print one JSON object")
    register.set_defaults(run=_register)

    run = actions.add_parser(
        "run",
        help="measure the judge against the labels, under a registration",
        description=(
            "Ask the judge once per labelled item, compute agreement with plain code and "
            "write the measurement beside the registration. A report, never a gate: "
            "meeting the threshold or not does not change the exit code."
        ),
    )
    run.add_argument("labels", type=Path, metavar="LABELS.json", help="the label set")
    run.add_argument(
        "--registration",
        type=Path,
        required=True,
        metavar="REG.json",
        help="the file calibrate register wrote",
    )
    _judge_options(run, required=True)
    _generation_options(run, max_tokens=JUDGE_MAX_TOKENS, seed_flag="--seed")
    run.add_argument("--json", action="store_true", help="print one JSON object")
    run.set_defaults(run=_calibrate_run)


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
        help="seconds the whole model call may take (default 120; connecting waits 5)",
    )


class _Generation(NamedTuple):
    """The generation limits sent with every request of a command."""

    max_tokens: int | None
    temperature: float | None
    seed: int | None

    def config(self) -> dict[str, int | float | None]:
        """As recorded in a report's configuration."""
        return {"max_tokens": self.max_tokens, "temperature": self.temperature, "seed": self.seed}


def _generation_options(
    parser: argparse.ArgumentParser, *, max_tokens: int, seed_flag: str
) -> None:
    """``--max-tokens``, ``--temperature`` and the sampling seed, each with a CITEMARK_* twin."""
    parser.set_defaults(default_max_tokens=max_tokens)
    parser.add_argument(
        "--max-tokens",
        type=int,
        metavar="N",
        help=f"the most tokens the model may write per call (CITEMARK_MAX_TOKENS; default "
        f"{max_tokens}; 0 sends no limit). A reply cut off at it is rejected as truncated",
    )
    parser.add_argument(
        "--temperature",
        type=float,
        metavar="T",
        help="sampling temperature (CITEMARK_TEMPERATURE; default: the server's own)",
    )
    parser.add_argument(
        seed_flag,
        type=int,
        dest="model_seed",
        metavar="N",
        help="sampling seed, for endpoints that take one (CITEMARK_SEED; default: none sent)",
    )


def _generation(args: argparse.Namespace) -> _Generation:
    """The generation limits: the option, else its CITEMARK_* variable, else the default."""
    max_tokens = _option_or_env(args.max_tokens, "CITEMARK_MAX_TOKENS", int, "--max-tokens")
    if max_tokens is None:
        max_tokens = args.default_max_tokens
    if max_tokens < 0:
        msg = "--max-tokens must be 0 (no limit) or more"
        raise _UsageError(msg)
    temperature = _option_or_env(args.temperature, "CITEMARK_TEMPERATURE", float, "--temperature")
    seed = _option_or_env(args.model_seed, "CITEMARK_SEED", int, "the sampling seed")
    return _Generation(max_tokens or None, temperature, seed)


_Number = TypeVar("_Number", int, float)


def _option_or_env(
    value: _Number | None, variable: str, kind: type[_Number], option: str
) -> _Number | None:
    if value is not None:
        return value
    text = os.environ.get(variable, "").strip()
    if not text:
        return None
    try:
        return kind(text)
    except ValueError:
        msg = f"{variable} must be a number for {option}"
        raise _UsageError(msg) from None


def _judge_options(parser: argparse.ArgumentParser, *, required: bool) -> None:
    needs = " (CITEMARK_MODEL)" if required else " (no judge unless given)"
    parser.add_argument("--judge-model", metavar="NAME", help=f"the judge's model name{needs}")
    parser.add_argument(
        "--judge-base-url",
        metavar="URL",
        help="the judge's OpenAI-compatible base URL (CITEMARK_BASE_URL)",
    )
    parser.add_argument(
        "--judge-api-key", metavar="KEY", help="the judge's API key (prefer CITEMARK_API_KEY)"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="seconds each whole judge call may take (default 120; connecting waits 5)",
    )


def _chat(args: argparse.Namespace) -> OpenAIChat:
    return _openai_chat(args.base_url, args.model, args.api_key, args.timeout, _generation(args))


def _openai_chat(
    base_url: str | None,
    model: str | None,
    api_key: str | None,
    read_timeout: float,
    generation: _Generation,
) -> OpenAIChat:
    """An OpenAIChat from command-line options; a bad configuration is a usage error."""
    try:
        timeout = httpx.Timeout(connect=5.0, read=read_timeout, write=30.0, pool=10.0)
        # --timeout bounds the whole call, as a plain number does for OpenAIChat.
        return OpenAIChat(
            base_url,
            model,
            api_key,
            timeout=timeout,
            deadline=read_timeout,
            max_tokens=generation.max_tokens,
            temperature=generation.temperature,
            seed=generation.seed,
        )
    except ChatConfigError as exc:
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
    patterns = args.patterns or ("*.txt", "*.md")
    retriever = BM25Retriever.from_directory(docs, patterns=patterns)
    if not retriever.chunks:
        msg = (
            f"no readable text file under --docs matches {', '.join(patterns)}: there is "
            "nothing to retrieve (name other files with --pattern)"
        )
        raise _UsageError(msg)
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
        return _fail(args, f"answer rejected: {exc}", EXIT_VIOLATION, reason=exc.reason)
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
    out.write(printable(answer.text.rstrip(), keep_lines=True) + "\n\n")
    if not checks:
        out.write("No citations: the model abstained.\n")
    for check in checks:
        c = check.citation
        line = f"[{c.marker}] {c.doc_id} {c.chunk_id or ''} {c.start}-{c.end} {check.outcome}"
        out.write(printable(line) + "\n")
    return EXIT_OK


def _judge_chat(args: argparse.Namespace, *, required: bool) -> OpenAIChat | None:
    if not required and args.judge_model is None:
        if args.judge_base_url is not None or args.judge_api_key is not None:
            msg = "--judge-base-url and --judge-api-key need --judge-model"
            raise _UsageError(msg)
        return None
    return _openai_chat(
        args.judge_base_url, args.judge_model, args.judge_api_key, args.timeout, _generation(args)
    )


def _check_judge(args: argparse.Namespace) -> ChatModel | None:
    """The check's judge: a live one from the judge options, or a replay of a recorded run."""
    if args.replay_judge is None:
        return _judge_chat(args, required=False)
    if args.judge_model is not None or args.judge_base_url is not None:
        msg = "--replay-judge takes no --judge-model or --judge-base-url: it replays a recording"
        raise _UsageError(msg)
    try:
        return ReplayChat.from_run(args.replay_judge)
    except ReplayError as exc:
        msg = f"--replay-judge: {exc}"
        raise _UsageError(msg) from None


def _diff(args: argparse.Namespace) -> int:
    try:
        diff = compare_runs(args.old, args.new, allow_different_inputs=args.allow_different_inputs)
    except RunDiffError as exc:
        raise _UsageError(str(exc)) from None
    if args.html is not None:
        page = render_html(diff, old_name=str(args.old), new_name=str(args.new))
        try:
            write_report_atomically(args.html, page.encode("utf-8"))
        except OSError as exc:
            msg = f"cannot write --html: {exc.strerror or type(exc).__name__}"
            raise _UsageError(msg) from None
    if args.json:
        _print_json({"exit_code": EXIT_OK, "diff": diff.model_dump(mode="json")})
    else:
        sys.stdout.write(render_text(diff))
    return EXIT_OK


def _pattern(text: str, option: str, flags: int) -> re.Pattern[str]:
    """Compile a syntax option, or refuse it as a usage error naming only the option."""
    try:
        compiled = re.compile(text, flags)
    except re.error:
        msg = f"{option} must be a regular expression that compiles"
        raise _UsageError(msg) from None
    if compiled.groups == 0:
        msg = f"{option} must have a group holding the label (group 1 or group 'label')"
        raise _UsageError(msg)
    return compiled


def _check_reader(args: argparse.Namespace) -> tuple[Reader | None, ReadOptions]:
    """The reader ``--from`` or ``--map`` names, and what it is told; None for native JSONL."""
    if args.map and args.from_format is not None:
        msg = "--map reads a JSONL of your own shape: give it without --from"
        raise _UsageError(msg)
    mapping: dict[str, str] = {}
    for item in args.map:
        field, sep, pointer = item.partition("=")
        if not sep or not field:
            msg = "--map takes FIELD=POINTER, e.g. --map answer=/output/text"
            raise _UsageError(msg)
        if field in mapping:
            msg = f"--map names {field} twice"
            raise _UsageError(msg)
        mapping[field] = pointer
    options = ReadOptions(index_base=args.index_base, mapping=mapping or None)
    name = "map" if mapping else args.from_format
    if name is None:
        return None, options
    if mapping:
        try:
            check_mapping(mapping)  # before the first line is read
        except MappingError as exc:
            raise _UsageError(str(exc)) from None
    try:
        reader = reader_for(name)
    except ImportError as exc:
        msg = f"--from {name} needs a package that is not installed ({exc.name})"
        raise _UsageError(msg) from None
    return reader, options


def _pointer(value: str | None, option: str) -> str | None:
    """A JSON pointer option, refused unless it is one (empty, or starting with /)."""
    if value is not None and value and not value.startswith("/"):
        msg = f"{option} must be a JSON pointer: empty, or starting with /"
        raise _UsageError(msg)
    return value


def _check(args: argparse.Namespace) -> int:
    runs: Path = args.runs
    if not runs.is_file():
        msg = "RUNS.jsonl must name an existing file"
        raise _UsageError(msg)
    if args.concurrency < 1:
        msg = "--concurrency must be at least 1"
        raise _UsageError(msg)
    if args.html_rows < 0:
        msg = "--html-rows must be 0 or more"
        raise _UsageError(msg)
    coverage = args.min_sentence_coverage
    if coverage is not None and not (math.isfinite(coverage) and 0 <= coverage <= 1):
        msg = "--min-sentence-coverage must be a number in 0..1"
        raise _UsageError(msg)
    label_pattern = _pattern(args.label_pattern, "--label-pattern", re.MULTILINE)
    citation_pattern = _pattern(args.citation_pattern, "--citation-pattern", 0)
    reader, read_options = _check_reader(args)
    row_options = RowOptions(
        index_base=1 if args.index_base is None else args.index_base,
        text_field=_pointer(args.answer_field, "--answer-field"),
        citations_field=_pointer(args.citations_field, "--citations-field"),
    )
    judge = _check_judge(args)
    scorer = CitationScorer(
        judge,
        min_sentence_coverage=coverage,
        label_pattern=label_pattern,
        citation_pattern=citation_pattern,
        judge_violations=args.judge_violations,
        index_base=row_options.index_base,
        strict_markers=args.strict_markers,
    )
    config: dict[str, Any] = {
        "command": "check",
        "input": str(runs),
        "out": str(args.out),
        "judge_model": args.judge_model,
        "judge_base_url": _public_url(args.judge_base_url) if judge is not None else None,
        "concurrency": args.concurrency,
        "fail_on_violation": args.fail_on_violation,
        "min_sentence_coverage": coverage,
        "html_rows": args.html_rows,
        "threshold": scorer.threshold,
        "formats": list(dict.fromkeys(args.formats)),
        "label_pattern": label_pattern.pattern,
        "citation_pattern": citation_pattern.pattern,
        "judge_violations": args.judge_violations,
        **(_generation(args).config() if judge is not None else {}),
        "index_base": row_options.index_base,
        "strict_markers": args.strict_markers,
        "group_by": args.group_by,
    }
    if args.replay_judge is not None:
        config["replay_judge"] = str(args.replay_judge)
    if reader is not None:
        config["from"] = "map" if args.map else args.from_format
        if args.map:
            config["map"] = dict(read_options.mapping or {})
    fields = {"answer_field": args.answer_field, "citations_field": args.citations_field}
    config.update({key: value for key, value in fields.items() if value is not None})
    if args.engine == "ray":
        if reader is not None or args.answer_field or args.citations_field:
            msg = (
                "--engine ray reads citemark's own JSONL only: leave out --from, --map, "
                "--answer-field and --citations-field, or use --engine local"
            )
            raise _UsageError(msg)
        return _print_check_result(args, _ray_check(args, config, coverage))
    with CheckProgress(enabled=sys.stderr.isatty() and not args.quiet) as progress:
        try:
            result = run_check(
                runs,
                args.out,
                scorer,
                concurrency=args.concurrency,
                html_rows=args.html_rows,
                config=config,
                progress=progress,
                formats=list(dict.fromkeys(args.formats)),
                group_by=args.group_by,
                row_options=row_options,
                reader=reader,
                read_options=read_options,
            )
        except NoRowsError as exc:
            raise _UsageError(str(exc)) from None
        except ImportError as exc:  # a reader's optional dependency, met while reading
            if reader is None:
                raise
            msg = f"--from {config['from']} needs a package that is not installed ({exc.name})"
            raise _UsageError(msg) from None
        except OSError as exc:
            msg = f"cannot read the input or write to --out: {exc.strerror or type(exc).__name__}"
            raise _UsageError(msg) from None
    return _print_check_result(args, result)


def _print_check_result(args: argparse.Namespace, result: CheckResult) -> int:
    runs: Path = args.runs
    summary = result.summary
    failing = summary.deterministic_failures + summary.malformed
    code = EXIT_VIOLATION if args.fail_on_violation and failing else EXIT_OK
    if args.json:
        _print_json(
            {
                "exit_code": code,
                "input": str(runs),
                "input_sha256": result.report.input_sha256,
                "run_id": result.report.run_id,
                "check": summary.model_dump(mode="json"),
                "files": {
                    "report": str(result.report_path),
                    "html": str(result.html_path),
                    "rows": str(result.rows_path),
                },
            }
        )
        return code
    print_check(result, runs)
    return code


def _ray_check(
    args: argparse.Namespace, config: dict[str, Any], coverage: float | None
) -> CheckResult:
    """Run the check on Ray Data (imported only here); the same outputs as the local run."""
    if args.ray_workers < 1:
        msg = "--ray-workers must be at least 1"
        raise _UsageError(msg)
    try:
        import ray  # noqa: PLC0415 - the optional extra, only for --engine ray

        from citemark._scale.engine import ScorerSpec, run_ray_check  # noqa: PLC0415
    except ImportError:
        msg = "--engine ray needs Ray Data: pip install 'citemark[ray]'"
        raise _UsageError(msg) from None
    spec = ScorerSpec(
        judge_model=args.judge_model,
        judge_base_url=args.judge_base_url,
        judge_api_key=args.judge_api_key,
        timeout=args.timeout,
        replay_judge=None if args.replay_judge is None else str(args.replay_judge),
        min_sentence_coverage=coverage,
        label_pattern=args.label_pattern,
        citation_pattern=args.citation_pattern,
        judge_violations=args.judge_violations,
        index_base=1 if args.index_base is None else args.index_base,
        strict_markers=args.strict_markers,
        **(_generation(args)._asdict() if args.judge_model is not None else {}),
    )
    config = {**config, "engine": "ray", "ray_workers": args.ray_workers}
    ray.init(address=args.ray_address, include_dashboard=False, log_to_driver=False)
    try:
        return run_ray_check(
            args.runs,
            args.out,
            spec,
            concurrency=args.concurrency,
            workers=args.ray_workers,
            html_rows=args.html_rows,
            config=config,
            formats=list(dict.fromkeys(args.formats)),
            group_by=args.group_by,
        )
    except NoRowsError as exc:
        raise _UsageError(str(exc)) from None
    finally:
        ray.shutdown()


def _public_url(url: str | None) -> str | None:
    """The judge's base URL as configured, without any user:password part, for a report."""
    url = url or os.environ.get("CITEMARK_BASE_URL")
    return None if url is None else str(httpx.URL(url).copy_with(userinfo=b""))


def _echo(args: argparse.Namespace) -> int:
    if args.cases < 1:
        msg = "--cases must be at least 1"
        raise _UsageError(msg)
    chat = _chat(args)

    async def measure() -> EchoReport:
        async with chat:
            return await run_echo_check(
                Synthesizer(chat), cases=args.cases, seed=args.seed, out_dir=args.out
            )

    try:
        report = asyncio.run(measure())
    except OSError as exc:
        msg = f"cannot write to --out: {exc.strerror or type(exc).__name__}"
        raise _UsageError(msg) from None
    path = Path(args.out) / ECHO_REPORT_NAME
    counts = report.counts
    unreachable = counts["call_failed"] == len(report.cases)
    code = EXIT_CHAT if unreachable else EXIT_OK
    failures = report.failure_reasons
    if args.json:
        _print_json(
            {
                "exit_code": code,
                "report": str(path),
                "passed": report.passed,
                "counts": counts,
                "failure_reasons": failures,
                "cases": [
                    case.model_dump(mode="json", exclude={"question", "answer"})
                    for case in report.cases
                ],
            }
        )
        return code
    print_echo(report, path)
    if unreachable:
        _fail(args, _all_calls_failed(failures, len(report.cases)), code)
    return code


def _all_calls_failed(failures: dict[str, int], calls: int) -> str:
    """The one line for an echo whose every call failed, saying why, per reason code."""
    reasons = ", ".join(f"{count} {code}" for code, count in failures.items()) or "unknown"
    if "connect" in failures and len(failures) == 1:
        return f"every echo case failed: the model could not be reached ({calls} calls)"
    return f"every echo call failed ({calls} calls: {reasons})"


def _register(args: argparse.Namespace) -> int:
    labels = _read_labels(args.labels)
    minimums: dict[str, float] = {}
    metrics = get_args(Metric)
    for item in args.threshold:
        metric, sep, value = item.partition("=")
        if not sep or metric not in metrics:
            msg = f"--threshold must be METRIC=MIN with METRIC one of {', '.join(metrics)}"
            raise _UsageError(msg)
        try:
            minimums[metric] = float(value)
        except ValueError:
            msg = f"--threshold {metric}= must be a number"
            raise _UsageError(msg) from None
    try:
        threshold = Threshold.model_validate(minimums)
    except ValidationError as exc:
        problems = describe_validation_error(exc, Threshold.model_fields, phrasing="sentence")
        msg = f"the threshold is not valid: {problems}"
        raise _UsageError(msg) from None
    try:
        registration = register_threshold(labels, threshold, args.out)
    except CalibrationError as exc:
        msg = f"registration refused: {exc}"
        raise _UsageError(msg) from None
    except OSError as exc:
        msg = f"cannot write the registration: {exc.strerror or type(exc).__name__}"
        raise _UsageError(msg) from None
    if args.json:
        _print_json({"registration": str(args.out), **registration.model_dump(mode="json")})
        return EXIT_OK
    minimum = ", ".join(
        f"{metric} >= {value:g}" for metric, value in registration.threshold.minimums().items()
    )
    sys.stdout.write(
        printable(
            f"registered {minimum} for label set {registration.label_set_sha256[:12]} "
            f"({len(labels.items)} items) in {args.out}"
        )
        + "\n"
    )
    return EXIT_OK


def _calibrate_run(args: argparse.Namespace) -> int:
    labels = _read_labels(args.labels)
    registration: Path = args.registration
    if not registration.is_file():
        msg = "--registration must name an existing file"
        raise _UsageError(msg)
    chat = _judge_chat(args, required=True)
    assert chat is not None  # noqa: S101 - required=True always builds one
    judge = FaithfulnessJudge(chat)

    async def measure() -> CalibrationReport:
        async with chat:
            return await run_calibration(labels, judge, registration)

    try:
        report = asyncio.run(measure())
    except ValidationError:
        msg = "the registration file does not fit its schema"
        raise _UsageError(msg) from None
    except CalibrationError as exc:
        msg = f"calibration refused: {exc}"
        raise _UsageError(msg) from None
    except OSError as exc:
        msg = f"cannot read the registration: {exc.strerror or type(exc).__name__}"
        raise _UsageError(msg) from None
    failed = [item.reason or "unknown" for item in report.unusable if item.error == "ChatError"]
    failed_calls = len(failed)
    code = EXIT_CHAT if report.items and failed_calls == report.items else EXIT_OK
    measurement = _measurement_file(registration, report)
    if args.json:
        _print_json(
            {
                "exit_code": code,
                "measurement": str(measurement) if measurement else None,
                **report.model_dump(mode="json"),
            }
        )
        return code
    print_calibration(report, measurement)
    if code == EXIT_CHAT:
        reasons = ", ".join(
            f"{failed.count(reason)} {reason}" for reason in sorted(set(failed), key=failed.index)
        )
        _fail(args, f"every judge call failed ({failed_calls} items: {reasons})", code)
    return code


def _read_labels(path: Path) -> LabelSet:
    if not path.is_file():
        msg = "LABELS.json must name an existing file"
        raise _UsageError(msg)
    try:
        return LabelSet.read(path)
    except LabelSetError as exc:
        raise _UsageError(str(exc)) from None
    except OSError as exc:
        msg = f"cannot read the label set: {exc.strerror or type(exc).__name__}"
        raise _UsageError(msg) from None


def _measurement_file(registration: Path, report: CalibrationReport) -> Path | None:
    """The file `run_calibration` wrote beside the registration for this report."""
    stamp = report.measured_at.strftime("%Y%m%dT%H%M%S%fZ")
    found = sorted(registration.parent.glob(f"{registration.stem}.measurement-{stamp}*.json"))
    return found[-1] if found else None


def _fail(args: argparse.Namespace, message: str, code: int, **facts: int | str) -> int:
    if getattr(args, "json", False):
        _print_json({"error": message, "exit_code": code, **facts})
    else:
        sys.stderr.write(f"citemark: error: {printable(message)}\n")
    return code


def _print_json(value: object) -> None:
    # json.dumps escapes the C0 controls; DEL and C1 (a CSI) are escaped here too.
    sys.stdout.write(json_printable(json.dumps(value, ensure_ascii=False, allow_nan=False)) + "\n")
