"""What ``import citemark`` loads: the contract only, the rest on first use (issue 25).

Each check runs in a fresh interpreter, since this test process has long imported
everything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import citemark

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_RUNS = ROOT / "examples" / "data" / "example-runs.jsonl"

# Modules `import citemark` must not load: the model side, BM25 and its numpy, the
# terminal, the CLI and every subsystem past the contract.
HEAVY = (
    "httpx",
    "httpcore",
    "numpy",
    "rank_bm25",
    "rich",
    "click",
    "citemark._model.chat",
    "citemark._pipelines.cli",
    "citemark._judging.echo",
    "citemark._judging.calibration",
    "citemark._pipelines.eval_report",
    "citemark._sources.retrieval",
    "citemark._judging.judge",
    "citemark._judging.scorer",
    "citemark._pipelines.check",
    "citemark._contract.artifacts",
    "citemark._model.synthesis",
    "citemark._model.redaction",
    "citemark.calibration",
    "citemark.echo",
    "citemark.reports",
    "citemark.evaluation",
)

# What the contract is: the models, the marker grammar, resolution and the errors.
CONTRACT = (
    "citemark._contract.models",
    "citemark._markers.grammar",
    "citemark._markers.resolve",
    "citemark._contract.errors",
)


def loaded_after(code: str) -> set[str]:
    """The names in ``sys.modules`` after ``code`` runs in a fresh interpreter."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    completed = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    return set(json.loads(completed.stdout.splitlines()[-1]))


def heavy_in(modules: set[str]) -> list[str]:
    """The `HEAVY` modules (or their submodules) among ``modules``."""
    return sorted(
        name for name in modules for heavy in HEAVY if name == heavy or name.startswith(f"{heavy}.")
    )


def run_python(code: str) -> str:
    """Run ``code`` in a fresh interpreter and return what it printed."""
    completed = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True
    )
    return completed.stdout


class TestImportCitemark:
    def test_loads_the_contract_and_nothing_heavy(self):
        """`import citemark` loads the models, markers, resolve and errors, and no subsystem."""
        modules = loaded_after("import citemark")
        assert [] == heavy_in(modules)
        assert set(CONTRACT) <= modules

    def test_a_contract_name_loads_nothing_heavy(self):
        """Using the contract (resolve a cited answer) still loads no model side."""
        modules = loaded_after(
            "from citemark import Source, resolve\n"
            "resolve('Fee [1].', [Source(text='The fee.', doc_id='a')])"
        )
        assert [] == heavy_in(modules)

    def test_a_lazy_name_loads_its_module_on_first_use(self):
        """Reading `citemark.OpenAIChat` is what brings httpx in."""
        modules = loaded_after("import citemark\ncitemark.OpenAIChat")
        assert "httpx" in modules
        assert "citemark._model.chat" in modules
        assert "numpy" not in modules

    def test_the_help_of_the_command_loads_no_engine(self):
        """``citemark --help`` parses arguments without numpy, httpx or the check engine.

        BM25 loads for ``answer``, the rest once a command runs (`citemark._pipelines.cli.commands`).
        """
        modules = loaded_after(
            "import contextlib, io\n"
            "from citemark._pipelines.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
            "    main(['--help'])"
        )
        assert "numpy" not in modules
        assert "rank_bm25" not in modules
        assert [] == [
            name
            for name in (
                "httpx",
                "citemark._pipelines.cli.commands",
                "citemark._pipelines.check.run",
                "rich",
            )
            if name in modules
        ]


# What `citemark check` without a judge must not load (issue 35): the HTTP client and
# BM25 with its numpy, none of which a check that calls no model uses.
MODEL_SIDE = ("httpx", "httpcore", "numpy", "rank_bm25")

# Runs the ``citemark`` command as its console script does (``citemark.__main__``),
# then writes every name in ``sys.modules`` to the file named by its first argument:
# written at exit, so whatever the command loaded on any path is counted.
COMMAND_RUNNER = """
import json, runpy, sys
record, sys.argv = sys.argv[1], ["citemark", *sys.argv[2:]]
try:
    runpy.run_module("citemark", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code
with open(record, "w", encoding="utf-8") as out:
    json.dump({"exit_code": code, "modules": sorted(sys.modules)}, out)
"""


