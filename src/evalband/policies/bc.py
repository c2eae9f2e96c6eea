"""Behavior cloning: a small MLP trained by MSE regression, bit-reproducible on CPU.

The optional extra ``evalband[bc]`` (torch). This is the PushT harness seed's policy
(``shared/seeds/000_b66faff61603906b.txt``, "The policy": ``BCPolicy``, ``norm_stats``,
``train_bc``, ``bc_action_fn``) with its dimensions made parameters: behavior cloning as
supervised regression of expert actions on observations (Pomerleau 1989, "ALVINN", NIPS 1;
Bain & Sammut 1995, "A framework for behavioural cloning", Machine Intelligence 15),

    min_theta  mean_i || pi_theta(o_i) - a_i ||^2,

optimised with Adam (Kingma & Ba 2015, ICLR, Algorithm 1) under a cosine learning-rate
schedule without restarts (Loshchilov & Hutter 2017, ICLR, "SGDR", Eq. 5 with one cycle of
``T_max = epochs``). Min-max normalisation lives inside the module as buffers, so a saved
checkpoint maps raw observations to raw actions by itself.

Checkpoints are ``torch.save`` files written through an in-memory buffer (so the bytes do
not depend on the file name; ``torch.save`` to a path embeds the file's stem) holding the
state dict, the dimensions and a JSON-normalised ``meta`` dict. Saving the same weights
twice gives the same bytes, so the file's sha256 (:func:`checkpoint_hash`) identifies the
weights; the runner records it in the run manifest as ``policy_hash``.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import numbers
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812 - the conventional alias
from numpy.typing import ArrayLike, NDArray

from evalband.errors import InvalidInputError, InvalidParameterError
from evalband.policies._torch import TorchPolicy

__all__ = [
    "CHECKPOINT_FORMAT",
    "CONSTANT_RANGE",
    "BCPolicy",
    "CheckpointError",
    "norm_stats",
    "train_bc",
    "save_checkpoint",
    "load_checkpoint",
    "load_policy",
    "checkpoint_hash",
]

CHECKPOINT_FORMAT = "evalband.bc/1"
"""The ``format`` tag of checkpoints written by :func:`save_checkpoint`."""

CONSTANT_RANGE = 1e-4
"""A dimension whose range (max - min) is below this is constant: its range is set to 1."""

_STAT_NAMES = ("obs_min", "obs_range", "act_min", "act_range")


class CheckpointError(InvalidInputError):
    """A checkpoint file that is missing, unreadable, or not an evalband BC checkpoint."""


def _guard_range(value: NDArray[np.float32]) -> NDArray[np.float32]:
    """Replace ranges below :data:`CONSTANT_RANGE` (constant dimensions) by 1."""
    return np.where(value < CONSTANT_RANGE, np.float32(1.0), value).astype(np.float32)


def _positive_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 1:
        raise InvalidParameterError(f"{name} must be an integer >= 1; got {value!r}")
    return int(value)


def _as_matrix(value: ArrayLike, name: str) -> NDArray[np.float32]:
    """``value`` as a finite float32 matrix with at least one row."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be a numeric array; got {exc}") from None
    if arr.ndim != 2:
        raise InvalidInputError(
            f"{name} must be 2-D, shaped (rows, dims); got shape {arr.shape} "
            "(reshape a single dimension with .reshape(-1, 1))"
        )
    if arr.shape[0] < 1 or arr.shape[1] < 1:
        raise InvalidInputError(f"{name} needs >= 1 row and >= 1 column; got shape {arr.shape}")
    with np.errstate(over="ignore"):  # values beyond float32 become inf, reported below
        out = arr.astype(np.float32)
    if not np.isfinite(out).all():
        bad = int((~np.isfinite(out)).sum())
        raise InvalidInputError(
            f"{name} must be finite in float32; got {bad} NaN/inf (or > 3.4e38) values"
        )
    return out


