"""The comparison's slice table, defined once for the terminal, Markdown and HTML renderers.

:data:`COLUMNS` is an ordered tuple of :class:`Column` specs: what each column is called in
each renderer, how its value is read off a :class:`~evalband.analysis.SliceComparison` and
formatted (:mod:`evalband.report._format`), and which renderers show it. The terminal and
Markdown show the columns in this order; the HTML table puts :data:`HTML_FIRST` first (the
difference and the verdict, next to the slice name) and the rest in this order.

Adding a column to ``evalband compare`` is adding one :class:`Column` here, or giving a
registered per-slice statistic (:mod:`evalband.analysis._statistics`) a ``column``: its
columns stand where :data:`COLUMNS` has the registered statistics, in registration order.

>>> [c.key for c in COLUMNS if c.markdown]
['slice', 'n', 'baseline', 'candidate', 'delta', 'p', 'p_holm', 'time_delta', 'verdict']
>>> [c.key for c in html_columns()]
['slice', 'delta', 'verdict', 'n', 'baseline', 'candidate', 'pairs', 'p', 'p_holm', 'time_delta']
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from evalband.analysis._statistics import STATISTICS
from evalband.report import _format as fmt

if TYPE_CHECKING:
    from evalband.analysis import SliceComparison
    from evalband.analysis._statistics import SliceStatistic
    from evalband.stats import Difference, Interval

__all__ = [
    "Column",
    "COLUMNS",
    "OPTIONAL",
    "filled",
    "HTML_FIRST",
    "Headings",
    "headings",
    "html_columns",
    "markdown_columns",
    "terminal_columns",
    "is_sequential",
    "verdict_parts",
    "verdict_text",
]


@dataclass(frozen=True)
class Headings:
    """What a header may say: the band level (``95%``) and how the difference is adjusted."""

    level: str
    interval: str


@dataclass(frozen=True)
class Column:
    """One column of the slice table.

    Attributes:
        key: a stable name (``columns=`` of the renderers selects by it).
        text: the cell's text, formatted (the terminal escapes it, HTML escapes it).
        sort: the number a HTML table sorts the column by (``None``: not numeric there).
        kind: ``name`` (the slice), ``verdict`` (styled in each renderer) or ``number``
            (right-aligned).
        band: HTML writes ``value [band]`` as the value over its band (a second line).
        terminal: the terminal header (``str.format`` with :class:`Headings` fields), or
            ``None`` when the terminal does not show it.
        markdown: the Markdown header (same placeholders), or ``None``.
        html: the HTML header and its second line, or ``None``.
        verdicts: which comparisons the terminal shows it for: ``fixed`` (the fixed-n
            verdict), ``sequential`` (the anytime-valid one) or ``both``. Markdown and HTML
            show a column for either.
    """

    key: str
    text: Callable[[SliceComparison], str]
    sort: Callable[[SliceComparison], float | None] = lambda _: None
    kind: Literal["name", "number", "verdict"] = "number"
    band: bool = False
    terminal: str | None = None
    markdown: str | None = None
    html: tuple[str, str] | None = None
    verdicts: Literal["both", "fixed", "sequential"] = "both"


# ---------------------------------------------------------------------------- cells


def verdict_parts(row: SliceComparison) -> tuple[str, str]:
    """A slice's verdict word and what backs it: its reasons, or what its n could resolve.

    The HTML table shows the word and the detail on a second line; :func:`verdict_text`
    joins them for the terminal and Markdown.
    """
    verdict = str(row.verdict)
    if row.reasons:
        return verdict, "; ".join(row.reasons)
    if row.verdict in ("regressed", "improved"):
        return verdict, "" if row.primary else "secondary slice: does not decide the verdict"
    if row.effect is None:
        return verdict, ""
    unit = "pairs" if row.pairing == "paired" else "episodes per arm"
    parts = []
    basis = row.power_basis
    base_rate = None if basis is None else basis.base_rate
    base = f" from {100 * base_rate:.0f}%" if base_rate is not None else ""
    if row.detectable_drop is not None:
        parts.append(f"would catch a drop of >= {100 * row.detectable_drop:.3g} points{base}")
    elif base_rate == 0:
        return verdict, "a rate of 0% cannot drop"
    else:
        parts.append(f"too few episodes to catch any drop{base}")
    if row.episodes_for_effect is not None:
        parts.append(f"~{row.episodes_for_effect} {unit} to catch a "
                     f"{100 * row.effect:.0f}-point drop")
    if basis is not None and basis.correlation is not None:
        parts.append(f"80% power, pairs correlated as observed (phi {basis.correlation:.2f})")
    elif basis is not None:
        parts.append("80% power")
    return verdict, "; ".join(parts)


def verdict_text(row: SliceComparison) -> str:
    """A slice's verdict in words, with its reason or what its n could resolve."""
    word, detail = verdict_parts(row)
    if not detail:
        return word
    return f"{word}: {detail}" if row.reasons else f"{word} ({detail})"


