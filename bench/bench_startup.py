"""Benchmark: how fast short commands and short runs answer, as a user types them.

Every figure is a fresh ``python -m evalband.cli ...`` process timed from outside (wall
clock, the median over interleaved rounds; the CPU time of the process, which other load
barely changes, beside it). Three groups:

* **start-up**: ``--help``, ``ci 8 20``, ``power --p-a 0.6 --p-b 0.4`` and ``diff 8/20
  12/20`` (target < 0.15 s each; plain lines are answered without typer, see
  ``evalband.cli._fast``), next to ``python -c pass`` and ``python -c "import typer"``, the
  floor a typer CLI would pay;
* **run fixed cost**: ``evalband run`` of 200 reach1d episodes and of 200 PushT episodes
  (serial) minus the same ``run_panel`` call in a warm process (imports done, a new run
  id, env and policy built again), i.e. what the command costs beyond playing the
  episodes (target < 0.3 s), on wall and on CPU time, next to ``python -c "import typer,
  yaml, pydantic.main, numpy, gymnasium"``, the imports a typer command cannot avoid (a
  plain ``run`` line skips typer: ``run_fixed_reach_through_typer`` is the same reach1d
  line sent through typer, side by side); and that minus a bare script's imports (Python,
  numpy, gymnasium, the env's and policy's modules: :data:`BARE_SCRIPT` with ``--setup``),
  i.e. what evalband itself adds (``run_fixed_beyond_bare_setup``);
* **process backend from the command line**: ``evalband run --backend process
  --workers 2`` vs serial on the 200 PushT episodes (target >= 1.6x, workers started
  while the command loads, see ``evalband.run._pool.prestart``), with the machine's own
  2-process ceiling measured in the same rounds (``bench_scaling.machine_ratio``), and
  a second ``run_panel`` in one session on the warm pool vs the first (cold) one.

``previous`` holds the figures issue 20 measured before this work on the same VM, and
``previous_last_bench`` those of the last bench before the typer-free short path (CPU
seconds, load 6-10).

Every child process runs with bytecode caching on (``PYTHONDONTWRITEBYTECODE`` removed from
its environment), as an installed package has it: with it set and no ``__pycache__`` yet,
each process compiles evalband's modules from source (~0.3-0.9 s of CPU here), which no
user pays. The first, untimed round writes the caches.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

PREVIOUS = {  # issue 20 (2-core VM, medians): before lazy start-up and the warm pool
    "help_s": 0.40, "ci_s": 0.40, "run_fixed_pusht_s": 1.1, "process_cli_ratio": 0.98,
}
PREVIOUS_LAST_BENCH = {  # bench_startup before the short path (CPU s, 2-core VM at load 6-10)
    "help_cpu_s": 0.195, "ci_cpu_s": 0.195, "power_cpu_s": 0.181, "diff_cpu_s": 1.79,
    "run_fixed_cpu_reach_s": 0.79, "run_fixed_cpu_pusht_s": 1.82,
}
TARGET_STARTUP_S = 0.15
TARGET_FIXED_S = 0.3
TARGET_PROCESS_RATIO = 1.6

PUSHT_YAML = """name: bench-pusht
env: evalband/PushT-v0
episodes: {per_cell}
seed: 0
budget:
  steps: 200
factors:
  start: [train, held_out]
"""
REACH_YAML = """name: reach200
env: evalband/Reach1D-v0
env_kwargs:
  noise: 0.02
  dt: 0.2
episodes: {episodes}
seed: 7
budget:
  seconds: 6.0
