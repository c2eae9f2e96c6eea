"""Resolve a policy name or path into a policy (the function behind :mod:`evalband.policies`)."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

from evalband._util.imports import is_import_path
from evalband._util.names import BUILTIN_POLICIES, CHECKPOINT_SUFFIX
from evalband.errors import PolicyImportError, PolicyNotFoundError

__all__ = ["resolve_policy"]


def _not_found(name: str, why: str) -> PolicyNotFoundError:
    available = ", ".join(sorted(BUILTIN_POLICIES))
    return PolicyNotFoundError(
        f"policy {name!r} not found: {why}; use a built-in name ({available}) "
        f"or an import path 'package.module:attr'"
    )


def _load_checkpoint_policy(name: str) -> Callable[..., Any]:
    """A ``*.pt`` checkpoint as a ``TorchPolicy`` (imports torch, the ``bc`` extra)."""
    if not os.path.isfile(name):
        raise _not_found(name, f"checkpoint file {os.path.abspath(name)!r} does not exist")
    try:
        from evalband.policies.bc import load_policy
    except ModuleNotFoundError as exc:
        if exc.name != "torch":
            raise
        raise PolicyNotFoundError(
            f"policy {name!r} is a torch checkpoint but torch is not installed; "
            "install the extra: pip install 'evalband[bc]'"
        ) from None
    return load_policy(name)


def _remote_policy(url: str) -> Any:
    """A ``ws://`` URL as a :class:`~evalband.policies.remote.RemotePolicy` (not connected)."""
    from evalband.policies.remote import RemotePolicy

    try:
        import msgpack  # noqa: F401
        import websockets  # noqa: F401
    except ModuleNotFoundError as exc:
        raise PolicyNotFoundError(
            f"policy {url!r} is a policy server but {exc.name} is not installed; install "
            "the extra: pip install 'evalband[remote]'"
        ) from None
    return RemotePolicy.from_url(url)


def _wrap_torch_module(obj: Any) -> Any:
    """Wrap a ``torch.nn.Module`` instance in ``TorchPolicy``; anything else is returned as is.

    torch is only looked up in ``sys.modules``: a torch module exists only if torch is imported.
    """
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.nn.Module):
        from evalband.policies._torch import TorchPolicy

        return TorchPolicy(obj)
    return obj


def resolve_policy(name_or_path: str) -> Any:
    """Return the policy named by a built-in name, a checkpoint, a server or a ``module:attr``.

    Built-in names (:data:`BUILTIN_POLICIES`) take precedence. A name ending in ``.pt`` is a
    checkpoint file written by ``evalband.policies.bc.save_checkpoint``, resolved relative to
    the current directory; it is loaded as a ``TorchPolicy`` whose ``checkpoint_hash`` the
    runner records. ``ws://HOST:PORT[?replan=K]`` is a policy server speaking openpi's
    websocket protocol (:class:`~evalband.policies.remote.RemotePolicy`; connected when the
    run starts). ``lerobot:PATH[?device=D]`` is a lerobot ``pretrained_model`` directory
    loaded with lerobot's own code (:mod:`evalband.policies.lerobot`; one policy per
    lockstep slot). Otherwise the string must be ``module:attr`` where ``module`` is
    importable and ``attr`` (dotted for nested attributes, e.g. ``mod:Class.method``) is
    callable; a ``torch.nn.Module`` instance is wrapped in a ``TorchPolicy`` (numpy in,
    numpy out).

    Args:
        name_or_path: e.g. ``"reach1d:damped"``, ``"runs/bc_strong.pt"`` or
            ``"my_pkg.policies:MyPolicy"``.

    Returns:
        The callable.

    Raises:
        PolicyNotFoundError: the name is neither built-in, nor an existing checkpoint, nor an
            importable callable; the message lists the built-in names. A checkpoint when
            torch is not installed.
        evalband.policies.bc.CheckpointError: a ``.pt`` file that is not an evalband
            checkpoint.

    >>> resolve_policy("reach1d:damped")([-0.5, 0.1]).tolist()
    [0.82]
    >>> resolve_policy("evalband.policies.reach1d:baseline").__name__
    'baseline'
    """
    if not isinstance(name_or_path, str) or not name_or_path.strip():
        raise _not_found(str(name_or_path), "expected a non-empty string")
    name = name_or_path.strip()
    if name.startswith(("ws://", "wss://")):
        return _remote_policy(name)
    if name.startswith("lerobot:"):
        from evalband.policies.lerobot import lerobot_policy

        return lerobot_policy(name)
    if name not in BUILTIN_POLICIES and name.endswith(CHECKPOINT_SUFFIX):
        # "pkg.mod:model.pt" may be an attribute path; a file of that name wins.
        if os.path.isfile(name) or not is_import_path(name):
            return _load_checkpoint_policy(name)
    path = BUILTIN_POLICIES.get(name, name)
    module_name, sep, attr_path = path.partition(":")
    if not sep or not module_name or not attr_path:
        raise _not_found(name, "not a built-in name and not of the form 'module:attr'")
    if name not in BUILTIN_POLICIES:  # the run's directory first, as `run` and python -m do
        cwd = os.path.abspath(os.getcwd())
        if cwd not in sys.path:
            sys.path.insert(0, cwd)
    try:
        obj: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing and module_name != missing and not module_name.startswith(missing + "."):
            # The module exists but one of ITS imports is missing: a real error, not ours,
            # said in one line that names both (still a ModuleNotFoundError).
            raise PolicyImportError(
                f"policy {name!r}: module {module_name!r} cannot be imported: No module named "
                f"{missing!r}; install it", name=missing,
            ) from exc
        raise _not_found(name, f"no module named {module_name!r}") from None
    from evalband._util.imports import shadowed_by

    hidden = shadowed_by(obj) if name not in BUILTIN_POLICIES else None
    if hidden is not None:
        top = module_name.partition(".")[0]
        found = getattr(sys.modules.get(top), "__file__", None) or "built in"
        raise PolicyNotFoundError(
            f"policy {name!r}: module {top!r} is {found}, not {hidden} (a module of that "
            "name was found first, e.g. the standard library's); rename your file so its "
            "name is its own")
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            why = f"module {module_name!r} has no attribute {attr_path!r}"
            raise _not_found(name, why) from None
    if not (callable(obj) or any(callable(getattr(obj, m, None)) for m in ("act", "act_batch"))):
        raise _not_found(name, f"{path!r} is a {type(obj).__name__}, not a callable or a "
                         "policy with act() or act_batch()")
    return _wrap_torch_module(obj)
