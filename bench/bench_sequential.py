"""Audit: every power, pairs and savings figure the sequential comparison prints, checked.

An error-rate and operating-characteristics claim, not a speed one. Four parts:

**Defaults** (what ``run --until-decided`` and ``compare --sequential`` use when nothing is
declared: a 10-point drop, 80% target power, the conservative discordance, each slice's
maximum its planned pairs; ``comparison_design``), for 1, 3 and 10 slices of 50, 150 and 300
pairs -- and **the audit's designs** (issue 31: the defaults on 10 slices x 150 pairs and one
slice x 150; the defaults capped at the fixed-n pairs of the savings scenarios below, on pairs
with correlation phi = 0.5). Per design: the power the CLI *prints* (the text of
``design_lines``, what ``run`` / ``compare`` / ``show`` print), the design's exact power
recomputed from its stored parameters (``operating_characteristics``), and the Monte Carlo
power of the runs' own path (``decide_path``, the function every look uses) under the stated
assumptions (the design's discordance and drop), with its 99.9% Clopper-Pearson interval; the
same for the drop the design catches with 80% power when it prints one; under no difference
the exact and simulated expected pairs (how long identical policies run) and false
"regressed" rate; and on a correlated rig (phi = 0.5, 70% -> 60%) the power it really has (at
least the least power the design prints for pairs that disagree less).

**Savings** (``evalband power --paired --discordant PSI --sequential``: a declared
discordance, one slice, alpha 0.05): the printed savings ``1 - E[pairs] / n_fixed`` against the
Monte Carlo pairs of ``decide_path`` under the same assumptions, with its 99.9% interval; the
expected pairs under no difference, exact and simulated.

**Type-I error under continuous monitoring** and **coverage** of the confidence sequence (as
before). Pass: printed power within 1 point of the exact power, every exact figure inside its
Monte Carlo interval, every stated saving inside its interval, the null rates within alpha / 2.
"""

from __future__ import annotations

import math
import os
import re
import time
from typing import Any

import numpy as np

ALPHA = 0.05
DEFAULT_SHAPES = ((1, 50), (1, 150), (1, 300), (3, 150), (10, 50), (10, 150))
SAVINGS = tuple((p, d) for p in (0.5, 0.8) for d in (0.1, 0.2, 0.3))


def _interval(count: int, reps: int, level: float = 0.999) -> list[float]:
    """Clopper-Pearson interval of a rate."""
    from scipy.stats import beta

    tail = (1.0 - level) / 2.0
    low = 0.0 if count == 0 else float(beta.ppf(tail, count, reps - count + 1))
    high = 1.0 if count == reps else float(beta.ppf(1.0 - tail, count + 1, reps - count))
    return [low, high]


def _paths(probs: tuple[float, float, float], n: int, reps: int,
           rng: np.random.Generator) -> np.ndarray:
    """``reps`` pair paths (1 baseline only, 2 candidate only, 0 concordant)."""
    c, bo, co = probs
    return rng.choice(np.array([0, 1, 2], dtype=np.int8), p=[c, bo, co], size=(reps, n))


def _simulate(sd: Any, probs: tuple[float, float, float], reps: int,
              rng: np.random.Generator) -> dict[str, Any]:
    """The runs' path (``decide_path``) on simulated pairs: regressed share and pairs."""
    from evalband.analysis._sequential_plan import decide_path

    hits, pairs = 0, np.empty(reps)
    for i, path in enumerate(_paths(probs, sd.max_pairs, reps, rng)):
        decision, counts = decide_path(path, sd)
        hits += decision == "regressed"
        pairs[i] = sum(counts.values())
    sem = float(pairs.std(ddof=1) / math.sqrt(reps)) if reps > 1 else 0.0
    return {"regressed": hits / reps, "regressed_ci999": _interval(hits, reps), "reps": reps,
            "mean_pairs": float(pairs.mean()),
            "mean_pairs_ci999": [float(pairs.mean() - 3.29 * sem),
                                float(pairs.mean() + 3.29 * sem)],
            "p90_pairs": float(np.percentile(pairs, 90))}


def _printed_power(line: str) -> float:
    """The power a design line prints ("... shown with 34% power ...")."""
    found = re.search(r"shown with (\d+)% power", line)
    assert found, line
    return int(found.group(1)) / 100.0


