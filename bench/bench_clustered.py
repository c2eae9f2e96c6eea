"""Audit: error rates of the scene-level session statistics (an error-rate claim, not a speed one).

Seeded Monte Carlo of hardware sessions from a model of our own: every (policy, scene) has a
latent success probability q ~ Beta with mean m and a pair-flip probability of 0.27 (seed
004's flip floor; less where 2m(1-m) forbids it), coupled across the policies of a scene by a
Gaussian copula (shared scene difficulty, rho). Each figure carries its 95% Clopper-Pearson
Monte Carlo band. Reported:

* size: two equal policies, K = 2, 3 attempts per scene, 10 and 26 scenes: how often the
  session's comparison (``clustered_paired_test``) is "significant" at 0.05, next to the
  attempt-pairs exact McNemar test it replaces; and end to end through ``simulate_session`` ->
  ``analyze_session`` (Holm over the family);
* coverage of the flip-rate band (``cluster_proportion_interval``) with 2-5 repeats, as
  ``evalband noise`` (condition = cluster) and a session (scene = cluster) use it, next to the
  Wilson band on pairs it replaces;
* coverage and zero-width count of the comparison interval (``clustered_paired_interval``)
  under alternatives, including rates near 0 and 1;
* coverage of a per-policy success rate over scenes, and the size of ``session drift``.
* size of a preference session (``evalband prefer``): identical policies, 1 pair and 3 pairs,
  one start state per block (the sign test) or shared start states with ties (the scene
  sign-flip test): how often ``analyze_preferences`` (the one engine's directional Holm over
  the family) establishes any order.

Pass: every size's Monte Carlo lower bound <= 5% and every coverage >= 93%.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
from scipy import stats as sps

from evalband.stats import (
    cluster_proportion_interval,
    clustered_diff_unpaired,
    clustered_paired_interval,
    clustered_paired_test,
    fisher_exact_test,
    interval,
    mcnemar,
)

FLIP = 0.27


def _latent(rng: np.random.Generator, shape: tuple[int, int, int], m: float, rho: float,
            flip: float = FLIP) -> np.ndarray:
    flip = min(flip, 0.6 * 2 * m * (1 - m))
    kappa = flip / (2 * m * (1 - m) - flip)
    z = rng.standard_normal((shape[0], 1, shape[2]))
    u = sps.norm.cdf(math.sqrt(rho) * z + math.sqrt(1 - rho) * rng.standard_normal(shape))
    return np.asarray(sps.beta.ppf(u, m * kappa, (1 - m) * kappa))


def _band(hits: int, n: int) -> list[float]:
    low = float(sps.beta.ppf(0.025, hits, n - hits + 1)) if hits else 0.0
    high = float(sps.beta.ppf(0.975, hits + 1, n - hits)) if hits < n else 1.0
    return [round(low, 4), round(high, 4)]


def _size(reps: int, seed: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    out = []
    for k in (2, 3):
        for scenes in (10, 26):
            for m, rho in ((0.45, 0.4), (0.2, 0.0), (0.8, 0.6)):
                q = _latent(rng, (reps, 2, scenes), m, rho)
                y = rng.random((*q.shape, k)) < q[..., None]
                b = (y[:, 0] & ~y[:, 1]).sum(axis=2)
                c = (~y[:, 0] & y[:, 1]).sum(axis=2)
                ours = sum(clustered_paired_test(b[i], c[i], [k] * scenes).p_value <= 0.05
                           for i in range(reps))
                naive = sum(mcnemar(int(b[i].sum()), int(c[i].sum())).p_value <= 0.05
                            for i in range(reps))
                out.append({"attempts": k, "scenes": scenes, "rate": m, "rho": rho,
                            "reps": reps, "significant": ours / reps,
                            "band": _band(ours, reps),
                            "attempt_pairs_mcnemar": naive / reps,
                            "attempt_pairs_band": _band(naive, reps)})
    return out


def _end_to_end(reps: int, seed: int) -> list[dict[str, Any]]:
    from evalband.session import analyze_session, plan_session, simulate_session

    out = []
    for k in (2, 3):
        hits = 0
        plan = plan_session(["A", "B", "C"], scenes=26, attempts=k, seed=seed, session_id="n")
        for i in range(reps):
            trials = simulate_session(plan, success_prob={"A": 0.45, "B": 0.45, "C": 0.45},
                                      flip_prob=FLIP, scene_correlation=0.4, seed=seed + i)
            hits += any(c.significant for c in analyze_session(plan, trials).comparisons)
        out.append({"attempts": k, "scenes": 26, "policies": 3, "reps": reps,
                    "any_significant_holm": hits / reps, "band": _band(hits, reps)})
    return out


def _preference_size(reps: int, seed: int) -> list[dict[str, Any]]:
    from evalband.session._preference import plan_preference
    from evalband.session._preference_analysis import analyze_preferences, simulate_preferences

    out = []
    for k in (2, 3):
        names = [f"p{i}" for i in range(k)]
        for blocks, scenes, ties in ((30, None, 0.0), (40, 10, 0.2)):
            plan = plan_preference(names, blocks, seed=seed + k, scenes=scenes, session_id="n")
            hits = sum(
                analyze_preferences(plan, simulate_preferences(
                    plan, dict.fromkeys(names, 0.0), tie_prob=ties, seed=seed + 10_000 * k + i),
                    progress_reps=20).established > 0
                for i in range(reps))
            out.append({"policies": k, "pairs": k * (k - 1) // 2, "blocks": blocks,
                        "scenes": scenes or blocks, "ties": ties, "reps": reps,
                        "any_established": hits / reps, "band": _band(hits, reps)})
    return out


def _flip_coverage(reps: int, seed: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    out = []
    for r in (2, 3, 4, 5):
        per = r * (r - 1) // 2
        for what, groups, policies, m, rho in (("noise (condition = cluster)", 30, 1, 0.4, 0.0),
                                              ("noise (condition = cluster)", 12, 1, 0.5, 0.0),
                                              ("session (scene = cluster)", 26, 3, 0.5, 0.5)):
            q = _latent(rng, (reps, policies, groups), m, rho)
            s = (rng.random((*q.shape, r)) < q[..., None]).sum(axis=3)
            truth = min(FLIP, 0.6 * 2 * m * (1 - m))
            ours = wilson = 0
            for i in range(reps):
                flips = (s[i] * (r - s[i])).sum(axis=0)
                band = cluster_proportion_interval(flips, [policies * per] * groups)
                ours += band.low <= truth <= band.high
                naive = interval(int(flips.sum()), groups * policies * per)
                wilson += naive.low <= truth <= naive.high
            out.append({"repeats": r, "design": what, "clusters": groups, "reps": reps,
                        "coverage": ours / reps, "band": _band(ours, reps),
                        "wilson_on_pairs": wilson / reps})
    return out


def _difference_coverage(reps: int, seed: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    out = []
    for m_a, m_b in ((0.6, 0.4), (0.98, 0.9), (0.1, 0.02), (0.5, 0.5)):
        for scenes in (10, 26):
            qa = _latent(rng, (reps, 1, scenes), m_a, 0.0)
            qb = _latent(rng, (reps, 1, scenes), m_b, 0.0)
            ya = rng.random((reps, scenes, 2)) < qa[:, 0, :, None]
            yb = rng.random((reps, scenes, 2)) < qb[:, 0, :, None]
            b = (ya & ~yb).sum(axis=2)
            c = (~ya & yb).sum(axis=2)
            hit = zero = 0
            for i in range(reps):
                d = clustered_paired_interval(b[i], c[i], [2] * scenes)
                hit += d.low <= m_a - m_b <= d.high
                zero += d.high <= d.low
            out.append({"rates": [m_a, m_b], "scenes": scenes, "attempts": 2, "reps": reps,
                        "coverage": hit / reps, "band": _band(hit, reps), "zero_width": zero})
    return out


def _rate_and_drift(reps: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    rates = []
    for m in (0.05, 0.45, 0.95):
        q = _latent(rng, (reps, 1, 26), m, 0.0)
        k = (rng.random((reps, 26, 2)) < q[:, 0, :, None]).sum(axis=2)
        hit = 0
        for i in range(reps):
            band = cluster_proportion_interval(k[i], [2] * 26)
            hit += band.low <= m <= band.high
        rates.append({"rate": m, "scenes": 26, "attempts": 2, "coverage": hit / reps,
                      "band": _band(hit, reps)})
    q1 = _latent(rng, (reps, 1, 26), 0.45, 0.0)
    q2 = _latent(rng, (reps, 1, 26), 0.45, 0.0)
    k1 = (rng.random((reps, 26, 2)) < q1[:, 0, :, None]).sum(axis=2)
    k2 = (rng.random((reps, 26, 2)) < q2[:, 0, :, None]).sum(axis=2)
    flagged = 0
    for i in range(reps):
        exact = fisher_exact_test(int(k2[i].sum()), 52, int(k1[i].sum()), 52)
        _, test = clustered_diff_unpaired(k2[i], [2] * 26, k1[i], [2] * 26,
                                          equality_p=exact.p_value)
        flagged += test.p_value <= 0.05
    return {"rates": rates, "drift_size": {"reps": reps, "flagged": flagged / reps,
                                           "band": _band(flagged, reps)}}


def run(quick: bool = False) -> dict[str, Any]:
    """The audit; ``quick`` uses fewer replicates."""
    reps = 400 if quick else 1500
    t0 = time.perf_counter()
    size = _size(reps, 11)
    end_to_end = _end_to_end(40 if quick else 150, 5)
    flips = _flip_coverage(reps, 12)
    diffs = _difference_coverage(reps // 2, 13)
    rd = _rate_and_drift(reps, 14)
    preference = _preference_size(200 if quick else 2000, 15)
    passed = (
        all(row["band"][0] <= 0.05 for row in size)
        and all(row["band"][0] <= 0.05 for row in end_to_end)
        and all(row["coverage"] >= 0.93 for row in flips)
        and all(row["coverage"] >= 0.93 and row["zero_width"] == 0 for row in diffs)
        and all(row["coverage"] >= 0.93 for row in rd["rates"])
        and rd["drift_size"]["band"][0] <= 0.05
        and all(row["band"][0] <= 0.05 for row in preference)
    )
    return {
        "name": "session_scene_level_error_rates",
        "kind": "audit",
        "reps": reps,
        "size_equal_policies": size,
        "size_end_to_end": end_to_end,
        "flip_band_coverage": flips,
        "difference_coverage": diffs,
        "rate_coverage": rd["rates"],
        "drift_size": rd["drift_size"],
        "size_preference": preference,
        "seconds": time.perf_counter() - t0,
        "ratio": None,
        "target_ratio": 0.0,
        "passed": passed,
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick=True), indent=1))
