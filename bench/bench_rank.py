"""Audit: `evalband rank`'s rank sets cover jointly, and its separation costs deliver their power.

An error-rate claim, not a speed one. Seeded Monte Carlo through the very function that
decides ``evalband rank`` (``evalband.stats._ranks.rank_policies``):

* **joint coverage** over designs with 3, 5 and 10 policies: matched episodes (a probit
  condition effect correlates the policies' outcomes on one condition) and independent runs,
  at 50 and 200 episodes per policy; matched scenes with clustering (23 or 40 scenes, 2
  attempts each, a scene effect that makes same-scene attempts flip ~27% of the time, the
  seed's floor); true rates all equal, near-tied (2 points apart) and spread (10 points
  apart). A draw covers when every true rank lies in its rank set *and* no established
  order is wrong (a tie counts as wrong); stated: >= 95%, pass when the Clopper-Pearson upper
  bound of each design's coverage reaches 95% and its point estimate is >= 94%;
* **identical policies**: 5 policies of one rate: how often every two rank sets overlap
  (stated >= 95%);
* **power**: policies 30 points apart (20%, 50%, 80%) at 200 episodes each, matched and
  independent: how often every order is established, beside the exact power of each pair
  (a lower bound);
* **separation cost**: for a seed-like six-policy design, the size ``rank`` prints for the
  leaders at 80% power, simulated through the whole ranking (stated: >= 80%).

Pass: every coverage and overlap as stated; every simulated power >= 80% (within its
Monte Carlo band) where the exact power promises 80%.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalband.analysis._calibrate import Rate
from evalband.stats._rank_power import separation_power, separation_size
from evalband.stats._ranks import rank_policies

SIGMA_CONDITION = 1.0  # probit condition effect of matched episodes (pairs agree more often)
SIGMA_SCENE = 1.3  # probit scene effect: same-scene attempt pairs flip ~27% at rates ~0.4


@dataclass(frozen=True)
class Design:
    """One simulated design: true rates, episodes per policy, pairing, scenes."""

    name: str
    rates: tuple[float, ...]
    n: int
    paired: bool = True
    scenes: int = 0  # > 0: matched scenes of n // scenes attempts each, clustered
    sigma: float = SIGMA_CONDITION

    def draw(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray | None]:
        """One data set: the policies x episodes 0/1 matrix and the cluster ids (or None)."""
        from scipy.special import ndtr, ndtri

        p = np.asarray(self.rates)
        k = p.size
        if not self.paired:
            return (rng.random((k, self.n)) < p[:, None]).astype(float), None
        if self.scenes:
            attempts = self.n // self.scenes
            sigma = SIGMA_SCENE
            mu = ndtri(p) * np.sqrt(1.0 + sigma**2)
            u = rng.normal(0.0, sigma, self.scenes)
            q = ndtr(mu[:, None] + u[None, :])  # policy x scene success probability
            y = rng.random((k, self.scenes, attempts)) < q[:, :, None]
            return y.reshape(k, -1).astype(float), np.repeat(np.arange(self.scenes), attempts)
        mu = ndtri(p) * np.sqrt(1.0 + self.sigma**2)
        u = rng.normal(0.0, self.sigma, self.n)
        return (rng.random((k, self.n)) < ndtr(mu[:, None] + u[None, :])).astype(float), None


def true_ranks(rates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each policy's best and worst true rank (they differ only where rates tie)."""
    better = (rates[None, :] > rates[:, None]).sum(axis=1)
    worse = (rates[None, :] < rates[:, None]).sum(axis=1)
    return 1 + better, rates.size - worse


def covers(rates: np.ndarray, result: Any) -> bool:
    """Every true rank in its set and no established order wrong."""
    best, worst = true_ranks(rates)
    wrong = bool(np.any(result.better & ~(rates[:, None] > rates[None, :])))
    inside = bool(np.all((result.rank_low <= best) & (worst <= result.rank_high)))
    return inside and not wrong


def all_overlap(result: Any) -> bool:
    """Whether every two rank sets share a rank."""
    low, high = result.rank_low, result.rank_high
    return bool(np.all(np.maximum(low[:, None], low[None, :])
                       <= np.minimum(high[:, None], high[None, :])))


