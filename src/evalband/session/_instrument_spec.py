"""The instrument of a robot session, declared in the plan: seed 004's design elements.

Every element is off unless the plan's instrument file turns it on
(``evalband session plan ... --instrument rig.yaml``); the file is validated field by field
(pydantic, unknown fields refused, one-line errors) and stored with the plan, the stress
routine's waypoints inlined, so the instrument is fixed before the first trial::

    rate_hz: 30              # the control rate
    time_limit_s: 20         # a trial's policy phase ends here at the latest
    task: put the red block into the bin   # the instruction policies are given
    home: {shoulder_pan.pos: 0, ...}       # default: the pose at connect
    home_speed: 60           # units per second, every motor (return home, go to a pose)
    capture:                 # start-state capture during a scene's seeding rollout
      signal: gripper.pos    # machine rule: capture when the commanded gripper
      source: commanded      #   drops below 90 (the operator's key captures too)
      below: 90
    replace: true            # later trials start from the captured pose, block re-placed
    trigger:                 # the settled-grasp end trigger
      signal: gripper.pos
      closed_below: 60
      source: either         # commanded, measured or either
      hold_s: 2.5
      flicker_s: 0.2         # openings shorter than this do not break the closure
    stress: stress.yaml      # a file of waypoints (or inline: {relative: true, waypoints: [...]})
    suggest:                 # the machine's score suggestion (the operator decides)
      signal: gripper.pos
      held_above: 34

A stress file::

    relative: true           # waypoint values are offsets from the pose at the trigger
    waypoints:
      - {lift.pos: 80, move_s: 1.0}    # lift 80 mm in 1 s
      - {hold_s: 4.0}                  # hold 4 s
      - {shoulder_pan.pos: 12, move_s: 0.2}
      - {shoulder_pan.pos: -12, move_s: 0.4}
      - {shoulder_pan.pos: 0, move_s: 0.2}
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from evalband.errors import InvalidInputError

__all__ = [
    "CaptureSpec",
    "InstrumentSpec",
    "StressSpec",
    "SuggestSpec",
    "TriggerSpec",
    "Waypoint",
    "load_instrument",
    "load_stress",
    "builtin_instruments",
]

_TIMING = ("move_s", "hold_s")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CaptureSpec(_Strict):
    """Start-state capture: the operator's key, and optionally a machine rule on a signal.

    Without ``signal`` only the operator's key captures (rehearsals need the rule).
    """

    signal: str | None = None
    source: Literal["commanded", "measured"] = "commanded"
    below: float | None = None

    @model_validator(mode="after")
    def _rule(self) -> CaptureSpec:
        if (self.signal is None) != (self.below is None):
            raise ValueError("a capture rule needs both 'signal' and 'below' (or neither: the "
                             "operator's key only)")
        return self


class TriggerSpec(_Strict):
    """The settled-grasp trigger: the signal below ``closed_below`` for ``hold_s``."""

    signal: str = "gripper.pos"
    closed_below: float = 60.0
    source: Literal["commanded", "measured", "either"] = "either"
    hold_s: float = Field(2.5, gt=0)
    flicker_s: float = Field(0.2, ge=0)


class Waypoint(_Strict):
    """One waypoint: goals for some motors, reached in ``move_s`` and held ``hold_s``."""

    targets: dict[str, float] = Field(default_factory=dict)
    move_s: float = Field(0.0, ge=0)
    hold_s: float = Field(0.0, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _flat(cls, value: Any) -> Any:
        """``{lift.pos: 80, move_s: 1}`` (motors beside the timing) as the model's fields."""
        if not isinstance(value, Mapping) or "targets" in value:
            return value
        targets = {str(k): v for k, v in value.items() if k not in _TIMING}
        return {"targets": targets, **{k: value[k] for k in _TIMING if k in value}}

    @model_validator(mode="after")
    def _something(self) -> Waypoint:
        if not self.targets and self.hold_s == 0 and self.move_s == 0:
            raise ValueError("a stress waypoint needs motor goals, a move_s or a hold_s")
        return self


class StressSpec(_Strict):
    """A policy-independent stress routine: waypoints played after the trigger."""

    relative: bool = True
    waypoints: list[Waypoint] = Field(min_length=1)
    source: str | None = None
    sha256: str | None = None

    @property
    def duration_s(self) -> float:
        """How long the routine plays."""
        return sum(w.move_s + w.hold_s for w in self.waypoints)


class SuggestSpec(_Strict):
    """The score suggestion: the signal above ``held_above`` means something is held.

    "Held" reads the signal above ``held_above`` (and below ``held_below``, when given: jaws
    that never closed read wide open). Held at the end of the stress: ``held``; held at the
    trigger but not at the end: ``lost``; otherwise, or when the trigger never fired,
    ``never`` (rubric levels; by default the top, middle and lowest).
    """

    signal: str = "gripper.pos"
    held_above: float
    held_below: float | None = None
    held: int | None = None
    lost: int | None = None
    never: int | None = None


