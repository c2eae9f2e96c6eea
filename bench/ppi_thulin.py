"""Experiment (issue 29): candidate A (``bench/ppi_strat.py``'s SCAS interval of the
double-sampling estimate) at a coverage-adjusted nominal level (Thulin 2014,
"Coverage-adjusted confidence intervals for a binomial proportion", *Scand. J. Statist.* 41:
291-300): the smallest critical value ``z`` above the normal quantile whose EXACT coverage
(summed over every outcome of a design) reaches the level in every design of the bench grid.

For one outcome the SCAS test at the true rate ``p`` needs the score statistic ``S`` and
the skewness ``g`` at the restricted MLE, both free of ``z``; the outcome is covered at ``z``
where ``|S - g (z^2 - 1) / 6| <= z`` (Blaker's interval at the stated level where PPI++'s
``lam`` is 0, as on ``mdef``). So one enumeration of a design gives its exact coverage at a
whole ladder of ``z`` at once.

Run: ``PYTHONPATH=src nice .venv/bin/python bench/ppi_thulin.py grid NS`` (exact coverage
over the ladder for every design of the bench grid with these trusted-label counts, rows to
``bench/ppi_thulin_grid_NS.json``); ``... dense NS`` (the denser verification grid);
``... widths Z`` (Monte Carlo mean width at critical value ``Z`` beside the trusted-only
Wilson's, 2,000 draws, the bench seeds, the 156 informative designs).
``PPI_THULIN_LEVEL`` (0.95), ``PPI_THULIN_RATES`` / ``_AGREE`` / ``_ERRORS`` (the dense grid),
``PPI_THULIN_TAG`` (the JSON's name), ``PPI_THULIN_TOL_TABLE`` / ``_TOL_K`` (mass left out;
each row reports it, ``dropped_mass``).

**Verdict: not adopted.** The bench grid needs ``z`` = 1.9625 (a nominal 95.03%; all 224
designs exact, lowest 95.005%); at it the dense grids (``ppi_thulin_dense_95_*.json``, 852
designs) have four below 95% (94.41% at p 0.75, 85% one-sided, 20 labels; 94.79% at 0.8 /
85% / 25; 94.84% at 0.85 / 90% / 50; 94.998% at 0.15, 85% symmetric, 100) and a fine
one-sided grid
(``ppi_thulin_fine_95_onesided_20to30.json``) 25 of 660, lowest 93.49% (p 0.8, 87%, 24
labels); the top of the ladder (2.06) leaves five below 95% (lowest 94.52%). Cross-check
by Monte Carlo through the other code path (``ppi_strat.score_accepts``, 40,000 draws, seed
29, z 1.9625): 93.47% +- 0.24 at p 0.8 / 87% one-sided / 24 labels, 94.35% +- 0.23 at
0.75 / 85% / 20 (exact 93.49%, 94.41%). See docs/scorers.md.
"""

from __future__ import annotations

import json
import os
import sys
import time
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_ppi  # noqa: E402
from bench_ppi import AGREEMENT, ERRORS, RATES, TRUSTED, _cells  # noqa: E402
from evalband.stats._ppi import blaker_limits, tuned_lambda_counts  # noqa: E402

Array = npt.NDArray[np.float64]
BIG_N = 2000
TOL_TABLE = float(os.environ.get("PPI_THULIN_TOL_TABLE", "1e-11"))
TOL_K = float(os.environ.get("PPI_THULIN_TOL_K", "1e-12"))
LEVEL = float(os.environ.get("PPI_THULIN_LEVEL", "0.95"))


def _ladder(level: float) -> Array:
    """Critical values tried: the normal quantile and steps of 0.0025 above it."""
    from scipy.stats import norm

    z0 = float(norm.ppf(0.5 + level / 2))
    return z0 + 0.0025 * np.arange(41)


def _constrained(k1: Array, n1: Array, k0: Array, n0: Array, w: Array, theta: float
                 ) -> tuple[Array, Array]:
    """Restricted MLE ``(q1, q0)`` under ``w q1 + (1 - w) q0 = theta`` (bisection on the
    concave log-likelihood's derivative, as ``ppi_strat._constrained``)."""
    lo = np.maximum(0.0, (theta - (1 - w)) / w)
    hi = np.minimum(1.0, theta / w)
    eps = 1e-12
    a, b = lo + 0 * k1, hi + 0 * k1
    for _ in range(48):
        mid = 0.5 * (a + b)
        q0 = np.clip((theta - w * mid) / (1 - w), eps, 1 - eps)
        q1c = np.clip(mid, eps, 1 - eps)
        up = ((k1 - n1 * q1c) / (q1c * (1 - q1c))
              - w / (1 - w) * (k0 - n0 * q0) / (q0 * (1 - q0))) > 0
        a, b = np.where(up, mid, a), np.where(up, b, mid)
    q1 = 0.5 * (a + b)
    return q1, np.clip((theta - w * q1) / (1 - w), 0.0, 1.0)


