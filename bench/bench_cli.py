"""Benchmark: the command line's start-up and ``compare --json``, beside the previous commit.

Issue 32 removed the CLI's second parser (``cli/_fast.py``: ``--help`` and plain ``ci``,
``diff``, ``power``, ``run`` lines answered before typer loaded) and its ``os._exit`` (the
interpreter's teardown skipped): every line now goes through typer's group, which loads a
command's module only when it is used, and the process ends with Python's normal exit.
Issue 34 asks ``evalband compare --json`` end to end for < 0.3 s on this machine when quiet.

Every figure is a fresh ``python -m evalband.cli ...`` process timed from outside (wall
clock, and its CPU time from ``wait4``, which other load barely changes), each command of
each code base once per round in rotating order; medians, and the median of the per-round
ratios now / previous. Three code bases:

* ``now``: this tree's ``src``;
* ``previous``: :data:`PREVIOUS_COMMIT`'s ``src`` (taken from git into a temporary folder),
  the short path and ``os._exit`` in place;
* ``previous_normal_exit``: the same with ``EVALBAND_FAST_EXIT=0`` (its normal exit), which
  isolates what ``os._exit`` saved.

Commands: ``--help``, ``ci 8 20``, and ``compare A B --store S --json`` of two stored runs of
200 paired episodes (``simulate_hidden_regression``). The floors (:data:`FLOORS`: ``python -c
pass``, ``import numpy``, ``import numpy, scipy.special``, the same with ``pydantic``,
``import typer``, and every third-party module the command imports) run in the same rounds,
so the share of ``compare --json`` that no change to evalband can remove while it computes
with ``scipy.special`` is measured beside it. With ``valgrind`` present, the instructions
each command and floor executes (load-independent) are counted once per code base, and
those of importing what ``compare --json`` imports (:data:`COMPARE_IMPORTS`), to say how
much of it is imports.

``compare --json`` also runs from :data:`BEFORE_COMMIT` (``before``: issue 34's start,
before numpy's unused submodules were deferred, :mod:`evalband.cli._lazy_numpy`), and each
round runs ``bench/cli_breakdown.py`` once: one fresh process that imports what the command
imports in steps (numpy, scipy.special, pydantic and PyYAML, the panel models, typer and the
command line, the rest) and then runs the command with nothing left to import, its parts
timed (store read, compute, record, JSON, the rest); medians per part under ``breakdown``.

Every child runs with bytecode caching on (as an installed package has it); a first,
untimed round writes the caches.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _source import source_of  # bench/ is on sys.path (run.py, the tests)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PREVIOUS_COMMIT = "5639f0ccceadfd0af38635c0aa16dbc6a9b71dbc"
"""The last commit with the short path and ``os._exit`` (branch mdef, issue 32's start)."""
BEFORE_COMMIT = "b2d8aaa"
"""Issue 34's start for ``compare --json`` (branch mdef): numpy's submodules executed by scipy."""
TARGETS = {"compare_json_s": 0.3, "startup_ratio": 1.1}
#: Fresh interpreters that do no more than start and import: the floors ``compare --json``
#: stands on (timed in the same rounds as the commands, and counted).
FLOORS = {
    "python": "pass",
    "import_numpy": "import numpy",
    "import_numpy_scipy_special": "import numpy, scipy.special",
    "import_numpy_scipy_special_deferred": "from evalband.cli._lazy_numpy import install; "
                                           "install(); import numpy, scipy.special",
    "import_numpy_scipy_special_pydantic": "import numpy, scipy.special, pydantic",
    "import_typer": "import typer",
    "import_third_party": "import numpy, scipy.special, pydantic.main, pydantic.types, yaml, "
                          "typer, msgspec, sqlite3",
}
#: What ``compare --json`` imports, cumulatively (each line adds to the one before; the first
#: three are floors): the share of its instructions that are imports, and which.
COMPARE_IMPORTS = {
    "numpy": "import_numpy",
    "numpy_scipy_special": "import_numpy_scipy_special_deferred",
    "and_pydantic": "pydantic",
    "and_the_panels_libraries": "pydantic.main, pydantic.types, "
                                "pydantic.functional_validators, yaml, evalband.episode",
    "and_pydantic_panel": "yaml, pydantic.main, evalband.panel",
    "and_typer_and_the_rest": "yaml, pydantic.main, evalband.panel, "
                              "typer, msgspec, sqlite3, evalband.analysis._compare, "
                              "evalband.store._sqlite, evalband.cli._compare",
}
#: What the command line does before its ``import scipy`` (:mod:`evalband.cli._lazy_numpy`).
DEFERRED = "from evalband.cli._lazy_numpy import install; install(); import numpy, scipy.special; "
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    if code not in (0, 3, 4, 5):
        raise RuntimeError(f"{' '.join(argv)} exited {code}: {err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def _instructions(argv: list[str], env: dict[str, str]) -> int | None:
    """Instructions one process executes (valgrind's callgrind), or None without valgrind.

    With one hash seed and one BLAS thread (an idle BLAS thread's spinning is counted too).
    """
    if shutil.which("valgrind") is None:
        return None
    env = {**env, "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1"}  # one count per code
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                           *argv], capture_output=True, text=True, check=False, env=env)
    for line in done.stderr.splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1].strip())
    return None


