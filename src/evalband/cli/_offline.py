"""``evalband offline``: validation action error of lerobot checkpoints (feeds ``agree``)."""

from __future__ import annotations

from pathlib import Path

import typer

from evalband.cli._common import JSON_OPTION, console, emit_json

__all__ = ["register"]


def offline(
    checkpoints: list[str] = typer.Argument(..., help="lerobot:PATH checkpoints."),
    dataset: Path = typer.Option(..., "--dataset", help="A local LeRobotDataset directory."),
    episodes: str = typer.Option(
        ..., "--episodes", help="The held-out split: 40:50, 3,5,9 or all."),
    by: str = typer.Option(
        "task", "--by", help="The metadata column the split's make-up is counted by."),
    denoising_steps: int | None = typer.Option(
        None, "--denoising-steps", min=1, help="Diffusion: denoise in this many steps for every "
        "checkpoint (default: each checkpoint's own)."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the shared noise draws."),
    device: str = typer.Option("cpu", "--device", help="Torch device."),
    csv: Path | None = typer.Option(
        None, "--csv", help="Write checkpoint,action_mse,action_mae here (evalband agree --csv)."),
    md: Path | None = typer.Option(None, "--md", help="Also write Markdown here."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Validation action error of lerobot checkpoints on held-out demonstrations."""
    from evalband.cli._progress import work
    from evalband.cli._rank import write_outputs
    from evalband.policies.lerobot_offline import offline_action_error
    from evalband.report._offline import offline_lines, offline_markdown

    with work("replaying held-out episodes", enabled=not as_json) as step:
        result = offline_action_error(checkpoints, dataset, episodes, by=by,
                                      denoising_steps=denoising_steps, seed=seed,
                                      device=device, progress=step.stage("frames"))
    write_outputs(offline_markdown(result) if md else None, None, md, None, quiet=as_json)
    if csv is not None:
        write_outputs(result.csv_text(), None, csv, None, quiet=as_json)
    if as_json:
        emit_json(result.as_dict())
        return
    for line in offline_lines(result):
        console.print(line, soft_wrap=True, markup=False, highlight=False)


def register(app: typer.Typer) -> None:
    """Attach the offline command to ``app``."""
    app.command("offline")(offline)
