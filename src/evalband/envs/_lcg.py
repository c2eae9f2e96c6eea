"""The reaching lab's 32-bit linear congruential generator, with O(log n) jump-ahead.

The recurrence is the one of the reaching-lab seed (``002_4e7e9c5b524a571b``, "Reproduce
the batch in Python") and of Press et al., *Numerical Recipes in C*, 2nd ed. (1992),
section 7.1, "quick and dirty" generator:

    state_{t+1} = (1664525 * state_t + 1013904223) mod 2**32,    draw_t = state_{t+1} / 2**32

A draw is taken AFTER advancing the state, so the first draw of a stream started at
state ``s`` is ``(1664525 * s + 1013904223) mod 2**32 / 2**32``.

Jumping ahead composes the affine map with itself by repeated squaring (Brown, F. B.,
1994, "Random number generation with arbitrary strides", *Trans. Am. Nucl. Soc.* 71,
p. 202): ``f(s) = a s + c`` composed ``n`` times is ``a**n s + c (a**n - 1) / (a - 1)``,
computed in O(log n) multiplications modulo 2**32.
"""

from __future__ import annotations

import functools
import numbers

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evalband.errors import InvalidParameterError

__all__ = [
    "LCG_MULTIPLIER",
    "LCG_INCREMENT",
    "LCG_MODULUS",
    "lcg_jump",
    "lcg_affine",
    "lcg_states",
    "lcg_uniforms",
    "as_lcg_states",
]

LCG_MULTIPLIER = 1664525
LCG_INCREMENT = 1013904223
LCG_MODULUS = 2**32
_MASK = LCG_MODULUS - 1


def _check_steps(steps: object) -> int:
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral):
        raise InvalidParameterError(
            f"steps must be a whole number >= 0, got {steps!r} ({type(steps).__name__})"
        )
    if int(steps) < 0:
        raise InvalidParameterError(f"steps must be >= 0 (the LCG only runs forward), got {steps}")
    return int(steps)


def _check_state(state: object, name: str = "state") -> int:
    if isinstance(state, bool) or not isinstance(state, numbers.Integral):
        raise InvalidParameterError(
            f"{name} must be an integer LCG state in [0, 2**32), got {state!r} "
            f"({type(state).__name__})"
        )
    value = int(state)
    if not 0 <= value < LCG_MODULUS:
        raise InvalidParameterError(
            f"{name} must be an integer LCG state in [0, 2**32), got {value}; "
            f"reduce it first, e.g. {name} % 2**32"
        )
    return value


def lcg_affine(steps: int) -> tuple[int, int]:
    """Coefficients ``(a, c)`` with ``state_{t+steps} = (a * state_t + c) mod 2**32``.

    Computed by repeated squaring of the affine map (Brown 1994, "Random number
    generation with arbitrary strides"), O(log steps) multiplications.

    Args:
        steps: how many LCG advances to compose (>= 0).

    Returns:
        ``(a, c)``, both in ``[0, 2**32)``.

    >>> lcg_affine(1) == (1664525, 1013904223)
    True
    >>> lcg_affine(0)
    (1, 0)
    """
    return _affine(_check_steps(steps))


@functools.lru_cache(maxsize=1024)
def _affine(n: int) -> tuple[int, int]:
    """:func:`lcg_affine` for a validated count (pure, so cached: batches reuse strides)."""
    acc_a, acc_c = 1, 0  # identity map
    cur_a, cur_c = LCG_MULTIPLIER, LCG_INCREMENT  # f^(2^i)
    while n:
        if n & 1:
            # acc <- cur o acc : s -> cur_a (acc_a s + acc_c) + cur_c
            acc_a, acc_c = (cur_a * acc_a) & _MASK, (cur_a * acc_c + cur_c) & _MASK
        # cur <- cur o cur
        cur_a, cur_c = (cur_a * cur_a) & _MASK, (cur_a * cur_c + cur_c) & _MASK
        n >>= 1
    return acc_a, acc_c


def lcg_jump(state: int, steps: int) -> int:
    """Advance the 32-bit LCG ``steps`` times in O(log steps).

    ``state_{t+1} = (1664525 * state_t + 1013904223) mod 2**32`` (Press et al. 1992,
    *Numerical Recipes in C*, sec. 7.1; the reaching-lab seed's generator), jumped with
    Brown's (1994) arbitrary-stride method.

    Args:
        state: LCG state in ``[0, 2**32)``.
        steps: number of advances (>= 0).

    Returns:
        The state after ``steps`` advances.

    >>> lcg_jump(7, 1) == (1664525 * 7 + 1013904223) % 2**32
    True
    >>> lcg_jump(lcg_jump(7, 30), 14) == lcg_jump(7, 44)
    True
    """
    s = _check_state(state)
    a, c = lcg_affine(steps)
    return (a * s + c) & _MASK


