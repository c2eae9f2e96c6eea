"""The reaching lab's learned-policy exercise (seed 002): generate, split, train, evaluate.

Specification: the reaching-lab seed (``002_4e7e9c5b524a571b``), "Evaluate the learned policy
from the shared exercise". Four stages share one directory; each writes its files there and
records the sha256 of what it read, so a later stage can refuse stale inputs:

=============  =====================================================================
stage          writes
=============  =====================================================================
``generate``   ``demos.csv`` (episode, step, x, v, action) and ``demos.json`` (sha256)
``split``      ``split.json``: whole episodes to train / validation / final (16)
``train``      ``model.json``: affine candidates chosen by validation action MSE
``evaluate``   ``summary.json``, ``rollout-results.csv``, ``rollouts.csv``,
               ``action-errors.csv``; checks the model's data and split references
=============  =====================================================================

The expert ``clip(-2x - 1.8v, -1, 1)`` demonstrates under nominal dynamics (g = 1, d = 0) from
``x ~ U(-0.8, 0.8)`` m, ``v ~ U(-0.15, 0.15)`` m/s, observing the exact state, for the full
30 actions of 0.2 s (a demonstration keeps holding the goal after the lab's success rule
fires; ``demos.json`` records where it fired). ``evaluate`` never fits: it loads the model,
rolls it and the expert out from the 16 final starts under nominal and changed dynamics
(``g ~ U(0.6, 1.4)``, ``d ~ U(-0.25, 0.25)``, drawn per start and shared by both) with the
env's own dynamics and outcome rule, and pairs the outcomes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalband._util.validate import as_count
from evalband.analysis import paired_counts, summarize
from evalband.episode import EpisodeRecord, Outcome
from evalband.errors import InvalidInputError
from evalband.labs._reach_bc_core import (
    CHANGED_DISTURBANCE,
    CHANGED_GAIN,
    DEFAULT_EPISODES,
    DEFAULT_SEED,
    DT,
    MAX_STEPS,
    V_RANGE,
    X_RANGE,
    Policy,
    Rollouts,
    changed_dynamics,
    draw_starts,
    simulate,
    split_episodes,
)
from evalband.labs._reach_bc_files import (
    DATA_FILE,
    DEMO_COLUMNS,
    SPLIT_FILE,
    ReferenceMismatchError,
    check_reference,
    demo_rows,
    demo_starts,
    episode_ids,
    load_json,
    read_demos,
    sha256,
    write_csv,
    write_json,
)
from evalband.labs._reach_bc_fit import AffinePolicy, action_mse, select_candidate
from evalband.policies.reach1d import expert

__all__ = [
    "DATA_FILE",
    "DATA_MANIFEST",
    "SPLIT_FILE",
    "MODEL_FILE",
    "SUMMARY_FILE",
    "RESULTS_FILE",
    "ROLLOUTS_FILE",
    "ACTION_ERRORS_FILE",
    "DEMO_COLUMNS",
    "RESULT_COLUMNS",
    "ROLLOUT_COLUMNS",
    "ACTION_ERROR_COLUMNS",
    "TRIALS",
    "ReferenceMismatchError",
    "generate_demonstrations",
    "split_demonstrations",
    "train_policy",
    "evaluate_policy",
]

DATA_MANIFEST, MODEL_FILE = "demos.json", "model.json"
SUMMARY_FILE, RESULTS_FILE, ROLLOUTS_FILE, ACTION_ERRORS_FILE = (
    "summary.json", "rollout-results.csv", "rollouts.csv", "action-errors.csv"
)
RESULT_COLUMNS = ("trial", "policy", "dynamics", "start", "x0", "v0", "gain", "disturbance",
                  "outcome", "terminated", "truncated", "steps", "time_s")
"""``rollout-results.csv``: one row per rollout."""
ROLLOUT_COLUMNS = ("trial", "policy", "dynamics", "start", "step", "t", "x", "v", "action",
                   "streak", "terminated", "truncated")
"""``rollouts.csv``: one row per env step (the command held, then the sample it reached)."""
ACTION_ERROR_COLUMNS = ("split", "episodes", "samples", "mse", "max_abs_error")
"""``action-errors.csv``: offline action error of the learned policy at expert states."""
TRIALS: tuple[tuple[str, str], ...] = (
    ("nominal", "learned"), ("nominal", "expert"), ("changed", "learned"), ("changed", "expert")
)
"""``(dynamics, policy)`` of each trial, in the seed's table order."""
_PARTS = ("train", "validation", "final")