def coverage(design: Design, reps: int, seed: int, alpha: float = 0.05) -> dict[str, Any]:
    """Joint coverage of the rank sets over ``reps`` seeded draws of ``design``."""
    rng = np.random.default_rng(seed)
    rates = np.asarray(design.rates)
    hit = overlap = ordered = 0
    for _ in range(reps):
        y, clusters = design.draw(rng)
        result = rank_policies(y, clusters=clusters, paired=design.paired, alpha=alpha)
        hit += covers(rates, result)
        overlap += all_overlap(result)
        ordered += int(result.better.sum() == rates.size * (rates.size - 1) // 2)
    c = Rate.of(hit, reps)
    o = Rate.of(overlap, reps)
    return {"design": design.name, "policies": rates.size, "n": design.n,
            "paired": design.paired, "scenes": design.scenes, "reps": reps,
            "coverage": round(c.rate, 4), "band": [round(c.low, 4), round(c.high, 4)],
            "all_overlap": round(o.rate, 4), "fully_ordered": round(ordered / reps, 4)}


def through_decide(reps: int, seed: int, alpha: float = 0.05) -> list[dict[str, Any]]:
    """``evalband rank``'s path (pairs decided by ``analysis.decide``) beside the direct one.

    The same seeded draws of null and near-null designs ranked twice: by
    :func:`rank_policies`' own directional Holm and through the decision engine
    (``analysis._rank._DecidedPairs``, what ``evalband rank`` uses). Error = some established
    order wrong or some true rank outside its set; the two must agree draw by draw.
    """
    from evalband.analysis._rank import _DecidedPairs

    out = []
    for i, design in enumerate((Design("5 identical", (0.5,) * 5, 200, True),
                                Design("equal k=5 n=50 unpaired", (0.5,) * 5, 50, False),
                                Design("equal k=3 scenes=23x2 clustered", (0.5,) * 3, 46, True,
                                       23),
                                Design("near-tied k=5 n=50 matched",
                                       tuple(0.40 + 0.02 * j for j in range(5)), 50, True))):
        rng = np.random.default_rng(seed + i)
        rates = np.asarray(design.rates)
        errors = [0, 0]
        same = 0
        for _ in range(reps):
            y, clusters = design.draw(rng)
            direct = rank_policies(y, clusters=clusters, paired=design.paired, alpha=alpha)
            via = rank_policies(y, clusters=clusters, paired=design.paired, alpha=alpha,
                                procedure=_DecidedPairs(y, clusters, True))
            errors[0] += not covers(rates, direct)
            errors[1] += not covers(rates, via)
            same += bool((direct.better == via.better).all()
                         and (direct.adjusted == via.adjusted).all())
        rate = [Rate.of(e, reps) for e in errors]
        out.append({"design": design.name, "reps": reps, "alpha": alpha,
                    "error_direct": round(rate[0].rate, 4),
                    "error_through_decide": round(rate[1].rate, 4),
                    "band_through_decide": [round(rate[1].low, 4), round(rate[1].high, 4)],
                    "identical_decisions": same})
    return out


def designs(quick: bool) -> list[Design]:
    """The coverage designs."""
    out = []
    for k in (3, 5, 10):
        for label, rates in (("equal", [0.5] * k),
                             ("near-tied", [0.40 + 0.02 * i for i in range(k)]),
                             ("spread", [0.05 + 0.9 * i / (k - 1) for i in range(k)])):
            for n in ((50, 200) if not quick else (50,)):
                for paired in (True, False):
                    out.append(Design(f"{label} k={k} n={n} {'matched' if paired else 'unpaired'}",
                                      tuple(rates), n, paired))
            for scenes in ((23, 40) if not quick else (23,)):
                out.append(Design(f"{label} k={k} scenes={scenes}x2 clustered", tuple(rates),
                                  2 * scenes, True, scenes))
    return out


def power_30(reps: int, seed: int) -> list[dict[str, Any]]:
    """Policies 30 points apart at 200 episodes each: how often every order is established."""
    out = []
    for paired in (True, False):
        design = Design("30 points apart", (0.2, 0.5, 0.8), 200, paired)
        row = coverage(design, reps, seed)
        exact = [separation_power(200, hi, lo, policies=3, design="unpaired")
                 for hi, lo in ((0.5, 0.2), (0.8, 0.5), (0.8, 0.2))]
        row["pair_power_unpaired_lower_bound"] = [round(x, 4) for x in exact]
        out.append(row)
    return out


def separation_check(reps: int, seed: int) -> list[dict[str, Any]]:
    """The printed cost to separate two leaders, simulated through the whole ranking."""
    out = []
    rng = np.random.default_rng(seed)
    cases = (
        ("unpaired", (0.50, 0.35, 0.30, 0.25, 0.20, 0.15), False, None),
        ("paired", (0.60, 0.45, 0.40, 0.30, 0.25, 0.20), True, 0.5),
        ("clustered", (0.60, 0.40, 0.35, 0.30, 0.25, 0.20), True, 0.45),
    )
    for design_name, rates, paired, psi in cases:
        k = len(rates)
        hi, lo = rates[0], rates[1]
        if design_name == "clustered":
            # one attempt per scene, pairs independent across scenes: the size's own model
            n = separation_size(hi, lo, policies=k, design="clustered", discordant=psi)
        elif paired:
            n = separation_size(hi, lo, policies=k, design="paired", discordant=psi)
        else:
            n = separation_size(hi, lo, policies=k, design="unpaired")
        assert n is not None
        established = 0
        for _ in range(reps):
            if design_name == "clustered":
                y = _draw_pairs(rates, n, psi or 0.0, rng)
                result = rank_policies(y, clusters=np.arange(n), paired=True)
            elif paired:
                y = _draw_pairs(rates, n, psi or 0.0, rng)
                result = rank_policies(y, paired=True)
            else:
                y = (rng.random((k, n)) < np.asarray(rates)[:, None]).astype(float)
                result = rank_policies(y, paired=False)
            established += bool(result.better[0, 1])
        r = Rate.of(established, reps)
        out.append({"design": design_name, "rates": list(rates), "per_policy": n,
                    "discordant": psi, "reps": reps, "power": round(r.rate, 4),
                    "band": [round(r.low, 4), round(r.high, 4)]})
    return out


def _draw_pairs(rates: tuple[float, ...], n: int, psi: float,
                rng: np.random.Generator) -> np.ndarray:
    """Policies 0 and 1 as matched pairs with discordance ``psi``; the others independent."""
    k = len(rates)
    y = (rng.random((k, n)) < np.asarray(rates)[:, None]).astype(float)
    pa, pb = rates[0], rates[1]
    p10, p01 = (psi + pa - pb) / 2, (psi - pa + pb) / 2
    p11 = pa - p10
    u = rng.random(n)
    y[0] = (u < p11 + p10)
    y[1] = (u < p11) | ((u >= p11 + p10) & (u < p11 + p10 + p01))
    return y


def run(quick: bool = False) -> dict[str, Any]:
    """The audit; ``quick`` uses fewer replicates and designs."""
    t0 = time.perf_counter()
    reps = 150 if quick else 1000
    cover = [coverage(d, reps, 100 + i) for i, d in enumerate(designs(quick))]
    identical = coverage(Design("5 identical", (0.5,) * 5, 200, True), reps * 2, 7)
    power = power_30(reps // 2, 8)
    separation = separation_check(200 if quick else 1000, 9)
    decided = through_decide(reps, 12)
    passed = (
        all(r["band"][1] >= 0.95 and r["coverage"] >= 0.94 for r in cover)
        and all(r["identical_decisions"] == r["reps"] and r["band_through_decide"][0] <= 0.05
                for r in decided)
        and identical["all_overlap"] >= 0.95
        and all(r["band"][1] >= 0.80 for r in separation)
    )
    return {
        "name": "rank_joint_coverage",
        "kind": "audit",
        "coverage": cover,
        "identical_policies": identical,
        "power_30_points": power,
        "separation_cost": separation,
        "through_decide": decided,
        "min_coverage": min(r["coverage"] for r in cover),
        "seconds": time.perf_counter() - t0,
        "ratio": None,
        "target_ratio": 0.0,
        "passed": passed,
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick=True), indent=2))
