"""Tests for evalband.stats._multiplicity: Holm, Bonferroni, Benjamini-Hochberg.

Oracle: statsmodels.stats.multitest.multipletests (methods holm, bonferroni, fdr_bh)
on hypothesis-generated arrays, plus the worked example of Benjamini & Hochberg (1995).
"""

from __future__ import annotations

import gc
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

from evalband.errors import InvalidInputError, InvalidParameterError
from evalband.stats import benjamini_hochberg, bonferroni, holm

ADJUSTERS = {"holm": holm, "bonferroni": bonferroni, "fdr_bh": benjamini_hochberg}

# p-values mixing continuous draws with a few repeated values (ties) and the ends 0 and 1
p_value = st.one_of(
    st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
    st.sampled_from([0.0, 0.001, 0.01, 0.02, 0.05, 0.5, 1.0]),
)
p_arrays = st.lists(p_value, min_size=1, max_size=40)


@pytest.mark.parametrize("method", sorted(ADJUSTERS))
@settings(max_examples=150, deadline=None)
@given(p=p_arrays)
def test_matches_statsmodels_multipletests(method: str, p: list[float]) -> None:
    # statsmodels' holm branch calls gc.collect() on every call (slow under hypothesis);
    # skipping the collection does not touch the arithmetic.
    with mock.patch.object(gc, "collect", lambda *args: 0):
        expected = multipletests(np.array(p), alpha=0.05, method=method)[1]
    got = ADJUSTERS[method](p)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", sorted(ADJUSTERS))
@settings(max_examples=100, deadline=None)
@given(p=p_arrays, data=st.data())
def test_properties_bounds_monotone_and_permutation(
    method: str, p: list[float], data: st.DataObject
) -> None:
    raw = np.array(p)
    adjusted = ADJUSTERS[method](raw)
    assert adjusted.shape == raw.shape
    assert np.all(adjusted >= raw - 1e-15)
    assert np.all(adjusted <= 1.0)
    # monotone in the raw p-values: a smaller raw p never gets a larger adjusted p
    order = np.argsort(raw, kind="mergesort")
    assert np.all(np.diff(adjusted[order]) >= -1e-15)
    # original order preserved: adjusting a permutation permutes the answer
    perm = np.array(data.draw(st.permutations(list(range(raw.size)))), dtype=int)
    np.testing.assert_allclose(ADJUSTERS[method](raw[perm]), adjusted[perm], rtol=0, atol=1e-15)


@settings(max_examples=100, deadline=None)
@given(p=p_arrays)
def test_ordering_between_procedures(p: list[float]) -> None:
    # BH (FDR) is never more conservative than Holm, and Holm never more than Bonferroni
    bh, h, b = benjamini_hochberg(p), holm(p), bonferroni(p)
    assert np.all(bh <= h + 1e-15)
    assert np.all(h <= b + 1e-15)


def test_benjamini_hochberg_1995_worked_example() -> None:
    # Benjamini & Hochberg (1995), JRSS-B 57:289-300, section 4: 15 p-values from a
    # myocardial-infarction trial (Neuhaus et al. 1992). At level 0.05 the Bonferroni
    # and Holm-type procedures reject the 3 smallest, the FDR procedure the 4 smallest.
    p = [0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459,
         0.3240, 0.4262, 0.5719, 0.6528, 0.7590, 1.000]  # fmt: skip
    shuffled = np.array(p)[np.random.default_rng(7).permutation(len(p))]
    assert int(np.sum(bonferroni(shuffled) <= 0.05)) == 3
    assert int(np.sum(holm(shuffled) <= 0.05)) == 3
    rejected = benjamini_hochberg(shuffled) <= 0.05
    assert sorted(shuffled[rejected].tolist()) == [0.0001, 0.0004, 0.0019, 0.0095]


def test_hand_computed_small_case() -> None:
    # Holm 1979 step-down by hand: sorted .005,.01,.03,.04 times 4,3,2,1 -> .02,.03,.06,.04,
    # running max -> .02,.03,.06,.06; BH: p*4/rank -> .02,.02,.04,.04, running min from top.
    p = [0.01, 0.04, 0.03, 0.005]
    np.testing.assert_allclose(holm(p), [0.03, 0.06, 0.06, 0.02], atol=1e-15)
    np.testing.assert_allclose(benjamini_hochberg(p), [0.02, 0.04, 0.04, 0.02], atol=1e-15)
    np.testing.assert_allclose(bonferroni(p), [0.04, 0.16, 0.12, 0.02], atol=1e-15)


@pytest.mark.parametrize("adjust", list(ADJUSTERS.values()))
def test_empty_and_single(adjust) -> None:  # type: ignore[no-untyped-def]
    assert adjust([]).shape == (0,)
    np.testing.assert_allclose(adjust([0.2]), [0.2])
    assert adjust([0.2]).dtype == np.float64


@pytest.mark.parametrize("adjust", list(ADJUSTERS.values()))
@pytest.mark.parametrize(
    "bad",
    [[0.1, float("nan")], [0.1, -0.01], [1.0000001], [float("inf")], ["0.1"], [[0.1, 0.2]], 0.3],
)
def test_bad_input_raises(adjust, bad) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidParameterError) as info:
        adjust(bad)
    assert isinstance(info.value, InvalidInputError)
    assert isinstance(info.value, ValueError)


def test_error_message_names_the_position() -> None:
    with pytest.raises(InvalidParameterError, match="position 1"):
        holm([0.2, float("nan"), 0.3])
    with pytest.raises(InvalidParameterError, match=r"\[0, 1\]"):
        benjamini_hochberg([0.2, 1.5])
