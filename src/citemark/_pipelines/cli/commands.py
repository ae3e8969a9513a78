"""The ``citemark`` commands: each takes the parsed arguments and returns the exit code.

`citemark._pipelines.cli.main` parses the arguments and loads this module only then, so the
engines, the HTTP client and the readers imported here stay off ``--help``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TypeVar, get_args

from pydantic import ValidationError

from citemark._contract.errors import (
    CalibrationError,
    ChatConfigError,
    LabelSetError,
    MarkerOutOfRangeError,
    MissingExtraError,
    NoRowsError,
    ReplayError,
    RunDiffError,
    SynthesisError,
    TruncatedAnswerError,
    VerifierError,
)
from citemark._contract.validation import describe_validation_error
from citemark._contract.words import counted
from citemark._judging.calibration.labelset import LabelSet
from citemark._judging.calibration.run import (
    Metric,
    Threshold,
    register_threshold,
    run_calibration,
)
from citemark._judging.echo.run import ECHO_REPORT_NAME, run_echo_check
from citemark._judging.judge import FaithfulnessJudge
from citemark._judging.replay.replay import ReplayChat
from citemark._judging.scorer.scorer import CitationScorer
from citemark._model.synthesis import Synthesizer
from citemark._pipelines.check.run import CheckResult, run_check
from citemark._pipelines.check.terminal import printable
from citemark._pipelines.cli.common import (
    EXIT_CHAT,
    EXIT_OK,
    EXIT_VIOLATION,
    UsageError,
    fail,
    print_json,
)
from citemark._pipelines.cli.console import (
    CheckProgress,
    print_calibration,
    print_check,
    print_echo,
    print_support_calibration,
    print_support_measurement,
)
from citemark._pipelines.readers import Reader, ReadOptions, reader_for
from citemark._pipelines.readers.citemark_rows import RowOptions
from citemark._pipelines.readers.mapped import MappingError, check_mapping
from citemark._sources.spans import FileReader, verify_citation

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Iterator, Mapping

    from citemark._judging.calibration.run import CalibrationReport, Registration
    from citemark._judging.calibration.support import SupportCalibration, SupportMeasurement
    from citemark._judging.echo.run import EchoReport
    from citemark._judging.verifiers.base import Verifier
    from citemark._model.chat import OpenAIChat
    from citemark._model.completion import ChatModel
    from citemark._pipelines.scale.engine import ScorerSpec


__all__ = ["COMMANDS"]


class _Generation(NamedTuple):
    """The generation limits sent with every request of a command."""

    max_tokens: int | None
    temperature: float | None
    seed: int | None

    def config(self) -> dict[str, int | float | None]:
        """As recorded in a report's configuration."""
        return {"max_tokens": self.max_tokens, "temperature": self.temperature, "seed": self.seed}


def _generation(args: argparse.Namespace) -> _Generation:
    """The generation limits: the option, else its CITEMARK_* variable, else the default."""
    max_tokens = _option_or_env(args.max_tokens, "CITEMARK_MAX_TOKENS", int, "--max-tokens")
    if max_tokens is None:
        max_tokens = args.default_max_tokens
    if max_tokens < 0:
        msg = "--max-tokens must be 0 (no limit) or more"
        raise UsageError(msg)
    temperature = _option_or_env(args.temperature, "CITEMARK_TEMPERATURE", float, "--temperature")
    seed = _option_or_env(args.model_seed, "CITEMARK_SEED", int, args.seed_flag)
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
        raise UsageError(msg) from None


# OpenAIChat's arguments, as the options that set them are named on the command line.
# A refused configuration (ChatConfigError) names the argument; the command line says
# the option instead, so a CLI user never reads `pass base_url=`. --timeout sets both
# the read timeout and the whole call's deadline.
_MODEL_OPTIONS: Final = {"base_url": "--base-url", "model": "--model", "api_key": "--api-key"}
_JUDGE_OPTIONS: Final = {
    "base_url": "--judge-base-url",
    "model": "--judge-model",
    "api_key": "--judge-api-key",
}
_GENERATION_OPTIONS: Final = {
    "timeout": "--timeout",
    "deadline": "--timeout",
    "max_tokens": "--max-tokens",
    "temperature": "--temperature",
}
# An argument name as citemark's own messages write it: a whole word, lowercase (the
# CITEMARK_* variables stay as they are), with the `=` of "pass base_url=" if present.
_ARGUMENT_NAME: Final = re.compile(r"(?<![\w-])(?P<name>[a-z_]+)\b=?")


