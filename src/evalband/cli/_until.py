"""``evalband run ... --against BASE --until-decided``: the CLI side of the sequential run."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalband.cli._common import console, emit_json, store_path

if TYPE_CHECKING:
    from evalband.analysis._sequential_plan import ComparisonDesign
    from evalband.panel import Panel

__all__ = ["run_until"]


def run_until(
    panel: Panel, policy: str, store: Path | None, *, against: str | None,
    against_policy: str | None = None, until_decided: bool,
    max_episodes: int | None, alpha: float | None, margin: float | None, chunk: int | None,
    run_id: str | None, as_json: bool, effect: float | None = None,
    discordant: float | None = None, power: float | None = None,
    **run_options: Any,
) -> None:
    """Play until decided, printing the design, each look (not with --json) and the decision.

    Exit status: 4 regression, 0 improvement, 3 non-inferior, 6 futility (stopped: the drop
    could not be shown within the maximum), 5 undecided; 2 bad input.
    """
    import typer

    from evalband.errors import InvalidInputError
    from evalband.run._until import run_both_until_decided, run_until_decided
    from evalband.store import open_store

    if (against is None) == (against_policy is None) or not until_decided:
        raise InvalidInputError(
            "--until-decided goes with one baseline: --against BASE_RUN (a stored run) or "
            "--against-policy BASE_POLICY (played too); give one of them")
    if alpha is not None and not 0 < alpha < 1:
        raise InvalidInputError(f"--alpha must be between 0 and 1; got {alpha}")
    if power is not None and not 0 < power < 1:
        raise InvalidInputError(f"--power must be between 0 and 1; got {power}")
    if margin is not None:
        from evalband._util.validate import check_probability

        check_probability(margin, "--margin", open_interval=True)

    def on_design(design: ComparisonDesign) -> None:
        """The stored design's exact figures, before the first look."""
        from evalband.analysis._sequential_outcome import design_lines
        from evalband.analysis._sequential_plan import DESIGN_SOURCES

        if as_json:
            return
        sys.stderr.write(f"design ({DESIGN_SOURCES[design.source]}; stored with the run):\n")
        for line in design_lines(design):
            sys.stderr.write(f"  {line}\n")

    def on_look(look: dict[str, Any]) -> None:
        if as_json:
            return
        worst = max(look["slices"].items(), key=lambda kv: kv[1]["statistic"] - kv[1]["boundary"],
                    default=None)
        extra = (f"; closest to the regression boundary: {worst[0]} "
                 f"(log E {worst[1]['statistic']:.2f} of {worst[1]['boundary']:.2f})"
                 if worst else "")
        sys.stderr.write(f"look at {look['episodes']} episodes: "
                         f"{look['decision'] or 'continue'}{extra}\n")

    common: dict[str, Any] = {
        "run_id": run_id, "max_episodes": max_episodes, "chunk": chunk,
        "confidence": None if alpha is None else 1.0 - alpha, "margin": margin,
        "on_look": on_look, "on_design": on_design, "effect": effect,
        "discordant": discordant, "power": power,
        "command": "evalband " + shlex.join(sys.argv[1:]), **run_options}
    base_rid = against
    with open_store(store_path(store)) as st:
        if against_policy is not None:
            rid, base_rid, summary, _ = run_both_until_decided(panel, policy, against_policy,
                                                               st, **common)
        else:
            assert against is not None
            rid, summary, _ = run_until_decided(panel, policy, st, against=against, **common)
        state = st.require_run(rid).extra.get("sequential", {})
    if as_json:
        emit_json({"run_id": rid, "baseline_run_id": base_rid, "policy": policy,
                   "summary": summary.as_dict(), "sequential": state})
    else:
        console.print(f"{rid}: {state.get('sentence') or 'undecided'} "
                      f"({len(state.get('looks', []))} look(s))")
    from evalband.analysis._sequential_outcome import sequential_exit_code

    raise typer.Exit(code=sequential_exit_code([state.get("decision")]))
