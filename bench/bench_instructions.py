"""Benchmark: the runner's overhead counted in instructions, free of the machine's noise.

On the shared 2-core VM the CPU time of the same 2.5-s run swings by -30 % to +70 % from one
run to the next (``bench_envs``' pairs), so a 10-pair median of time ratios cannot tell a
3 % overhead from 0 %. Instructions executed do not depend on the machine's load: this bench
runs each path under Valgrind's cachegrind (``--cache-sim=no``: instruction counts only,
~40x slower than native) and compares counts, as CPython's and Rust's instruction-count
benchmarks do in CI.

Each panel is played by a child process (this module, ``--child``) in one of two modes,
with the same imports in both (the runner's and the bare loop's modules are all imported
first):

* ``runner``: one whole ``run_panel`` call on the serial backend into a fresh SQLite store,
  as ``evalband run`` plays it (``bench_envs._fresh_run``: the env and policy built inside
  the run, the manifest, every episode judged, timed and stored, the summary);
* ``bare``: ``gymnasium.make``, the policy and a plain ``reset / act / step`` loop stopping
  by the same success rule (``bench_envs.bare_loop``).

Each mode is counted at two run sizes, ``n1`` and ``n2`` episodes (the same first episodes;
10 and 60, PushT 20 and 40, the MuJoCo 3 envs 10 and 20: see :data:`SIZES`), so the
process start, the imports and the env's construction cancel:

* ``per_episode_overhead`` (the figure): the runner's instructions per extra episode over
  the bare loop's, ``(R(n2) - R(n1)) / (B(n2) - B(n1)) - 1``;
* ``fixed_extra_instructions``: what a run costs the runner beyond the episodes and beyond
  the bare loop's own fixed part (store, manifest, plan, summary; building the env through
  the panel), and ``fixed_share_of_bench_run``: that fixed part over the bare instructions
  of a run of ``bench_envs``' size (~2.5 s of CPU);
* ``overhead_at_bench_size``: both together for a run of that size.

Panels: PushT (``evalband/PushT-v0``, ``pusht:expert``: the PushT bench's episodes), and
``bench_envs``' four third-party panels (the FetchReach and dm_control ones inside
``.venv-mujoco3``). Every child prints the outcomes it played; both modes must agree.
Target (issue "Fast at every size"): <= 3 %.

Side by side with a commit: with ``EVALBAND_BENCH_BASE=COMMIT`` the runner path is counted
on that commit's ``src`` too (``git archive``, :mod:`_source`), at the same sizes and in the
same pool, and each panel gets ``base``: the base's runner instructions per episode and its
fixed part, ``runner_vs_base`` (head / base per episode; issue 32: no more than 1.10) and
whether both played the same episodes. ``EVALBAND_BENCH_PANELS=pusht,...`` picks the panels
(default: every panel; ``--quick``: reacher at 1 and 3 episodes).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SIDE_PYTHON = ROOT / ".venv-mujoco3" / "bin" / "python"
TARGET_OVERHEAD = 0.03
PANELS: dict[str, tuple[str, bool]] = {  # name -> (policy, needs MuJoCo 3.x)
    "pusht": ("pusht:expert", False),
    "point-maze": ("point_maze:p", False),
    "reacher": ("reacher:ik_pd", False),
    "fetch-reach": ("fetch_reach:p", True),
    "dmc-point-mass": ("point_mass:pd", True),
}
SIZES = {"pusht": (20, 40), "point-maze": (10, 60), "reacher": (10, 60),
         "fetch-reach": (10, 20), "dmc-point-mass": (10, 20)}
"""Run sizes (n1, n2): the difference must count episodes a long run plays, past what only
a run's first episodes pay -- Python specialises its bytecode over the first calls of each
function, the first group commits grow the store's pages, and the first 8 episodes of each
cell are traced (``evalband.run._trace``: PushT records them, so its sizes are 10 and 20
episodes a cell) -- all of which land in the fixed part, priced at the bench run's size. (At
sizes 2 and 12, the first bench of this kind, those one-time costs of episodes 3-12 counted
as per-episode: PointMaze's 3.9 % there is 2.1 % at 10 and 60.) The slow MuJoCo 3 envs
stop at 20: 20 Fetch episodes are ~9 G instructions under Valgrind."""
#: bench_envs sizes each run to ~2.5 s of CPU: the run size the fixed part is priced at
BENCH_RUN_CPU_S = 2.5


def child(name: str, policy: str, mode: str, episodes: int) -> None:
    """Play ``episodes`` of ``name`` in ``mode``; print the outcomes' digest.

    PushT is played as ``bench_pusht`` plays it (its panel: two start cells; its bare loop:
    the env class, the episode's reset options, the env's own end of episode); the
    third-party panels as ``bench_envs`` does.
    """
    # every module either path uses, imported in both modes (their cost cancels anyway)
    import bench_pusht
    from bench_envs import _fresh_run, bare_loop, bench_panel
    from evalband.store import open_store

    if name == "pusht":
        panel = bench_pusht.pusht_panel(max(1, episodes // 2))  # episodes per cell
    else:
        panel = bench_panel(name, episodes)
    specs = panel.episode_specs()
    with tempfile.TemporaryDirectory() as tmp, open_store(Path(tmp) / "i.sqlite") as store:
        if mode == "runner":
            _fresh_run(store, panel, policy, "r")
            played = sorted((r.key, r.outcome.value, r.steps)
                            for r in store.episode_records("r"))
        elif name == "pusht":
            played = sorted(bench_pusht.bare_loop(specs))
        else:
            played = sorted(bare_loop(panel, policy, specs))
    digest = hashlib.sha256(json.dumps(played).encode()).hexdigest()[:16]
    print(json.dumps({"episodes": len(played), "digest": digest,
                      "steps": sum(s for _, _, s in played)}))


_IREFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def count(name: str, mode: str, episodes: int, src: Path = ROOT / "src") -> dict[str, Any]:
    """Instructions of one child process under cachegrind (``src`` imported), what it played."""
    policy, side = PANELS[name]
    python = str(SIDE_PYTHON) if side else sys.executable
    # One BLAS thread: OpenBLAS's idle threads spin-wait, and under Valgrind (which runs
    # threads one at a time) how long they spin depends on its scheduling, not on the path
    # (in one Reacher run they added 9M instructions to one path and none to the other).
    env = dict(os.environ, PYTHONPATH=f"{src}{os.pathsep}{HERE}", PYTHONHASHSEED="0",
               OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    if side:
        env.setdefault("MUJOCO_GL", "egl")
    t0 = time.perf_counter()
    done = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         python, __file__, "--child", name, policy, mode, str(episodes)],
        capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    found = _IREFS.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"{name} {mode} {episodes}: exit {done.returncode}\n"
                           f"{done.stderr[-2000:]}")
    played = json.loads(done.stdout.strip().splitlines()[-1])
    return {"instructions": int(found.group(1).replace(",", "")), **played,
            "seconds": time.perf_counter() - t0}


def measure(name: str, n1: int, n2: int, pool: ThreadPoolExecutor,
            bare_cpu_ms_per_episode: float | None,
            base: tuple[str, Path] | None = None) -> dict[str, Any]:
    jobs = {(mode, n): pool.submit(count, name, mode, n)
            for mode in ("runner", "bare") for n in (n1, n2)}
    base_jobs = {n: pool.submit(count, name, "runner", n, base[1]) for n in (n1, n2)} \
        if base else {}
    c = {key: job.result() for key, job in jobs.items()}
    r1, r2 = c["runner", n1]["instructions"], c["runner", n2]["instructions"]
    b1, b2 = c["bare", n1]["instructions"], c["bare", n2]["instructions"]
    runner_ep, bare_ep = (r2 - r1) / (n2 - n1), (b2 - b1) / (n2 - n1)
    fixed_extra = (r1 - n1 * runner_ep) - (b1 - n1 * bare_ep)
    result: dict[str, Any] = {
        "sizes": [n1, n2],
        "steps_per_episode": (c["bare", n2]["steps"] - c["bare", n1]["steps"]) / (n2 - n1),
        "bare_instructions_per_episode": bare_ep,
        "runner_instructions_per_episode": runner_ep,
        "per_episode_overhead": runner_ep / bare_ep - 1.0,
        "fixed_extra_instructions": fixed_extra,
        "identical": all(c["runner", n]["digest"] == c["bare", n]["digest"] for n in (n1, n2)),
        "counts": {f"{mode}_{n}": v["instructions"] for (mode, n), v in c.items()},
        "valgrind_seconds": round(sum(v["seconds"] for v in c.values()), 1),
    }
    if bare_cpu_ms_per_episode:  # the episodes of a ~2.5-s bench run, and their fixed share
        bench_episodes = max(20, round(1000.0 * BENCH_RUN_CPU_S / bare_cpu_ms_per_episode))
        result["bench_run_episodes"] = bench_episodes
        result["fixed_share_of_bench_run"] = fixed_extra / (bench_episodes * bare_ep)
        result["overhead_at_bench_size"] = (result["per_episode_overhead"]
                                            + result["fixed_share_of_bench_run"])
    if base:
        k = {n: job.result() for n, job in base_jobs.items()}
        base_ep = (k[n2]["instructions"] - k[n1]["instructions"]) / (n2 - n1)
        result["base"] = {
            "commit": base[0], "runner_instructions_per_episode": base_ep,
            "runner_fixed_instructions": k[n1]["instructions"] - n1 * base_ep,
            "counts": {f"runner_{n}": v["instructions"] for n, v in k.items()},
            "identical": all(k[n]["digest"] == c["runner", n]["digest"] for n in (n1, n2)),
        }
        result["runner_vs_base"] = runner_ep / base_ep
        result["runner_fixed_vs_base"] = (r1 - n1 * runner_ep) / result["base"][
            "runner_fixed_instructions"]
        # the base's own figures against the same bare loop, as the head's above
        base_fixed_extra = (k[n1]["instructions"] - n1 * base_ep) - (b1 - n1 * bare_ep)
        result["base"]["per_episode_overhead"] = base_ep / bare_ep - 1.0
        if "bench_run_episodes" in result:
            result["base"]["overhead_at_bench_size"] = (
                result["base"]["per_episode_overhead"]
                + base_fixed_extra / (result["bench_run_episodes"] * bare_ep))
    return result


def _bare_ms_per_episode() -> dict[str, float]:
    """CPU ms a bare episode takes, from the last stored bench_envs / bench_pusht results."""
    try:
        stored = json.loads((HERE / "results.json").read_text())["results"]
    except (OSError, KeyError, ValueError):
        return {}
    out: dict[str, float] = {}
    for r in stored:
        if r.get("name") == "envs_runner_overhead":
            out.update({k: v["cpu_ms_per_episode_bare"] for k, v in r["panels"].items()})
    return out


def run(quick: bool = False) -> dict[str, Any]:
    """Count both paths on every panel; ``passed`` when every overhead is <= 3 %."""
    import shutil

    if shutil.which("valgrind") is None:
        return {"name": "runner_overhead_instructions", "passed": False, "identical": True,
                "ratio": None, "target_ratio": 1.0 / (1.0 + TARGET_OVERHEAD),
                "skipped": "valgrind is not installed (Debian: apt install valgrind)"}
    names = ["reacher"] if quick else list(PANELS)
    chosen = os.environ.get("EVALBAND_BENCH_PANELS")
    if chosen:
        names = [n for n in chosen.split(",") if n in PANELS]
    if not SIDE_PYTHON.exists():
        names = [n for n in names if not PANELS[n][1]]
    quick_sizes = (1, 3)
    bare_ms = _bare_ms_per_episode()
    bare_ms.setdefault("pusht", 17.0)  # bench_pusht's expert episodes, ~17 ms of CPU
    t0 = time.perf_counter()
    commit = os.environ.get("EVALBAND_BENCH_BASE")
    with tempfile.TemporaryDirectory() as tmp, \
            ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        base = None
        if commit:
            from _source import source_of  # bench/ is on sys.path (run.py, the tests)

            base = (commit, source_of(commit, Path(tmp)))
        panels = {name: measure(name, *(quick_sizes if quick else SIZES[name]), pool,
                                bare_ms.get(name), base) for name in names}
    figure = {k: v.get("overhead_at_bench_size", v["per_episode_overhead"])
              for k, v in panels.items()}
    worst = max(figure.values())
    identical = all(v["identical"] and v.get("base", {}).get("identical", True)
                    for v in panels.values())
    vs_base = {k: v["runner_vs_base"] for k, v in panels.items() if "runner_vs_base" in v}
    return {
        "name": "runner_overhead_instructions",
        **({"base": commit, "runner_vs_base": vs_base,
            "runner_vs_base_passed": all(r <= 1.10 for r in vs_base.values())}
           if vs_base else {}),
        "load_average": [round(v, 2) for v in os.getloadavg()],
        "panels": panels,
        "overhead_at_bench_size": figure,
        "worst_overhead": worst,
        "ratio": 1.0 / (1.0 + worst),
        "target_ratio": 1.0 / (1.0 + TARGET_OVERHEAD),
        "target_overhead": TARGET_OVERHEAD,
        "identical": identical,
        "passed": bool(worst <= TARGET_OVERHEAD and identical),
        "bench_seconds": time.perf_counter() - t0,
        "claim": "the runner's overhead over a bare loop, in instructions executed "
                 "(cachegrind), per episode plus its fixed part priced at a ~2.5-s run: "
                 "<= 3 % on PushT and on short third-party episodes",
    }


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        sys.path.insert(0, str(HERE))
        child(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        sys.path.insert(0, str(HERE))
        print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