def is_sequential(rows: Sequence[SliceComparison]) -> bool:
    """Whether the rows carry the anytime-valid (sequential) test."""
    return any(r.test is not None and r.test.is_sequential for r in rows)


def _log_parts(row: SliceComparison) -> tuple[str, str, str]:
    """``log E`` (regression, improvement) and the boundary, each printed beside the other.

    Two decimals, more where two decimals would print a ratio and the boundary alike though
    one is below the other (:func:`~evalband.report._format.ordered`): the printed ``log E``
    reaches the printed boundary exactly when the test decided.
    """
    test = row.test
    threshold = None if test is None else test.threshold
    bound = None if threshold is None else math.log(threshold)
    logs = [None if test is None or v is None else math.log(max(float(v), 1e-300))
            for v in ((test.e_regression, test.e_improvement) if test is not None
                      else (None, None))]
    digits = 2
    for value in logs:
        if value is not None and bound is not None:
            digits = max(digits, len(fmt.ordered(value, bound)[0].partition(".")[2]))
    out = ["-" if v is None else f"{v:.{digits}f}" for v in logs]
    return out[0], out[1], "-" if bound is None else f"{bound:.{digits}f}"


def _log_e(row: SliceComparison) -> str:
    """``log E`` of a sequential test, regression / improvement (see :func:`_log_parts`)."""
    if row.test is None:
        return "-/-"
    reg, imp, _ = _log_parts(row)
    return f"{reg}/{imp}"


def _boundary(row: SliceComparison) -> str:
    return _log_parts(row)[2]


def _estimate(band: Interval | Difference | Any | None) -> float | None:
    """The estimate of an interval (``None`` for none)."""
    return None if band is None else band.estimate


def _pairs(row: SliceComparison) -> str:
    if row.pairing != "paired":
        return "unpaired"
    return f"{row.pairs.get('candidate_only', 0)} / {row.pairs.get('baseline_only', 0)}"


def _statistic_column(stat: SliceStatistic) -> Column:
    """The column of a registered statistic: its value read off the row, formatted."""
    spec = stat.column
    assert spec is not None
    formatter = getattr(fmt, spec.format)
    name = stat.name

    def value(row: SliceComparison) -> Any:
        return row.extras.get(name)

    def sort(row: SliceComparison) -> float | None:
        got = value(row)
        return _estimate(got) if spec.band else got

    return Column(spec.key, lambda r: str(formatter(value(r))), sort, band=spec.band,
                  terminal=spec.terminal, markdown=spec.markdown, html=spec.html)


# ---------------------------------------------------------------------------- the table

