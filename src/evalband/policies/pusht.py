"""PushT's scripted expert and demonstration collection.

The PushT harness seed (``000_b66faff61603906b``) trains its behaviour-cloning policies on
the demonstrations of a scripted expert (``collect_demos``: episode ``i`` uses seed
``seed + i``). The seed does not list that expert; this is ours. It reads ONLY the
observation (no simulator access, no memory across steps), so the runner can use it as a
policy (built-in name ``"pusht:expert"``) and process workers can pickle it.

How it pushes. The block's twist under a contact force follows its viscous damping
(quasi-static): a force ``f`` at point ``p`` of the block frame gives velocity ``f / b_t``
and spin ``(p x f) / b_r`` (:data:`~evalband.envs.pusht_model.TEE_DAMPING`,
:data:`~evalband.envs.pusht_model.TEE_YAW_DAMPING`); with a sticking contact the pusher
moves with the contact point. This is the ellipsoidal limit-surface model of quasi-static
pushing (Lee, S. H. & Cutkosky, M. R. (1991), "Fixture planning with friction", *J. Eng.
Ind.* 113:320-327; Lynch, K. M., Maekawa, H. & Tanie, K. (1992), "Manipulation and active
sensing by pushing using tactile feedback", IROS: twist ``proportional to H w``, ``H =
diag(1, 1, 1/c^2)``), here exact with ``c^2 = b_r / b_t`` because the block's "friction" is
its joint damping. For contact points along the T's outline and force directions
inside the friction cone, the expert precomputes the block twist per metre of pusher travel,
and at each step picks the push whose twist best reduces the pose error (cosine in the metric
``|dx|^2 + (L dyaw)^2``), minus a penalty on how far the pusher must travel to reach it (which
keeps a push going once started). In contact, it advances the pusher along the push by the
error-optimal distance; otherwise it travels to the push's approach point, straight when the
path is clear of the block, else around the block on a safe circle.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evalband.envs.pusht_model import (
    ACT_DIM,
    BAR_CENTER_Y,
    BAR_HALF,
    OBS_DIM,
    PUSHER_FRICTION,
    PUSHER_RADIUS,
    STEM_CENTER_Y,
    STEM_HALF,
    TEE_DAMPING,
    TEE_YAW_DAMPING,
    WORKSPACE,
    tee_outline,
)
from evalband.errors import InvalidInputError, InvalidParameterError

__all__ = ["ScriptedExpert", "expert", "expert_action", "collect_demos"]

YAW_LENGTH = 0.1
"""Metres of position error one radian of yaw error weighs (m/rad)."""
TRAVEL_PENALTY = 1.0
"""Score penalty per metre the pusher must travel to reach a push (1/m)."""
STANDOFF = 0.012
"""Approach points sit this far outside the contact position (m)."""
ENGAGE_LATERAL = 0.008
"""The pusher is engaged on a push within this sideways distance of its line (m)."""
NAV_STEP = 0.05
"""Largest commanded lead while travelling (m)."""
PUSH_STEP = (0.004, 0.03)
"""Smallest and largest commanded push per step (m)."""
PUSH_GAIN = 1.0
"""Commanded push = gain x the error-optimal pusher travel."""
CONTACT_SLACK = 0.003
"""Until the pusher is this close to touching, it closes in along the contact normal (m)."""
SAFE_RADIUS = 0.115
"""Radius of the circle the pusher travels around the block on (m)."""
_CLEAR = PUSHER_RADIUS - 0.003  # a path is clear if it keeps this far from the T
_RECTS = np.array(  # (centre x, centre y, half x, half y) of the bar and the stem
    [[0.0, BAR_CENTER_Y, BAR_HALF[0], BAR_HALF[1]], [0.0, STEM_CENTER_Y, *STEM_HALF]]
)


def _tee_distance(points: NDArray[np.float64]) -> NDArray[np.float64]:
    """Distance from block-frame points ``(..., 2)`` to the T (0 inside)."""
    dx = np.abs(points[..., None, 0] - _RECTS[:, 0]) - _RECTS[:, 2]
    dy = np.abs(points[..., None, 1] - _RECTS[:, 1]) - _RECTS[:, 3]
    dist = np.hypot(np.maximum(dx, 0.0), np.maximum(dy, 0.0))
    return np.asarray(dist.min(axis=-1))


def _candidates() -> dict[str, NDArray[Any]]:
    """Every (contact point, force direction) push, in the block frame."""
    outline = tee_outline()
    points, normals = [], []
    for i in range(len(outline)):
        v0, v1 = outline[i], outline[(i + 1) % len(outline)]
        length = float(np.hypot(*(v1 - v0)))
        tangent = (v1 - v0) / length
        count = max(1, int((length - 0.008) / 0.0075) + 1)
        for s in np.linspace(0.004, length - 0.004, count):
            points.append(v0 + s * tangent)
            normals.append(np.array([tangent[1], -tangent[0]]))
    p, n = np.array(points), np.array(normals)
    contact = p + n * PUSHER_RADIUS
    approach = p + n * (PUSHER_RADIUS + STANDOFF)
    keep = (_tee_distance(contact) >= PUSHER_RADIUS - 1e-9) & (
        _tee_distance(approach) >= PUSHER_RADIUS + 0.002
    )
    p, n, contact, approach = p[keep], n[keep], contact[keep], approach[keep]
    half_cone = 0.8 * math.atan(PUSHER_FRICTION)
    rows: dict[str, list[NDArray[Any]]] = {k: [] for k in ("n", "q", "a", "u", "v", "w", "pt")}
    for alpha in np.linspace(-half_cone, half_cone, 5):
        c, s = math.cos(alpha), math.sin(alpha)
        f = np.stack([-(c * n[:, 0] - s * n[:, 1]), -(s * n[:, 0] + c * n[:, 1])], axis=1)
        vel = f / TEE_DAMPING
        spin = (p[:, 0] * f[:, 1] - p[:, 1] * f[:, 0]) / TEE_YAW_DAMPING
        u = vel + spin[:, None] * np.stack([-p[:, 1], p[:, 0]], axis=1)
        travel = np.hypot(u[:, 0], u[:, 1])
        rows["n"].append(n)
        rows["q"].append(contact)
        rows["a"].append(approach)
        rows["u"].append(u / travel[:, None])
        rows["v"].append(vel / travel[:, None])
        rows["w"].append(spin / travel)
        rows["pt"].append(np.arange(len(p)))
    out = {key: np.concatenate(value) for key, value in rows.items()}
    inward = -(out["u"] * out["n"]).sum(axis=1)
    keep2 = inward > 0.3
    return {key: value[keep2] for key, value in out.items()}


_PUSHES = _candidates()
_TWIST_NORM = np.hypot(np.hypot(_PUSHES["v"][:, 0], _PUSHES["v"][:, 1]),
                       YAW_LENGTH * _PUSHES["w"])
_SEG = _PUSHES["q"] - _PUSHES["a"]
_SEG_SQ = (_SEG * _SEG).sum(axis=1)
_APPROACH = [(float(x), float(y)) for x, y in _PUSHES["a"]]
_BOXES = [  # the T's two boxes inflated by the clearance: (xmin, xmax, ymin, ymax)
    (cx - hx - _CLEAR, cx + hx + _CLEAR, cy - hy - _CLEAR, cy + hy + _CLEAR)
    for cx, cy, hx, hy in _RECTS.tolist()
]


def _corridor_distance(pusher_b: NDArray[np.float64]) -> NDArray[np.float64]:
    """Distance from the pusher to each push's approach corridor (approach -> contact)."""
    rel = pusher_b - _PUSHES["a"]
    t = np.clip((rel * _SEG).sum(axis=1) / _SEG_SQ, 0.0, 1.0)
    gap = rel - t[:, None] * _SEG
    return np.asarray(np.hypot(gap[:, 0], gap[:, 1]))