"""


#: The children's environment: bytecode caching on, as in an installed package.
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _timed(cmd: list[str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=CHILD_ENV)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 3, 4, 5):
        err = proc.stderr.read().decode() if proc.stderr else ""
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {err}")
    if proc.stderr:
        proc.stderr.close()
    return wall, usage.ru_utime + usage.ru_stime


def _rounds(commands: dict[str, Callable[[], list[str]]], rounds: int) -> dict[str, dict[str, Any]]:
    """Each command once per round, in rotating order; medians of wall and CPU."""
    wall: dict[str, list[float]] = {k: [] for k in commands}
    cpu: dict[str, list[float]] = {k: [] for k in commands}
    names = list(commands)
    for r in range(rounds):
        for name in names[r % len(names):] + names[: r % len(names)]:
            w, c = _timed(commands[name]())
            wall[name].append(w)
            cpu[name].append(c)
    return {k: {"wall_s": statistics.median(wall[k]), "wall_min_s": min(wall[k]),
                "cpu_s": statistics.median(cpu[k]), "wall_s_each": [round(x, 4) for x in wall[k]]}
            for k in commands}


#: A bare script playing the same episodes in a fresh process: gymnasium, the env, the
#: policy and a reset/act/step loop to the budget, with the panel's seeds and reset options
#: written out (as a script would hard-code them). With ``--setup`` it stops after its
#: imports: what any script playing these rollouts pays before building the env (Python,
#: numpy, gymnasium, the env's and the policy's modules). ``evalband run``'s own fixed cost
#: is the command's wall minus the warm ``run_panel`` (building the env and policy, the
#: rollouts) minus that.
BARE_SCRIPT = """
import importlib, json, sys
import gymnasium
import evalband.envs
from evalband.policies import resolve_policy
job = json.load(open(sys.argv[1]))
policy = resolve_policy(job["policy"])
if sys.argv[2:] == ["--setup"]:  # the imports only (the warm run builds the env itself)
    importlib.import_module(gymnasium.spec(job["env"]).entry_point.split(":")[0])
    sys.exit(0)
env = gymnasium.make(job["env"], **job["env_kwargs"])
steps = 0
for seed, options in job["specs"]:
    obs, _ = env.reset(seed=seed, options=options)
    for _ in range(job["budget"]):
        obs, _, terminated, truncated, _ = env.step(policy(obs))
        steps += 1
        if terminated or truncated:
            break
print(json.dumps({"episodes": len(job["specs"]), "steps": steps}))
"""


def _bare_job(yaml_path: Path, policy: str) -> Path:
    """The bare script's input for one panel: env, kwargs, budget, (seed, options) each."""
    import gymnasium

    import evalband.envs  # noqa: F401  (registers the ids)
    from evalband.panel import load_panel

    panel = load_panel(str(yaml_path))
    dt = getattr(gymnasium.make(panel.env, **panel.env_kwargs).unwrapped, "dt", None)
    job = {"env": panel.env, "env_kwargs": panel.env_kwargs, "policy": policy,
           "budget": panel.budget.resolve_steps(dt),
           "specs": [[s.condition_seed, dict(s.options)] for s in panel.episode_specs()]}
    out = yaml_path.with_suffix(".bare.json")
    out.write_text(json.dumps(job))
    return out


def _bare_steps(yaml_path: Path, policy: str) -> int:
    """The steps the bare script plays (it must play the run's episodes)."""
    done = subprocess.run([sys.executable, "-c", BARE_SCRIPT, str(_bare_job(yaml_path, policy))],
                          capture_output=True, text=True, check=True, env=CHILD_ENV)
    return int(json.loads(done.stdout.strip().splitlines()[-1])["steps"])


def _stored_steps(store_path: Path) -> int:
    """The steps of the first warm run in a store."""
    from evalband.store import open_store

    with open_store(store_path) as store:
        return sum(r.steps for r in store.episode_records("warm-1"))


def _same(argv: list[str]) -> Callable[[], list[str]]:
    return lambda: argv


def startup(rounds: int) -> dict[str, Any]:
    cli = [sys.executable, "-m", "evalband.cli"]
    argv = {
        "python": [sys.executable, "-c", "pass"],
        "import_typer": [sys.executable, "-c", "import typer"],
        "help": [*cli, "--help"],
        "ci": [*cli, "ci", "8", "20"],
        "power": [*cli, "power", "--p-a", "0.6", "--p-b", "0.4"],
        "diff": [*cli, "diff", "8/20", "12/20"],
        # what `evalband run` cannot avoid importing (typer, panel, envs): its floor
        "run_import_floor": [sys.executable, "-c",
                             "import typer, yaml, pydantic.main, numpy, gymnasium"],
        # ... and without typer, as a plain `run` line loads
        "run_import_floor_plain": [sys.executable, "-c",
                                   "import yaml, pydantic.main, numpy, gymnasium"],
    }
    commands = {k: _same(v) for k, v in argv.items()}
    _rounds(commands, 1)  # bytecode compiled, caches warm
    return _rounds(commands, rounds)


