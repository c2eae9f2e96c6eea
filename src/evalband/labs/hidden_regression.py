"""The hidden-regression lab (seed 003): an aggregate that holds while one embodiment regresses.

Two simulated policies, ``baseline`` and ``candidate``, are played on one pinned panel with
three embodiment slices and logged into the run store with the :class:`~evalband.run.Recorder`,
as if they came from a robot loop:

======================  ========  =========  =================================================
embodiment              baseline  candidate  role
======================  ========  =========  =================================================
``widowx_250``          0.7       0.9        easy slice (tabletop pick-and-place): improves
``franka_panda``        0.6       0.4        hardest slice (precision insertion): regresses
``mobile_manipulator``  0.8       0.8        unchanged
======================  ========  =========  =================================================

The easy-slice gain and the hard-slice drop are the seed's lab numbers (0.7 -> 0.9 and
0.6 -> 0.4); with the third slice unchanged, the equal-weight aggregate is 0.70 for both
policies in expectation: the headline "holds flat" while the hardest embodiment falls by 20
points (the seed's composite story: the surgical-precision slice fell from 61% to 43% under a
rising mean; its worked example makes the Franka the hardest slice).

Outcomes are paired by common random numbers: each episode's condition seed drives one uniform
``u = np.random.default_rng(condition_seed).random()`` shared by both policies, and a policy
succeeds iff ``u < p(policy, slice)``. So the two runs see the same conditions, as two real
policies on one panel do, and every discordant pair on a slice points the same way. (It is the
same first draw the coin environment ``evalband/Coin-v0`` makes at reset.)

With the default seed (:data:`DEFAULT_SEED` = 4), 200 episodes per slice flag the hidden
regression (the hard slice's paired interval lies below 0 while the aggregate rises slightly),
and 10 episodes per slice leave it possible, not established (negative estimate, interval
containing 0). Seed 0 does not show the second half: its first 10 hard-slice episodes hold four
one-sided discordant pairs, enough for the paired interval to exclude 0.
"""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING

import numpy as np

from evalband.errors import InvalidParameterError
from evalband.panel import Panel, load_panel

if TYPE_CHECKING:
    from evalband.store import RunStore

__all__ = [
    "HIDDEN_REGRESSION_RATES",
    "EASY_SLICE",
    "HARD_SLICE",
    "UNCHANGED_SLICE",
    "FACTOR",
    "POLICIES",
    "LATENCY_P95_MS",
    "DEFAULT_SEED",
    "hidden_regression_panel",
    "simulate_hidden_regression",
]

FACTOR = "embodiment"
"""The panel's one factor."""

EASY_SLICE = "widowx_250"
"""The easy slice: the candidate improves it (0.7 -> 0.9)."""

HARD_SLICE = "franka_panda"
"""The hardest slice: the candidate regresses on it (0.6 -> 0.4)."""

UNCHANGED_SLICE = "mobile_manipulator"
"""The slice both policies share a rate on (0.8 -> 0.8)."""

HIDDEN_REGRESSION_RATES: dict[str, tuple[float, float]] = {
    EASY_SLICE: (0.7, 0.9),
    HARD_SLICE: (0.6, 0.4),
    UNCHANGED_SLICE: (0.8, 0.8),
}
"""Embodiment -> (baseline, candidate) success probability, in the panel's cell order."""

POLICIES: tuple[str, str] = ("baseline", "candidate")
"""The two simulated policies, baseline first."""

LATENCY_P95_MS: dict[str, float] = {"baseline": 20.0, "candidate": 30.0}
"""Median of each policy's per-episode p95 inference latency, milliseconds."""

DEFAULT_SEED = 4
"""The panel seed where 200 episodes flag the regression and 10 do not establish it."""

_LATENCY_SPREAD = 0.1  # log-scale standard deviation of the per-episode p95 latency
_STEP_S = 0.1  # the coin environment's dt: one step of simulated time


