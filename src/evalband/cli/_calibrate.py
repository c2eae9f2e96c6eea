"""``evalband calibrate``: a panel's real false-verdict rates and per-slice power, simulated."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from evalband.cli._common import JSON_OPTION, STORE_OPTION, console, emit_json, read_store

if TYPE_CHECKING:
    from evalband.analysis._calibrate import Rate

__all__ = ["register"]


def _pct(r: Rate) -> str:
    return f"{100 * r.rate:5.1f}%  [{100 * r.low:.1f}, {100 * r.high:.1f}]"


def calibrate(
    source: str = typer.Argument(..., help="A panel (YAML file or built-in name, e.g. "
                                 "reach1d) or a stored run id."),
    store: Path | None = STORE_OPTION,
    slices_from: str | None = typer.Option(
        None, "--slices-from", help="Take each cell's baseline rate from this stored run "
        "(shrunk toward the run's pooled rate; cells it lacks get that rate)."),
    base_rate: float | None = typer.Option(
        None, "--base-rate", help="Baseline rate of every cell, in (0, 1) (default 0.5; not "
        "with a run or --slices-from, which give each cell's rate)."),
    correlation: float | None = typer.Option(
        None, "--correlation", help="Correlation (phi) of the two policies' outcomes on a "
        "matched episode (default 0.5; not with --unpaired)."),
    unpaired: bool = typer.Option(False, "--unpaired", help="Simulate independent episodes."),
    effect: float = typer.Option(0.10, "--effect", help="Drop in success rate the per-slice "
                                 "power is computed for (0.10 = 10 points)."),
    reps: int = typer.Option(400, "--reps", help="Simulated null comparisons."),
    confidence: float = typer.Option(0.95, "--confidence", "-c"),
    seed: int = typer.Option(0, "--seed", min=0),
    as_json: bool = JSON_OPTION,
) -> None:
    """Simulate comparisons on this panel's design through the real compare procedure.

    Prints how often two identical policies get "regression", "improves", a hidden regression
    or any flagged slice, and each slice's power to catch a drop of --effect, with Monte Carlo
    bands, after the rates and counts it assumed. Given a stored run, it simulates the run's
    own episodes per cell at its cell rates shrunk toward its pooled rate (a cell seen 0 of 3
    times is not a cell that never succeeds). Run it before spending robot time.
    """
    import numpy as np

    from evalband import load_run
    from evalband._util.validate import check_probability
    from evalband.analysis import calibrate as simulate
    from evalband.analysis._calibrate import rates_from_run
    from evalband.errors import InvalidInputError
    from evalband.panel import builtin_panels, load_panel

    if unpaired and correlation is not None:
        raise InvalidInputError("--correlation is the pairs' correlation, and --unpaired "
                                "simulates no pairs: drop one of them")
    phi = 0.5 if correlation is None else correlation
    if base_rate is not None:
        check_probability(base_rate, "--base-rate", open_interval=True)
    rates: dict[str, float] | float = 0.5 if base_rate is None else base_rate
    rate_run = slices_from
    counts: dict[str, int] | None = None
    raw: dict[str, float] | None = None
    rates_from = f"--base-rate {rates:g} in every cell"
    counts_from: str | None = None
    if os.path.isfile(source) or source in builtin_panels():
        panel = load_panel(source, check_env=False)
        if base_rate is not None and slices_from is not None:
            raise InvalidInputError(
                f"--base-rate sets every cell's rate, and --slices-from {slices_from} takes "
                "them from that run: drop one of them")
    else:
        if base_rate is not None:
            raise InvalidInputError(
                f"--base-rate sets every cell's rate, and run {source} gives each cell's own "
                "rate: drop --base-rate (or give a panel YAML instead of the run)")
        with read_store(store) as st:
            run = load_run(source, st)
        panel = run.panel
        rate_run = rate_run or source
        _, counts, _, _ = rates_from_run(panel, run)  # the run's own episodes per cell
        counts_from = f"run {source}'s own episodes per cell"
    if rate_run is not None:
        with read_store(store) as st:
            data = load_run(rate_run, st)
        rates, _, raw, rates_from = rates_from_run(panel, data)
        rates = {c.key: rates.get(c.key, float(np.mean(list(rates.values()))))
                 for c in panel.cells()}
    if not 0 < effect < 1:
        raise InvalidInputError(f"--effect must be between 0 and 1 (a drop in rate); got {effect}")
    if reps < 1 or reps > 100_000:
        raise InvalidInputError(f"--reps must be between 1 and 100000; got {reps}")
    from evalband.cli._progress import busy

    with busy(f"simulating {reps} comparisons", enabled=not as_json):
        result = simulate(panel, base_rates=rates, paired=not unpaired,
                          correlation=phi, confidence=confidence, effect=effect,
                          reps=reps, seed=seed, episodes=counts, rates_from=rates_from,
                          counts_from=counts_from, raw_rates=raw)
    if as_json:
        emit_json(result.as_dict())
        return
    alpha = 1 - confidence
    design = "unpaired" if unpaired else f"paired, phi = {phi:g}"
    console.print(f"panel {panel.name}: {reps} simulated comparisons of identical policies "
                  f"({design})")
    console.print(f"assumed: base rates {result.rates_from}; episodes per cell from "
                  f"{result.counts_from}", soft_wrap=True)
    for key, base in result.base_rates.items():
        seen = ("" if result.raw_rates is None or key not in result.raw_rates
                else f" (observed {100 * result.raw_rates[key]:.1f}%)")
        console.print(f"  {key or 'all'}: {100 * base:.1f}%{seen}, "
                      f"{result.episodes_per_cell[key]} episodes", soft_wrap=True)
    console.print(f"  false 'regression'        {_pct(result.false_regression)}   "
                  f"(stated: <= {100 * alpha / 2:g}%)")
    console.print(f"  false 'hidden regression' {_pct(result.false_hidden_regression)}")
    console.print(f"  false 'improves'          {_pct(result.false_improves)}   "
                  f"(stated: <= {100 * alpha / 2:g}%)")
    console.print(f"  any slice flagged         {_pct(result.any_slice_flagged)}")
    console.print(f"power to catch a {100 * effect:.0f}-point drop in one slice:")
    for name, rate in result.power.items():
        console.print(f"  {name:<32} {_pct(rate)}")


def register(app: typer.Typer) -> None:
    """Attach the calibrate command to ``app``."""
    app.command("calibrate")(calibrate)