class _Breakdown:
    """``bench/cli_breakdown.py`` once per round: the command's parts, each round's seconds."""

    def __init__(self, folder: Path, store: Path, base: str, cand: str,
                 env: dict[str, str]) -> None:
        script = str(HERE / "cli_breakdown.py")
        self.argv = [sys.executable, script, str(store), base, cand]
        listed = subprocess.run(self.argv, capture_output=True, text=True, check=True, env=env)
        modules = folder / "modules.txt"
        modules.write_text(listed.stdout)
        self.argv += ["--modules", str(modules)]
        self.env = env
        self.rounds: list[dict[str, Any]] = []

    def once(self, keep: bool) -> None:
        done = subprocess.run(self.argv, capture_output=True, text=True, check=True,
                              env=self.env)
        if keep:
            self.rounds.append(json.loads(done.stdout.strip().splitlines()[-1]))

    def medians(self) -> dict[str, Any]:
        """Each part's median over the rounds (seconds), and what the command imported late."""
        out: dict[str, Any] = {}
        for side in ("imports", "command"):
            out[side] = {part: statistics.median(r[side][part] for r in self.rounds)
                         for part in self.rounds[0][side]}
        out["imported_during_command"] = max(r["imported_during_command"] for r in self.rounds)
        return out


def _build_store(path: Path) -> tuple[str, str]:
    from evalband.labs.hidden_regression import simulate_hidden_regression
    from evalband.store import open_store

    with open_store(path) as st:
        base, cand = simulate_hidden_regression(st, episodes=200, seed=1)
    return base, cand


