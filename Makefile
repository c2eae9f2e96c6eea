# Two commands on a fresh machine: `make run` and `make test`.
#   make run   installs evalband alone (no torch) and runs the reaching lab.
#   make test  installs the dev tools and the optional extras (torch CPU, mujoco), Debian's
#              chromium for the browser tests (scripts/ensure-chromium: apt-get as root or sudo),
#              and tests.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The CPU build of torch: on this project's machines pip finds it on local disk.
TORCH_SPEC ?= torch==2.13.0
CORE_STAMP := $(VENV)/.core-installed
DEV_STAMP := $(VENV)/.dev-installed

.PHONY: run test lint typecheck bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(CORE_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $(CORE_STAMP)

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/pip install --quiet -e '.[dev,bc,sim,video,remote,envs-mujoco,envs-robotics,envs-pusht]'
	# openpi's client, for the protocol conformance tests; it pins numpy<2, which it does not
	# need for what the tests use (the websocket client and msgpack-numpy), hence --no-deps.
	$(BIN)/pip install --quiet --no-deps 'openpi-client>=0.1.2'
	touch $(DEV_STAMP) $(CORE_STAMP)

run: $(CORE_STAMP)
	$(BIN)/evalband lab reach1d

test: $(DEV_STAMP)
	scripts/ensure-chromium
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy
	$(BIN)/pytest

bench: $(DEV_STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
