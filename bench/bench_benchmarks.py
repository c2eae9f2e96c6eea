"""Benchmark panels (robosuite): check-env, 20 episodes on three paths, the Lift control.

Runs inside ``.venv-bench`` (``make test`` / ``make bench`` build it), one subprocess. For
each runnable manipulation panel (the five robosuite panels; LIBERO needs scene assets this
machine does not have and ManiSkill a Vulkan device, see docs/benchmarks.md):

* ``check-env`` (its checks: seeded resets reproduce in the same and a fresh env, the
  control period, the factors, the success rule reachable by the control, lockstep = one at
  a time) must report no problem; for the panels whose only control is the random one (no
  scripted control: robosuite ships none), every check but "the control reaches success";
* 20 episodes (``--quick``: 4) of the panel's control (Lift and Stack: the scripted
  ``robosuite:lift`` / ``robosuite:stack``; the others: ``robosuite:random``, a chance-level
  control, on a budget of 20 steps so that the run is affordable) played serial, with
  ``--backend process --workers 2`` and with ``--backend vector --workers 2``: the records
  must be identical in every field but the timing ones; episodes per second of each path
  are reported (wall time of the whole run, start-up included; a 2-core machine shared
  with other jobs);
* robosuite Lift's scripted control on 100 episodes (``--quick``: 10): success rate with its
  Wilson 95 % band; the target is a rate >= 90 %.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SIDE = ROOT / ".venv-bench" / "bin" / "python"

PANELS = {  # panel -> (control, budget override or None)
    "robosuite-lift": ("robosuite:lift", None),
    "robosuite-stack": ("robosuite:stack", None),
    "robosuite-door": ("robosuite:random", 20),
    "robosuite-pickplace": ("robosuite:random", 20),
    "robosuite-nutassembly": ("robosuite:random", 20),
}

SCRIPT = r"""
import json, subprocess, sys, time, yaml
from pathlib import Path
from evalband.panel import load_panel
from evalband.run import run_panel
from evalband.store import open_store
from evalband.analysis import summarize

TIMING = ("latency_ms_p50", "latency_ms_p95", "latency_ms_max", "env_ms", "wall_s",
          "started_at", "run_id")

def comparable(record):
    data = record.as_dict()
    for name in TIMING:
        data.pop(name, None)
    return data

def main(root, work, spec, quick):
    out = {}
    for name, (policy, steps) in spec.items():
        data = yaml.safe_load((Path(root) / "examples" / f"{name}.yaml").read_text())
        cells = 1
        for levels in data.get("factors", {}).values():
            cells *= len(levels.get("levels", levels) if isinstance(levels, dict) else levels)
        episodes = max(1, (4 if quick else 20) // cells)
        data.update(episodes=episodes)
        if steps:
            data["budget"] = {"steps": steps}
        path = Path(work) / f"{name}.yaml"
        path.write_text(yaml.safe_dump(data))
        check = subprocess.run([sys.executable, "-m", "evalband.cli", "check-env", str(path),
                                "-p", policy, "-n", "1", "--json"], capture_output=True,
                               text=True)
        try:
            report = json.loads(check.stdout)
        except ValueError:
            report = {"ok": False, "findings": [{"level": "problem", "check": "crash",
                                                 "message": check.stderr[-500:]}]}
        problems = [f for f in report["findings"] if f["level"] == "problem"]
        row = {"check_env_ok": bool(report["ok"]),
               # a chance-level control need not succeed: every other check must pass
               "check_env_ok_but_success": all(f["check"] == "success" for f in problems),
               "check_env_problems": [f["message"] for f in problems],
               "episodes": episodes * cells, "paths": {}}
        records = {}
        with open_store(Path(work) / f"{name}.sqlite") as store:
            for run_id, options in (("serial", {}),
                                    ("process", {"backend": "process", "workers": 2}),
                                    ("vector", {"backend": "vector", "workers": 2})):
                t0 = time.perf_counter()
                run_panel(load_panel(str(path)), policy, store, run_id=run_id, **options)
                wall = time.perf_counter() - t0
                got = {r.key: comparable(r) for r in store.episode_records(run_id)}
                records[run_id] = got
                row["paths"][run_id] = {"wall_s": wall, "episodes_per_s": len(got) / wall}
            row["identical"] = all(records[p] == records["serial"] for p in records)
            row["successes"] = sum(r["outcome"] == "success" for r in records["serial"].values())
        out[name] = row
    data = yaml.safe_load((Path(root) / "examples" / "robosuite-lift.yaml").read_text())
    data.update(episodes=10 if quick else 100)
    path = Path(work) / "lift-control.yaml"
    path.write_text(yaml.safe_dump(data))
    with open_store(Path(work) / "lift-control.sqlite") as store:
        run_panel(load_panel(str(path)), "robosuite:lift", store, run_id="control",
                  backend="vector", workers=2)
        summary = summarize(store.episode_records("control"))
    out["lift_control"] = {"episodes": summary.n, "successes": summary.successes,
                           "rate": summary.rate.estimate, "low": summary.rate.low,
                           "high": summary.rate.high}
    print(json.dumps(out))

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4] == "1")
"""


def uptime() -> str:
    try:
        return Path("/proc/loadavg").read_text().split(" ", 3)[:3].__str__()
    except OSError:
        return "unknown"


def run(quick: bool = False) -> dict[str, Any]:
    if not SIDE.exists():
        raise SystemExit(f"{SIDE} is missing: `make bench` builds .venv-bench")
    with tempfile.TemporaryDirectory() as work:
        script = Path(work) / "bench_benchmarks_side.py"
        script.write_text(SCRIPT)
        env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), MUJOCO_GL="egl",
                   LIBERO_CONFIG_PATH=str(Path(work) / "libero"))
        load_before = uptime()
        done = subprocess.run([str(SIDE), str(script), str(ROOT), work, json.dumps(PANELS),
                               "1" if quick else "0"], capture_output=True, text=True,
                              env=env, cwd=work)
        if done.returncode != 0:
            sys.stderr.write(done.stderr[-5000:])
            raise SystemExit(f"bench_benchmarks failed (exit {done.returncode})")
        panels = json.loads(done.stdout.strip().splitlines()[-1])
    control = panels.pop("lift_control")
    identical = all(row["identical"] for row in panels.values())
    checked = all(row["check_env_ok"] if PANELS[name][0] != "robosuite:random"
                  else row["check_env_ok_but_success"] for name, row in panels.items())
    passed = identical and checked and (quick or control["rate"] >= 0.9)
    return {"name": "bench_benchmarks", "kind": "audit", "identical": identical,
            "check_env_ok": checked, "panels": panels, "lift_control": control,
            "target_lift_rate": 0.9, "ratio": None, "target_ratio": None, "passed": passed,
            "load_avg_before": load_before, "load_avg_after": uptime()}


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
