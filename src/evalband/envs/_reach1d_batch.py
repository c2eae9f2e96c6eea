"""The reaching lab's vectorised batch simulator: every episode in lockstep with numpy.

Reaching-lab seed (``002_4e7e9c5b524a571b``): the same dynamics (:func:`advance`) and
outcome rule (:func:`judge`) as :class:`~evalband.envs.reach1d.Reach1DEnv`, applied to
arrays of episodes, with one policy call per step on the stacked observations of the
still-active episodes.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evalband._util.jit import compiled, use_compiled
from evalband.envs._lcg import _stream_coefficients
from evalband.envs._reach1d_core import (
    BOUNDARY,
    DRAWS_PER_EPISODE,
    FAILURE,
    OUTCOME_NAMES,
    SETTLE_SAMPLES,
    SUCCESS,
    SUCCESS_REWARD,
    TIMEOUT,
    EpisodeStarts,
    Reach1DConditions,
    _check_dt,
    _check_max_steps,
    _check_noise,
    advance,
    episode_starts,
    settle,
    unit_errors,
)
from evalband.envs._reach1d_kernel import lockstep_step
from evalband.errors import InvalidInputError, InvalidParameterError

__all__ = ["Policy", "Reach1DBatchResult", "rollout_batch", "batch_rollout_specs"]

Policy = Callable[[NDArray[np.float64]], ArrayLike]
"""A vectorised policy: ``obs_batch (B, 2) -> commands (B, 1) or (B,)``."""


def as_commands(
    raw: object, n: int, what: str = "policy output", *, check_finite: bool = True
) -> NDArray[np.float64]:
    """Coerce a policy's output to ``n`` finite commands of shape ``(n,)``.

    Accepted shapes: ``(n,)`` or ``(n, 1)`` (and ``()`` / ``(1, 1)`` when ``n == 1``). The
    commands are not clipped: saturation is the controller's business (the lab's
    controllers saturate at +-1 themselves).

    Args:
        raw: what the policy returned.
        n: how many episodes it acted for.
        what: the name used in error messages.
        check_finite: also refuse NaN and infinite commands (the compiled kernel checks
            them itself in its pass, and passes ``False``).

    Returns:
        A float64 array of shape ``(n,)``.

    Raises:
        InvalidInputError: non-numeric output, a wrong shape or a non-finite command.

    >>> as_commands([[0.5], [-2.0]], 2).tolist()
    [0.5, -2.0]
    """
    try:
        arr = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"{what} must be numeric commanded acceleration(s), got {type(raw).__name__}: {exc}"
        ) from None
    allowed = {(n,), (n, 1)} | ({(), (1, 1)} if n == 1 else set())
    if arr.shape not in allowed:
        expected = "shape (1,)" if n == 1 else f"shape ({n}, 1) or ({n},)"
        raise InvalidInputError(f"{what} must have {expected}, got shape {arr.shape}")
    flat = arr.reshape(n)
    # One cheap pass: a sum is finite only if every term is; a non-finite sum (a NaN or
    # inf term, or finite terms overflowing) is settled by the exact per-element test.
    if check_finite and not math.isfinite(np.add.reduce(flat)) and not np.all(np.isfinite(flat)):
        first = float(flat[~np.isfinite(flat)][0])
        raise InvalidInputError(f"{what} must be finite, got {first!r}")
    return flat


@dataclass(frozen=True)
class Reach1DBatchResult:
    """Per-episode results of :func:`rollout_batch` (one entry per condition seed).

    Attributes:
        condition_seeds: the episodes' condition seeds.
        outcome: ``"success"``, ``"failure"`` or ``"timeout"``.
        steps: actions taken.
        terminated: success or boundary failure.
        truncated: timeout.
        sim_time_s: ``steps * dt``.
        final_x: true position at the last sample.
        final_v: velocity at the last sample.
        policy_calls: number of policy calls (one per lockstep step).
        policy_seconds: total seconds spent inside the policy.
        wall_seconds: total seconds of the call.
        policy_call_seconds: seconds of each policy call, in call order.
    """

    condition_seeds: NDArray[np.uint64]
    outcome: NDArray[np.str_]
    steps: NDArray[np.int64]
    terminated: NDArray[np.bool_]
    truncated: NDArray[np.bool_]
    sim_time_s: NDArray[np.float64]
    final_x: NDArray[np.float64]
    final_v: NDArray[np.float64]
    policy_calls: int
    policy_seconds: float
    wall_seconds: float
    policy_call_seconds: NDArray[np.float64]

    def __len__(self) -> int:
        return int(self.outcome.shape[0])

    @property
    def time_to_success_s(self) -> NDArray[np.float64]:
        """``sim_time_s`` for successes, NaN otherwise (its own denominator)."""
        return np.where(self.outcome == "success", self.sim_time_s, np.nan)

    def counts(self) -> dict[str, int]:
        """Episodes per outcome.

        >>> from evalband.envs._reach1d_core import episode_condition_seeds
        >>> from evalband.policies.reach1d import baseline
        >>> rollout_batch(baseline, episode_condition_seeds(7, 64)).counts()
        {'success': 9, 'failure': 7, 'timeout': 48}
        """
        return {name: int(np.sum(self.outcome == name)) for name in OUTCOME_NAMES[1:]}

    def reward_metrics(self) -> dict[str, NDArray[np.float64]]:
        """Per-episode ``return``, ``reward_max`` and ``reward_final`` of the env's rewards.

        What one-at-a-time play stores in ``extra["metrics"]``
        (:meth:`evalband.run._judge.Judge.metrics`), from the outcomes alone: the env pays
        ``SUCCESS_REWARD`` on the step an episode settles and ``0.0`` on every other step,
        and every episode takes at least one step, so all three are that reward for a
        success and ``0.0`` otherwise. Nothing is added to the simulation's steps.

        >>> from evalband.envs._reach1d_core import episode_condition_seeds
        >>> from evalband.policies.reach1d import damped
        >>> r = rollout_batch(damped, episode_condition_seeds(7, 2))
        >>> r.outcome.tolist(), r.reward_metrics()["return"].tolist()
        (['timeout', 'success'], [0.0, 1.0])
        """
        paid = np.where(self.outcome == OUTCOME_NAMES[SUCCESS], SUCCESS_REWARD, 0.0)
        paid.flags.writeable = False  # one array for the three (they are equal)
        return dict.fromkeys(("return", "reward_max", "reward_final"), paid)


def _per_episode_noise(noise: float | ArrayLike, size: int) -> NDArray[np.float64]:
    """One position-error bound per episode, validated, in a NEW array (callers own it)."""
    if isinstance(noise, numbers.Real) and not isinstance(noise, bool):
        return np.full(size, _check_noise(noise))
    arr = np.array(noise, dtype=np.float64).reshape(-1)  # a copy: never the caller's array
    if arr.shape[0] != size:
        raise InvalidParameterError(
            f"noise must be one number or one per episode ({size}), got {arr.shape[0]} values"
        )
    bad = ~np.isfinite(arr) | (arr < 0)
    if np.any(bad):
        raise InvalidParameterError(f"noise must be finite bounds in m >= 0, got {arr[bad][0]!r}")
    return arr


def _per_episode_max_steps(max_steps: int | ArrayLike, size: int) -> NDArray[np.int8]:
    """One action budget per episode (1..40, so int8), validated, in a new array."""
    if isinstance(max_steps, numbers.Integral) and not isinstance(max_steps, bool):
        return np.full(size, _check_max_steps(max_steps), dtype=np.int8)
    raw = np.asarray(max_steps).reshape(-1)
    if raw.shape[0] != size:
        raise InvalidParameterError(
            f"max_steps must be one number or one per episode ({size}), got {raw.shape[0]} values"
        )
    return np.asarray([_check_max_steps(m) for m in raw.tolist()], dtype=np.int8)


def rollout_batch(
    policy: Policy,
    condition_seeds: ArrayLike | Reach1DConditions,
    *,
    max_steps: int | ArrayLike = 30,
    dt: float = 0.2,
    noise: float | ArrayLike = 0.02,
    dynamics: str | Sequence[str] | NDArray[np.str_] | None = None,
    kernel: str = "auto",
) -> Reach1DBatchResult:
    """Roll out ``policy`` on many episodes in lockstep with numpy.

    Every step calls ``policy(obs_batch)`` ONCE on the stacked observations
    ``[x + noise * errors[k], v]`` of the still-active episodes (shape ``(B_active, 2)``, a
    fresh float64 array each step, stored column by column) and expects ``(B_active, 1)``
    or ``(B_active,)`` commands; ended episodes freeze (their rows are dropped from the
    batch, and the remaining rows may change order, so a policy must act row by row).
    Dynamics and outcome rule are the env's own (:func:`advance`, :func:`settle` /
    :func:`judge`), so outcomes, steps and flags equal :class:`Reach1DEnv`'s episode by
    episode (and the reaching-lab seed's program).

    Given seeds, only each episode's first four draws are made up front; the position
    error of step ``k`` (draw ``5 + k``) is jumped to when it is needed, for the episodes
    still running: the same numbers as :func:`conditions`, never the unused ones.

    Args:
        policy: vectorised controller ``obs_batch -> actions``.
        condition_seeds: one LCG state per episode (:func:`episode_condition_seeds`), or
            precomputed :func:`conditions`.
        max_steps: action budget, one or per episode (1..40).
        dt: hold time per action (s).
        noise: position-error bound, one or per episode.
        dynamics: :data:`DYNAMICS` option, one or per episode; ``None`` means ``"lab"``
            for seeds and must stay ``None`` with precomputed conditions (they carry it).
        kernel: what steps the episodes between policy calls: ``"numpy"`` (whole-array
            passes), ``"compiled"`` (one numba-compiled pass per step, the ``fast``
            extra; seeds only) or ``"auto"`` (compiled when numba is already loaded in
            this process, the episodes come from seeds and there are at least
            :data:`~evalband._util.jit.MIN_COMPILED_BATCH` of them; see
            :mod:`evalband._util.jit`). Every choice gives the same results bit for bit,
            and the policy sees the same rows in the same order.

    Returns:
        Per-episode outcomes plus policy-call totals.

    Raises:
        InvalidInputError: the policy returned the wrong shape or a non-finite command.
        InvalidParameterError: a bad setting, an unknown ``kernel``, ``"compiled"``
            without numba or with precomputed conditions.

    The seed's default panel (seed 7, 64 episodes, six-second budget):

    >>> from evalband.envs._reach1d_core import episode_condition_seeds
    >>> from evalband.policies.reach1d import baseline, damped
    >>> seeds = episode_condition_seeds(7, 64)
    >>> rollout_batch(damped, seeds).counts()
    {'success': 50, 'failure': 0, 'timeout': 14}
    >>> r = rollout_batch(baseline, seeds)
    >>> str(r.outcome[0]), float(r.sim_time_s[0])  # the lab's "Episode 1"
    ('failure', 2.6)
    """
    started = time.perf_counter()
    errors_t: NDArray[np.float64] | None = None
    if isinstance(condition_seeds, Reach1DConditions):
        if dynamics is not None:
            raise InvalidParameterError(
                "dynamics is fixed by the Reach1DConditions passed as condition_seeds; "
                "leave dynamics=None or pass seeds instead"
            )
        cond = condition_seeds
        start = EpisodeStarts(
            cond.condition_seeds, cond.x0, cond.v0, cond.gain, cond.disturbance, cond.dynamics
        )
        errors_t = cond.errors.T  # (40, B): one row per action index
    else:
        # Only the start is drawn here; each step jumps to its own error draw (lazily,
        # for the episodes still running): the same numbers as conditions().errors.
        start = episode_starts(condition_seeds, dynamics="lab" if dynamics is None else dynamics)
    size = len(start.x0)
    step_dt = _check_dt(dt)
    noise_all = _per_episode_noise(noise, size)
    budget_all = _per_episode_max_steps(max_steps, size)
    horizon = int(budget_all.max()) if size else 0

    code_out = np.zeros(size, dtype=np.int8)
    steps_out = np.zeros(size, dtype=np.int64)
    x_out = start.x0.copy()
    v_out = start.v0.copy()
    call_seconds: list[float] = []
    if kernel == "compiled" and errors_t is not None:
        raise InvalidParameterError(
            "kernel='compiled' draws the position errors from condition seeds; pass seeds, "
            "or use kernel='numpy' with precomputed conditions"
        )
    fast = use_compiled(kernel, size) and errors_t is None
    if horizon:
        run_steps = _lockstep_compiled if fast else _lockstep
        run_steps(
            policy, start, errors_t, noise_all, budget_all, horizon, step_dt, call_seconds,
            (code_out, steps_out, x_out, v_out),
        )

    names = np.asarray(OUTCOME_NAMES, dtype="<U7")
    return Reach1DBatchResult(
        condition_seeds=start.condition_seeds,
        outcome=names[code_out],
        steps=steps_out,
        terminated=(code_out == SUCCESS) | (code_out == FAILURE),
        truncated=code_out == TIMEOUT,
        sim_time_s=(steps_out * step_dt).astype(np.float64),
        final_x=x_out,
        final_v=v_out,
        policy_calls=len(call_seconds),
        policy_seconds=float(sum(call_seconds)),
        wall_seconds=time.perf_counter() - started,
        policy_call_seconds=np.asarray(call_seconds, dtype=np.float64),
    )


_HALF_RANGE = np.uint32(2**31)
_TINY = 2.0**-960  # below this a bound times 2**-31 could lose bits (subnormal)


def _lockstep(
    policy: Policy,
    start: EpisodeStarts,
    errors_t: NDArray[np.float64] | None,
    noise_all: NDArray[np.float64],
    budget_all: NDArray[np.int8],
    horizon: int,
    dt: float,
    call_seconds: list[float],
    out: tuple[NDArray[np.int8], NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]],
) -> None:
    """Step every episode in lockstep, writing each one's end into ``out`` (code, steps, x, v).

    The working arrays hold the ``n`` still-active episodes in their first ``n`` slots
    (``slot_row`` maps a slot to its batch row) and every operation writes into buffers
    allocated once. When episodes end, their slots are refilled with the last active ones
    ("swap-remove"): that moves only as many entries as ended, instead of re-gathering
    every active row. The active rows' order therefore changes, which no result depends on
    (the dynamics, the rule and the lab's policies act row by row).

    Position errors come from ``errors_t`` (``(40, B)``, precomputed conditions) or, when
    it is ``None``, are drawn lazily: error ``k`` is LCG draw ``5 + k`` of the episode's
    stream, one affine map of its seed (the jump-ahead table of
    :func:`~evalband.envs._lcg.lcg_affine`), computed only for the active episodes. The
    measured position ``x + NOISE * (2 u - 1)`` is then formed without rounding anything
    the seed does not: ``2 u - 1 = (state - 2**31) / 2**31`` is exact (a 32-bit integer
    scaled by a power of two), and ``state - 2**31`` is the state with its top bit flipped
    read as a signed integer, so ``NOISE * (2 u - 1)`` is ONE rounded product
    ``(NOISE / 2**31) * (state - 2**31)`` (the scale is exact unless the bound is below
    2**-960, where the two-step form is used).
    """
    size = len(start.x0)
    f64 = np.float64
    x, x_next = start.x0.astype(f64, copy=True), np.empty(size)
    v, v_next = start.v0.astype(f64, copy=True), np.empty(size)
    gain = start.gain.astype(f64, copy=True)
    disturbance = start.disturbance.astype(f64, copy=True)
    streak = np.zeros(size, dtype=np.int8)
    slot_row = np.arange(size)
    inside, failed = np.empty(size, dtype=np.bool_), np.empty(size, dtype=np.bool_)
    settled, done = np.empty(size, dtype=np.bool_), np.empty(size, dtype=np.bool_)
    carried: list[NDArray[Any]] = [x, v, gain, disturbance, streak, slot_row]
    eta: float | NDArray[np.float64] = float(noise_all[0])
    if not bool(np.all(noise_all == eta)):
        eta = noise_all.copy()
        carried.append(eta)
    budget: int | NDArray[np.int8] = int(budget_all[0])
    if not bool(np.all(budget_all == budget)):
        budget = budget_all.copy()
        carried.append(budget)
    if errors_t is None:
        seeds = start.condition_seeds.astype(np.uint32)
        carried.append(seeds)
        draw_state = np.empty(size, dtype=np.uint32)
        jump_a, jump_c = _stream_coefficients(DRAWS_PER_EPISODE)
        exact_fold = bool(np.all((noise_all == 0) | (noise_all >= _TINY)))
        if exact_fold:  # NOISE / 2**31, exact (a per-episode copy is scaled in place)
            eta *= 2.0**-31
    compacted = False  # slot i still holds batch row i
    n = size
    for k in range(horizon):
        obs_t = np.empty((2, n), dtype=f64)  # fresh (the policy may keep it); obs = obs_t.T
        measured = obs_t[0]
        eta_n = eta if isinstance(eta, float) else eta[:n]
        if errors_t is not None:
            row = errors_t[k]
            if compacted:
                row = np.take(row, slot_row[:n], out=measured, mode="clip")
            np.multiply(row[:n], eta_n, out=measured)  # NOISE * errors[k]
        else:  # error k = draw 5 + k: state (a_{5+k} s + c_{5+k}) mod 2**32
            state = np.multiply(seeds[:n], jump_a[4 + k], out=draw_state[:n])  # wraps
            if exact_fold:
                state += jump_c[4 + k] ^ _HALF_RANGE  # state - 2**31 as int32 bits
                measured[...] = state.view(np.int32)
                measured *= eta_n  # (NOISE / 2**31) (state - 2**31) = NOISE * (2 u - 1)
            else:
                state += jump_c[4 + k]
                unit_errors(state, out=measured)
                measured *= eta_n
        measured += x[:n]  # x + NOISE * errors[k]
        obs_t[1] = v[:n]
        obs = obs_t.T
        t0 = time.perf_counter()
        raw = policy(obs)
        call_seconds.append(time.perf_counter() - t0)
        u = as_commands(raw, n, "policy output")
        advance(x[:n], v[:n], u, gain[:n], disturbance[:n], dt, out=(x_next[:n], v_next[:n]))
        x, x_next, v, v_next = x_next, x, v_next, v
        carried[0], carried[1] = x, v
        abs_x = x_next[:n]  # the old state's buffers are free until the next step
        settle(x[:n], v[:n], streak[:n], abs_x, inside[:n], v_next[:n])
        # judge()'s priority: boundary failure, then success, then timeout.
        np.greater_equal(abs_x, BOUNDARY, out=failed[:n])
        np.greater_equal(streak[:n], SETTLE_SAMPLES, out=settled[:n])
        ended_now = np.logical_or(failed[:n], settled[:n], out=done[:n])
        if isinstance(budget, int):
            if k + 1 >= budget:
                ended_now[...] = True
        else:
            ended_now |= budget[:n] <= k + 1
        if not ended_now.any():
            continue
        remaining, moved = _retire(ended_now, failed, settled, k + 1, n, carried, out)
        if remaining == 0:
            return
        compacted = compacted or moved
        n = remaining


def _retire(
    ended_now: NDArray[np.bool_],
    failed: NDArray[np.bool_],
    settled: NDArray[np.bool_],
    steps: int,
    n: int,
    carried: list[NDArray[Any]],
    out: tuple[NDArray[np.int8], NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]],
) -> tuple[int, bool]:
    """Write the episodes that ended after ``steps`` steps into ``out`` and free their slots.

    ``carried`` holds the working arrays (``x``, ``v``, ..., ``slot_row``: slot to batch
    row, at index 5) whose first ``n`` slots are active. The ended slots below the new
    active count are refilled with the last active ones (swap-remove).

    Returns:
        The number of episodes still active and whether any slot was refilled.
    """
    code_out, steps_out, x_out, v_out = out
    x, v, slot_row = carried[0], carried[1], carried[5]
    slots = np.flatnonzero(ended_now)
    rows = slot_row[slots]
    code_out[rows] = np.where(
        failed[slots], FAILURE, np.where(settled[slots], SUCCESS, TIMEOUT)
    )
    steps_out[rows] = steps
    x_out[rows] = x[slots]
    v_out[rows] = v[slots]
    remaining = n - slots.size
    if remaining == 0:
        return 0, False
    holes = slots[: int(np.searchsorted(slots, remaining))]
    if not holes.size:
        return remaining, False
    fillers = remaining + np.flatnonzero(~ended_now[remaining:])
    for arr in carried:
        arr[holes] = arr[fillers]
    return remaining, True


def _lockstep_compiled(
    policy: Policy,
    start: EpisodeStarts,
    errors_t: NDArray[np.float64] | None,
    noise_all: NDArray[np.float64],
    budget_all: NDArray[np.int8],
    horizon: int,
    dt: float,
    call_seconds: list[float],
    out: tuple[NDArray[np.int8], NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]],
) -> None:
    """:func:`_lockstep` with everything between two policy calls in one compiled pass.

    :func:`~evalband.envs._reach1d_kernel.lockstep_step` advances, judges, records and
    compacts the active episodes and writes their next observations (into a fresh
    array each step: the policy may keep what it is given). Seeds only (``errors_t``
    must be ``None``). The kernel works IN the arrays of ``start``, ``noise_all`` and
    ``budget_all``, which :func:`rollout_batch` made for this call (no copies: fewer
    fresh pages on large batches); the seeds are copied (the result reports them).
    """
    del errors_t  # the compiled kernel draws from the seeds (checked by the caller)
    step = compiled(lockstep_step)
    size = len(start.x0)
    f64 = np.float64
    x, v, gain, disturbance = start.x0, start.v0, start.gain, start.disturbance
    streak = np.zeros(size, dtype=np.int8)
    slot_row = np.arange(size, dtype=np.int64)
    seeds = start.condition_seeds.astype(np.uint32)  # a copy: the result reports the seeds
    budget = budget_all
    eta = noise_all[:1].copy() if bool(np.all(noise_all == noise_all[0])) else noise_all
    jump_a, jump_c = _stream_coefficients(DRAWS_PER_EPISODE)
    scratch = (np.zeros(size, dtype=np.int8), np.zeros(size, dtype=np.int64))
    state = (x, v, gain, disturbance, eta, streak, budget, seeds, slot_row, jump_a, jump_c)
    obs_t = np.empty((2, size), dtype=f64)
    n = step(-1, size, x, *state, dt, horizon, *scratch, *out, *obs_t)  # observation 0
    for k in range(horizon):
        obs = obs_t[:, :n].T
        t0 = time.perf_counter()
        raw = policy(obs)
        call_seconds.append(time.perf_counter() - t0)
        u = as_commands(raw, n, "policy output", check_finite=False)  # the kernel checks
        if not u.flags.c_contiguous:
            u = np.ascontiguousarray(u)
        obs_t = np.empty((2, n), dtype=f64)  # fresh: the policy may keep the last one
        m = step(k, n, u, *state, dt, horizon, *scratch, *out, *obs_t)
        if m < 0:  # a non-finite command: name the first one
            as_commands(u, n, "policy output")
            raise InvalidInputError("policy output must be finite")
        n = m
        if n == 0:
            return


def _per_spec(metrics: Mapping[str, NDArray[np.float64]]) -> dict[str, list[float]]:
    """Metric arrays as lists, one list per distinct array (``reward_metrics`` shares one)."""
    lists: dict[int, list[float]] = {}
    out = {}
    for key, values in metrics.items():
        if id(values) not in lists:
            lists[id(values)] = values.tolist()
        out[key] = lists[id(values)]
    return out


_SETTING_KEYS = ("dynamics", "noise", "max_steps", "dt", "record_trace")


def batch_rollout_specs(
    policy: Policy,
    specs: Sequence[Any],
    env_kwargs: Mapping[str, Any],
    budget_steps: int,
) -> dict[str, Any]:
    """Runner adapter: play panel episode specs through :func:`rollout_batch` in one call.

    Each spec needs ``condition_seed`` (the LCG state) and ``options`` (the cell's reset
    options, :data:`~evalband.envs.reach1d.OPTION_KEYS`); options override ``env_kwargs``
    per episode exactly as ``Reach1DEnv.reset(options=...)`` does, and ``env_kwargs``'
    ``max_steps`` wins over ``budget_steps`` as for the env's constructor.

    Args:
        policy: vectorised policy.
        specs: episode specs (duck-typed: ``.condition_seed``, ``.options``).
        env_kwargs: the panel's constructor keyword arguments for the env.
        budget_steps: the panel's action budget.

    Returns:
        ``outcome``, ``terminated``, ``truncated``, ``steps``, ``sim_time_s`` (per spec,
        lists), ``metrics`` (per-spec lists by name: ``return``, ``reward_max``,
        ``reward_final``, :meth:`Reach1DBatchResult.reward_metrics`) and
        ``policy_call_ms`` (per policy call).

    Raises:
        InvalidParameterError: an unknown ``env_kwargs`` or option key, or a bad value.

    >>> from types import SimpleNamespace as Spec
    >>> from evalband.policies.reach1d import damped
    >>> specs = [Spec(condition_seed=7, options={"dynamics": d}) for d in ("lab", "nominal")]
    >>> batch_rollout_specs(damped, specs, {"noise": 0.02}, 30)["outcome"]
    ['timeout', 'success']
    """
    unknown = sorted(set(env_kwargs) - set(_SETTING_KEYS))
    if unknown:
        raise InvalidParameterError(
            f"unknown Reach1D env keyword(s) {', '.join(map(repr, unknown))}; "
            f"allowed: {', '.join(_SETTING_KEYS)}"
        )
    defaults = {
        "dynamics": env_kwargs.get("dynamics", "lab"),
        "noise": env_kwargs.get("noise", 0.02),
        "max_steps": env_kwargs.get("max_steps", budget_steps),
    }
    rows: dict[str, list[Any]] = {key: [] for key in defaults}
    for spec in specs:
        options = dict(getattr(spec, "options", None) or {})
        extra = sorted(set(options) - set(defaults))
        if extra:
            raise InvalidParameterError(
                f"unknown reset option(s) {', '.join(map(repr, extra))}; "
                f"allowed keys: {', '.join(defaults)}"
            )
        for key, default in defaults.items():
            rows[key].append(options.get(key, default))
    for value in rows["noise"]:
        _check_noise(value)
    result = rollout_batch(
        policy,
        [int(spec.condition_seed) for spec in specs],
        max_steps=np.asarray([_check_max_steps(m) for m in rows["max_steps"]], dtype=np.int64),
        dt=env_kwargs.get("dt", 0.2),
        noise=np.asarray(rows["noise"], dtype=np.float64),
        dynamics=[str(d) for d in rows["dynamics"]],
    )
    return {
        "outcome": result.outcome.tolist(),
        "terminated": result.terminated.tolist(),
        "truncated": result.truncated.tolist(),
        "steps": result.steps.tolist(),
        "sim_time_s": result.sim_time_s.tolist(),
        "metrics": _per_spec(result.reward_metrics()),
        "policy_call_ms": (result.policy_call_seconds * 1000.0).tolist(),
    }