def run_command(record: Path, *args: str) -> tuple[int, set[str]]:
    """Run ``citemark ARGS`` in a fresh interpreter; its exit code and loaded modules."""
    # No CITEMARK_* variable of this machine may configure a model for the command.
    env = {key: value for key, value in os.environ.items() if not key.startswith("CITEMARK_")}
    subprocess.run(
        [sys.executable, "-c", COMMAND_RUNNER, str(record), *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env=env,
        timeout=300,
    )
    ran = json.loads(record.read_text(encoding="utf-8"))
    return ran["exit_code"], set(ran["modules"])


def loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """The ``names`` (or their submodules) among ``modules``."""
    return sorted(
        name for name in modules for top in names if name == top or name.startswith(f"{top}.")
    )


class TestCheckWithoutAJudge:
    def test_check_loads_neither_httpx_nor_numpy(self, tmp_path):
        """`citemark check` on the bundled runs, no judge: no httpx, numpy or rank_bm25.

        The real command line (``python -m citemark``, the console script's ``main``)
        checks the demo file to the end, report written; until issue 35 its commands
        imported httpx (the judge's client) before knowing there was no judge.
        """
        out = tmp_path / "out"
        code, modules = run_command(
            tmp_path / "modules.json", "check", str(EXAMPLE_RUNS), "--out", str(out)
        )
        assert code in {0, 1}
        assert (out / "report.json").is_file()
        assert "citemark._pipelines.check.run" in modules
        assert [] == loaded(modules, MODEL_SIDE)

    def test_the_runner_sees_what_a_judge_loads(self, tmp_path):
        """The same runner counts httpx once a judge is configured (none is called here).

        An unreachable judge on 127.0.0.1 port 9: the command builds its client, so the
        list holds httpx whether the call then fails or not; the check above is not
        blind.
        """
        code, modules = run_command(
            tmp_path / "modules.json",
            "check",
            str(EXAMPLE_RUNS),
            "--out",
            str(tmp_path / "out"),
            "--judge-model",
            "m",
            "--judge-base-url",
            "http://127.0.0.1:9/v1",
            "--timeout",
            "2",
        )
        assert code is not None
        assert "httpx" in modules
        assert [] == loaded(modules, ("numpy", "rank_bm25"))


class TestImportLangchainCitemark:
    def test_loads_no_citemark_subsystem(self):
        """The LangChain adapter's import loads citemark's contract, not its scorer or writers."""
        modules = loaded_after("import langchain_citemark")
        assert [] == heavy_in(modules)
        assert "citemark.providers" not in modules

    def test_every_public_name_imports_in_a_fresh_process(self):
        """`from langchain_citemark import X` works for every name, lazy ones included."""
        printed = run_python(
            """
            import langchain_citemark
            missing = []
            for name in langchain_citemark.__all__:
                namespace = {}
                exec(f"from langchain_citemark import {name}", namespace)
                if namespace[name] is not getattr(langchain_citemark, name):
                    missing.append(name)
            print(missing, sorted(set(langchain_citemark.__all__) - set(dir(langchain_citemark))))
            """
        )
        assert "[] []\n" == printed


class TestPublicNamesStayWhole:
    def test_every_public_name_imports_from_the_top_level_in_a_fresh_process(self):
        """`from citemark import X` works for every name of __all__, none loaded before."""
        printed = run_python(
            """
            import citemark
            missing = []
            for name in citemark.__all__:
                namespace = {}
                exec(f"from citemark import {name}", namespace)
                if namespace[name] is not getattr(citemark, name):
                    missing.append(name)
            print(missing)
            """
        )
        assert "[]\n" == printed

    def test_dir_lists_every_public_name_before_it_loads(self):
        """dir(citemark) counts the names whose modules have not loaded yet."""
        printed = run_python(
            """
            import sys
            import citemark
            names = set(dir(citemark))
            print(sorted(set(citemark.__all__) - names), "httpx" in sys.modules)
            """
        )
        assert "[] False\n" == printed

    def test_a_lazy_class_reports_the_package_even_if_a_domain_module_loaded_it_first(self):
        """`citemark.CitationScorer` prints as citemark.X whichever import came first."""
        printed = run_python(
            """
            import citemark.evaluation
            import citemark
            print(citemark.CitationScorer.__module__, citemark.OpenAIChat.__module__)
            """
        )
        assert "citemark citemark\n" == printed

    def test_lazy_names_are_the_objects_of_their_modules(self):
        """A lazily loaded name is the very object its private module defines."""
        from citemark._judging.scorer.scorer import CitationScorer
        from citemark._model.chat import OpenAIChat

        assert citemark.OpenAIChat is OpenAIChat
        assert citemark.CitationScorer is CitationScorer

    def test_an_unknown_name_stays_an_attribute_error_in_a_fresh_process(self):
        """The lazy table serves its own names only."""
        printed = run_python(
            """
            import citemark
            try:
                citemark.no_such_name
            except AttributeError as exc:
                print(type(exc).__name__)
            """
        )
        assert "AttributeError\n" == printed
