"""Adapter: a torch module as an evalband policy (numpy in, numpy float64 out).

Importing this module imports torch (the optional extra ``evalband[bc]``); nothing in
``evalband`` imports it until a torch policy is asked for.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from numpy.typing import ArrayLike, NDArray

from evalband.errors import InvalidInputError

__all__ = ["TorchPolicy", "torch_policy"]


def _module_dtype_device(module: torch.nn.Module) -> tuple[torch.dtype, torch.device]:
    """The dtype and device of the module's first floating tensor (default dtype, CPU if none)."""
    for tensor in [*module.parameters(), *module.buffers()]:
        if tensor.is_floating_point():
            return tensor.dtype, tensor.device
    return torch.get_default_dtype(), torch.device("cpu")


class TorchPolicy:
    """A torch module as a policy: ``obs -> action`` on numpy arrays, without gradients.

    One observation of shape ``(D,)`` gives an action of shape ``(A,)``; a batch ``(B, D)``
    gives ``(B, A)`` (so :attr:`batched` is ``True`` and lockstep batch simulators may call
    it once per step for every episode). Inputs are cast to the module's floating dtype;
    outputs are ``float64`` numpy arrays. The module is put in eval mode. Instances pickle
    (the module pickles with them).

    Attributes:
        module: the wrapped module.
        checkpoint_hash: sha256 of the checkpoint file the module was loaded from, or
            ``None``; the runner records it as the manifest's ``policy_hash``.
        batched: always ``True``.
        num_threads: torch intra-op threads set (once per process, on the first call) in the
            process that calls the policy; ``None`` leaves torch's setting alone.

    >>> policy = TorchPolicy(torch.nn.Linear(2, 1, bias=False).requires_grad_(False))
    >>> _ = policy.module.weight.copy_(torch.tensor([[1.0, -2.0]]))
    >>> policy(np.array([3.0, 1.0])).tolist()
    [1.0]
    >>> policy(np.array([[3.0, 1.0], [0.0, 1.0]])).tolist()
    [[1.0], [-2.0]]
    """

    batched = True

    def __init__(
        self,
        module: torch.nn.Module,
        *,
        checkpoint_hash: str | None = None,
        num_threads: int | None = 1,
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
        self._threads_set = False

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_threads_set"] = False  # a new process sets its own thread count
        return state

    def __call__(self, obs: ArrayLike) -> NDArray[np.float64]:
        """Act on one observation ``(D,)`` or a batch ``(B, D)``."""
        arr = np.asarray(obs)
        single = arr.ndim <= 1
        if arr.ndim > 2:
            raise InvalidInputError(
                f"observation must be shaped (D,) or a batch (B, D); got shape {arr.shape}"
            )
        if self.num_threads is not None and not self._threads_set:
            # Small policies run fastest single-threaded, and workers sharing the cores
            # with torch's own thread pool thrash (measured here: ~12 ms vs ~0.1 ms per
            # call on 2 cores). Set once, in the process that calls the policy.
            torch.set_num_threads(self.num_threads)
            self._threads_set = True
        dtype, device = _module_dtype_device(self.module)
        # np.array copies: a read-only observation never reaches torch.from_numpy.
        batch = torch.from_numpy(np.array(arr.reshape(1, -1) if single else arr, dtype=float))
        with torch.no_grad():
            out = self.module(batch.to(device=device, dtype=dtype))
        result: NDArray[np.float64] = out.detach().cpu().numpy().astype(np.float64)
        return result[0] if single else result

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
