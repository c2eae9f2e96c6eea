"""The plainest command lines, answered before typer loads.

Importing typer (with its vendored click) costs a short command about 0.1 s, most of its
start-up. ``evalband --help`` and a plain ``ci``, ``diff``, ``power`` or ``run`` line (known
options, numbers written plainly, the right number of arguments) are answered here: the
top-level help is laid out as click lays it out (:func:`top_help`), and the commands run
the same code as through typer (:mod:`evalband.cli._stats_cmds`,
:mod:`evalband.cli._run_cmd`). Anything else (a
command's ``--help``, an unknown or misspelt option, a malformed or missing value, any
other command) returns ``None`` and goes to typer, so usage errors and help keep typer's
words. ``tests/cli/test_cli_fast.py`` holds both paths to the same bytes on the real typer.

``evalband run --backend process`` also starts its worker pool here, before typer and the
rest load (:func:`start_workers_early`).
"""

from __future__ import annotations

import os
import re
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["APP_HELP", "COMMANDS", "FLOAT", "INT", "dispatch", "parse", "start_workers_early",
           "top_help"]

#: The top-level help text (the typer app's ``help=``).
APP_HELP = "Honest robot-policy evaluation: seeded panels, stored episodes, verdicts with bands."

#: Every top-level command in registration order, with the first paragraph of its help
#: (what ``evalband --help`` shortens). The typer app is checked against this table.
COMMANDS: tuple[tuple[str, str], ...] = (
    ("ci", "Confidence interval for a success rate K/N."),
    ("diff", "Interval for the difference of two success rates (A - B), with its verdict."),
    ("power", "Episodes per arm needed to resolve p_a vs p_b (and power at a given n)."),
    ("coverage", "Exact coverage of an interval method at n over a grid of true rates."),
    ("run", "Run a policy on every planned episode of a panel; resumable with --run-id."),
    ("runs", "List the runs in the store, newest first."),
    ("show", "Summary of one run: outcomes, rate with Wilson band, time among successes."),
    ("export", "Write a run as an artifact bundle (manifest.json, panel.yaml, "
               "episodes.parquet)."),
    ("import", "Load a bundle (checked consistent) or results made elsewhere into the store."),
    ("noise", "The noise floor of a run: the swing of suites of M episodes, and the flip "
              "rate."),
    ("serve", "Serve a policy over openpi's websocket protocol (ws://HOST:PORT), batching "
              "clients."),
    ("compare", "Compare candidate run(s) against a baseline, slices first."),
    ("check-env", "Check a panel's env: seeded resets, control period, factors, success rule, "
                  "batching."),
    ("calibrate", "Simulate comparisons on this panel's design through the real compare "
                  "procedure."),
    ("rank", "Rank policies by success rate (or a metric) with simultaneous rank sets and "
             "tiers."),
    ("sweep", "Checkpoints of one training run: value vs step, the best (selection-aware), the "
              "last."),
    ("agree", "Whether a cheap ranking agrees with the behavioural one, with its noise on both "
              "sides."),
    ("agreement", "Agreement of two scorers on one run's episodes (accuracy, Cohen's kappa, "
                  "the table) and PPI."),
    ("label", "Add a named scorer's labels (a human, a model judge, an import) to a run."),
    ("rescore", "Store a run judged by another scorer (its verdict as the outcome), for compare "
                "and rank."),
    ("offline", "Validation action error of lerobot checkpoints on held-out demonstrations."),
    ("report", "Write a self-contained HTML report (and/or Markdown) for a run or a "
               "comparison."),
    ("view", "Serve the store read-only: run list, run and comparison reports, live while "
             "running."),
    ("lab", "The seed documents' labs, run end to end through the real runner and store."),
    ("harness", "Seed harnesses run end to end."),
    ("session", "Hardware evaluation sessions: matched, shuffled, optionally blinded blocks "
                "scored by an operator at the keyboard."),
    ("prereg", "Pre-registration: lock the planned comparisons and groupings before the "
               "data."),
    ("prefer", "Pairwise preference sessions: two blinded policies per block from one start "
               "state; the operator prefers A, B or tie and scores each one's progress (0-100)."),
)

#: Numbers written plainly: what typer's pydantic coercion turns into the same value as
#: ``int(text)`` / ``float(text)`` (shared with :mod:`evalband.cli._coerce`).
INT = re.compile(r"-?(?:0|[1-9][0-9]{0,17})")
FLOAT = re.compile(r"-?(?:0|[1-9][0-9]{0,17})(?:\.[0-9]{1,17})?(?:[eE][-+]?[0-9]{1,3})?")


# ------------------------------------------------------------------ help, as click lays it out

class _Wrapper(textwrap.TextWrapper):
    """click's ``TextWrapper``: a word longer than the line is cut where the line ends."""

    def _handle_long_word(self, reversed_chunks: list[str], cur_line: list[str],
                          cur_len: int, width: int) -> None:
        space_left = max(width - cur_len, 1)
        last = reversed_chunks[-1]
        cur_line.append(last[:space_left])
        reversed_chunks[-1] = last[space_left:]