def _check_whole(value: object, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < minimum:
        raise InvalidParameterError(
            f"{name} must be a whole number >= {minimum}; got {value!r}"
        )
    return int(value)


def hidden_regression_panel(episodes: int = 200, seed: int = DEFAULT_SEED) -> Panel:
    """The lab's pinned panel: three embodiments on the coin stand-in, one step per episode.

    The panel is named ``hidden-regression-{episodes}``; its cells are
    ``embodiment=widowx_250``, ``embodiment=franka_panda`` and
    ``embodiment=mobile_manipulator``, each with ``episodes`` episodes and the condition
    seeds :func:`evalband.panel.default_condition_seed` gives for ``seed`` (prefix-stable:
    the 10-episode panel's conditions are the first 10 of the 200-episode panel's).

    Args:
        episodes: episodes per embodiment (>= 1).
        seed: the panel seed (>= 0).

    Raises:
        InvalidParameterError: ``episodes`` or ``seed`` is not a whole number in range.

    >>> p = hidden_regression_panel(10, seed=4)
    >>> p.name, [c.key for c in p.cells()][1], len(p.episode_specs())
    ('hidden-regression-10', 'embodiment=franka_panda', 30)
    """
    n = _check_whole(episodes, "episodes", 1)
    s = _check_whole(seed, "seed", 0)
    story = ", ".join(
        f"{name} {base:.1f} -> {cand:.1f}" for name, (base, cand) in HIDDEN_REGRESSION_RATES.items()
    )
    return load_panel(
        {
            "name": f"hidden-regression-{n}",
            "description": (
                "Seed 003 lab: an aggregate that holds while the hardest embodiment regresses "
                f"(simulated success probabilities, baseline -> candidate: {story})."
            ),
            "env": "evalband/Coin-v0",
            "episodes": n,
            "seed": s,
            "budget": {"steps": 1},
            "factors": {FACTOR: {name: {"length": 1} for name in HIDDEN_REGRESSION_RATES}},
        }
    )


def _latency_p95(condition_seed: int, policy_index: int) -> float:
    """A reproducible per-episode p95 latency, log-normal around the policy's median."""
    sequence = np.random.SeedSequence(condition_seed, spawn_key=(policy_index + 1,))
    z = float(np.random.default_rng(sequence).standard_normal())
    return LATENCY_P95_MS[POLICIES[policy_index]] * math.exp(_LATENCY_SPREAD * z)


def simulate_hidden_regression(
    store: RunStore,
    *,
    episodes: int = 200,
    seed: int = DEFAULT_SEED,
    run_prefix: str = "hidden-regression",
) -> tuple[str, str]:
    """Simulate seed 003's hidden regression into the store as two paired runs.

    Each episode of :func:`hidden_regression_panel` draws one uniform
    ``u = np.random.default_rng(condition_seed).random()`` shared by both policies (common
    random numbers), and a policy succeeds iff ``u < p`` with ``p`` its rate on the episode's
    embodiment (:data:`HIDDEN_REGRESSION_RATES`); otherwise the episode is a task failure.
    Every episode takes one step (0.1 s of simulated time), has no interventions, and gets a
    p95 policy latency drawn log-normally around 20 ms (baseline) or 30 ms (candidate) from
    a stream spawned off its condition seed. Episodes are logged with the
    :class:`~evalband.run.Recorder` (each durable when logged) as runs
    ``{run_prefix}-{episodes}-s{seed}-baseline`` and ``...-candidate``.

    Idempotent: a run already complete in the store is reused untouched; a run left
    incomplete is finished (its missing episodes are logged; the draws are deterministic, so
    the result is the same as one uninterrupted simulation).

    Args:
        store: the run store to write into.
        episodes: episodes per embodiment (the seed's lab compares 10 with 200).
        seed: the panel seed; :data:`DEFAULT_SEED` is the documented default.
        run_prefix: the start of both run ids.

    Returns:
        ``(baseline_run_id, candidate_run_id)``.

    Raises:
        InvalidParameterError: ``episodes`` < 1, ``seed`` < 0, or an empty ``run_prefix``.
        PanelMismatchError: a run with one of these ids exists on another panel.

    >>> import tempfile
    >>> from evalband.store import open_store
    >>> with tempfile.TemporaryDirectory() as d, open_store(f"{d}/runs.sqlite") as store:
    ...     base, cand = simulate_hidden_regression(store, episodes=10)
    ...     print(cand, store.count_episodes(base), store.get_run(cand).status)
    hidden-regression-10-s4-candidate 30 finished
    """
    from evalband.run import Recorder

    panel = hidden_regression_panel(episodes, seed)
    if not isinstance(run_prefix, str) or not run_prefix:
        raise InvalidParameterError(f"run_prefix must be a non-empty string; got {run_prefix!r}")
    specs = panel.episode_specs()
    run_ids = tuple(f"{run_prefix}-{panel.episodes}-s{panel.seed}-{name}" for name in POLICIES)
    for index, (policy, run_id) in enumerate(zip(POLICIES, run_ids, strict=True)):
        manifest = store.get_run(run_id)
        done = store.done_keys(run_id) if manifest is not None else set()
        if manifest is not None and manifest.panel_fingerprint == panel.fingerprint:
            if len(done) >= len(specs):
                continue  # complete on this panel: reuse it untouched
        with Recorder(store, panel, policy, run_id=run_id) as recorder:
            for spec in specs:
                if spec.key in done:
                    continue
                p = HIDDEN_REGRESSION_RATES[spec.slices[FACTOR]][index]
                u = float(np.random.default_rng(spec.condition_seed).random())
                recorder.log(
                    cell=spec.cell,
                    episode=spec.episode,
                    repeat=spec.repeat,
                    outcome="success" if u < p else "failure",
                    steps=1,
                    sim_time_s=_STEP_S,
                    latency_ms_p95=_latency_p95(spec.condition_seed, index),
                )
    return run_ids[0], run_ids[1]