def _path_clear(x0: float, y0: float, x1: float, y1: float) -> bool:
    """Whether the block-frame segment ``(x0, y0) -> (x1, y1)`` misses the inflated T.

    Liang-Barsky clipping of the segment against each inflated box.
    """
    dx, dy = x1 - x0, y1 - y0
    for xmin, xmax, ymin, ymax in _BOXES:
        low, high = 0.0, 1.0
        hit = True
        for p, q in ((-dx, x0 - xmin), (dx, xmax - x0), (-dy, y0 - ymin), (dy, ymax - y0)):
            if p == 0.0:
                if q < 0.0:
                    hit = False
                    break
                continue
            r = q / p
            if p < 0.0:
                low = max(low, r)
            else:
                high = min(high, r)
            if low > high:
                hit = False
                break
        if hit:
            return False
    return True


def _detour(x: float, y: float, ax: float, ay: float) -> float:
    """Length of the way around: to the safe circle, along it, then in to ``(ax, ay)``."""
    diff = math.atan2(ay, ax) - math.atan2(y, x)
    diff = abs((diff + math.pi) % (2.0 * math.pi) - math.pi)
    return (
        abs(SAFE_RADIUS - math.hypot(x, y))
        + SAFE_RADIUS * diff
        + SAFE_RADIUS - math.hypot(ax, ay)
    )


