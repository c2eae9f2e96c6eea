"""``evalband lab reach-bc generate|split|train|evaluate --out DIR``: seed 002's BC exercise."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from evalband.cli._common import JSON_OPTION, console, emit_json, pct

__all__ = ["reach_bc_app"]

reach_bc_app = typer.Typer(
    help=(
        "Seed 002's learned-policy exercise: expert demonstrations, an episode split, an "
        "affine policy chosen by validation action error, paired evaluation on 16 final starts."
    ),
    no_args_is_help=True,
)

OUT_OPTION = typer.Option(..., "--out", "-o", help="The exercise directory (shared by stages).")
SEED_HELP = "Seed of this stage's draws (default 7)."


@reach_bc_app.command("generate")
def generate(
    out: Path = OUT_OPTION,
    seed: int = typer.Option(7, "--seed", min=0, help=SEED_HELP),
    # 18: the split's FINAL_EPISODES + 2 (its module loads numpy; a test keeps them equal)
    episodes: int = typer.Option(80, "--episodes", min=18, help="Demonstrations (16 final, "
                                 ">= 1 validation, >= 1 train)."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Roll out the expert under nominal dynamics: demos.csv + demos.json (sha256)."""
    from evalband.labs.reach_bc import DATA_FILE, generate_demonstrations

    manifest = generate_demonstrations(out, seed=seed, episodes=episodes)
    if as_json:
        emit_json(manifest)
        return
    lab = manifest["lab_outcomes"]
    console.print(
        f"wrote {out / DATA_FILE}: {manifest['episodes']} expert demonstrations x "
        f"{manifest['actions_per_episode']} actions ({manifest['rows']} rows), seed {seed}; "
        f"under the lab's rule the expert succeeded in {lab['success']}, boundary "
        f"{lab['failure']}, timeout {lab['timeout']}"
    )


@reach_bc_app.command("split")
def split(
    out: Path = OUT_OPTION,
    seed: int = typer.Option(7, "--seed", min=0, help=SEED_HELP),
    as_json: bool = JSON_OPTION,
) -> None:
    """Assign whole episodes to train / validation / final (16 evaluation starts)."""
    from evalband.labs.reach_bc import SPLIT_FILE, split_demonstrations

    result = split_demonstrations(out, seed=seed)
    if as_json:
        emit_json(result)
        return
    c = result["counts"]
    console.print(
        f"wrote {out / SPLIT_FILE}: train {c['train']}, validation {c['validation']}, final "
        f"{c['final']} episodes (seed {seed}); the final starts are held out for evaluate"
    )


@reach_bc_app.command("train")
def train(out: Path = OUT_OPTION, as_json: bool = JSON_OPTION) -> None:
    """Fit affine candidates on train episodes; keep the lowest validation action MSE."""
    from rich.table import Table

    from evalband.labs.reach_bc import MODEL_FILE, train_policy

    model = train_policy(out)
    if as_json:
        emit_json(model)
        return
    table = Table(title=f"affine candidates ({model['samples']['train']} train, "
                        f"{model['samples']['validation']} validation samples)")
    for col in ("candidate", "w_x", "w_v", "b", "train MSE", "validation MSE"):
        table.add_column(col, justify="left" if col == "candidate" else "right")
    for row in model["candidates"]:
        w = row["weights"]
        mark = " *" if row["name"] == model["chosen"] else ""
        table.add_row(row["name"] + mark, f"{w['w_x']:.4f}", f"{w['w_v']:.4f}", f"{w['b']:.4f}",
                      f"{row['train_mse']:.8f}", f"{row['validation_mse']:.8f}")
    console.print(table)
    console.print(f"wrote {out / MODEL_FILE}: {model['formula']} ({model['chosen']})")


@reach_bc_app.command("evaluate")
def evaluate(
    out: Path = OUT_OPTION,
    seed: int = typer.Option(7, "--seed", min=0, help="Seed of the changed-dynamics draws."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Load model.json (references checked, no refit); roll out learned and expert, paired."""
    from evalband.labs.reach_bc import evaluate_policy

    summary = evaluate_policy(out, seed=seed)
    if as_json:
        emit_json(summary)
        return
    render_summary(summary, out)


def render_summary(summary: dict[str, Any], out: Path) -> None:
    """The seed's table: success / boundary / timeout per trial, then the paired counts."""
    from rich.table import Table

    n = len(summary["starts"])
    console.print(
        f"learned policy {summary['model']['formula']} ({summary['model']['chosen']}); "
        f"{n} final starts, changed dynamics drawn with seed {summary['seed']}"
    )
    table = Table()
    for col in ("Trial", "Success", "Boundary", "Timeout", "Wilson 95%",
                "Mean time among successes"):
        table.add_column(col, justify="left" if col == "Trial" else "right")
    for t in summary["trials"]:
        mean = t["mean_time_among_successes_s"]
        table.add_row(
            f"{t['dynamics'].capitalize()}, {t['policy']}", f"{t['successes']}/{t['attempts']}",
            str(t["boundary"]), str(t["timeouts"]),
            f"[{pct(t['wilson_95']['low'])}, {pct(t['wilson_95']['high'])}]",
            mean if isinstance(mean, str) else f"{mean:.3f} s",
        )
    console.print(table)
    for dynamics, p in summary["paired_learned_vs_expert"].items():
        console.print(
            f"paired, {dynamics}: both succeed {p['both']}, only learned {p['learned_only']}, "
            f"only expert {p['expert_only']}, neither {p['neither']} (of {p['pairs']})"
        )
    mse = summary["offline_action_mse"]
    console.print(
        "offline action MSE at expert states (nominal demonstrations): "
        + ", ".join(f"{part} {value:.8f}" for part, value in mse.items())
        + " (m/s^2)^2; it measures neither the changed dynamics nor the learner's own states"
    )
    console.print(f"wrote {', '.join(summary['files'])} in {out}")
