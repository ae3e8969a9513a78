"""make dist builds installable distributions, and the README's install lines work outside the repo.

The wheels are built with ``scripts/dist.py`` (what ``make dist`` runs) into a temporary
folder, then installed with the README's own ``pip install`` lines into fresh virtual
environments under the temporary folder, outside the repository, with no index at all
(``--no-index``): nothing is downloaded. The third-party dependencies (pydantic,
httpx, langchain-core, ...) come from this environment's site-packages, seen through
a folder of links to every entry but citemark's own distributions, named in a ``.pth``
file of the new environment. pip sees those as installed and resolves only the
citemark distributions from the built files, so an adapter without its core fails
there as it fails for a user.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
ADAPTER_WHEELS = {
    "langchain-citemark": f"langchain_citemark-{VERSION}-py3-none-any.whl",
    "llama-index-citemark": f"llama_index_citemark-{VERSION}-py3-none-any.whl",
}
# Entries of this environment's site-packages the dependency view leaves out: the
# citemark distributions (editable here) and .pth files, which a view never runs.
OWN = ("citemark", "langchain_citemark", "llama_index_citemark", "_editable_impl_", "__editable__")
# What the retrieval extra brings (rank-bm25 and its numpy): the core-only view leaves
# these out too, as a machine that never installed them.
RETRIEVAL = ("rank_bm25", "numpy")
EXAMPLE_RUNS = ROOT / "examples" / "data" / "example-runs.jsonl"


def run(command: list[str], cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False, env=PIP_ENV
    )


# pip without any configuration file or PIP_* variable of this machine: no index, no
# extra find-links, no constraints but what a test passes.
PIP_ENV = {key: value for key, value in os.environ.items() if not key.startswith("PIP_")} | {
    "PIP_CONFIG_FILE": os.devnull,
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    "PYTHONNOUSERSITE": "1",
}


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The six files scripts/dist.py builds, in a temporary folder."""
    out = tmp_path_factory.mktemp("dist")
    done = run([sys.executable, str(ROOT / "scripts" / "dist.py"), str(out)], cwd=ROOT)
    assert 0 == done.returncode, done.stderr
    return out


def dependency_view(view: Path, leave_out: tuple[str, ...] = ()) -> Path:
    """Fill ``view`` with links to this environment's packages but citemark's and ``leave_out``."""
    for entry in Path(sysconfig.get_path("purelib")).iterdir():
        if entry.name.startswith((*OWN, *leave_out)) or entry.suffix == ".pth":
            continue
        (view / entry.name).symlink_to(entry)
    return view


@pytest.fixture(scope="module")
def dependencies(tmp_path_factory) -> Path:
    """A folder of links to this environment's installed packages, citemark's own left out."""
    return dependency_view(tmp_path_factory.mktemp("dependencies"))


@pytest.fixture(scope="module")
def core_dependencies(tmp_path_factory) -> Path:
    """The same view without rank-bm25 and numpy: a machine where they were never installed."""
    return dependency_view(tmp_path_factory.mktemp("core-dependencies"), RETRIEVAL)


def fresh_venv(where: Path, dependencies: Path) -> Path:
    """A new virtual environment at ``where`` that sees ``dependencies``; its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "_citemark_test_dependencies.pth").write_text(f"{dependencies}\n")
    return python


def readme_pip_line(marker: str) -> list[str]:
    """The words after ``pip`` of the README's one ``pip install`` line containing ``marker``."""
    lines = [
        line.strip()
        for line in README.read_text(encoding="utf-8").splitlines()
        if line.strip().startswith("pip install") and marker in line
    ]
    assert 1 == len(lines), lines
    return shlex.split(lines[0])[1:]