def _cli_wording(message: str, options: Mapping[str, str]) -> str:
    """A citemark-written message with each Python argument name replaced by its option.

    Args:
        message: A message citemark wrote (structural: no untrusted text in it).
        options: Argument name to option, e.g. ``{"base_url": "--judge-base-url"}``.

    Returns:
        The message, every name of ``options`` written as its option: ``model is
        required: pass model= or set CITEMARK_MODEL`` becomes ``--judge-model is
        required: pass --judge-model or set CITEMARK_MODEL``.
    """

    def option(found: re.Match[str]) -> str:
        return options.get(found.group("name"), found.group(0))

    return _ARGUMENT_NAME.sub(option, message)


def _chat(args: argparse.Namespace) -> OpenAIChat:
    return _openai_chat(
        args.base_url,
        args.model,
        args.api_key,
        args.timeout,
        _generation(args),
        options={**_MODEL_OPTIONS, **_GENERATION_OPTIONS, "seed": args.seed_flag},
    )


def _openai_chat(  # noqa: PLR0913 - the command's model options, then their names
    base_url: str | None,
    model: str | None,
    api_key: str | None,
    read_timeout: float,
    generation: _Generation,
    *,
    options: Mapping[str, str],
) -> OpenAIChat:
    """An OpenAIChat from command-line options; a bad configuration is a usage error.

    The error names the options (``options``: argument name to option), not
    OpenAIChat's arguments. httpx is imported here, by the commands that call a
    model, so ``citemark check`` without a judge never loads it.
    """
    import httpx  # noqa: PLC0415 - the model side loads only when a model is configured

    from citemark._model.chat import OpenAIChat  # noqa: PLC0415

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
        raise UsageError(_cli_wording(str(exc), options)) from None


