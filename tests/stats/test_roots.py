"""Our Brent root finder returns scipy.optimize.brentq's root, bit for bit (scipy the oracle)."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize

from evalband.errors import InvalidParameterError
from evalband.stats import minimum_detectable_difference
from evalband.stats._power import _design, _normal_power
from evalband.stats._roots import brentq


def _functions(c: np.ndarray) -> list[Callable[[float], float]]:
    return [
        lambda x: c[0] + c[1] * x + c[2] * x**2 + c[3] * x**3,  # smooth, up to three roots
        lambda x: math.tanh(5.0 * c[0] * (x - c[1])) + 0.1 * c[2],  # steep
        lambda x: abs(x - c[0]) - 0.5 * abs(c[1]),  # kinked
        lambda x: min(max(c[0] * (x - c[1]), -1.0), 1.0),  # flat outside a ramp
    ]


def test_random_brackets_give_scipys_root_exactly() -> None:
    rng = np.random.default_rng(20)
    checked = 0
    for i in range(3000):
        for f in _functions(rng.normal(size=4)):
            a, b = sorted(rng.normal(scale=3.0, size=2).tolist())
            if f(a) * f(b) >= 0:
                continue
            xtol = (1e-12, 1e-14, 1e-15, 2e-12)[i % 4]
            assert brentq(f, a, b, xtol=xtol) == optimize.brentq(f, a, b, xtol=xtol)
            checked += 1
    assert checked > 3000  # most brackets held a sign change


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 5000), st.floats(0.01, 0.99), st.sampled_from([0.8, 0.9, 0.5]),
       st.sampled_from([0.05, 0.01, 0.1]), st.booleans(), st.floats(0.05, 1.0))
def test_the_minimum_detectable_difference_equals_the_scipy_search(n, p, target, alpha,
                                                                   paired, psi) -> None:
    """The power equation :func:`minimum_detectable_difference` solves, solved by both."""
    for sign in (1.0, -1.0):
        room = min(1.0 - p if sign > 0 else p, psi if paired else 1.0)

        def shortfall(gap: float, sign: float = sign) -> float:
            pa = min(max(p + sign * gap, 0.0), 1.0)
            design = _design(pa, p, psi if paired else math.nan, 1.0, paired)
            return _normal_power(float(n), design, alpha, False) - target

        if room <= 0.0 or shortfall(room) < 0.0:
            continue
        ours = brentq(shortfall, 0.0, room, xtol=1e-12)
        assert ours == optimize.brentq(shortfall, 0.0, room, xtol=1e-12)


def test_documented_values_and_errors() -> None:
    assert round(minimum_detectable_difference(46, 0.4), 3) == 0.287
    assert brentq(lambda x: x - 0.25, 0.0, 1.0) == optimize.brentq(lambda x: x - 0.25, 0.0, 1.0)
    assert brentq(lambda x: x, 0.0, 1.0) == 0.0  # a root at an end
    with pytest.raises(InvalidParameterError, match="opposite signs"):
        brentq(lambda x: x * x + 1.0, -1.0, 1.0)
    with pytest.raises(InvalidParameterError, match="xtol > 0"):
        brentq(lambda x: x, -1.0, 1.0, xtol=0.0)
    with pytest.raises(InvalidParameterError, match="did not converge"):
        brentq(lambda x: x - 1e-3, -1.0, 1.0, maxiter=2)


def test_the_power_search_does_not_import_scipy_optimize() -> None:
    code = ("import sys; from evalband.stats import minimum_detectable_difference as m, "
            "diff_paired; m(100, 0.7); m(50, 0.5, paired=True, discordant=0.3); "
            "diff_paired(20, 5, 3, 12, method='tango'); "
            "from evalband.stats._procedure import score_interval_unpaired as s; "
            "s(56, 70, 48, 80); print('scipy.optimize' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
