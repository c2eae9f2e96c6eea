"""Audit: the prediction-powered success rate of ``evalband agreement`` covers and narrows.

An error-rate claim, not a speed one. A run of ``n + N`` episodes with true success rate
``p``; a trusted scorer (an operator) judged a random ``n`` of them, a cheap one (the env's
success rule, a model judge) judged all. The cheap scorer agrees with the trusted one with
probability ``agree``: its errors either symmetric (a flip either way) or one-sided (it calls
failures successes, the usual fault of a lenient success rule; where ``1 - agree`` exceeds
the failure rate it calls every episode a success). The grid: ``p`` 0.05-0.95, ``agree``
0.70-0.98, ``n`` 20-300, ``N`` 2,000, both error kinds.

Each design draws ``reps`` runs as counts (the 2x2 table of the labelled episodes and the
cheap successes among the rest: all the ``mover`` interval depends on) and computes the
default ``mover`` interval (PPI++'s weight, score interval of the rectifier at Student's
quantile, MOVER; :func:`evalband.stats._ppi.mover_limits`, what ``ppi_mean`` and so
``evalband agreement`` call) for all of them at once, beside the Wilson interval of the
trusted labels alone (the interval to beat, and its exact coverage by enumeration). The
first draw of each design also goes through :func:`evalband.stats._ppi.ppi_mean` from label
vectors and must give the same limits (``ppi_mean_matches``).

Stated (``passed``), the issue's claim unloosened: in every design the Monte Carlo coverage
of the default interval (the point estimate, its 99% Clopper-Pearson band beside it) is at
least 95%, and in every design where the cheap scorer agrees at least 85% its mean width is
below the trusted labels' Wilson interval's. ``failing`` lists the designs that miss either,
with by how much; ``designs_band_below_95`` counts those whose 99% band lies below 95% (a
shortfall beyond the Monte Carlo noise of ``reps`` draws: an interval whose coverage is
exactly 95% lands below 95% in about half the designs), and
``passed_coverage_beyond_noise_and_width`` is ``passed`` with coverage judged by that band
(labelled beside it; ``passed`` is not loosened).
``designs_wider_than_wilson_at_85_constant_scorer`` counts the width misses where the cheap
scorer is constant (``cheap_scorer_constant``: it calls every episode a success), where
``lam`` is 0 and the interval is the trusted labels' Clopper-Pearson one (Wilson's
coverage dips there, ``trusted_wilson_exact_coverage``). Expect misses where no interval of
this kind can deliver both: near a rate of 0 or 1 an 85%-agreeing scorer carries almost
nothing about the rare class (``rho2``, the squared correlation of the two scorers, and
``best_variance_ratio``, PPI's best large-sample variance over the trusted labels' own, show
it), and with 20 labels Student's quantile (6.8% above the normal one) outweighs the little
the cheap labels add.
"""

from __future__ import annotations

import os
import time
from itertools import product
from typing import Any

import numpy as np

from evalband.stats import interval
from evalband.stats._ppi import mover_limits, ppi_mean, tuned_lambda_counts

RATES = (0.05, 0.1, 0.3, 0.5, 0.7, 0.9, 0.95)
AGREEMENT = (0.7, 0.85, 0.95, 0.98)
TRUSTED = (20, 30, 100, 300)
ERRORS = ("symmetric", "one-sided")
UNLABELLED = 2000


def _cells(p: float, agree: float, errors: str) -> list[float]:
    """Probabilities of (both success, trusted only, cheap only, neither) for one episode."""
    if errors == "symmetric":
        e = 1.0 - agree
        return [p * (1 - e), p * e, (1 - p) * e, (1 - p) * (1 - e)]
    rate = min(1.0, (1.0 - agree) / max(1.0 - p, 1e-9))  # failures called successes
    return [p, 0.0, (1 - p) * rate, (1 - p) * (1 - rate)]


def _labels(table: np.ndarray, k_u: int, big_n: int) -> tuple[np.ndarray, ...]:
    """Label vectors with these counts (for the check through ``ppi_mean``)."""
    a, b, c, d = (int(x) for x in table)
    y = np.repeat([1.0, 1.0, 0.0, 0.0], [a, b, c, d])
    yhat = np.repeat([1.0, 0.0, 1.0, 0.0], [a, b, c, d])
    return y, yhat, (np.arange(big_n) < k_u).astype(float)


def _band(hits: int, reps: int) -> list[float]:
    from scipy.stats import beta

    return [round(float(beta.ppf(0.005, hits, reps - hits + 1)) if hits else 0.0, 4),
            round(float(beta.ppf(0.995, hits + 1, reps - hits)) if hits < reps else 1.0, 4)]


