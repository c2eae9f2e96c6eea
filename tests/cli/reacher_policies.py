"""A weaker Reacher controller for the metric tests: the IK-PD controller with a low gain."""

from __future__ import annotations

from typing import Any

from evalband.policies.classical import reacher_ik_pd


def soft(obs: Any) -> Any:
    """``reacher_ik_pd`` at a third of its gain: it still reaches, more slowly."""
    return reacher_ik_pd(obs, kp=0.7)


soft.batched = True  # type: ignore[attr-defined]
