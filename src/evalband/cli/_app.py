"""The typer application: a group whose commands load when they are used.

``evalband`` is a typer app whose group class, :class:`LazyGroup`, knows every top-level
command by name, owner module and one-line help (:data:`COMMANDS`) and imports a command's
module only when that command is resolved (click's own lazy-subcommand pattern: the group's
``get_command``). ``evalband --help`` therefore imports typer and nothing of the commands;
``evalband ci 8 20`` imports the module of ``ci`` alone. Command modules import only typer
and the standard library at the top; numpy, scipy, pandas, rich tables and the rest load
inside the command that uses them (``tests/cli/test_cli_startup.py`` guards the import
sets). Help is plain text (rich's help formatter imports a markdown parser, ~0.15 s), and
plain values skip typer's pydantic coercion (:mod:`evalband.cli._coerce`).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Mapping
from gettext import gettext as _
from typing import Any

import typer
import typer.core
import typer.main
from typer._click import Command, Context, HelpFormatter
from typer._click.utils import make_default_short_help

from evalband.cli._coerce import install as _install_plain_coercion

__all__ = ["APP_HELP", "COMMANDS", "LazyGroup", "app", "load_command", "new_app", "run"]

#: The top-level help text.
APP_HELP = "Honest robot-policy evaluation: seeded panels, stored episodes, verdicts with bands."

#: Every top-level command in the order ``--help`` lists it: its name, the function of
#: ``evalband.cli`` that registers it on a typer app (``module:function``), and the first
#: paragraph of its help (what ``evalband --help`` shortens without importing the module;
#: ``tests/cli/test_cli_lazy.py`` holds it to the commands' own help).
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("ci", "_stats:register", "Confidence interval for a success rate K/N."),
    ("diff", "_stats:register",
     "Interval for the difference of two success rates (A - B), with its verdict."),
    ("power", "_stats:register",
     "Episodes per arm needed to resolve p_a vs p_b (and power at a given n)."),
    ("coverage", "_stats:register",
     "Exact coverage of an interval method at n over a grid of true rates."),
    ("run", "_runs:register",
     "Run a policy on every planned episode of a panel; resumable with --run-id."),
    ("runs", "_runs:register", "List the runs in the store, newest first."),
    ("show", "_runs:register",
     "Summary of one run: outcomes, rate with Wilson band, time among successes."),
    ("export", "_runs:register",
     "Write a run as an artifact bundle (manifest.json, panel.yaml, episodes.parquet)."),
    ("import", "_runs:register",
     "Load a bundle (checked consistent) or results made elsewhere into the store."),
    ("noise", "_runs:register",
     "The noise floor of a run: the swing of suites of M episodes, and the flip rate."),
    ("serve", "_serve:register",
     "Serve a policy over openpi's websocket protocol (ws://HOST:PORT), batching clients."),
    ("compare", "_compare:register", "Compare candidate run(s) against a baseline, slices first."),
    ("check-env", "_envs:register",
     "Check a panel's env: seeded resets, control period, factors, success rule, batching."),
    ("calibrate", "_calibrate:register",
     "Simulate comparisons on this panel's design through the real compare procedure."),
    ("rank", "_rank:register",
     "Rank policies by success rate (or a metric) with simultaneous rank sets and tiers."),
    ("sweep", "_sweep:register",
     "Checkpoints of one training run: value vs step, the best (selection-aware), the last."),
    ("agree", "_agree:register",
     "Whether a cheap ranking agrees with the behavioural one, with its noise on both sides."),
    ("agreement", "_scorers:register",
     "Agreement of two scorers on one run's episodes (accuracy, Cohen's kappa, the table) "
     "and PPI."),
    ("label", "_scorers:register",
     "Add a named scorer's labels (a human, a model judge, an import) to a run."),
    ("rescore", "_scorers:register",
     "Store a run judged by another scorer (its verdict as the outcome), for compare and rank."),
    ("offline", "_offline:register",
     "Validation action error of lerobot checkpoints on held-out demonstrations."),
    ("report", "_report:register",
     "Write a self-contained HTML report (and/or Markdown) for a run or a comparison."),
    ("view", "_view:register",
     "Serve the store read-only: run list, run and comparison reports, live while running."),
    ("lab", "_runs:register",
     "The seed documents' labs, run end to end through the real runner and store."),
    ("harness", "_harness:register", "Seed harnesses run end to end."),
    ("session", "_session:register",
     "Hardware evaluation sessions: matched, shuffled, optionally blinded blocks scored by an "
     "operator at the keyboard."),
    ("prereg", "_session_analysis:register_prereg",
     "Pre-registration: lock the planned comparisons and groupings before the data."),
    ("prefer", "_prefer:register",
     "Pairwise preference sessions: two blinded policies per block from one start state; the "
     "operator prefers A, B or tie and scores each one's progress (0-100)."),
)

_install_plain_coercion()


def new_app(**settings: Any) -> typer.Typer:
    """A typer app with evalband's settings (plain help, no completion, no pretty traces)."""
    return typer.Typer(**{
        "name": "evalband", "help": APP_HELP, "no_args_is_help": True,
        "add_completion": False, "pretty_exceptions_enable": False,
        "rich_markup_mode": None,  # plain help; sub-apps inherit it
        **settings,
    })


