"""Write report files: the HTML page and the Markdown summary from one reading of the runs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from evalband.errors import InvalidParameterError

if TYPE_CHECKING:
    from evalband.analysis import Comparison
    from evalband.store import RunStore

__all__ = ["write_report"]


def write_report(
    sources: Sequence[str],
    store: RunStore | str | Path | None = None,
    *,
    html: Path | None = None,
    md: Path | None = None,
    command: str | None = None,
    allow_panel_mismatch: bool = False,
    confidence: float = 0.95,
    sequential: bool = False,
    comparisons: Sequence[Comparison] | None = None,
) -> list[Path]:
    """Write the HTML report and/or the Markdown summary; the runs are read once.

    Args:
        sources: run ids (in ``store``) or bundle directories; the first is the baseline.
        store: a run store, a path to one, or ``None`` (bundles only).
        html: where to write the HTML page (parent folders are created), or ``None``.
        md: where to write the Markdown, or ``None``.
        command: the command line that asked for the report (shown in the page).
        allow_panel_mismatch: compare runs of different panels anyway (the page says so).
        confidence: level of every band.
        sequential: the anytime-valid verdict (as ``evalband compare --sequential``).
        comparisons: the comparisons of these runs, already computed (rendered as given);
            else the result ``evalband compare`` stored, while current, else computed.

    Returns:
        The paths written, HTML first.

    Raises:
        InvalidParameterError: neither ``html`` nor ``md`` given.

    >>> import tempfile, evalband
    >>> from pathlib import Path
    >>> d = Path(tempfile.mkdtemp())
    >>> store = evalband.open_store(d / "s.sqlite")
    >>> _ = evalband.run_panel(evalband.load_panel("reach1d"), "reach1d:damped", store,
    ...                        run_id="damped")
    >>> [p.name for p in write_report(["damped"], store, md=d / "r.md")]
    ['r.md']
    """
    from evalband.report._data import collect
    from evalband.report._html import report_html
    from evalband.report._markdown import report_markdown

    if html is None and md is None:
        raise InvalidParameterError(
            "write_report needs a destination: html=PATH and/or md=PATH; got neither"
        )
    data = collect(sources, store, command=command, confidence=confidence,
                   allow_panel_mismatch=allow_panel_mismatch, sequential=sequential,
                   comparisons=comparisons)
    written = []
    for path, render in ((html, report_html), (md, report_markdown)):
        if path is None:
            continue
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render(data), encoding="utf-8")
        written.append(target)
    return written
