"""Terminal rendering of a hardware session: pure functions of its typed results.

``evalband session analyze`` and ``evalband session drift`` print what these return (rich
renderables: markup strings and tables), in the seed's reading order: the flip floor and the
positive control (the instrument) before any policy rate, confirmatory comparisons before
exploratory ones, the drift verdict before any cross-session comparison. They read the
result only (the HTML section is :mod:`evalband.report._session`, from the same table
definitions).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from evalband.report._session import (
    TableText,
    comparison_table,
    flip_policy_table,
    policy_table,
)
from evalband.report._session import (
    p_text as _p,
)
from evalband.report._session import (
    points_text as _points,
)
from evalband.report._session import (
    rate_text as _rate,
)
from evalband.report._words import look

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.table import Table

    from evalband.session import SessionAnalysis, SessionPlan
    from evalband.session._drift import DriftReport

__all__ = ["session_analysis_renderables", "drift_renderables", "instrument_renderables",
           "HIDDEN", "plan_lines", "session_show_renderables", "sessions_table"]

HIDDEN = "hidden while blinded"
"""What a blinded session says in place of a policy name (the positive control)."""


def _rich_table(
    table: TableText, title: str | None = None, markup: frozenset[int] | set[int] = frozenset()
) -> Table:
    """A shared table definition (plain text) as a rich table; ``markup``: styled columns."""
    from rich.markup import escape
    from rich.table import Table

    headers, rows = table
    out = Table(title=title)
    for col in headers:
        out.add_column(escape(col))
    for row in rows:
        out.add_row(*(cell if i in markup else escape(cell) for i, cell in enumerate(row)))
    return out


def session_analysis_renderables(result: SessionAnalysis) -> list[RenderableType]:
    """A session analysis for the terminal: instrument first, comparisons labelled, prices last.

    Rich renderables (markup strings and tables) in the seed's reading order; the command
    prints each.
    """
    from rich.markup import escape
    from rich.table import Table

    out: list[RenderableType] = []
    prog = result.progress
    out.append(
        f"session {escape(result.session_id)}: {prog.scored} scored, {prog.skipped} skipped, "
        f"{prog.pending} pending of {prog.planned} trials; {prog.scenes_complete} of "
        f"{prog.scenes} scenes complete; success = score >= {result.rubric['success_at']}"
    )
    for note in result.notes:
        out.append(f"note: {escape(note)}")

    out.append("\n[bold]1. flip floor[/] (same policy, same scene, two attempts)")
    if result.flip is None:
        out.append("no policy has two unaided attempts in one scene yet")
    else:
        flip = result.flip
        out.append(escape(flip.sentence))
        table = Table(title="flip rate as scenes accumulated")
        for col in ("after scene", "pairs", "flips", "flip rate"):
            table.add_column(col)
        for point in flip.by_scene:
            table.add_row(str(point.scene), str(point.pairs), str(point.flips), _rate(point.rate))
        out.append(table)
        out.append(_rich_table(flip_policy_table(result), title="flip rate per policy"))
    out.append("\n[bold]2. positive control[/]")
    if result.control is None:
        out.append("no positive control in this session (plan one: --positive-control)")
    else:
        style = look(result.control.status).rich
        text = escape(result.control.sentence)
        out.append(f"[{style}]{text}[/]" if style else text)

    out.append("\n[bold]3. per-policy success[/] (unaided; skipped and assisted apart)")
    out.append(_rich_table(policy_table(result)))
    out.append("\n[bold]4. comparisons[/] (A - B; Holm within each family)")
    if not result.comparisons:
        out.append("no comparison has matched trials yet")
    else:
        headers, rows = comparison_table(result)
        styled = [
            [row[0], f"[{look(row[1]).rich}]{row[1]}[/]", *row[2:-1]]
            for row in rows
        ]  # the sentence column is printed under the table
        out.append(_rich_table((headers[:-1], styled), markup={1}))
        for c in result.comparisons:
            out.append(f"{escape(c.label)}: {escape(c.sentence)}")

    out.append("\n[bold]5. cumulative success per policy vs scenes[/]")
    if result.cumulative and result.cumulative[0].points:
        last = len(result.cumulative[0].points)
        marks = sorted({s for s in (last // 4, last // 2, 3 * last // 4, last) if s >= 1})
        table = Table()
        table.add_column("policy")
        for s in marks:
            table.add_column(f"after scene {s}")
        for series in result.cumulative:
            table.add_row(escape(series.policy), *(_rate(series.points[s - 1].rate) for s in marks))
        out.append(table)
    else:
        out.append("no trial recorded yet")

    out.append(
        "\n[bold]6. power price list[/] (80% power, alpha 0.05; unpaired: episodes per policy; "
        "matched: scenes with one attempt per policy, this session's test, exact power)"
    )
    prices = result.prices
    if prices is None:
        out.append("no unaided trial yet")
        return out
    table = Table()
    for col in (
        "gap",
        "rates",
        "unpaired (z test)",
        f"matched, this session's discordance (alpha 0.05/{prices.comparisons})",
        f"matched, at the flip floor (alpha 0.05/{prices.comparisons})",
    ):
        table.add_column(col)
    for e in prices.entries:
        table.add_row(
            f"{100 * e.gap:.0f} points",
            f"{100 * e.p_a:.0f}% vs {100 * e.p_b:.0f}%",
            str(e.unpaired),
            "-" if e.paired is None else f"{e.paired} (discordant {e.paired_discordant:.2f})",
            "-"
            if e.at_flip_floor is None
            else f"{e.at_flip_floor} (discordant {e.floor_discordant:.2f})",
        )
    out.append(table)
    out.append(escape(prices.sentence))
    return out


def drift_renderables(report: DriftReport) -> list[RenderableType]:
    """A drift report for the terminal: the drift verdict first, cross-session comparisons after."""
    from rich.markup import escape
    from rich.table import Table

    out: list[RenderableType] = []
    style = "bold red" if report.drifted else "green"
    out.append(f"[{style}]{escape(report.sentence)}[/]")
    table = Table(title=f"shared policies: {escape(report.first)} -> {escape(report.second)}")
    for col in (
        "policy",
        "role",
        report.first,
        report.second,
        "change points (Holm-step interval)",
        "p",
        "Holm p",
        "drift",
    ):
        table.add_column(escape(col))
    for a in report.anchors:
        c = a.change
        table.add_row(
            escape(a.policy),
            a.role,
            _rate(a.before),
            _rate(a.after),
            _points(c),
            _p(a.test.p_value),
            _p(a.p_holm),
            f"DRIFT ({a.verdict})" if a.drifted else "no",
        )
    out.append(table)
    for note in report.notes:
        out.append(f"note: {escape(note)}")
    if not report.cross:
        return out
    out.append("\ncross-session model comparisons (read only after the drift check above):")
    for x in report.cross:
        out.append(f"{escape(x.label)}: {escape(x.sentence)}")
    return out


def _kappa_text(value: Any) -> str:
    if value is None or value.estimate != value.estimate:
        return "undefined (one score only)"
    return f"{value.estimate:.2f} [{value.low:.2f}, {value.high:.2f}]"


def instrument_renderables(summary: Any) -> list[RenderableType]:
    """The robot instrument's record (suggestion agreement, rehearsal) for the terminal."""
    from rich.markup import escape

    out: list[RenderableType] = []
    out.append("")
    out.append(f"instrument: {summary.played} trials played on the robot "
                  f"({summary.human} scored by a person, {summary.rehearsal} rehearsal)")
    if summary.agreement is not None:
        out.append(
            f"  the machine's suggestion vs the operator ({summary.human} trials, "
            f"{summary.overrides} overridden): Cohen's kappa {_kappa_text(summary.agreement)}, "
            f"weighted (quadratic) {_kappa_text(summary.weighted)}, "
            f"{100 * summary.agreement.confidence:g}% intervals")
        out.append(f"  suggestion (rows) x operator (columns), levels {summary.levels}: "
                      f"{summary.table}")
    if summary.truth is not None:
        out.append(
            f"  the machine's suggestion vs the simulator's truth ({summary.truth.n} trials): "
            f"Cohen's kappa {_kappa_text(summary.truth)}, weighted (quadratic) "
            f"{_kappa_text(summary.truth_weighted)}")
    for note in summary.notes:
        out.append(f"  note: {escape(note)}")
    return out


