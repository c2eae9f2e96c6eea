"""Make the report golden files: terminal, Markdown and HTML of the seed labs' comparisons.

The golden outputs in this folder were made ONCE by the previous renderers (the slice table
written out three times, HTML from f-strings, at commit b28c81b) and are the reference the
current renderers must reproduce (``tests/report/test_report_golden.py``):

- ``runs/<name>/``: the runs as artifact bundles, so the test renders the same episodes
  without replaying anything (reach1d lab: ``reach1d:baseline`` and ``reach1d:damped`` on the
  ``reach1d`` panel; hidden-regression lab: seed 4, 200 episodes per slice; the PushT
  harness at ``--quick`` sizes, seed 0: ``weak`` and ``strong``);
- ``<case>.term.txt`` (plain, as ``evalband compare`` prints to a pipe),
  ``<case>.term.ansi`` (a 120-column colour terminal), ``<case>.md`` and ``<case>.html``.

Run from the repository root with the renderers to freeze (``--runs`` also re-makes the
bundles, which needs the ``bc`` and ``sim`` extras for the harness):

    PYTHONPATH=src python tests/report/golden/make_golden.py [--runs]

:func:`render_case` and :func:`normalise_html` are what the test calls too. (When the
goldens were made, :func:`render_case` called the renderers without ``columns=``: they had
no such argument and showed exactly :data:`GOLDEN_COLUMNS`. Do not re-run this script to make
a failing golden test pass: the files are the previous renderers' output.)

One change since: the reach1d bundles were recorded when the batch simulator stored no
``extra["metrics"]``, so only each run's 8 traced episodes carried them. The other 56
episodes' metrics were filled in with what the runner now records for them (checked episode
by episode against a fresh run), the manifests' sha256 updated, and only the metric rows'
numbers of the ``reach1d`` and ``reach1d-run`` goldens replaced by the re-rendered ones.
"""

from __future__ import annotations

import io
import re
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUNS = HERE / "runs"

CASES: dict[str, tuple[tuple[str, ...], bool]] = {
    # case name -> (bundle names, baseline first; sequential verdict)
    "reach1d": (("reach1d-baseline", "reach1d-damped"), False),
    "hidden": (("hidden-baseline", "hidden-candidate"), False),
    "hidden-sequential": (("hidden-baseline", "hidden-candidate"), True),
    "pusht": (("pusht-weak", "pusht-strong"), False),
    "reach1d-run": (("reach1d-damped",), False),
}

GOLDEN_COLUMNS = ("slice", "n", "baseline", "candidate", "delta", "pairs", "p", "p_holm", "log_e",
                  "boundary", "verdict")
"""The slice-table columns the previous renderers showed (keys of
``evalband.report._table.COLUMNS``). The current renderers are asked for these only, so a
column added later does not change the golden bytes; its own test shows it."""

_SVG = re.compile(r"<svg\b.*?</svg>", re.S)


def normalise_html(page: str) -> str:
    """The page with each inline SVG plot replaced by a placeholder.

    Plots are drawn by matplotlib (their bytes follow its version) and not by the renderers
    under test; every other byte is kept. Bundle paths are written relative to this folder
    by :func:`render_case`, so nothing else varies between machines.
    """
    return _SVG.sub("<svg>(plot)</svg>", page)


def _terminal(renderables: list[object], *, tty: bool) -> str:
    from rich.console import Console

    out = io.StringIO()
    console = Console(file=out, highlight=False, soft_wrap=True, width=120 if tty else 200,
                      force_terminal=tty, color_system="truecolor" if tty else None)
    for item in renderables:
        console.print(item)
    return out.getvalue()


def render_case(case: str) -> dict[str, str]:
    """The outputs of one case: ``{suffix: text}`` (``term.txt``, ``term.ansi``, ``md``, ``html``).

    Rendered from the bundles under ``runs/`` with paths relative to this folder (the
    working directory is switched here while rendering).
    """
    import os

    from evalband.report._data import collect
    from evalband.report._html import report_html
    from evalband.report._markdown import report_markdown
    from evalband.report._terminal import comparison_renderables, slice_summary_table

    names, sequential = CASES[case]
    sources = [f"runs/{n}" for n in names]
    cwd = os.getcwd()
    os.chdir(HERE)
    try:
        given = None
        if sequential:  # the goldens' anytime-valid statistics: the design-free construction
            from evalband.analysis._sequential import compare_sequential

            runs = collect(sources, None).runs
            given = [compare_sequential(runs[0].data, v.data) for v in runs[1:]]
        data = collect(sources, None, command="evalband report (golden)", sequential=sequential,
                       comparisons=given)
        cols = GOLDEN_COLUMNS
        out: dict[str, str] = {"md": report_markdown(data, columns=cols),
                               "html": normalise_html(report_html(data, columns=cols))}
        for tty, suffix in ((False, "term.txt"), (True, "term.ansi")):
            if data.comparisons:
                items: list[object] = [
                    x for c in data.comparisons
                    for x in comparison_renderables(c, plain=not tty, columns=cols)]
            else:
                items = [slice_summary_table(data.runs[0].slices, plain=not tty)]
            out[suffix] = _terminal(items, tty=tty)
    finally:
        os.chdir(cwd)
    return out


def make_runs() -> None:
    """Run the labs and the harness into a scratch store and export their runs as bundles."""
    import contextlib
    import json
    import shutil

    from evalband.cli import main
    from evalband.store import RunStore
    from evalband.store._bundle import export_bundle

    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "s.sqlite"
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert main(["lab", "reach1d", "--store", str(store), "--json"]) == 0
        reach = json.loads(buf.getvalue())["runs"]
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            main(["lab", "hidden-regression", "--store", str(store), "--json"])
        hidden = json.loads(buf.getvalue())
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert main(["harness", "pusht", "--quick", "--workers", "1", "--store", str(store),
                         "--out", str(Path(tmp) / "ckpt"), "--json"]) == 0
        pusht = json.loads(buf.getvalue())["runs"]
        ids = {
            "reach1d-baseline": reach["reach1d:baseline"]["run_id"],
            "reach1d-damped": reach["reach1d:damped"]["run_id"],
            "hidden-baseline": hidden["baseline"],
            "hidden-candidate": hidden["candidate"],
            "pusht-weak": pusht["weak"],
            "pusht-strong": pusht["strong"],
        }
        shutil.rmtree(RUNS, ignore_errors=True)
        with RunStore(store, read_only=True) as st:
            for name, run_id in ids.items():
                export_bundle(st, run_id, RUNS / name)


def main(argv: list[str]) -> None:
    """Write the golden files (and the bundles first with ``--runs``)."""
    if "--runs" in argv:
        make_runs()
    for case in CASES:
        for suffix, text in render_case(case).items():
            (HERE / f"{case}.{suffix}").write_text(text, encoding="utf-8")
            print(f"wrote {case}.{suffix} ({len(text):,} chars)")


if __name__ == "__main__":
    main(sys.argv[1:])
