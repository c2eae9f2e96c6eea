"""Audit: the prediction-powered success rate of ``evalband agreement`` covers and narrows.

An error-rate claim, not a speed one. A run of ``n + N`` episodes with true success rate
``p``; a trusted scorer (an operator) judged a random ``n`` of them, a cheap one (the env's
success rule, a model judge) judged all. The cheap scorer agrees with the trusted one with
probability ``agree``: its errors either symmetric (a flip either way) or one-sided (it calls
failures successes, the usual fault of a lenient success rule). Each design draws ``reps``
runs and computes, through :func:`evalband.stats.ppi_mean` (what ``evalband agreement``
calls), the default ``mover`` interval (power-tuned: PPI++'s lambda, and the trusted labels'
Wilson interval wherever the tuned one would be wider), the paper's ``mover`` (lambda 1), the
paper's ``clt`` interval and the power-tuned ``clt`` (PPI++), beside the Wilson interval of
the trusted labels alone.

Stated (``passed``): the default ``mover`` interval covers ``p`` in >= 95% of draws in every
design (its 99% Clopper-Pearson band reaches 0.95 and the estimate is >= 0.94), rates 0.03
and 0.97 with 30 trusted labels included -- except where the trusted labels' own Wilson
interval covers less than 95% (``trusted_wilson_exact_coverage``, by enumeration: 93.9-94.0%
at rates 0.03, 0.05, 0.95 and 0.97 with 30 labels), where it must reach that; it is never
wider than the trusted-only Wilson interval (``share_wider`` 0, by construction); and in
every design where the cheap scorer agrees >= 85% and is informative -- PPI's best large-
sample variance, ``p(1 - p)(1 - rho^2 N / (n + N))`` with ``rho`` the correlation of the two
scorers, is at most 0.8 of the trusted labels' own (``best_variance_ratio``) -- and the
trusted labels hold about ten failures and successes' worth of information (``n p (1 - p) >=
10``), its mean width is below the trusted-only width.

Where narrower is impossible: agreement alone does not make a scorer informative. Near a
rate of 0 or 1 an 85%-agreeing scorer's errors swamp the rare class (at ``p = 0.03`` with
symmetric errors ``rho^2`` is about 0.10; with one-sided errors near 1 the cheap scorer says
"success" to every episode and ``rho`` is 0): the best power-tuned estimator of this form,
``lam * mean(Yhat_u) + mean(Y - lam * Yhat)`` at its optimal ``lam``, has a large-sample
variance of ``1 - rho^2 N / (n + N)`` (about 0.91 there) of the trusted labels' alone, i.e.
an interval at most ~5% narrower, which the discrete limits of a score interval at 1 or 2
successes in 30 do not deliver: the default is then the trusted labels' Wilson interval.
``best_variance_ratio`` shows that bound per design; ``share_narrower`` how often each
interval beat the trusted-only one.
"""

from __future__ import annotations

import os
import time
from itertools import product
from typing import Any

import numpy as np

from evalband.stats import interval
from evalband.stats._ppi import ppi_mean

