# Two commands on a fresh machine: `make run` and `make test`.
#   make run   installs evalband alone (no torch) and runs the reaching lab.
#   make test  installs the dev tools and the optional extras (torch CPU, mujoco), Debian's
#              chromium for the browser tests (scripts/ensure-chromium: apt-get as root or sudo),
#              a second venv .venv-mujoco3 for the envs that need MuJoCo 3.x (Meta-World,
#              gym-aloha, dm_control, Fetch, and PyAV for --record; built with uv in seconds), a third
#              venv .venv-lerobot for lerobot checkpoints, `serve lerobot:PATH` and robot sessions
#              (torch 2.14.1 from local disk, MuJoCo and lerobot's Feetech SDK for sim-arm and the SO-101; pip), a fourth
#              .venv-bench for the manipulation benchmarks (robosuite, LIBERO, ManiSkill3; uv),
#              and tests. The venvs and Chromium are built side by side (make -j), pip without
#              byte-compiling every installed module (Python compiles what is imported), and
#              pytest runs on $(TEST_WORKERS) processes (pytest-xdist).
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
# pytest processes (pytest-xdist); 2 = the cores of this project's machines.
TEST_WORKERS ?= 2
PIP_INSTALL = pip install --quiet --no-compile
# robosuite 1.4, LIBERO and ManiSkill3 beside MuJoCo 3.3 (versions: requirements/bench.txt);
# hf-libero without its training dependencies (--no-deps); torch's CPU build from local disk.
BENCH_VENV := .venv-bench
BENCH_STAMP := $(BENCH_VENV)/.installed
BENCH_EXTRAS := envs-robosuite,envs-maniskill
TORCH_WHEELS ?= $(or $(PIP_FIND_LINKS),/opt/wheels)

.PHONY: run test venvs chromium lint typecheck bench clean schemas api-stubs api-docs

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# uv alone first, so the MuJoCo 3 venv can be built while the main venv installs.
$(BIN)/uv: | $(BIN)/python
	$(BIN)/$(PIP_INSTALL) 'uv>=0.5'

$(CORE_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $(CORE_STAMP)

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/$(PIP_INSTALL) "$(TORCH_SPEC)"
	$(BIN)/$(PIP_INSTALL) -e '.[dev,bc,sim,video,remote,web,figures,envs-mujoco,envs-robotics,envs-pusht]'
	# openpi's client, for the protocol conformance tests; it pins numpy<2, which it does not
	# need for what the tests use (the websocket client and msgpack-numpy), hence --no-deps.
	$(BIN)/$(PIP_INSTALL) --no-deps 'openpi-client>=0.1.2'
	touch $(DEV_STAMP) $(CORE_STAMP)

$(MJ3_STAMP): pyproject.toml requirements/mujoco3.txt | $(BIN)/uv
	rm -rf $(MJ3_VENV)
	$(BIN)/uv venv --quiet --python "$$(command -v $(PYTHON))" $(MJ3_VENV)
	$(BIN)/uv pip install --quiet --python $(MJ3_VENV)/bin/python \
		-c requirements/mujoco3.txt -e '.[$(MJ3_EXTRAS)]'
	touch $(MJ3_STAMP)

$(LEROBOT_STAMP): pyproject.toml requirements/lerobot.txt
	rm -rf $(LEROBOT_VENV)
	$(PYTHON) -m venv $(LEROBOT_VENV)
	grep -v '^lerobot==' requirements/lerobot.txt > $(LEROBOT_VENV)/deps.txt
	$(LEROBOT_VENV)/bin/$(PIP_INSTALL) $(LEROBOT_TORCH) -r $(LEROBOT_VENV)/deps.txt \
		-e '.[envs-pusht,remote]'
	$(LEROBOT_VENV)/bin/$(PIP_INSTALL) --no-deps "$$(grep '^lerobot==' requirements/lerobot.txt)"
	touch $(LEROBOT_STAMP)

$(BENCH_STAMP): pyproject.toml requirements/bench.txt requirements/mujoco3.txt | $(BIN)/uv
	rm -rf $(BENCH_VENV)
	$(BIN)/uv venv --quiet --python "$$(command -v $(PYTHON))" $(BENCH_VENV)
	$(BIN)/uv pip install --quiet --python $(BENCH_VENV)/bin/python --find-links $(TORCH_WHEELS) \
		-c requirements/mujoco3.txt -c requirements/bench.txt -e '.[$(BENCH_EXTRAS)]' \
		$$(grep -E '^(bddl|easydict|termcolor|tqdm|matplotlib|cloudpickle|future|torch)[=>]' requirements/bench.txt)
	$(BIN)/uv pip install --quiet --python $(BENCH_VENV)/bin/python --no-deps \
		"$$(grep '^hf-libero==' requirements/bench.txt)"
	touch $(BENCH_STAMP)

run: $(CORE_STAMP)
	$(BIN)/evalband lab reach1d

# Everything the tests need, built side by side (each target's output kept together).
venvs: $(DEV_STAMP) $(MJ3_STAMP) $(LEROBOT_STAMP) $(BENCH_STAMP) chromium

chromium:
	scripts/ensure-chromium

test:
	$(MAKE) --no-print-directory -j4 -Otarget venvs
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy
	$(BIN)/pytest -n $(TEST_WORKERS) --dist worksteal

# docs/schemas/*.schema.json, generated from the result types (a test holds them equal).
schemas: $(CORE_STAMP)
	$(BIN)/python -m evalband.report._schemas docs/schemas

# The public API's derived files, from each facade's _LAZY table (tools/api_names.py): the
# facades' .pyi stubs, and the API reference (docs/api/*.md, rendered from the docstrings by
# mkdocs + mkdocstrings into build/api-site; --strict: a warning fails).
api-stubs:
	$(BIN)/python tools/api_names.py stubs

api-docs: api-stubs
	$(BIN)/python tools/api_names.py reference
	PYTHONPATH=src:tools $(BIN)/mkdocs build --strict

bench: $(DEV_STAMP) $(MJ3_STAMP) $(BENCH_STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) $(MJ3_VENV) $(LEROBOT_VENV) $(BENCH_VENV) .pytest_cache .mypy_cache .ruff_cache