def _choose(pusher_b: NDArray[np.float64], cosine: NDArray[np.float64]) -> int:
    """The push maximising ``cosine - TRAVEL_PENALTY * travel`` (branch and bound).

    The corridor distance never exceeds the travel, so ``cosine - penalty * corridor`` is
    an upper bound: candidates are visited in its order until it falls below the best.
    """
    corridor = _corridor_distance(pusher_b)
    bound = cosine - TRAVEL_PENALTY * corridor
    order = np.argsort(-bound)
    x, y = float(pusher_b[0]), float(pusher_b[1])
    best, best_score = int(order[0]), -math.inf
    memo: dict[int, float] = {}
    point = _PUSHES["pt"]
    for index in order.tolist():
        if bound[index] <= best_score:
            break
        near = float(corridor[index])
        if near < ENGAGE_LATERAL:
            travel = near
        else:
            key = int(point[index])
            if key not in memo:
                ax, ay = _APPROACH[index]
                if _path_clear(x, y, ax, ay):
                    memo[key] = math.hypot(ax - x, ay - y)
                else:
                    memo[key] = _detour(x, y, ax, ay)
            travel = memo[key]
        score = float(cosine[index]) - TRAVEL_PENALTY * travel
        if score > best_score:
            best, best_score = index, score
    return best


def _as_obs(obs: ArrayLike) -> NDArray[np.float64]:
    arr = np.asarray(obs, dtype=np.float64)
    if arr.shape != (OBS_DIM,):
        raise InvalidInputError(
            f"a PushT observation has shape ({OBS_DIM},), got shape {arr.shape}"
        )
    return arr


def expert_action(obs: ArrayLike) -> NDArray[np.float64]:
    """The scripted expert's noiseless command for one PushT observation.

    Picks the push (contact point and force direction) that best reduces the pose error in
    the metric ``|dx|^2 + (L dyaw)^2`` (``L`` = :data:`YAW_LENGTH`), penalised by the
    pusher's travel to it; pushes by the error-optimal pusher travel when in contact,
    otherwise travels to the push's approach point (see the module docstring).

    Args:
        obs: a PushT observation (:data:`~evalband.envs.pusht_model.OBS_NAMES`).

    Returns:
        The commanded pusher position ``(x, y)``, inside the workspace.

    Raises:
        InvalidInputError: ``obs`` is not shaped ``(OBS_DIM,)``.

    >>> obs = np.array([0.0, -0.3, 0.0, -0.15, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0])
    >>> expert_action(obs).round(3).tolist()  # go below the stem, to push it up
    [0.0, -0.256]
    """
    goal_b, block, rot, _ = _plan(_as_obs(obs))
    return np.asarray(np.clip(block + rot @ goal_b, -WORKSPACE, WORKSPACE))