def _alt(psi: float, drop: float) -> tuple[float, float, float]:
    return 1.0 - psi, (psi + drop) / 2.0, (psi - drop) / 2.0


def default_design(slices: int, pairs: int, reps: int, seed: int,
                   cap: int | None = None, label: str = "default") -> dict[str, Any]:
    """A default design: printed vs exact power, Monte Carlo checks, null pairs, real rig."""
    from evalband.analysis._calibrate import _joint
    from evalband.analysis._sequential_outcome import design_lines
    from evalband.analysis._sequential_plan import comparison_design
    from evalband.stats._sequential_design import operating_characteristics

    names = [f"s{i}" for i in range(slices)]
    design = comparison_design(dict.fromkeys(names, cap or pairs), effect=0.10, alpha=ALPHA)
    sd = design.slices[names[0]]
    printed = _printed_power(design_lines(design)[0])
    alt = _alt(design.discordant, design.effect)
    exact, mean, _ = operating_characteristics(sd.max_pairs, sd.max_discordant, sd.theta,
                                               design.alpha_side, sd.futility, alt)
    null = (1.0 - design.discordant, design.discordant / 2, design.discordant / 2)
    null_rate, null_mean, null_p90 = operating_characteristics(
        sd.max_pairs, sd.max_discordant, sd.theta, design.alpha_side, sd.futility, null)
    rng = np.random.default_rng(seed)
    mc = _simulate(sd, alt, reps, rng)
    mc_null = _simulate(sd, null, reps, rng)
    both, bo, co, neither = _joint(0.7, 0.6, 0.5)  # a correlated rig: phi 0.5, 70% -> 60%
    rig = (both + neither, bo, co)
    rig_exact, _, _ = operating_characteristics(sd.max_pairs, sd.max_discordant, sd.theta,
                                                design.alpha_side, sd.futility, rig)
    mc_rig = _simulate(sd, rig, reps, rng)
    row: dict[str, Any] = {
        "design": label, "slices": slices, "pairs": pairs, "max_pairs": sd.max_pairs,
        "max_discordant": sd.max_discordant, "theta": round(sd.theta, 4),
        "futility": sd.futility, "discordance_assumed": design.discordant,
        "printed_power": printed, "stored_power": sd.power, "exact_power": exact,
        "mc_power": mc["regressed"], "mc_power_ci999": mc["regressed_ci999"],
        "expected_pairs": mean, "mc_expected_pairs": mc["mean_pairs"],
        "mc_expected_pairs_ci999": mc["mean_pairs_ci999"],
        "null_false_regression": null_rate, "mc_null_false_regression": mc_null["regressed"],
        "null_expected_pairs": null_mean, "null_p90_pairs": null_p90,
        "mc_null_expected_pairs": mc_null["mean_pairs"],
        "mc_null_expected_pairs_ci999": mc_null["mean_pairs_ci999"],
        "printed_null_expected_pairs": round(sd.null_expected_pairs or 0.0),
        "rig_phi05_p07_power_exact": rig_exact, "rig_mc_power": mc_rig["regressed"],
        "rig_mc_power_ci999": mc_rig["regressed_ci999"],
        "drop_at_80": sd.drop_at_power, "least_power_any_positive_correlation": sd.least_power,
        "reps": reps,
    }
    if sd.drop_at_power is not None:  # the drop it does catch with 80%: exact and simulated
        from evalband.analysis._sequential_plan import conservative_discordance

        x = sd.drop_at_power
        rate = min(1.0, max(round((1 + x) / 2 * 20) / 20, x))
        again = comparison_design(dict.fromkeys(names, cap or pairs), effect=x, alpha=ALPHA)
        sd_x = again.slices[names[0]]
        alt_x = _alt(conservative_discordance(rate, x), x)
        mc_x = _simulate(sd_x, alt_x, reps, rng)
        row.update({"drop_at_80_power_exact": sd_x.power, "drop_at_80_mc_power": mc_x["regressed"],
                    "drop_at_80_mc_power_ci999": mc_x["regressed_ci999"]})
    inside = lambda v, ci: ci[0] <= v <= ci[1]  # noqa: E731
    row["passed"] = bool(
        abs(printed - exact) <= 0.01 + 1e-9 and abs(sd.power - exact) < 1e-9
        and inside(exact, mc["regressed_ci999"])
        and inside(mean, mc["mean_pairs_ci999"])
        and inside(null_mean, mc_null["mean_pairs_ci999"])
        and null_rate <= ALPHA / 2
        and rig_exact >= (exact if sd.least_power is None else sd.least_power) - 1e-9
        and inside(rig_exact, mc_rig["regressed_ci999"])
        and (sd.drop_at_power is None or (row["drop_at_80_power_exact"] >= 0.8
                                          and row["drop_at_80_mc_power_ci999"][1] >= 0.8)))
    return row


