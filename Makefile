# The two commands of the README: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: test demo lint typecheck layers unit venv clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,demo,plots]'
	touch $(STAMP)

venv: $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests

typecheck: $(STAMP)
	$(BIN)/mypy

layers: $(STAMP)
	$(BIN)/lint-imports

# The fast suite runs under coverage with a floor a little below the measured figure (94.4 % of statements
# on 2026-12-03), so coverage cannot drop unnoticed; the slow end-to-end tests then run without it.
# `make unit COV=` skips the measurement (it slows CPU-bound tests, up to 2.4x for the scheduler properties).
COV_MIN ?= 93.5
COV     ?= --cov=gangplane --cov-report=term:skip-covered --cov-fail-under=$(COV_MIN)

unit: $(STAMP)
	$(BIN)/pytest -m "not slow" $(COV)
	$(BIN)/pytest -m slow

test: lint typecheck layers unit

demo: $(STAMP)
	scripts/demo.sh

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .coverage
