"""Start-up: what ``evalband --help``, ``ci``, ``diff`` and ``power`` import, and what keeps
it small (the lazy command group, plain values without pydantic, plain text without rich)
against the real typer and rich."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.core

from evalband.cli import _coerce
from evalband.cli._common import console

HEAVY = ("numpy", "scipy", "pandas", "matplotlib", "pydantic", "pyarrow", "torch", "mujoco",
         "rich", "yaml", "sqlite3")


def imported_after(args: list[str]) -> set[str]:
    """Modules imported by running the CLI with ``args`` in a fresh interpreter (full names
    and their top-level packages)."""
    code = (
        "import contextlib, io, json, sys\n"
        "from evalband.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = main({args!r})\n"
        "print(json.dumps([code, sorted(sys.modules)]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    code_, modules = json.loads(done.stdout.strip().splitlines()[-1])
    assert code_ == 0, done.stderr
    return {m.split(".")[0] for m in modules} | set(modules)


@pytest.mark.parametrize("args", [
    ["--help"],
    ["ci", "8", "20"],
    ["ci", "8", "20", "--method", "agresti-coull", "-c", "0.9", "--json"],
    ["ci", "8", "20", "--help"],
    ["ci", "8", "20", "-c0.9"],
    ["power", "--p-a", "0.6", "--p-b", "0.4"],
    ["diff", "8/20", "12/20"],
    ["diff", "--paired", "10", "3", "8", "20", "--json"],
])
def test_short_commands_import_no_heavy_package(args: list[str]) -> None:
    loaded = imported_after(args)
    assert "typer" in loaded and "evalband.cli._app" in loaded  # the probe saw the imports
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
    assert "importlib.metadata" not in loaded  # no distribution scan at start-up


def test_an_exact_band_loads_scipy_special_only() -> None:
    loaded = imported_after(["ci", "8", "20", "--method", "clopper-pearson"])
    assert "scipy.special" in loaded and "scipy.stats" not in loaded


def test_a_short_run_loads_no_analysis_or_display_package(tmp_path: Path) -> None:
    """``evalband run`` (serial, --json) needs the env and the store, not scipy or rich, nor
    the process pool."""
    loaded = imported_after(["run", "reach1d", "-p", "reach1d:baseline", "--json",
                             "--store", str(tmp_path / "s.sqlite")])
    assert {"numpy", "gymnasium", "sqlite3"} <= loaded  # it did run
    assert not loaded & {"scipy", "pandas", "matplotlib", "rich", "torch", "mujoco",
                         "concurrent.futures.process", "evalband.run._pool"}


def test_ci_at_a_rare_level_still_uses_scipy_and_agrees(capsys) -> None:
    from scipy.special import ndtri

    from evalband.cli import main

    assert main(["ci", "8", "20", "-c", "0.937", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    z = float(ndtri(0.5 + 0.937 / 2.0))
    center, half = 8 + z * z / 2, z * (8 * 12 / 20 + z * z / 4) ** 0.5
    assert got["low"] == pytest.approx((center - half) / (20 + z * z), rel=1e-12)


# ------------------------------------------------------------------ plain value coercion

def _probe_app() -> typer.Typer:
    app = typer.Typer(add_completion=False)

    @app.command()
    def probe(
        k: float = typer.Argument(...),
        items: list[str] = typer.Argument(None),  # noqa: B008
        n: int = typer.Option(3, "--n", min=1, max=500),
        rate: float = typer.Option(0.5, "--rate"),
        name: str = typer.Option("x", "--name"),
        flag: bool = typer.Option(False, "--flag"),
        where: Path | None = typer.Option(None, "--where"),  # noqa: B008
        existing: Path | None = typer.Option(None, "--existing", exists=True),  # noqa: B008
    ) -> None:
        print(json.dumps([repr(v) for v in (k, items, n, rate, name, flag, where, existing)]))

    return app


def _outcome(app: typer.Typer, args: list[str]) -> tuple[str, str]:
    out = io.StringIO()
    old, sys.stdout = sys.stdout, out
    try:
        app(args=args, standalone_mode=False, prog_name="probe")
    except Exception as exc:  # noqa: BLE001 - the error itself is compared
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        return "error", f"{type(exc).__name__}: {message}"
    finally:
        sys.stdout = old
    return "ok", out.getvalue()


CASES = [
    ["8"], ["8.0"], ["-0"], ["1e3"], ["2.5e-3", "a", "b"], ["007"], ["+3"], [" 3"], ["1_0"],
    ["inf"], ["nan"], ["abc"], [""], ["8", "--n", "12"], ["8", "--n", "0"], ["8", "--n", "501"],
    ["8", "--n", "3.0"], ["8", "--n", "x"], ["8", "--n", "-4"], ["8", "--rate", ".5"],
    ["8", "--rate", "5."], ["8", "--rate", "-1.25E+2"], ["8", "--name", "wilson"],
    ["8", "--name", ""], ["8", "--flag"], ["8", "--where", "some/dir"], ["8", "--where", ""],
    ["8", "--existing", "/definitely/not/here"], ["8", "--existing", "."],
    ["8", "x", "--n", "99999999999999999999"],
]


@pytest.mark.parametrize("args", CASES, ids=[" ".join(c) or "empty" for c in CASES])
def test_plain_coercion_matches_typers_pydantic_path(args: list[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    assert _coerce.install()
    fast = _outcome(_probe_app(), args)
    original: Any = typer.core.build_runtime_param.typer_original  # type: ignore[attr-defined]
    monkeypatch.setattr(typer.core, "build_runtime_param", original)
    assert fast == _outcome(_probe_app(), args)


# ------------------------------------------------------------------ plain text output

TEXTS = [
    "8/20 = 40.00%   95% wilson: [21.88%, 61.34%]",
    "[red]alarm[/red] and [bold]bold[/]",
    "note: Wald collapses at 0/n and n/n; use Wilson.",
    ":smile: emoji :thumbs_up:",
    "tab\there", "line one\nline two", "A - B = +10.0 points, 95% newcombe: [-1.0, +20.0]",
    "escaped \\[red] text", "non-breaking\xa0space", "café … naïve", "bell\x07",
]


@pytest.mark.parametrize("text", TEXTS)
def test_console_prints_what_rich_prints(text: str, capsys) -> None:
    from rich.console import Console

    console.print(text)
    ours = capsys.readouterr().out
    buffer = io.StringIO()
    Console(file=buffer, highlight=False, soft_wrap=True, width=200).print(text)
    assert ours == buffer.getvalue()