def _warm_run_panel(yaml_path: Path, store_path: Path, policy: str, repeats: int,
                    **kwargs: Any) -> tuple[list[float], list[float]]:
    """``run_panel`` walls and CPU times in this (warm) process, each a new run with a
    fresh env and policy."""
    from evalband.panel import load_panel
    from evalband.run import run_panel
    from evalband.store import open_store

    walls, cpus = [], []
    with open_store(store_path) as store:
        for i in range(repeats + 1):
            t0, c0 = time.perf_counter(), time.process_time()
            run_panel(load_panel(str(yaml_path)), policy, store, run_id=f"warm-{i}", **kwargs)
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
    return walls[1:], cpus[1:]  # the first run pays the imports


def _session_twice(panel: Path, store: Path) -> tuple[float, float]:
    """Walls of two process-backend ``run_panel`` calls in one fresh Python session."""
    code = (
        "import json, sys, time\n"
        "from evalband.panel import load_panel\n"
        "from evalband.run import run_panel\n"
        "from evalband.store import open_store\n"
        "walls = []\n"
        "with open_store(sys.argv[2]) as store:\n"
        "    for i in range(2):\n"
        "        t0 = time.perf_counter()\n"
        "        run_panel(load_panel(sys.argv[1]), 'pusht:expert', store, run_id=f'r{i}',\n"
        "                  backend='process', workers=2)\n"
        "        walls.append(time.perf_counter() - t0)\n"
        "print(json.dumps(walls))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(panel), str(store)],
                          capture_output=True, text=True, check=True, env=CHILD_ENV)
    first, second = json.loads(done.stdout.strip().splitlines()[-1])
    return first, second