def generate_demonstrations(
    out: str | Path, *, seed: int = DEFAULT_SEED, episodes: int = DEFAULT_EPISODES
) -> dict[str, Any]:
    """Roll out the expert under nominal dynamics and write ``demos.csv`` + ``demos.json``.

    Args:
        out: the exercise directory (created if needed).
        seed: seed of the start draws (:func:`~evalband.labs._reach_bc_core.draw_starts`).
        episodes: demonstrations to record (>= 18; 80 gives a 48/16/16 split).

    Returns:
        The manifest written to ``demos.json``.

    >>> import tempfile
    >>> m = generate_demonstrations(tempfile.mkdtemp(), episodes=20)
    >>> m["rows"], m["lab_outcomes"]
    (600, {'success': 20, 'failure': 0, 'timeout': 0})
    """
    directory = Path(out)
    n = as_count(episodes, "episodes")
    split_episodes(n, 0)  # refuse too few episodes before anything is written
    x0, v0 = draw_starts(n, seed)
    demo = simulate(expert, x0, v0)
    directory.mkdir(parents=True, exist_ok=True)
    rows = zip(
        np.repeat(np.arange(n), MAX_STEPS).tolist(), np.tile(np.arange(MAX_STEPS), n).tolist(),
        demo.x[:, :MAX_STEPS].ravel().tolist(), demo.v[:, :MAX_STEPS].ravel().tolist(),
        demo.action.ravel().tolist(), strict=True,
    )
    sha = write_csv(directory / DATA_FILE, DEMO_COLUMNS, rows)
    outcomes = demo.outcome
    manifest = {
        "exercise": "reach-bc",
        "data": {"file": DATA_FILE, "sha256": sha},
        "seed": int(seed),
        "episodes": n,
        "rows": n * MAX_STEPS,
        "expert": "u = clip(-2 x - 1.8 v, -1, 1)",
        "observation": "exact position and velocity (no position noise)",
        "dynamics": {"gain": 1.0, "disturbance": 0.0},
        "dt_s": DT,
        "actions_per_episode": MAX_STEPS,
        "x0_range_m": list(X_RANGE),
        "v0_range_m_s": list(V_RANGE),
        "lab_outcomes": {k: outcomes.count(k) for k in ("success", "failure", "timeout")},
        "lab_outcome_step": demo.steps.tolist(),
    }
    write_json(directory / DATA_MANIFEST, manifest)
    return manifest


