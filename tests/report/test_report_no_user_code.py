"""Reports and the viewer render stored results only: no runner, env or policy is imported."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")

# Renders every report and viewer page of the given runs in a fresh interpreter, then says
# which modules of the runner, the envs and the policies it imported.
RENDER = textwrap.dedent("""
    import json, sys, urllib.request
    from evalband.report import render_html, render_markdown
    from evalband.report._data import collect
    from evalband.store import RunStore
    from evalband.view import serve_in_background

    store, runs = sys.argv[1], sys.argv[2:]
    pages = {}
    for sources in ([runs[0]], runs):
        pages["html " + " ".join(sources)] = render_html(sources, store, command="test")
        pages["md " + " ".join(sources)] = render_markdown(sources, store)
    with RunStore(store, read_only=True) as st:
        compared = [c["comparison_id"] for c in st.comparisons()]
        source = collect(runs, st).comparisons_from  # the stored result, not recomputed
    paths = ["/", *(f"/run/{r}" for r in runs), f"/run/{runs[0]}/episodes",
             *(f"/compare/{c}" for c in compared)]
    with serve_in_background(store) as server:
        for path in paths:
            with urllib.request.urlopen(server.url + path, timeout=120) as response:
                assert response.status == 200, path
                pages["GET " + path] = response.read().decode()
    bad = sorted(m for m in sys.modules
                 if m.split(".")[:2] in (["evalband", "run"], ["evalband", "envs"],
                                         ["evalband", "policies"]))
    print(json.dumps({"imported": bad, "pages": pages, "compared": len(compared),
                      "source": source}))
""")


def render_fresh(store: Path, runs: list[str], cwd: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": SRC}
    out = subprocess.run([sys.executable, "-c", RENDER, str(store), *runs], cwd=cwd, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)  # type: ignore[no-any-return]


@pytest.mark.slow
def test_reports_and_the_viewer_import_no_runner_env_or_policy(labs, tmp_path) -> None:
    result = render_fresh(labs.store, list(labs.reach), tmp_path)
    assert result["imported"] == []
    assert result["compared"] >= 1  # the lab records its comparison: /compare/ was served
    assert result["source"] == "stored"  # ... with its result, which the pages render
    both = " ".join(labs.reach)
    assert "fig-traces" in result["pages"][f"html {both}"]
    assert any("fig-traces" in p for k, p in result["pages"].items() if k.startswith("GET /run"))


POLICY = textwrap.dedent("""
    import numpy as np

    def act(obs):
        return np.array([-2.0 * obs[0] - 1.6 * obs[1]])
""")


@pytest.mark.slow
def test_a_run_whose_policy_is_gone_still_renders_with_its_traces(tmp_path) -> None:
    home, store = tmp_path / "policy_home", tmp_path / "runs.sqlite"
    home.mkdir()
    (home / "gone_policy.py").write_text(POLICY)
    env = {**os.environ, "PYTHONPATH": SRC}
    ids = []
    for policy, cwd in (("reach1d:baseline", tmp_path), ("gone_policy:act", home)):
        out = subprocess.run([sys.executable, "-m", "evalband.cli", "run", "reach1d", "--policy",
                              policy, "--store", str(store), "--json"], cwd=cwd, env=env,
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        ids.append(json.loads(out.stdout)["run_id"])
    shutil.rmtree(home)  # the policy module cannot be imported any more
    result = render_fresh(store, ids, tmp_path)
    assert result["imported"] == []
    page = result["pages"][f"html {' '.join(ids)}"]
    assert "fig-traces" in page and "no episode traces stored" not in page
    assert "gone_policy" in page
    served = result["pages"][f"GET /run/{ids[1]}"]
    assert "fig-traces" in served and "<svg" in served


def test_a_fresh_report_imports_neither_scipy_optimize_nor_scipy_stats(labs, tmp_path) -> None:
    """The power curve's gap and the intervals find their roots without scipy.optimize."""
    code = ("import sys; from evalband.report import render_html; "
            "[render_html(runs, sys.argv[1]) for runs in (sys.argv[2:4], sys.argv[4:6])]; "
            "print(sorted(m for m in sys.modules if m in ('scipy.optimize', 'scipy.stats')))")
    out = subprocess.run([sys.executable, "-c", code, str(labs.store), *labs.reach,
                          *labs.hidden], cwd=tmp_path, env={**os.environ, "PYTHONPATH": SRC},
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "[]"