def _group() -> None:
    """The scratch app's group callback (does nothing)."""


def _command_name(info: Any) -> str:
    callback = info.callback
    return str(info.name or (callback.__name__.lower().replace("_", "-") if callback else ""))


def load_command(name: str) -> Command:
    """The click command (or group) ``name``, built from the module that registers it.

    The owner's ``register`` adds its commands to a scratch typer app; only ``name`` is
    converted (typer builds a command's parser from its signature), as typer builds it for
    a whole app.
    """
    spec = next(owner for command, owner, _ in COMMANDS if command == name)
    module, function = spec.split(":")
    scratch = new_app()
    getattr(importlib.import_module(f"evalband.cli.{module}"), function)(scratch)
    one = new_app()
    one.callback()(_group)  # the group form, so the command is converted as in a group
    one.registered_commands = [i for i in scratch.registered_commands
                               if _command_name(i) == name]
    one.registered_groups = [i for i in scratch.registered_groups if i.name == name]
    group = typer.main.get_command(one)
    assert isinstance(group, typer.core.TyperGroup)
    return group.commands[name]


class _Commands(Mapping[str, Command]):
    """The group's commands: every name known, each command built on first lookup."""

    def __init__(self) -> None:
        self._built: dict[str, Command] = {}

    def __getitem__(self, name: str) -> Command:
        if name not in self._built:
            if not any(command == name for command, _, _ in COMMANDS):
                raise KeyError(name)
            self._built[name] = load_command(name)
        return self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter([command for command, _, _ in COMMANDS])

    def __len__(self) -> int:
        return len(COMMANDS)


class LazyGroup(typer.core.TyperGroup):
    """The top-level group: a command's module is imported when the command is resolved.

    Listing the commands (``--help``, a misspelt command's suggestions) reads
    :data:`COMMANDS` and imports none of them.
    """

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _Commands()  # type: ignore[assignment]

    def list_commands(self, ctx: Context) -> list[str]:
        return list(self.commands)

    def format_commands(self, ctx: Context, formatter: HelpFormatter) -> None:
        """The commands section as click writes it, from :data:`COMMANDS`' first paragraphs."""
        limit = formatter.width - 6 - max(len(name) for name, _, _ in COMMANDS)
        rows = [(name, make_default_short_help(text, limit).strip())
                for name, _, text in COMMANDS]
        with formatter.section(_("Commands")):
            formatter.write_dl(rows)


#: The ``evalband`` application (``evalband.cli.app``): typer builds a :class:`LazyGroup`.
app = new_app(cls=LazyGroup)
app.callback()(_group)  # a group of commands, none registered here: the group loads them


def run(args: list[str]) -> int:
    """Run the command line ``args`` through typer; its usage errors exit 2 with one line.

    The library's errors, :class:`~evalband.cli._out.CommandExit` and Ctrl-C are turned
    into exit codes by :func:`evalband.cli.main`.
    """
    try:
        result = app(args=args, standalone_mode=False, prog_name="evalband")
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except typer.Abort:
        sys.stderr.write("error: aborted\n")
        return 130
    except typer.TyperException as exc:  # usage errors: bad option, missing argument
        sys.stderr.write(f"error: {_usage_line(exc)}\n")
        return 2
    return int(result) if isinstance(result, int) else 0


def _usage_line(exc: typer.TyperException) -> str:
    """A usage error of typer's in one line, with the value that came when typer refused one.

    typer's coercion of every option and argument (a ``min=`` / ``max=`` range, a number
    that is not one) says what it expected but not what came: that value, as typed, is
    added the way a panel's field errors say it (``Input should be greater than or equal
    to 18 (got 5)``).
    """
    line = exc.format_message().splitlines()[0]
    errors = getattr(exc.__cause__, "errors", None)  # pydantic's ValidationError
    if not callable(errors):
        return line
    try:
        came = errors()[0]["input"]
    except (LookupError, TypeError):
        return line
    plain = isinstance(came, str) and came.isprintable() and came.split() == [came]
    return f"{line} (got {came if plain else repr(came)})"
