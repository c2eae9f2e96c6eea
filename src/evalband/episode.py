"""The Episode record: one row per attempted episode, the one data convention.

Every layer speaks it: the runner produces it, the store keeps it, analysis reads it.

Rules that keep it honest:

* A ``timeout`` stays in the denominator.
* An ``error`` (the harness or the policy crashed) is never a failure and never dropped.
* ``terminated`` / ``truncated`` keep Gymnasium's meaning: the task ended vs the budget cut it.
* ``time_to_success_s`` is set only for successes: time among successes has its own denominator.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from typing import Any

from evalband.errors import InvalidInputError

__all__ = [
    "Outcome",
    "EpisodeRecord",
    "EpisodeSpec",
    "EPISODE_FIELDS",
    "TASK_OPTION_KEYS",
    "episode_key",
    "parse_outcome",
    "record_key",
    "record_values",
]

TASK_OPTION_KEYS = ("instruction", "prompt")
"""Cell option keys that are the episode's task instruction (first wins): given to the policy
(``EpisodeContext.task``), not to the env's ``reset`` or constructor."""


@dataclass(frozen=True)
class EpisodeSpec:
    """One planned episode: where it sits in the panel and the seed fixing its condition.

    A panel's plan (:meth:`evalband.panel.Panel.episode_specs`, also importable as
    ``evalband.panel.EpisodeSpec``). ``options`` are the cell's reset options, ``env_kwargs``
    its constructor arguments (added to the panel's), ``task`` what ``task`` factors tell the
    policy. It lives here, beside the record it becomes, so worker
    processes that receive specs import neither pydantic nor YAML.

    >>> EpisodeSpec(cell="start=train", episode=3, repeat=0, condition_seed=11).key
    ('start=train', 3, 0)
    """

    cell: str
    episode: int
    repeat: int
    condition_seed: int
    slices: dict[str, str] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    task: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, int, int]:
        """The pairing key ``(cell, episode, repeat)``."""
        return (self.cell, self.episode, self.repeat)


class Outcome(StrEnum):
    """How an attempted episode ended.

    >>> Outcome("timeout") is Outcome.TIMEOUT
    True
    """

    SUCCESS = "success"
    FAILURE = "failure"
    TIMEOUT = "timeout"
    ERROR = "error"


def parse_outcome(value: object) -> Outcome:
    """An :class:`Outcome` from its name, or :class:`InvalidInputError` listing the names.

    >>> parse_outcome("timeout")
    <Outcome.TIMEOUT: 'timeout'>
    """
    if isinstance(value, Outcome):
        return value
    try:
        return Outcome(str(value))
    except ValueError:
        allowed = ", ".join(o.value for o in Outcome)
        raise InvalidInputError(f"outcome must be one of {allowed}; got {value!r}") from None


def episode_key(cell: str, episode: int, repeat: int) -> tuple[str, int, int]:
    """The key that pairs episodes across policies on one panel.

    >>> episode_key("start=train", 3, 0)
    ('start=train', 3, 0)
    """
    return (cell, int(episode), int(repeat))


_WHOLE_FIELDS = ("episode", "repeat", "steps", "interventions", "attempts")
_TIME_FIELDS = ("sim_time_s", "time_to_success_s", "wall_s", "env_ms")
_INT64_END = 2**63
_wholes = operator.attrgetter(*_WHOLE_FIELDS)
_times = operator.attrgetter(*_TIME_FIELDS)


def _check_wholes(values: tuple[Any, ...]) -> None:
    """Raise naming the first count that is no whole number from 0 to 2**63-1."""
    for name, value in zip(_WHOLE_FIELDS, values, strict=True):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < _INT64_END:
            raise InvalidInputError(
                f"{name} must be a whole number from 0 to 2**63-1; got {value!r}"
            )


def _check_times(values: tuple[Any, ...]) -> None:
    """Raise naming the first time that is no number >= 0 (``None`` is allowed)."""
    for name, value in zip(_TIME_FIELDS, values, strict=True):
        if value is not None and (math.isnan(float(value)) or float(value) < 0):
            raise InvalidInputError(f"{name} must be a number >= 0 or None; got {value!r}")


