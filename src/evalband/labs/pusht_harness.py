"""The PushT harness (seed ``000_b66faff61603906b``): two BC policies, seeded suites.

Collect scripted-expert demonstrations on training starts, train a strong behavior-cloning
policy on all of them and a weak one on half of them, evaluate both through the real runner and
store on one panel (factors ``start: train | held_out`` and ``suite: 0..S-1``, ``E`` episodes
per suite), then read the outcomes the way the seed's chapter does:

1. the swing: the strong policy's suite rates against its pooled band;
2. two roads, one band: pooled Wilson vs the seeded bootstrap on the same outcomes;
3. single numbers lie: one suite vs all suites pooled, strong vs weak, each with its paired
   difference interval and verdict;
4. held-out: train-start vs held-out rate and the gap's interval.

``too_few`` shrinks every suite to five episodes: the difference interval balloons.
Needs the ``bc`` extra (torch) and ``mujoco``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalband.errors import InvalidParameterError

if TYPE_CHECKING:
    from collections.abc import Callable

    from evalband.episode import EpisodeRecord
    from evalband.panel import Panel
    from evalband.store import RunStore

__all__ = ["HarnessConfig", "harness_panel", "run_harness", "movements"]


@dataclass(frozen=True)
class HarnessConfig:
    """Sizes of one harness run (the defaults are the seed's)."""

    num_demos: int = 1000
    weak_fraction: float = 0.5
    n_seeds: int = 10
    eval_episodes: int = 20
    seed: int = 0
    epochs: int = 100
    hidden_dim: int = 256
    workers: int = 2
    too_few: bool = False

    def __post_init__(self) -> None:
        for name in ("num_demos", "n_seeds", "eval_episodes", "epochs", "hidden_dim", "workers"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise InvalidParameterError(f"{name} must be a whole number >= 1; got {value!r}")
        if not 0 < self.weak_fraction <= 1:
            raise InvalidParameterError(
                f"weak_fraction must be in (0, 1]; got {self.weak_fraction!r}"
            )

    @property
    def episodes_per_suite(self) -> int:
        """Episodes per suite (five when breaking it with ``too_few``)."""
        return 5 if self.too_few else self.eval_episodes

    @property
    def weak_demos(self) -> int:
        """Demonstrations the weak policy is trained on."""
        return max(1, round(self.num_demos * self.weak_fraction))


def harness_panel(config: HarnessConfig) -> Panel:
    """The evaluation panel: start x suite cells, ``episodes_per_suite`` episodes each.

    >>> p = harness_panel(HarnessConfig(n_seeds=3, eval_episodes=4))
    >>> [c.key for c in p.cells()][:2], p.episodes
    (['start=train,suite=0', 'start=train,suite=1'], 4)
    """
    from evalband.panel import load_panel

    suites: dict[str, dict[str, Any]] = {str(s): {} for s in range(config.n_seeds)}
    return load_panel(
        {
            "name": f"pusht-harness-s{config.seed}-{config.n_seeds}x{config.episodes_per_suite}",
            "description": "PushT harness (seed 000): strong vs weak BC, train vs held-out starts.",
            "env": "evalband/PushT-v0",
            "episodes": config.episodes_per_suite,
            "seed": 1000 + config.seed,
            "budget": {"steps": _budget_steps()},
            "factors": {"start": ["train", "held_out"], "suite": suites},
        }
    )


def _budget_steps() -> int:
    from evalband.envs.pusht import PushTEnv

    return int(PushTEnv().max_steps)


def _train_policies(config: HarnessConfig, out: Path, log: Callable[[str], None]) -> dict[str, str]:
    """Collect demos, train strong and weak BC, save checkpoints; return name -> path."""
    from evalband.policies.bc import save_checkpoint, train_bc
    from evalband.policies.pusht import collect_demos

    out = out.resolve()  # workers and resumes find the checkpoints from any directory
    paths = {"strong": out / "strong.pt", "weak": out / "weak.pt"}
    if all(p.exists() for p in paths.values()):
        log(f"reusing checkpoints in {out}")
        return {k: str(v) for k, v in paths.items()}
    out.mkdir(parents=True, exist_ok=True)
    log(f"collecting {config.num_demos} expert demonstrations (seed {config.seed})")
    obs, actions, episodes = collect_demos(config.num_demos, config.seed)
    for name, n_demos in (("strong", config.num_demos), ("weak", config.weak_demos)):
        rows = episodes < n_demos
        log(f"training {name} BC on {n_demos} demos ({int(rows.sum())} frames)")
        policy = train_bc(obs[rows], actions[rows], hidden_dim=config.hidden_dim,
                          epochs=config.epochs, seed=config.seed)
        save_checkpoint(policy, paths[name], meta={"num_demos": n_demos, "seed": config.seed})
    return {k: str(v) for k, v in paths.items()}


def run_harness(
    store: RunStore,
    config: HarnessConfig,
    out: Path,
    *,
    log: Callable[[str], None] = lambda _: None,
    on_episode: Callable[[EpisodeRecord], None] | None = None,
) -> dict[str, Any]:
    """Train (or reuse) both policies, run them on the panel, and compute the four movements."""
    from evalband.run import run_panel

    panel = harness_panel(config)
    demo_seeds = range(config.seed, config.seed + config.num_demos)
    reused = sorted({s.condition_seed for s in panel.episode_specs()} & set(demo_seeds))
    if reused:  # evaluation starts must never be training starts
        raise InvalidParameterError(
            f"evaluation condition seeds {reused[:3]} are also demonstration seeds; "
            "choose another `seed`", parameters=("seed",),
        )
    checkpoints = _train_policies(config, out, log)
    runs: dict[str, str] = {}
    records: dict[str, list[EpisodeRecord]] = {}
    for name, path in checkpoints.items():
        demos = config.num_demos if name == "strong" else config.weak_demos
        run_id = f"{panel.name}-{name}-d{demos}-e{config.epochs}"
        log(f"evaluating {name} on {len(panel.episode_specs())} episodes ({run_id})")
        run_panel(panel, path, store, run_id=run_id, backend="process" if config.workers > 1
                  else "serial", workers=config.workers, on_episode=on_episode)
        runs[name] = run_id
        records[name] = store.episode_records(run_id)
    result = movements(records["strong"], records["weak"], config)
    result["traces"] = str(_record_traces(panel, checkpoints, out.resolve()))
    result["runs"] = runs
    result["checkpoints"] = checkpoints
    result["config"] = asdict(config)
    result["panel"] = {"name": panel.name, "fingerprint": panel.fingerprint}
    return result


def _record_traces(
    panel: Panel, checkpoints: dict[str, str], out: Path, per_start: int = 3
) -> Path:
    """Pusher and block paths of a few evaluation episodes per policy and start, for plots."""
    import json

    from evalband.envs.pusht import record_traces
    from evalband.policies import resolve_policy

    traces = []
    for name, path in checkpoints.items():
        policy = resolve_policy(path)
        for start in ("train", "held_out"):
            seeds = [s.condition_seed for s in panel.episode_specs()
                     if s.slices["start"] == start][:per_start]
            for trace in record_traces(policy, seeds, start=start):
                traces.append({"policy": name, **trace})
    target = out / "traces.json"
    target.write_text(json.dumps(traces))
    return target


def _rate(records: list[EpisodeRecord]) -> dict[str, Any]:
    from evalband.stats import interval

    k, n = sum(r.success for r in records), len(records)
    return interval(k, n).as_dict()


def _paired(a: list[EpisodeRecord], b: list[EpisodeRecord]) -> dict[str, Any]:
    from evalband.analysis import paired_counts
    from evalband.analysis._verdicts import interval_verdict
    from evalband.stats import diff_paired

    pairs = paired_counts(a, b)
    diff = diff_paired(pairs.both, pairs.a_only, pairs.b_only, pairs.neither)
    return {"pairs": pairs.as_dict(), "difference": diff.as_dict(),
            "verdict": interval_verdict(diff).value}


def movements(
    strong: list[EpisodeRecord], weak: list[EpisodeRecord], config: HarnessConfig
) -> dict[str, Any]:
    """The seed's four movements, computed from the stored episodes."""
    import numpy as np

    from evalband.analysis._verdicts import interval_verdict
    from evalband.stats import bootstrap_interval, diff_unpaired

    def pick(records: list[EpisodeRecord], start: str, suite: int | None = None) -> list[Any]:
        return [r for r in records if r.slices.get("start") == start
                and (suite is None or r.slices.get("suite") == str(suite))]

    suites = [_rate(pick(strong, "train", s)) for s in range(config.n_seeds)]
    estimates = [s["estimate"] for s in suites]
    pooled_strong = pick(strong, "train")
    pooled = _rate(pooled_strong)
    outcomes = np.array([r.success for r in pooled_strong], dtype=float)
    boot = bootstrap_interval(outcomes, reps=10_000, seed=config.seed)
    held = pick(strong, "held_out")
    k_t, n_t = sum(r.success for r in pooled_strong), len(pooled_strong)
    k_h, n_h = sum(r.success for r in held), len(held)
    gap = diff_unpaired(k_t, n_t, k_h, n_h)
    return {
        "swing": {
            "suites": suites,
            "min": min(estimates),
            "max": max(estimates),
            "std": float(np.std(estimates, ddof=1)) if len(estimates) > 1 else None,
            "pooled": pooled,
        },
        "two_roads": {"wilson": pooled, "bootstrap": boot.as_dict()},
        "single_vs_pooled": {
            "one_suite": {
                "strong": _rate(pick(strong, "train", 0)),
                "weak": _rate(pick(weak, "train", 0)),
                **_paired(pick(strong, "train", 0), pick(weak, "train", 0)),
            },
            "pooled": {
                "strong": pooled,
                "weak": _rate(pick(weak, "train")),
                **_paired(pooled_strong, pick(weak, "train")),
            },
        },
        "held_out": {
            "train": pooled,
            "held_out": _rate(held),
            "gap": gap.as_dict(),
            "verdict": interval_verdict(gap).value,
        },
    }
