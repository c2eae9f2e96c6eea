"""Audit: the prediction-powered success rate of ``evalband agreement`` covers and narrows.

An error-rate claim, not a speed one. A run of ``n + N`` episodes with true success rate
``p``; a trusted scorer (an operator) judged a random ``n`` of them, a cheap one (the env's
success rule, a model judge) judged all. The cheap scorer agrees with the trusted one with
probability ``agree``: its errors either symmetric (a flip either way) or one-sided (it calls
failures successes, the usual fault of a lenient success rule). Each design draws ``reps``
runs and computes, through :func:`evalband.stats.ppi_mean` (what ``evalband agreement``
calls), the ``mover`` interval (the command's, for success labels), the paper's ``clt``
interval and the power-tuned ``clt`` (PPI++), beside the Wilson interval of the trusted
labels alone.

Stated (``passed``): the ``mover`` interval covers ``p`` in >= 95% of draws in every design
(its 99% Clopper-Pearson band reaches 0.95 and the estimate is >= 0.94), and in every design
where the cheap scorer agrees >= 85% and PPI's large-sample variance, ``var(Y - Yhat) +
(n / N) var(Yhat)``, is at most 0.8 of the trusted labels' own, ``p(1 - p)``
(``variance_ratio``) and the trusted labels hold about ten failures and successes' worth of
information (``n p (1 - p) >= 10``; below that the score limits near 0 or 1 are wide on both
sides), its mean width is below the trusted-only Wilson width. Agreement alone
does not decide it: at ``p = 0.8`` a scorer that agrees 85% with symmetric errors leaves
``var(Y - Yhat) = 0.142`` against ``p(1 - p) = 0.16``, and no interval built on it can be much
narrower than the trusted labels' (the figures show where). Reported beside it, without a
claim: the ``clt`` intervals' coverage (the paper's normal interval under-covers at small
``n``) and the share of draws in which each interval is narrower than the trusted-only one.
"""

from __future__ import annotations

import os
import time
from itertools import product
from typing import Any

import numpy as np

from evalband.stats import interval
from evalband.stats._ppi import ppi_mean

RATES = (0.1, 0.3, 0.5, 0.8, 0.95)
AGREEMENT = (0.85, 0.95)
TRUSTED = (30, 60, 150)
ERRORS = ("symmetric", "one-sided")


def _draw(p: float, agree: float, errors: str, size: int,
          rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    y = rng.random(size) < p
    if errors == "symmetric":
        wrong = rng.random(size) > agree
    else:  # failures called successes, at the rate that leaves `agree` overall
        rate = min(1.0, (1.0 - agree) / max(1.0 - p, 1e-9))
        wrong = ~y & (rng.random(size) < rate)
    return y.astype(float), np.where(wrong, ~y, y).astype(float)


def design(p: float, agree: float, n: int, errors: str, reps: int,
           seed: int) -> dict[str, Any]:
    """Coverage and width of the intervals for one design."""
    from scipy.stats import beta

    rng = np.random.default_rng(seed)
    big_n = 10 * n
    cover = {"mover": 0, "clt": 0, "clt_tuned": 0, "trusted_wilson": 0}
    width = dict.fromkeys(cover, 0.0)
    narrower = dict.fromkeys(("mover", "clt", "clt_tuned"), 0)
    disagree = ratio = 0.0
    for _ in range(reps):
        y, yhat = _draw(p, agree, errors, n + big_n, rng)
        disagree += float(np.mean(y != yhat))
        ratio += (float(np.var(y - yhat)) + n / big_n * float(np.var(yhat))) / (p * (1 - p))
        trusted = interval(int(y[:n].sum()), n)
        t_width = trusted.high - trusted.low
        cover["trusted_wilson"] += trusted.low <= p <= trusted.high
        width["trusted_wilson"] += t_width
        for name, kwargs in (("mover", {"method": "mover"}), ("clt", {}),
                             ("clt_tuned", {"lam": None})):
            r = ppi_mean(y[:n], yhat[:n], yhat[n:], **kwargs)  # type: ignore[arg-type]
            cover[name] += r.low <= p <= r.high
            width[name] += r.high - r.low
            narrower[name] += (r.high - r.low) < t_width
    c = cover["mover"]
    band = [round(float(beta.ppf(0.005, c, reps - c + 1)) if c else 0.0, 4),
            round(float(beta.ppf(0.995, c + 1, reps - c)) if c < reps else 1.0, 4)]
    return {"p": p, "agree": agree, "errors": errors, "n": n, "N": big_n, "reps": reps,
            "disagreement": round(disagree / reps, 4),
            "coverage": {k: round(c / reps, 4) for k, c in cover.items()},
            "mover_coverage_band_99": band,
            "mean_width": {k: round(w / reps, 4) for k, w in width.items()},
            "share_narrower": {k: round(v / reps, 4) for k, v in narrower.items()},
            "variance_ratio": round(ratio / reps, 4),
            "can_beat_trusted": agree >= 0.85 and ratio / reps <= 0.8 and n * p * (1 - p) >= 10}


def run(quick: bool = False) -> dict[str, Any]:
    """The audit; ``quick`` uses fewer replicates."""
    t0 = time.perf_counter()
    load = os.getloadavg()
    reps = 200 if quick else 2000
    rows = [design(p, a, n, e, reps, 1000 + i)
            for i, (p, a, n, e) in enumerate(product(RATES, AGREEMENT, TRUSTED, ERRORS))]
    covered = all(r["mover_coverage_band_99"][1] >= 0.95 and r["coverage"]["mover"] >= 0.94
                  for r in rows)
    beat = [r for r in rows if r["can_beat_trusted"]]
    narrower = all(r["mean_width"]["mover"] < r["mean_width"]["trusted_wilson"] for r in beat)
    return {"name": "ppi_coverage_width", "kind": "audit", "designs": rows,
            "min_coverage": {k: min(r["coverage"][k] for r in rows)
                             for k in ("mover", "clt", "clt_tuned", "trusted_wilson")},
            "designs_that_can_beat_trusted": len(beat),
            "narrower_in_all_of_them": narrower,
            "load_average_1_5_15": [round(x, 2) for x in load],
            "seconds": time.perf_counter() - t0, "ratio": None, "target_ratio": 0.0,
            "passed": covered and narrower}


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick=True), indent=2))
