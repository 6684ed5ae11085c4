# Two commands for a new user: `make run` and `make test`. Both set themselves up.
# `make run` installs only what serving needs (a fresh clone serves in well under a
# minute); `make test`, `make lint` and `make bench` add the test tools, the SDK and the
# benchmarks' needs on top (a stamp each, so neither reinstalls the other's).
# Packages go in through uv (itself one wheel from PyPI, put in the venv by pip): it
# resolves and installs the dev set in about 6 s where pip took about 60 (measured from a
# fresh clone on a 2-core machine, warm caches for both). Wherever uv cannot be had or
# cannot reach an index, pip does the same install, as before.
# Neither byte-compiles up front: Python compiles what it imports on first use. The tests
# are the other way round: they start hundreds of processes (live servers, the command
# line), and where PYTHONDONTWRITEBYTECODE is set each of them would compile its imports
# again (about 2 s of CPU per process), so install-dev byte-compiles the environment and
# the source once (compileall writes regardless).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
DEV_STAMP := $(VENV)/.installed-dev-stamp

.PHONY: install install-dev run test lint bench clean typescript-client

install: $(STAMP)

install-dev: $(DEV_STAMP)

# $(call pip_install,<requirements>): uv when it can be had, pip otherwise.
pip_install = { $(BIN)/python -m pip install -q --disable-pip-version-check uv >/dev/null 2>&1 \
	&& $(BIN)/uv pip install -q --python $(BIN)/python $(1); } \
	|| $(BIN)/python -m pip install -q --no-compile $(1)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(call pip_install,-e .)
	@touch $(STAMP)

# tools.py install: the TypeScript client's npm packages, and Node 18, 20 and 22 (PyPI wheels
# under the virtualenv) that make test runs the packed client on; it pins their versions.
$(DEV_STAMP): $(STAMP) pyproject.toml clients/python/pyproject.toml clients/typescript/package-lock.json clients/typescript/scripts/tools.py
	@$(call pip_install,-e '.[dev]' -e clients/python)
	@$(BIN)/python clients/typescript/scripts/tools.py install
	@$(BIN)/python -m compileall -q -j 0 $(VENV)/lib src clients/python/src >/dev/null || true
	@touch $(DEV_STAMP)

# `make run SERVE_ARGS="--port 8001"`: any of `partnerlink serve`'s options.
run: install
	@$(BIN)/partnerlink serve $(SERVE_ARGS)

# The suite runs in parallel (pytest-xdist), one worker per core and one more, each test
# file on one worker (so a module's live server or browser starts once). The extra worker
# fills the time the others spend waiting on the processes their tests start (servers
# coming up, a restart, a browser): on a 2-core machine with one core kept busy by other
# work, three workers took a fresh clone's `make test` from 12:02 to 9:50 (bench/README.md).
# PYTEST_ARGS come last and win: `make test PYTEST_ARGS="tests/orders -x"`, or
# `PYTEST_ARGS="-n 0"` for one process. pytest's status 5 (no test collected) fails like
# any other, and says why.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))

test: install-dev
	@$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS); status=$$?; \
	if [ $$status -eq 5 ]; then echo "make test: pytest collected no tests (status 5)" >&2; fi; \
	exit $$status

lint: install-dev
	@$(BIN)/ruff check src tests bench clients/python clients/typescript
	@$(BIN)/ruff format --check src tests bench clients/python clients/typescript
	@$(BIN)/mypy

# After an API change: regenerate the TypeScript client's openapi.json and types
# (a test fails while they are stale).
typescript-client: install-dev
	@$(BIN)/python clients/typescript/scripts/tools.py generate

bench: install-dev
	@$(BIN)/python bench/customers_ingest.py
	@$(BIN)/python bench/orders.py

clean:
	rm -rf $(VENV) data .pytest_cache .mypy_cache .ruff_cache
