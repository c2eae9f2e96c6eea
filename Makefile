# Two commands on a fresh machine: `make run` and `make test`.
#   make run   installs evalband alone (no torch) and runs the reaching lab.
#   make test  installs the dev tools and the optional extras (torch CPU, mujoco), Debian's
#              chromium for the browser tests (scripts/ensure-chromium: apt-get as root or sudo),
#              a second venv .venv-mujoco3 for the envs that need MuJoCo 3.x (Meta-World,
#              gym-aloha, dm_control, Fetch, and PyAV for --record; built with uv in seconds), a
#              third venv .venv-lerobot for lerobot checkpoints (torch 2.14.1 from local disk;
#              pip; with the remote extra for `serve lerobot:PATH`), and tests.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The CPU build of torch: on this project's machines pip finds it on local disk.
TORCH_SPEC ?= torch==2.13.0
CORE_STAMP := $(VENV)/.core-installed
DEV_STAMP := $(VENV)/.dev-installed
# MuJoCo 3.x envs beside the main venv's MuJoCo 4 (versions: requirements/mujoco3.txt).
MJ3_VENV := .venv-mujoco3
MJ3_STAMP := $(MJ3_VENV)/.installed
MJ3_EXTRAS := envs-metaworld,envs-aloha,envs-dmc,envs-robotics,video
# lerobot beside its own torch (why and which versions: requirements/lerobot.txt). pip, not
# uv: pip takes torch 2.14.1 + torchvision 0.29.1 from this machine's disk, uv downloads GBs.
LEROBOT_VENV := .venv-lerobot
LEROBOT_STAMP := $(LEROBOT_VENV)/.installed
LEROBOT_TORCH ?= torch==2.14.1 torchvision==0.29.1

.PHONY: run test lint typecheck bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(CORE_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $(CORE_STAMP)

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/pip install --quiet -e '.[dev,bc,sim,video,remote,figures,envs-mujoco,envs-robotics,envs-pusht]'
	# openpi's client, for the protocol conformance tests; it pins numpy<2, which it does not
	# need for what the tests use (the websocket client and msgpack-numpy), hence --no-deps.
	$(BIN)/pip install --quiet --no-deps 'openpi-client>=0.1.2'
	touch $(DEV_STAMP) $(CORE_STAMP)

$(MJ3_STAMP): pyproject.toml requirements/mujoco3.txt | $(DEV_STAMP)
	rm -rf $(MJ3_VENV)
	$(BIN)/uv venv --quiet --python "$$(command -v $(PYTHON))" $(MJ3_VENV)
	$(BIN)/uv pip install --quiet --python $(MJ3_VENV)/bin/python \
		-c requirements/mujoco3.txt -e '.[$(MJ3_EXTRAS)]'
	touch $(MJ3_STAMP)

$(LEROBOT_STAMP): pyproject.toml requirements/lerobot.txt
	rm -rf $(LEROBOT_VENV)
	$(PYTHON) -m venv $(LEROBOT_VENV)
	grep -v '^lerobot==' requirements/lerobot.txt > $(LEROBOT_VENV)/deps.txt
	$(LEROBOT_VENV)/bin/pip install --quiet $(LEROBOT_TORCH) -r $(LEROBOT_VENV)/deps.txt \
		-e '.[envs-pusht,remote]'
	$(LEROBOT_VENV)/bin/pip install --quiet --no-deps "$$(grep '^lerobot==' requirements/lerobot.txt)"
	touch $(LEROBOT_STAMP)

run: $(CORE_STAMP)
	$(BIN)/evalband lab reach1d

test: $(DEV_STAMP) $(MJ3_STAMP) $(LEROBOT_STAMP)
	scripts/ensure-chromium
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy
	$(BIN)/pytest

bench: $(DEV_STAMP) $(MJ3_STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) $(MJ3_VENV) $(LEROBOT_VENV) .pytest_cache .mypy_cache .ruff_cache
