"""Benchmark: ``compare`` against the limit of this machine, and against the previous code.

Three sizes of one question, each measured side by side with the simplest code that computes
the same counts and tests (the *limit*: what the machine allows), in interleaved rounds
(medians of the per-round ratios):

* ``memory``: 200 vs 200 paired episodes on a three-slice panel, the runs in memory (their
  columns read once). evalband: :func:`evalband.analysis.compare_many` (every slice's row,
  tests, compatible intervals, power statements, aggregate; memoised bands and searches
  warm; what it derives from one run alone kept with the run). Against two limits:

  - the *subset limit* (``limit_numbers``, the figure this bench has always quoted): numpy
    on the same arrays -- the pairs' codes counted per cell, the slices' tables by one
    product, the exact McNemar p of every slice (``scipy.special.bdtr``), a plain Holm, both
    arms' Wilson bands. Only part of what ``compare`` outputs: the worker checks these
    numbers (p-values equal, bands to 1e-12), and its Holm is the plain one.
  - the *full limit* (:data:`FULL_LIMIT`, written out as ``full_limit.py``: numpy and
    ``scipy.special`` only, no evalband): every number of the comparison document that
    depends on the data -- counts and pair types, rates and their Wilson bands, the exact
    McNemar p-values, the discrete Holm adjusted p-values and levels, each slice's
    conditional exact interval at its Holm level and at the nominal level (made compatible
    with the test), the verdicts and reasons, the discordance band, unaided and
    intervention rates, the paired time-to-success t intervals and mean times, each slice's
    power statement (detectable drop, pairs for the effect, its basis: bisection on the
    exact McNemar power), the aggregate (weighted rates, stratified MOVER band), hidden and
    possible regressions, the overall verdict and exit code. Vectorised across slices; a
    Python loop only where the procedure is sequential (Holm's steps and levels, the power
    searches). It memoises exactly what evalband memoises across calls (``MEMOISED``: the
    bands, intervals, null distributions, t quantiles, power statements, the aggregate's
    band, and what a run alone gives, kept with the run); everything else is computed
    afresh each call, as evalband does. The worker asserts that it reproduces every such
    number of evalband's document (p-values bit for bit, the rest to 1e-12; today all are
    bit-identical) and that every path it does not compute is a constant, a label or
    configuration (``SKIPPED``). Measured whole and by part (counts, p-values, Holm and
    verdicts, intervals, time differences, power, aggregate), with its memos warm and
    afresh (``_fresh``: every memo dropped before each call, the cost of a first call).

  Target <= 2x.
* ``store``: the same runs read from a run store. evalband: ``open_store`` (read-only), two
  ``load_run`` and ``compare_many``. The limit: one ``sqlite3`` query per run of the
  comparison's columns (cell, episode, repeat, outcome, assistance, interventions, latency,
  time to success) into arrays, then the numpy above. Target <= 2x.
* ``cli``: ``evalband compare A B --store S --json`` in a fresh interpreter, wall and CPU
  (the children's ``rusage``). The limit: a fresh interpreter that reads the store and
  computes the counts and exact p-values (numpy, ``sqlite3``; the p-values with integer
  arithmetic). Target < 0.3 s when the machine is quiet (the load is recorded).

``previous``: the same three measured with the code of :data:`PREVIOUS_COMMIT` (the last
commit before this work; taken from git into a temporary folder) in the same rounds, and the
start-up of ``evalband --help``: issue 32 asks for figures no worse than 10% of the code
before. Both comparisons' documents must be equal in every number the previous code wrote
(but the adjusted p, which the discrete Holm procedure lowers on purpose).

``instructions``: the same paths counted in instructions by valgrind (one call of a path is
the count of many calls minus none, divided), which the machine's load does not move: on a
shared machine the ratios of these counts are the figures to quote, the times beside them
what this run saw. The full limit's figures are the result's ``memory_full_limit``
(instructions whole and by part, warm and afresh, the ratio of evalband's count to them, the
times, the check's tally); ``instruction_ratios`` keeps the subset limit's ratio as before
and adds ``memory_vs_full_limit``.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _source import source_of  # bench/ is on sys.path (run.py, the tests)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PREVIOUS_COMMIT = "b2d8aaa57d2dbac0fbade5fc95a3aa6e21186dbb"
"""The code before the fifth speed pass of issue 34 (an in-memory run's kept arrays checked by
a list comparison instead of a walk over its records; paired times read from each run's kept
key-ordered columns, without ``intersect1d``; two runs' same episodes found by comparing their
kept key bytes; a one-cell slice's sums read from the cell's; each slice design's power
statement memoised whole). The fourth pass (what a compare derives from one run kept with the
run: its pairing keys, pair codes, per-cell and per-slice counts and per-slice statistics; the
slices' McNemar p-values in one binomial call; each row finished in one replacement) was
measured against 2e598ca, the third pass (the in-memory compare's per-comparison Python and
numpy calls) against 8f5f089, the second against 5639f0c (metric values kept per run, a
stored run's ``extra`` read only where it may hold metrics, one query per run), the first
against 5bd041d, the code before the decision engine, the result models and the speed work
(``bench/performance_history.md``)."""
TARGETS = {"memory_ratio": 2.0, "store_ratio": 2.0, "cli_s": 0.3, "previous_ratio": 1.1}

FULL_LIMIT = r'''"""The full limit: every data-dependent number of evalband's comparison document.

numpy and scipy.special only (no evalband). Vectorised across slices; Python loops only
where the procedure is sequential (the discrete Holm steps and their levels, the power
searches, the verdict ladder). Matched pairs only (the bench's runs pair every episode).

Memoised across calls: what evalband memoises, the same way (``MEMOISED``); ``fresh`` drops
every memo and kept value first, so that a call computes every number (within one call a
value is still computed once, as any careful code would: the power searches' critical
values, the attainable p-values).
"""
import math
from bisect import bisect_right

import numpy as np
from scipy.special import (bdtr, bdtrc, bdtrik, betainccinv, betaincinv, gammaln, ndtri, stdtrit,
                           xlog1py, xlogy)

MEMOS = {}
MEMOISED = {  # what evalband memoises across calls (and where); the limit the same
    "kept": "per run: pair-code parts, pairing keys, per-cell and per-slice counts, per-slice "
            "mean time to success and latency p95 (RunColumns._derived, RunSide memo)",
    "wilson": "Wilson bands of (k, n, level) (analysis._statistics.wilson)",
    "paired": "the slices' compatible intervals of (counts, level, p) (_compare._compatible, "
              "_conditional.conditional_paired_limits)",
    "null": "a slice's attainable McNemar p-values (_compare._null, _discrete._mcnemar_at_most)",
    "t": "Student t quantiles (_statistics._t_quantile)",
    "power": "a slice design's power statement (_compare._statement, power_statement, "
             "_procedure._mcnemar_critical)",
    "mover": "the aggregate's stratified MOVER band of (cell counts, weights) "
             "(_compare._stratified)",
}


def memo(name, key, build):
    """``build()``, kept under ``(name, key)``."""
    table = MEMOS.setdefault(name, {})
    found = table.get(key)
    if found is None:
        found = table[key] = build()
    return found


def fresh(*runs):
    """Forget every memo and what the runs kept: the next call computes everything."""
    MEMOS.clear()
    for run in runs:
        run.pop("_kept", None)


def kept(run, name, build):
    """What one run alone gives, kept with the run (as evalband keeps it)."""
    store = run.setdefault("_kept", {})
    if name not in store:
        store[name] = build()
    return store[name]


def z_of(confidence):
    return memo("z", confidence, lambda: float(ndtri(0.5 + confidence / 2.0)))


# ------------------------------------------------------------------------------- counts

def run_cells(run, n_cells):
    """Per cell: episodes, counted, counted unaided successes, counted helped, successes."""
    use = ~run["error"]
    return np.stack([np.bincount(run["cell"][m], minlength=n_cells) for m in (
        np.ones(run["cell"].size, bool), use, use & run["unaided"], use & run["helped"],
        use & run["ok"])])


def counts(base, cand, members):
    """Slices x [neither, baseline only, candidate only, both, base 5 counts, cand 5 counts]."""
    n_cells = members.shape[1]
    kb = kept(base, "key", lambda: base["key"].tobytes())
    kc = kept(cand, "key", lambda: cand["key"].tobytes())
    if kb != kc:
        raise NotImplementedError("the limit pairs runs of the same episodes only")
    code = (kept(base, "as_base", lambda: base["cell"] * 4 + base["ok"])
            + kept(cand, "as_cand", lambda: 2 * cand["ok"].astype(np.int64)))
    types = np.bincount(code, minlength=4 * n_cells).reshape(n_cells, 4)
    cb = kept(base, "cells", lambda: members @ run_cells(base, n_cells).T)
    cc = kept(cand, "cells", lambda: members @ run_cells(cand, n_cells).T)
    return np.concatenate([members @ types, cb, cc], axis=1), types


# ------------------------------------------------------------------------------- p-values

def p_values(t):
    b_only, c_only = t[:, 1], t[:, 2]
    return np.minimum(1.0, 2.0 * bdtr(np.minimum(b_only, c_only), b_only + c_only, 0.5))


# ------------------------------------------------------------------------------- intervals

def wilson(k, n, confidence):
    """Wilson bands of arrays ``k`` of ``n`` (counts form; 0 at k = 0, 1 at k = n)."""
    z = z_of(confidence)
    z2 = z * z
    half = z * np.sqrt(k * (n - k) / n + z2 / 4.0)
    low = np.where(k == 0, 0.0, (k + z2 / 2.0 - half) / (n + z2))
    high = np.where(k == n, 1.0, (k + z2 / 2.0 + half) / (n + z2))
    return low, high


def clopper_pearson(k, n, confidence):
    tail = (1.0 - confidence) / 2.0
    low = np.where(k <= 0, 0.0, betaincinv(np.maximum(k, 1), n - k + 1, tail))
    high = np.where(k >= n, 1.0, betainccinv(k + 1, np.maximum(n - k, 1), tail))
    return np.where(n > 0, low, 0.0), np.where(n > 0, high, 1.0)


def paired_limits(a_only, b_only, n, confidence):
    """Conditional exact limits of p_A - p_B: Clopper-Pearson on the share of the discordant
    pairs A wins, scaled by Clopper-Pearson on the discordant share."""
    m = a_only + b_only
    pi_lo, pi_hi = clopper_pearson(a_only, m, confidence)
    psi_lo, psi_hi = clopper_pearson(m, n, confidence)
    lo_share, hi_share = 2.0 * pi_lo - 1.0, 2.0 * pi_hi - 1.0
    low = np.where(lo_share < 0, psi_hi, psi_lo) * lo_share
    high = np.where(hi_share > 0, psi_hi, psi_lo) * hi_share
    return np.maximum(-1.0, low), np.minimum(1.0, high)


def compatible(a_only, b_only, n, confidence, p):
    """The paired interval at ``confidence``, made to exclude 0 exactly when p <= 1 - it."""
    low, high = paired_limits(a_only, b_only, n, confidence)
    est = np.where(n > 0, (a_only - b_only) / np.maximum(n, 1), 0.0)
    rejects = p <= 1.0 - confidence
    low = np.where(rejects, low, np.minimum(low, 0.0))
    high = np.where(rejects, high, np.maximum(high, 0.0))
    straddles = rejects & (low <= 0.0) & (0.0 <= high)
    low = np.where(straddles & (est > 0), np.minimum(1e-9, high), low)
    high = np.where(straddles & (est <= 0), np.maximum(-1e-9, low), high)
    return est, np.minimum(low, est), np.maximum(high, est)


def intervals(t, p, levels, confidence):
    """Both arms' and the discordance's Wilson bands; the slice intervals at their Holm
    level and at the nominal one."""
    k = np.concatenate([t[:, 8], t[:, 13], t[:, 1] + t[:, 2]])
    n = np.concatenate([t[:, 5], t[:, 10], t[:, 0:4].sum(axis=1)])
    bands = memo("wilson", (k.tobytes(), n.tobytes(), confidence),
                 lambda: wilson(k, n, confidence))
    conf = np.concatenate([1.0 - levels, np.full(t.shape[0], confidence)])
    table = t[:, 0:4]
    est, low, high = memo("paired", (table.tobytes(), conf.tobytes(), p.tobytes()),
                          lambda: compatible(np.tile(table[:, 2], 2), np.tile(table[:, 1], 2),
                                             np.tile(table.sum(axis=1), 2), conf, np.tile(p, 2)))
    return k / n, bands, conf, est, low, high


# ------------------------------------------------------------------------------- Holm

def attainable(m):
    """The exact McNemar test's attainable p-values with ``m`` discordant pairs, rising."""
    return memo("null", m, lambda: np.minimum(
        1.0, 2.0 * bdtr(np.arange(m // 2 + 1), m, 0.5)).tolist())


def at_most(values, t):
    """The largest attainable p <= t (0 when none; 1 at t >= 1)."""
    if t >= 1.0:
        return 1.0
    i = bisect_right(values, t)
    return values[i - 1] if i else 0.0


def discrete_holm(p, m_discordant, alpha):
    """Holm's step-down charging each test what it can attain; levels as evalband's.

    The steps are sequential (each adjusted p the running maximum over the steps before,
    each level depends on where the procedure stopped): a loop over the ranks.
    """
    raw = p.tolist()
    nulls = [attainable(m) if m > 0 else [] for m in m_discordant.tolist()]
    order = sorted(range(len(raw)), key=raw.__getitem__)
    size = len(raw)
    adjusted, levels, rejected = [0.0] * size, [0.0] * size, [False] * size
    running, stop = 0.0, None
    for rank, i in enumerate(order):
        t = raw[i]
        running = max(running, min(1.0, sum(at_most(nulls[j], t) for j in order[rank:])))
        adjusted[i] = running
    for rank, i in enumerate(order):
        step = alpha / (size - rank)
        rejected[i] = done = adjusted[i] <= alpha
        if done and stop is None:
            level = max(step, raw[i])
        else:
            stop = step if stop is None else stop
            level = min(stop, math.nextafter(raw[i], -math.inf))
        toward = math.inf if done else -math.inf
        while (raw[i] <= 1.0 - (1.0 - level)) != done and 0.0 < level < 1.0:
            level = math.nextafter(level, toward)
        levels[i] = level
    return adjusted, np.array(levels), rejected


def verdicts(rejected, est, reasons):
    """The verdict ladder (unreadable, regressed, improved, no change) and the row's flag."""
    verdict = ["inconclusive" if why else "regressed" if done and e < 0 else
               "improved" if done and e > 0 else "no detectable change"
               for done, e, why in zip(rejected, est, reasons)]
    return verdict, [e < 0 and v != "regressed" for e, v in zip(est, verdict)]


# ------------------------------------------------------------------------------- times

def slice_means(run, members):
    """Per slice: the run's mean time to success (None without one) and latency p95."""
    use = ~run["error"]
    timed = use & run["ok"] & ~np.isnan(run["tts"])
    measured = use & ~np.isnan(run["latency"])
    means, p95 = [], []
    for inside in members.astype(bool):
        t = run["tts"][timed & inside[run["cell"]]]
        means.append(float(np.add.reduce(t) / t.size) if t.size else None)
        lat = run["latency"][measured & inside[run["cell"]]]
        p95.append(float(np.percentile(lat, 95)) if lat.size else None)
    return means, p95


def times(base, cand, members, confidence):
    """Per slice: paired t on time-to-success differences where both succeeded (key order),
    and each run's mean time to success."""
    both = (kept(base, "timed", lambda: base["ok"] & ~np.isnan(base["tts"]) & ~base["error"])
            & kept(cand, "timed", lambda: cand["ok"] & ~np.isnan(cand["tts"]) & ~cand["error"]))
    d = cand["tts"][both] - base["tts"][both]
    shift = float(np.add.reduce(d)) / d.size if d.size else 0.0
    d = d - shift
    cell = base["cell"][both]
    n_cells = members.shape[1]
    per_cell = np.stack([np.bincount(cell, minlength=n_cells).astype(float),
                         np.bincount(cell, weights=d, minlength=n_cells),
                         np.bincount(cell, weights=d * d, minlength=n_cells)], axis=1)
    n, total, squares = (members @ per_cell).T
    n = n.astype(np.int64)
    df = np.maximum(n - 1, 1)
    q = memo("t", (df.tobytes(), confidence), lambda: stdtrit(df, 0.5 + confidence / 2))
    nn = np.maximum(n, 1)
    centred = total / nn
    var = np.maximum(squares - total * centred, 0.0) / df
    mean = shift + centred
    half = q * np.sqrt(var / nn)
    mb = kept(base, "means", lambda: slice_means(base, members))
    mc = kept(cand, "means", lambda: slice_means(cand, members))
    return n, mean, mean - half, mean + half, mb[0], mc[0], mc[1]


# ------------------------------------------------------------------------------- power

def critical(alpha, size):
    """c_m, m = 0..size: the largest b with 2 P[Bin(m, 1/2) <= b] <= alpha (-1: none)."""
    def build():
        m = np.arange(size + 1)
        guess = np.nan_to_num(bdtrik(alpha / 2.0, m, 0.5), nan=-1.0)
        c = np.clip(np.floor(guess).astype(np.int64), -1, None)
        while True:  # walk each guess to the exact boundary (below m / 2)
            down = (c >= 0) & (2.0 * bdtr(np.maximum(c, 0), m, 0.5) > alpha)
            up = ~down & (2.0 * bdtr(c + 1, m, 0.5) <= alpha) & (c + 1 < m / 2.0)
            if not (down.any() or up.any()):
                return c
            c = c - down + up
    return memo("critical", (alpha, size), build)


def mcnemar_power(n, p10, p01, alpha):
    """Exact power of the two-sided exact McNemar test: sum over the discordant count."""
    psi = min(1.0, p10 + p01)
    if psi <= 0.0:
        return 0.0
    size = 1 << max(4, int(n).bit_length())
    sd = math.sqrt(n * psi * (1.0 - psi))
    lo, hi = max(0, int(n * psi - 9.0 * sd - 2)), min(n, int(n * psi + 9.0 * sd + 2))
    crit = critical(alpha, size)[lo:hi + 1]
    m = np.arange(lo, hi + 1)
    weight = np.exp(gammaln(n + 1) - gammaln(m + 1) - gammaln(n - m + 1)
                    + xlogy(m, psi) + xlog1py(n - m, -psi))
    share = min(max(p10 / psi, 0.0), 1.0)
    c = np.maximum(crit, 0)
    reject = np.where(crit >= 0, bdtr(c, m, share) + bdtrc(m - c - 1, m, share), 0.0)
    return float(np.clip(np.sum(weight * reject), 0.0, 1.0))


def joint_pair(p_b, p_c, phi):
    p11 = p_b * p_c + phi * math.sqrt(max(p_b * (1 - p_b) * p_c * (1 - p_c), 0.0))
    p11 = min(max(p11, max(0.0, p_b + p_c - 1.0)), min(p_b, p_c))
    return max(p_b - p11, 0.0), max(p_c - p11, 0.0)


def power_at(n, p, drop, alpha, discordant):
    psi = min(1.0, max(discordant, drop))
    return mcnemar_power(n, (psi - drop) / 2.0, (psi + drop) / 2.0, alpha)


def smallest_drop(n, p, phi, alpha, target, grain=0.001):
    """Bisection on the exact power, then steps on the 0.001 grid (it is not monotone)."""
    def ok(x):
        return power_at(n, p, x, alpha, sum(joint_pair(p, p - x, phi))) >= target
    if p <= 0 or not ok(p):
        return None
    lo, hi = 0.0, p
    while hi - lo > grain / 2.0:
        mid = (lo + hi) / 2.0
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    x = min(p, round(math.ceil(hi / grain - 1e-9) * grain, 3))
    while x - grain > lo and ok(round(x - grain, 3)):
        x = round(x - grain, 3)
    while not ok(x) and x < p:
        x = min(p, round(x + grain, 3))
    return x if ok(x) else None


def pairs_for(p, drop, alpha, discordant, target):
    """The smallest pairs found by bisection on the exact power, bracketed by Connor's
    (1987) normal approximation."""
    def ok(n):
        return power_at(n, p, drop, alpha, discordant) >= target
    psi, gap = max(discordant, drop), drop
    if gap - 1e-12 <= psi <= min(2 * p - drop, 2.0 - 2 * p + drop) + 1e-12 and 0 <= psi <= 1:
        root = (-ndtri(alpha / 2.0) * math.sqrt(psi)
                + ndtri(target) * math.sqrt(max(psi - gap * gap, 0.0))) / gap
        guess = max(1, math.ceil((root * root if root > 0 else 0.0) - 1e-9))
    else:
        guess = 16
    hi = max(4, int(guess * 0.9))
    while not ok(hi):
        hi *= 2
        if hi > 20_000:
            return None
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def statement(both, b_only, c_only, neither, alpha, effect, target=0.8):
    """A slice design's power statement: detectable drop, pairs for ``effect``, the basis."""
    def build():
        n = both + b_only + c_only + neither
        den = (both + c_only) * (b_only + neither) * (both + b_only) * (c_only + neither)
        phi = 0.0 if den == 0 else float(min(1.0, max(
            0.0, (both * neither - c_only * b_only) / math.sqrt(den))))
        p, phi = round((both + b_only) / n, 6), round(phi, 3)
        drop = smallest_drop(n, p, phi, alpha, target)
        needed = None
        if 0 < effect <= p and (drop is None or drop > effect):
            needed = pairs_for(p, effect, alpha, sum(joint_pair(p, p - effect, phi)), target)
        return drop, needed, p, phi
    return memo("power", (both, b_only, c_only, neither, alpha, effect), build)


def power(t, verdict, alpha, effect):
    out = []
    for (neither, b_only, c_only, both), v in zip(t[:, 0:4].tolist(), verdict):
        n = both + b_only + c_only + neither
        out.append(None if n < 2 or v in ("regressed", "improved")
                   else statement(both, b_only, c_only, neither, alpha, effect))
    return out


# ------------------------------------------------------------------------------- aggregate

def wilson_cc(p, n, z):
    """Continuity-corrected Wilson limits of rate ``p`` on a fractional ``n`` (Newcombe 4)."""
    z2 = z * z
    low = 0.0 if p <= 0.0 else (2 * n * p + z2 - 1 - z * math.sqrt(
        max(z2 - 2 - 1 / n + 4 * p * (n * (1 - p) + 1), 0.0))) / (2 * (n + z2))
    high = 1.0 if p >= 1.0 else (2 * n * p + z2 + 1 + z * math.sqrt(
        max(z2 + 2 - 1 / n + 4 * p * (n * (1 - p) - 1), 0.0))) / (2 * (n + z2))
    return max(low, 0.0), min(high, 1.0)


def mover(types, w, confidence):
    """Stratified MOVER over the cells (A = candidate): per-arm continuity-corrected Wilson
    limits at the effective sample size, Newcombe's paired correlation."""
    neither, b_only, a_only, both = (types[:, i].astype(float) for i in range(4))
    n = neither + b_only + a_only + both
    w = w / w.sum()
    z = z_of(confidence)

    def arm(p):
        total = float(np.sum(w * p))
        var = float(np.sum(w * w * np.where(n > 1, p * (1 - p) / np.maximum(n - 1, 1),
                                            total * (1 - total) / n)))
        n_eff = 1.0 / float(np.sum(w * w / n))
        if var > 0.0:
            n_eff = min(n_eff, total * (1.0 - total) / var)
        low, high = wilson_cc(total, max(n_eff, 1.0), z)
        return total, min(low, total), max(high, total), var

    num = both * neither - a_only * b_only
    num = np.where(num > 0, np.maximum(num - n / 2.0, 0.0), num)
    cov = float(np.sum(np.where(n > 1, w * w * num / (n * n * np.maximum(n - 1.0, 1.0)), 0.0)))
    t_a, l_a, u_a, v_a = arm((both + a_only) / n)
    t_b, l_b, u_b, v_b = arm((both + b_only) / n)
    phi = max(-1.0, min(1.0, cov / math.sqrt(v_a * v_b))) if v_a > 0 and v_b > 0 else 0.0
    est = t_a - t_b
    down = math.sqrt(max((t_a - l_a) ** 2 - 2 * phi * (t_a - l_a) * (u_b - t_b)
                         + (u_b - t_b) ** 2, 0.0))
    up = math.sqrt(max((u_a - t_a) ** 2 - 2 * phi * (u_a - t_a) * (t_b - l_b)
                       + (t_b - l_b) ** 2, 0.0))
    return est, max(-1.0, est - down), min(1.0, est + up)


def aggregate(types, cell_rows, weights, confidence):
    """The weighted rates and the stratified band over cells with episodes in both runs."""
    k_b, n_b, k_c, n_c = cell_rows
    used = (n_b > 0) & (n_c > 0)
    w = weights[used] / weights[used].sum()
    rate_b = float(np.sum(w * k_b[used] / n_b[used]))
    rate_c = float(np.sum(w * k_c[used] / n_c[used]))
    band = memo("mover", (types[used].tobytes(), w.tobytes(), confidence),
                lambda: mover(types[used], w, confidence))
    return w, rate_b, rate_c, band


# ------------------------------------------------------------------------------- the whole

def decide(t, rejected, est):
    """The slices' reasons (errors, a rising intervention rate; no latency budget on the
    bench's panel) and the verdict ladder."""
    errors = (t[:, 4] - t[:, 5]) + (t[:, 9] - t[:, 10])
    help_b = t[:, 7] / np.maximum(t[:, 5], 1)
    help_c = t[:, 12] / np.maximum(t[:, 10], 1)
    rose = help_c > help_b
    verdict, possible = verdicts(rejected, est.tolist(), ((errors > 0) | rose).tolist())
    return errors, help_b, help_c, rose, verdict, possible


def stages(base, cand, members, weights, names, confidence=0.95, effect=0.1):
    """Every stage of the limit in order; their values by name (what ``assemble`` reads)."""
    alpha = 1.0 - confidence
    t, types = counts(base, cand, members)
    p = p_values(t)
    family = p.size
    adjusted, levels, rejected = discrete_holm(p, t[:, 1] + t[:, 2], alpha)
    rates, bands, conf, est, low, high = intervals(t, p, levels, confidence)
    errors, help_b, help_c, rose, verdict, possible = decide(t, rejected, est[:family])
    tn, tmean, tlow, thigh, mean_b, mean_c, p95_c = times(base, cand, members, confidence)
    statements = power(t, verdict, alpha / family, effect)
    total = types.sum(axis=1)
    cell_rows = (types[:, 3] + types[:, 1], total, types[:, 3] + types[:, 2], total)
    w, rate_b, rate_c, (a_est, a_low, a_high) = aggregate(types, cell_rows, weights,
                                                          confidence)
    return locals()


def limit_full(base, cand, members, weights, names, confidence=0.95, effect=0.1):
    """Every data-dependent number of the comparison document (``assemble`` names them by
    their document paths, for the check: evalband's document is not built in its count)."""
    return stages(base, cand, members, weights, names, confidence, effect)


def assemble(v):
    """The numbers by document path (the plain Python the document holds)."""
    t, s, out = v["t"].tolist(), v["family"], {}
    low_b, high_b = v["bands"]
    for i, name in enumerate(v["names"]):
        neither, b_only, c_only, both = t[i][0:4]
        pre = f"slices/{i}/"
        pairs = {"both": both, "baseline_only": b_only, "candidate_only": c_only,
                 "neither": neither, "unmatched": 0}
        out.update({pre + "n_baseline": t[i][5], pre + "successes_baseline": t[i][8],
                    pre + "n_candidate": t[i][10], pre + "successes_candidate": t[i][13]})
        for arm, j, (k, n) in (("rate_baseline", i, (t[i][8], t[i][5])),
                               ("rate_candidate", s + i, (t[i][13], t[i][10])),
                               ("discordance", 2 * s + i, (b_only + c_only, sum(t[i][0:4])))):
            out.update({pre + arm + "/estimate": float(v["rates"][j]),
                        pre + arm + "/low": float(low_b[j]), pre + arm + "/high": float(high_b[j]),
                        pre + arm + "/k": k, pre + arm + "/n": n})
        out.update({pre + "pairs/" + k: x for k, x in pairs.items()})
        said = []
        if v["errors"][i]:
            said.append(f"{v['errors'][i]} error episode(s) present (fix them, or count "
                        "errors as failures)")
        if v["rose"][i]:
            said.append(f"intervention rate rose from {v['help_b'][i]:.0%} to "
                        f"{v['help_c'][i]:.0%}")
        out[pre + "reasons"] = said
        out[pre + "pairing"] = "paired"
        for key, j in (("delta", i), ("delta_unadjusted", s + i)):
            lo, hi = float(v["low"][j]), float(v["high"][j])
            out.update({pre + key + "/estimate": float(v["est"][j]), pre + key + "/low": lo,
                        pre + key + "/high": hi, pre + key + "/confidence": float(v["conf"][j]),
                        pre + key + "/excludes_zero": lo > 0.0 or hi < 0.0,
                        pre + key + "/verdict": "improved" if lo > 0.0 else (
                            "regressed" if hi < 0.0 else "no detectable change"),
                        pre + key + "/counts/both": both, pre + key + "/counts/a_only": c_only,
                        pre + key + "/counts/b_only": b_only,
                        pre + key + "/counts/neither": neither})
        p = float(v["p"][i])
        out.update({pre + "test/p_value": p, pre + "p_value": p,
                    pre + "test/details/candidate_only": c_only,
                    pre + "test/details/baseline_only": b_only,
                    pre + "p_holm": float(v["adjusted"][i]), pre + "level": float(v["conf"][i]),
                    pre + "verdict": str(v["verdict"][i]),
                    pre + "possible_regression": bool(v["possible"][i]),
                    pre + "excluded": False})
        for arm, c0 in (("baseline", 5), ("candidate", 10)):
            counted, unaided, helped, k = t[i][c0], t[i][c0 + 1], t[i][c0 + 2], t[i][c0 + 3]
            out[pre + f"unaided_rate_{arm}"] = unaided / counted
            out[pre + f"intervention_rate_{arm}"] = helped / counted
            out[pre + f"inflated_{arm}"] = k / counted - unaided / counted
        out[pre + "latency_p95_candidate_ms"] = v["p95_c"][i]
        out[pre + "mean_time_to_success_baseline_s"] = v["mean_b"][i]
        out[pre + "mean_time_to_success_candidate_s"] = v["mean_c"][i]
        if v["tn"][i] >= 2:
            out.update({pre + "time_to_success_delta_s/estimate": float(v["tmean"][i]),
                        pre + "time_to_success_delta_s/low": float(v["tlow"][i]),
                        pre + "time_to_success_delta_s/high": float(v["thigh"][i]),
                        pre + "time_to_success_delta_s/n": int(v["tn"][i])})
        st = v["statements"][i]
        if st is not None:
            out.update({pre + "detectable_drop": st[0], pre + "episodes_for_effect": st[1],
                        pre + "power_basis/base_rate": st[2],
                        pre + "power_basis/correlation": st[3],
                        pre + "power_basis/level": v["alpha"] / v["family"]})
    names = list(v["names"])
    for name, x in zip(names, v["w"].tolist()):
        out[f"aggregate/weights/{name}"] = x
    out.update({"aggregate/rate_baseline": v["rate_b"], "aggregate/rate_candidate": v["rate_c"],
                "aggregate/delta": v["a_est"], "aggregate/low": v["a_low"],
                "aggregate/high": v["a_high"], "procedure/family_size": v["family"]})
    regressed = [n for n, x in zip(names, v["verdict"]) if x == "regressed"]
    unsure = [n for n, x in zip(names, v["verdict"]) if x == "inconclusive"]
    hides = v["a_est"] >= 0 or v["a_low"] <= 0 <= v["a_high"]
    out["hidden_regressions"] = regressed if hides else []
    out["possible_regressions"] = [n for n, x in zip(names, v["possible"]) if x]
    out["verdict"] = ("regression" if regressed else "inconclusive" if unsure
                      else "improves" if v["a_low"] > 0 else "no regression")
    out["exit_code"] = {"improves": 0, "no regression": 3, "regression": 4,
                        "inconclusive": 5}[out["verdict"]]
    return out
'''

# One process measures one code base (``PYTHONPATH``): its compare and the limit, interleaved.
WORKER = r'''
import json, math, sqlite3, statistics, sys, time
import numpy as np
from scipy.special import bdtr
import evalband
from evalband.analysis import compare_many
from evalband.store import open_store

store, base_id, cand_id, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
MODE = sys.argv[5] if len(sys.argv) > 5 else "time"  # or "memory", "store", "limit_*" x N


def limit_numbers(cells, b_ok, c_ok, n_cells):
    """Counts per cell -> per slice (one product), exact McNemar p, Holm, Wilson bands."""
    code = cells * 4 + 2 * c_ok.astype(np.int64) + b_ok.astype(np.int64)
    types = np.bincount(code, minlength=4 * n_cells).reshape(n_cells, 4)
    tables = np.eye(n_cells, dtype=np.int64) @ types
    b_only, c_only = tables[:, 1], tables[:, 2]
    p = np.minimum(1.0, 2.0 * bdtr(np.minimum(b_only, c_only), b_only + c_only, 0.5))
    order = np.argsort(p, kind="mergesort")
    holm = np.empty_like(p)
    holm[order] = np.minimum(1.0, np.maximum.accumulate(p[order] * np.arange(p.size, 0, -1)))
    n = tables.sum(axis=1)
    z = 1.959963984540054
    bands = []
    for k in (tables[:, 1] + tables[:, 3], tables[:, 2] + tables[:, 3]):
        ph, den = k / n, 1 + z * z / n
        mid = (ph + z * z / (2 * n)) / den
        half = z * np.sqrt(ph * (1 - ph) / n + z * z / (4 * n * n)) / den
        bands.append((mid - half, mid + half))
    return p, holm, bands


SELECT = ('SELECT "cell", "episode", "repeat", "outcome" = \'success\', "assisted", '
          '"interventions", "latency_ms_p95", "time_to_success_s" FROM episodes WHERE '
          'run_id = ? ORDER BY "cell", "episode", "repeat"')


def read_limit():
    """The comparison's columns of both runs (what evalband reads), then the numpy above."""
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    out = []
    for run in (base_id, cand_id):
        cells, episode, repeat, ok, assisted, helped, latency, tts = zip(
            *conn.execute(SELECT, (run,)).fetchall())
        arrays = [np.array(v, dtype=t) for v, t in ((episode, np.int64), (repeat, np.int64),
                                                    (assisted, bool), (helped, np.int64),
                                                    (latency, float), (tts, float))]
        out.append((cells, np.array(ok, dtype=bool), arrays))
    conn.close()
    keys = sorted(set(out[0][0]))
    index = {k: i for i, k in enumerate(keys)}
    cells = np.array([index[c] for c in out[0][0]], dtype=np.int64)
    return limit_numbers(cells, out[0][1], out[1][1], len(keys))


SKIPPED = {  # document paths the full limit does not compute: constants, labels, config
    r"schema|baseline|candidate|baseline_policy|candidate_policy|panel_name|panel_fingerprint|"
    r"panel_mismatch|confidence": "the runs' ids and panel, echoed; the configured confidence",
    r"procedure/(slice_test|multiplicity|alpha|interval|aggregate|effect)": "configuration",
    r"slices/\d+/(kind|name|primary|effect|latency_budget_ms|margin)": "the panel's slice "
    "definitions and configuration (no latency budget, margin or required slice)",
    r"slices/\d+/(rate_baseline|rate_candidate|discordance|time_to_success_delta_s)/"
    r"(method|confidence)": "labels and the configured confidence",
    r"slices/\d+/(delta|delta_unadjusted)/(method|paired)|slices/\d+/test/(method|sidedness)":
    "labels (the design is paired: the limit computes matched pairs only)",
    r"slices/\d+/power_basis/(power|test)": "the configured target power and the test's name",
    r"aggregate/(method|confidence)": "label and configured confidence",
    r"sentence|notes": "words: the sentence renders the numbers checked here, the note names "
    "the procedure and the family size (checked as procedure/family_size)",
    r"peeking|metrics|scorer": "empty: no sequential look, metric or scorer on this panel",
}


def check_full(doc, numbers):
    """Every number the full limit computes equals evalband's document: exactly where the
    value comes from one library call (the p-values), else to 1e-12; every other path of the
    document is a constant, a label or configuration (``SKIPPED``)."""
    import re

    def flat(x, pre=""):
        if isinstance(x, dict):
            for k, v in x.items():
                yield from flat(v, f"{pre}{k}/")
        elif isinstance(x, list) and x and isinstance(x[0], dict):
            for i, v in enumerate(x):
                yield from flat(v, f"{pre}{i}/")
        else:
            yield pre[:-1], x
    found = dict(flat(json.loads(json.dumps(doc))))  # as ``--json`` writes it
    same = close = 0
    worst = 0.0
    for path, value in numbers.items():
        ours = found[path]
        if isinstance(ours, float) and isinstance(value, float) and ours != value:
            assert not path.endswith("p_value"), (path, ours, value)  # one bdtr call: exact
            assert abs(ours - value) <= 1e-12, (path, ours, value)
            worst, close = max(worst, abs(ours - value)), close + 1
        else:
            assert ours == value and type(ours) is type(value), (path, ours, value)
            same += 1
    left = [k for k in found if k not in numbers]
    unexplained = [k for k in left if not any(re.fullmatch(r, k) for r in SKIPPED)]
    assert not unexplained, unexplained
    return {"numbers": len(numbers), "identical": same, "within_1e-12": close,
            "largest_difference": worst, "not_computed": len(left), "skipped": SKIPPED}


def document(c):
    try:
        from evalband.report import comparison_document
    except ImportError:  # the previous code
        return c.as_dict()
    return comparison_document(c)


def from_store():
    with open_store(store, read_only=True) as st:
        base, cand = evalband.load_run(base_id, st), evalband.load_run(cand_id, st)
        return compare_many(base, [cand])[0]


with open_store(store, read_only=True) as st:
    base, cand = evalband.load_run(base_id, st), evalband.load_run(cand_id, st)
    list(base.records), list(cand.records)  # records in memory: the in-memory case
from evalband.analysis._compare import RunData
base = RunData(base.run_id, base.policy, base.panel_fingerprint, base.panel, list(base.records))
cand = RunData(cand.run_id, cand.policy, cand.panel_fingerprint, cand.panel, list(cand.records))
cells = [c.key for c in base.panel.cells()]
bc, cc = base.compare_columns(cells), cand.compare_columns(cells)
doc = document(compare_many(base, [cand])[0])
assert json.dumps(document(from_store())) == json.dumps(doc)
p, _, bands = limit_numbers(bc.cell, bc.success, cc.success, len(cells))
assert [row["p_value"] for row in doc["slices"]] == p.tolist()  # the limit computes the same
for arm, (low, high) in zip(("rate_baseline", "rate_candidate"), bands):  # bands to rounding
    for key, limit in (("low", low), ("high", high)):
        assert np.allclose([row[arm][key] for row in doc["slices"]], limit, rtol=0, atol=1e-12)


FULL = None  # the full limit (this code only: the previous has no comparison document)
if MODE == "time":
    try:
        from evalband.analysis._compare import _layout
        from evalband.report import comparison_document  # noqa: F401
    except ImportError:
        _layout = None
    if _layout is not None:
        import full_limit as FL
        layout = _layout(base)  # the panel's slices and weights: configuration, not data
        members = np.asarray(layout.members, dtype=np.int64)
        weights = np.array([layout.weights[k] for k in cells])
        names = [d[1] for d in layout.definitions]
        spans = (int(max(bc.episode.max(), cc.episode.max())) + 1,
                 int(max(bc.repeat.max(), cc.repeat.max())) + 1)
        plain = [{"cell": np.array(c.cell, dtype=np.int64),
                  "key": (np.array(c.cell, dtype=np.int64) * spans[0] + c.episode) * spans[1]
                  + c.repeat, "ok": np.array(c.success, dtype=bool),
                  "error": np.array(c.error, dtype=bool),
                  "unaided": np.array(c.unaided, dtype=bool),
                  "helped": np.array(c.intervened, dtype=bool),
                  "latency": np.array(c.latency_p95, dtype=float),
                  "tts": np.array(c.time_to_success, dtype=float)} for c in (bc, cc)]
        B, C = plain
        np.savez(store + ".limit.npz", members=members, weights=weights, names=np.array(names),
                 **{f"b_{k}": v for k, v in B.items()}, **{f"c_{k}": v for k, v in C.items()})
        FL.fresh(B, C)
        FULL = check_full(doc, FL.assemble(FL.limit_full(B, C, members, weights, names)))
        FULL["memoised"] = FL.MEMOISED


if MODE != "time":  # run one path ``rounds`` times (instructions are counted outside)
    path = {"memory": lambda: compare_many(base, [cand]), "store": from_store,
            "limit_memory": lambda: limit_numbers(bc.cell, bc.success, cc.success, len(cells)),
            "limit_store": read_limit}[MODE]
    for _ in range(rounds):
        path()
    sys.exit(0)


def timed(fn, inner):
    t0 = time.perf_counter()
    for _ in range(inner):
        fn()
    return (time.perf_counter() - t0) / inner


def full_fresh():
    FL.fresh(B, C)
    return FL.limit_full(B, C, members, weights, names)


times = {k: [] for k in ("memory", "memory_limit", "store", "store_limit", "memory_full_limit",
                         "memory_full_limit_fresh")}
for _ in range(rounds):
    times["memory"].append(timed(lambda: compare_many(base, [cand]), 50))
    times["memory_limit"].append(timed(lambda: limit_numbers(bc.cell, bc.success, cc.success,
                                                             len(cells)), 50))
    if FULL is not None:
        times["memory_full_limit"].append(timed(lambda: FL.limit_full(B, C, members, weights,
                                                                      names), 50))
        times["memory_full_limit_fresh"].append(timed(full_fresh, 2))
    times["store"].append(timed(from_store, 5))
    times["store_limit"].append(timed(read_limit, 5))
print(json.dumps({"times": times, "document": doc, "full_limit": FULL}))
'''

# The full limit alone (numpy, scipy.special, full_limit.py; no evalband): its inputs as the
# worker saved them, one mode run ``calls`` times, after one call that warms its memos.
LIMIT_WORKER = r'''
import sys
import numpy as np
import full_limit as FL

data, calls, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
saved = np.load(data)
B, C = ({k[2:]: saved[k] for k in saved.files if k.startswith(arm)} for arm in ("b_", "c_"))
members, weights, names = saved["members"], saved["weights"], saved["names"].tolist()
v = FL.stages(B, C, members, weights, names)  # the memos warm, as evalband's are
PARTS = {
    "counts": lambda: FL.counts(B, C, members),
    "p_values": lambda: FL.p_values(v["t"]),
    "holm": lambda: (FL.discrete_holm(v["p"], v["t"][:, 1] + v["t"][:, 2], v["alpha"]),
                     FL.decide(v["t"], v["rejected"], v["est"][:v["family"]])),
    "intervals": lambda: FL.intervals(v["t"], v["p"], v["levels"], 0.95),
    "times": lambda: FL.times(B, C, members, 0.95),
    "power": lambda: FL.power(v["t"], v["verdict"], v["alpha"] / v["family"], 0.1),
    "aggregate": lambda: FL.aggregate(v["types"], v["cell_rows"], weights, 0.95),
    "full": lambda: FL.limit_full(B, C, members, weights, names),
}
path = PARTS[mode.removesuffix("_fresh")]
for _ in range(calls):
    if mode.endswith("_fresh"):  # nothing kept from the call before
        FL.fresh(B, C)
    path()
'''
PARTS = ("counts", "p_values", "holm", "intervals", "times", "power", "aggregate")

CLI_LIMIT = r'''
import math, sqlite3, sys
import numpy as np
store, runs = sys.argv[1], sys.argv[2:]
conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
cols = []
for run in runs:  # the comparison's columns, as evalband reads them
    cells, episode, repeat, ok, assisted, helped, latency, tts = zip(*conn.execute(
        'SELECT "cell", "episode", "repeat", "outcome" = \'success\', "assisted", '
        '"interventions", "latency_ms_p95", "time_to_success_s" FROM episodes WHERE run_id = ? '
        'ORDER BY "cell", "episode", "repeat"', (run,)).fetchall())
    extra = [np.array(v, dtype=float) for v in (episode, repeat, assisted, helped, latency, tts)]
    cols.append((cells, np.array(ok, dtype=bool)))
keys = sorted(set(cols[0][0]))
cell = np.array([keys.index(c) for c in cols[0][0]])
code = cell * 4 + 2 * cols[1][1] + cols[0][1]
types = np.bincount(code, minlength=4 * len(keys)).reshape(len(keys), 4)
for b, c in types[:, 1:3].tolist():  # exact McNemar p, in integers
    m = b + c
    tail = sum(math.comb(m, k) for k in range(min(b, c) + 1))
    print(min(1.0, 2 * tail / 2 ** m) if m else 1.0)
'''


def small_runs() -> tuple[Any, Any]:
    """Two in-memory runs of 201 episodes each on a three-value factor, every episode paired."""
    import numpy as np

    from evalband.analysis._compare import RunData
    from evalband.episode import EpisodeRecord
    from evalband.panel import load_panel

    panel = load_panel({"name": "speed3", "env": "evalband/Coin-v0", "episodes": 67,
                        "seed": 0, "budget": {"steps": 1},
                        "factors": {"mass": ["light", "mid", "heavy"]}})

    def build(run_id: str, p: float, seed: int) -> RunData:
        rng = np.random.default_rng(seed)
        recs = [
            EpisodeRecord(run_id=run_id, policy=run_id, panel_fingerprint=panel.fingerprint,
                          cell=cell.key, slices=dict(cell.slices), episode=ep, repeat=0,
                          condition_seed=ep, outcome="success" if ok else "failure",
                          terminated=True, truncated=False, steps=1,
                          time_to_success_s=1.0 + ep / 100 if ok else None)
            for cell in panel.cells() for ep in range(panel.episodes)
            for ok in [bool(rng.random() < p)]
        ]
        return RunData(run_id, run_id, panel.fingerprint, panel, recs)

    return build("base", 0.7, 0), build("cand", 0.62, 1)


def _run(args: list[str], src: Path) -> tuple[float, float, str]:
    """Wall and CPU seconds (this child's rusage) and stdout of one fresh interpreter."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": str(src)})
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 3, 4, 5):
        raise RuntimeError(done.stderr[-2000:])
    return wall, cpu, done.stdout


def _build_store(path: Path) -> tuple[str, str]:
    """Two runs of 201 episodes on a three-value factor, every episode paired."""
    from evalband.store import open_store
    from evalband.store._manifest import new_manifest

    base, cand = small_runs()
    with open_store(path) as st:
        for run in (base, cand):
            manifest = new_manifest(run.panel, run.policy, run.run_id, backend="serial",
                                    workers=1, policy_hash=None, n_planned=len(run.records),
                                    command="bench/bench_compare.py")
            st.create_run(manifest)
            st.add_episodes(run.records)
            st.update_run(run.run_id, status="finished", finished_at=manifest.started_at)
    return base.run_id, cand.run_id


def _instructions(args: list[str], src: Path) -> int:
    """Instructions one interpreter executes (valgrind's callgrind): the load does not move it.

    With one hash seed and one BLAS thread, so that two runs of the same path differ only in
    what they do (a per-call count is a difference of two runs: with random hash seeds the
    imports' counts alone moved it by ~0.1 M).
    """
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                           sys.executable, *args], capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": str(src), "PYTHONHASHSEED": "0",
                               "OPENBLAS_NUM_THREADS": "1"})
    found = [line for line in done.stderr.splitlines() if "Collected" in line]
    if not found:
        raise RuntimeError(done.stderr[-2000:])
    return int(found[-1].split()[-1])


def _per_call(worker: list[str], src: Path, mode: str, calls: int) -> float:
    """Instructions of one call of a path: ``calls`` calls minus none, divided."""
    many = _instructions([*worker, str(calls), mode], src)
    none = _instructions([*worker, "0", mode], src)
    return (many - none) / calls


def _full_limit_instructions(folder: Path, src: Path, calls: int,
                             fresh_calls: int) -> dict[str, Any]:
    """The full limit's instructions per call, whole and by part, memos warm and afresh.

    Each in its own interpreter (:data:`LIMIT_WORKER`, no evalband), less one that makes no
    call; the whole afresh and the power part afresh with ``fresh_calls`` calls (the power
    searches take ~0.13 G instructions a call), the other parts with ``calls`` (a count of
    three calls read -3.6 k for the p-values: two runs differ by ~0.1 M).
    """
    worker = [str(folder / "limit_worker.py"), str(folder / "now.sqlite.limit.npz")]
    none = _instructions([*worker, "0", "full"], src)

    def per_call(mode: str, n: int) -> float:
        return (_instructions([*worker, str(n), mode], src) - none) / n

    return {"full": per_call("full", calls), "full_fresh": per_call("full_fresh", fresh_calls),
            "parts": {part: round(per_call(part, calls)) for part in PARTS},
            "parts_fresh": {part: round(per_call(f"{part}_fresh",
                                                 fresh_calls if part == "power" else calls))
                            for part in PARTS}}


def _median_ratio(a: list[float], b: list[float]) -> float:
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


def _same_numbers(now: Any, before: Any) -> bool:
    """Every number (and word) the previous document wrote is in today's, equal."""
    if isinstance(before, dict):
        return all(k in now and _same_numbers(now[k], v) for k, v in before.items()
                   if k not in ("notes", "multiplicity", "p_holm", "sentence"))
    if isinstance(before, list):
        return len(now) == len(before) and all(
            _same_numbers(n, b) for n, b in zip(now, before, strict=True))
    return bool(now == before or (isinstance(before, float) and before != before))


def _full_limit_result(now: dict[str, list[float]], counted: dict[str, float],
                       full: dict[str, Any], check: dict[str, Any]) -> dict[str, Any]:
    """The in-memory case against the full limit: instructions (whole, by part), times."""
    return {
        "instructions": round(full["full"]),
        "ratio": counted["memory_now"] / full["full"],
        "instructions_fresh": round(full["full_fresh"]),
        "ratio_fresh": counted["memory_now"] / full["full_fresh"],
        "parts": full["parts"],
        "parts_sum": sum(full["parts"].values()),
        "parts_fresh": full["parts_fresh"],
        "parts_fresh_sum": sum(full["parts_fresh"].values()),
        "ms": 1e3 * statistics.median(now["memory_full_limit"]),
        "ms_fresh": 1e3 * statistics.median(now["memory_full_limit_fresh"]),
        "time_ratio": _median_ratio(now["memory"], now["memory_full_limit"]),
        "check": check,
    }


def run(quick: bool = False, rounds: int | None = None) -> dict[str, Any]:
    """Every case, this code and the previous, each beside its limit; bench/run.py's dict.

    ``rounds``: interleaved rounds of the timed cases (default 3 quick, 9 otherwise; on a
    loaded machine fewer, as ``python bench/bench_compare.py --rounds 3`` or, through
    ``bench/run.py``, ``BENCH_COMPARE_ROUNDS=3``); the instruction counts are the full run's
    either way.
    """
    t0 = time.perf_counter()
    rounds = rounds or int(os.environ.get("BENCH_COMPARE_ROUNDS", "0")) or (3 if quick else 9)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        store = folder / "runs.sqlite"
        base_id, cand_id = _build_store(store)
        srcs = {"now": ROOT / "src", "previous": source_of(PREVIOUS_COMMIT, folder / "prev")}
        (folder / "worker.py").write_text(WORKER)
        (folder / "limit.py").write_text(CLI_LIMIT)
        (folder / "full_limit.py").write_text(FULL_LIMIT)
        (folder / "limit_worker.py").write_text(LIMIT_WORKER)
        inproc: dict[str, Any] = {}
        for name, src in srcs.items():
            copy = folder / f"{name}.sqlite"
            copy.write_bytes(store.read_bytes())
            _, _, out = _run([str(folder / "worker.py"), str(copy), base_id, cand_id,
                              str(rounds)], src)
            inproc[name] = json.loads(out.strip().splitlines()[-1])
        cli: dict[str, dict[str, list[float]]] = {
            k: {"wall": [], "cpu": []} for k in ("now", "previous", "limit", "help_now",
                                                 "help_previous")}
        for _ in range(rounds * 2):  # interleaved rounds
            for name, src in srcs.items():
                copy = folder / f"{name}.sqlite"
                wall, cpu, _ = _run(["-m", "evalband.cli", "compare", base_id, cand_id,
                                     "--store", str(copy), "--json"], src)
                cli[name]["wall"].append(wall)
                cli[name]["cpu"].append(cpu)
                wall, cpu, _ = _run(["-m", "evalband.cli", "--help"], src)
                cli[f"help_{name}"]["wall"].append(wall)
                cli[f"help_{name}"]["cpu"].append(cpu)
            wall, cpu, _ = _run([str(folder / "limit.py"), str(store), base_id, cand_id],
                                srcs["now"])
            cli["limit"]["wall"].append(wall)
            cli["limit"]["cpu"].append(cpu)
        counted: dict[str, float] = {}
        calls = 20 if quick else 200
        for name, src in (("now", srcs["now"]), ("previous", srcs["previous"])):
            worker = [str(folder / "worker.py"), str(folder / f"{name}.sqlite"), base_id,
                      cand_id]
            counted[f"memory_{name}"] = _per_call(worker, src, "memory", calls)
            counted[f"store_{name}"] = _per_call(worker, src, "store", max(10, calls // 4))
            counted[f"cli_{name}"] = _instructions(
                ["-m", "evalband.cli", "compare", base_id, cand_id, "--store",
                 str(folder / f"{name}.sqlite"), "--json"], src)
        worker = [str(folder / "worker.py"), str(folder / "now.sqlite"), base_id, cand_id]
        counted["memory_limit"] = _per_call(worker, srcs["now"], "limit_memory", calls)
        counted["store_limit"] = _per_call(worker, srcs["now"], "limit_store", max(10, calls // 4))
        counted["cli_limit"] = _instructions([str(folder / "limit.py"), str(store), base_id,
                                              cand_id], srcs["now"])
        full = _full_limit_instructions(folder, srcs["now"], calls, 2 if quick else 3)
    now, prev = inproc["now"]["times"], inproc["previous"]["times"]
    med = {k: {m: statistics.median(v) for m, v in d.items()} for k, d in cli.items()}
    result: dict[str, Any] = {
        "name": "compare_speed" if not quick else "compare_speed_quick",
        "memory": {"ms": 1e3 * statistics.median(now["memory"]),
                   "limit_ms": 1e3 * statistics.median(now["memory_limit"]),
                   "ratio": _median_ratio(now["memory"], now["memory_limit"])},
        "store": {"ms": 1e3 * statistics.median(now["store"]),
                  "limit_ms": 1e3 * statistics.median(now["store_limit"]),
                  "ratio": _median_ratio(now["store"], now["store_limit"])},
        "cli": {"wall_s": med["now"]["wall"], "cpu_s": med["now"]["cpu"],
                "limit_wall_s": med["limit"]["wall"], "limit_cpu_s": med["limit"]["cpu"],
                "ratio": _median_ratio(cli["now"]["cpu"], cli["limit"]["cpu"])},
        "previous": {
            "commit": PREVIOUS_COMMIT,
            "memory_ms": 1e3 * statistics.median(prev["memory"]),
            "store_ms": 1e3 * statistics.median(prev["store"]),
            "cli_wall_s": med["previous"]["wall"], "cli_cpu_s": med["previous"]["cpu"],
            "help_cpu_s": med["help_previous"]["cpu"], "help_cpu_s_now": med["help_now"]["cpu"],
            "memory_ratio": _median_ratio(now["memory"], prev["memory"]),
            "store_ratio": _median_ratio(now["store"], prev["store"]),
            "cli_cpu_ratio": _median_ratio(cli["now"]["cpu"], cli["previous"]["cpu"]),
            "help_cpu_ratio": _median_ratio(cli["help_now"]["cpu"], cli["help_previous"]["cpu"]),
            "same_numbers": _same_numbers(inproc["now"]["document"],
                                          inproc["previous"]["document"]),
        },
        "instructions": {**{k: round(v) for k, v in counted.items()},
                         "memory_full_limit": round(full["full"])},
        "instruction_ratios": {
            "memory_vs_limit": counted["memory_now"] / counted["memory_limit"],
            "store_vs_limit": counted["store_now"] / counted["store_limit"],
            "cli_vs_limit": counted["cli_now"] / counted["cli_limit"],
            "memory_vs_previous": counted["memory_now"] / counted["memory_previous"],
            "store_vs_previous": counted["store_now"] / counted["store_previous"],
            "cli_vs_previous": counted["cli_now"] / counted["cli_previous"],
            "memory_vs_full_limit": counted["memory_now"] / full["full"],
        },
        "memory_full_limit": _full_limit_result(now, counted, full,
                                                inproc["now"]["full_limit"]),
        "targets": TARGETS,
        "rounds": rounds,
    }
    result["ratio"] = result["memory"]["ratio"]
    result["target_ratio"] = TARGETS["memory_ratio"]
    result["passed"] = bool(
        result["memory"]["ratio"] <= TARGETS["memory_ratio"]
        and result["store"]["ratio"] <= TARGETS["store_ratio"]
        and result["cli"]["wall_s"] < TARGETS["cli_s"]
        and all(result["previous"][k] <= TARGETS["previous_ratio"]
                for k in ("memory_ratio", "store_ratio", "cli_cpu_ratio", "help_cpu_ratio"))
        and result["previous"]["same_numbers"])
    result["load_average_1min"] = os.getloadavg()[0]
    result["bench_seconds"] = time.perf_counter() - t0
    return result


if __name__ == "__main__":
    ROUNDS = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else None
    print(json.dumps(run("--quick" in sys.argv, ROUNDS), indent=2))