def savings(p_base: float, drop: float, reps: int, seed: int) -> dict[str, Any]:
    """The savings ``evalband power --sequential`` prints, against the runs' path in MC."""
    from evalband.analysis._calibrate import _joint
    from evalband.analysis._sequential_plan import SliceDesign
    from evalband.stats import sequential_threshold
    from evalband.stats._sequential_design import sequential_design

    both, bo, co, neither = _joint(p_base, p_base - drop, 0.5)
    psi = bo + co
    d = sequential_design(p_base, drop, discordant=psi, alpha=ALPHA, power=0.8)
    sd = SliceDesign(theta=d.theta, futility=d.futility, max_pairs=d.max_pairs,
                     max_discordant=d.max_discordant,
                     threshold=sequential_threshold(ALPHA / 2, d.max_discordant, d.theta),
                     power=d.power, expected_pairs=d.expected_pairs, n_fixed=d.n_fixed)
    rng = np.random.default_rng(seed)
    mc = _simulate(sd, (both + neither, bo, co), reps, rng)
    mc_null = _simulate(sd, (1.0 - psi, psi / 2, psi / 2), reps, rng)
    lo, hi = mc["mean_pairs_ci999"]
    saved_ci = [1.0 - hi / d.n_fixed, 1.0 - lo / d.n_fixed]
    return {
        "p_base": p_base, "drop": drop, "phi": 0.5, "discordance_declared": psi,
        "n_fixed": d.n_fixed, "max_pairs": d.max_pairs, "max_discordant": d.max_discordant,
        "theta": round(d.theta, 4), "futility": d.futility,
        "power": d.power, "mc_power": mc["regressed"], "mc_power_ci999": mc["regressed_ci999"],
        "printed_savings": round(d.savings, 2), "savings": d.savings,
        "mc_savings": 1.0 - mc["mean_pairs"] / d.n_fixed, "mc_savings_ci999": saved_ci,
        "expected_pairs": d.expected_pairs, "p90_pairs": d.p90_pairs,
        "null_expected_pairs": d.null_expected_pairs,
        "mc_null_expected_pairs": mc_null["mean_pairs"],
        "mc_null_expected_pairs_ci999": mc_null["mean_pairs_ci999"],
        "null_false_regression": d.null_false_regression,
        "mc_null_false_regression": mc_null["regressed"], "reps": reps,
        "passed": bool(saved_ci[0] - 0.005 <= d.savings <= saved_ci[1] + 0.005
                       and mc["regressed_ci999"][0] <= d.power <= mc["regressed_ci999"][1]
                       and mc_null["mean_pairs_ci999"][0] <= d.null_expected_pairs
                       <= mc_null["mean_pairs_ci999"][1]),
    }


def type_one(slices: int, phi: float, looks: int, reps: int, seed: int) -> dict[str, Any]:
    """Null runs with any false 'regressed' / any false decision, looked at every ``looks``."""
    from evalband.analysis._calibrate import _joint
    from evalband.stats._sequential import log_likelihood_ratio, sequential_threshold

    n, theta = 150, 0.75
    log_t = math.log(sequential_threshold(ALPHA / (2 * slices), n, theta)) - 1e-12
    probs = np.asarray(_joint(0.7, 0.7, phi))
    rng = np.random.default_rng(seed)
    reg_runs = either_runs = 0
    for start in range(0, reps, 2000):
        size = min(2000, reps - start)
        draws = rng.choice(4, p=probs / probs.sum(), size=(size, slices, n))
        b = np.cumsum(draws == 1, axis=2)[:, :, looks - 1 :: looks]
        c = np.cumsum(draws == 2, axis=2)[:, :, looks - 1 :: looks]
        reg = log_likelihood_ratio(b, b + c, theta) >= log_t
        imp = log_likelihood_ratio(c, b + c, theta) >= log_t
        reg_runs += int(reg.any(axis=(1, 2)).sum())
        either_runs += int((reg | imp).any(axis=(1, 2)).sum())
    return {"slices": slices, "phi": phi, "look_every": looks, "reps": reps,
            "false_regression": reg_runs / reps,
            "false_regression_ci95": _interval(reg_runs, reps, 0.95),
            "false_decision": either_runs / reps,
            "false_decision_ci95": _interval(either_runs, reps, 0.95)}


