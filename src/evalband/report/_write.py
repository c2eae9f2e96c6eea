"""Write report files: the HTML page and the Markdown summary from one reading of the runs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from evalband._util.files import write_text_whole
from evalband.errors import InvalidParameterError

if TYPE_CHECKING:
    from evalband.analysis import Comparison
    from evalband.store import RunStore

__all__ = ["render_report", "write_report"]


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
    progress: Callable[[str, int, int], None] | None = None,
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
        progress: called as ``progress(stage, episodes done, episodes in all)`` while the
            runs are read (then ``("rendering", 0, 1)`` and ``("rendering", 1, 1)``).
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
    if html is None and md is None:
        raise InvalidParameterError(
            "write_report needs a destination: html=PATH and/or md=PATH; got neither"
        )
    html_text, md_text = render_report(
        sources, store, html=html is not None, md=md is not None, command=command,
        allow_panel_mismatch=allow_panel_mismatch, confidence=confidence, sequential=sequential,
        progress=progress, comparisons=comparisons)
    written = []
    for path, text in ((html, html_text), (md, md_text)):
        if path is None or text is None:
            continue
        target = Path(path)
        write_text_whole(target, text)
        written.append(target)
    return written


def render_report(
    sources: Sequence[str],
    store: RunStore | str | Path | None = None,
    *,
    html: bool = False,
    md: bool = False,
    command: str | None = None,
    allow_panel_mismatch: bool = False,
    confidence: float = 0.95,
    sequential: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
    comparisons: Sequence[Comparison] | None = None,
) -> tuple[str | None, str | None]:
    """The HTML page and the Markdown summary asked for (``None`` the other); runs read once.

    What :func:`write_report` writes, for a caller that writes the files itself (the
    command line's ``write_outputs``, which also says where). The options are
    :func:`write_report`'s.
    """
    from evalband.report._data import collect
    from evalband.report._html import report_html
    from evalband.report._markdown import report_markdown

    data = collect(sources, store, command=command, confidence=confidence,
                   allow_panel_mismatch=allow_panel_mismatch, sequential=sequential,
                   comparisons=comparisons, progress=progress)
    if progress is not None:
        progress("rendering", 0, 1)
    texts = (report_html(data) if html else None, report_markdown(data) if md else None)
    if progress is not None:
        progress("rendering", 1, 1)
    return texts
