"""Every ``--json`` byte is what the reference commit wrote (a property test).

The code of commit :data:`BEFORE` is taken from git into a temporary folder and run in a
subprocess on the same random panels and runs as this checkout: in memory and from a store,
one or two candidates, errors, interventions, latencies, times, margins, budgets and required
slices. Each comparison's JSON text must be equal byte for byte (NaN written as null), and so
must the stdout of ``evalband compare --json``.

The speed work on the comparison (columnar projection, the cached panel) was held byte-identical
to the code before it (7fd950d) by this test on its own branch. :data:`BEFORE` has since moved to
the commit that merged the statistics work (the conditional exact paired interval, the honest
power statements, discrete Holm), which changes printed intervals on purpose, and then to the
merge of the input-hardening work, whose only change to these bytes is the declared ``alpha``
(0.05, not 1 - 0.95 in binary: checked with that one difference masked); every later change
to the comparison's code must keep its bytes or move :data:`BEFORE` with a reason. The one
addition since is the document's ``metrics`` key (per-episode metrics compared, issue 29): these
runs record no metric, so it must be empty, and it is taken out before the bytes are compared
(:func:`_no_metrics`). Likewise the ``scorer`` key (``compare --scorer``, issue 29): null
when the record's own success judges, taken out the same way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testkit import source_at

BEFORE = "60a1b9d7e50814a72f08c6640e075581ba17381a"
"""The reference commit: speed work and the statistics work merged (see the module's text)."""

BEFORE_METRICS = "8c8e57adb98571426a49fadbe5f3865b90a70f20"
"""The reference for comparisons with per-episode metrics, the ``metrics`` key included. It was
first the integration commit just before the second speed pass (issue 34: metric values kept
per run, a stored run's ``extra`` read only where it may hold metrics, one query per run),
which this test held byte-identical at its merge. It then moved to the merge of the small-n
rule (an undeclared metric with 6-49 values is read as its median, issue 29), which changes
these bytes on purpose; every later change must keep them or move this with a reason."""

ROOT = Path(__file__).resolve().parents[2]

WORKER = r'''
import json, sys
from evalband.analysis import compare_many
from evalband.analysis._compare import RunData
from evalband.episode import EpisodeRecord
from evalband.panel import load_panel
from evalband.report import comparison_json
from evalband.run import Recorder
from evalband.store import open_store
import evalband


def compare_case(case, folder, **options):
    panel = load_panel(case["panel"])
    runs = []
    for j, episodes in enumerate(case["runs"]):
        run_id = f"r{j}"
        if case["store"]:
            path = f"{folder}/s{case['index']}.sqlite"
            with open_store(path) as st, Recorder(st, panel, run_id, run_id=run_id) as rec:
                for e in episodes:
                    rec.log(**e, steps=1)
            with open_store(path) as st:
                st.update_run(run_id, errors_as_failures=case["eaf"] and j == 0)
                runs.append(evalband.load_run(run_id, st))
        else:
            cells = {c.key: c for c in panel.cells()}
            runs.append(RunData(run_id, run_id, panel.fingerprint, panel, [
                EpisodeRecord(run_id=run_id, policy=run_id, panel_fingerprint=panel.fingerprint,
                              cell=e["cell"], slices=dict(cells[e["cell"]].slices),
                              episode=e["episode"], repeat=e["repeat"], condition_seed=0,
                              outcome=e["outcome"], terminated=True, truncated=False, steps=1,
                              assisted=e["assisted"], interventions=e["interventions"],
                              latency_ms_p95=e["latency_ms_p95"],
                              time_to_success_s=e["time_to_success_s"])
                for e in episodes], errors_as_failures=case["eaf"] and j == 0, source="memory"))
    return [comparison_json(c) for c in compare_many(
        runs[0], runs[1:], confidence=case["confidence"], effect=case["effect"], **options)]


if __name__ == "__main__":
    cases = json.loads(open(sys.argv[1]).read())
    print(json.dumps([compare_case(c, sys.argv[2]) for c in cases]))
'''


METRICS_WORKER = (WORKER  # a stored episode's extra goes through rec.log(**e) already
                  .replace("time_to_success_s=e[\"time_to_success_s\"])",
                           "time_to_success_s=e[\"time_to_success_s\"], extra=e[\"extra\"])"))


def _source(tmp_path_factory: pytest.TempPathFactory, commit: str, worker: str) -> Path:
    """The source tree of ``commit`` with ``worker`` (skipped where git or it is missing)."""
    return source_at(tmp_path_factory.mktemp("before"), commit, worker)


@pytest.fixture(scope="module")
def before(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The source tree of :data:`BEFORE` (skipped where git or the commit is missing)."""
    return _source(tmp_path_factory, BEFORE, WORKER)


@pytest.fixture(scope="module")
def before_metrics(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The source tree of :data:`BEFORE_METRICS` (skipped where it is missing)."""
    return _source(tmp_path_factory, BEFORE_METRICS, METRICS_WORKER)


def _run_before(before: Path, cases: list[dict[str, Any]], folder: Path) -> list[list[str]]:
    data = folder / "cases.json"
    data.write_text(json.dumps(cases))
    env = {**os.environ, "PYTHONPATH": str(before / "src")}
    done = subprocess.run([sys.executable, str(before / "worker.py"), str(data), str(folder)],
                          capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    out: list[list[str]] = json.loads(done.stdout)
    return out


def _no_metrics(text: str) -> str:
    """A comparison's JSON text without its ``metrics`` key, which must be empty, and its
    ``scorer`` key, which must be null (these comparisons judge by the record's success)."""
    trailing = text[len(text.rstrip("\n")):]
    doc = json.loads(text)
    assert doc.pop("metrics") == []
    assert doc.pop("scorer", None) is None
    return json.dumps(doc, indent=2) + trailing


def _run_now(cases: list[dict[str, Any]], folder: Path, worker: str = WORKER,
             keep_metrics: bool = False) -> list[list[str]]:
    namespace: dict[str, Any] = {}
    exec(compile(worker, "worker", "exec"), namespace)  # noqa: S102 - the same worker, here
    return [[t if keep_metrics else _no_metrics(t)
             for t in namespace["compare_case"](c, str(folder))] for c in cases]


@st.composite
def cases(draw: st.DrawFn) -> dict[str, Any]:
    """A random panel and two or three runs of it (a baseline and candidates)."""
    factors = {f"f{i}": [f"v{j}" for j in range(draw(st.integers(1, 3)))]
               for i in range(draw(st.integers(0, 2)))}
    spec: dict[str, Any] = {"name": "p", "env": "evalband/Coin-v0", "seed": 0,
                            "episodes": draw(st.integers(1, 8)), "repeats": draw(st.integers(1, 2)),
                            "budget": {"steps": 1}}
    if factors:
        spec["factors"] = factors
        if draw(st.booleans()):
            spec["latency_budget_ms"] = {"f0=v0": draw(st.sampled_from([5.0, 30.0]))}
        if draw(st.booleans()):
            spec["required_slices"] = ["f0=v0"]
    if draw(st.booleans()):
        spec["non_inferiority_margin"] = draw(st.sampled_from([0.1, 0.3]))
    from evalband.panel import load_panel

    panel = load_panel(spec)
    keys = [(s.cell, s.episode, s.repeat) for s in panel.episode_specs()]
    episode = st.fixed_dictionaries({
        "present": st.booleans() | st.just(True),
        "outcome": st.sampled_from(["success", "success", "failure", "timeout", "error"]),
        "assisted": st.sampled_from([False, False, False, True]),
        "interventions": st.sampled_from([0, 0, 0, 1]),
        "latency_ms_p95": st.none() | st.floats(1.0, 60.0),
        "time_to_success_s": st.none() | st.floats(0.1, 9.0),
    })
    runs = []
    for _ in range(draw(st.integers(2, 3))):
        drawn = draw(st.lists(episode, min_size=len(keys), max_size=len(keys)))
        runs.append([{"cell": c, "episode": e, "repeat": r,
                      **{k: v for k, v in d.items() if k != "present"},
                      "time_to_success_s": (d["time_to_success_s"] if d["outcome"] == "success"
                                            else None)}
                     for (c, e, r), d in zip(keys, drawn, strict=True) if d["present"]])
    return {"panel": spec, "runs": runs, "store": draw(st.booleans()),
            "confidence": draw(st.sampled_from([0.95, 0.9])),
            "effect": draw(st.sampled_from([0.1, 0.2])), "eaf": draw(st.booleans())}


@settings(max_examples=3, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(cases(), min_size=6, max_size=6))
def test_every_comparison_is_byte_identical_to_the_code_before(
        before: Path, tmp_path_factory: pytest.TempPathFactory,
        batch: list[dict[str, Any]]) -> None:
    for i, case in enumerate(batch):
        case["index"] = i
    old_folder, new_folder = tmp_path_factory.mktemp("old"), tmp_path_factory.mktemp("new")
    assert _run_now(batch, new_folder) == _run_before(before, batch, old_folder)


def test_compare_json_stdout_is_byte_identical(before: Path, tmp_path: Path) -> None:
    """``evalband compare --json`` of a stored hidden regression: before, and now.

    Both stdouts are this checkout's document (the default procedure), byte for byte.
    """
    import evalband
    from evalband.analysis import compare_many
    from evalband.labs.hidden_regression import simulate_hidden_regression
    from evalband.report import comparison_json
    from evalband.store import open_store

    store = tmp_path / "s.sqlite"
    with open_store(store) as st:
        ids = simulate_hidden_regression(st, episodes=200, seed=3)
        base, cand = (evalband.load_run(i, st) for i in ids)
        (now,) = compare_many(base, [cand])
    outputs = []
    for src in (before / "src", ROOT / "src"):
        copy = tmp_path / f"copy-{len(outputs)}.sqlite"
        copy.write_bytes(store.read_bytes())  # each records its comparison in its own copy
        done = subprocess.run(
            [sys.executable, "-m", "evalband.cli", "compare", *ids, "--store", str(copy),
             "--json"], capture_output=True, text=True, check=False,
            env={**os.environ, "PYTHONPATH": str(src)})
        assert done.returncode in (0, 3, 4, 5), done.stderr
        outputs.append(done.stdout)
    assert [outputs[0], _no_metrics(outputs[1])] == [_no_metrics(comparison_json(now) + "\n")] * 2
    assert '"verdict": "regression"' in outputs[1]


@st.composite
def metric_cases(draw: st.DrawFn) -> dict[str, Any]:
    """:func:`cases` whose episodes record metrics in ``extra`` (some, all or none of them).

    Sometimes declared on the panel (one primary, so its slices join the family), with NaN,
    constant and missing values, and an ``extra`` that holds something else.
    """
    case = draw(cases())
    names = draw(st.lists(st.sampled_from(["return", "coverage", "steps_left"]), unique=True,
                          max_size=2))
    if names and draw(st.booleans()):
        case["panel"]["metrics"] = [{"name": names[0], "primary": draw(st.booleans())}]
    value = st.none() | st.floats(-3.0, 3.0) | st.just(1.0) | st.just(float("nan"))
    for episodes in case["runs"]:
        for e in episodes:
            kind = draw(st.sampled_from(["metrics", "metrics", "other", "none"]))
            metrics = {n: v for n in names if (v := draw(value)) is not None}
            e["extra"] = ({"metrics": metrics} if kind == "metrics" and names
                          else {"note": "x"} if kind == "other" else {})
    return case


def _fixed_metric_cases() -> list[dict[str, Any]]:
    """Two cases sure to compare metrics (a primary one declared), in memory and stored."""
    import numpy as np

    rng = np.random.default_rng(34)
    spec = {"name": "p", "env": "evalband/Coin-v0", "seed": 0, "episodes": 6, "repeats": 1,
            "budget": {"steps": 1}, "factors": {"f0": ["v0", "v1"]},
            "metrics": [{"name": "return", "primary": True}]}
    runs = [[{"cell": f"f0={v}", "episode": e, "repeat": 0,
              "outcome": "success" if rng.random() < 0.6 else "failure", "assisted": False,
              "interventions": 0, "latency_ms_p95": None, "time_to_success_s": None,
              "extra": ({"metrics": {"return": float(rng.normal()), "coverage": 0.5}}
                        if e % 3 else {"note": "x"})}
             for v in ("v0", "v1") for e in range(6)] for _ in range(2)]
    return [{"panel": spec, "runs": runs, "store": store, "confidence": 0.95, "effect": 0.1,
             "eaf": False} for store in (False, True)]


@settings(max_examples=2, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(metric_cases(), min_size=4, max_size=4))
def test_comparisons_with_metrics_are_byte_identical_to_the_code_before(
        before_metrics: Path, tmp_path_factory: pytest.TempPathFactory,
        batch: list[dict[str, Any]]) -> None:
    """Every byte, the metric rows included, in memory and from a store."""
    batch = [*_fixed_metric_cases(), *batch]
    for i, case in enumerate(batch):
        case["index"] = i
    old_folder, new_folder = tmp_path_factory.mktemp("old"), tmp_path_factory.mktemp("new")
    now = _run_now(batch, new_folder, METRICS_WORKER, keep_metrics=True)
    assert now == _run_before(before_metrics, batch, old_folder)
    assert all('"metric": "return"' in texts[0] for texts in now[:2])  # metrics compared