def as_lcg_states(states: ArrayLike, name: str = "condition_seeds") -> NDArray[np.uint64]:
    """Validate LCG states (integers in ``[0, 2**32)``) and return them as a 1-D uint64 array.

    Args:
        states: one integer or a sequence/array of integers.
        name: the argument's name, for the error message.

    Returns:
        A 1-D ``uint64`` array (a scalar becomes shape ``(1,)``).

    >>> as_lcg_states([7, 2**32 - 1]).tolist()
    [7, 4294967295]
    """
    raw = np.asarray(states)
    if raw.size == 0:
        return np.zeros(0, dtype=np.uint64)
    if raw.dtype == object:
        items = [_check_state(s, name) for s in raw.reshape(-1).tolist()]
        return np.asarray(items, dtype=np.uint64)
    if raw.dtype.kind not in "iu":
        raise InvalidParameterError(
            f"{name} must be integers (LCG states in [0, 2**32)), got dtype {raw.dtype}"
        )
    flat = raw.reshape(-1)
    if flat.size and (int(flat.min()) < 0 or int(flat.max()) >= LCG_MODULUS):
        bad = flat[(flat < 0) | (flat >= LCG_MODULUS)][0]
        raise InvalidParameterError(
            f"{name} must be LCG states in [0, 2**32), got {int(bad)}; reduce with % 2**32"
        )
    return flat.astype(np.uint64)


@functools.lru_cache(maxsize=8)
def _stream_coefficients(count: int) -> tuple[NDArray[np.uint32], NDArray[np.uint32]]:
    """Jump coefficients ``(a_j, c_j)`` for ``j = 1 .. count`` as read-only uint32 arrays.

    A static table that depends on ``count`` only (never on a seed), so caching it is
    sound: every stream of every caller uses the same coefficients.
    """
    a_list: list[int] = []
    c_list: list[int] = []
    a_j, c_j = 1, 0
    for _ in range(count):
        a_j, c_j = (LCG_MULTIPLIER * a_j) & _MASK, (LCG_MULTIPLIER * c_j + LCG_INCREMENT) & _MASK
        a_list.append(a_j)
        c_list.append(c_j)
    a = np.asarray(a_list, dtype=np.uint32)
    c = np.asarray(c_list, dtype=np.uint32)
    a.flags.writeable = False
    c.flags.writeable = False
    return a, c


def lcg_states(states: ArrayLike, count: int, first: int = 1) -> NDArray[np.uint32]:
    """LCG states ``first .. first + count - 1`` steps ahead of each of ``states``, at once.

    Entry ``[j, i]`` is the state ``first + j`` advances after ``states[i]``, i.e.
    ``(a s + c) mod 2**32`` with the jump coefficients of :func:`lcg_affine` (Brown 1994).
    The coefficients are a seed-independent table; the states are computed with one
    broadcast multiplication and one addition in unsigned 32-bit numpy arithmetic, whose
    wrap-around IS the recurrence's reduction modulo 2**32 (no Python loop per draw).

    Args:
        states: LCG states in ``[0, 2**32)``.
        count: how many consecutive states per stream (>= 0).
        first: the offset of the first one (>= 0; ``1`` is the state behind the first draw).

    Returns:
        A C-contiguous ``uint32`` array of shape ``(count, len(states))`` (draw-major).

    >>> s = lcg_states([7, 8], 3, first=2)
    >>> s[:, 1].tolist() == [lcg_jump(8, j) for j in (2, 3, 4)]
    True
    """
    n = _check_steps(count)
    offset = _check_steps(first)
    s = as_lcg_states(states).astype(np.uint32)
    a, c = _stream_coefficients(offset + n)
    if offset == 0:  # the zero-step map is the identity: prepend it
        a = np.concatenate([np.ones(1, dtype=np.uint32), a[:-1]]) if n else a[:0]
        c = np.concatenate([np.zeros(1, dtype=np.uint32), c[:-1]]) if n else c[:0]
    else:
        a, c = a[offset - 1 : offset - 1 + n], c[offset - 1 : offset - 1 + n]
    out = np.multiply(a[:, None], s[None, :])  # wraps modulo 2**32
    out += c[:, None]
    return out


def lcg_uniforms(states: ArrayLike, count: int) -> NDArray[np.float64]:
    """The first ``count`` draws of the LCG streams started at each of ``states``.

    Row ``i`` holds ``draw_1 .. draw_count`` of the stream started at ``states[i]``, each
    ``state / 2**32`` taken after advancing (the reaching-lab seed's ``draw()``), computed
    all at once from :func:`lcg_states`.

    Args:
        states: LCG states in ``[0, 2**32)``.
        count: number of draws per stream (>= 0).

    Returns:
        Array of shape ``(len(states), count)`` with values in ``[0, 1)``, stored draw-major
        (it is the transpose of a C-contiguous ``(count, len(states))`` array, so each
        draw's column ``u[:, j]`` is contiguous).

    >>> u = lcg_uniforms([7], 2)
    >>> s1 = (1664525 * 7 + 1013904223) % 2**32
    >>> bool(u[0, 0] == s1 / 2**32)
    True
    >>> bool(u[0, 1] == ((1664525 * s1 + 1013904223) % 2**32) / 2**32)
    True
    """
    # state < 2**32 is exact in float64 and scaling by a power of two is exact, so this
    # equals Python's correctly rounded ``state / 2**32``.
    return np.multiply(lcg_states(states, count), 1.0 / LCG_MODULUS).T