def pip(python: Path, words: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m pip`` with ``words``, never an index: ``--no-index`` goes after ``install``."""
    assert "install" == words[0]
    return run([str(python), "-m", "pip", "install", "--no-index", *words[1:]], cwd=cwd)


def metadata(wheel: Path) -> list[str]:
    """The Requires-Dist lines of a wheel's METADATA."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        parsed = Parser().parsestr(archive.read(name).decode("utf-8"))
    return parsed.get_all("Requires-Dist") or []


class TestMakeDist:
    def test_dist_holds_a_wheel_and_an_sdist_of_each_distribution(self, dist):
        """scripts/dist.py builds the sdist and the wheel of the core and both adapters."""
        assert sorted(
            [
                f"citemark-{VERSION}-py3-none-any.whl",
                f"citemark-{VERSION}.tar.gz",
                *ADAPTER_WHEELS.values(),
                f"langchain_citemark-{VERSION}.tar.gz",
                f"llama_index_citemark-{VERSION}.tar.gz",
            ]
        ) == sorted(path.name for path in dist.iterdir())

    @pytest.mark.parametrize("wheel", sorted(ADAPTER_WHEELS.values()))
    def test_an_adapter_wheel_requires_exactly_the_core_built_with_it(self, dist, wheel):
        """The adapter's metadata pins citemark==VERSION; the naive build keeps the range."""
        requires = metadata(dist / wheel)
        assert f"citemark=={VERSION}" in requires
        assert not [r for r in requires if r.startswith("citemark") and r != f"citemark=={VERSION}"]

    def test_a_plain_hatchling_build_would_not_pin_the_core(self, tmp_path):
        """The naive variant (build the adapter folder as it is) gives a range, not a pin."""
        adapter = ROOT / "adapters" / "langchain"
        subprocess.run(
            [sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(tmp_path)],
            cwd=adapter,
            check=True,
            capture_output=True,
        )
        requires = metadata(tmp_path / ADAPTER_WHEELS["langchain-citemark"])
        assert f"citemark=={VERSION}" not in requires

    @pytest.mark.parametrize("name", ["langchain_citemark", "llama_index_citemark"])
    def test_an_adapter_sdist_carries_the_pin_in_its_own_pyproject(self, dist, name):
        """A wheel built later from the sdist, anywhere, pins the same core version."""
        with tarfile.open(dist / f"{name}-{VERSION}.tar.gz") as archive:
            member = archive.extractfile(f"{name}-{VERSION}/pyproject.toml")
            assert member is not None
            project = tomllib.loads(member.read().decode("utf-8"))["project"]
        assert f"citemark=={VERSION}" in project["dependencies"]

    def test_the_core_wheel_needs_rank_bm25_only_for_the_retrieval_extra(self, dist):
        """Requires-Dist: rank-bm25 under ``extra == "retrieval"`` only; numpy nowhere.

        Every requirement is evaluated as pip does, for a plain install and for the
        extra: the plain one needs pydantic, httpx and rich, nothing else.
        """
        requires = [
            Requirement(line) for line in metadata(dist / f"citemark-{VERSION}-py3-none-any.whl")
        ]

        def needed(extra: str) -> set[str]:
            return {
                r.name.lower()
                for r in requires
                if r.marker is None or r.marker.evaluate({"extra": extra})
            }

        assert {"pydantic", "httpx", "rich"} == needed("")
        assert {"pydantic", "httpx", "rich", "rank-bm25"} == needed("retrieval")

    def test_the_core_sdist_holds_the_package_not_the_repository(self, dist):
        """The core's sdist has src/citemark, the README and its metadata; no tests, docs, adapters."""
        with tarfile.open(dist / f"citemark-{VERSION}.tar.gz") as archive:
            tops = {name.split("/")[1] for name in archive.getnames() if "/" in name}
        assert {"src", "README.md", "pyproject.toml", "PKG-INFO"} <= tops
        assert not tops & {"tests", "docs", "adapters", "bench", "examples"}

    def test_dist_is_git_ignored(self):
        """Built files are never committed."""
        done = subprocess.run(
            ["git", "check-ignore", "-q", f"dist/citemark-{VERSION}.tar.gz"], cwd=ROOT, check=False
        )
        assert 0 == done.returncode


def make_dry_run(target: str, tmp_path: Path) -> list[str]:
    """The commands ``make TARGET`` would run for a fresh clone (a .venv that does not exist)."""
    done = subprocess.run(
        # --no-print-directory: under `make test` this make is nested, and would add
        # its "Entering/Leaving directory" lines to what it prints.
        ["make", "--no-print-directory", "-n", target, f"VENV={tmp_path / 'venv'}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.splitlines()


class TestMakefile:
    def test_make_demo_installs_the_core_only(self, tmp_path):
        """A fresh clone's make demo installs the core (editable), no adapter, no dev toolchain."""
        installs = [line for line in make_dry_run("demo", tmp_path) if " pip install " in line]
        assert installs
        packages = [line.split(" pip install ", 1)[1].split() for line in installs]
        assert [["--quiet", "--upgrade", "pip"], ["--quiet", "-e", "."]] == packages

    def test_make_test_still_installs_everything_from_nothing(self, tmp_path):
        """make test on a fresh clone installs the core, both adapters and requirements-dev.txt."""
        commands = "\n".join(make_dry_run("test", tmp_path))
        for needed in (
            "-e '.[retrieval,nli]'",
            "-e adapters/langchain",
            "-e adapters/llama-index",
            "-r requirements-dev.txt",
        ):
            assert needed in commands

    def test_make_dist_runs_the_build_script_into_dist(self, tmp_path):
        """make dist builds with scripts/dist.py into dist/, after emptying it."""
        commands = make_dry_run("dist", tmp_path)
        assert "rm -rf dist" in commands
        assert commands[-1].endswith("python scripts/dist.py dist")


class TestInstallOutsideTheRepo:
    def test_an_adapter_without_its_core_fails_naming_the_core(self, dist, dependencies, tmp_path):
        """pip refuses the adapter alone, naming citemark==VERSION, the line the README quotes."""
        alone = tmp_path / "alone"
        alone.mkdir()
        (alone / ADAPTER_WHEELS["langchain-citemark"]).symlink_to(
            dist / ADAPTER_WHEELS["langchain-citemark"]
        )
        python = fresh_venv(tmp_path / "venv", dependencies)
        words = readme_pip_line("--find-links dist")
        words[words.index("dist")] = str(alone)
        done = pip(python, words, cwd=tmp_path)
        assert 0 != done.returncode
        line = f"ERROR: No matching distribution found for citemark=={VERSION} (from langchain-citemark)"
        assert line in done.stderr.splitlines()
        assert line in README.read_text(encoding="utf-8").splitlines()
        assert not list((tmp_path / "venv").rglob("langchain_citemark"))

    def test_the_readme_dist_line_installs_core_and_adapter(self, dist, dependencies, tmp_path):
        """pip install --find-links dist langchain-citemark brings the core; both import there."""
        python = fresh_venv(tmp_path / "venv", dependencies)
        words = readme_pip_line("--find-links dist")
        words[words.index("dist")] = str(dist)
        done = pip(python, words, cwd=tmp_path)
        assert 0 == done.returncode, done.stderr
        done = pip(python, ["install", "--find-links", str(dist), "llama-index-citemark"], tmp_path)
        assert 0 == done.returncode, done.stderr
        assert_installed_in(python, tmp_path)

    def test_the_readme_source_tree_line_installs_core_and_adapter(self, dependencies, tmp_path):
        """pip install ./path/to/citemark ./path/to/citemark/adapters/langchain, from this tree."""
        python = fresh_venv(tmp_path / "venv", dependencies)
        words = readme_pip_line("./path/to/citemark ")
        words = [word.replace("./path/to/citemark", str(ROOT)) for word in words]
        # Offline, the build backend comes from this environment, not from an index.
        done = pip(python, [*words, "--no-build-isolation"], cwd=tmp_path)
        assert 0 == done.returncode, done.stderr
        venv = tmp_path / "venv"
        found = run([str(python), "-c", CORE_CHECK], cwd=tmp_path)
        assert (0, "") == (found.returncode, found.stderr)
        assert found.stdout.startswith(str(venv))


# Run in the core-only environment: whether numpy and rank_bm25 can be found at all.
NO_NUMPY_CHECK = """
import importlib.util, citemark
print(importlib.util.find_spec("numpy"), importlib.util.find_spec("rank_bm25"), citemark.__file__)
"""

# Run in the core-only environment: what building a BM25 index says.
MISSING_EXTRA_CHECK = """
from citemark import BM25Retriever, MissingExtraError
try:
    BM25Retriever.from_texts({"a": "alpha"})
except MissingExtraError as exc:
    print(exc)
"""

# Run with the extra: BM25 ranks.
BM25_CHECK = """
from citemark import BM25Retriever
hits = BM25Retriever.from_texts({"a": "fees rise", "b": "notices"}).retrieve("fees")
print([h.doc_id for h in hits])
"""


@pytest.fixture(scope="module")
def core(dist, core_dependencies, tmp_path_factory) -> Path:
    """A fresh venv holding the core wheel alone, with no rank-bm25 or numpy to find; its python."""
    where = tmp_path_factory.mktemp("core")
    python = fresh_venv(where / "venv", core_dependencies)
    done = pip(python, ["install", "--find-links", str(dist), "citemark"], cwd=where)
    assert 0 == done.returncode, done.stderr
    return python


class TestTheCoreAlone:
    """``pip install citemark`` brings no numpy: BM25 is the ``retrieval`` extra (issue 35).

    The dependency view here lacks rank-bm25 and numpy, so pip (offline) can install
    only what needs neither; before issue 35 the core's wheel required rank-bm25 and
    this install failed.
    """

    def test_the_core_installs_and_holds_no_numpy(self, core):
        """Neither numpy nor rank_bm25 is importable, installed or linked in the new venv."""
        found = run(
            [str(core), "-c", NO_NUMPY_CHECK],
            cwd=core.parent,
        )
        assert 0 == found.returncode, found.stderr
        assert found.stdout.startswith("None None ")
        assert found.stdout.split()[-1].startswith(str(core.parent.parent))
        assert not [p for p in core.parent.parent.rglob("*") if p.name.startswith(RETRIEVAL)]

    def test_citemark_check_runs_on_the_core_alone(self, core, tmp_path):
        """The demo's command checks the bundled runs to the end without the extra."""
        citemark = core.parent / "citemark"
        done = run([str(citemark), "check", str(EXAMPLE_RUNS), "--out", str(tmp_path)], tmp_path)
        assert done.returncode in {0, 1}, done.stderr
        assert (tmp_path / "report.json").is_file()

    def test_bm25_says_which_extra_to_install(self, core, tmp_path):
        """From Python: MissingExtraError, one line; from `citemark answer`: that line, exit 2."""
        found = run(
            [str(core), "-c", MISSING_EXTRA_CHECK],
            cwd=tmp_path,
        )
        line = "BM25Retriever needs the retrieval extra: pip install 'citemark[retrieval]'"
        assert (0, f"{line}\n") == (found.returncode, found.stdout)
        citemark = core.parent / "citemark"
        licenses = ROOT / "examples" / "data" / "licenses"
        answer = [str(citemark), "answer", "q", "--docs", str(licenses)]
        done = subprocess.run(
            answer,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=PIP_ENV | {"CITEMARK_BASE_URL": "http://127.0.0.1:9/v1", "CITEMARK_MODEL": "m"},
        )
        assert (2, f"citemark: error: {line}\n") == (done.returncode, done.stderr)

    def test_the_extra_requires_rank_bm25(self, dist, core_dependencies, tmp_path):
        """Without rank-bm25 anywhere, the README's extra line fails on exactly that name."""
        python = fresh_venv(tmp_path / "venv", core_dependencies)
        words = readme_pip_line("citemark[retrieval]")
        done = pip(python, [*words, "--find-links", str(dist)], cwd=tmp_path)
        assert 0 != done.returncode
        assert "No matching distribution found for rank-bm25" in done.stderr

    def test_with_the_extra_bm25_retrieves(self, dist, dependencies, tmp_path):
        """The README's extra line, rank-bm25 at hand: pip knows the extra, BM25 ranks."""
        python = fresh_venv(tmp_path / "venv", dependencies)
        words = readme_pip_line("citemark[retrieval]")
        done = pip(python, [*words, "--find-links", str(dist)], cwd=tmp_path)
        assert 0 == done.returncode, done.stderr
        assert "does not provide the extra" not in done.stderr
        found = run([str(python), "-c", BM25_CHECK], cwd=tmp_path)
        assert (0, "['a']\n") == (found.returncode, found.stdout), found.stderr


# Run in the new environment: where the core and the LangChain adapter come from, and
# that they work (a fabricated marker is rejected through the adapter's parser).
CORE_CHECK = """
import citemark, langchain_citemark
from langchain_core.documents import Document
from langchain_citemark import CitationOutputParser
from citemark import MarkerOutOfRangeError
parser = CitationOutputParser(documents=[Document("Keep notices.", metadata={"source": "bsd"})])
assert ["bsd"] == [c.doc_id for c in parser.parse("Keep them [1].").citations]
try:
    parser.parse("Keep them [2].")
    raise SystemExit("a fabricated marker was accepted")
except MarkerOutOfRangeError as exc:
    assert exc.marker == 2
print(citemark.__file__, langchain_citemark.__file__)
"""


def assert_installed_in(python: Path, cwd: Path) -> None:
    venv = python.parent.parent
    found = run([str(python), "-c", CORE_CHECK], cwd=cwd)
    assert (0, "") == (found.returncode, found.stderr)
    assert all(path.startswith(str(venv)) for path in found.stdout.split())
    namespace = run(
        [str(python), "-c", "import llama_index.postprocessor.citemark as m; print(m.__file__)"],
        cwd=cwd,
    )
    assert 0 == namespace.returncode, namespace.stderr
    assert namespace.stdout.startswith(str(venv))
