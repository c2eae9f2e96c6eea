"""The scipy-free quantiles and the one-float interval path give scipy's exact bits."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from scipy import special, stats

from evalband.stats import interval, interval_bounds, sample_size
from evalband.stats._normal import _KNOWN, ndtr, ndtri


def bits(x: float) -> bytes:
    return struct.pack("<d", x)


def test_every_kept_quantile_is_scipys() -> None:
    for p, z in _KNOWN.items():
        assert bits(z) == bits(float(special.ndtri(p))), p


@pytest.mark.parametrize("q", [0.2, 0.1, 0.05, 0.025, 0.01, 0.005, 0.001, 0.07, 0.031])
def test_norm_isf_ppf_cdf_are_ndtri_ndtr(q: float) -> None:
    assert bits(-ndtri(q / 2.0)) == bits(float(stats.norm.isf(q / 2.0)))
    assert bits(ndtri(1.0 - q)) == bits(float(stats.norm.ppf(1.0 - q)))
    x = float(stats.norm.isf(q))
    assert bits(ndtr(x)) == bits(float(stats.norm.cdf(x)))


def test_one_float_interval_equals_the_array_path() -> None:
    for method in ("wilson", "agresti-coull", "wald"):
        for confidence in (0.5, 0.9, 0.95, 0.99, 0.937):
            for n in (1, 2, 7, 20, 64, 333, 1000):
                ks = np.arange(n + 1)
                low, high = interval_bounds(ks, n, method, confidence)
                for k in ks.tolist():
                    ci = interval(k, n, method, confidence)
                    assert (bits(ci.low), bits(ci.high)) == (bits(float(low[k])),
                                                             bits(float(high[k])))


def test_sample_size_matches_scipy_stats_formula() -> None:
    """sample_size with scipy.stats.norm, written out independently (Fleiss et al. 2003)."""
    for p_a, p_b, power, alpha in [(0.6, 0.4, 0.8, 0.05), (0.5, 0.4, 0.9, 0.01),
                                   (0.3, 0.45, 0.83, 0.07), (0.9, 0.8, 0.95, 0.1)]:
        pbar = (p_a + p_b) / 2.0
        s0 = math.sqrt(max(pbar * (1.0 - pbar) * 2.0, 0.0))
        s1 = math.sqrt(max(p_a * (1.0 - p_a) + p_b * (1.0 - p_b), 0.0))
        root = (float(stats.norm.isf(alpha / 2.0)) * s0 + float(stats.norm.ppf(power)) * s1)
        n = (root / abs(p_a - p_b)) ** 2
        assert sample_size(p_a, p_b, power, alpha) == max(1, math.ceil(n - 1e-9))
