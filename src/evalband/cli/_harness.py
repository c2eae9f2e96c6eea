"""``evalband harness pusht``: seed 000's argument, run on real physics and real BC policies."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from evalband.cli._common import JSON_OPTION, STORE_OPTION, console, emit_json, store_path

__all__ = ["harness_app", "register"]

harness_app = typer.Typer(help="Seed harnesses run end to end.", no_args_is_help=True)


def _band(rate: dict[str, Any]) -> str:
    return f"{rate['estimate']:.3f} [{rate['low']:.3f}, {rate['high']:.3f}]"


def _diff(block: dict[str, Any]) -> str:
    d = block["difference"]
    return f"{d['estimate']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}] ({block['verdict']})"


def _print(result: dict[str, Any]) -> None:
    sw = result["swing"]
    cfg = result["config"]
    per = 5 if cfg["too_few"] else cfg["eval_episodes"]
    console.print(f"[bold][1] The swing[/]: the strong policy's {cfg['n_seeds']} suites of {per} "
                  "train-start episodes")
    console.print("    " + "  ".join(f"{s['estimate']:.2f}" for s in sw["suites"]))
    std = "-" if sw["std"] is None else f"{sw['std']:.3f}"
    console.print(f"    from {sw['min']:.2f} to {sw['max']:.2f} (std {std}); pooled "
                  f"{_band(sw['pooled'])}")
    roads = result["two_roads"]
    console.print("[bold][2] Two roads, one band[/]: pooled "
                  f"{roads['wilson']['k']}/{roads['wilson']['n']}")
    console.print(f"    Wilson    [{roads['wilson']['low']:.3f}, {roads['wilson']['high']:.3f}]")
    console.print(f"    bootstrap [{roads['bootstrap']['low']:.3f}, "
                  f"{roads['bootstrap']['high']:.3f}] (10,000 reps, seeded)")
    svp = result["single_vs_pooled"]
    console.print("[bold][3] Single numbers lie[/]: strong vs weak (paired by episode)")
    for label, block in (("one suite", svp["one_suite"]), ("all suites", svp["pooled"])):
        n = block["pairs"]["n"]
        console.print(f"    {label:<10} n={n:<4} strong {_band(block['strong'])}  weak "
                      f"{_band(block['weak'])}  diff {_diff(block)}")
    held = result["held_out"]
    gap = held["gap"]
    console.print("[bold][4] Held-out[/]: the strong policy on train vs held-out starts")
    console.print(f"    train {_band(held['train'])}  held-out {_band(held['held_out'])}  gap "
                  f"{gap['estimate']:+.3f} [{gap['low']:+.3f}, {gap['high']:+.3f}] "
                  f"(train against held-out: {held['verdict']})")
    runs = result["runs"]
    console.print(f"runs: {runs['strong']} and {runs['weak']} (evalband compare "
                  f"{runs['weak']} {runs['strong']})")


@harness_app.command("pusht")
def pusht(
    num_demos: int = typer.Option(1000, "--num-demos", min=1),
    n_seeds: int = typer.Option(10, "--n-seeds", min=1, help="Suites per start."),
    eval_episodes: int = typer.Option(20, "--eval-episodes", min=1, help="Episodes per suite."),
    seed: int = typer.Option(0, "--seed", min=0),
    epochs: int = typer.Option(100, "--epochs", min=1),
    workers: int = typer.Option(2, "--workers", "-w", min=1),
    break_: str | None = typer.Option(None, "--break", help="too_few: five episodes per suite."),
    quick: bool = typer.Option(False, "--quick", help="Tiny sizes, for tests and a first look."),
    out: Path | None = typer.Option(None, "--out", help="Checkpoint folder."),
    report: Path | None = typer.Option(
        None, "--report", help="Also write the report (weak vs strong) here: HTML, or "
        "Markdown for a .md file."),
    store: Path | None = STORE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Train strong and weak BC on PushT, evaluate through the runner, print four movements."""
    from evalband.errors import InvalidParameterError
    from evalband.labs.pusht_harness import HarnessConfig, run_harness
    from evalband.store import open_store

    if break_ not in (None, "too_few"):
        raise InvalidParameterError(f"--break must be too_few; got {break_!r}")
    if quick:
        num_demos, n_seeds, eval_episodes, epochs = 12, 2, 5, 20
    config = HarnessConfig(num_demos=num_demos, n_seeds=n_seeds, eval_episodes=eval_episodes,
                           seed=seed, epochs=epochs, workers=workers,
                           too_few=break_ == "too_few")
    folder = out or store_path(store).parent / (
        f"pusht-harness-s{seed}-d{num_demos}-e{epochs}-w{config.weak_demos}"
    )

    def log(message: str) -> None:
        if not as_json:
            sys.stderr.write(f"harness: {message}\n")

    with open_store(store_path(store)) as st:
        result = run_harness(st, config, folder, log=log)
    if as_json:
        emit_json(result)
    else:
        _print(result)
    if report is not None:
        from evalband.cli._report import write_report_option

        runs = result["runs"]
        write_report_option([runs["weak"], runs["strong"]], store_path(store), report,
                            quiet=as_json)


def register(app: typer.Typer) -> None:
    """Add the ``harness`` group to ``app``."""
    app.add_typer(harness_app, name="harness")
