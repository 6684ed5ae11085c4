# Two commands for a new user: `make run` and `make test`. Both set themselves up.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: install run test lint bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --upgrade pip
	@$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $(STAMP)

run: install
	@$(BIN)/partnerlink serve

test: install
	@$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: install
	@$(BIN)/ruff check src tests bench
	@$(BIN)/ruff format --check src tests bench
	@$(BIN)/mypy

bench: install
	@$(BIN)/python bench/customers_ingest.py
	@$(BIN)/python bench/orders.py

clean:
	rm -rf $(VENV) data .pytest_cache .mypy_cache .ruff_cache
