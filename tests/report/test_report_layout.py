"""The report's tables and numbers as a reader meets them: compact cells, readable precision,
the comparison options, and no warning from any plot on tiny or broken runs."""

from __future__ import annotations

import html
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

import evalband
from evalband.cli import main
from evalband.errors import PanelMismatchError
from evalband.report import render_html, render_markdown, write_report
from evalband.store import open_store
from testkit import coin_panel


def text_of(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def slice_table(page: str) -> str:
    match = re.search(r'<section id="slices">.*?<table class="sortable slices">(.*?)</table>',
                      page, re.DOTALL)
    assert match is not None, "no slice table"
    return match.group(1)


def mean_success_time(store: Path, run_id: str) -> float:
    """The oracle: the stored episodes' mean time among successes, via pandas."""
    with open_store(store) as st:
        frame = st.episodes(run_id)
    return float(frame.loc[frame["outcome"] == "success", "time_to_success_s"].mean())


# -------------------------------------------------------------------- the comparison table


def test_slice_table_cells_are_compact(labs) -> None:
    page = labs.page(*labs.hidden)
    table = slice_table(page)
    headers = [text_of(h).split()[0] for h in re.findall(r"<th[^>]*>(.*?)</th>", table)]
    # the decision's columns first, in this order; descriptive statistics follow them
    assert headers[:9] == ["slice", "Δ", "verdict", "n", "baseline", "candidate", "pairs", "p",
                           "Holm"]
    c = evalband.compare(*labs.hidden, store=labs.store)
    rows = re.findall(r"<tr class=\"([^\"]+)\">(.*?)</tr>", table, re.DOTALL)
    assert len(rows) == len(c.slice_rows)
    for (cls, row), sc in zip(rows, c.slice_rows, strict=True):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.DOTALL)
        # the verdict cell: the short word first, the reason as a second line, all of it
        # in the tooltip
        verdict = re.search(r'<td class="verdict-cell" title="([^"]*)">(.*?)</td>', row)
        assert verdict is not None
        assert re.search(r'<span class="word">([^<]*)</span>', verdict.group(2)).group(1) \
            == sc.verdict
        assert html.unescape(verdict.group(1)).startswith(sc.verdict)
        assert sc.verdict.replace(" ", "-") in cls.split()
        # a rate and its band share one cell; the band is a second, smaller line
        k, n = sc.successes_baseline, sc.n_baseline
        low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
        assert cells[4] == (f'{100 * k / n:.1f}% <span class="sub">'
                            f"[{100 * low:.1f}, {100 * high:.1f}]</span>")


def test_only_the_regressed_slice_is_red_and_its_reason_is_kept(labs) -> None:
    table = slice_table(labs.page(*labs.hidden))
    regressed = re.findall(r'<tr class="regressed[^"]*">(.*?)</tr>', table, re.DOTALL)
    assert len(regressed) == 1 and "embodiment=franka_panda" in regressed[0].replace("<wbr>", "")
    calm = next(r for r in re.findall(r"<tr[^>]*>(.*?)</tr>", table, re.DOTALL)
                if "mobile_manipulator" in r.replace("<wbr>", ""))
    assert "would catch a drop of" in calm or "too few episodes" in calm  # prospective power


# -------------------------------------------------------------------- precision


def test_times_are_shown_with_sensible_precision(labs, capsys) -> None:
    run_id = labs.reach[1]
    mean = mean_success_time(labs.store, run_id)
    page = text_of(labs.page(run_id))
    md = render_markdown([run_id], labs.store)
    for text in (page, md):
        assert f"Mean time among successes: {mean:.2f} s." in text
        assert not re.search(r"\d\.\d{4,} s\b", text), "a time with four or more decimals"
    # the terminal's `show` keeps its six decimals (scripts parse it)
    assert main(["show", run_id, "--store", str(labs.store)]) == 0
    assert f"mean time among successes: {mean:.6f} s" in capsys.readouterr().out


# -------------------------------------------------------------------- options


