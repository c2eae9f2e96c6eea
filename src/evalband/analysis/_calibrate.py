"""Calibrate a panel: its real error rates and power, by simulating comparisons on its design.

:func:`calibrate` draws baseline and candidate outcomes for every cell of a panel (its cells,
episodes per cell and pairing; each cell's baseline rate given or taken from a stored run),
counts them into the same per-cell pair tables a stored comparison uses, and hands them to the
same :func:`~evalband.analysis._compare.decide_family` that decides ``evalband compare`` --
so the rates it prints are the rates of the verdicts the tool actually prints:

* under the null (candidate = baseline): how often the verdict is "regression", "improves",
  a "hidden regression", and how often any slice is flagged either way;
* under an alternative per slice (the candidate's rate ``effect`` lower in that slice's cells
  only): how often that slice comes out "regressed" -- its power.

Matched pairs are drawn with the declared correlation ``phi`` between the two policies'
outcomes in a pair (the joint cell probability ``p11 = p_b p_c + phi sqrt(p_b q_b p_c q_c)``,
clipped to what the margins allow). Every rate comes with a Clopper-Pearson Monte Carlo band.

Calibrating a stored run (:func:`rates_from_run`) takes the run's own episodes per cell and its
cell rates *shrunk* toward its pooled rate (beta-binomial empirical Bayes,
:func:`evalband.stats.shrunken_rates`): a cell seen 0 times in 3 is not a cell that never
succeeds, and a raw 0% would make its power 0. The result records the rates and counts it
assumed and where they came from.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from evalband.analysis._compare import (
    DEFAULT_EFFECT,
    PairTable,
    RunData,
    SliceVerdict,
    Verdict,
    _row_from_table,
    aggregate_from_tables,
    decide_family,
    slice_definitions,
)
from evalband.errors import InvalidParameterError
from evalband.panel import Panel

__all__ = ["Rate", "CalibrationResult", "calibrate", "rates_from_run", "simulate_tables",
           "verdict_of_tables"]


@dataclass(frozen=True)
class Rate:
    """A simulated rate with its 95% Clopper-Pearson Monte Carlo band."""

    count: int
    reps: int
    rate: float
    low: float
    high: float

    @classmethod
    def of(cls, count: int, reps: int) -> Rate:
        """The rate ``count / reps`` with its exact band.

        >>> Rate.of(0, 100).high < 0.04
        True
        """
        from scipy.stats import beta

        low = float(beta.ppf(0.025, count, reps - count + 1)) if count else 0.0
        high = float(beta.ppf(0.975, count + 1, reps - count)) if count < reps else 1.0
        return cls(count, reps, count / reps, low, high)


@dataclass(frozen=True)
class CalibrationResult:
    """What the panel's comparisons actually do, simulated.

    ``base_rates`` and ``episodes_per_cell`` are what the simulation assumed; ``rates_from``
    and ``counts_from`` say where they came from (a run's shrunken rates and own counts, or
    the panel's plan and a given rate), ``raw_rates`` the run's observed rates when shrunk.
    """

    panel_name: str
    episodes_per_cell: dict[str, int]
    base_rates: dict[str, float]
    paired: bool
    correlation: float
    confidence: float
    effect: float
    reps: int
    false_regression: Rate
    false_improves: Rate
    false_hidden_regression: Rate
    any_slice_flagged: Rate
    power: dict[str, Rate] = field(default_factory=dict)
    rates_from: str = "given"
    counts_from: str = "the panel's plan"
    raw_rates: dict[str, float] | None = None

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        out = asdict(self)
        out["schema"] = "evalband-calibration/1"
        return out


def _joint(p_b: float, p_c: float, phi: float) -> tuple[float, float, float, float]:
    """(both, baseline only, candidate only, neither) probabilities of a matched pair."""
    from evalband.stats._power_statement import joint_pair

    return joint_pair(p_b, p_c, phi)


def simulate_tables(
    panel: Panel,
    base_rates: Mapping[str, float],
    drops: Mapping[str, float],
    *,
    episodes: Mapping[str, int],
    paired: bool,
    correlation: float,
    reps: int,
    rng: np.random.Generator,
) -> list[dict[str, PairTable]]:
    """``reps`` simulated comparisons: per cell, a :class:`PairTable` of both policies."""
    cells = [c.key for c in panel.cells()]
    out: list[dict[str, PairTable]] = [{} for _ in range(reps)]
    for key in cells:
        n = int(episodes[key])
        p_b = float(base_rates[key])
        p_c = min(max(p_b - float(drops.get(key, 0.0)), 0.0), 1.0)
        if paired:
            probs = np.asarray(_joint(p_b, p_c, correlation))
            draws = rng.multinomial(n, probs / probs.sum(), size=reps)
            for r in range(reps):
                both, b_only, c_only, neither = (int(x) for x in draws[r])
                out[r][key] = PairTable(both + b_only, n, both + c_only, n,
                                        both, b_only, c_only, neither)
        else:
            kb = rng.binomial(n, p_b, size=reps)
            kc = rng.binomial(n, p_c, size=reps)
            for r in range(reps):
                out[r][key] = PairTable(int(kb[r]), n, int(kc[r]), n)
    return out


def _membership(panel: Panel) -> list[tuple[str, str, list[str]]]:
    """(kind, name, cell keys) of every slice of the panel."""
    cells = panel.cells()
    return [(kind, name, [c.key for c in cells
                          if all(c.slices.get(f) == v for f, v in slices.items())])
            for kind, name, slices in slice_definitions(panel)]


def verdict_of_tables(
    panel: Panel, tables: Mapping[str, PairTable], *, confidence: float = 0.95,
    membership: list[tuple[str, str, list[str]]] | None = None,
) -> tuple[str, list[str], dict[str, str]]:
    """The verdict ``evalband compare`` gives for these cell tables (overall, hidden, slices)."""
    rows = []
    for kind, name, keys in membership or _membership(panel):
        table = PairTable()
        for key in keys:
            table = table + tables[key]
        rows.append(_row_from_table(kind, name, table, panel, confidence=confidence))
    agg = aggregate_from_tables(panel, tables, confidence)
    base = RunData("baseline", "baseline", "sim", panel, [])
    cand = RunData("candidate", "candidate", "sim", panel, [])
    (result,) = decide_family(base, [(cand, False, rows, agg)], confidence=confidence,
                              power_statements=False)
    return (str(result.verdict), list(result.hidden_regressions),
            {r.name: str(r.verdict) for r in result.slice_rows})


def calibrate(
    panel: Panel,
    *,
    base_rates: Mapping[str, float] | float = 0.5,
    paired: bool = True,
    correlation: float = 0.5,
    confidence: float = 0.95,
    effect: float = DEFAULT_EFFECT,
    reps: int = 400,
    power_reps: int | None = None,
    seed: int = 0,
    episodes: Mapping[str, int] | None = None,
    rates_from: str = "given",
    counts_from: str | None = None,
    raw_rates: Mapping[str, float] | None = None,
) -> CalibrationResult:
    """Simulate the panel's comparisons: false-verdict rates under the null, power per slice.

    Args:
        panel: the panel (its cells, episodes, repeats and factors).
        base_rates: the baseline success rate of every cell (one number for all, or by cell
            key; e.g. a stored run's observed rates).
        paired: matched episodes (the panel's normal use) or independent ones.
        correlation: phi between the two policies' outcomes on a matched episode.
        confidence: the comparison's confidence (its family-wise error is one minus this).
        effect: the drop in success rate each slice's power is computed for.
        reps: simulated null comparisons.
        power_reps: simulated comparisons per slice alternative (default ``reps // 2``).
        seed: seed of the simulation.
        episodes: episodes per cell key (default: the panel's plan, episodes x repeats; a run's
            own counts with :func:`rates_from_run`).
        rates_from: where ``base_rates`` came from, in words (recorded with the result).
        counts_from: where ``episodes`` came from, in words (default: the panel's plan).
        raw_rates: a run's observed rates, when ``base_rates`` are their shrunken form.

    >>> from evalband.panel import load_panel
    >>> p = load_panel({"name": "p", "env": "evalband/Coin-v0", "episodes": 20, "seed": 0,
    ...                 "budget": {"steps": 1}, "factors": {"arm": ["a", "b"]}})
    >>> r = calibrate(p, reps=50, power_reps=10, seed=1)
    >>> r.false_regression.reps, sorted(r.power)
    (50, ['arm=a', 'arm=b'])
    """
    if int(reps) < 1:
        raise InvalidParameterError(f"reps must be at least 1; got {reps!r}")
    if not -1.0 <= float(correlation) <= 1.0:
        raise InvalidParameterError(f"`correlation` must be in [-1, 1]; got {correlation!r}",
                                    parameters=("correlation",))
    cells = panel.cells()
    rates = ({c.key: float(base_rates) for c in cells} if isinstance(base_rates, int | float)
             else {c.key: float(base_rates.get(c.key, 0.5)) for c in cells})
    plan = {c.key: panel.episodes * panel.repeats for c in cells}
    episodes = plan if episodes is None else {c.key: int(episodes.get(c.key, 0)) for c in cells}
    if min(episodes.values(), default=0) < 1:
        raise InvalidParameterError(
            f"every cell needs at least one episode to simulate; got {episodes}",
            parameters=("episodes",))
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 13]))
    null = simulate_tables(panel, rates, {}, episodes=episodes, paired=paired,
                           correlation=correlation, reps=int(reps), rng=rng)
    regress = improves = hidden = flagged = 0
    member = _membership(panel)
    for tables in null:
        verdict, hid, slices = verdict_of_tables(panel, tables, confidence=confidence,
                                                 membership=member)
        regress += verdict == Verdict.REGRESSION
        improves += verdict == Verdict.IMPROVES
        hidden += bool(hid)
        flagged += any(v in (SliceVerdict.REGRESSED, SliceVerdict.IMPROVED)
                       for v in slices.values())
    power: dict[str, Rate] = {}
    n_power = int(power_reps) if power_reps is not None else max(1, int(reps) // 2)
    for _, name, slices_of in slice_definitions(panel):
        drops = {c.key: effect for c in cells
                 if all(c.slices.get(f) == v for f, v in slices_of.items())}
        alt = simulate_tables(panel, rates, drops, episodes=episodes, paired=paired,
                              correlation=correlation, reps=n_power, rng=rng)
        hits = sum(verdict_of_tables(panel, t, confidence=confidence, membership=member)[2][name]
                   == SliceVerdict.REGRESSED for t in alt)
        power[name] = Rate.of(hits, n_power)
    return CalibrationResult(
        panel_name=panel.name,
        episodes_per_cell=episodes,
        base_rates=rates,
        paired=paired,
        correlation=float(correlation),
        confidence=float(confidence),
        effect=float(effect),
        reps=int(reps),
        false_regression=Rate.of(regress, int(reps)),
        false_improves=Rate.of(improves, int(reps)),
        false_hidden_regression=Rate.of(hidden, int(reps)),
        any_slice_flagged=Rate.of(flagged, int(reps)),
        power=power,
        rates_from=rates_from,
        counts_from=("the panel's plan (episodes x repeats)" if counts_from is None
                     else counts_from),
        raw_rates=None if raw_rates is None else dict(raw_rates),
    )


def rates_from_run(panel: Panel, run: RunData) -> tuple[dict[str, float], dict[str, int],
                                                          dict[str, float], str]:
    """A run's cell rates, shrunk toward its pooled rate, and its own episodes per cell.

    Returns ``(shrunken rates, episodes per cell, raw rates, how they were shrunk)`` for every
    cell of ``panel`` the run has episodes in (error episodes left out, as ``compare`` does
    unless the run counts them as failures); see :func:`evalband.stats.shrunken_rates`.
    """
    from evalband.stats._shrinkage import shrunken_rates

    counted = [r for r in run.records if r.outcome != "error" or run.errors_as_failures]
    keys = [c.key for c in panel.cells()]
    k = {key: 0 for key in keys}
    n = {key: 0 for key in keys}
    for r in counted:
        if r.cell in n:
            n[r.cell] += 1
            k[r.cell] += bool(r.success)
    seen = [key for key in keys if n[key]]
    if not seen:
        raise InvalidParameterError(f"run {run.run_id} has no counted episode in any cell of "
                                    f"panel {panel.name}", parameters=("run",))
    s = shrunken_rates([k[key] for key in seen], [n[key] for key in seen])
    how = (f"run {run.run_id}'s cell rates shrunk toward its pooled {100 * s.mean:.1f}% "
           + ("(cells no more spread than chance: pooled)" if math.isinf(s.kappa) else
              f"(beta-binomial empirical Bayes: rho {s.rho:.3f}, prior weight "
              f"{s.kappa:.1f} episodes)" if s.kappa > 0 else "(one cell: its own rate)"))
    return (dict(zip(seen, s.rates, strict=True)), {key: n[key] for key in seen},
            dict(zip(seen, s.raw, strict=True)), how)