RATES = (0.03, 0.1, 0.3, 0.5, 0.8, 0.95, 0.97)
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
    from scipy.stats import beta, binom

    rng = np.random.default_rng(seed)
    big_n = 10 * n
    kinds = {"mover": {"method": "mover"}, "mover_lam1": {"method": "mover", "lam": 1.0},
             "clt": {"lam": 1.0}, "clt_tuned": {}}
    cover = {**dict.fromkeys(kinds, 0), "trusted_wilson": 0}
    width = dict.fromkeys(cover, 0.0)
    narrower = dict.fromkeys(kinds, 0)
    wider = dict.fromkeys(kinds, 0)
    disagree = ratio = rho2 = lam = 0.0
    for _ in range(reps):
        y, yhat = _draw(p, agree, errors, n + big_n, rng)
        disagree += float(np.mean(y != yhat))
        ratio += (float(np.var(y - yhat)) + n / big_n * float(np.var(yhat))) / (p * (1 - p))
        c = np.corrcoef(y, yhat)[0, 1] if np.ptp(y) and np.ptp(yhat) else 0.0
        rho2 += float(c * c)
        trusted = interval(int(y[:n].sum()), n)
        t_width = trusted.high - trusted.low
        cover["trusted_wilson"] += trusted.low <= p <= trusted.high
        width["trusted_wilson"] += t_width
        for name, kwargs in kinds.items():
            r = ppi_mean(y[:n], yhat[:n], yhat[n:], **kwargs)  # type: ignore[arg-type]
            cover[name] += r.low <= p <= r.high
            width[name] += r.high - r.low
            narrower[name] += (r.high - r.low) < t_width - 1e-12
            wider[name] += (r.high - r.low) > t_width + 1e-12
            if name == "mover":
                lam += r.lam
    c = cover["mover"]
    wilson_exact = float(sum(  # the trusted-only Wilson interval's exact coverage here
        binom.pmf(k, n, p) for k in range(n + 1)
        if (lambda i: i.low <= p <= i.high)(interval(k, n))))
    band = [round(float(beta.ppf(0.005, c, reps - c + 1)) if c else 0.0, 4),
            round(float(beta.ppf(0.995, c + 1, reps - c)) if c < reps else 1.0, 4)]
    return {"p": p, "agree": agree, "errors": errors, "n": n, "N": big_n, "reps": reps,
            "disagreement": round(disagree / reps, 4),
            "coverage": {k: round(c / reps, 4) for k, c in cover.items()},
            "mover_coverage_band_99": band,
            "trusted_wilson_exact_coverage": round(wilson_exact, 4),
            "mean_width": {k: round(w / reps, 4) for k, w in width.items()},
            "share_narrower": {k: round(v / reps, 4) for k, v in narrower.items()},
            "share_wider": {k: round(v / reps, 4) for k, v in wider.items()},
            "mean_lambda_mover": round(lam / reps, 4),
            "variance_ratio_lam1": round(ratio / reps, 4),
            "rho2": round(rho2 / reps, 4),
            "best_variance_ratio": round(1 - rho2 / reps * big_n / (n + big_n), 4),
            "can_beat_trusted": (agree >= 0.85 and 1 - rho2 / reps * big_n / (n + big_n) <= 0.8
                                 and n * p * (1 - p) >= 10)}


def run(quick: bool = False) -> dict[str, Any]:
    """The audit; ``quick`` uses fewer replicates."""
    t0 = time.perf_counter()
    load = os.getloadavg()
    reps = 200 if quick else 1000
    rows = [design(p, a, n, e, reps, 1000 + i)
            for i, (p, a, n, e) in enumerate(product(RATES, AGREEMENT, TRUSTED, ERRORS))]
    # >= 95%, or where the trusted labels' own Wilson interval covers less (its dip at a few
    # failures in 30), no less than it: the default is that interval when the cheap scorer
    # carries nothing, and never wider than it.
    covered = all(
        r["mover_coverage_band_99"][1] >= min(0.95, r["trusted_wilson_exact_coverage"])
        and r["coverage"]["mover"] >= min(0.94, r["trusted_wilson_exact_coverage"] - 0.01)
        for r in rows)
    beat = [r for r in rows if r["can_beat_trusted"]]
    narrower = all(r["mean_width"]["mover"] < r["mean_width"]["trusted_wilson"] for r in beat)
    never_wider = all(r["share_wider"]["mover"] == 0 for r in rows)
    return {"name": "ppi_coverage_width", "kind": "audit", "designs": rows,
            "min_coverage": {k: min(r["coverage"][k] for r in rows)
                             for k in ("mover", "mover_lam1", "clt", "clt_tuned",
                                       "trusted_wilson")},
            "mover_never_wider_than_trusted": never_wider,
            "designs_where_lam1_mover_was_wider_on_average": sum(
                r["mean_width"]["mover_lam1"] > r["mean_width"]["trusted_wilson"] for r in rows),
            "designs_that_can_beat_trusted": len(beat),
            "narrower_in_all_of_them": narrower,
            "load_average_1_5_15": [round(x, 2) for x in load],
            "seconds": time.perf_counter() - t0, "ratio": None, "target_ratio": 0.0,
            "passed": covered and narrower and never_wider}


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick=True), indent=2))