def plan_lines(plan_obj: SessionPlan, *, unblind: bool) -> list[str]:
    """The plan in a few lines (a blinded plan: codes only unless ``unblind``)."""
    named = not plan_obj.blind or unblind
    shape = (
        f"{len(plan_obj.policies)} policies x {plan_obj.scenes} scenes x {plan_obj.attempts} "
        f"attempts = {plan_obj.n_trials} trials, seed {plan_obj.seed}"
    )
    if plan_obj.blind:
        shape += ", blinded"
    if named:
        names = ", ".join(
            f"{p} ({plan_obj.codes[p]})" if plan_obj.blind else p for p in plan_obj.policies
        )
        lines = [shape, f"policies: {names}"]
    else:
        lines = [shape, f"codes: {', '.join(sorted(plan_obj.codes.values()))}"]
    if plan_obj.positive_control is not None:
        pc = plan_obj.positive_control if named else HIDDEN
        lines.append(f"positive control: {pc}")
    lines.append(f"rubric: {plan_obj.rubric.describe()}")
    if plan_obj.instrument is not None:
        from evalband.session._instrument_spec import load_instrument

        lines.extend(f"instrument: {line}"
                     for line in load_instrument(plan_obj.instrument).describe())
    return lines


def session_show_renderables(plan_obj: SessionPlan, counts: dict[str, int],
                             next_index: int | None, trials: Sequence[dict[str, Any]],
                             rates: Sequence[dict[str, Any]] | None, *,
                             unblind: bool) -> list[RenderableType]:
    """``session show``: the plan, the progress, per-policy rates (when named), the schedule.

    ``trials``: one row per trial (``policy`` left out of a blinded one's); ``rates``: the
    per-policy rows, ``None`` while blinded.
    """
    from rich.table import Table

    from evalband.report._format import percent

    named = not plan_obj.blind or unblind
    out: list[RenderableType] = [f"session {plan_obj.session_id}"]
    out.extend("  " + line for line in plan_lines(plan_obj, unblind=unblind))
    done = counts["scored"] + counts["skipped"]
    nxt = "all done" if next_index is None else f"next: trial {next_index + 1}"
    out.append(
        f"  progress: {done} of {counts['total']} recorded ({counts['scored']} scored, "
        f"{counts['skipped']} skipped, {counts['pending']} pending); {nxt}"
    )
    if rates is not None:
        table = Table(title="per policy (success = score >= "
                      f"{plan_obj.rubric.success_at})")
        for col in ("policy", "scored", "successes", "rate", "skipped", "assisted"):
            table.add_column(col)
        for row in rates:
            table.add_row(row["policy"], str(row["scored"]), str(row["successes"]),
                          percent(row["rate"], 1), str(row["skipped"]), str(row["assisted"]))
        out.append(table)
    table = Table(title="schedule")
    for col in ("trial", "scene", "attempt", "policy" if named else "code", "status", "score",
                "assisted", "note"):
        table.add_column(col)
    for row in trials:
        table.add_row(
            str(row["trial_index"] + 1), str(row["scene"]), str(row["attempt"]),
            str(row["policy"] if named else row["code"]), row["status"],
            "-" if row["score"] is None else str(row["score"]),
            "yes" if row["assisted"] else "", row["note"] or "",
        )
    out.append(table)
    return out


def sessions_table(sessions: Sequence[tuple[SessionPlan, dict[str, int]]], *,
                   title: str) -> Table:
    """``session list``: each session's shape, blinding and recorded trials."""
    from rich.table import Table

    table = Table(title=title)
    for col in ("session", "created", "shape", "blind", "recorded"):
        table.add_column(col)
    for p, c in sessions:
        table.add_row(
            p.session_id, p.created_at,
            f"{len(p.policies)} x {p.scenes} x {p.attempts}", "yes" if p.blind else "no",
            f"{c['scored'] + c['skipped']}/{c['total']}",
        )
    return table
