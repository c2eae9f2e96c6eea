"""Checking imported rows, one at a time and across rows, in file order.

The first problem met reading the file is the one reported (file, row, column, what was
expected and what came); see :mod:`evalband.store._importers`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalband.episode import Outcome
from evalband.store._import_read import (
    _CONVERTERS,
    _KINDS,
    _NOTHING,
    SLICE_PREFIX,
    _as_label,
    _Bad,
    _fail,
    _missing,
    _Raw,
    _Table,
    _Text,
)

if TYPE_CHECKING:
    from evalband.panel import Panel

__all__ = ["_Checker", "_Row", "_label_key"]


# --------------------------------------------------------------------------- validating


@dataclass
class _Row:
    """One validated row, before the panel is known."""

    where: str
    outcome: Outcome
    slices: dict[str, str]
    episode: int | None
    repeat: int
    values: dict[str, Any]
    extra: dict[str, Any]
    labels: dict[str, str] = field(default_factory=dict)
    cell: str = ""
    media: list[str] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, int, int]:
        """The pairing key; valid once the cell and episode are assigned."""
        assert self.episode is not None  # set by _Checker.add before any key is read
        return (self.cell, self.episode, self.repeat)


def _convert(path: Path, raw: _Raw, table: _Table) -> _Row:
    values: dict[str, Any] = {}
    slices: dict[str, str] = {}
    for name, value in raw.values.items():
        if _missing(value):
            continue
        label = raw.labels.get(name, name)
        try:
            if name.startswith(SLICE_PREFIX):
                slices[name[len(SLICE_PREFIX) :]] = _as_label(value)
            else:
                values[name] = _CONVERTERS[_KINDS[name]](value)
        except _Bad as bad:
            raise _fail(path, raw.where, label, bad.expected, bad.got) from None
    success, outcome = values.get("success"), values.get("outcome")
    if success is None and outcome is None:
        column = (
            "outcome"
            if "outcome" in table.columns and "success" not in table.columns
            else "success"
        )
        raise _fail(path, raw.where, column, "0/1 or true/false (or an outcome)", _NOTHING)
    if success is not None and outcome is not None and success != (outcome is Outcome.SUCCESS):
        raise _fail(
            path,
            raw.where,
            "success",
            f"{int(outcome is Outcome.SUCCESS)} (to agree with outcome {outcome.value!r})",
            raw.values["success"],
        )
    if outcome is None:
        outcome = Outcome.SUCCESS if success else Outcome.FAILURE
    if "cell" in values:
        parsed: dict[str, str] = values.pop("cell")
        for factor, label in parsed.items():
            if factor in slices and slices[factor] != label:
                raise _fail(
                    path,
                    raw.where,
                    "cell",
                    f"{factor}={slices[factor]} (as in column {SLICE_PREFIX}{factor})",
                    raw.values["cell"],
                )
        slices = {**parsed, **slices}
    if "episode" in table.columns and "episode" not in values:
        raise _fail(path, raw.where, "episode", "a whole number >= 0", _NOTHING)
    if values.get("time_to_success_s") is not None and outcome is not Outcome.SUCCESS:
        raise _fail(
            path,
            raw.where,
            "time_to_success_s",
            f"no value for a {outcome.value} (time to success is for successes only)",
            raw.values["time_to_success_s"],
        )
    terminated = values.setdefault("terminated", outcome in (Outcome.SUCCESS, Outcome.FAILURE))
    truncated = values.setdefault("truncated", outcome is Outcome.TIMEOUT)
    if outcome is Outcome.SUCCESS and truncated and not terminated:
        raise _fail(
            path,
            raw.where,
            "truncated",
            "0 for a success that is not terminated",
            raw.values.get("truncated"),
        )
    if outcome is Outcome.SUCCESS and values.get("time_to_success_s") is None:
        values["time_to_success_s"] = values.get("sim_time_s")
    return _Row(
        where=raw.where,
        outcome=outcome,
        slices=slices,
        episode=values.pop("episode", None),
        repeat=values.pop("repeat", 0),
        values=values,
        extra=dict(raw.extra),
        labels=raw.labels,
        media=list(raw.media),
    )


def _label_key(label: str) -> tuple[int, float, str]:
    """Sort slice labels numerically when they are numbers, else as text."""
    try:
        number = float(label)
    except ValueError:
        return (1, 0.0, label)
    return (0, number, label) if math.isfinite(number) else (1, 0.0, label)


class _Checker:
    """The checks that span rows, applied row by row so the first problem is reported first.

    Every row names the same factors (the panel's, when one is given; else the first row's),
    each ``(cell, episode, repeat)`` appears once, a constant ``policy`` column, and, with a
    panel, every row inside it. Also assigns cells (factors in ``order``) and default episodes
    (row order within ``(cell, repeat)``).
    """

    def __init__(self, path: Path, table: _Table, panel: Panel | None) -> None:
        self.path = path
        self.table = table
        self.panel = panel
        self.order: list[str] | None = (
            list(panel.factors) if panel is not None else table.factor_order
        )
        if panel is not None:
            from evalband.panel import as_factor_spec  # a factor may be a spec with a target

            self.levels = {f: as_factor_spec(v).labels() for f, v in panel.factors.items()}
        else:
            self.levels = {}
        self.seeds = (
            {}
            if panel is None
            else {spec.key: spec.condition_seed for spec in panel.episode_specs()}
        )
        self.counters: dict[tuple[str, int], int] = {}
        self.first: dict[tuple[str, int, int], str] = {}
        self.policy: tuple[str, str] | None = None
        self.rows: list[_Row] = []

    def add(self, raw: _Raw) -> None:
        row = _convert(self.path, raw, self.table)
        if self.order is None:
            self.order = sorted(row.slices)
        self._factors(row)
        row.slices = {factor: row.slices[factor] for factor in self.order}
        row.cell = ",".join(f"{factor}={label}" for factor, label in row.slices.items())
        if row.episode is None:
            count = (row.cell, row.repeat)
            row.episode = self.counters.get(count, 0)
            self.counters[count] = row.episode + 1
        from evalband._util.limits import MAX_PLANNED_EPISODES

        for name, index in (("episode", row.episode), ("repeat", row.repeat)):
            if index >= MAX_PLANNED_EPISODES:  # no panel plans so many: a wrong column
                raise _fail(self.path, row.where, row.labels.get(name, name),
                            f"an index below {MAX_PLANNED_EPISODES:,} (the most episodes a "
                            "panel plans)", index)
        if self.panel is not None:
            self._inside_panel(row, self.panel)
        if row.key in self.first:
            raise _fail(
                self.path,
                row.where,
                row.labels.get("episode", "episode"),
                f"each (cell, episode, repeat) once; {self.first[row.key]} has the same",
                _Text(f"cell={row.cell!r}, episode={row.episode}, repeat={row.repeat}"),
            )
        self.first[row.key] = row.where
        self._policy(row)
        self.rows.append(row)

    def _factors(self, row: _Row) -> None:
        assert self.order is not None  # set from the panel, the reader, or the first row
        expected = set(self.order)
        if set(row.slices) == expected:
            return
        source = "the panel's" if self.panel is not None else "the first row's"
        names = ", ".join(self.order) or "none"
        missing = [factor for factor in self.order if factor not in row.slices]
        if missing:
            raise _fail(
                self.path,
                row.where,
                SLICE_PREFIX + missing[0],
                f"a value for every one of {source} factors ({names})",
                _NOTHING,
            )
        stray = sorted(set(row.slices) - expected)[0]
        raise _fail(
            self.path,
            row.where,
            SLICE_PREFIX + stray,
            f"only {source} factors ({names})",
            row.slices[stray],
        )

    def _inside_panel(self, row: _Row, panel: Panel) -> None:
        for factor, label in row.slices.items():
            if label not in self.levels[factor]:
                raise _fail(
                    self.path,
                    row.where,
                    SLICE_PREFIX + factor,
                    f"one of the panel's levels {', '.join(self.levels[factor])}",
                    label,
                )
        if row.key[1] >= panel.episodes:
            raise _fail(
                self.path,
                row.where,
                "episode",
                f"an index below the panel's {panel.episodes} episodes per cell",
                row.episode,
            )
        if row.repeat >= panel.repeats:
            raise _fail(
                self.path,
                row.where,
                "repeat",
                f"an index below the panel's {panel.repeats} repeats",
                row.repeat,
            )
        seed, planned = row.values.get("condition_seed"), self.seeds[row.key]
        if seed is not None and seed != planned and not self.table.external_seeds:
            raise _fail(
                self.path,
                row.where,
                "condition_seed",
                f"{planned} (the panel's seed for this episode)",
                seed,
            )

    def _policy(self, row: _Row) -> None:
        name = row.values.get("policy")
        if name is None:
            return
        if self.policy is None:
            self.policy = (name, row.where)
        elif name != self.policy[0]:
            raise _fail(
                self.path,
                row.where,
                "policy",
                f"the same policy on every row ({self.policy[0]!r} at {self.policy[1]}); import "
                "each policy's results as its own run",
                name,
            )


