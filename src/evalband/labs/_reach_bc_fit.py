"""The learned controller of the reaching lab's BC exercise: an affine policy by least squares.

Reaching-lab seed (``002_4e7e9c5b524a571b``), "Evaluate the learned policy from the shared
exercise": ``u = w_x x + w_v v + b`` fitted on the train episodes' expert actions, chosen among
ridge / intercept candidates by validation action error, and passed through the lab's command
limit +-1 like every controller of the lab.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evalband.envs.reach1d import as_commands
from evalband.errors import InvalidInputError, InvalidParameterError
from evalband.labs._reach_bc_core import Policy
from evalband.policies.reach1d import COMMAND_LIMIT

__all__ = ["CANDIDATES", "AffinePolicy", "fit_affine", "action_mse", "select_candidate"]

CANDIDATES: tuple[tuple[float, bool], ...] = tuple(
    (ridge, intercept) for ridge in (0.0, 1e-3, 1e-2, 1e-1) for intercept in (True, False)
)
"""Affine candidates ``(ridge penalty, fit an intercept)``, in tie-break order."""


@dataclass(frozen=True)
class AffinePolicy:
    """``u = clip(w_x x + w_v v + b, -limit, limit)``: the learned controller.

    Attributes:
        w_x: position weight (1/s^2).
        w_v: velocity weight (1/s).
        b: intercept (m/s^2).
        limit: command limit (the lab's +-1 m/s^2).
    """

    w_x: float
    w_v: float
    b: float
    limit: float = COMMAND_LIMIT

    def affine(self, obs: ArrayLike) -> NDArray[np.float64]:
        """The unclipped affine command ``w_x x + w_v v + b`` for ``(B, 2)`` observations.

        >>> AffinePolicy(-2.0, -1.8, 0.0).affine([[0.8, 0.0]]).tolist()
        [-1.6]
        """
        arr = np.asarray(obs, dtype=np.float64).reshape(-1, 2)
        return np.asarray(self.w_x * arr[:, 0] + self.w_v * arr[:, 1] + self.b)

    def __call__(self, obs: ArrayLike) -> NDArray[np.float64]:
        """Commands of shape ``(B, 1)``, saturated at the command limit.

        >>> AffinePolicy(-2.0, -1.8, 0.0)([[0.8, 0.0], [-0.1, 0.0]]).tolist()
        [[-1.0], [0.2]]
        """
        return np.clip(self.affine(obs), -self.limit, self.limit)[:, np.newaxis]

    def as_dict(self) -> dict[str, float]:
        """The weights as a JSON-ready dictionary."""
        return {"w_x": self.w_x, "w_v": self.w_v, "b": self.b, "limit": self.limit}

    @property
    def formula(self) -> str:
        """The policy in words, e.g. ``u = clip(-1.7673 x - 1.6159 v + 0.0003, -1, 1)``."""
        return (
            f"u = clip({self.w_x:.4f} x {_signed(self.w_v)} v {_signed(self.b)}, "
            f"-{self.limit:g}, {self.limit:g})"
        )


def _signed(value: float) -> str:
    return f"{'-' if value < 0 else '+'} {abs(value):.4f}"


def fit_affine(
    states: ArrayLike, actions: ArrayLike, *, ridge: float = 0.0, intercept: bool = True
) -> AffinePolicy:
    r"""Least-squares affine fit of actions on states, with an optional ridge penalty.

    Minimises :math:`\frac1n\sum_i (u_i - w^\top s_i - b)^2 + \lambda \lVert w\rVert^2`
    (the intercept is not penalised; ``b = 0`` without intercept): ridge regression of
    Hoerl & Kennard (1970), "Ridge regression: biased estimation for nonorthogonal
    problems", *Technometrics* 12:55-67, in the form of Hastie, Tibshirani & Friedman
    (2009), *The Elements of Statistical Learning*, 2nd ed., eqs. (3.41)-(3.44). Solved as
    the ordinary least-squares problem augmented with rows :math:`\sqrt{n\lambda}\,I`
    (``numpy.linalg.lstsq``). The expert's saturated rows pull the gains toward zero: a
    least-squares line through clipped targets is flatter than the unclipped law.

    Args:
        states: ``(n, 2)`` observed ``[x, v]``.
        actions: ``(n,)`` expert commands.
        ridge: penalty :math:`\lambda \ge 0` on the mean squared error scale.
        intercept: fit ``b``.

    Returns:
        The fitted policy (command limit +-1).

    Raises:
        InvalidInputError: shapes that do not match, non-finite values, or no rows.
        InvalidParameterError: a negative or non-finite ridge penalty.

    On rows where the expert is linear the fit returns its gains:

    >>> s = np.array([[0.1, 0.0], [0.0, 0.1], [-0.2, 0.1], [0.05, -0.2]])
    >>> p = fit_affine(s, -2 * s[:, 0] - 1.8 * s[:, 1])
    >>> round(p.w_x, 6), round(p.w_v, 6), round(p.b, 6) + 0.0
    (-2.0, -1.8, 0.0)
    """
    X = np.asarray(states, dtype=np.float64)
    y = np.asarray(actions, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != 2 or y.shape != (X.shape[0],) or X.shape[0] == 0:
        raise InvalidInputError(
            f"fit_affine needs states (n, 2) and actions (n,) with n >= 1, got {X.shape} "
            f"and {y.shape}"
        )
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise InvalidInputError("fit_affine needs finite states and actions")
    lam = float(ridge)
    if not np.isfinite(lam) or lam < 0:
        raise InvalidParameterError(f"ridge must be a finite penalty >= 0, got {ridge!r}")
    n = X.shape[0]
    design = np.column_stack([X, np.ones(n)]) if intercept else X
    target = y
    if lam > 0:
        penalty = np.zeros((2, design.shape[1]))
        penalty[0, 0] = penalty[1, 1] = np.sqrt(n * lam)
        design = np.vstack([design, penalty])
        target = np.concatenate([y, np.zeros(2)])
    coef = np.linalg.lstsq(design, target, rcond=None)[0]
    return AffinePolicy(
        w_x=float(coef[0]), w_v=float(coef[1]), b=float(coef[2]) if intercept else 0.0
    )


def action_mse(policy: Policy, states: ArrayLike, actions: ArrayLike) -> float:
    r"""Offline action error :math:`\frac1n\sum_i (\pi(s_i) - u_i)^2` at recorded states.

    The behaviour-cloning loss of Pomerleau (1991), "Efficient training of artificial neural
    networks for autonomous navigation", *Neural Computation* 3:88-97, evaluated at the
    expert's states; it says nothing about the states the policy's own actions reach
    (Ross, Gordon & Bagnell 2011, AISTATS, "A reduction of imitation learning ...", sec. 2).

    Args:
        policy: vectorised controller.
        states: ``(n, 2)`` states.
        actions: ``(n,)`` expert commands.

    Returns:
        The mean squared action error ((m/s^2)^2).

    >>> round(action_mse(AffinePolicy(-2.0, -1.8, 0.0), [[0.8, 0.0], [0.1, 0.0]], [-1.0, -0.1]), 12)
    0.005
    """
    X = np.asarray(states, dtype=np.float64)
    y = np.asarray(actions, dtype=np.float64).reshape(-1)
    pred = as_commands(policy(X), y.shape[0], "policy output")
    return float(np.mean((pred - y) ** 2))


def select_candidate(
    train: tuple[NDArray[np.float64], NDArray[np.float64]],
    validation: tuple[NDArray[np.float64], NDArray[np.float64]],
) -> tuple[int, list[dict[str, Any]]]:
    """Fit every candidate on ``train`` and pick the lowest validation action MSE.

    Only the train and validation rows reach this function: the final split cannot
    influence the choice. Ties (equal up to a relative 1e-9, i.e. rounding) go to the
    earlier candidate in :data:`CANDIDATES`.

    Args:
        train: ``(states, actions)`` of the train episodes.
        validation: ``(states, actions)`` of the validation episodes.

    Returns:
        ``(chosen index, candidates)`` with each candidate's name, ridge, intercept,
        weights, train MSE and validation MSE.

    >>> s = np.array([[0.1, 0.0], [0.0, 0.1], [-0.2, 0.1], [0.05, -0.2]])
    >>> u = -2 * s[:, 0] - 1.8 * s[:, 1]
    >>> best, rows = select_candidate((s, u), (s, u))
    >>> rows[best]["name"], len(rows)
    ('ridge=0,intercept', 8)
    """
    rows: list[dict[str, Any]] = []
    for ridge, intercept in CANDIDATES:
        policy = fit_affine(train[0], train[1], ridge=ridge, intercept=intercept)
        rows.append({
            "name": f"ridge={ridge:g},{'intercept' if intercept else 'no-intercept'}",
            "ridge": ridge,
            "intercept": intercept,
            "weights": policy.as_dict(),
            "train_mse": action_mse(policy, *train),
            "validation_mse": action_mse(policy, *validation),
        })
    errors = np.asarray([row["validation_mse"] for row in rows])
    tied = errors <= errors.min() * (1 + 1e-9) + 1e-15  # rounding noise is a tie
    return int(np.flatnonzero(tied)[0]), rows