def coverage(p_b: float, p_c: float, phi: float, reps: int, seed: int) -> dict[str, Any]:
    """Share of runs whose 95% confidence sequence covers the difference at all 200 looks."""
    from evalband.analysis._calibrate import _joint
    from evalband.stats._sequential import _log_capital

    n, level = 200, 0.95
    probs = np.asarray(_joint(p_b, p_c, phi))
    delta = float(probs[2] - probs[1])
    rng = np.random.default_rng(seed)
    draws = rng.choice(4, p=probs / probs.sum(), size=(reps, n))
    b = np.cumsum(draws == 1, axis=1)
    c = np.cumsum(draws == 2, axis=1)
    caps = _log_capital(b, c, np.arange(1, n + 1)[None, :], np.array([delta]))[..., 0]
    covered = int((caps.max(axis=1) < math.log(1.0 / (1.0 - level))).sum())
    return {"p_baseline": p_b, "p_candidate": p_c, "phi": phi, "reps": reps,
            "coverage": covered / reps, "coverage_ci95": _interval(covered, reps, 0.95)}


def run(quick: bool = False) -> dict[str, Any]:
    t0 = time.perf_counter()
    load = os.getloadavg()[0]
    reps = 1500 if quick else 20000
    defaults = [default_design(m, n, reps, seed=101 + i)
                for i, (m, n) in enumerate(DEFAULT_SHAPES)]
    audit = []
    for i, (p, d) in enumerate(SAVINGS):  # the defaults capped at the fixed n of each scenario
        from evalband.analysis._calibrate import _joint
        from evalband.stats._procedure import episodes_for_drop

        _, bo, co, _ = _joint(p, p - d, 0.5)
        n_fixed = int(episodes_for_drop(p, d, ALPHA, paired=True, discordant=bo + co) or 1)
        audit.append(default_design(1, n_fixed, reps, seed=301 + i,
                                    label=f"default capped at the fixed n (p={p:g}, drop={d:g})"))
    saved = [savings(p, d, reps, seed=17 + i) for i, (p, d) in enumerate(SAVINGS)]
    null_reps = 2000 if quick else 10000
    nulls = [type_one(m, phi, looks, null_reps, seed=1000 + 10 * m + int(10 * phi) + looks)
             for m in (1, 5, 10) for phi in (0.0, 0.5, 0.8) for looks in (1, 10)]
    covers = [coverage(pb, pc, phi, 500 if quick else 2000, seed=7 + i)
              for i, (pb, pc, phi) in enumerate(((0.7, 0.6, 0.5), (0.5, 0.5, 0.0),
                                                 (0.8, 0.9, 0.8)))]
    errors_ok = all(r["false_regression_ci95"][0] <= ALPHA / 2
                    and r["false_decision_ci95"][0] <= ALPHA for r in nulls)
    coverage_ok = all(c["coverage_ci95"][1] >= 1.0 - ALPHA for c in covers)
    return {
        "name": "sequential",
        "kind": "audit",
        "reps": reps,
        "load_average_1min": load,
        "defaults": defaults,
        "audit_designs": audit,
        "savings": saved,
        "savings_by_scenario": {f"p={r['p_base']:g} drop={r['drop']:g}": round(r["savings"], 4)
                                for r in saved},
        "mean_savings": float(np.mean([r["savings"] for r in saved])),
        "type_one": nulls,
        "coverage": covers,
        "seconds": time.perf_counter() - t0,
        "ratio": None,
        "target_ratio": 0.0,
        "passed": bool(all(r["passed"] for r in defaults + audit + saved)
                       and errors_ok and coverage_ok),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick=True), indent=2))
