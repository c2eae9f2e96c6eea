"""The reaching lab's compiled lockstep kernel (optional: the ``fast`` extra, numba).

:func:`rollout_batch` calls the policy once per step on the stacked observations of the
still-active episodes; between two policy calls everything else (the dynamics, the
settling rule, the outcome, recording the episodes that end, compacting the batch, and
the next observations with their lazily drawn position errors) is ONE pass over the
active episodes in :func:`lockstep_step`, compiled by numba when it is installed. The
numpy path (:func:`evalband.envs._reach1d_batch._lockstep`) does the same work in ~20
whole-array passes; this one reads each episode's state once per step (plus a short pass
over the episodes that end).

Same numbers as the numpy path and the reaching-lab seed, bit for bit: every value is
computed with the seed program's operations in its order (``a = g u + d``,
``v' = v + dt a``, ``x' = x + dt (v + v') / 2``; ``x + NOISE (2 s / 2**32 - 1)``, where
``2 s / 2**32`` and ``- 1`` are exact), numba compiles without fast-math (so no fused
multiply-add or reassociation), and the batch is compacted exactly as the numpy path
does (holes below the new size filled, in order, by the surviving episodes above it),
so even the policy sees the same rows in the same order. ``tests/envs/
test_reach1d_kernel.py`` checks all of this against the numpy path, the plain-Python
execution of :func:`lockstep_step` and the seed's loop.

The functions below are ordinary Python: they run uncompiled too (slowly; the tests use
that to check that compilation changes no result); :func:`evalband._util.jit.compiled`
compiles :func:`lockstep_step`, and its helpers (:func:`evalband._util.jit.kernel_helper`)
with it. Each helper holds whole loops and is called once per step, so the hot loop's
speed does not rest on numba inlining a call inside it.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from evalband._util.jit import kernel_helper
from evalband.envs._reach1d_core import BOUNDARY, SETTLE_SAMPLES, SUCCESS_POSITION, SUCCESS_VELOCITY

__all__ = ["lockstep_step"]

_TWO_OVER_MODULUS = 2.0 / 4294967296.0  # 2 / 2**32: 2 u = state * this, exact
_LOW32 = 0xFFFFFFFF

# Outcome codes (the same values as _reach1d_core's SUCCESS / FAILURE / TIMEOUT), inlined
# as literals so that numba sees constants.
_SUCCESS, _FAILURE, _TIMEOUT = 1, 2, 3


def lockstep_step(
    k: int,
    n: int,
    u: NDArray[np.float64],
    x: NDArray[np.float64],
    v: NDArray[np.float64],
    gain: NDArray[np.float64],
    disturbance: NDArray[np.float64],
    eta: NDArray[np.float64],
    streak: NDArray[np.int8],
    budget: NDArray[np.int8],
    seeds: NDArray[np.uint32],
    slot_row: NDArray[np.int64],
    jump_a: NDArray[np.uint32],
    jump_c: NDArray[np.uint32],
    dt: float,
    horizon: int,
    code: NDArray[np.int8],
    ended_slots: NDArray[np.int64],
    code_out: NDArray[np.int8],
    steps_out: NDArray[np.int64],
    x_out: NDArray[np.float64],
    v_out: NDArray[np.float64],
    obs_x: NDArray[np.float64],
    obs_v: NDArray[np.float64],
) -> int:
    """Apply action ``k`` to the ``n`` active episodes and observe them for action ``k + 1``.

    Slots ``0 .. n-1`` of the state arrays hold the active episodes (``slot_row`` maps a
    slot to its batch row). With ``k >= 0``, ``u[:n]`` are the commands of action ``k``:
    each episode is advanced, its streak updated and judged (boundary failure, then
    success, then timeout at ``k + 1 >= budget``), and its observation for action
    ``k + 1`` written to ``obs_x`` / ``obs_v`` in the same pass: ``[x + eta (2 u - 1), v]``
    with ``u`` the LCG draw ``6 + k`` of its episode (``(a s + c) mod 2**32`` with the
    jump-ahead table ``jump_a`` / ``jump_c``). An episode that ends writes its code,
    steps and final state into ``*_out`` at its row, and its slot is refilled from the
    surviving episodes above the new size, in order (the numpy path's swap-remove).
    With ``k == -1`` nothing is advanced: only the first observation is written.

    Args:
        k: the action just taken (-1 before the first).
        n: active episodes.
        u: commands of action ``k`` (``n`` values; read only).
        x: positions, updated.
        v: velocities, updated.
        gain: actuator gains.
        disturbance: constant disturbances.
        eta: position-error bounds, one per slot, or ONE shared by every episode (a
            length-1 array: nothing to read per episode or move on compaction).
        streak: consecutive in-band samples, updated.
        budget: action budgets (int8: at most 40; the same width as ``streak`` and
            ``code``, which lets the compiler vectorise the pass).
        seeds: the episodes' LCG states at their starts.
        slot_row: batch row of each slot.
        jump_a: jump-ahead multipliers ``a_j`` (``j = 1 ..``).
        jump_c: jump-ahead increments ``c_j``.
        dt: hold time per action (s).
        horizon: the largest budget.
        code: int8 scratch (``n`` entries).
        ended_slots: int64 scratch (``n`` entries).
        code_out: outcome code per batch row, written when an episode ends.
        steps_out: actions taken per batch row, written when an episode ends.
        x_out: final position per batch row.
        v_out: final velocity per batch row.
        obs_x: receives the measured positions of the surviving slots.
        obs_v: receives their velocities.

    Returns:
        ``m``, the episodes still active, or ``-1`` when a command is not finite (the
        state is then partly advanced: the caller raises and discards it).

    >>> f = lambda *v: np.array(v, dtype=np.float64)
    >>> x, v, obs_x, obs_v = f(-0.5), f(0.1), np.empty(1), np.empty(1)
    >>> one = dict(gain=f(1.0), disturbance=f(0.1), eta=f(0.0),
    ...            streak=np.zeros(1, np.int8), budget=np.array([30], np.int8),
    ...            seeds=np.array([7], np.uint32), slot_row=np.array([0]),
    ...            jump_a=np.ones(44, np.uint32), jump_c=np.zeros(44, np.uint32),
    ...            dt=0.2, horizon=30, code=np.zeros(1, np.int8),
    ...            ended_slots=np.zeros(1, np.int64), code_out=np.zeros(1, np.int8),
    ...            steps_out=np.zeros(1, np.int64), x_out=np.zeros(1), v_out=np.zeros(1),
    ...            obs_x=obs_x, obs_v=obs_v)
    >>> lockstep_step(0, 1, f(0.98), x, v, **one)  # the seed's hand-worked step
    1
    >>> round(float(x[0]), 6), round(float(v[0]), 6), round(float(obs_x[0]), 6)
    (-0.4584, 0.316, -0.4584)
    """
    draw = min(k + 5, len(jump_a) - 1)  # error k + 1 is draw 6 + k (table index 5 + k)
    a = int(jump_a[draw])
    c = int(jump_c[draw])
    if k < 0:
        _observe_first(n, x, v, eta, seeds, a, c, obs_x, obs_v)
        return n
    ended, nonfinite = _advance(k, n, u, x, v, gain, disturbance, eta, streak, budget, seeds,
                                a, c, dt, code, obs_x, obs_v)
    if nonfinite:
        return -1
    if ended == 0:
        return n
    _record_ended(k, n, ended, code, ended_slots, slot_row, code_out, steps_out, x_out, v_out,
                  x, v)
    return _compact(n, ended, ended_slots, x, v, gain, disturbance, eta, streak, budget, seeds,
                    slot_row, obs_x, obs_v)


@kernel_helper
def _observe_first(
    n: int,
    x: NDArray[np.float64],
    v: NDArray[np.float64],
    eta: NDArray[np.float64],
    seeds: NDArray[np.uint32],
    a: int,
    c: int,
    obs_x: NDArray[np.float64],
    obs_v: NDArray[np.float64],
) -> None:
    """Write observation 0 of the ``n`` episodes (error draw 6, LCG step ``a s + c``)."""
    per_slot = eta.shape[0] != 1
    shared = eta[0]
    for i in range(n):
        state = (int(seeds[i]) * a + c) & _LOW32
        bound = eta[i] if per_slot else shared
        obs_x[i] = x[i] + bound * (float(state) * _TWO_OVER_MODULUS - 1.0)
        obs_v[i] = v[i]


@kernel_helper
def _advance(
    k: int,
    n: int,
    u: NDArray[np.float64],
    x: NDArray[np.float64],
    v: NDArray[np.float64],
    gain: NDArray[np.float64],
    disturbance: NDArray[np.float64],
    eta: NDArray[np.float64],
    streak: NDArray[np.int8],
    budget: NDArray[np.int8],
    seeds: NDArray[np.uint32],
    a: int,
    c: int,
    dt: float,
    code: NDArray[np.int8],
    obs_x: NDArray[np.float64],
    obs_v: NDArray[np.float64],
) -> tuple[int, int]:
    """Advance, judge and observe the ``n`` episodes in one pass; ``(ended, non-finite)``.

    ``code[i]`` receives slot ``i``'s outcome (0 while it goes on).
    """
    per_slot = eta.shape[0] != 1  # else one bound for all (the compiler unswitches on it)
    shared = eta[0]
    ended = 0
    nonfinite = 0
    for i in range(n):  # one pass: advance, judge, observe (vectorised by the compiler)
        ui = u[i]
        zero = ui - ui  # 0 for a finite command, NaN for NaN or +-inf
        nonfinite += zero != zero  # an integer count: a float sum would not vectorise
        vi = v[i]
        new_v = vi + dt * (gain[i] * ui + disturbance[i])
        new_x = x[i] + dt * (vi + new_v) / 2.0
        abs_x = abs(new_x)
        inside = (abs_x <= SUCCESS_POSITION) & (abs(new_v) <= SUCCESS_VELOCITY)
        run = (streak[i] + 1) * inside
        streak[i] = run
        outcome = _TIMEOUT if k + 1 >= budget[i] else 0
        outcome = _SUCCESS if run >= SETTLE_SAMPLES else outcome
        outcome = _FAILURE if abs_x >= BOUNDARY else outcome
        code[i] = outcome
        ended += outcome != 0
        x[i] = new_x
        v[i] = new_v
        state = (int(seeds[i]) * a + c) & _LOW32
        bound = eta[i] if per_slot else shared
        obs_x[i] = new_x + bound * (float(state) * _TWO_OVER_MODULUS - 1.0)
        obs_v[i] = new_v
    return ended, nonfinite


@kernel_helper
def _record_ended(
    k: int,
    n: int,
    ended: int,
    code: NDArray[np.int8],
    ended_slots: NDArray[np.int64],
    slot_row: NDArray[np.int64],
    code_out: NDArray[np.int8],
    steps_out: NDArray[np.int64],
    x_out: NDArray[np.float64],
    v_out: NDArray[np.float64],
    x: NDArray[np.float64],
    v: NDArray[np.float64],
) -> None:
    """List the ``ended`` slots (ascending) in ``ended_slots``; write their rows' results."""
    count = 0
    for i in range(n):  # the slots that ended, ascending
        if code[i] != 0:
            ended_slots[count] = i
            count += 1
    for j in range(ended):
        i = ended_slots[j]
        row = slot_row[i]
        code_out[row] = code[i]
        steps_out[row] = k + 1
        x_out[row] = x[i]
        v_out[row] = v[i]


@kernel_helper
def _compact(
    n: int,
    ended: int,
    ended_slots: NDArray[np.int64],
    x: NDArray[np.float64],
    v: NDArray[np.float64],
    gain: NDArray[np.float64],
    disturbance: NDArray[np.float64],
    eta: NDArray[np.float64],
    streak: NDArray[np.int8],
    budget: NDArray[np.int8],
    seeds: NDArray[np.uint32],
    slot_row: NDArray[np.int64],
    obs_x: NDArray[np.float64],
    obs_v: NDArray[np.float64],
) -> int:
    """Fill the ended slots below ``m = n - ended`` with the survivors above it; return ``m``.

    The holes take the surviving slots ``m ..`` in order (the numpy path's swap-remove).
    """
    per_slot = eta.shape[0] != 1
    m = n - ended
    fill = m  # holes (ended slots below m) take the survivors at m.., in order
    skip = 0  # ended_slots[skip:] are the ended slots >= m, ascending
    while skip < ended and ended_slots[skip] < m:
        skip += 1
    for j in range(skip):
        i = ended_slots[j]
        while skip < ended and ended_slots[skip] == fill:
            fill += 1
            skip += 1
        x[i] = x[fill]
        v[i] = v[fill]
        gain[i] = gain[fill]
        disturbance[i] = disturbance[fill]
        if per_slot:
            eta[i] = eta[fill]
        streak[i] = streak[fill]
        budget[i] = budget[fill]
        seeds[i] = seeds[fill]
        slot_row[i] = slot_row[fill]
        obs_x[i] = obs_x[fill]
        obs_v[i] = obs_v[fill]
        fill += 1
    return m