def _plan(o: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64],
                                           NDArray[np.float64], tuple[int, str]]:
    """The expert's goal in the block frame, the block frame, and (push, mode) for debugging."""
    pusher, block = o[0:2], o[2:4]
    cos_y, sin_y = float(o[4]), float(o[5])
    yaw = math.atan2(sin_y, cos_y)
    target_yaw = math.atan2(float(o[9]), float(o[8]))
    rot = np.array([[cos_y, -sin_y], [sin_y, cos_y]])  # block frame -> world
    error_b = rot.T @ (o[6:8] - block)
    dyaw = (target_yaw - yaw + math.pi) % (2.0 * math.pi) - math.pi
    pusher_b = rot.T @ (pusher - block)
    want = math.hypot(math.hypot(error_b[0], error_b[1]), YAW_LENGTH * dyaw)
    if want < 1e-6:
        return pusher_b, block, rot, (-1, "hold")
    pushes = _PUSHES
    gain = pushes["v"] @ error_b + YAW_LENGTH**2 * dyaw * pushes["w"]
    best = _choose(pusher_b, gain / (_TWIST_NORM * want))
    normal, contact, approach = pushes["n"][best], pushes["q"][best], pushes["a"][best]
    rel = pusher_b - contact
    outward = float(rel @ normal)
    lateral = abs(float(rel[0] * normal[1] - rel[1] * normal[0]))
    if lateral < ENGAGE_LATERAL and -0.01 < outward < STANDOFF + 0.006:
        if outward > CONTACT_SLACK:  # close the gap straight along the normal first
            return contact - normal * CONTACT_SLACK, block, rot, (best, "close")
        twist_sq = float(pushes["v"][best] @ pushes["v"][best]) + (
            YAW_LENGTH * float(pushes["w"][best])
        ) ** 2
        push = PUSH_GAIN * max(float(gain[best]), 0.0) / twist_sq
        push = min(max(push, PUSH_STEP[0]), PUSH_STEP[1])
        return contact + push * pushes["u"][best], block, rot, (best, "push")
    if _path_clear(float(pusher_b[0]), float(pusher_b[1]), *_APPROACH[best]):
        gap = approach - pusher_b
        dist = math.hypot(gap[0], gap[1])
        goal = approach if dist <= NAV_STEP else pusher_b + gap * (NAV_STEP / dist)
        return goal, block, rot, (best, "travel")
    return _around(pusher_b, approach), block, rot, (best, "around")


def _around(pusher_b: NDArray[np.float64], approach: NDArray[np.float64]) -> NDArray[np.float64]:
    """Travel toward ``approach`` around the block on the safe circle (block frame)."""
    radius = math.hypot(pusher_b[0], pusher_b[1])
    angle = math.atan2(pusher_b[1], pusher_b[0])
    if radius < SAFE_RADIUS - 0.01:  # first get out, mostly radially
        direction = pusher_b / max(radius, 1e-9)
        return np.asarray(pusher_b + direction * min(NAV_STEP, SAFE_RADIUS - radius + 0.01))
    diff = (math.atan2(approach[1], approach[0]) - angle + math.pi) % (2.0 * math.pi) - math.pi
    turn = math.copysign(min(abs(diff), NAV_STEP / SAFE_RADIUS), diff)
    new = angle + turn
    return np.array([SAFE_RADIUS * math.cos(new), SAFE_RADIUS * math.sin(new)])