class InstrumentSpec(_Strict):
    """The instrument of a robot session (see the module docstring)."""

    rate_hz: float = Field(30.0, gt=0, le=1000)
    time_limit_s: float = Field(30.0, gt=0)
    task: str | None = None
    warmup: bool = True
    home: dict[str, float] | None = None
    home_speed: float = Field(60.0, gt=0)
    capture: CaptureSpec | None = None
    replace: bool = False
    trigger: TriggerSpec | None = None
    stress: StressSpec | None = None
    suggest: SuggestSpec | None = None
    record: bool = True

    @field_validator("stress", mode="before")
    @classmethod
    def _stress_file(cls, value: Any) -> Any:
        if isinstance(value, str | Path):
            return load_stress(value).model_dump()
        return value

    @model_validator(mode="after")
    def _needs(self) -> InstrumentSpec:
        if self.replace and self.capture is None:
            raise ValueError("'replace: true' re-places to a captured start state; turn "
                             "'capture' on too")
        return self

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (stored with the plan)."""
        return self.model_dump(mode="json", exclude_none=True)

    def describe(self) -> list[str]:
        """The instrument in a few lines for the operator's screen.

        >>> InstrumentSpec().describe()[0].split("; ")
        ['control 30 Hz, time limit 30 s', 'capture off, re-placement off, trigger off, \
stress off, suggestion off']
        """
        def on(value: Any, text: str) -> str:
            return text if value else text.split(" ")[0] + " off"

        parts = [
            on(self.capture, "capture on" + (" (rule + key)" if self.capture is not None
                                              and self.capture.signal else " (key)")),
            on(self.replace, "re-placement on"),
            on(self.trigger, "trigger on" if self.trigger is None else
               f"trigger {self.trigger.signal} < {self.trigger.closed_below:g} for "
               f"{self.trigger.hold_s:g} s"),
            on(self.stress, "stress on" if self.stress is None else
               f"stress {len(self.stress.waypoints)} waypoints, {self.stress.duration_s:g} s"),
            on(self.suggest, "suggestion on" if self.suggest is None else
               f"suggestion {self.suggest.signal} > {self.suggest.held_above:g}"),
        ]
        return [f"control {self.rate_hz:g} Hz, time limit {self.time_limit_s:g} s; "
                + ", ".join(parts)]


_RIGS = Path(__file__).parent / "rigs"


def builtin_instruments() -> list[str]:
    """The instruments shipped with evalband (``--instrument NAME``).

    >>> builtin_instruments()
    ['sim-arm']
    """
    return sorted(p.stem for p in _RIGS.glob("*.yaml") if not p.stem.endswith("-stress"))


def _one_line(error: ValidationError, what: str) -> str:
    parts = []
    for item in error.errors():
        where = ".".join(str(x) for x in item["loc"] if not str(x).startswith("function"))
        if item["type"] == "extra_forbidden":
            parts.append(f"unknown {what} field {where!r}")
        elif item["type"] == "value_error":
            prefix = f"{where}: " if where else ""
            parts.append(prefix + str(item["msg"]).removeprefix("Value error, "))
        elif item["type"] == "missing":
            parts.append(f"the {what} needs {where!r}")
        else:
            parts.append(f"{what} field {where!r}: {item['msg']} (got {item.get('input')!r})")
    return "; ".join(dict.fromkeys(parts))


def _read_yaml(path: str | Path, what: str) -> Any:
    import yaml

    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise InvalidInputError(f"cannot read the {what} {path}: {exc.strerror}") from None
    try:
        return yaml.safe_load(text), text
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else "bad YAML"
        raise InvalidInputError(f"the {what} {path} is not valid YAML: {first}") from None


def load_stress(path: str | Path) -> StressSpec:
    """A stress routine file (its path and sha256 kept with it).

    Raises:
        InvalidInputError: unreadable, bad YAML or an invalid routine (one line).
    """
    data, text = _read_yaml(path, "stress file")
    if isinstance(data, list):
        data = {"waypoints": data}
    if not isinstance(data, Mapping):
        raise InvalidInputError(f"the stress file {path} must hold 'waypoints:' (a list); got "
                                f"{type(data).__name__}")
    data = {**data, "source": str(path), "sha256": hashlib.sha256(text.encode()).hexdigest()}
    try:
        return StressSpec.model_validate(data)
    except ValidationError as exc:
        raise InvalidInputError(f"stress file {path}: {_one_line(exc, 'stress')}") from None


def load_instrument(source: str | Path | Mapping[str, Any] | None) -> InstrumentSpec:
    """The instrument from a YAML file, a built-in name or a mapping (``None``: all off).

    A stress file named in the instrument file is read relative to it. ``"sim-arm"`` is the
    shipped instrument of a sim-arm rehearsal (every element on).

    Raises:
        InvalidInputError: unreadable, bad YAML or invalid fields (one line).

    >>> load_instrument({"trigger": {"hold_s": 2.5}}).trigger.flicker_s
    0.2
    """
    if source is None:
        return InstrumentSpec.model_validate({})
    if (isinstance(source, str | Path) and str(source) in builtin_instruments()
            and not Path(source).exists()):
        source = _RIGS / f"{source}.yaml"
    where = "instrument"
    base: Path | None = None
    if isinstance(source, Mapping):
        data: Any = dict(source)
    else:
        data, _ = _read_yaml(source, "instrument file")
        where, base = f"instrument file {source}", Path(source).parent
        if data is None:
            data = {}
    if not isinstance(data, Mapping):
        raise InvalidInputError(f"the {where} must be a mapping of instrument fields; got "
                                f"{type(data).__name__}")
    data = dict(data)
    stress = data.get("stress")
    if isinstance(stress, str) and base is not None and not Path(stress).is_absolute():
        data["stress"] = str(base / stress)
    try:
        return InstrumentSpec.model_validate(data)
    except ValidationError as exc:
        raise InvalidInputError(f"{where}: {_one_line(exc, 'instrument')}") from None
    except InvalidInputError as exc:
        raise InvalidInputError(f"{where}: {exc}") from None