def run(quick: bool = False) -> dict[str, Any]:
    """Time start-up, the run command's fixed cost and the CLI process backend."""
    from bench_scaling import machine_ratio
    from evalband.panel import load_panel

    rounds = 5 if quick else 15
    run_rounds = 2 if quick else 5
    per_cell = 10 if quick else 100
    result: dict[str, Any] = {"name": "startup_and_short_runs", "previous": PREVIOUS,
                              "previous_last_bench": PREVIOUS_LAST_BENCH}
    result["startup"] = start = startup(rounds)
    short = ("help", "ci", "power", "diff")
    worst_startup = max(start[k]["wall_s"] for k in short)
    result["startup_over_python_s"] = {
        k: start[k]["wall_s"] - start["python"]["wall_s"] for k in short
    }
    result["startup_cpu_s"] = {k: start[k]["cpu_s"] for k in short}

    cli = [sys.executable, "-m", "evalband.cli", "run"]
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        pusht = tmpdir / "pusht.yaml"
        pusht.write_text(PUSHT_YAML.format(per_cell=per_cell))
        reach = tmpdir / "reach.yaml"
        reach.write_text(REACH_YAML.format(episodes=2 * per_cell))
        counter = iter(range(10**6))

        def fresh(panel: Path, policy: str, *extra: str) -> Callable[[], list[str]]:
            # every invocation a new run in a new store (as a user's first run)
            return lambda: [*cli, str(panel), "-p", policy, "--json", "--store",
                            str(tmpdir / f"s{next(counter)}.sqlite"), *extra]

        commands = {
            "reach_serial": fresh(reach, "reach1d:baseline"),
            # the same line through typer (an option the typer-free path leaves to typer,
            # a no-op without --until-decided): what the short path saves, side by side
            "reach_serial_typer": fresh(reach, "reach1d:baseline", "--alpha", "0.05"),
            "pusht_serial": fresh(pusht, "pusht:expert"),
            "pusht_process2": fresh(pusht, "pusht:expert", "--backend", "process",
                                    "--workers", "2"),
            "reach_bare_setup": _same([sys.executable, "-c", BARE_SCRIPT,
                                       str(_bare_job(reach, "reach1d:baseline")), "--setup"]),
            "pusht_bare_setup": _same([sys.executable, "-c", BARE_SCRIPT,
                                       str(_bare_job(pusht, "pusht:expert")), "--setup"]),
        }
        _rounds(commands, 1)
        cli_runs = _rounds(commands, run_rounds)
        warm_reach, warm_reach_cpu = _warm_run_panel(
            reach, tmpdir / "warm-reach.sqlite", "reach1d:baseline", run_rounds)
        warm_pusht, warm_pusht_cpu = _warm_run_panel(
            pusht, tmpdir / "warm-pusht.sqlite", "pusht:expert", run_rounds)
        specs = load_panel(str(pusht)).episode_specs()
        same_steps = {k: _bare_steps(path, policy) == _stored_steps(tmpdir / f"warm-{k}.sqlite")
                      for k, path, policy in (("reach", reach, "reach1d:baseline"),
                                                   ("pusht", pusht, "pusht:expert"))}
        ceiling = [machine_ratio(specs, lead_s=1.0) for _ in range(1 if quick else 3)]
        session = [_session_twice(pusht, tmpdir / f"session{i}.sqlite")
                   for i in range(1 if quick else 3)]
    fixed_typer = {"wall_s": cli_runs["reach_serial_typer"]["wall_s"]
                   - statistics.median(warm_reach),
                   "cpu_s": cli_runs["reach_serial_typer"]["cpu_s"]
                   - statistics.median(warm_reach_cpu)}
    fixed_reach = cli_runs["reach_serial"]["wall_s"] - statistics.median(warm_reach)
    fixed_pusht = cli_runs["pusht_serial"]["wall_s"] - statistics.median(warm_pusht)
    # the same on CPU time, which load on a shared machine barely moves
    fixed_cpu = {
        "reach": cli_runs["reach_serial"]["cpu_s"] - statistics.median(warm_reach_cpu),
        "pusht": cli_runs["pusht_serial"]["cpu_s"] - statistics.median(warm_pusht_cpu),
    }
    # ... and beyond what a bare script pays before its first rollout (its imports)
    fixed_wall = {"reach": fixed_reach, "pusht": fixed_pusht}
    beyond_bare = {
        k: {"wall_s": fixed_wall[k] - cli_runs[f"{k}_bare_setup"]["wall_s"],
            "cpu_s": fixed_cpu[k] - cli_runs[f"{k}_bare_setup"]["cpu_s"],
            "bare_setup_wall_s": cli_runs[f"{k}_bare_setup"]["wall_s"],
            "bare_setup_cpu_s": cli_runs[f"{k}_bare_setup"]["cpu_s"]}
        for k in ("reach", "pusht")}
    process_ratio = cli_runs["pusht_serial"]["wall_s"] / cli_runs["pusht_process2"]["wall_s"]
    result.update({
        "episodes": len(specs),
        "cli_runs": cli_runs,
        "warm_run_panel_s": {"reach": statistics.median(warm_reach),
                             "pusht": statistics.median(warm_pusht)},
        "run_fixed_s": {"reach": fixed_reach, "pusht": fixed_pusht},
        "run_fixed_cpu_s": fixed_cpu,
        "run_fixed_beyond_bare_setup": beyond_bare,
        "bare_script_plays_the_same_steps": same_steps,
        "run_fixed_reach_through_typer": fixed_typer,
        "process_cli_ratio": process_ratio,
        "machine_ratio": statistics.median(ceiling),
        "machine_ratio_each": [round(x, 3) for x in ceiling],
        "efficiency": process_ratio / statistics.median(ceiling),
        "session_first_run_s": statistics.median(a for a, _ in session),
        "session_second_run_s": statistics.median(b for _, b in session),
        "warm_pool_saves_s": statistics.median(a - b for a, b in session),
        "cpus": os.cpu_count(),
        "ratio": process_ratio,
        "target_ratio": TARGET_PROCESS_RATIO,
        "targets": {"startup_s": TARGET_STARTUP_S, "run_fixed_s": TARGET_FIXED_S,
                    "process_cli_ratio": TARGET_PROCESS_RATIO},
        "passed_each": {
            "startup": worst_startup < TARGET_STARTUP_S,
            "run_fixed": max(fixed_reach, fixed_pusht) < TARGET_FIXED_S,
            "run_fixed_beyond_bare_setup": all(
                v["wall_s"] < TARGET_FIXED_S for v in beyond_bare.values()),
            "process_cli": process_ratio >= TARGET_PROCESS_RATIO,
        },
    })
    result["passed"] = all(result["passed_each"].values())
    return result


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
