# Two commands for a new user: `make run` and `make test`. Both set themselves up.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: install run test lint bench clean

install: $(STAMP)

$(STAMP): pyproject.toml clients/python/pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --upgrade pip
	@$(BIN)/python -m pip install -q -e '.[dev]'
	@$(BIN)/python -m pip install -q -e clients/python
	@touch $(STAMP)

run: install
	@$(BIN)/partnerlink serve

# The suite runs in parallel (pytest-xdist), one worker per core, each test file on one
# worker (so a module's live server or browser starts once). PYTEST_ARGS come last and
# win: `make test PYTEST_ARGS="tests/orders -x"`, or `PYTEST_ARGS="-n 0"` for one process.
# pytest's status 5 (no test collected) fails like any other, and says why.
TEST_WORKERS ?= logical

test: install
	@$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS); status=$$?; \
	if [ $$status -eq 5 ]; then echo "make test: pytest collected no tests (status 5)" >&2; fi; \
	exit $$status

lint: install
	@$(BIN)/ruff check src tests bench clients/python
	@$(BIN)/ruff format --check src tests bench clients/python
	@$(BIN)/mypy

bench: install
	@$(BIN)/python bench/customers_ingest.py
	@$(BIN)/python bench/orders.py

clean:
	rm -rf $(VENV) data .pytest_cache .mypy_cache .ruff_cache