def test_confidence_reaches_every_band_html_and_markdown(labs) -> None:
    base, cand = labs.hidden
    page = render_html([base, cand], labs.store, confidence=0.8)
    text = text_of(page)
    c = evalband.compare(base, cand, store=labs.store, confidence=0.8)
    assert text.count("80% Wilson") >= 2 and "95% Wilson" not in text
    for row in c.slice_rows:
        k, n = row.successes_candidate, row.n_candidate
        low, high = proportion_confint(k, n, alpha=0.2, method="wilson")
        assert f"{100 * k / n:.1f}% [{100 * low:.1f}, {100 * high:.1f}]" in text
    assert "with 80% Wilson band" in page  # the forest plot's axis
    md = render_markdown([base, cand], labs.store, confidence=0.8)
    assert "| Δ points (80%, Holm-adjusted) |" in md
    d = next(r for r in c.slice_rows if r.name == "embodiment=franka_panda").delta
    assert f"{100 * d.estimate:+.1f} [{100 * d.low:+.1f}, {100 * d.high:+.1f}]" in md


@pytest.fixture(scope="module")
def mismatched(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mismatch") / "s.sqlite"
    with open_store(path) as st:
        evalband.run_panel(coin_panel(episodes=6), "evalband.policies._builtin:zero_action", st,
                           run_id="a")
        evalband.run_panel(coin_panel(episodes=6, seed=99),
                           "evalband.policies._builtin:zero_action", st, run_id="b")
    return path


def test_panel_mismatch_is_refused_unless_allowed_and_then_said(mismatched: Path,
                                                                tmp_path: Path) -> None:
    for render in (render_html, render_markdown):
        with pytest.raises(PanelMismatchError):
            render(["a", "b"], mismatched)
    page = render_html(["a", "b"], mismatched, allow_panel_mismatch=True)
    assert "PANEL MISMATCH" in page and page.index("PANEL MISMATCH") < page.index('id="slices"')
    md = render_markdown(["a", "b"], mismatched, allow_panel_mismatch=True)
    assert md.startswith("> **Panel mismatch**")
    written = write_report(["a", "b"], mismatched, html=tmp_path / "r.html",
                           allow_panel_mismatch=True)
    assert "PANEL MISMATCH" in written[0].read_text()


# -------------------------------------------------------------------- no warnings


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One- and five-episode reaching runs, and a five-episode run whose policy crashes."""
    path = tmp_path_factory.mktemp("tiny") / "s.sqlite"
    base = evalband.load_panel("reach1d").model_dump(mode="json", exclude_defaults=True)
    with open_store(path) as st:
        for n in (1, 5):
            panel = evalband.load_panel({**base, "name": f"reach1d-{n}", "episodes": n})
            for policy in ("reach1d:baseline", "reach1d:damped", "testkit:raising"):
                evalband.run_panel(panel, policy, st,
                                   run_id=f"{n}-{policy.split(':')[1]}")
    return path


@pytest.mark.parametrize("sources", [
    ["1-damped"], ["1-baseline", "1-damped"], ["5-damped"], ["5-baseline", "5-damped"],
    ["5-raising"], ["5-damped", "5-raising"], ["5-raising", "5-damped"],
])
def test_tiny_and_broken_runs_render_without_a_warning(tiny: Path, sources: list[str]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib's layout and limit warnings included
        page = render_html(sources, tiny)
        render_markdown(sources, tiny)
    assert page.count("<svg") >= 2 and "<figure" in page


def test_a_run_without_counted_episodes_marks_no_n_on_the_power_plot(tiny: Path) -> None:
    page = render_html(["5-damped", "5-raising"], tiny)
    caption = re.search(r'<figure id="fig-power">.*?<figcaption>(.*?)</figcaption>', page,
                        re.DOTALL)
    assert caption is not None and "no counted episode" in caption.group(1)
    assert "this run: n = 0" not in page


def test_one_episode_run_mean_time_matches_the_store(tiny: Path) -> None:
    mean = mean_success_time(tiny, "1-damped")
    text = text_of(render_html(["1-damped"], tiny))
    expected = "No successes" if np.isnan(mean) else f"{mean:.2f} s"
    assert f"Mean time among successes: {expected}." in text
