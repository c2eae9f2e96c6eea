"""Helpers run inside the lerobot side venv (.venv-lerobot) by tests/policies/test_lerobot.py.

``python lerobot_act.py save DIR`` saves a small, randomly initialised lerobot ACT for gym-pusht's
``environment_state_agent_pos`` observations as a ``pretrained_model`` directory, with
lerobot's own ``save_pretrained`` (config, weights) and processor pipelines (normalisation
stats made up here: nothing comes from a hub). No image input, so no vision backbone.

``python lerobot_act.py runs DIR PANEL FRESH STORE`` plays, through ``run_panel``, the
checkpoint on FRESH (run ``fresh``), on PANEL with its episodes in lockstep (``batch``: one
batched ACT with a queue per slot; its forward passes go to STORE.json) and
:class:`NoReset` on PANEL (run ``no-reset``): the same policy with its reset left out, the
way a bare ``obs -> action`` wrapper plays it (the action queue is never cleared, so an
episode starts with the last one's leftover actions).
"""

from __future__ import annotations

import sys
from typing import Any

CHUNK = 10
"""ACT's chunk (and actions executed per chunk): a 25-step episode leaves 5 queued."""


def save_act(directory: str, seed: int = 0) -> None:
    import torch
    from lerobot.configs.types import FeatureType, PolicyFeature
    from lerobot.policies.act.configuration_act import ACTConfig
    from lerobot.policies.act.modeling_act import ACTPolicy
    from lerobot.policies.factory import make_pre_post_processors

    torch.manual_seed(seed)
    config = ACTConfig(
        input_features={
            "observation.state": PolicyFeature(type=FeatureType.STATE, shape=(2,)),
            "observation.environment_state": PolicyFeature(type=FeatureType.ENV, shape=(16,)),
        },
        output_features={"action": PolicyFeature(type=FeatureType.ACTION, shape=(2,))},
        chunk_size=CHUNK, n_action_steps=CHUNK, dim_model=32, n_heads=2, dim_feedforward=64,
        n_encoder_layers=1, n_decoder_layers=1, n_vae_encoder_layers=1, latent_dim=8,
        pretrained_backbone_weights=None, device="cpu", push_to_hub=False,
    )
    policy = ACTPolicy(config)
    # PushT's workspace is 512 x 512: actions spread over it, so the agent reaches the T.
    stats: dict[str, dict[str, Any]] = {
        "observation.state": {"mean": torch.full((2,), 256.0), "std": torch.full((2,), 100.0)},
        "observation.environment_state": {"mean": torch.full((16,), 256.0),
                                          "std": torch.full((16,), 100.0)},
        "action": {"mean": torch.full((2,), 256.0), "std": torch.full((2,), 150.0)},
    }
    pre, post = make_pre_post_processors(config, dataset_stats=stats)
    policy.save_pretrained(directory)
    pre.save_pretrained(directory)
    post.save_pretrained(directory)


class NoReset:
    """The lerobot policy with the reset of its action queue left out (a negative control)."""

    name = "no-reset"

    def __init__(self, path: str) -> None:
        from evalband.policies.lerobot import LerobotPolicy

        self.inner = LerobotPolicy(path)

    def setup(self) -> None:
        self.inner.setup()

    def reset(self, context: Any) -> None:
        self.inner.task = context.task or ""

    def act(self, obs: Any) -> Any:
        return self.inner.act(obs)


def runs(path: str, panel: str, fresh: str, store_path: str) -> None:
    import json

    from evalband.panel import load_panel
    from evalband.policies import resolve_policy
    from evalband.run import run_panel
    from evalband.store import open_store

    batched = resolve_policy(f"lerobot:{path}")  # ACT: one policy, a queue per slot
    with open_store(store_path) as store:
        run_panel(load_panel(fresh), f"lerobot:{path}", store, run_id="fresh")
        run_panel(load_panel(panel), batched, store, run_id="batch", batch_size=3)
        run_panel(load_panel(panel), NoReset(path), store, run_id="no-reset")
    with open(f"{store_path}.json", "w") as out:
        json.dump({"kind": type(batched).__name__, "forward_passes": batched.forward_passes}, out)


if __name__ == "__main__":
    if sys.argv[1] == "save":
        save_act(sys.argv[2])
    else:
        runs(*sys.argv[2:6])
