# placement-webhooks — the two quick-start targets are `make serve` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: serve test lint typecheck unit properties bench bench-deps clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

serve: $(STAMP)
	$(BIN)/placement-webhooks serve

lint: $(STAMP)
	$(BIN)/ruff check webhooks tests bench
	$(BIN)/ruff format --check webhooks tests bench
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest

test: lint typecheck unit

# The property tests with 10,000 fresh examples each (make test runs a fixed, bounded set);
# failures are kept in .hypothesis/ and replayed first next time.
properties: $(STAMP)
	HYPOTHESIS_PROFILE=long $(BIN)/pytest tests/properties --hypothesis-show-statistics

clean:
	rm -rf $(VENV) build dist *.egg-info .mypy_cache .ruff_cache .pytest_cache .hypothesis
