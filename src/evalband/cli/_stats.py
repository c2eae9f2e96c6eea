"""Statistics commands: ci, diff, power, coverage.

The options are declared here (typer); ``ci``, ``diff`` and ``power`` do their work in
:mod:`evalband.cli._stats_cmds`.
"""

from __future__ import annotations

import math

import typer

from evalband.cli._common import JSON_OPTION, console, emit_json
from evalband.cli._stats_cmds import run_ci, run_diff, run_power

__all__ = ["register"]


def ci(
    k: float = typer.Argument(..., help="Successes."),
    n: float = typer.Argument(..., help="Episodes attempted."),
    method: str = typer.Option("wilson", "--method", "-m", help="wilson, clopper-pearson, "
                               "jeffreys, agresti-coull, wald"),
    confidence: float = typer.Option(0.95, "--confidence", "-c"),
    allow_empty: bool = typer.Option(False, "--allow-empty", help="n = 0 gives [0, 1]."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Confidence interval for a success rate K/N."""
    run_ci(k, n, method, confidence, allow_empty, as_json)


def diff(
    counts: list[str] = typer.Argument(
        ..., help="K_A/N_A K_B/N_B, or with --paired: BOTH A_ONLY B_ONLY NEITHER"
    ),
    paired: bool = typer.Option(False, "--paired", help="Matched episodes (2x2 counts)."),
    method: str = typer.Option(
        "newcombe", "--method", "-m", help="Paired: newcombe or tango. Unpaired: newcombe."
    ),
    confidence: float = typer.Option(0.95, "--confidence", "-c"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Interval for the difference of two success rates (A - B), with its verdict."""
    run_diff(counts, paired, method, confidence, as_json)


def power_cmd(
    p_a: float = typer.Option(..., "--p-a", help="Success rate of A."),
    p_b: float = typer.Option(..., "--p-b", help="Success rate of B."),
    power: float = typer.Option(0.8, "--power"),
    alpha: float = typer.Option(0.05, "--alpha"),
    paired: bool = typer.Option(False, "--paired", help="Matched design (McNemar)."),
    discordant: float | None = typer.Option(
        None, "--discordant", help="Paired: expected share of discordant pairs."
    ),
    n: int | None = typer.Option(None, "--n", min=1,
                                 help="Also report power and the MDD at this n."),
    direction: str | None = typer.Option(
        None, "--direction",
        help="Gap direction for the MDD at --n: up (A better), down, either; auto (the "
        "default): the side of --p-b that --p-a is on.",
    ),
    comparisons: int = typer.Option(
        1, "--comparisons", "--slices",
        help="Slices (comparisons) in the family: the test runs at alpha / comparisons, "
        "Holm's strictest step, as compare does."),
    test: str = typer.Option(
        "normal", "--test",
        help="normal: the z-test approximation (instant); exact: the test compare prints "
        "(exact McNemar when --paired, central Fisher otherwise), by exact enumeration."),
    sequential: bool = typer.Option(
        False, "--sequential", help="Paired: also the anytime-valid design (p_b the baseline): "
        "its maximum, expected and 90th-percentile pairs to a decision, simulated."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Episodes per arm needed to resolve p_a vs p_b (and power at a given n).

    At alpha / --comparisons; --test exact for the exact test compare prints.
    """
    run_power(p_a, p_b, power, alpha, paired, discordant, n, direction, comparisons, test,
              sequential, as_json)


def coverage_cmd(
    method: str = typer.Option("wilson", "--method", "-m"),
    n: int = typer.Option(..., "--n", help="Episodes."),
    confidence: float = typer.Option(0.95, "--confidence", "-c"),
    as_json: bool = JSON_OPTION,
) -> None:
    """Exact coverage of an interval method at n over a grid of true rates."""
    from rich.table import Table

    from evalband._util.limits import MAX_COVERAGE_N, check_size
    from evalband.stats import coverage, coverage_grid

    check_size(n, MAX_COVERAGE_N, "--n for exact coverage",
               "coverage changes little past a few thousand episodes; use a smaller --n")
    grid = coverage_grid(method, n, confidence=confidence)
    show_ps = [0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99]
    rows = [(p, coverage(method, n, p, confidence=confidence)) for p in show_ps]
    if as_json:
        emit_json({"grid": grid.as_dict(), "points": [{"p": p, "coverage": c} for p, c in rows]})
        return
    table = Table(title=f"exact coverage of {method}, n = {n}, nominal {confidence:.0%}")
    table.add_column("true p", justify="right")
    table.add_column("coverage", justify="right")
    for p, c in rows:
        style = "red" if c < confidence - 0.03 else ""
        table.add_row(f"{p:g}", f"[{style}]{c:.1%}[/{style}]" if style else f"{c:.1%}")
    console.print(table)
    console.print(
        f"over {len(grid.ps)} values of p: min {grid.min_coverage:.1%}, mean "
        f"{grid.mean_coverage:.1%}, below nominal at {grid.share_below_nominal:.0%} of them"
    )
    if not math.isnan(grid.min_coverage) and grid.min_coverage < confidence - 0.1:
        console.print(f"verdict: {method} under-covers badly at n = {n}; do not ship it.")


def register(app: typer.Typer) -> None:
    """Attach the statistics commands to ``app``."""
    app.command("ci", context_settings={"ignore_unknown_options": True})(ci)
    app.command("diff", context_settings={"ignore_unknown_options": True})(diff)
    app.command("power")(power_cmd)
    app.command("coverage")(coverage_cmd)