def stat_skew(tables: Array, k_u: Array, big_n: int, p: float) -> tuple[Array, Array, Array]:
    """``(S, g, lam_zero)`` (T x K) of the SCAS test of ``theta = p`` (``ppi_strat.
    score_accepts`` with ``mn=True, skew=True``, the statistic before the critical value)."""
    a, b, c, d = (tables[:, i:i + 1] for i in range(4))
    n = a + b + c + d
    n1, n0 = a + c, b + d
    kk = k_u[None, :]
    pi = (n1 + kk) / (n + big_n)
    s1, s0 = np.maximum(n1, 1) + 0 * pi, np.maximum(n0, 1) + 0 * pi
    est = pi * a / s1 + (1 - pi) * b / s0
    q1, q0 = _constrained(a + 0 * pi, s1, b + 0 * pi, s0, pi, p)
    var = (pi ** 2 * q1 * (1 - q1) / s1 + (1 - pi) ** 2 * q0 * (1 - q0) / s0
           + (q1 - q0) ** 2 * pi * (1 - pi) / (n + big_n)) * n / (n - 1.0)
    mu3 = (pi ** 3 * q1 * (1 - q1) * (1 - 2 * q1) / s1 ** 2
           + (1 - pi) ** 3 * q0 * (1 - q0) * (1 - 2 * q0) / s0 ** 2
           + (q1 - q0) ** 3 * pi * (1 - pi) * (1 - 2 * pi) / (n + big_n) ** 2)
    safe = np.where(var > 0, var, 1.0)
    stat = np.where(var > 0, (est - p) / np.sqrt(safe), np.where(est == p, 0.0, np.inf))
    gamma = np.where(var > 0, mu3 / safe ** 1.5, 0.0)
    lam = tuned_lambda_counts(np.repeat(tables, k_u.size, axis=0), np.tile(k_u, len(tables)),
                              big_n).reshape(len(tables), k_u.size)
    return stat, gamma, lam == 0.0


