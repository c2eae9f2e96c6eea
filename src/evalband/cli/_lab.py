"""The reaching lab (seed 002) run through the real runner and store: ``make run``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalband.cli._common import console, emit_json, panel_option, pct

__all__ = ["reach1d_lab", "hidden_regression_lab", "LAB_POLICIES"]

LAB_POLICIES = ("reach1d:baseline", "reach1d:damped")


def reach1d_lab(panel_name: str, store: Path, *, as_json: bool = False) -> dict[str, Any]:
    """Run both reaching controllers on the panel and print the paired comparison."""
    from rich.table import Table

    from evalband import load_run
    from evalband.analysis import compare_many, paired_counts, summarize
    from evalband.analysis._verdicts import slice_verdict
    from evalband.cli._progress import RunProgress
    from evalband.report._document import comparison_documents
    from evalband.run import run_panel
    from evalband.stats import diff_paired, mcnemar
    from evalband.store import open_store

    panel = panel_option(panel_name)
    results: dict[str, Any] = {}
    with open_store(store) as st:
        records = {}
        for policy in LAB_POLICIES:
            run_id = f"{panel.name}-{policy.split(':')[1]}-{panel.fingerprint[:8]}"
            with RunProgress(policy, enabled=not as_json) as progress:
                run_panel(panel, policy, st, run_id=run_id, command=f"evalband lab --panel "
                          f"{panel_name}", on_episode=progress.advance, on_start=progress.start)
            records[policy] = st.episode_records(run_id)
            results[policy] = {"run_id": run_id, "summary": summarize(records[policy]).as_dict()}
        ids = [results[p]["run_id"] for p in LAB_POLICIES]
        stored = [load_run(r, st) for r in ids]
        compared = compare_many(stored[0], stored[1:])
        st.record_comparison(ids, result=comparison_documents(compared))  # for evalband view
    base, damped = (records[p] for p in LAB_POLICIES)
    pairs = paired_counts(base, damped)
    difference = diff_paired(pairs.both, pairs.a_only, pairs.b_only, pairs.neither)
    test = mcnemar(pairs.a_only, pairs.b_only, method="exact")
    out = {
        "panel": panel.name,
        "fingerprint": panel.fingerprint,
        "store": str(store),
        "runs": results,
        "paired": pairs.as_dict(),
        "difference_baseline_minus_damped": difference.as_dict(),
        "mcnemar": test.as_dict(),
        # the shared verdict vocabulary, read on damped - baseline (the candidate's change)
        "verdict_damped_against_baseline": slice_verdict(
            difference.excludes_zero, -difference.estimate
        ).value,
    }
    if as_json:
        emit_json(out)
        return out
    table = Table(title=f"{panel.name}: {panel.episodes} matched episodes, seed {panel.seed}")
    for col in ("controller", "success", "boundary", "timeout", "rate", "Wilson 95%",
                "mean time among successes"):
        table.add_column(col, justify="right" if col != "controller" else "left")
    for policy in LAB_POLICIES:
        s = summarize(records[policy])
        band = s.rate
        table.add_row(
            policy, f"{s.successes}/{s.n}", str(s.counts["failure"]), str(s.counts["timeout"]),
            pct(band.estimate, 6) if band else "-",
            f"[{pct(band.low, 6)}, {pct(band.high, 6)}]" if band else "-",
            s.time_text,
        )
    console.print(table)
    console.print(
        f"paired: both {pairs.both}, baseline-only {pairs.a_only}, damped-only {pairs.b_only}, "
        f"neither {pairs.neither}"
    )
    console.print(
        f"damped - baseline = {-100 * difference.estimate:+.4f} points, 95% {difference.method}: "
        f"[{-100 * difference.high:+.2f}, {-100 * difference.low:+.2f}]; exact McNemar "
        f"p = {test.p_value:.3g}"
    )
    console.print(f"verdict (damped against baseline): {out['verdict_damped_against_baseline']}: "
                  f"the interval {'excludes' if difference.excludes_zero else 'contains'} 0")
    console.print(f"store: {store}  (evalband runs / evalband show RUN_ID)")
    return out


def hidden_regression_lab(
    episodes: int, seed: int | None, store: Path, *, as_json: bool = False
) -> dict[str, Any]:
    """Seed 003's lab: simulate baseline and candidate into the store, then compare them."""
    from evalband import load_run
    from evalband.analysis import compare_runs
    from evalband.cli._compare import render_comparisons
    from evalband.labs.hidden_regression import DEFAULT_SEED, simulate_hidden_regression
    from evalband.report import comparison_document
    from evalband.store import open_store

    with open_store(store) as st:
        base_id, cand_id = simulate_hidden_regression(
            st, episodes=episodes, seed=DEFAULT_SEED if seed is None else seed
        )
        comparison = compare_runs(load_run(base_id, st), load_run(cand_id, st))
        out = comparison_document(comparison)
        st.record_comparison([base_id, cand_id], result=[out])  # evalband view
    if as_json:
        emit_json(out)
    else:
        render_comparisons([comparison])
    return out