COLUMNS: tuple[Column, ...] = (
    Column("slice", lambda r: r.name, kind="name",
           terminal="slice", markdown="slice", html=("slice", "")),
    Column("n", lambda r: f"{r.n_baseline}/{r.n_candidate}", lambda r: r.n_baseline,
           terminal="n", markdown="n", html=("n", "base/cand")),
    Column("baseline", lambda r: fmt.rate(r.rate_baseline),
           lambda r: _estimate(r.rate_baseline), band=True,
           terminal="baseline", markdown="baseline", html=("baseline", "{level} Wilson")),
    Column("candidate", lambda r: fmt.rate(r.rate_candidate),
           lambda r: _estimate(r.rate_candidate), band=True,
           terminal="candidate", markdown="candidate", html=("candidate", "{level} Wilson")),
    Column("delta", lambda r: fmt.points(r.delta), lambda r: _estimate(r.delta), band=True,
           terminal="delta points ({interval})", markdown="Δ points ({level}, Holm-adjusted)",
           html=("Δ points", "Holm-adjusted, family {level}")),
    Column("pairs", _pairs,
           lambda r: r.pairs.get("candidate_only") if r.pairing == "paired" else None,
           html=("pairs", "cand-only / base-only")),
    Column("p", lambda r: fmt.p_value(r.p_value), lambda r: r.p_value,
           terminal="p", markdown="p", html=("p", "exact"), verdicts="fixed"),
    Column("p_holm", lambda r: fmt.p_value(r.p_holm), lambda r: r.p_holm,
           terminal="Holm p", markdown="Holm p", html=("Holm p", "all slices"),
           verdicts="fixed"),
    *(_statistic_column(stat) for stat in STATISTICS if stat.column is not None),
    Column("log_e", _log_e, terminal="log E", verdicts="sequential"),
    Column("boundary", _boundary, terminal="boundary", verdicts="sequential"),
    Column("verdict", verdict_text, kind="verdict",
           terminal="verdict", markdown="verdict", html=("verdict", "")),
)
"""The slice table's columns, in the terminal's and Markdown's order."""

HTML_FIRST = ("slice", "delta", "verdict")
"""The columns the HTML table shows first (the rest follow in :data:`COLUMNS` order)."""


def headings(confidence: float, sequential: bool) -> Headings:
    """The header placeholders for a comparison at ``confidence``."""
    return Headings(level=fmt.level(confidence),
                    interval="confidence sequence" if sequential else "Holm-adjusted")


def _has_time_delta(row: SliceComparison) -> bool:
    return row.time_to_success_delta_s is not None


OPTIONAL: dict[str, Callable[[SliceComparison], bool]] = {"time_delta": _has_time_delta}
"""Columns shown only when some row has them: a return-rule panel (success judged at the
episode's end) has no time to success, and a column of ``-`` would say nothing."""


def filled(keys: Sequence[str] | None, comparisons: Sequence[Any]) -> list[str] | None:
    """``keys`` (all by default) less the :data:`OPTIONAL` columns no row of these fills.

    ``None`` when nothing is left out and all were asked for (every renderer's default).
    """
    chosen = [c.key for c in _chosen(keys)]
    empty = {key for key, has in OPTIONAL.items()
             if not any(has(row) for c in comparisons for row in c.slice_rows)}
    if keys is None and not empty & set(chosen):
        return None
    return [key for key in chosen if key not in empty]


def _chosen(keys: Sequence[str] | None) -> tuple[Column, ...]:
    return COLUMNS if keys is None else tuple(c for c in COLUMNS if c.key in keys)


def terminal_columns(sequential: bool, keys: Sequence[str] | None = None) -> list[Column]:
    """The terminal's columns for a fixed-n or a sequential comparison."""
    mode = "sequential" if sequential else "fixed"
    return [c for c in _chosen(keys) if c.terminal is not None and c.verdicts in ("both", mode)]


def markdown_columns(keys: Sequence[str] | None = None) -> list[Column]:
    """The Markdown table's columns."""
    return [c for c in _chosen(keys) if c.markdown is not None]


def html_columns(keys: Sequence[str] | None = None) -> list[Column]:
    """The HTML table's columns: :data:`HTML_FIRST`, then the rest in order."""
    shown = [c for c in _chosen(keys) if c.html is not None]
    first = [c for k in HTML_FIRST for c in shown if c.key == k]
    return first + [c for c in shown if c.key not in HTML_FIRST]