def _wrap(text: str, width: int, indent: str = "") -> str:
    return _Wrapper(width, initial_indent=indent, subsequent_indent=indent,
                    replace_whitespace=False).fill(text.expandtabs())


def _short_help(text: str, limit: int) -> str:
    """Click's ``make_default_short_help``: the first sentence, or words to ``limit`` + "..."."""
    words = text.split()
    total, last = 0, len(words) - 1
    for i, word in enumerate(words):
        total += len(word) + (i > 0)
        if total > limit:
            break
        if word.endswith("."):
            return " ".join(words[: i + 1])
        if total == limit and i != last:
            break
    else:
        return " ".join(words)
    total += 3
    while i > 0:
        total -= len(words[i]) + (i > 0)
        if total <= limit:
            break
        i -= 1
    return " ".join(words[:i]) + "..."


def _definitions(rows: Sequence[tuple[str, str]], width: int) -> list[str]:
    """Click's ``HelpFormatter.write_dl`` at indent 2 (first column at most 30 wide)."""
    first_col = min(max(len(name) for name, _ in rows), 30) + 2
    out = []
    for name, text in rows:
        line = "  " + name
        if len(name) <= first_col - 2:
            line += " " * (first_col - len(name))
        else:
            out.append(line)
            line = " " * (first_col + 2)
        lines = _wrap(text, max(width - first_col - 2, 10)).splitlines()
        out.append(line + lines[0])
        out.extend(" " * (first_col + 2) + more for more in lines[1:])
    return out


def top_help(columns: int | None = None) -> str:
    """``evalband --help`` as typer prints it (plain help: click's layout).

    ``columns`` is the terminal's width (default: read as click reads it).

    >>> print(top_help(80).splitlines()[0])
    Usage: evalband [OPTIONS] COMMAND [ARGS]...
    """
    if columns is None:
        import shutil

        columns = shutil.get_terminal_size().columns
    width = max(min(columns, 80) - 2, 50)
    limit = width - 6 - max(len(name) for name, _ in COMMANDS)
    lines = ["Usage: evalband [OPTIONS] COMMAND [ARGS]...", "", _wrap(APP_HELP, width, "  "), "",
             "Options:", *_definitions([("--help", "Show this message and exit.")], width), "",
             "Commands:",
             *_definitions([(name, _short_help(text, limit)) for name, text in COMMANDS], width)]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ plain command lines

_Kind = Callable[[str], Any]


def _int(text: str) -> int | None:
    return int(text) if INT.fullmatch(text) else None


def _float(text: str) -> float | None:
    return float(text) if FLOAT.fullmatch(text) else None


def _str(text: str) -> str:
    return text


def _positive(text: str) -> int | None:  # typer's ``min=1``: a smaller value is typer's error
    value = _int(text)
    return value if value is not None and value >= 1 else None


def _natural(text: str) -> int | None:  # typer's ``min=0``
    value = _int(text)
    return value if value is not None and value >= 0 else None


def _path(text: str) -> Path | None:
    return Path(text) if text else None


# command: (positional parameters with their parser, or "*" for a list of words;
#           options: spelling -> (parameter, parser or None for a flag); defaults)
_SPECS: dict[str, tuple[tuple[tuple[str, _Kind], ...] | str, dict[str, tuple[str, _Kind | None]],
                        dict[str, Any]]] = {
    "ci": (
        (("k", _float), ("n", _float)),
        {"--method": ("method", _str), "-m": ("method", _str),
         "--confidence": ("confidence", _float), "-c": ("confidence", _float),
         "--allow-empty": ("allow_empty", None), "--json": ("as_json", None)},
        {"method": "wilson", "confidence": 0.95, "allow_empty": False, "as_json": False},
    ),
    "diff": (
        "counts",
        {"--paired": ("paired", None), "--method": ("method", _str), "-m": ("method", _str),
         "--confidence": ("confidence", _float), "-c": ("confidence", _float),
         "--json": ("as_json", None)},
        {"paired": False, "method": "newcombe", "confidence": 0.95, "as_json": False},
    ),
    "power": (
        (),
        {"--p-a": ("p_a", _float), "--p-b": ("p_b", _float), "--power": ("power", _float),
         "--alpha": ("alpha", _float), "--paired": ("paired", None),
         "--discordant": ("discordant", _float), "--n": ("n", _int),
         "--direction": ("direction", _str), "--comparisons": ("comparisons", _int),
         "--slices": ("comparisons", _int), "--test": ("test", _str),
         "--sequential": ("sequential", None), "--json": ("as_json", None)},
        {"power": 0.8, "alpha": 0.05, "paired": False, "discordant": None, "n": None,
         "direction": "auto", "comparisons": 1, "test": "normal", "sequential": False,
         "as_json": False},
    ),
    "run": (  # the common options; --until-decided and its kin, --record... go to typer
        (("panel", _str),),
        {"--policy": ("policy", _str), "-p": ("policy", _str),
         "--workers": ("workers", _positive), "-w": ("workers", _positive),
         "--backend": ("backend", _str), "-b": ("backend", _str),
         "--store": ("store", _path), "--run-id": ("run_id", _str),
         "--batch": ("batch", _positive), "--errors-as-failures": ("errors_as_failures", None),
         "--retry-errors": ("retry_errors", None), "--json": ("as_json", None),
         "--step": ("step", _natural),
         "--episodes": ("episodes", _positive), "--seed": ("seed", _int),
         "--episode-timeout": ("episode_timeout", _float)},
        {"workers": None, "backend": "serial", "store": None, "run_id": None, "batch": None,
         "errors_as_failures": False, "retry_errors": False, "as_json": False, "step": None,
         "episodes": None, "seed": None, "episode_timeout": None},
    ),
}