def design(p: float, agree: float, n: int, errors: str, reps: int,
           seed: int) -> dict[str, Any]:
    """Coverage and width of the intervals for one design."""
    from scipy.stats import binom

    from evalband.stats._intervals import _wilson

    rng = np.random.default_rng(seed)
    big_n = UNLABELLED
    probs = _cells(p, agree, errors)
    tables = rng.multinomial(n, probs, size=reps).astype(float)
    k_u = rng.binomial(big_n, sum(probs[i] for i in (0, 2)), size=reps).astype(float)
    tuned = tuned_lambda_counts(tables, k_u, big_n)
    cover: dict[str, float] = {}
    width: dict[str, float] = {}
    hits: dict[str, int] = {}
    limits = {"mover": mover_limits(tables, k_u, big_n, tuned, 0.95)[1:3],
              "trusted_wilson": _wilson(tables[:, 0] + tables[:, 1], np.full(reps, float(n)),
                                        0.95)}
    for name, (low, high) in limits.items():
        hits[name] = int(((low <= p) & (p <= high)).sum())
        cover[name] = round(hits[name] / reps, 4)
        width[name] = round(float(np.mean(high - low)), 4)
    r = ppi_mean(*_labels(tables[0], int(k_u[0]), big_n), method="mover")
    low, high = limits["mover"]
    same = bool(abs(r.low - low[0]) + abs(r.high - high[0]) < 1e-9)
    wilson_exact = float(sum(  # the trusted-only Wilson interval's exact coverage here
        binom.pmf(k, n, p) for k in range(n + 1)
        if (lambda i: i.low <= p <= i.high)(interval(k, n))))
    q = probs[0] + probs[2]
    rho2 = (probs[0] - p * q) ** 2 / (p * (1 - p) * q * (1 - q)) if 0 < q < 1 else 0.0
    return {"p": p, "agree": agree, "errors": errors, "n": n, "N": big_n, "reps": reps,
            "coverage": cover, "mover_coverage_band_99": _band(hits["mover"], reps),
            "trusted_wilson_exact_coverage": round(wilson_exact, 4),
            "mean_width": width,
            "width_ratio_to_wilson": round(width["mover"] / width["trusted_wilson"], 4),
            "mean_lambda": round(float(tuned.mean()), 4), "ppi_mean_matches": same,
            "rho2": round(rho2, 4), "cheap_scorer_constant": not 0 < q < 1,
            "best_variance_ratio": round(1 - rho2 * big_n / (n + big_n), 4)}


def run(quick: bool = False) -> dict[str, Any]:
    """The audit; ``quick`` uses fewer replicates."""
    t0 = time.perf_counter()
    load = os.getloadavg()
    reps = 300 if quick else int(os.environ.get("EVALBAND_BENCH_PPI_REPS", "2000"))
    rows = [design(p, a, n, e, reps, 1000 + i)
            for i, (p, a, n, e) in enumerate(product(RATES, AGREEMENT, TRUSTED, ERRORS))]
    failing = []
    for r in rows:
        short = r["coverage"]["mover"] < 0.95
        wide = r["agree"] >= 0.85 and r["mean_width"]["mover"] >= r["mean_width"][
            "trusted_wilson"]
        if short or wide:
            failing.append({k: r[k] for k in ("p", "agree", "errors", "n")} | {
                "coverage": r["coverage"]["mover"], "band_99": r["mover_coverage_band_99"],
                "coverage_short_by": round(max(0.0, 0.95 - r["coverage"]["mover"]), 4),
                "width_ratio_to_wilson": r["width_ratio_to_wilson"],
                "trusted_wilson_exact_coverage": r["trusted_wilson_exact_coverage"],
                "rho2": r["rho2"]})
    worst = min(rows, key=lambda r: r["coverage"]["mover"])
    return {"name": "ppi_coverage_width", "kind": "audit", "designs": rows,
            "min_coverage": {k: min(r["coverage"][k] for r in rows)
                             for k in ("mover", "trusted_wilson")},
            "worst_design": {k: worst[k] for k in ("p", "agree", "errors", "n")} | {
                "coverage": worst["coverage"]["mover"],
                "band_99": worst["mover_coverage_band_99"]},
            "designs_below_95": sum(r["coverage"]["mover"] < 0.95 for r in rows),
            # below 95% beyond Monte Carlo noise: the 99% band's upper end under 0.95
            "designs_band_below_95": sum(r["mover_coverage_band_99"][1] < 0.95 for r in rows),
            "designs_wider_than_wilson_at_85": sum(
                r["agree"] >= 0.85 and r["width_ratio_to_wilson"] >= 1 for r in rows),
            # of those, the designs whose cheap scorer is constant (it says nothing: PPI is
            # the trusted labels alone, so no narrowing is possible)
            "designs_wider_than_wilson_at_85_constant_scorer": sum(
                r["agree"] >= 0.85 and r["width_ratio_to_wilson"] >= 1
                and r["cheap_scorer_constant"] for r in rows),
            "failing": failing, "n_designs": len(rows),
            "ppi_mean_matches": all(r["ppi_mean_matches"] for r in rows),
            "load_average_1_5_15": [round(x, 2) for x in load],
            "seconds": time.perf_counter() - t0, "ratio": None, "target_ratio": 0.0,
            "passed": not failing and all(r["ppi_mean_matches"] for r in rows),
            # beside ``passed`` (which stays the rule, every point estimate): the same
            # with coverage judged beyond Monte Carlo noise (no 99% band wholly below 95%)
            "passed_coverage_beyond_noise_and_width": (
                all(r["mover_coverage_band_99"][1] >= 0.95 for r in rows)
                and not any(r["agree"] >= 0.85 and r["width_ratio_to_wilson"] >= 1
                            for r in rows)
                and all(r["ppi_mean_matches"] for r in rows))}


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick=True), indent=2))
