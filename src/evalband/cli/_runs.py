"""Run commands: run, runs, show, export, import, lab."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from evalband.cli._common import (
    JSON_OPTION,
    SCORER_OPTION,
    STORE_OPTION,
    SUCCESS_AT_OPTION,
    check_scorer_options,
    console,
    emit_json,
    panel_option,
    pct,
    read_store,
    store_path,
)
from evalband.cli._run_cmd import summary_lines

__all__ = ["register"]


def run(
    panel: str = typer.Argument(..., help="Panel YAML path or built-in panel name."),
    policy: str = typer.Option(
        ..., "--policy", "-p",
        help="Built-in name (random: any env's action space), *.pt checkpoint, module:attr, "
        "ws://HOST:PORT[?replan=K] or lerobot:PATH (a lerobot pretrained_model directory).",
    ),
    workers: int | None = typer.Option(
        None, "--workers", "-w", min=1,
        help="Workers (default: 1 for process, every CPU of the cluster for ray; "
             "sub-envs for vector, default 2).",
    ),
    backend: str = typer.Option(
        "serial", "--backend", "-b",
        help="serial, process, ray or vector (sub-envs in parallel, the policy batched)"),
    address: str | None = typer.Option(
        None, "--address",
        help="Ray cluster for --backend ray: auto, ray://HOST:PORT (default: a local one).",
    ),
    store: Path | None = STORE_OPTION,
    run_id: str | None = typer.Option(None, "--run-id", help="Name (or resume) this run."),
    errors_as_failures: bool = typer.Option(
        False, "--errors-as-failures", help="Count error episodes as failures (recorded)."
    ),
    batch: int | None = typer.Option(
        None, "--batch", min=1,
        help="Play N episodes in lockstep, one policy call per step on their stacked "
        "observations (same records; default: one at a time).",
    ),
    report: Path | None = typer.Option(
        None, "--report", help="Also write the run's report here: HTML (plots, no network), "
        "or Markdown for a .md file."),
    retry_errors: bool = typer.Option(
        False, "--retry-errors",
        help="With --run-id of a stored run: play its error episodes again (attempts +1).",
    ),
    record: str | None = typer.Option(
        None, "--record",
        help="Film episodes: failures, all or sample:K (mp4 beside the store; needs the "
        "'video' extra and an env with render_mode='rgb_array').",
    ),
    record_steps: bool = typer.Option(
        False, "--record-steps",
        help="Keep every episode's per-step actions, rewards and the panel's metrics info "
        "keys (a compressed .npz beside the store; every backend, --batch and "
        "--until-decided)."),
    record_obs: bool = typer.Option(
        False, "--record-obs",
        help="With the step data (implies --record-steps), keep each step's observation "
        "too: numeric entries of at most 4096 values (a camera image is left out, said in "
        "the record)."),
    episode_timeout: float | None = typer.Option(
        None, "--episode-timeout", help="Wall seconds one episode may take; past it the "
        "episode is an error (EpisodeTimeout) and the run goes on (default: the panel's "
        "episode_timeout_s, else 60 s + 1 s a budget step)."),
    record_size: str | None = typer.Option(
        None, "--record-size", help="Frame size of --record clips: WxH or N (NxN) pixels; "
        "passed to the env's renderer where it takes one, else frames are resized."),
    against: str | None = typer.Option(
        None, "--against", help="Baseline run id to compare with (--until-decided)."),
    against_policy: str | None = typer.Option(
        None, "--against-policy", help="With --until-decided: play this baseline policy too, "
        "both arms chunk by chunk on matched conditions (instead of --against)."),
    until_decided: bool = typer.Option(
        False, "--until-decided", help="Play cells interleaved, look after each chunk with "
        "the anytime-valid comparison against --against, stop once it is decided."),
    max_episodes: int | None = typer.Option(
        None, "--max-episodes", min=1, help="With --until-decided: the declared maximum."),
    alpha: float | None = typer.Option(
        None, "--alpha", help="With --until-decided: family-wise error (default: the panel's "
        "design block, else 0.05)."),
    margin: float | None = typer.Option(
        None, "--margin", help="With --until-decided: non-inferiority margin, in (0, 1) "
        "(0.05 = 5 points)."),
    chunk: int | None = typer.Option(
        None, "--chunk", min=1, help="With --until-decided: episodes between looks "
        "(default: one per cell)."),
    effect: float | None = typer.Option(
        None, "--effect", help="With --until-decided: the drop in success rate the design is "
        "tuned to (0.10 = 10 points; default: the panel's design block, else 0.10). The design "
        "is fixed and stored before the first episode and its exact power at this drop is "
        "printed: --power when the maximum allows it, less when it does not (then the drop it "
        "does catch with --power is printed too)."),
    power: float | None = typer.Option(
        None, "--power", help="With --until-decided: the target power per slice at --effect "
        "(default: the panel's design block, else 0.8)."),
    discordant: float | None = typer.Option(
        None, "--discordant", help="With --until-decided: the design's probability that a "
        "matched pair disagrees (default: the largest independent episodes can have "
        "at this effect, which keeps the stated power for any positive correlation)."),
    step: int | None = typer.Option(
        None, "--step", min=0, help="The training step of the checkpoint evaluated (stored "
        "with the run; rank --by step and sweep order checkpoints by it)."),
    episodes: int | None = typer.Option(
        None, "--episodes", min=1, help="Play N episodes per cell instead of the panel's "
        "(a smoke test: recorded, and the run's fingerprint is not the panel's)."),
    seed: int | None = typer.Option(
        None, "--seed", min=0, help="Use this panel seed instead of the panel's (recorded; "
        "the run's fingerprint is not the panel's)."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Run a policy on every planned episode of a panel; resumable with --run-id."""
    from evalband.cli._run_cmd import run_run

    run_run(panel, policy, workers=workers, backend=backend, address=address, store=store,
            run_id=run_id, errors_as_failures=errors_as_failures, batch=batch, report=report,
            retry_errors=retry_errors, record=record, record_size=record_size,
            record_steps="obs" if record_obs else record_steps,
            episode_timeout=episode_timeout, as_json=as_json,
            step=step, episodes=episodes, seed=seed, against=against,
            against_policy=against_policy, until_decided=until_decided,
            max_episodes=max_episodes, alpha=alpha, margin=margin, chunk=chunk, effect=effect,
            discordant=discordant, power=power)


