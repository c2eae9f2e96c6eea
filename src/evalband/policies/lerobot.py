"""lerobot checkpoints as evalband policies: ``--policy lerobot:PATH[?device=cpu]``.

``PATH`` is a local lerobot ``pretrained_model`` directory, as ``lerobot-train`` saves it, or
a Hub id ``ORG/NAME`` found in the local Hugging Face cache (:func:`hub_snapshot`: as lerobot
leaves a model it downloaded; nothing is ever downloaded here)
(``config.json``, ``model.safetensors``, ``policy_preprocessor.json``,
``policy_postprocessor.json`` and their state files). It is loaded with lerobot's own code,
the way ``lerobot-eval`` loads ``--policy.path`` (huggingface/lerobot,
``src/lerobot/scripts/lerobot_eval.py``, ``eval_main``; same names in 0.4 and 0.6):

* ``PreTrainedConfig.from_pretrained(PATH)`` (``src/lerobot/configs/policies.py``), then the
  policy class of its ``type`` (``get_policy_class``) ``.from_pretrained(PATH, config=...)``,
  as ``make_policy`` does for a config with a ``pretrained_path``
  (``src/lerobot/policies/factory.py``);
* ``make_pre_post_processors(config, pretrained_path=PATH, preprocessor_overrides=
  {"device_processor": {"device": ...}})``: the saved normalisation and device pipelines.

Each step goes as in ``lerobot-eval``'s ``rollout``: the env's observation through
``preprocess_observation`` (``src/lerobot/envs/utils.py``: ``pixels`` to
``observation.image`` as float CHW in [0, 1], ``agent_pos`` to ``observation.state``,
``environment_state`` to ``observation.environment_state``, a batch axis added), the task
string as ``observation["task"]``, the preprocessor, ``select_action`` under
``torch.inference_mode``, the postprocessor, and the first row of the action as numpy.

Episode lifecycle: ``reset(context)`` calls the policy's ``reset()`` (ACT and diffusion
clear their action queues: nothing leaks into the next episode), resets both processor
pipelines and seeds torch with the episode's seed (``context.seed``), so a stochastic
policy (diffusion's noise) draws the same noise whenever the episode is played. The task is
the panel's instruction (``context.task``), ``""`` when it has none (as lerobot-eval gives
envs without one, such as PushT). lerobot is imported in :meth:`LerobotPolicy.setup`, never
at import time; it needs its own virtualenv here (docs/extending.md, lerobot checkpoints).

>>> p = LerobotPolicy("outputs/pretrained_model", device="cpu")
>>> p.name, p.device
('lerobot:outputs/pretrained_model', 'cpu')
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import numpy as np

from evalband.errors import PolicyNotFoundError
from evalband.policies._contract import EpisodeContext, policy_factory

__all__ = ["LEROBOT_PREFIX", "LerobotBatchPolicy", "LerobotPolicy", "batchable", "hub_cache",
           "hub_snapshot", "is_lerobot", "lerobot_policy"]

LEROBOT_PREFIX = "lerobot:"
"""Policy names starting with this are lerobot ``pretrained_model`` directories."""

_OPTIONS = ("device",)


def is_lerobot(name: str) -> bool:
    """Whether a policy name is a lerobot checkpoint (``lerobot:PATH``).

    >>> is_lerobot("lerobot:outputs/pretrained_model"), is_lerobot("pusht:expert")
    (True, False)
    """
    return name.startswith(LEROBOT_PREFIX)


def _parse(name: str) -> tuple[str, dict[str, str]]:
    """``lerobot:PATH[?device=D]`` -> ``(PATH, options)``.

    >>> _parse("lerobot:ckpt/pretrained_model?device=cuda")
    ('ckpt/pretrained_model', {'device': 'cuda'})
    """
    body = name[len(LEROBOT_PREFIX):]
    path, _, query = body.partition("?")
    options = {k: v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()}
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise PolicyNotFoundError(
            f"policy {name!r}: unknown option {unknown[0]!r}; expected "
            f"lerobot:PATH[?device=cpu|cuda|mps]"
        )
    return path, options


class LerobotPolicy:
    """One lerobot policy with its processors (see the module docstring).

    Args:
        path: the ``pretrained_model`` directory.
        device: the torch device (``"cpu"`` by default; lerobot-eval's ``--policy.device``).
        name: the name runs record (default ``lerobot:PATH``).
    """

    def __init__(self, path: str, device: str = "cpu", name: str | None = None) -> None:
        self.path = str(path)
        self.device = device
        self.name = name or f"{LEROBOT_PREFIX}{self.path}"
        self.policy: Any = None
        self.preprocessor: Any = None
        self.postprocessor: Any = None
        self.task = ""
        self._torch: Any = None
        self._to_batch: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    def setup(self) -> None:
        """Load the config, the weights and both processor pipelines (lerobot's loaders)."""
        if self.policy is not None:
            return
        import torch
        from lerobot.configs.policies import PreTrainedConfig
        from lerobot.envs.utils import preprocess_observation
        from lerobot.policies.factory import get_policy_class, make_pre_post_processors

        config = PreTrainedConfig.from_pretrained(self.path)
        config.pretrained_path = self.path
        config.device = self.device
        policy = get_policy_class(config.type).from_pretrained(self.path, config=config)
        policy.to(self.device)
        policy.eval()
        self.preprocessor, self.postprocessor = make_pre_post_processors(
            policy_cfg=config,
            pretrained_path=self.path,
            preprocessor_overrides={"device_processor": {"device": self.device}},
        )
        self.policy = policy
        self._torch = torch
        self._to_batch = preprocess_observation

    def reset(self, context: EpisodeContext) -> None:
        """Clear the action queue and the processors' state; seed torch; take the task."""
        self.setup()
        self.policy.reset()
        self.preprocessor.reset()
        self.postprocessor.reset()
        self._torch.manual_seed(context.seed)
        self.task = context.task or ""

    def act(self, obs: Any) -> np.ndarray:
        """The action for one observation (a dict of arrays, as gym-pusht and lerobot envs give).

        Raises:
            TypeError: the observation is not a dict (lerobot's policies read named features).
        """
        if self.policy is None:
            self.setup()
        if not isinstance(obs, dict):
            raise TypeError(
                f"lerobot policy {self.name!r} expected a dict observation (e.g. gym-pusht with "
                f"obs_type pixels_agent_pos or environment_state_agent_pos), got "
                f"{type(obs).__name__}; set the panel's env_kwargs to an observation type "
                "lerobot's preprocess_observation reads"
            )
        assert self._to_batch is not None  # set by setup()
        torch = self._torch
        batch = self._to_batch(obs)
        batch["task"] = [self.task]
        batch = self.preprocessor(batch)
        with torch.inference_mode():
            action = self.policy.select_action(batch)
        action = self.postprocessor(action)
        return np.asarray(action.to("cpu").numpy()[0])

    def close(self) -> None:
        """Drop the model (frees its memory)."""
        self.policy = self.preprocessor = self.postprocessor = None


class LerobotBatchPolicy(LerobotPolicy):
    """One lerobot ACT serving every lockstep slot: one forward pass for all slots in need.

    ACT's ``select_action`` keeps ONE action queue for the whole batch it was given, so the
    episodes of a batch must start together; lockstep slots start whenever their last
    episode ended. This keeps a queue per slot instead: at each step the slots whose queue
    is empty are stacked (observations through lerobot's ``preprocess_observation`` and the
    preprocessor, their tasks as the batch's ``task`` list) and ``predict_action_chunk``
    runs once for all of them; each slot's queue takes its row's first ``n_action_steps``
    actions (as ``select_action`` does), and the actions popped this step go through the
    postprocessor together. ``reset(context)`` empties the slot's queue only. One at a time
    (slot 0) it computes what ``select_action`` does. Only for ACT without temporal
    ensembling (:func:`batchable`); other policies get one instance per slot.
    """

    def __init__(self, path: str, device: str = "cpu", name: str | None = None) -> None:
        super().__init__(path, device=device, name=name)
        self._queues: dict[int, list[Any]] = {}
        self._tasks: dict[int, str] = {}
        self.forward_passes = 0  # predict_action_chunk calls (one per step with slots in need)

    def reset(self, context: EpisodeContext) -> None:
        """Empty ``context.slot``'s action queue; take its task (ACT draws no noise)."""
        self.setup()
        self._queues[context.slot] = []
        self._tasks[context.slot] = context.task or ""
        self.preprocessor.reset()
        self.postprocessor.reset()

    def act(self, obs: Any) -> np.ndarray:
        """The action for one observation in slot 0."""
        stacked = {key: np.asarray(value)[None] for key, value in self._checked(obs).items()}
        action: np.ndarray = self.act_batch(stacked, [0])[0]
        return action

    def _checked(self, obs: Any) -> dict[str, Any]:
        if self.policy is None:
            self.setup()
        if not isinstance(obs, dict):
            raise TypeError(
                f"lerobot policy {self.name!r} expected a dict observation, got "
                f"{type(obs).__name__}; set the panel's env_kwargs to an observation type "
                "lerobot's preprocess_observation reads")
        return obs

    def act_batch(self, obs_batch: Any, slots: Any) -> np.ndarray:
        """Actions for stacked observations; row ``i`` belongs to ``slots[i]``."""
        obs_batch = self._checked(obs_batch)
        assert self._to_batch is not None  # set by setup()
        torch = self._torch
        slots = [int(s) for s in slots]
        need = [i for i, slot in enumerate(slots) if not self._queues.get(slot)]
        if need:
            rows = np.asarray(need)
            batch = self._to_batch(_take_rows(obs_batch, rows))
            batch["task"] = [self._tasks.get(slots[i], "") for i in need]
            batch = self.preprocessor(batch)
            steps = int(self.policy.config.n_action_steps)
            with torch.inference_mode():
                chunk = self.policy.predict_action_chunk(batch)[:, :steps]
            self.forward_passes += 1
            for row, i in enumerate(need):
                self._queues[slots[i]] = list(chunk[row])
        popped = torch.stack([self._queues[slot].pop(0) for slot in slots])
        actions = self.postprocessor(popped)
        return np.asarray(actions.to("cpu").numpy())


_REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")
"""A Hugging Face Hub id ``ORG/NAME`` (read as one only when no such local path exists)."""


def hub_cache() -> Path:
    """The local Hugging Face Hub cache, as ``huggingface_hub`` finds it.

    ``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``.
    """
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    return Path.home() / ".cache" / "huggingface" / "hub"


def hub_snapshot(repo_id: str, name: str | None = None) -> str:
    """The local snapshot of model ``ORG/NAME`` in the Hugging Face cache; nothing downloads.

    The cache's own layout (``models--ORG--NAME/refs/main`` names the snapshot in
    ``snapshots/``), as a download by lerobot or ``huggingface-cli download`` leaves it.

    Raises:
        PolicyNotFoundError: no snapshot of the model in the cache (one line: where it
            looked and how to bring it).

    >>> import tempfile
    >>> os.environ["HF_HUB_CACHE"] = tempfile.mkdtemp()
    >>> hub_snapshot("lerobot/act_aloha")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    evalband.errors.PolicyNotFoundError: policy 'lerobot:lerobot/act_aloha': no local ...
    >>> del os.environ["HF_HUB_CACHE"]
    """
    repo = hub_cache() / ("models--" + repo_id.replace("/", "--"))
    ref = repo / "refs" / "main"
    candidates = []
    if ref.is_file():
        candidates.append(repo / "snapshots" / ref.read_text().strip())
    if (repo / "snapshots").is_dir():
        candidates += sorted((repo / "snapshots").iterdir())
    for snapshot in candidates:
        if (snapshot / "config.json").is_file():
            return str(snapshot)
    raise PolicyNotFoundError(
        f"policy {name or LEROBOT_PREFIX + repo_id!r}: no local directory {repo_id!r} and no "
        f"copy of model {repo_id} in the Hugging Face cache ({repo}); evalband never "
        "downloads: fetch it where there is network (huggingface-cli download "
        f"{repo_id}) and copy the cache here, or give a pretrained_model directory"
    )


def batchable(path: str) -> bool:
    """Whether a checkpoint's policy runs batched across slots (:class:`LerobotBatchPolicy`).

    ACT without temporal ensembling (its ``select_action`` is a queue of chunk actions), read
    from ``config.json`` without importing lerobot.

    >>> import json, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> _ = open(f"{folder}/config.json", "w").write(json.dumps({"type": "act"}))
    >>> batchable(folder)
    True
    """
    import json

    try:
        with open(os.path.join(path, "config.json")) as handle:
            config = json.load(handle)
    except (OSError, ValueError):
        return False
    return (isinstance(config, dict) and config.get("type") == "act"
            and config.get("temporal_ensemble_coeff") is None)


def lerobot_policy(name: str) -> Callable[[], LerobotPolicy] | LerobotBatchPolicy:
    """The policy for ``lerobot:PATH[?device=D]``: batched ACT, or one policy per slot.

    An ACT checkpoint (:func:`batchable`) is one :class:`LerobotBatchPolicy` with a queue
    per lockstep slot and one forward pass per step for the slots in need; any other policy
    is a factory, so ``--batch N`` gives every slot its own :class:`LerobotPolicy` (its own
    queues and observation history). Checks that the directory exists and that lerobot is
    importable, without importing it.

    Raises:
        PolicyNotFoundError: no such directory, no ``config.json`` in it, or no lerobot.

    >>> try:
    ...     lerobot_policy("lerobot:/no/such/dir")
    ... except PolicyNotFoundError as exc:
    ...     print("does not exist" in str(exc))
    True
    """
    path, options = _parse(name)
    if not os.path.exists(path) and _REPO_ID.fullmatch(path):
        path = hub_snapshot(path, name)
    config = os.path.join(path, "config.json")
    if not os.path.isfile(config):
        what = "has no config.json" if os.path.isdir(path) else "does not exist"
        raise PolicyNotFoundError(
            f"policy {name!r}: the lerobot checkpoint directory {os.path.abspath(path)!r} "
            f"{what}; give a lerobot pretrained_model directory (config.json, "
            "model.safetensors, policy_preprocessor.json, policy_postprocessor.json)"
        )
    if importlib.util.find_spec("lerobot") is None:
        raise PolicyNotFoundError(
            f"policy {name!r} is a lerobot checkpoint but lerobot is not installed in this "
            "Python; install it in its own virtualenv (see docs/extending.md, lerobot "
            "checkpoints) and run evalband from there"
        )
    device = options.get("device") or "cpu"
    if batchable(path):
        return LerobotBatchPolicy(path, device=device, name=name)

    @policy_factory
    def make() -> LerobotPolicy:
        return LerobotPolicy(path, device=device, name=name)

    make.name = name  # type: ignore[attr-defined]
    return make


def _take_rows(batch: Any, rows: np.ndarray) -> Any:
    """The ``rows`` of a stacked observation; nested dicts (``pixels: {camera: ...}``) per key.

    >>> _take_rows({"a": np.arange(3), "b": {"c": np.arange(6).reshape(3, 2)}}, np.array([2]))
    {'a': array([2]), 'b': {'c': array([[4, 5]])}}
    """
    if isinstance(batch, dict):
        return {key: _take_rows(value, rows) for key, value in batch.items()}
    return np.asarray(batch)[rows]