def parse(command: str, args: Sequence[str]) -> dict[str, Any] | None:
    """The parameters of a plain ``command`` line, or ``None`` for typer to handle it.

    >>> parse("ci", ["8", "20", "-c", "0.9"])["confidence"], parse("ci", ["8", "x"])
    (0.9, None)
    """
    if command not in _SPECS:
        return None
    positional, options, defaults = _SPECS[command]
    values: dict[str, Any] = dict(defaults)
    words: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if not token.startswith("-") or token == "-":
            words.append(token)
            continue
        name, eq, inline = token.partition("=")
        if name not in options or (eq and not name.startswith("--")):
            return None  # --help, --, an unknown or glued option: typer's words
        dest, kind = options[name]
        if kind is None:
            if eq:
                return None
            values[dest] = True
            continue
        if not eq:
            if i == len(args):
                return None
            inline = args[i]
            i += 1
        if inline.startswith("-"):
            return None  # an option, or a negative number, where a value should be: typer's
        value = kind(inline)
        if value is None:
            return None
        values[dest] = value
    if isinstance(positional, str):  # a list of words
        if not words:
            return None
        values["counts"] = words
    else:
        if len(words) != len(positional):
            return None
        for (dest, kind), word in zip(positional, words, strict=True):
            value = kind(word)
            if value is None:
                return None
            values[dest] = value
    if any(dest not in values for dest, _ in options.values()):
        return None  # a required option missing
    return values


def start_workers_early(args: Sequence[str]) -> bool:
    """``evalband run ... --backend process``: start the worker pool now; True if started.

    The forkserver and the workers then start while this process imports typer, the panel
    model, numpy... (the ``run`` command asks again: a no-op). A line typer then rejects
    leaves an idle pool that closes with the process.

    >>> start_workers_early(["run", "p.yaml", "--backend", "serial"])
    False
    """
    if not args or args[0] != "run" or "--help" in args:
        return False
    backend, workers = "serial", "1"
    for i, token in enumerate(args):
        name, eq, value = token.partition("=")
        if not eq:
            value = args[i + 1] if i + 1 < len(args) else ""
        if name in ("--backend", "-b"):
            backend = value
        elif name in ("--workers", "-w"):
            workers = value
    if backend != "process" or not INT.fullmatch(workers) or int(workers) < 1:
        return False
    from evalband.run._pool import prestart, worker_init

    prestart(int(workers), _preload(args), initializer=worker_init, initargs=(os.getpid(),))
    return True


def _preload(args: Sequence[str]) -> list[str]:
    """What the workers of ``evalband run PANEL -p POLICY ...`` import, known from the line.

    The panel file's ``env`` and ``imports`` (YAML read here; the command reads it again)
    and the policy give the modules (:func:`evalband._util.names.worker_preload`), so the
    forkserver imports the env (MuJoCo...) and the policy once while this process loads,
    instead of each worker importing them after the panel is loaded. Anything unclear (a
    built-in panel name, a line for typer, an unreadable file) leaves the run loop alone:
    the run itself asks for the rest, as before.

    >>> _preload(["run", "no-such-panel.yaml", "-p", "pusht:expert"])
    ['evalband.run._execute', 'evalband.policies.pusht']
    """
    from evalband._util.names import env_module, worker_preload

    values = parse("run", args[1:])
    if values is None or "policy" not in values:
        return ["evalband.run._execute"]
    env, imports = None, []
    try:
        import yaml

        with open(values["panel"], encoding="utf-8") as file:
            data = yaml.safe_load(file)
        if isinstance(data, dict) and isinstance(data.get("env"), str):
            env = data["env"]
            found = data.get("imports") or []
            imports = [str(m) for m in found] if isinstance(found, list) else []
    except (OSError, ValueError, yaml.YAMLError):
        pass
    return worker_preload(None if env is None else env_module(env), imports, values["policy"])


def dispatch(args: Sequence[str]) -> int | None:
    """Answer ``args`` here (the exit status) or return ``None`` for typer."""
    if os.environ.get("_EVALBAND_COMPLETE"):
        return None  # shell completion is typer's
    if list(args) == ["--help"]:
        sys.stdout.write(top_help())
        return 0
    if not args:
        return None
    start_workers_early(args)
    values = parse(args[0], args[1:])
    if values is None:
        return None
    if args[0] == "run":
        from evalband.cli._run_cmd import run_run

        run_run(**values)
        return 0
    from evalband.cli import _stats_cmds

    runner: Callable[..., None] = getattr(_stats_cmds, f"run_{args[0]}")
    runner(**values)
    return 0
