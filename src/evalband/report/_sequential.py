"""The report section of a ``run --until-decided`` run: its looks, statistic paths and boundary.

For each run whose manifest holds ``extra["sequential"]`` (written by
:class:`evalband.run._until.SequentialMonitor`), the decision sentence, one small inline SVG
per slice with the path of the regression statistic (log likelihood ratio) over the looks and
its boundary as a dashed line, and the table of looks. No plotting library, no network.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

__all__ = ["sequential_section", "statistic_svg"]

_W, _H, _PAD = 320, 120, 24


def statistic_svg(name: str, xs: Sequence[float], ys: Sequence[float], boundary: float) -> str:
    """An inline SVG: the statistic's path over episodes and its boundary (dashed).

    >>> svg = statistic_svg("arm=a", [3, 6, 9], [0.4, 1.5, 3.2], 3.0)
    >>> svg.startswith("<svg") and "polyline" in svg and "stroke-dasharray" in svg
    True
    """
    lo = min(min(ys, default=0.0), 0.0, boundary) - 0.5
    hi = max(max(ys, default=0.0), boundary) + 0.5
    x_hi = max(max(xs, default=1.0), 1.0)

    def px(x: float) -> float:
        return _PAD + (_W - 2 * _PAD) * x / x_hi

    def py(y: float) -> float:
        return _H - _PAD - (_H - 2 * _PAD) * (y - lo) / (hi - lo)

    points = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(xs, ys, strict=True))
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" role="img" '
        f'aria-label="{escape(name)}: statistic and boundary">'
        f'<title>{escape(name)}: log likelihood ratio (regression) and its boundary</title>'
        f'<line x1="{_PAD}" x2="{_W - _PAD}" y1="{py(boundary):.1f}" y2="{py(boundary):.1f}" '
        'stroke="#b00" stroke-dasharray="4 3"/>'
        f'<line x1="{_PAD}" x2="{_W - _PAD}" y1="{py(0):.1f}" y2="{py(0):.1f}" stroke="#999"/>'
        f'<polyline fill="none" stroke="#225" stroke-width="1.5" points="{points}"/>'
        f'<text x="{_PAD}" y="14" font-size="11">{escape(name)}</text>'
        f'<text x="{_W - _PAD}" y="{_H - 6}" font-size="10" text-anchor="end">'
        f"episodes (max {int(x_hi)})</text></svg>")


def _run_part(run_id: str, state: dict[str, Any]) -> str:
    looks = state.get("looks") or []
    names = list((looks[-1]["slices"] if looks else {}).keys())
    figures = []
    for name in names:
        xs = [float(look["episodes"]) for look in looks if name in look["slices"]]
        ys = [float(look["slices"][name]["statistic"]) for look in looks
              if name in look["slices"]]
        boundary = float(looks[-1]["slices"][name]["boundary"])
        figures.append(f"<figure>{statistic_svg(name, xs, ys, boundary)}</figure>")
    head = "".join(f"<th scope='col'>{escape(n)} <span class='sub'>log E / boundary</span></th>"
                   for n in names)
    rows = []
    for look in looks:
        cells = "".join(
            f"<td class='num'>{look['slices'][n]['statistic']:.2f} / "
            f"{look['slices'][n]['boundary']:.2f}</td>" if n in look["slices"] else "<td>-</td>"
            for n in names)
        rows.append(f"<tr><td class='num'>{look['episodes']}</td>"
                    f"<td>{escape(str(look.get('decision') or 'continue'))}</td>{cells}</tr>")
    sentence = state.get("sentence") or "undecided so far"
    return (
        f"<h3>{escape(run_id)} against {escape(str(state.get('against')))}</h3>"
        f"<p>{escape(sentence)} ({len(looks)} look(s), alpha {state.get('alpha')}, design "
        f"effect {state.get('effect')}, maximum {state.get('max_episodes')} episodes).</p>"
        + "".join(figures)
        + "<div class='table-wrap'><table><thead><tr><th scope='col'>episodes</th>"
        f"<th scope='col'>decision</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody>"
        "</table></div>")


def sequential_section(runs: Sequence[Any]) -> str | None:
    """The section for the runs with recorded looks, or None when none has any.

    ``runs``: report run views (``run_id`` and ``manifest.extra``).

    >>> from types import SimpleNamespace as NS
    >>> look = {"episodes": 3, "decision": None, "slices": {"all": {"statistic": 0.4,
    ...         "boundary": 3.0, "verdict": "inconclusive"}}}
    >>> run = NS(run_id="c", manifest=NS(extra={"sequential": {"looks": [look]}}))
    >>> "statistic and boundary" in sequential_section([run])
    True
    >>> sequential_section([NS(run_id="b", manifest=NS(extra={}))]) is None
    True
    """
    parts = [_run_part(v.run_id, v.manifest.extra["sequential"]) for v in runs
             if isinstance(v.manifest.extra.get("sequential"), dict)]
    if not parts:
        return None
    return ('<section id="sequential"><h2>Until decided: looks</h2>'
            "<p class='note'>Each look compared the episodes so far with the anytime-valid "
            "test; a slice is decided when its statistic reaches its boundary (dashed).</p>"
            + "".join(parts) + "</section>")
