"""``bench/bench_metrics.py``'s family audit decides as ``compare`` does, and holds its rate.

The audit decides most replicates by the product's engine on the product's hypotheses
(``_Design.decide``) instead of ``compare`` itself, to afford bands of +-0.3 points; these
tests pin that shortcut to ``compare`` (same verdict on every slice, deterministic) and run a
small seeded Monte Carlo of one design that could fail.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import bench_metrics  # noqa: E402


@pytest.mark.parametrize(("paired", "n", "metric"), [
    (True, 20, "piled at 0"), (True, 20, "mostly exactly 0"),
    (True, 20, "skewed, declared (median: sign test)"), (False, 20, "skewed")])
def test_the_audit_decides_every_slice_as_compare(paired: bool, n: int, metric: str) -> None:
    design = bench_metrics._Design(n, metric, paired)
    rng = np.random.default_rng(np.random.SeedSequence([29, n, int(paired), len(metric)]))
    for _ in range(8):
        base, cand = design.draw(rng), design.draw(rng)
        verdicts, used = design.decide(base, cand)
        assert verdicts == design.compared(base, cand)
        assert len(verdicts) == 6 and len(used) == 3
    # a replicate with a true regression on the metric: both must see it the same way
    base, cand = design.draw(rng), design.draw(rng)
    cand = (cand[0], cand[1] - 5.0 * float(np.std(cand[1])))
    verdicts, _ = design.decide(base, cand)
    assert verdicts == design.compared(base, cand) and "regressed" in verdicts[3:]


def test_identical_policies_with_a_primary_metric_piled_at_0_rarely_regress() -> None:
    """400 seeded comparisons of identical policies, 3 success + 3 metric slices of 20 pairs.

    At 2.5% per direction, more than 21 of 400 has probability < 0.001; a family without
    multiplicity control (6 tests at 2.5% per direction) would give ~56.
    """
    design = bench_metrics._Design(20, "piled at 0", True)
    rng = np.random.default_rng(np.random.SeedSequence([29, 20, 1, 10, 5]))
    regressions = improvements = 0
    for _ in range(400):
        verdicts, _ = design.decide(design.draw(rng), design.draw(rng))
        regressions += "regressed" in verdicts
        improvements += "improved" in verdicts
    most = int(stats.binom.ppf(0.999, 400, 0.025))
    assert most == 21
    assert regressions <= most and improvements <= most, (regressions, improvements)