def run(quick: bool = False) -> dict[str, Any]:
    """Every command of every code base, interleaved; bench/run.py's dict."""
    rounds = 3 if quick else 7
    load_before = _load()
    commit = PREVIOUS_COMMIT
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        store = folder / "s.sqlite"
        base, cand = _build_store(store)
        srcs = {"now": ROOT / "src", "previous": source_of(commit, folder / "prev"),
                "before": source_of(BEFORE_COMMIT, folder / "before")}
        envs = {
            "now": {**CHILD_ENV, "PYTHONPATH": str(srcs["now"])},
            "previous": {**CHILD_ENV, "PYTHONPATH": str(srcs["previous"])},
            "previous_normal_exit": {**CHILD_ENV, "PYTHONPATH": str(srcs["previous"]),
                                     "EVALBAND_FAST_EXIT": "0"},
        }
        cli = [sys.executable, "-m", "evalband.cli"]
        commands = {"help": [*cli, "--help"], "ci": [*cli, "ci", "8", "20"],
                    "compare_json": [*cli, "compare", base, cand, "--store", str(store),
                                     "--json"]}
        jobs: dict[str, tuple[list[str], dict[str, str]]] = {
            f"{c}_{e}": (argv, env) for c, argv in commands.items() for e, env in envs.items()}
        jobs["compare_json_before"] = (commands["compare_json"],
                                       {**CHILD_ENV, "PYTHONPATH": str(srcs["before"])})
        jobs.update({name: ([sys.executable, "-c", code], envs["now"])
                     for name, code in FLOORS.items()})
        breakdown = _Breakdown(folder, store, base, cand, envs["now"])
        names = list(jobs)
        wall: dict[str, list[float]] = {k: [] for k in names}
        cpu: dict[str, list[float]] = {k: [] for k in names}
        for r in range(rounds + 1):
            for name in names[r % len(names):] + names[: r % len(names)]:
                w, c = _timed(*jobs[name])
                if r:  # round 0 writes the bytecode caches
                    wall[name].append(w)
                    cpu[name].append(c)
            breakdown.once(keep=r > 0)
        counted = {name: _instructions(*jobs[name]) for name in names
                   if not name.endswith("normal_exit") or name.startswith("help")}
        now_env = envs["now"]
        imports = {label: counted[modules] if modules in FLOORS else
                   _instructions([sys.executable, "-c", f"{DEFERRED}import {modules}"], now_env)
                   for label, modules in COMPARE_IMPORTS.items()}
    load_after = _load()

    def ratio(a: str, b: str, of: dict[str, list[float]]) -> float:
        return statistics.median(x / y for x, y in zip(of[a], of[b], strict=True))

    med = {k: {"wall_s": statistics.median(wall[k]), "cpu_s": statistics.median(cpu[k]),
               "wall_min_s": min(wall[k])} for k in names}
    ratios = {
        f"{c}_now_vs_previous": {"wall": ratio(f"{c}_now", f"{c}_previous", wall),
                                 "cpu": ratio(f"{c}_now", f"{c}_previous", cpu)}
        for c in commands}
    ratios.update({
        f"{c}_previous_normal_exit_vs_previous": {
            "wall": ratio(f"{c}_previous_normal_exit", f"{c}_previous", wall),
            "cpu": ratio(f"{c}_previous_normal_exit", f"{c}_previous", cpu)}
        for c in commands})
    instructions = {k: v for k, v in counted.items() if v is not None}
    instruction_ratios = {
        f"{c}_now_vs_previous": instructions[f"{c}_now"] / instructions[f"{c}_previous"]
        for c in commands if f"{c}_now" in instructions and f"{c}_previous" in instructions}
    whole = instructions.get("compare_json_now")
    floors = {k: v for k, v in imports.items() if v is not None}
    result_imports = {"instructions": floors,
                      "share_of_compare_json": {k: v / whole for k, v in floors.items()}
                      if whole else {}}
    result: dict[str, Any] = {
        "name": "cli_startup_and_compare_json" if not quick else "cli_startup_quick",
        "previous_commit": commit,
        "rounds": rounds,
        "load": {"before": load_before, "after": load_after},
        "medians": med,
        "ratios": ratios,
        "instructions": instructions,
        "instruction_ratios": instruction_ratios,
        "compare_json_imports": result_imports,
        "breakdown": breakdown.medians(),
        "compare_json_now_vs_before": {
            "before_commit": BEFORE_COMMIT,
            "wall": ratio("compare_json_now", "compare_json_before", wall),
            "cpu": ratio("compare_json_now", "compare_json_before", cpu),
            "instructions": (instructions["compare_json_now"]
                             / instructions["compare_json_before"])
            if "compare_json_before" in instructions and "compare_json_now" in instructions
            else None},
        "floors": _floors(med, wall, instructions),
        "targets": TARGETS,
    }
    result["passed_each"] = {
        "compare_json_under_0.3_s": med["compare_json_now"]["wall_s"] < TARGETS["compare_json_s"],
        "startup_within_10pct": all(ratios[f"{c}_now_vs_previous"]["cpu"]
                                    <= TARGETS["startup_ratio"] for c in ("help", "ci")),
    }
    # the page's ratios are "higher is better": previous / now, the worst of the three
    result["ratio"] = min(1.0 / ratios[f"{c}_now_vs_previous"]["cpu"] for c in commands)
    result["target_ratio"] = 1.0 / TARGETS["startup_ratio"]
    result["load_average"] = load_before
    result["passed"] = all(result["passed_each"].values())
    return result


def _floors(med: dict[str, dict[str, float]], wall: dict[str, list[float]],
            instructions: dict[str, int]) -> dict[str, Any]:
    """Each floor's wall median and instructions, and its share of ``compare --json``'s.

    ``share_of_compare_json``: the floor's instructions over the command's (both counted in
    this run); ``wall_ratio``: the median over rounds of floor wall / command wall (the two ran
    in the same round).
    """
    whole = instructions.get("compare_json_now")
    out: dict[str, Any] = {}
    for name, code in FLOORS.items():
        count = instructions.get(name)
        out[name] = {
            "code": code,
            "wall_s": med[name]["wall_s"],
            "instructions": count,
            "share_of_compare_json": count / whole if count and whole else None,
            "wall_ratio": statistics.median(
                f / c for f, c in zip(wall[name], wall["compare_json_now"], strict=True)),
        }
    return out


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=1))