class BCPolicy(torch.nn.Module):
    """The seed's behavior-cloning MLP: Linear-ReLU-Linear-ReLU-Linear with normalisation inside.

    ``hidden_layers`` (default 2, the seed's) sets how many ``Linear-ReLU`` layers of width
    ``hidden_dim`` come before the output layer.

    ``forward`` maps raw observations to raw actions (seed ``BCPolicy.forward``)::

        o_hat = clamp(2 (o - obs_min) / obs_range - 1, -1, 1)
        a     = (net(o_hat) + 1) / 2 * act_range + act_min

    The four statistics are float32 buffers, so they travel in the state dict. Ranges below
    :data:`CONSTANT_RANGE` (constant dimensions, e.g. a fixed target) are set to 1, so a
    constant observation maps to -1 instead of dividing by zero (seed ``norm_stats``).

    Args:
        obs_dim: observation dimension ``D``.
        act_dim: action dimension ``A``.
        hidden_dim: width of the hidden layers.
        stats: ``obs_min``/``obs_range`` of shape ``(D,)`` and ``act_min``/``act_range`` of
            shape ``(A,)`` (see :func:`norm_stats`).
        hidden_layers: number of hidden layers (>= 1).

    Raises:
        InvalidParameterError: a dimension is not a positive integer.
        InvalidInputError: a statistic is missing, mis-shaped or not finite.

    >>> stats = norm_stats(np.array([[0.0], [2.0]]), np.array([[1.0], [3.0]]))
    >>> policy = BCPolicy(1, 1, 8, stats)
    >>> policy(torch.zeros(4, 1)).shape
    torch.Size([4, 1])
    """

    obs_min: torch.Tensor
    obs_range: torch.Tensor
    act_min: torch.Tensor
    act_range: torch.Tensor

    def __init__(
        self, obs_dim: int, act_dim: int, hidden_dim: int, stats: Mapping[str, ArrayLike],
        hidden_layers: int = 2,
    ) -> None:
        super().__init__()
        self.obs_dim = _positive_int(obs_dim, "obs_dim")
        self.act_dim = _positive_int(act_dim, "act_dim")
        self.hidden_dim = _positive_int(hidden_dim, "hidden_dim")
        self.hidden_layers = _positive_int(hidden_layers, "hidden_layers")
        self.meta: dict[str, Any] = {}
        layers: list[torch.nn.Module] = []
        for width in [self.obs_dim] + [self.hidden_dim] * (self.hidden_layers - 1):
            layers += [torch.nn.Linear(width, self.hidden_dim), torch.nn.ReLU()]
        self.net = torch.nn.Sequential(*layers, torch.nn.Linear(self.hidden_dim, self.act_dim))
        missing = [name for name in _STAT_NAMES if name not in stats]
        if missing:
            raise InvalidInputError(
                f"stats must have {', '.join(_STAT_NAMES)}; missing {', '.join(missing)}"
            )
        for name in _STAT_NAMES:
            dim = self.obs_dim if name.startswith("obs") else self.act_dim
            value = np.asarray(stats[name], dtype=np.float32).reshape(-1)
            if value.shape != (dim,) or not np.isfinite(value).all():
                raise InvalidInputError(
                    f"stats[{name!r}] must be {dim} finite numbers; got {stats[name]!r}"
                )
            if name.endswith("range"):
                value = _guard_range(value)
            self.register_buffer(name, torch.from_numpy(value.copy()))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Raw observations ``(B, D)`` -> raw actions ``(B, A)``."""
        normalized = (2.0 * (obs - self.obs_min) / self.obs_range - 1.0).clamp(-1.0, 1.0)
        out: torch.Tensor = self.net(normalized)
        return (out + 1.0) / 2.0 * self.act_range + self.act_min


def norm_stats(obs: ArrayLike, actions: ArrayLike) -> dict[str, NDArray[np.float32]]:
    """Per-dimension min and range of observations and actions (seed ``norm_stats``).

    Min-max scaling to [-1, 1] uses ``x_hat = 2 (x - min) / range - 1`` with
    ``range = max - min``; a range below :data:`CONSTANT_RANGE` (a constant dimension) is
    replaced by 1 so the dimension maps to a constant instead of dividing by zero.

    Args:
        obs: observations ``(N, D)``.
        actions: actions ``(N, A)``.

    Returns:
        ``obs_min``, ``obs_range`` (``(D,)``), ``act_min``, ``act_range`` (``(A,)``), float32.

    Raises:
        InvalidInputError: not 2-D, no rows, different row counts, or not finite.

    >>> stats = norm_stats([[0.0, 5.0], [4.0, 5.0]], [[1.0], [-1.0]])
    >>> stats["obs_range"].tolist(), stats["act_min"].tolist()
    ([4.0, 1.0], [-1.0])
    """
    obs_arr = _as_matrix(obs, "obs")
    act_arr = _as_matrix(actions, "actions")
    if obs_arr.shape[0] != act_arr.shape[0]:
        raise InvalidInputError(
            f"obs and actions need the same number of rows; got {obs_arr.shape[0]} and "
            f"{act_arr.shape[0]}"
        )
    obs_min, act_min = obs_arr.min(0), act_arr.min(0)
    return {
        "obs_min": obs_min,
        "obs_range": _guard_range(obs_arr.max(0) - obs_min),
        "act_min": act_min,
        "act_range": _guard_range(act_arr.max(0) - act_min),
    }


@contextmanager
def _reproducible(seed: int, num_threads: int) -> Iterator[None]:
    """Seed torch, force deterministic kernels and fix the thread count; restore afterwards."""
    det = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    threads = torch.get_num_threads()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        torch.use_deterministic_algorithms(True)
        torch.set_num_threads(num_threads)
        try:
            yield
        finally:
            torch.set_num_threads(threads)
            torch.use_deterministic_algorithms(det, warn_only=warn_only)


def train_bc(
    obs: ArrayLike,
    actions: ArrayLike,
    *,
    hidden_dim: int = 256,
    hidden_layers: int = 2,
    epochs: int = 100,
    lr: float = 1e-3,
    batch_size: int = 256,
    seed: int = 0,
    num_threads: int = 1,
) -> BCPolicy:
    """Train a :class:`BCPolicy` by MSE behavior cloning (seed ``train_bc``), reproducibly.

    Minimises ``mean_i ||pi(o_i) - a_i||^2`` over shuffled mini-batches with Adam (Kingma &
    Ba 2015, ICLR, Algorithm 1) and a per-epoch cosine schedule ``lr_t = lr (1 + cos(pi t /
    epochs)) / 2`` (Loshchilov & Hutter 2017, ICLR, Eq. 5, ``eta_min = 0``, one cycle).

    Reproducibility: initial weights come from ``torch.manual_seed(seed)`` and the shuffle
    from a separate ``torch.Generator`` seeded with ``seed``, both inside
    ``torch.random.fork_rng`` (the caller's global RNG state is left untouched); training
    runs on CPU in float32 with ``torch.use_deterministic_algorithms(True)`` and
    ``num_threads`` intra-op threads, all restored afterwards. The same call on the same
    machine and torch build gives bit-identical weights.

    Args:
        obs: observations ``(N, D)``, N >= 1.
        actions: expert actions ``(N, A)``.
        hidden_dim: width of the hidden layers.
        hidden_layers: number of hidden layers (the seed's: 2).
        epochs: passes over the data (also the cosine schedule's ``T_max``).
        lr: Adam's initial learning rate.
        batch_size: rows per mini-batch (the last batch of an epoch may be smaller).
        seed: non-negative integer seed.
        num_threads: torch intra-op threads while training (1: independent of the machine's
            core count).

    Returns:
        The trained policy, in eval mode, with ``meta`` recording the training settings.

    Raises:
        InvalidInputError: inputs not 2-D, empty, of different lengths, or not finite.
        InvalidParameterError: a non-positive size, epoch count or learning rate, a negative
            or non-integer seed.

    >>> x = np.linspace(-1, 1, 64, dtype=np.float32).reshape(-1, 1)
    >>> policy = train_bc(x, 0.5 * x, hidden_dim=16, epochs=5, seed=0)
    >>> policy.meta["seed"], policy.training
    (0, False)
    """
    stats = norm_stats(obs, actions)
    obs_arr = _as_matrix(obs, "obs")
    act_arr = _as_matrix(actions, "actions")
    hidden_dim = _positive_int(hidden_dim, "hidden_dim")
    epochs = _positive_int(epochs, "epochs")
    batch_size = _positive_int(batch_size, "batch_size")
    num_threads = _positive_int(num_threads, "num_threads")
    if isinstance(lr, bool) or not isinstance(lr, numbers.Real) or not 0 < float(lr) < math.inf:
        raise InvalidParameterError(f"lr must be a finite number > 0; got {lr!r}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or int(seed) < 0:
        raise InvalidParameterError(f"seed must be an integer >= 0; got {seed!r}")
    seed = int(seed)
    with _reproducible(seed, num_threads):
        policy = BCPolicy(obs_arr.shape[1], act_arr.shape[1], hidden_dim, stats,
                          hidden_layers=hidden_layers)
        optimizer = torch.optim.Adam(policy.parameters(), lr=float(lr))
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
        obs_t = torch.from_numpy(obs_arr)
        act_t = torch.from_numpy(act_arr)
        shuffle = torch.Generator().manual_seed(seed)
        policy.train()
        for _ in range(epochs):
            for batch in torch.randperm(len(obs_t), generator=shuffle).split(batch_size):
                loss = F.mse_loss(policy(obs_t[batch]), act_t[batch])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            scheduler.step()
    policy.meta = {
        "seed": seed,
        "epochs": epochs,
        "lr": float(lr),
        "batch_size": batch_size,
        "num_samples": int(obs_arr.shape[0]),
        "torch": torch.__version__,
    }
    return policy.eval()


def _json_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    """``meta`` as plain JSON types with sorted keys (so it pickles the same every time)."""
    try:
        text = json.dumps(dict(meta), sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"checkpoint meta must be JSON-serialisable; {exc}") from None
    normalized: dict[str, Any] = json.loads(text)
    return normalized


def _checkpoint_bytes(policy: BCPolicy, meta: Mapping[str, Any]) -> bytes:
    state = {
        name: tensor.detach().cpu().contiguous().clone()
        for name, tensor in policy.state_dict().items()
    }
    payload = {
        "format": CHECKPOINT_FORMAT,
        "obs_dim": policy.obs_dim,
        "act_dim": policy.act_dim,
        "hidden_dim": policy.hidden_dim,
        # only when not the seed's 2, so a 2-layer checkpoint's bytes (its hash) are unchanged
        **({"hidden_layers": policy.hidden_layers} if policy.hidden_layers != 2 else {}),
        "state_dict": state,
        "meta": _json_meta(meta),
    }
    buffer = io.BytesIO()  # a buffer, not the path: torch.save embeds a path's stem
    torch.save(payload, buffer)
    return buffer.getvalue()


def save_checkpoint(
    policy: BCPolicy, path: str | os.PathLike[str], *, meta: Mapping[str, Any] | None = None
) -> str:
    """Write a self-describing checkpoint and return the sha256 of its bytes.

    The file holds the state dict (weights and normalisation buffers), ``obs_dim``,
    ``act_dim``, ``hidden_dim`` and ``meta`` (the policy's own ``meta`` from
    :func:`train_bc`, updated with ``meta``; JSON types only). The same weights and meta
    give the same bytes, wherever and whenever they are saved. The file is written to a
    temporary name and renamed, so a reader never sees half a checkpoint.

    Args:
        policy: the policy.
        path: destination (conventionally ``*.pt``; the runner resolves ``*.pt`` paths).
        meta: extra JSON-serialisable facts, e.g. ``{"num_demos": 100}``.

    Returns:
        The file's sha256 (hex), equal to :func:`checkpoint_hash` of ``path``.

    Raises:
        InvalidInputError: ``policy`` is not a :class:`BCPolicy` or ``meta`` is not JSON.

    >>> import tempfile
    >>> policy = BCPolicy(1, 1, 4, norm_stats([[0.0], [1.0]], [[0.0], [1.0]]))
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     digest = save_checkpoint(policy, Path(tmp) / "p.pt", meta={"num_demos": 2})
    ...     load_checkpoint(Path(tmp) / "p.pt").meta, digest == checkpoint_hash(Path(tmp) / "p.pt")
    ({'num_demos': 2}, True)
    """
    if not isinstance(policy, BCPolicy):
        raise InvalidInputError(f"save_checkpoint expects a BCPolicy; got {type(policy).__name__}")
    data = _checkpoint_bytes(policy, {**policy.meta, **dict(meta or {})})
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, target)
    return hashlib.sha256(data).hexdigest()


def _read(path: str | os.PathLike[str]) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise CheckpointError(f"cannot read checkpoint {os.fspath(path)!r}: {exc}") from None


def checkpoint_hash(path: str | os.PathLike[str]) -> str:
    """sha256 (hex) of a checkpoint file's bytes: the ``policy_hash`` a run manifest records.

    Raises:
        CheckpointError: the file cannot be read.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = (Path(tmp) / "x.pt").write_bytes(b"abc")
    ...     checkpoint_hash(Path(tmp) / "x.pt")[:16]
    'ba7816bf8f01cfea'
    """
    return hashlib.sha256(_read(path)).hexdigest()


def _policy_from_bytes(data: bytes, where: str) -> BCPolicy:
    try:
        payload = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the same user error
        raise CheckpointError(
            f"{where} is not a readable torch checkpoint ({type(exc).__name__}: {exc})"
        ) from None
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT:
        got = payload.get("format") if isinstance(payload, dict) else type(payload).__name__
        raise CheckpointError(
            f"{where} is not an evalband BC checkpoint: expected format "
            f"{CHECKPOINT_FORMAT!r}, got {got!r}; write one with save_checkpoint"
        )
    try:
        state = payload["state_dict"]
        stats = {name: state[name].numpy() for name in _STAT_NAMES}
        policy = BCPolicy(payload["obs_dim"], payload["act_dim"], payload["hidden_dim"], stats,
                          hidden_layers=payload.get("hidden_layers", 2))
        policy.load_state_dict(state, strict=True)
    except (KeyError, TypeError, RuntimeError, InvalidInputError) as exc:
        raise CheckpointError(f"{where} is a damaged BC checkpoint: {exc}") from None
    policy.meta = dict(payload.get("meta") or {})
    return policy.eval()


def load_checkpoint(path: str | os.PathLike[str]) -> BCPolicy:
    """Load a :class:`BCPolicy` written by :func:`save_checkpoint` (on CPU, in eval mode).

    Loads with ``torch.load(..., weights_only=True)``: no arbitrary code runs.

    Raises:
        CheckpointError: missing, unreadable, or not an evalband BC checkpoint.

    >>> load_checkpoint("no/such/file.pt")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    evalband.policies.bc.CheckpointError: cannot read checkpoint 'no/such/file.pt': ...
    """
    return _policy_from_bytes(_read(path), repr(os.fspath(path)))


def load_policy(path: str | os.PathLike[str]) -> TorchPolicy:
    """A checkpoint as a runnable policy: :class:`TorchPolicy` with its ``checkpoint_hash``.

    The file is read once; the hash and the weights come from the same bytes.

    Raises:
        CheckpointError: missing, unreadable, or not an evalband BC checkpoint.

    >>> import tempfile
    >>> policy = BCPolicy(1, 1, 4, norm_stats([[0.0], [1.0]], [[0.0], [1.0]]))
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     digest = save_checkpoint(policy, Path(tmp) / "p.pt")
    ...     load_policy(Path(tmp) / "p.pt").checkpoint_hash == digest
    True
    """
    data = _read(path)
    policy = _policy_from_bytes(data, repr(os.fspath(path)))
    return TorchPolicy(policy, checkpoint_hash=hashlib.sha256(data).hexdigest())