def audit(p: float, agree: float, n: int, errors: str, level: float = LEVEL,
          chunk: int = 1_500_000) -> dict[str, Any]:
    """Exact coverage of SCAS at every critical value of the ladder, one design."""
    tables, p_table, k_u, p_k, dropped = bench_ppi.outcomes(p, agree, n, errors, BIG_N,
                                                            TOL_TABLE, TOL_K)
    zs = _ladder(level)
    covered = np.zeros(zs.size)
    el, eh = blaker_limits(tables[:, 0] + tables[:, 1], tables.sum(axis=1), level)
    blaker_ok = ((el <= p) & (p <= eh))[:, None]
    step = max(1, chunk // k_u.size)
    for i in range(0, len(tables), step):
        part = tables[i:i + step]
        w = p_table[i:i + step, None] * p_k[None, :]
        stat, gamma, zero = stat_skew(part, k_u, BIG_N, p)
        stat = np.nan_to_num(stat, nan=np.inf)
        w_zero = float(w[zero & blaker_ok[i:i + step]].sum())
        w_rest = np.where(zero, 0.0, w)
        for j, z in enumerate(zs):
            ok = np.abs(stat - gamma * (z * z - 1.0) / 6.0) <= z
            covered[j] += w_zero + float(w_rest[ok].sum())
    q = _cells(p, agree, errors)
    return {"p": p, "agree": agree, "errors": errors, "n": n, "level": level,
            "coverage": [round(float(c), 7) for c in covered], "dropped_mass": dropped,
            "outcomes": len(tables) * k_u.size, "constant": not 0 < q[0] + q[2] < 1}


def smallest_z(rows: list[dict[str, Any]], level: float) -> dict[str, Any]:
    """The smallest ladder ``z`` covering ``level`` in every row, and the worst row there."""
    zs = _ladder(level)
    cov = np.array([r["coverage"] for r in rows])
    ok = np.all(cov >= level, axis=0)
    j = int(np.argmax(ok)) if ok.any() else -1
    worst = int(np.argmin(cov[:, j]))
    return {"z": float(zs[j]) if j >= 0 else None, "ladder_index": j,
            "min_coverage_at_z": float(cov[worst, j]), "worst": {
                k: rows[worst][k] for k in ("p", "agree", "errors", "n")},
            "min_coverage_at_normal_quantile": float(cov[:, 0].min())}


def mc_width(p: float, agree: float, n: int, errors: str, z: float, reps: int = 2000,
             seed: int = 0) -> dict[str, Any]:
    """Monte Carlo mean width of SCAS at critical value ``z`` beside the trusted-only
    Wilson's on the same draws (``ppi_strat.mc_width`` with ``z``), and its coverage."""
    import ppi_strat
    from evalband.stats._intervals import _wilson

    rng = np.random.default_rng(seed)
    probs = _cells(p, agree, errors)
    tables = rng.multinomial(n, probs, size=reps).astype(float)
    k_u = rng.binomial(BIG_N, probs[0] + probs[2], size=reps).astype(float)
    a, b, c = tables[:, 0:1], tables[:, 1:2], tables[:, 2:3]
    m = tables.sum(axis=1, keepdims=True)
    pi = (a + c + k_u[:, None]) / (m + BIG_N)
    est = pi * a / np.maximum(a + c, 1) + (1 - pi) * b / np.maximum(m - a - c, 1)
    ends = []
    for edge in (0.0, 1.0):
        inner, outer = est.copy(), np.full_like(est, edge)
        for _ in range(40):
            mid = 0.5 * (inner + outer)
            ok = ppi_strat.score_accepts(tables, k_u, BIG_N, mid, z=z, mn=True, rows=True,
                                         skew=True)
            inner, outer = np.where(ok, mid, inner), np.where(ok, outer, mid)
        at_edge = ppi_strat.score_accepts(tables, k_u, BIG_N, np.full_like(est, edge), z=z,
                                          mn=True, rows=True, skew=True)
        ends.append(np.where(at_edge, edge, 0.5 * (inner + outer))[:, 0])
    lam = tuned_lambda_counts(tables, k_u, BIG_N)
    el, eh = blaker_limits(a[:, 0] + b[:, 0], m[:, 0], LEVEL)
    low = np.where(lam == 0.0, el, ends[0])
    high = np.where(lam == 0.0, eh, ends[1])
    wl, wh = _wilson(a[:, 0] + b[:, 0], m[:, 0], LEVEL)
    return {"p": p, "agree": agree, "errors": errors, "n": n, "reps": reps, "z": z,
            "width_ratio": round(float(np.mean(high - low) / np.mean(wh - wl)), 4),
            "mc_coverage": float(np.mean((low <= p) & (p <= high)))}


DENSE_RATES = ("0.02,0.05,0.1,0.15,0.2,0.25,0.3,0.35,0.4,0.45,0.5,0.55,0.6,0.65,0.7,0.75,0.8,"
               "0.85,0.9,0.95,0.98")
DENSE_AGREE = "0.85,0.9,0.95,0.98"


def dense_designs(ns: tuple[int, ...]) -> list[tuple[int, float, float, str]]:
    """The dense verification grid's designs (n, p, agree, errors) with these label counts,
    less the bench grid's own (``PPI_THULIN_RATES`` / ``_AGREE`` / ``_ERRORS`` narrow it)."""
    rates = tuple(float(x) for x in os.environ.get("PPI_THULIN_RATES", DENSE_RATES).split(","))
    agrees = tuple(float(x) for x in os.environ.get("PPI_THULIN_AGREE", DENSE_AGREE).split(","))
    errors = tuple(os.environ.get("PPI_THULIN_ERRORS", ",".join(ERRORS)).split(","))
    return [d for d in product(ns, rates, agrees, errors)
            if not (d[0] in TRUSTED and d[1] in RATES and d[2] in AGREEMENT)]


def _write(name: str, payload: dict[str, Any]) -> None:
    """The payload with one row a line (the rows hold the whole ladder)."""
    head = {k: v for k, v in payload.items() if k != "rows"}
    rows = ",\n".join(json.dumps(r) for r in payload["rows"])
    Path(__file__).with_name(name).write_text(
        json.dumps(head)[:-1] + ', "rows": [\n' + rows + "\n]}\n")


if __name__ == "__main__":
    t0 = time.perf_counter()
    which = sys.argv[1]
    start_load = os.getloadavg()
    print("load", start_load, flush=True)
    if which in ("grid", "dense"):
        ns = tuple(int(x) for x in sys.argv[2].split(","))
        if which == "grid":
            designs = list(product(ns, RATES, AGREEMENT, ERRORS))
        else:
            designs = dense_designs(ns)
        name = os.environ.get("PPI_THULIN_TAG") or (
            f"ppi_thulin_{which}_{int(LEVEL * 100)}_{'_'.join(map(str, ns))}")
        name += ".json"
        rows: list[dict[str, Any]] = []
        for n, p, a, e in designs:
            t1 = time.perf_counter()
            rows.append(audit(p, a, n, e) | {"seconds": round(time.perf_counter() - t1, 1)})
            r = rows[-1]
            print(n, p, a, e, r["coverage"][0], r["coverage"][8], r["seconds"], flush=True)
            _write(name, {"level": LEVEL, "ladder": list(_ladder(LEVEL)),
                          "load_at_start": start_load, "load_now": os.getloadavg(),
                          "summary": smallest_z(rows, LEVEL), "rows": rows})
    elif which == "widths":  # Monte Carlo widths at critical value Z, bench seeds
        z = float(sys.argv[2])
        wrows = []
        for i, (p, a, n, e) in enumerate(product(RATES, AGREEMENT, TRUSTED, ERRORS)):
            if a < 0.85 or not 0 < sum(_cells(p, a, e)[0::2]) < 1:
                continue
            wrows.append(mc_width(p, a, n, e, z, reps=2000, seed=1000 + i))
            print(wrows[-1], flush=True)
            _write(f"ppi_thulin_widths_{int(LEVEL * 100)}.json", {
                "z": z, "level": LEVEL, "load_at_start": start_load,
                "load_now": os.getloadavg(), "max_ratio": max(r["width_ratio"] for r in wrows),
                "rows": wrows})
    print(json.dumps({"seconds": time.perf_counter() - t0, "load_end": os.getloadavg()}))
