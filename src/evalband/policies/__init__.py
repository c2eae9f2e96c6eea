"""Built-in policies, the policy contract and the policy resolver.

A policy is any callable ``obs -> action``, or an object with an episode lifecycle
(:class:`Policy`: ``reset(context)`` per episode, ``act(obs)``; see ``docs/extending.md``).
:func:`resolve_policy` turns a built-in name (``reach1d:baseline``, ``pusht:expert``, ...), a saved
behavior-cloning checkpoint (``*.pt``, optional extra ``evalband[bc]``), a policy server
(``ws://HOST:PORT``, optional extra ``evalband[remote]``), a lerobot checkpoint directory
(``lerobot:PATH``, with lerobot installed) or any ``module:attr`` import path into a policy.
torch is imported only when a checkpoint or a torch module is resolved.

>>> from evalband.policies import resolve_policy
>>> policy = resolve_policy("reach1d:baseline")
>>> callable(policy) or hasattr(policy, "act")
True
"""

from __future__ import annotations

from evalband._util.imports import lazy_attributes

_LAZY = {
    "BatchPolicy": "evalband.policies._contract",
    "EpisodeContext": "evalband.policies._contract",
    "Policy": "evalband.policies._contract",
    "resolve_policy": "evalband.policies._resolve",
    "PolicyServer": "evalband.policies._server",
}

__all__ = [*_LAZY]

__getattr__ = lazy_attributes(__name__, _LAZY)
