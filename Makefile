# Two commands do everything on a fresh machine with Python 3.11+ and make:
#   make demo   set up .venv and run citemark check on the bundled example runs
#   make test   set up .venv and run lint, types, docs and the full suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PACKAGES := -e . -e adapters/langchain -e adapters/llama-index

.PHONY: demo test lint bench docs clean

$(STAMP): pyproject.toml adapters/langchain/pyproject.toml adapters/llama-index/pyproject.toml requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet $(PACKAGES) -r requirements-dev.txt
	touch $(STAMP)

# The main job: check the bundled recorded runs, print the summary, and write
# results/demo/report.json, report.html and rows.jsonl (tests/test_examples.py runs
# this same command line).
demo: $(STAMP)
	$(BIN)/citemark check examples/data/example-runs.jsonl --out results/demo

lint: $(STAMP)
	$(BIN)/ruff check src adapters tests bench examples
	$(BIN)/ruff format --check src adapters tests bench examples
	$(BIN)/mypy --strict -p citemark -p langchain_citemark \
		-p llama_index.postprocessor.citemark -p llama_index.evaluation.citemark \
		-p llama_index.query_engine.citemark

docs: $(STAMP)
	$(BIN)/mkdocs build --strict --quiet --site-dir $(VENV)/site

test: lint docs
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis
