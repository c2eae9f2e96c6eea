"""``evalband compare --json`` imports what it uses: no pandas, no scipy optimisers or stats,
no other command's module (the lazy command group), no report renderer but the JSON one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

UNUSED = ("pandas", "pyarrow", "matplotlib", "rich", "jinja2", "torch", "mujoco", "gymnasium",
          "scipy.optimize", "scipy.stats", "evalband.report._html", "evalband.run._runner",
          "concurrent.futures.process", "evalband.report._markdown", "evalband.report._terminal",
          "typer.rich_utils", "evalband.run", "evalband.session", "evalband.web",
          # numpy's submodules that scipy's namespace copy names, left unexecuted
          # (evalband.cli._lazy_numpy): their modules load, their contents do not (numpy.ma
          # does: numpy.unique reads it)
          "numpy.f2py.f2py2e", "numpy.testing._private.utils", "numpy.polynomial._polybase",
          "charset_normalizer")

#: The command modules ``compare`` uses: its own, the group's and the shared helpers.
CLI_MODULES = {"evalband.cli", "evalband.cli._app", "evalband.cli._coerce",
               "evalband.cli._common", "evalband.cli._compare", "evalband.cli._errors",
               "evalband.cli._lazy_numpy",
               "evalband.cli._out", "evalband.cli._progress"}


def test_compare_json_imports_only_what_it_uses(tmp_path: Path) -> None:
    from evalband.labs.hidden_regression import simulate_hidden_regression
    from evalband.store import open_store

    store = tmp_path / "s.sqlite"
    with open_store(store) as st:
        ids = simulate_hidden_regression(st, episodes=60, seed=1)
    code = (
        "import contextlib, io, json, sys\n"
        "from evalband.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    code = main(['compare', {ids[0]!r}, {ids[1]!r}, '--store', {str(store)!r},"
        " '--json'])\n"
        "print(json.dumps([code, out.getvalue(), sorted(sys.modules)]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    exit_code, text, modules = json.loads(done.stdout.strip().splitlines()[-1])
    assert exit_code in (0, 3, 4, 5) and json.loads(text)["schema"] == "evalband-comparison/2"
    loaded = set(modules) | {m.split(".")[0] for m in modules}
    assert {"numpy", "sqlite3", "scipy.special", "evalband.analysis._compare"} <= loaded
    assert not loaded & set(UNUSED), sorted(loaded & set(UNUSED))
    assert {m for m in modules if m.startswith("evalband.cli")} == CLI_MODULES