class ScriptedExpert:
    """The scripted PushT expert as a policy ``obs -> action``, with seeded action noise.

    ``noise`` adds ``N(0, noise^2)`` to each coordinate of :func:`expert_action`'s command,
    drawn from the expert's own ``np.random.default_rng(seed)`` (the action is then clipped
    to the workspace). With ``noise=0`` the expert is a pure function of the observation;
    with noise its draws advance with every call, so build a fresh one per episode (as
    :func:`collect_demos` does) for episodes that do not depend on their order.

    Args:
        noise: standard deviation of the action noise (m), ``>= 0``.
        seed: seed of the noise generator.

    >>> env_obs = np.array([0.0, -0.3, 0.0, -0.15, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0])
    >>> ScriptedExpert()(env_obs).round(3).tolist()
    [0.0, -0.256]
    >>> a, b = ScriptedExpert(0.01, seed=3), ScriptedExpert(0.01, seed=3)
    >>> bool((a(env_obs) == b(env_obs)).all())
    True
    """

    def __init__(self, noise: float = 0.0, seed: int = 0) -> None:
        value = float(noise)
        if not math.isfinite(value) or value < 0.0:
            raise InvalidParameterError(f"noise must be a finite number >= 0, got {noise!r}")
        self.noise = value
        self.seed = seed
        self._rng = np.random.default_rng(seed)

    def __call__(self, obs: ArrayLike) -> NDArray[np.float64]:
        """The command for one observation (see :func:`expert_action`)."""
        action = expert_action(obs)
        if self.noise > 0.0:
            action = np.clip(
                action + self.noise * self._rng.standard_normal(ACT_DIM), -WORKSPACE, WORKSPACE
            )
        return action

    def __repr__(self) -> str:
        return f"ScriptedExpert(noise={self.noise!r}, seed={self.seed!r})"


def expert(obs: ArrayLike) -> NDArray[np.float64]:
    """The noiseless scripted expert, built-in policy ``"pusht:expert"``.

    Same as ``ScriptedExpert(noise=0.0)``: a pure function of the observation
    (:func:`expert_action`), so every episode of a run is independent of the others.

    >>> expert(np.array([0.0, -0.3, 0.0, -0.15, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0])).round(3).tolist()
    [0.0, -0.256]
    """
    return expert_action(obs)


def collect_demos(
    num_demos: int, seed: int, *, noise: float = 0.0, max_steps: int | None = None
) -> tuple[NDArray[np.float32], NDArray[np.float32], NDArray[np.int64]]:
    """Roll out the scripted expert and return its per-step demonstrations.

    The PushT harness seed's ``collect_demos`` (seed ``000_b66faff61603906b``, "The eval"):
    episode ``i`` resets the env with seed ``seed + i`` on ``train`` starts and is played by
    ``ScriptedExpert(noise, seed + i)`` until it succeeds or the budget runs out; every
    (observation, action) pair it saw is kept, failed episodes included, as the seed does.

    Args:
        num_demos: number of episodes, ``>= 1``.
        seed: seed of episode 0.
        noise: the expert's action noise (m).
        max_steps: per-episode budget (default: the env's, 200).

    Returns:
        ``(obs, actions, episode_ids)``: float32 ``(N, OBS_DIM)``, float32 ``(N, ACT_DIM)``
        and int64 ``(N,)`` with episode ``i``'s rows labelled ``i``.

    >>> obs, actions, ids = collect_demos(2, seed=0)
    >>> obs.shape[1], actions.shape[1], ids.dtype.name, sorted(set(ids.tolist()))
    (10, 2, 'int64', [0, 1])
    """
    from evalband.envs.pusht import PushTEnv

    if isinstance(num_demos, bool) or int(num_demos) != num_demos or num_demos < 1:
        raise InvalidParameterError(f"num_demos must be a whole number >= 1, got {num_demos!r}")
    kwargs: dict[str, Any] = {} if max_steps is None else {"max_steps": max_steps}
    env = PushTEnv(**kwargs)
    obs_rows: list[NDArray[np.float64]] = []
    act_rows: list[NDArray[np.float64]] = []
    ids: list[int] = []
    for i in range(int(num_demos)):
        obs, _ = env.reset(seed=seed + i, options={"start": "train"})
        policy = ScriptedExpert(noise, seed + i)
        done = False
        while not done:
            action = policy(obs)
            obs_rows.append(obs)
            act_rows.append(action)
            ids.append(i)
            obs, _, terminated, truncated, _ = env.step(action)
            done = terminated or truncated
    return (
        np.asarray(obs_rows, dtype=np.float32),
        np.asarray(act_rows, dtype=np.float32),
        np.asarray(ids, dtype=np.int64),
    )
