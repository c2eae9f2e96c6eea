# Two commands on a fresh machine: `make run` and `make test`.
#   make run   installs evalband alone (no torch) and runs the reaching lab.
#   make test  installs the dev tools and the optional extras (torch CPU, mujoco) and tests.
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
	$(BIN)/pip install --quiet -e '.[dev,bc,sim,video,envs-mujoco,envs-robotics,envs-pusht]'
	touch $(DEV_STAMP) $(CORE_STAMP)

run: $(CORE_STAMP)
	$(BIN)/evalband lab reach1d

test: $(DEV_STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy
	$(BIN)/pytest

bench: $(DEV_STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
