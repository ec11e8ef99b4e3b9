# One command each, on a fresh machine with Python 3.11+: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint install bench schemas samples clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Installs callqa (editable) with the embedded broker, the test tools, the linters, the Pipecat observer's
# framework (its tests run a real pipeline) and the benchmark's peers (the suite runs `callqa bench --quick`
# as a smoke test, so the benchmark cannot rot between full runs).
install: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test,lint,rocksdb,bench,pipecat]"

demo: install
	$(BIN)/callqa demo

test: install
	$(BIN)/python -m pytest -q

# Style, import order, formatting and types (pyproject.toml says which rules and why).
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: install
	$(BIN)/callqa bench --out bench-report.json

schemas: install
	$(BIN)/python -m models.schema_export schemas
	$(BIN)/python -m models.contract_reference docs/reference/events.md

samples: install
	$(BIN)/python -m samples.generate --seed 7 --calls 240 --out samples/calls.jsonl

clean:
	rm -rf $(VENV) *.egg-info .pytest_cache callqa-data
