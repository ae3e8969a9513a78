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
(`citemark._pipelines.check.run.run_check`, `citemark.run_echo_check`,
`citemark.register_threshold`, `citemark.run_calibration`); this module parses
arguments, and ``commands`` calls them and prints, loaded only once the arguments parse.
"""

from __future__ import annotations

import argparse
import gc
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, get_args

from citemark._contract.artifacts import DEFAULT_RESULTS_DIR, citemark_version
from citemark._contract.errors import ChatError
from citemark._contract.syntax import DEFAULT_CITATION_PATTERN, DEFAULT_LABEL_PATTERN
from citemark._judging.calibration.agreement import Metric
from citemark._judging.calibration.support import MAPPINGS as SUPPORT_MAPPINGS
from citemark._judging.echo.plan import DEFAULT_ECHO_CASES, ECHO_REPORT_NAME
from citemark._pipelines.check.names import DEFAULT_HTML_ROWS, OUTPUT_FORMATS
from citemark._pipelines.check.terminal import printable
from citemark._pipelines.cli.common import (
    EXIT_CHAT,
    EXIT_OK,
    EXIT_USAGE,
    EXIT_VIOLATION,
    UsageError,
    fail,
)
from citemark._pipelines.readers import FORMAT_NAMES

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["EXIT_CHAT", "EXIT_OK", "EXIT_USAGE", "EXIT_VIOLATION", "main"]

ANSWER_MAX_TOKENS = 1024
"""``--max-tokens`` by default for ``answer`` and ``echo``: room for a cited answer."""
JUDGE_MAX_TOKENS = 512
"""``--max-tokens`` by default for a judge (``check``, ``calibrate run``): a verdict is short."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    _escape_unencodable_output()
    parser = _parser()
    args = parser.parse_args(argv)
    # The commands load the engines, the HTTP client and the readers: after parsing,
    # so that --help, --version and a usage error cost the parser alone.
    from citemark._pipelines.cli.commands import COMMANDS  # noqa: PLC0415

    # What is loaded now lives as long as the command: the collector need not walk it
    # again for every generation-2 pass over a long check (given back at the end, for
    # a caller that runs main in its own process).
    gc.freeze()
    try:
        return int(COMMANDS[args.run](args))
    except UsageError as exc:
        return fail(args, str(exc), EXIT_USAGE)
    except ChatError as exc:
        facts: dict[str, int | str] = {"reason": exc.reason}
        if exc.status is not None:
            facts["status"] = exc.status
        if exc.provider_code is not None:
            facts["provider_code"] = exc.provider_code
        return fail(args, str(exc), EXIT_CHAT, **facts)
    except KeyboardInterrupt:
        return fail(args, "interrupted", 130)
    finally:
        gc.unfreeze()


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
    parser.add_argument("--version", action="version", version=f"%(prog)s {citemark_version()}")
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
    answer.set_defaults(run="answer")
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
    check.add_argument(
        "runs",
        type=Path,
        metavar="RUNS.jsonl",
        help="recorded runs, one per line; - reads them from standard input",
    )
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
        choices=sorted(OUTPUT_FORMATS),
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
        "--verifier",
        metavar="KIND",
        default=None,
        help="also measure whether each cited source supports its sentence (ALCE citation "
        "recall and precision, advisory): lexical (no model), nli:PATH (an ONNX NLI model "
        "folder) or judge (the --judge-* endpoint); default: none",
    )
    check.add_argument(
        "--group-by",
        metavar="FIELD",
        default=None,
        help="break every count down by this row field (e.g. model or origin): the terminal "
        "summary, report.json and report.html; a missing or non-string value is '(none)'",
    )
    check.add_argument("--json", action="store_true", help="print one JSON object")
    check.set_defaults(run="check")


def _diff_parser(commands: argparse._SubParsersAction[_Parser]) -> None:
    diff = commands.add_parser(
        "diff",
        help="what changed between two check runs, row by row",
        description=(
            "Compare the check outputs in OLD_DIR and NEW_DIR row by row (by id where the "
            "runs share ids, else by question, else by line): which rows changed outcome "
            "and why, with totals, how "
            "many rows changed answer, sources or question, and every check option, version "
            "and judge field that differs. Two runs of a changed pipeline over the same "
            "questions compare whatever their answers; only runs that share no row are "
            "refused."
        ),
    )
    diff.add_argument("old", type=Path, metavar="OLD_DIR", help="the earlier run's --out folder")
    diff.add_argument("new", type=Path, metavar="NEW_DIR", help="the later run's --out folder")
    # Accepted and ignored, with a note: runs over different inputs compare without it.
    diff.add_argument("--allow-different-inputs", action="store_true", help=argparse.SUPPRESS)
    diff.add_argument("--html", type=Path, metavar="PATH", help="also write the comparison page")
    diff.add_argument("--json", action="store_true", help="print one JSON object")
    diff.add_argument(
        "--match",
        choices=("auto", "id", "question", "line"),
        default="auto",
        help=(
            "how rows are paired (default auto: by id where the two runs share ids, never "
            "by per-run ids; else by question, else by line); id, question or line forces one"
        ),
    )
    diff.set_defaults(run="diff")


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
    echo.set_defaults(run="echo")


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
    register.add_argument(
        "--support",
        choices=sorted(SUPPORT_MAPPINGS),
        metavar="MAPPING",
        help="LABELS is an ExpertQA data/lfqa file, registered as read under MAPPING "
        f"({', '.join(sorted(SUPPORT_MAPPINGS))}), for calibrate support",
    )
    register.add_argument("--json", action="store_true", help="print one JSON object")
    register.set_defaults(run="register")

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
    run.set_defaults(run="calibrate_run")

    support = actions.add_parser(
        "support",
        help="measure a support verifier against ExpertQA's human claim labels",
        description=(
            "Ask the verifier once per labelled claim of an ExpertQA lfqa file (does the "
            "cited evidence entail the claim?) and print its agreement with the labels: "
            "rate, Cohen's kappa, and precision and recall per class. Advisory: a report, "
            "never a gate."
        ),
    )
    support.add_argument(
        "labels", type=Path, metavar="EXPERTQA.jsonl", help="an ExpertQA data/lfqa split"
    )
    support.add_argument(
        "--verifier",
        required=True,
        metavar="KIND",
        help="lexical (no model), nli:PATH (an ONNX NLI model folder) or judge "
        "(the --judge-* endpoint)",
    )
    support.add_argument(
        "--mapping",
        choices=sorted(SUPPORT_MAPPINGS),
        default="complete-vs-rest",
        help="which labels count as entailed and not (default complete-vs-rest: Complete "
        "is entailed, any other label is not)",
    )
    support.add_argument(
        "--registration",
        type=Path,
        metavar="REG.json",
        help="the file calibrate register --support wrote: check each registered minimum "
        "and write the measurement beside it (a report, never a gate)",
    )
    _judge_options(support, required=False)
    _generation_options(support, max_tokens=JUDGE_MAX_TOKENS, seed_flag="--seed")
    support.add_argument("--json", action="store_true", help="print one JSON object")
    support.set_defaults(run="calibrate_support")


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


def _generation_options(
    parser: argparse.ArgumentParser, *, max_tokens: int, seed_flag: str
) -> None:
    """``--max-tokens``, ``--temperature`` and the sampling seed, each with a CITEMARK_* twin."""
    parser.set_defaults(default_max_tokens=max_tokens, seed_flag=seed_flag)
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