@dataclass(frozen=True, slots=True)
class EpisodeRecord:
    """One attempted episode.

    Attributes:
        run_id: the run this episode belongs to.
        policy: the policy's name (or import path).
        panel_fingerprint: sha256 of the panel's result-changing content.
        cell: the cell key, e.g. ``"dynamics=nominal"`` (``""`` for a panel without factors).
        slices: factor name -> value for this cell (one column per factor in data frames).
        episode: index within the cell.
        repeat: repeat index (the same condition again).
        condition_seed: the seed that fixes the condition.
        outcome: success, failure, timeout or error.
        terminated: the task ended (success or task-defined failure).
        truncated: the budget cut the episode.
        steps: actions taken.
        sim_time_s: simulated time elapsed (``steps * dt`` when the env has a ``dt``).
        time_to_success_s: simulated time to success; ``None`` unless the outcome is success.
        score: optional ordinal score (e.g. 0 never held, 1 acquired-lost, 2 held).
        assisted: a human helped (unaided success excludes assisted episodes).
        interventions: how many times a human intervened.
        latency_ms_p50: median policy inference time per call, milliseconds.
        latency_ms_p95: 95th percentile policy inference time per call, milliseconds.
        latency_ms_max: largest policy inference time per call, milliseconds.
        env_ms: total simulator time, milliseconds (kept apart from policy time).
        wall_s: wall-clock seconds for the whole episode.
        started_at: ISO-8601 UTC timestamp.
        error: the exception message when the outcome is ``error``.
        attempts: how many times the episode was tried (a retried chunk counts > 1).
        extra: anything else worth keeping (JSON-serialisable).

    >>> r = EpisodeRecord(run_id="r", policy="p", panel_fingerprint="f", cell="", episode=0,
    ...                   repeat=0, condition_seed=7, outcome=Outcome.SUCCESS, terminated=True,
    ...                   truncated=False, steps=5, sim_time_s=1.0, time_to_success_s=1.0)
    >>> r.key
    ('', 0, 0)
    """

    run_id: str
    policy: str
    panel_fingerprint: str
    cell: str
    episode: int
    repeat: int
    condition_seed: int
    outcome: Outcome
    terminated: bool
    truncated: bool
    steps: int
    sim_time_s: float | None = None
    time_to_success_s: float | None = None
    slices: dict[str, str] = field(default_factory=dict)
    score: int | None = None
    assisted: bool = False
    interventions: int = 0
    latency_ms_p50: float | None = None
    latency_ms_p95: float | None = None
    latency_ms_max: float | None = None
    env_ms: float | None = None
    wall_s: float | None = None
    started_at: str | None = None
    error: str | None = None
    attempts: int = 1
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        outcome = self.outcome
        if type(outcome) is not Outcome:
            outcome = parse_outcome(outcome)
            object.__setattr__(self, "outcome", outcome)  # frozen: the dataclass's own way
        wholes = _wholes(self)
        for value in wholes:  # the common case without isinstance (nor zip: ~2 us)
            if type(value) is not int or not 0 <= value < _INT64_END:
                _check_wholes(wholes)  # names the field at fault
                break
        if outcome is Outcome.SUCCESS and self.truncated and not self.terminated:
            raise InvalidInputError("a success must be terminated, not only truncated")
        if outcome is not Outcome.SUCCESS and self.time_to_success_s is not None:
            raise InvalidInputError(
                f"time_to_success_s is only set for successes; got {self.time_to_success_s!r} "
                f"with outcome {outcome.value}"
            )
        times = _times(self)
        for value in times:  # NaN fails ``>= 0.0`` and takes the full check
            if value is not None and not (type(value) is float and value >= 0.0):
                _check_times(times)  # names the field at fault
                break

    @property
    def key(self) -> tuple[str, int, int]:
        """The pairing key ``(cell, episode, repeat)``."""
        return episode_key(self.cell, self.episode, self.repeat)

    def check_fields(self) -> EpisodeRecord:
        """Every field of the type the store keeps it as; the record, or a one-line error.

        The constructor checks what the runner could get wrong cheaply (counts, outcome,
        times); a record read from outside (a bundle, an import) may hold anything, so it is
        checked in full before it is stored: texts are strings, flags booleans, ``slices`` a
        map of strings, ``extra`` a JSON object, counts and amounts in range.

        >>> r = EpisodeRecord("r", "p", "f", "", 0, 0, 7, "success", True, False, 5)
        >>> r.check_fields() is r
        True
        >>> import dataclasses
        >>> dataclasses.replace(r, extra=[1]).check_fields()
        Traceback (most recent call last):
        ...
        evalband.errors.InvalidInputError: extra must be a JSON object (a dict); got a list
        """
        values = {name: getattr(self, name) for name in EPISODE_FIELDS}

        def bad(name: str, expected: str) -> InvalidInputError:
            got = values[name]
            shown = repr(got) if len(repr(got)) <= 40 else f"a {type(got).__name__}"
            if isinstance(got, list | dict | tuple):
                shown = f"a {type(got).__name__}"
            return InvalidInputError(f"{name} must be {expected}; got {shown}")

        for name in ("run_id", "policy", "panel_fingerprint", "cell"):
            if not isinstance(values[name], str):
                raise bad(name, "text")
        for name in ("started_at", "error"):
            if values[name] is not None and not isinstance(values[name], str):
                raise bad(name, "text or None")
        for name in ("terminated", "truncated", "assisted"):
            if not isinstance(values[name], bool):
                raise bad(name, "true or false")
        seed = values["condition_seed"]
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
            raise bad("condition_seed", "a whole number from 0 to 2**64-1")
        score = values["score"]
        if score is not None and (isinstance(score, bool) or not isinstance(score, int)
                                  or not 0 <= score < 2**63):
            raise bad("score", "a whole number >= 0 or None")
        for name in ("sim_time_s", "time_to_success_s", "latency_ms_p50", "latency_ms_p95",
                     "latency_ms_max", "env_ms", "wall_s"):
            value = values[name]
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                      or not math.isfinite(value) or value < 0):
                raise bad(name, "a finite number >= 0 or None")
        slices = values["slices"]
        if not isinstance(slices, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in slices.items()):
            raise bad("slices", "a map of factor names to text labels")
        if not isinstance(values["extra"], dict):
            raise bad("extra", "a JSON object (a dict)")
        import json

        try:
            json.dumps(values["extra"], allow_nan=True)
        except (TypeError, ValueError):
            raise bad("extra", "JSON-serialisable") from None
        if values["attempts"] < 1:
            raise bad("attempts", "a whole number >= 1")
        return self

    @property
    def success(self) -> bool:
        """Whether the episode succeeded."""
        return self.outcome is Outcome.SUCCESS

    @property
    def metrics(self) -> dict[str, float]:
        """Per-episode numbers kept in ``extra["metrics"]`` (``{}`` if none).

        ``return`` (summed reward), ``reward_max``, ``reward_final`` and the panel's declared
        numeric info keys at the last step.

        >>> r = EpisodeRecord(run_id="r", policy="p", panel_fingerprint="f", cell="", episode=0,
        ...                   repeat=0, condition_seed=7, outcome="timeout", terminated=False,
        ...                   truncated=True, steps=5, extra={"metrics": {"return": -1.5}})
        >>> r.metrics
        {'return': -1.5}
        """
        found = self.extra.get("metrics") if isinstance(self.extra, dict) else None
        if not isinstance(found, dict):
            return {}
        return {str(k): float(v) for k, v in found.items() if isinstance(v, int | float)}

    @property
    def unaided_success(self) -> bool:
        """Success without human assistance."""
        return self.success and not self.assisted

    @property
    def media(self) -> list[dict[str, Any]]:
        """References to the episode's stored media (``extra["media"]``; see ``evalband.store``).

        Each is a dict with ``kind`` (``"video"``), ``content_type`` and ``sha256`` (the file
        ``<store dir>/media/<sha256>.<ext>``), and ``path`` for an imported file.
        """
        value = self.extra.get("media")
        if not isinstance(value, list):
            return []
        return [dict(ref) for ref in value if isinstance(ref, dict)]

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (outcome as its string value)."""
        out = asdict(self)
        out["outcome"] = self.outcome.value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EpisodeRecord:
        """Build a record from a dictionary, ignoring unknown keys only if they are derived.

        Raises:
            InvalidInputError: on an unknown field name.
        """
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InvalidInputError(
                f"unknown episode field(s) {', '.join(unknown)}; expected some of "
                f"{', '.join(sorted(known))}"
            )
        return cls(**data)


EPISODE_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(EpisodeRecord))

record_values: Callable[[EpisodeRecord], tuple[Any, ...]] = operator.attrgetter(*EPISODE_FIELDS)
"""A record's field values in :data:`EPISODE_FIELDS` order, as one C-level call (the store's
row builder reads every field of every record it writes).

>>> record_values(EpisodeRecord("r", "p", "f", "c", 0, 0, 7, "success", True, False, 5))[:8]
('r', 'p', 'f', 'c', 0, 0, 7, <Outcome.SUCCESS: 'success'>)
"""

record_key: Callable[[EpisodeRecord], tuple[str, int, int]] = operator.attrgetter(
    "cell", "episode", "repeat"
)
"""``record.key`` as one C-level call (sorting or grouping 100,000 records): the record's
validated ``cell``, ``episode`` and ``repeat``, the same tuple :attr:`EpisodeRecord.key` gives."""
