"""One fresh process of ``evalband compare A B --store S --json``, its time split in parts.

Run by :mod:`bench_cli` (``python bench/cli_breakdown.py STORE A B``), it prints one JSON
object of seconds (``time.perf_counter``):

* ``imports``: everything the command imports, imported first, in the order the command
  imports it (the list the command loads, taken from a previous run: ``--modules FILE``),
  in cumulative steps (:data:`GROUPS`: numpy, scipy.special, pydantic and PyYAML, the panel
  models, typer and the command line, the rest);
* then the command itself (``evalband.cli.main``), with nothing left to import, its parts
  timed by wrapping the functions it calls: ``store_read`` (``load_run``: the columns and
  the panel), ``compute`` (``compare_many``), ``record`` (``record_comparison``: the
  comparison written to the store), ``json`` (the document built and printed); ``other``:
  the rest of ``main`` (typer's parsing, the store opened, the exit code).

The interpreter's own start and exit are what ``python -c pass`` costs (timed beside it).
Without ``--modules``, it prints the modules the command loads, in order (one per line).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import sys
import time
from typing import Any

#: The imports in steps, each importing what it needs that the steps before did not: numpy;
#: scipy.special (numpy's unused submodules deferred, as the command line has it); pydantic
#: and PyYAML; the panel models (evalband.panel, pydantic's model building); typer and the
#: command line's modules; then every other module the command loads (evalband's analysis,
#: store, report, msgspec, sqlite3).
GROUPS = (("numpy", ("numpy",)), ("scipy_special", ("scipy.special",)),
          ("pydantic_yaml", ("pydantic.main", "pydantic.types", "yaml")),
          ("evalband_panel", ("evalband.panel",)),
          ("typer_cli", ("typer", "evalband.cli._app", "evalband.cli._compare")),
          ("the_rest", ()))


def _wrap(module: Any, name: str, spent: dict[str, float], part: str) -> None:
    inner = getattr(module, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[part] += time.perf_counter() - t0

    setattr(module, name, timed)


def _import_in_groups(modules: list[str]) -> dict[str, float]:
    """Import :data:`GROUPS`, then the rest of ``modules`` in order; seconds per group.

    numpy's submodules that :mod:`evalband.cli._lazy_numpy` defers are left to it (the
    ``import scipy`` registers them), as the command has it.
    """
    from evalband.cli._lazy_numpy import DEFERRED, install

    install()
    deferred = {f"numpy.{n}" for n in DEFERRED}
    spent: dict[str, float] = {}
    for label, names in GROUPS:
        t0 = time.perf_counter()
        for name in names or modules:
            if name not in sys.modules and name not in deferred:
                with contextlib.suppress(ImportError):
                    importlib.import_module(name)
        spent[label] = time.perf_counter() - t0
    return spent


def main(argv: list[str]) -> None:
    store, base, cand = argv[:3]
    args = ["compare", base, cand, "--store", store, "--json"]
    if "--modules" not in argv:
        from evalband.cli import main as cli_main

        before = list(sys.modules)
        with contextlib.redirect_stdout(io.StringIO()):
            cli_main(args)
        print("\n".join(m for m in sys.modules if m not in before))
        return
    with open(argv[argv.index("--modules") + 1]) as f:
        modules = [m for m in f.read().split() if m]
    t0 = time.perf_counter()
    imports = _import_in_groups(modules)
    t1 = time.perf_counter()
    import evalband._api
    import evalband.analysis._compare
    import evalband.cli._compare
    import evalband.recording
    from evalband.cli import main as cli_main

    parts = {"store_read": 0.0, "compute": 0.0, "record": 0.0, "json": 0.0}
    _wrap(evalband._api, "load_run", parts, "store_read")
    import evalband

    evalband.load_run = evalband._api.load_run
    _wrap(evalband.analysis._compare, "compare_many", parts, "compute")
    evalband.analysis.compare_many = evalband.analysis._compare.compare_many
    _wrap(evalband.recording, "record_comparison", parts, "record")
    _wrap(evalband.cli._compare, "_emit_json", parts, "json")
    loaded = set(sys.modules)
    t2 = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        cli_main(args)
    t3 = time.perf_counter()
    late = set(sys.modules) - loaded
    parts["other"] = (t3 - t2) - sum(parts.values())
    print(json.dumps({"imports": {**imports, "total": t1 - t0}, "command": {
        **parts, "total": t3 - t2}, "imported_during_command": len(late)}))


if __name__ == "__main__":
    main(sys.argv[1:])