def split_demonstrations(out: str | Path, *, seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """Assign whole demonstration episodes to train / validation / final; write ``split.json``.

    The final split holds exactly 16 episodes; their starts are the evaluation starts. The
    data file must still match the sha256 that ``generate`` recorded.

    Args:
        out: the exercise directory.
        seed: seed of the permutation (:func:`~evalband.labs._reach_bc_core.split_episodes`).

    Returns:
        The split written to ``split.json``.

    Raises:
        ReferenceMismatchError: ``demos.csv`` changed after ``generate``.

    >>> import tempfile
    >>> out = tempfile.mkdtemp()
    >>> _ = generate_demonstrations(out)
    >>> split_demonstrations(out)["counts"]
    {'train': 48, 'validation': 16, 'final': 16}
    """
    directory = Path(out)
    manifest = load_json(directory, DATA_MANIFEST, "generate")
    data_sha = check_reference(directory, manifest.get("data"), DATA_FILE, "data", DATA_MANIFEST,
                                "restore demos.csv or re-run `evalband lab reach-bc generate`")
    demos = read_demos(directory / DATA_FILE)
    episodes = int(demos["episode"].max()) + 1
    parts = split_episodes(episodes, seed)
    x0, v0 = demo_starts(demos, parts["final"])
    split = {
        "exercise": "reach-bc",
        "data": {"file": DATA_FILE, "sha256": data_sha},
        "seed": int(seed),
        "counts": {name: int(parts[name].size) for name in _PARTS},
        **{name: parts[name].tolist() for name in _PARTS},
        "final_starts": [
            {"start": i, "episode": int(e), "x0": float(a), "v0": float(b)}
            for i, (e, a, b) in enumerate(zip(parts["final"], x0, v0, strict=True))
        ],
    }
    write_json(directory / SPLIT_FILE, split)
    return split


def train_policy(out: str | Path) -> dict[str, Any]:
    """Fit the affine candidates on train episodes, choose by validation action MSE.

    Only train and validation rows are read into the fit and the choice; the final
    split's rows are never passed on. ``model.json`` records the weights, every candidate's
    errors, and the sha256 of the data and of ``split.json``.

    Args:
        out: the exercise directory.

    Returns:
        The model written to ``model.json``.

    Raises:
        ReferenceMismatchError: ``demos.csv`` changed after ``split``.

    >>> import tempfile
    >>> out = tempfile.mkdtemp()
    >>> _ = generate_demonstrations(out), split_demonstrations(out)
    >>> model = train_policy(out)
    >>> len(model["candidates"]), -2.0 < model["weights"]["w_x"] < -1.5
    (8, True)
    """
    directory = Path(out)
    split = load_json(directory, SPLIT_FILE, "split")
    data_sha = check_reference(directory, split.get("data"), DATA_FILE, "data", SPLIT_FILE,
                                "restore demos.csv or re-run `evalband lab reach-bc split`")
    split_sha = sha256(directory / SPLIT_FILE)
    demos = read_demos(directory / DATA_FILE)
    train = demo_rows(demos, episode_ids(split, "train"))
    validation = demo_rows(demos, episode_ids(split, "validation"))
    best, candidates = select_candidate(train, validation)
    chosen = candidates[best]
    policy = AffinePolicy(**chosen["weights"])
    model = {
        "exercise": "reach-bc",
        "policy": "affine",
        "formula": policy.formula,
        "weights": policy.as_dict(),
        "chosen": chosen["name"],
        "selection": "lowest validation action MSE (ties: earlier candidate); final never read",
        "candidates": candidates,
        "samples": {"train": int(train[1].size), "validation": int(validation[1].size)},
        "references": {
            "data": {"file": DATA_FILE, "sha256": data_sha},
            "split": {"file": SPLIT_FILE, "sha256": split_sha},
        },
    }
    write_json(directory / MODEL_FILE, model)
    return model


def evaluate_policy(out: str | Path, *, seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """Roll out the saved model and the expert on the 16 final starts; write the results.

    Checks the model's data and split references first (no refit). Each final start is
    played under nominal dynamics and under changed dynamics drawn per start from ``seed``
    (:func:`~evalband.labs._reach_bc_core.changed_dynamics`), shared by both policies.

    Args:
        out: the exercise directory.
        seed: seed of the changed-dynamics draws.

    Returns:
        The summary written to ``summary.json``.

    Raises:
        ReferenceMismatchError: the data file or ``split.json`` changed after ``train``.

    >>> import tempfile
    >>> out = tempfile.mkdtemp()
    >>> _ = generate_demonstrations(out), split_demonstrations(out), train_policy(out)
    >>> summary = evaluate_policy(out)
    >>> [(t["trial"], t["successes"], t["attempts"]) for t in summary["trials"][:2]]
    [('nominal-learned', 16, 16), ('nominal-expert', 16, 16)]
    """
    directory = Path(out)
    model = load_json(directory, MODEL_FILE, "train")
    refs, weights = model.get("references"), model.get("weights")
    if not isinstance(refs, dict) or not isinstance(weights, dict):
        raise InvalidInputError(
            f"{directory / MODEL_FILE} has no references/weights: it is not a reach-bc model; "
            "re-run `evalband lab reach-bc train`"
        )
    check_reference(directory, refs.get("data"), DATA_FILE, "data", MODEL_FILE,
                     f"restore {DATA_FILE}, or re-run `evalband lab reach-bc split` and `train` "
                     "on the new data before evaluating")
    split_sha = check_reference(directory, refs.get("split"), SPLIT_FILE, "split", MODEL_FILE,
                                 f"restore {SPLIT_FILE}, or re-run `evalband lab reach-bc train` "
                                 "on the new split before evaluating")
    split = load_json(directory, SPLIT_FILE, "split")
    demos = read_demos(directory / DATA_FILE)
    policy = _policy(weights, directory / MODEL_FILE)
    final = episode_ids(split, "final")
    x0, v0 = demo_starts(demos, final)
    gain, disturbance = changed_dynamics(final.size, seed)
    dyn = {"nominal": (np.ones(final.size), np.zeros(final.size)),
           "changed": (gain, disturbance)}
    controllers: dict[str, Policy] = {"learned": policy, "expert": expert}
    results, steps_rows, records = [], [], {}
    for dynamics, name in TRIALS:
        g, d = dyn[dynamics]
        r = simulate(controllers[name], x0, v0, g, d)
        trial = f"{dynamics}-{name}"
        records[trial] = _records(r, name, dynamics, final, split_sha)
        results.extend(_result_rows(r, trial, name, dynamics, (x0, v0, g, d)))
        steps_rows.extend(_step_rows(r, trial, name, dynamics))
    errors = []
    for part in _PARTS:
        ids = episode_ids(split, part)
        states, actions = demo_rows(demos, ids)
        gap = np.abs(policy(states)[:, 0] - actions)
        errors.append((part, int(ids.size), int(actions.size),
                       action_mse(policy, states, actions), float(gap.max())))
    write_csv(directory / RESULTS_FILE, RESULT_COLUMNS, results)
    write_csv(directory / ROLLOUTS_FILE, ROLLOUT_COLUMNS, steps_rows)
    write_csv(directory / ACTION_ERRORS_FILE, ACTION_ERROR_COLUMNS, errors)
    summary = _summary(model, policy, seed, final, (x0, v0, gain, disturbance), records, errors)
    write_json(directory / SUMMARY_FILE, summary)
    return summary


def _policy(weights: dict[str, Any], path: Path) -> AffinePolicy:
    try:
        values = {k: float(weights[k]) for k in ("w_x", "w_v", "b", "limit")}
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"{path}: weights need numbers w_x, w_v, b, limit ({exc!r}); re-run `train`"
        ) from None
    if not all(np.isfinite(list(values.values()))):
        raise InvalidInputError(f"{path}: weights must be finite, got {values}")
    return AffinePolicy(**values)


def _summary(model: dict[str, Any], policy: AffinePolicy, seed: int, final: NDArray[np.int64],
             condition: tuple[NDArray[np.float64], ...], records: dict[str, list[EpisodeRecord]],
             errors: list[tuple[str, int, int, float, float]]) -> dict[str, Any]:
    x0, v0, gain, disturbance = condition
    trials = []
    for dynamics, name in TRIALS:
        s = summarize(records[f"{dynamics}-{name}"])
        assert s.rate is not None  # 16 attempts, never empty
        trials.append({
            "trial": f"{dynamics}-{name}", "policy": name, "dynamics": dynamics,
            "successes": s.successes, "attempts": s.n, "boundary": s.counts["failure"],
            "timeouts": s.counts["timeout"], "success_rate": s.rate.estimate,
            "wilson_95": {"low": s.rate.low, "high": s.rate.high},
            "mean_time_among_successes_s": (
                "no successes" if s.mean_time_to_success_s is None
                else round(s.mean_time_to_success_s, 9)
            ),
        })
    paired = {}
    for dynamics in ("nominal", "changed"):
        p = paired_counts(records[f"{dynamics}-learned"], records[f"{dynamics}-expert"])
        paired[dynamics] = {"both": p.both, "learned_only": p.a_only, "expert_only": p.b_only,
                            "neither": p.neither, "pairs": p.n}
    return {
        "exercise": "reach-bc",
        "model": {"formula": policy.formula, "chosen": model.get("chosen"),
                  "weights": policy.as_dict()},
        "references": model["references"],
        "seed": int(seed),
        "settings": {
            "dt_s": DT, "max_steps": MAX_STEPS, "budget_s": round(DT * MAX_STEPS, 9),
            "observation": "exact position and velocity",
            "success": "3 consecutive post-action samples with |x| <= 0.1 m, |v| <= 0.15 m/s",
            "boundary": "a post-action sample with |x| >= 1.25 m",
            "priority": "boundary, then success, then timeout",
            "nominal": {"gain": 1.0, "disturbance": 0.0},
            "changed": {"gain_range": list(CHANGED_GAIN),
                        "disturbance_range_m_s2": list(CHANGED_DISTURBANCE)},
        },
        "starts": [
            {"start": i, "episode": int(e), "x0": float(a), "v0": float(b), "gain": float(g),
             "disturbance": float(d)}
            for i, (e, a, b, g, d) in enumerate(zip(final, x0, v0, gain, disturbance,
                                                    strict=True))
        ],
        "trials": trials,
        "paired_learned_vs_expert": paired,
        "offline_action_mse": {part: mse for part, _, _, mse, _ in errors},
        "files": [SUMMARY_FILE, RESULTS_FILE, ROLLOUTS_FILE, ACTION_ERRORS_FILE],
    }


def _records(r: Rollouts, policy: str, dynamics: str, final: NDArray[np.int64],
             fingerprint: str) -> list[EpisodeRecord]:
    out = []
    for i, outcome in enumerate(r.outcome):
        time_s = round(int(r.steps[i]) * DT, 9)
        out.append(EpisodeRecord(
            run_id=f"reach-bc-{policy}", policy=policy, panel_fingerprint=fingerprint,
            cell=f"dynamics={dynamics}", slices={"dynamics": dynamics}, episode=i, repeat=0,
            condition_seed=int(final[i]), outcome=Outcome(outcome),
            terminated=bool(r.terminated[i]), truncated=bool(r.truncated[i]),
            steps=int(r.steps[i]), sim_time_s=time_s,
            time_to_success_s=time_s if outcome == "success" else None,
        ))
    return out


def _result_rows(r: Rollouts, trial: str, policy: str, dynamics: str,
                 condition: tuple[NDArray[np.float64], ...]) -> list[tuple[Any, ...]]:
    x0, v0, g, d = condition
    return [
        (trial, policy, dynamics, i, float(x0[i]), float(v0[i]), float(g[i]), float(d[i]),
         outcome, bool(r.terminated[i]), bool(r.truncated[i]), int(r.steps[i]),
         round(int(r.steps[i]) * DT, 9))
        for i, outcome in enumerate(r.outcome)
    ]


def _step_rows(r: Rollouts, trial: str, policy: str, dynamics: str) -> list[tuple[Any, ...]]:
    rows = []
    for i in range(r.code.size):
        last = int(r.steps[i])
        for k in range(1, last + 1):
            end = k == last
            rows.append((trial, policy, dynamics, i, k, round(k * DT, 9), float(r.x[i, k]),
                         float(r.v[i, k]), float(r.action[i, k - 1]), int(r.streak[i, k - 1]),
                         end and bool(r.terminated[i]), end and bool(r.truncated[i])))
    return rows
