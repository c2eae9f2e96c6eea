"""The report section of a ``run --until-decided`` run: its looks, statistic paths and boundary.

For each run whose manifest holds ``extra["sequential"]`` (written by
:class:`evalband.run._until.SequentialMonitor`), the decision sentence, one small inline SVG
per slice with the path of the regression statistic (log likelihood ratio) over the looks and
its boundary as a dashed line, and the table of looks. No plotting library, no network. The
section's markup is a block of ``templates/report.html.j2``; this module gives it its data
(:func:`sequential_looks`) and draws the paths (:func:`statistic_svg`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from markupsafe import Markup

__all__ = ["RunLooks", "sequential_looks", "statistic_svg"]

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


@dataclass(frozen=True)
class RunLooks:
    """What the section shows of one run's recorded looks (``extra["sequential"]``).

    ``figures`` are the slices' statistic paths (:func:`statistic_svg`, trusted markup);
    ``looks`` the recorded looks as they are (episodes, decision, per slice statistic and
    boundary); ``alpha``, ``effect`` and ``max_episodes`` the recorded design (``None`` when
    not recorded).
    """

    run_id: str
    against: str
    sentence: str
    alpha: Any
    effect: Any
    max_episodes: Any
    names: tuple[str, ...]
    figures: tuple[Markup, ...]
    looks: tuple[dict[str, Any], ...]


def _run_looks(run_id: str, state: dict[str, Any]) -> RunLooks:
    from markupsafe import Markup

    looks = state.get("looks") or []
    names = tuple((looks[-1]["slices"] if looks else {}).keys())
    figures = []
    for name in names:
        xs = [float(look["episodes"]) for look in looks if name in look["slices"]]
        ys = [float(look["slices"][name]["statistic"]) for look in looks
              if name in look["slices"]]
        boundary = float(looks[-1]["slices"][name]["boundary"])
        figures.append(Markup(statistic_svg(name, xs, ys, boundary)))
    return RunLooks(run_id, str(state.get("against")), state.get("sentence") or "undecided so far",
                    state.get("alpha"), state.get("effect"), state.get("max_episodes"), names,
                    tuple(figures), tuple(looks))


def sequential_looks(runs: Sequence[Any]) -> list[RunLooks]:
    """The looks of the runs that recorded any (``run --until-decided``), for the section.

    ``runs``: report run views (``run_id`` and ``manifest.extra``). Empty when no run has
    looks (the report then has no such section).

    >>> from types import SimpleNamespace as NS
    >>> look = {"episodes": 3, "decision": None, "slices": {"all": {"statistic": 0.4,
    ...         "boundary": 3.0, "verdict": "inconclusive"}}}
    >>> run = NS(run_id="c", manifest=NS(extra={"sequential": {"looks": [look]}}))
    >>> (part,) = sequential_looks([run])
    >>> part.names, part.sentence, "statistic and boundary" in part.figures[0]
    (('all',), 'undecided so far', True)
    >>> sequential_looks([NS(run_id="b", manifest=NS(extra={}))])
    []
    """
    return [_run_looks(v.run_id, v.manifest.extra["sequential"]) for v in runs
            if isinstance(v.manifest.extra.get("sequential"), dict)]