def _answer(args: argparse.Namespace) -> int:
    docs: Path = args.docs
    if not docs.is_dir():
        msg = "--docs must name an existing folder"
        raise UsageError(msg)
    if args.k < 1:
        msg = "-k must be at least 1"
        raise UsageError(msg)
    chat = _chat(args)
    patterns = args.patterns or ("*.txt", "*.md")
    # BM25 loads numpy: imported here, it stays off every other command and --help.
    # Without the retrieval extra, the one line naming it, as a usage error (exit 2).
    from citemark._sources.retrieval import BM25Retriever  # noqa: PLC0415

    try:
        retriever = BM25Retriever.from_directory(docs, patterns=patterns)
    except MissingExtraError as exc:
        raise UsageError(str(exc)) from None
    if not retriever.chunks:
        msg = (
            f"no readable text file under --docs matches {', '.join(patterns)}: there is "
            "nothing to retrieve (name other files with --pattern)"
        )
        raise UsageError(msg)
    sources = retriever.retrieve(args.question, k=args.k)
    if not sources:
        msg = (
            f"no passage among {counted(len(retriever.chunks), 'chunk')} shares a word with the "
            "question: there is nothing to cite"
        )
        raise UsageError(msg)
    synthesizer = Synthesizer(chat)
    try:
        answer = asyncio.run(synthesizer.synthesize(args.question, sources))
    except MarkerOutOfRangeError as exc:
        return fail(args, f"answer rejected: {exc}", EXIT_VIOLATION, marker=exc.marker)
    except SynthesisError as exc:
        hint = _TRUNCATED_HINT if exc.reason == TruncatedAnswerError.reason else ""
        return fail(args, f"answer rejected: {exc}{hint}", EXIT_VIOLATION, reason=exc.reason)
    reader = FileReader(docs)
    checks = [verify_citation(c, reader) for c in answer.citations]
    if args.json:
        print_json(
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
            raise UsageError(msg)
        return None
    return _openai_chat(
        args.judge_base_url,
        args.judge_model,
        args.judge_api_key,
        args.timeout,
        _generation(args),
        options={**_JUDGE_OPTIONS, **_GENERATION_OPTIONS, "seed": args.seed_flag},
    )


def _check_judge(args: argparse.Namespace) -> ChatModel | None:
    """The check's judge: a live one from the judge options, or a replay of a recorded run."""
    if args.replay_judge is None:
        return _judge_chat(args, required=False)
    if args.judge_model is not None or args.judge_base_url is not None:
        msg = "--replay-judge takes no --judge-model or --judge-base-url: it replays a recording"
        raise UsageError(msg)
    try:
        return ReplayChat.from_run(args.replay_judge)
    except ReplayError as exc:
        msg = f"--replay-judge: {exc}"
        raise UsageError(msg) from None


def _check_verifier(args: argparse.Namespace, judge: ChatModel | None) -> Verifier | None:
    """``--verifier``: lexical, an NLI model folder, or the judge's own endpoint."""
    if args.verifier is None:
        return None
    from citemark._judging.verifiers.choose import (  # noqa: PLC0415
        build_verifier,
        parse_verifier_spec,
    )

    try:
        return build_verifier(parse_verifier_spec(args.verifier), chat=judge)
    except (VerifierError, MissingExtraError) as exc:
        raise UsageError(str(exc)) from None


def _verifier_factory(
    args: argparse.Namespace, scorer: ScorerSpec
) -> Callable[[], Verifier] | None:
    """What builds ``--verifier`` on each Ray worker, pickled: a judge's from the scorer's spec."""
    if args.verifier is None:
        return None
    from citemark._judging.verifiers.choose import (  # noqa: PLC0415
        build_verifier,
        parse_verifier_spec,
    )
    from citemark._pipelines.scale.engine import JudgeVerifierSpec  # noqa: PLC0415

    spec = parse_verifier_spec(args.verifier)
    if spec.kind == "judge":
        return JudgeVerifierSpec(scorer)
    return functools.partial(build_verifier, spec)


def _diff(args: argparse.Namespace) -> int:
    from citemark._pipelines.diff.command import run_diff  # noqa: PLC0415 - loaded when diff runs

    if args.allow_different_inputs:
        sys.stderr.write(
            "citemark: note: --allow-different-inputs is no longer needed and has no "
            "effect: runs over different inputs are compared\n"
        )
    try:
        run_diff(
            args.old,
            args.new,
            html=args.html,
            as_json=args.json,
            out=sys.stdout,
            exit_code=EXIT_OK,
            match=args.match,
        )
    except RunDiffError as exc:
        raise UsageError(str(exc)) from None
    return EXIT_OK


def _pattern(text: str, option: str, flags: int) -> re.Pattern[str]:
    """Compile a syntax option, or refuse it as a usage error naming only the option."""
    try:
        compiled = re.compile(text, flags)
    except re.error:
        msg = f"{option} must be a regular expression that compiles"
        raise UsageError(msg) from None
    if compiled.groups == 0:
        msg = f"{option} must have a group holding the label (group 1 or group 'label')"
        raise UsageError(msg)
    return compiled


def _check_reader(args: argparse.Namespace) -> tuple[Reader | None, ReadOptions]:
    """The reader ``--from`` or ``--map`` names, and what it is told; None for native JSONL."""
    if args.map and args.from_format is not None:
        msg = "--map reads a JSONL of your own shape: give it without --from"
        raise UsageError(msg)
    mapping: dict[str, str] = {}
    for item in args.map:
        field, sep, pointer = item.partition("=")
        if not sep or not field:
            msg = "--map takes FIELD=POINTER, e.g. --map answer=/output/text"
            raise UsageError(msg)
        if field in mapping:
            msg = f"--map names {field} twice"
            raise UsageError(msg)
        mapping[field] = pointer
    options = ReadOptions(index_base=args.index_base, mapping=mapping or None)
    name = "map" if mapping else args.from_format
    if name is None:
        return None, options
    if mapping:
        try:
            check_mapping(mapping)  # before the first line is read
        except MappingError as exc:
            raise UsageError(str(exc)) from None
    try:
        reader = reader_for(name)
    except ImportError as exc:
        msg = f"--from {name} needs a package that is not installed ({exc.name})"
        raise UsageError(msg) from None
    return reader, options


def _pointer(value: str | None, option: str) -> str | None:
    """A JSON pointer option, refused unless it is one (empty, or starting with /)."""
    if value is not None and value and not value.startswith("/"):
        msg = f"{option} must be a JSON pointer: empty, or starting with /"
        raise UsageError(msg)
    return value


STDIN: Final = Path("-")
"""``RUNS.jsonl`` given as ``-``: the rows come from standard input."""
_SPOOL_CHUNK: Final = 1 << 16


@contextlib.contextmanager
def _runs_file(runs: Path) -> Iterator[Path]:
    """The path run_check reads: ``runs`` itself, or standard input spooled to a file.

    run_check reads its input twice (the line count for the progress total, then the
    rows), so standard input is first copied, 64 KiB at a time, to a file named ``-``
    in a temporary folder, and read from there as the relative path ``-`` while that
    folder is the working directory: the report names the input ``-``, as given, and
    its SHA-256 is that of the bytes read. Memory stays bounded; the temporary disk
    holds one copy of the input until the check ends.
    """
    if runs != STDIN:
        yield runs
        return
    with tempfile.TemporaryDirectory(prefix="citemark-stdin-") as folder:
        with (Path(folder) / STDIN).open("wb") as spool:
            shutil.copyfileobj(sys.stdin.buffer, spool, _SPOOL_CHUNK)
        with contextlib.chdir(folder):
            yield STDIN


def _check(args: argparse.Namespace) -> int:
    runs: Path = args.runs
    if runs != STDIN and not runs.is_file():
        msg = "RUNS.jsonl must name an existing file (or - for standard input)"
        raise UsageError(msg)
    if args.concurrency < 1:
        msg = "--concurrency must be at least 1"
        raise UsageError(msg)
    if args.html_rows < 0:
        msg = "--html-rows must be 0 or more"
        raise UsageError(msg)
    coverage = args.min_sentence_coverage
    if coverage is not None and not (math.isfinite(coverage) and 0 <= coverage <= 1):
        msg = "--min-sentence-coverage must be a number in 0..1"
        raise UsageError(msg)
    label_pattern = _pattern(args.label_pattern, "--label-pattern", re.MULTILINE)
    citation_pattern = _pattern(args.citation_pattern, "--citation-pattern", 0)
    reader, read_options = _check_reader(args)
    row_options = RowOptions(
        index_base=1 if args.index_base is None else args.index_base,
        text_field=_pointer(args.answer_field, "--answer-field"),
        citations_field=_pointer(args.citations_field, "--citations-field"),
    )
    judge = _check_judge(args)
    verifier = _check_verifier(args, judge)
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
    if verifier is not None:
        config["verifier"] = verifier.identity.as_dict()
    if reader is not None:
        config["from"] = "map" if args.map else args.from_format
        if args.map:
            config["map"] = dict(read_options.mapping or {})
    fields = {"answer_field": args.answer_field, "citations_field": args.citations_field}
    config.update({key: value for key, value in fields.items() if value is not None})
    if args.engine == "ray":
        _refuse_what_ray_cannot_read(args, reader)
        return _print_check_result(args, _ray_check(args, config, coverage))
    # Absolute before standard input is spooled, which changes the working directory.
    out = args.out.absolute() if runs == STDIN else args.out
    with (
        CheckProgress(enabled=sys.stderr.isatty() and not args.quiet) as progress,
        _runs_file(runs) as source,
    ):
        try:
            result = run_check(
                source,
                out,
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
                verifier=verifier,
            )
        except NoRowsError as exc:
            raise UsageError(str(exc)) from None
        except ImportError as exc:  # a reader's optional dependency, met while reading
            if reader is None:
                raise
            msg = f"--from {config['from']} needs a package that is not installed ({exc.name})"
            raise UsageError(msg) from None
        except OSError as exc:
            msg = f"cannot read the input or write to --out: {exc.strerror or type(exc).__name__}"
            raise UsageError(msg) from None
    return _print_check_result(args, result)


def _refuse_what_ray_cannot_read(args: argparse.Namespace, reader: Reader | None) -> None:
    """--engine ray reads citemark's own JSONL from a file; anything else is a usage error."""
    if reader is not None or args.answer_field or args.citations_field:
        msg = (
            "--engine ray reads citemark's own JSONL only: leave out --from, --map, "
            "--answer-field and --citations-field, or use --engine local"
        )
        raise UsageError(msg)
    if args.runs == STDIN:
        msg = "--engine ray reads a file: give RUNS.jsonl a path, not - (standard input)"
        raise UsageError(msg)


def _print_check_result(args: argparse.Namespace, result: CheckResult) -> int:
    runs: Path = args.runs
    summary = result.summary
    failing = summary.deterministic_failures + summary.malformed
    code = EXIT_VIOLATION if args.fail_on_violation and failing else EXIT_OK
    if args.json:
        print_json(
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
        raise UsageError(msg)
    try:
        import ray  # noqa: PLC0415 - the optional extra, only for --engine ray

        from citemark._contract.errors import RayRunError  # noqa: PLC0415
        from citemark._pipelines.scale.engine import ScorerSpec, run_ray_check, start_ray  # noqa: PLC0415
    except ImportError:
        msg = "--engine ray needs Ray Data: pip install 'citemark[ray]'"
        raise UsageError(msg) from None
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
    start_ray(args.ray_address)
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
            verifier_factory=_verifier_factory(args, spec),
        )
    except (NoRowsError, RayRunError) as exc:  # a lost worker or node: one line, as below
        raise UsageError(str(exc)) from None
    except OSError as exc:  # the local engine's line, for a worker's full disk too
        msg = f"cannot read the input or write to --out: {exc.strerror or type(exc).__name__}"
        raise UsageError(msg) from None
    finally:
        ray.shutdown()


def _public_url(url: str | None) -> str | None:
    """The judge's base URL as configured, without any user:password part, for a report."""
    url = url or os.environ.get("CITEMARK_BASE_URL")
    if url is None:
        return None
    import httpx  # noqa: PLC0415 - only a configured URL needs its parser

    return str(httpx.URL(url).copy_with(userinfo=b""))


def _echo(args: argparse.Namespace) -> int:
    if args.cases < 1:
        msg = "--cases must be at least 1"
        raise UsageError(msg)
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
        raise UsageError(msg) from None
    path = Path(args.out) / ECHO_REPORT_NAME
    counts = report.counts
    unreachable = counts["call_failed"] == len(report.cases)
    code = EXIT_CHAT if unreachable else EXIT_OK
    failures = report.failure_reasons
    if args.json:
        print_json(
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
        fail(args, _all_calls_failed(failures, len(report.cases)), code)
    return code


def _all_calls_failed(failures: dict[str, int], calls: int) -> str:
    """The one line for an echo whose every call failed, saying why, per reason code."""
    reasons = ", ".join(f"{count} {code}" for code, count in failures.items()) or "unknown"
    if "connect" in failures and len(failures) == 1:
        return f"every echo case failed: the model could not be reached ({counted(calls, 'call')})"
    return f"every echo call failed ({counted(calls, 'call')}: {reasons})"


def _register(args: argparse.Namespace) -> int:
    labels = None if args.support is not None else _read_labels(args.labels)
    minimums: dict[str, float] = {}
    metrics = get_args(Metric)
    for item in args.threshold:
        metric, sep, value = item.partition("=")
        if not sep or metric not in metrics:
            msg = f"--threshold must be METRIC=MIN with METRIC one of {', '.join(metrics)}"
            raise UsageError(msg)
        try:
            minimums[metric] = float(value)
        except ValueError:
            msg = f"--threshold {metric}= must be a number"
            raise UsageError(msg) from None
    try:
        threshold = Threshold.model_validate(minimums)
    except ValidationError as exc:
        problems = describe_validation_error(exc, Threshold.model_fields, phrasing="sentence")
        msg = f"the threshold is not valid: {problems}"
        raise UsageError(msg) from None
    with _calibration_refusals("write the registration", refused="registration refused"):
        if labels is not None:
            registration = register_threshold(labels, threshold, args.out)
            what = counted(len(labels.items), "item")
        else:
            registration = _register_support(args, threshold)
            what = f"{args.labels.name} under {args.support}"
    if args.json:
        print_json({"registration": str(args.out), **registration.model_dump(mode="json")})
        return EXIT_OK
    minimum = ", ".join(
        f"{metric} >= {value:g}" for metric, value in registration.threshold.minimums().items()
    )
    sys.stdout.write(
        printable(
            f"registered {minimum} for label set {registration.label_set_sha256[:12]} "
            f"({what}) in {args.out}"
        )
        + "\n"
    )
    return EXIT_OK


def _register_support(args: argparse.Namespace, threshold: Threshold) -> Registration:
    """``calibrate register --support MAPPING``: the labels are an ExpertQA file's."""
    from citemark._judging.calibration.support import (  # noqa: PLC0415
        register_support_threshold,
    )

    if not args.labels.is_file():
        msg = "with --support, LABELS must name an existing ExpertQA file"
        raise UsageError(msg)
    return register_support_threshold(args.labels, args.support, threshold, args.out)


def _calibrate_run(args: argparse.Namespace) -> int:
    labels = _read_labels(args.labels)
    registration: Path = args.registration
    if not registration.is_file():
        msg = "--registration must name an existing file"
        raise UsageError(msg)
    chat = _judge_chat(args, required=True)
    assert chat is not None  # noqa: S101 - required=True always builds one
    judge = FaithfulnessJudge(chat)

    async def measure() -> CalibrationReport:
        async with chat:
            return await run_calibration(labels, judge, registration)

    with _calibration_refusals("read the registration"):
        report = asyncio.run(measure())
    failed = [item.reason or "unknown" for item in report.unusable if item.error == "ChatError"]
    failed_calls = len(failed)
    code = EXIT_CHAT if report.items and failed_calls == report.items else EXIT_OK
    measurement = _measurement_file(registration, report)
    if args.json:
        print_json(
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
        failed_items = counted(failed_calls, "item")
        fail(args, f"every judge call failed ({failed_items}: {reasons})", code)
    return code


def _calibrate_support(args: argparse.Namespace) -> int:
    """``citemark calibrate support``: a verifier's agreement with ExpertQA's labels."""
    from citemark._judging.calibration.support import measure_support  # noqa: PLC0415
    from citemark._judging.verifiers.choose import (  # noqa: PLC0415
        build_verifier,
        parse_verifier_spec,
    )

    if not args.labels.is_file():
        msg = "EXPERTQA.jsonl must name an existing file"
        raise UsageError(msg)
    try:
        spec = parse_verifier_spec(args.verifier)
        chat = _judge_chat(args, required=spec.kind == "judge")
        verifier = build_verifier(spec, chat=chat)
    except (VerifierError, MissingExtraError) as exc:
        raise UsageError(str(exc)) from None

    async def measure() -> SupportMeasurement:
        try:
            return await measure_support(args.labels, verifier, mapping=args.mapping)
        finally:
            await verifier.aclose()
            if chat is not None:
                await chat.aclose()

    registration: Path | None = args.registration
    if registration is not None and not registration.is_file():
        msg = "--registration must name an existing file"
        raise UsageError(msg)
    try:
        measured = asyncio.run(measure())
    except LabelSetError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        msg = f"cannot read the labels: {exc.strerror or type(exc).__name__}"
        raise UsageError(msg) from None
    calibration = None if registration is None else _support_calibration(measured, registration)
    if args.json:
        found = measured.as_dict() if calibration is None else calibration.as_dict()
        if calibration is not None:
            found["measurement_path"] = str(calibration.path)
        print_json({"exit_code": EXIT_OK, **found})
        return EXIT_OK
    print_support_measurement(measured)
    if calibration is not None:
        print_support_calibration(calibration)
    return EXIT_OK


def _support_calibration(measured: SupportMeasurement, registration: Path) -> SupportCalibration:
    """The measurement checked against ``registration`` and written beside it."""
    from citemark._judging.calibration.support import calibrate_support  # noqa: PLC0415

    with _calibration_refusals("read the registration or write the measurement"):
        return calibrate_support(measured, registration)


@contextlib.contextmanager
def _calibration_refusals(doing: str, refused: str = "calibration refused") -> Iterator[None]:
    """Calibration's refusals as one-line usage errors; ``doing`` says what failed on disk."""
    try:
        yield
    except ValidationError:
        msg = "the registration file does not fit its schema"
        raise UsageError(msg) from None
    except CalibrationError as exc:
        msg = f"{refused}: {exc}"
        raise UsageError(msg) from None
    except OSError as exc:
        msg = f"cannot {doing}: {exc.strerror or type(exc).__name__}"
        raise UsageError(msg) from None


def _read_labels(path: Path) -> LabelSet:
    if not path.is_file():
        msg = "LABELS.json must name an existing file"
        raise UsageError(msg)
    try:
        return LabelSet.read(path)
    except LabelSetError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        msg = f"cannot read the label set: {exc.strerror or type(exc).__name__}"
        raise UsageError(msg) from None


def _measurement_file(registration: Path, report: CalibrationReport) -> Path | None:
    """The file `run_calibration` wrote beside the registration for this report."""
    stamp = report.measured_at.strftime("%Y%m%dT%H%M%S%fZ")
    found = sorted(registration.parent.glob(f"{registration.stem}.measurement-{stamp}*.json"))
    return found[-1] if found else None


_TRUNCATED_HINT: Final = "; raise --max-tokens (0 sends no limit)"


COMMANDS: Final[dict[str, Callable[[argparse.Namespace], int]]] = {
    "answer": _answer,
    "check": _check,
    "diff": _diff,
    "echo": _echo,
    "register": _register,
    "calibrate_run": _calibrate_run,
    "calibrate_support": _calibrate_support,
}
"""Each command by the name the parser records."""
