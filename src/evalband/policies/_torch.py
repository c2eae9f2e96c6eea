"""Adapter: a torch module as an evalband policy (numpy in, numpy float64 out).

Importing this module imports torch (the optional extra ``evalband[bc]``); nothing in
``evalband`` imports it until a torch policy is asked for.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import torch
from numpy.typing import ArrayLike, NDArray

from evalband.errors import InvalidInputError

__all__ = ["PROBE_ROWS", "ROW_BLOCK", "TorchPolicy", "torch_policy"]

ROW_BLOCK = 16
"""Rows per module pass of :class:`TorchPolicy` (observations are padded to whole blocks).

CPU matrix kernels (MKL's ``sgemm`` here) pick their code path, and with it the order in which
a row's dot products are summed, from the number of rows: one observation alone and the same
observation inside a batch of 50 gave actions differing in the last bits, and a few such bits
can send a MuJoCo episode elsewhere. Evaluating every observation, alone or batched, in
passes of exactly this many rows keeps the kernel and the summation order the same, so each
observation's action is bitwise the same whatever batch it comes in. Measured on this project's
CPU (AVX-512 MKL, torch 2.13) for the BC MLP: blocks of 4 or 8 rows still differed with the
row's position in the block; 16 did not, for every width tried (16-512). The test suite checks
it on the machine it runs on (``tests/run/test_batched.py``), and every policy checks it once
where it runs, on its first batched call (:attr:`TorchPolicy.batch_mode`): where a probe batch
differs from the same rows passed one by one, it falls back to one pass per row.
"""

PROBE_ROWS = 2 * ROW_BLOCK + 3
"""Rows of the probe batch (:meth:`TorchPolicy.probe_batch_mode`): blocks, the last partial."""


def _module_dtype_device(module: torch.nn.Module) -> tuple[torch.dtype, torch.device]:
    """The dtype and device of the module's first floating tensor (default dtype, CPU if none)."""
    for tensor in itertools.chain(module.parameters(), module.buffers()):  # stops at the first
        if tensor.is_floating_point():
            return tensor.dtype, tensor.device
    return torch.get_default_dtype(), torch.device("cpu")


class TorchPolicy:
    """A torch module as a policy: ``obs -> action`` on numpy arrays, without gradients.

    One observation of shape ``(D,)`` gives an action of shape ``(A,)``; a batch ``(B, D)``
    gives ``(B, A)``, as does :meth:`act_batch` (so :attr:`batched` is ``True`` and the
    runner's lockstep mode calls it once per step for every episode). Inputs are cast to the
    module's floating dtype; outputs are ``float64`` numpy arrays. The module runs in eval mode
    under ``torch.inference_mode``, in passes of exactly ``row_block`` rows (the last padded
    by repeating its last row), so an observation's action does not depend on the batch it
    comes in (:data:`ROW_BLOCK`); this assumes the module treats rows independently, as an
    MLP in eval mode does. Because that bitwise equality is a property of the machine's
    kernels, the first batched call probes it (:meth:`probe_batch_mode`) and, where a batch
    differs from its rows passed one by one, every later batch is passed one row at a time
    (each padded to a block the same way), so actions never depend on the batch. Instances
    pickle (the module pickles with them; a new process probes again).

    Attributes:
        module: the wrapped module.
        checkpoint_hash: sha256 of the checkpoint file the module was loaded from, or
            ``None``; the runner records it as the manifest's ``policy_hash``.
        batched: always ``True``.
        num_threads: torch intra-op threads set (once per process, on the first call) in the
            process that calls the policy; ``None`` leaves torch's setting alone.
        row_block: rows per module pass (:data:`ROW_BLOCK`); ``None`` passes the rows as given
            (faster for one observation, but batched and single actions may then differ in
            the last bits).
        batch_mode: how batches are passed: ``"blocked"`` (in blocks of ``row_block``
            rows), ``"per-row"`` (one padded pass per row: the probe found a batch's rows
            differing from single calls here), ``"unblocked"`` (``row_block=None``), or
            ``None`` until the first batched call probes it.

    >>> policy = TorchPolicy(torch.nn.Linear(2, 1, bias=False).requires_grad_(False))
    >>> _ = policy.module.weight.copy_(torch.tensor([[1.0, -2.0]]))
    >>> policy(np.array([3.0, 1.0])).tolist()
    [1.0]
    >>> policy(np.array([[3.0, 1.0], [0.0, 1.0]])).tolist()
    [[1.0], [-2.0]]
    >>> policy.act_batch(np.array([[3.0, 1.0]])).shape
    (1, 1)
    """

    batched = True

    def __init__(
        self,
        module: torch.nn.Module,
        *,
        checkpoint_hash: str | None = None,
        num_threads: int | None = 1,
        row_block: int | None = ROW_BLOCK,
    ) -> None:
        if not isinstance(module, torch.nn.Module):
            raise InvalidInputError(
                f"TorchPolicy wraps a torch.nn.Module; got {type(module).__name__}"
            )
        if checkpoint_hash is not None and not isinstance(checkpoint_hash, str):
            raise InvalidInputError(
                f"checkpoint_hash must be a hex string or None; got {checkpoint_hash!r}"
            )
        self.module = module.eval()
        self.checkpoint_hash = checkpoint_hash
        self.num_threads = num_threads
        if row_block is not None and (isinstance(row_block, bool) or int(row_block) < 1):
            raise InvalidInputError(f"row_block must be an integer >= 1 or None; got {row_block!r}")
        self.row_block = None if row_block is None else int(row_block)
        self.batch_mode: str | None = "unblocked" if self.row_block is None else None
        self._threads_set = False

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_threads_set"] = False  # a new process sets its own thread count
        if state.get("row_block") is not None:
            state["batch_mode"] = None  # ... and probes its own kernels
        return state

    @staticmethod
    def _rows_differ(batch: NDArray[np.float64], singles: NDArray[np.float64]) -> bool:
        """Whether a probe batch's actions differ (bitwise) from its rows' single calls."""
        return not np.array_equal(batch, singles)

    def probe_batch_mode(self, dim: int | None = None) -> str | None:
        """Probe (once) whether batched rows equal single-row calls here; set :attr:`batch_mode`.

        A fixed, seeded batch of :data:`PROBE_ROWS` observations is passed in blocks and
        row by row; ``"blocked"`` if every row is bitwise the same, else ``"per-row"``.

        Args:
            dim: the observation width; ``None`` reads it from the module's first layer
                with ``in_features`` (returns ``None``, probing nothing, when there is none).

        Returns:
            The batch mode, or ``None`` when not yet known.

        >>> TorchPolicy(torch.nn.Linear(3, 2)).probe_batch_mode()
        'blocked'
        """
        known: str | None = getattr(self, "batch_mode", None)
        if known is not None:
            return known
        self._set_threads()  # the kernels probed are the ones later calls use
        if dim is None:
            widths = (getattr(m, "in_features", None) for m in self.module.modules())
            dim = next((w for w in widths if isinstance(w, int)), None)
            if dim is None:
                return None
        rows = np.random.default_rng(0).uniform(-1.0, 1.0, size=(PROBE_ROWS, dim))
        batch = self._blocked(rows)
        singles = np.concatenate([self._blocked(rows[i : i + 1]) for i in range(len(rows))])
        self.batch_mode = "per-row" if self._rows_differ(batch, singles) else "blocked"
        return self.batch_mode

    def __call__(self, obs: ArrayLike) -> NDArray[np.float64]:
        """Act on one observation ``(D,)`` or a batch ``(B, D)``."""
        arr = np.asarray(obs)
        if arr.ndim > 2:
            raise InvalidInputError(
                f"observation must be shaped (D,) or a batch (B, D); got shape {arr.shape}"
            )
        if arr.ndim <= 1:
            action: NDArray[np.float64] = self._forward(arr.reshape(1, -1))[0]
            return action
        return self._forward(arr)

    def act_batch(self, obs: ArrayLike) -> NDArray[np.float64]:
        """Act on a batch of observations ``(B, D)``: actions ``(B, A)``, row ``i`` for ``obs[i]``.

        Each row is bitwise the action ``self(obs[i])`` gives (see :data:`ROW_BLOCK`).

        Raises:
            InvalidInputError: ``obs`` is not 2-D.
        """
        arr = np.asarray(obs)
        if arr.ndim != 2:
            raise InvalidInputError(f"act_batch expects a batch (B, D); got shape {arr.shape}")
        return self._forward(arr)

    def _forward(self, rows: NDArray[Any]) -> NDArray[np.float64]:
        """The module on ``rows`` ``(B, D)``, as :attr:`batch_mode` says (probed first)."""
        self._set_threads()
        block: int | None = getattr(self, "row_block", ROW_BLOCK)
        if len(rows) > 1 and rows.ndim == 2 and block:
            mode = getattr(self, "batch_mode", None) or self.probe_batch_mode(rows.shape[1])
            if mode == "per-row":
                return np.concatenate([self._blocked(rows[i : i + 1]) for i in range(len(rows))])
        return self._blocked(rows)

    def _set_threads(self) -> None:
        if self.num_threads is not None and not self._threads_set:
            # Small policies run fastest single-threaded, and workers sharing the cores
            # with torch's own thread pool thrash (measured here: ~12 ms vs ~0.1 ms per
            # call on 2 cores). Set once, in the process that calls the policy.
            torch.set_num_threads(self.num_threads)
            self._threads_set = True

    def _blocked(self, rows: NDArray[Any]) -> NDArray[np.float64]:
        """The module on ``rows`` ``(B, D)``, in passes of ``row_block`` rows."""
        dtype, device = _module_dtype_device(self.module)
        n = len(rows)
        block = getattr(self, "row_block", ROW_BLOCK)
        # A fresh array: a read-only observation never reaches torch.from_numpy.
        padded = n + (block - n % block if block and n % block else 0)
        data = np.empty((padded, rows.shape[1] if rows.ndim == 2 else 0), dtype=float)
        data[:n] = rows
        data[n:] = rows[-1:]  # padding rows repeat the last row (none when n == padded)
        batch = torch.from_numpy(data).to(device=device, dtype=dtype)
        with torch.inference_mode():
            if block and len(data) > block:
                parts = [batch[i : i + block] for i in range(0, len(data), block)]
                out = torch.cat([self.module(part) for part in parts])
            else:  # one block (or no blocking)
                out = self.module(batch)
        result: NDArray[np.float64] = out.cpu().numpy().astype(np.float64)
        return result[:n]

    def __repr__(self) -> str:
        digest = f", checkpoint_hash={self.checkpoint_hash[:12]!r}" if self.checkpoint_hash else ""
        return f"TorchPolicy({type(self.module).__name__}{digest})"


def torch_policy(obj: Any, *, checkpoint_hash: str | None = None) -> TorchPolicy:
    """Wrap any ``torch.nn.Module`` as a :class:`TorchPolicy` (a ``TorchPolicy`` is returned as is).

    Args:
        obj: a torch module (or an existing :class:`TorchPolicy`).
        checkpoint_hash: sha256 of the checkpoint the module came from, when known.

    Returns:
        The policy adapter.

    Raises:
        InvalidInputError: ``obj`` is neither a torch module nor a ``TorchPolicy``.

    >>> torch_policy(torch.nn.Identity())(np.array([0.5, 2.0])).tolist()
    [0.5, 2.0]
    """
    if isinstance(obj, TorchPolicy):
        return obj
    if not isinstance(obj, torch.nn.Module):
        raise InvalidInputError(
            f"torch_policy expects a torch.nn.Module; got {type(obj).__name__}"
        )
    return TorchPolicy(obj, checkpoint_hash=checkpoint_hash)