def runs(store: Path | None = STORE_OPTION, as_json: bool = JSON_OPTION) -> None:
    """List the runs in the store, newest first."""
    from rich.table import Table

    with read_store(store) as st:
        manifests = st.list_runs()
        counts = {m.run_id: st.count_episodes(m.run_id) for m in manifests}
    if as_json:
        emit_json([{**m.as_dict(), "episodes": counts[m.run_id]} for m in manifests])
        return
    if not manifests:
        console.print(f"no runs in {store_path(store)}")
        return
    table = Table(title=f"runs in {store_path(store)}")
    for col in ("run id", "panel", "policy", "episodes", "status", "started"):
        table.add_column(col)
    for m in manifests:
        table.add_row(m.run_id, m.panel_name, m.policy, f"{counts[m.run_id]}/{m.n_planned}",
                      m.status, m.started_at)
    console.print(table)


def show(
    run_id: str = typer.Argument(..., help="Run id."),
    store: Path | None = STORE_OPTION,
    scorer: str | None = SCORER_OPTION,
    success_at: float | None = SUCCESS_AT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Summary of one run: outcomes, rate with Wilson band, time among successes."""
    from evalband.cli._progress import work
    from evalband.report._data import open_for
    from evalband.store._refs import resolve_run

    at = check_scorer_options(scorer, success_at)
    judged_by = None
    with open_for(store_path(store), [run_id]) as st, \
            work(f"counting {run_id}", enabled=not as_json) as step:
        ref = resolve_run(run_id, st)
        if st is not None and ref.kind == "store" and scorer is None:  # counted by SQLite
            from evalband.report._data import stored_slice_summaries

            assert ref.run_id is not None
            manifest = st.require_run(ref.run_id)
            slices = stored_slice_summaries(st, ref.run_id, progress=step.stage(
                f"counting {run_id}"))
            metrics = _metric_summaries(run_id, st, step)
        else:  # a bundle, or judged by a scorer: from the records
            from evalband import load_run
            from evalband.analysis._metrics import metric_summaries
            from evalband.report._data import slice_summaries
            from evalband.store._bundle import load_bundle

            run = load_run(run_id, st, step.stage(f"reading {run_id}"))
            manifest = st.require_run(run.run_id) if st is not None and ref.kind == "store" \
                else load_bundle(run_id)[0]
            if scorer is not None:
                from evalband._rescore import judge_runs

                (run,), judged_by = judge_runs([run], scorer, success_at=at)
            slices = slice_summaries(run)
            metrics = metric_summaries(run.records, run.panel, slices=True)
    summary = slices[-1].summary  # the whole run
    if as_json:
        from evalband.analysis._models import to_wire

        emit_json({"manifest": manifest.as_dict(), "summary": summary.as_dict(),
                   "metrics": to_wire(metrics),
                   "scorer": None if judged_by is None else to_wire(judged_by)})
        return
    if judged_by is not None:
        from evalband._rescore import judged_note

        console.print(f"note: {judged_note(judged_by)}", soft_wrap=True, markup=False,
                      highlight=False)
    for line in summary_lines(run_id, manifest.policy, summary):
        console.print(line)
    console.print(
        f"  panel {manifest.panel_name} ({manifest.panel_fingerprint[:12]}), status "
        f"{manifest.status}, {summary.n_attempted}/{manifest.n_planned} episodes recorded"
        + (f", checkpoint step {manifest.step}" if manifest.step is not None else "")
    )
    override = manifest.extra.get("override")
    if isinstance(override, dict):  # run --episodes N --seed S: a smoke test
        changed = " ".join(f"--{k} {v}" for k, v in override.items() if k != "of_fingerprint")
        console.print(f"  played with {changed}: not the panel file's episodes (its "
                      f"fingerprint {str(override.get('of_fingerprint', ''))[:12]})")
    sequential = manifest.extra.get("sequential")
    if sequential:  # run --until-decided: its looks and decision
        console.print(f"  until decided against {sequential.get('against')}: "
                      f"{len(sequential.get('looks', []))} look(s); "
                      f"{sequential.get('sentence') or 'undecided so far'}")
        if sequential.get("design"):
            from evalband.analysis._sequential_outcome import design_lines
            from evalband.analysis._sequential_plan import DESIGN_SOURCES, ComparisonDesign

            design = ComparisonDesign.from_dict(sequential["design"])
            console.print(f"  design: a {100 * design.effect:g}-point drop "
                          f"({DESIGN_SOURCES[design.source]})", soft_wrap=True)
            for line in design_lines(design):
                console.print(f"    {line}", soft_wrap=True)
    if len(slices) > 1:
        from evalband.report._terminal import slice_summary_table

        console.print(slice_summary_table(slices, plain=not sys.stdout.isatty()))
    if metrics:
        from evalband.report._terminal import metric_summary_table

        console.print(metric_summary_table(metrics, plain=not sys.stdout.isatty()))
        console.print("  intervals: the mean with Student's t for an unbounded metric, with the "
                      "studentised bootstrap (9,999 resamples, seed 0) for one in [0, 1] "
                      "(Wilson for 0/1 values); the median with its exact order-statistic "
                      "interval for a skewed, ordinal or progress one; error episodes left out",
                      soft_wrap=True)
        from evalband.report._terminal import level_table

        levels = level_table(metrics, plain=not sys.stdout.isatty())
        if levels is not None:
            from evalband.report._metrics import LEVEL_NOTE

            console.print(levels)
            console.print(f"  {LEVEL_NOTE}", soft_wrap=True)


def _metric_summaries(run_id: str, st: Any, step: Any) -> list[Any]:
    """The run's metric means with their intervals, per slice then overall (``extra`` only)."""
    from evalband import load_run
    from evalband.analysis._metrics import metric_summaries

    run = load_run(run_id, st, step.stage(f"reading metrics of {run_id}"),
                   extra_columns=("extra",))
    return metric_summaries(run.records, run.panel, slices=True)


def export(
    run_id: str = typer.Argument(..., help="Run id (--format lerobot: a run id, or a session "
                                 "id for a LeRobotDataset)."),
    out: Path = typer.Option(..., "--out", "-o", help="Bundle directory to create (lerobot: "
                             "the directory of eval_info.json or of the dataset)."),
    store: Path | None = STORE_OPTION,
    overwrite: bool = typer.Option(False, "--overwrite"),
    fmt: str = typer.Option(
        "bundle", "--format", "-f",
        help="bundle; lerobot: a run as lerobot-eval's eval_info.json, or a robot session's "
        "trials as a LeRobotDataset (lerobot's own writer; run from lerobot's venv); "
        "lerobot-eval: always the eval_info.json; rerun: the run's step data (run "
        "--record-steps) as a Rerun recording, -o FILE.rrd (the 'rerun' extra).",
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Write a run as an artifact bundle (manifest.json, panel.yaml, episodes.parquet)."""
    from evalband.cli._progress import work
    from evalband.store._bundle import export_bundle

    if fmt == "lerobot-eval" or (fmt == "lerobot" and _is_stored_run(store, run_id)):
        from evalband.store._export_lerobot_eval import export_eval_info

        with read_store(store) as st:
            written = export_eval_info(st, run_id, out, overwrite=overwrite)
        if as_json:
            emit_json({"run_id": run_id, "eval_info": str(written)})
            return
        console.print(f"exported {run_id} to {written} (lerobot-eval's layout)")
        return
    if fmt == "lerobot":
        from evalband.session._export_lerobot import export_lerobot

        with work(f"exporting {run_id} as a LeRobotDataset", enabled=not as_json):
            done = export_lerobot(store_path(store), run_id, out, overwrite=overwrite)
        if as_json:
            emit_json({"session_id": run_id, "dataset": str(done.root),
                       "repo_id": done.repo_id, "episodes": done.episodes,
                       "frames": done.frames, "skipped": done.skipped})
            return
        console.print(f"exported session {run_id} to {done.root}: {done.episodes} episodes, "
                      f"{done.frames} frames (LeRobotDataset {done.repo_id!r}"
                      + (f"; {done.skipped} trials without a clip left out)" if done.skipped
                         else ")"))
        return
    if fmt == "rerun":
        from evalband.store._export_rerun import export_rerun

        with read_store(store) as st, work(f"exporting {run_id} to Rerun",
                                           enabled=not as_json):
            rrd = export_rerun(st, run_id, out, overwrite=overwrite)
        if as_json:
            emit_json({"run_id": run_id, "rrd": str(rrd.path), "episodes": rrd.episodes,
                       "steps": rrd.steps, "skipped": rrd.skipped})
            return
        console.print(f"exported {run_id} to {rrd.path}: {rrd.episodes} episodes, "
                      f"{rrd.steps} steps" + (f" ({rrd.skipped} episodes without step data "
                                              "left out)" if rrd.skipped else ""))
        return
    if fmt != "bundle":
        from evalband.errors import InvalidParameterError

        raise InvalidParameterError(f"--format must be bundle, lerobot, lerobot-eval or "
                                    f"rerun; got {fmt!r}")

    with read_store(store) as st, work(f"exporting {run_id}", enabled=not as_json):
        _refuse_session(st, run_id)
        path = export_bundle(st, run_id, out, overwrite=overwrite)
    if as_json:
        emit_json({"run_id": run_id, "bundle": str(path)})
        return
    console.print(f"exported {run_id} to {path}")


def _refuse_session(st: Any, ref: str) -> None:
    """A session id given where a run id goes: say what to export instead (one line)."""
    if st.get_run(ref) is not None:
        return
    from evalband.session import SessionStore

    sessions = SessionStore(st)
    if ref in sessions.session_ids():
        from evalband.errors import InvalidInputError

        runs = ", ".join(sessions.run_ids(ref).values())
        raise InvalidInputError(
            f"{ref} is a session, not a run: export each of its runs ({runs}) as a bundle, or "
            "the session's trials as a LeRobotDataset with --format lerobot (lerobot's venv)")


def _missing(store: Path) -> list[Path]:
    """The store file and the folders above it that do not exist yet, deepest first."""
    made = []
    for path in (store, *store.absolute().parents):
        if path.exists():
            break
        made.append(path)
    return made


def _remove_new(made: list[Path]) -> None:
    """Remove the store file this command created (and SQLite's side files).

    Then the folders made for it, while they hold nothing else.
    """
    if not made:
        return
    for suffix in ("", "-wal", "-shm", "-journal"):
        made[0].with_name(made[0].name + suffix).unlink(missing_ok=True)
    for folder in made[1:]:
        try:
            folder.rmdir()
        except OSError:  # not empty (clips copied beside the store): kept
            break


def _is_stored_run(store: Path | None, run_id: str) -> bool:
    """Whether ``run_id`` names a stored run (else ``--format lerobot`` means a session)."""
    with read_store(store) as st:
        return st.get_run(run_id) is not None


BUSY_BYTES = 2_000_000
"""An imported file above this size (about 60,000 CSV rows, ~1 s) shows a spinner on a TTY."""


def import_cmd(
    source: Path = typer.Argument(..., help="Artifact bundle directory, or results to import."),
    fmt: str | None = typer.Option(
        None, "--format", "-f",
        help="bundle, csv, jsonl, parquet, lerobot, libero, simpler, paired-csv or maniskill "
        "(default: told from the content).",
    ),
    panel: str | None = typer.Option(
        None, "--panel", help="Panel the results were made on (else inferred and marked so)."
    ),
    run_id: str | None = typer.Option(None, "--run-id", help="Run id (default: from the file)."),
    policy: str | None = typer.Option(None, "--policy", help="Policy name for the run."),
    factors: str | None = typer.Option(
        None, "--factors", help="Columns to read as slice factors (comma-separated)."
    ),
    metrics: str | None = typer.Option(
        None, "--metrics", help="Columns to read as per-episode metrics (comma-separated)."
    ),
    store: Path | None = STORE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Load a bundle (checked consistent) or results made elsewhere into the store."""
    from evalband.errors import InvalidParameterError
    from evalband.store import import_runs, open_store
    from evalband.store._bundle import import_bundle
    from evalband.store._import_read import IMPORT_FORMATS

    is_bundle = fmt == "bundle" or (
        fmt is None and source.is_dir() and (source / "manifest.json").is_file()
    )
    if fmt is not None and fmt != "bundle" and fmt not in IMPORT_FORMATS:
        raise InvalidParameterError(
            f"--format must be one of bundle, {', '.join(IMPORT_FORMATS)}; got {fmt!r}"
        )
    given = [flag for flag, value in (("--panel", panel), ("--run-id", run_id),
                                      ("--policy", policy), ("--factors", factors),
                                      ("--metrics", metrics)) if value]
    if is_bundle and given:
        raise InvalidParameterError(
            "a bundle carries its own panel, run id, policy, factors and metrics; drop "
            + ", ".join(given))
    panel_obj = panel_option(panel, check_env=False) if panel else None

    def names(text: str | None) -> list[str]:
        return [n.strip() for n in (text or "").split(",") if n.strip()]

    from evalband.cli._progress import work

    big = source.is_file() and source.stat().st_size > BUSY_BYTES
    target = store_path(store)
    made = _missing(target)  # what opening the store creates; removed if nothing is imported
    try:
        with open_store(target) as st, work(f"importing {source.name}",
                                            enabled=big and not as_json) as step:
            if is_bundle:
                rids = [import_bundle(st, source)]
            else:
                rids = import_runs(st, source, format=fmt, run_id=run_id, policy=policy,
                                   panel=panel_obj, factors=names(factors),
                                   metrics=names(metrics),
                                   progress=step.stage(f"importing {source.name}"))
            manifests = [st.require_run(rid) for rid in rids]
            counts = [st.count_episodes(rid) for rid in rids]
    except BaseException:  # a refused file, a taken run id, Ctrl-C: no store left behind
        _remove_new(made)
        raise
    if as_json:
        runs = [{"run_id": m.run_id, "source": str(source), "episodes": n,
                 "panel_fingerprint": m.panel_fingerprint,
                 "panel_inferred": bool(m.extra.get("panel_inferred", False)),
                 "notes": list(m.extra.get("import_notes", [])),
                 "media_notes": list(m.extra.get("media_notes", []))}
                for m, n in zip(manifests, counts, strict=True)]
        emit_json(runs[0] if len(runs) == 1 else {"runs": runs})
        return
    for manifest, count in zip(manifests, counts, strict=True):
        how = (f"{count} episodes; bundle consistent: hashes and panel fingerprint match"
               if is_bundle else f"{count} episodes")
        console.print(f"imported {manifest.run_id} from {source} ({how})")
    first = manifests[0]
    for note in first.extra.get("media_notes", []):
        console.print(f"note: {note}", markup=False)
    for note in first.extra.get("import_notes", []):
        console.print(f"note: {note} (say so with --factors/--metrics)")
    if first.extra.get("panel_inferred"):
        console.print("note: no --panel given; the panel was inferred from the file and marked so")
    if first.extra.get("pairing"):
        console.print(f"note: episodes pair by {first.extra['pairing']}")


lab_app = typer.Typer(
    help="The seed documents' labs, run end to end through the real runner and store.",
    no_args_is_help=True,
)


@lab_app.command("reach1d")
def lab_reach1d(
    panel: str = typer.Option("reach1d", "--panel", help="Panel (preset) to run."),
    store: Path | None = STORE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Seed 002's reaching lab: both controllers, paired comparison (what `make run` runs)."""
    from evalband.cli._lab import reach1d_lab

    reach1d_lab(panel, store_path(store), as_json=as_json)


@lab_app.command("hidden-regression")
def lab_hidden_regression(
    episodes: int = typer.Option(200, "--episodes", min=1, help="Episodes per slice."),
    seed: int | None = typer.Option(None, "--seed", help="Panel seed (default 4)."),
    store: Path | None = STORE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Seed 003's lab: an aggregate that holds while the hardest embodiment regresses.

    Exits as `evalband compare` would on the same runs (4 on the regression).
    """
    from evalband.cli._lab import hidden_regression_lab

    out = hidden_regression_lab(episodes, seed, store_path(store), as_json=as_json)
    raise typer.Exit(code=int(out["exit_code"]))  # compare's exit status for this verdict


def noise(
    run_id: str = typer.Argument(..., help="Run id."),
    suite_size: int = typer.Option(20, "--suite-size", "-m", help="Episodes per suite."),
    store: Path | None = STORE_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """The noise floor of a run: the swing of suites of M episodes, and the flip rate."""
    from rich.table import Table

    from evalband.analysis import noise_floor

    with read_store(store) as st:
        manifest = st.require_run(run_id)
        records = st.episode_records(run_id)
        floor = noise_floor(records, suite_size, errors_as_failures=manifest.errors_as_failures)
    repeats = sum(1 for r in records if r.repeat > 0)
    if as_json:
        emit_json({"run_id": run_id, **floor.as_dict(), "repeat_episodes": repeats})
        return
    pooled = floor.pooled
    console.print(
        f"{run_id}: pooled over every episode {pooled.k}/{pooled.n} = {pct(pooled.estimate)}, "
        f"Wilson 95% [{pct(pooled.low)}, {pct(pooled.high)}]"
    )
    if repeats:
        console.print(
            f"  the suites run over every repeat in plan order (cell, episode, repeat), so a "
            f"suite can hold repeats of one condition; the {repeats} repeat episodes also give "
            "the flip rate below"
        )
    if floor.partial is not None:
        part = floor.partial
        console.print(
            f"  the last {part.n} episode(s) ({part.successes} successes) make a partial suite,"
            f" not part of the swing (a suite has {suite_size})"
        )
    if floor.swing is None:
        console.print(f"fewer than {suite_size} counted episodes: no full suite, no swing")
    else:
        sw = floor.swing
        table = Table(title=f"{sw.n_suites} suites of {suite_size} episodes")
        for col in ("suite", "successes", "rate", "Wilson 95%", "inside pooled band"):
            table.add_column(col)
        for suite in floor.suites:
            inside = pooled.low <= suite.rate.estimate <= pooled.high
            table.add_row(str(suite.index), f"{suite.successes}/{suite.n}",
                          pct(suite.rate.estimate), f"[{pct(suite.rate.low)}, "
                          f"{pct(suite.rate.high)}]", "yes" if inside else "[red]no[/red]")
        console.print(table)
        std = "-" if sw.std is None else pct(sw.std)
        console.print(
            f"swing: {pct(sw.min_rate)} to {pct(sw.max_rate)}, std {std} (binomial alone: "
            f"{pct(sw.binomial_std)}); {sw.outside_band} of {sw.n_suites} suites outside the "
            "pooled band"
        )
    if floor.flip is not None:
        flip = floor.flip
        console.print(
            f"flip rate of same-condition pairs: {flip.flips}/{flip.pairs} = "
            f"{pct(flip.rate.estimate)}, 95% [{pct(flip.rate.low)}, "
            f"{pct(flip.rate.high)}] over {flip.groups} conditions (each condition a cluster: "
            "its pairs share attempts)"
        )


def register(app: typer.Typer) -> None:
    """Attach the run commands to ``app``."""
    app.command("run")(run)
    app.command("runs")(runs)
    app.command("show")(show)
    app.command("export")(export)
    app.command("import")(import_cmd)
    from evalband.cli._reach_bc import reach_bc_app

    if not any(info.typer_instance is reach_bc_app for info in lab_app.registered_groups):
        lab_app.add_typer(reach_bc_app, name="reach-bc")  # once per process, for every app
    app.add_typer(lab_app, name="lab")
    app.command("noise")(noise)
