"""The Panel: a pinned, seeded evaluation specification, loaded from YAML.

A panel says which environment, which cells (the product of its factors), how many
episodes per cell, how many repeats, which budget, and which seed. Two policies run on
one panel see identical conditions, so their episodes pair by ``(cell, episode, repeat)``.

Condition seeds are a pure function of ``(panel seed, cell, episode)``: prefix-stable
(more episodes keep the earlier ones), identical for every policy, independent of worker
count, order and backend. A repeat is the *same* condition again (for flip rates), so the
repeat index does not enter the condition seed. A panel that must replay another
harness's seeds says ``condition_seeds: sequential``: episode ``i`` of every cell is then
reset with ``seed + i``, lerobot-eval's convention (``--seed`` is the first episode's seed).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from evalband.episode import TASK_OPTION_KEYS, EpisodeSpec  # there: workers need no pydantic
from evalband.errors import PanelError

__all__ = [
    "Budget",
    "as_factor_spec",
    "DesignSpec",
    "Panel",
    "EpisodeSpec",
    "Cell",
    "FactorSpec",
    "SuccessRule",
    "MetricSpec",
    "BUILTIN_METRICS",
    "load_panel",
    "builtin_panels",
    "default_condition_seed",
    "default_condition_seeds",
    "sequential_condition_seed",
    "panel_from_yaml",
]

_BUILTIN_DIR = Path(__file__).parent / "panels"
Scalar = str | int | float | bool


def _not_a_flag(value: Any) -> Any:
    """Refuse ``true``/``false`` where a count is expected (YAML's ``episodes: true`` is not 1).

    >>> _not_a_flag(5)
    5
    """
    if isinstance(value, bool):
        raise ValueError(f"expected a whole number, got {str(value).lower()} (a true/false)")
    return value


class Budget(BaseModel):
    """The evaluation budget: a number of actions, or simulated seconds (needs the env's ``dt``).

    >>> Budget(steps=30).resolve_steps(None)
    30
    >>> Budget(seconds=6.0).resolve_steps(0.2)
    30
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    steps: int | None = Field(default=None, gt=0)
    seconds: float | None = Field(default=None, gt=0)

    @field_validator("steps", mode="before")
    @classmethod
    def _steps_not_a_flag(cls, value: Any) -> Any:
        return _not_a_flag(value)

    @model_validator(mode="after")
    def _exactly_one(self) -> Budget:
        from evalband._util.limits import MAX_BUDGET_STEPS

        if (self.steps is None) == (self.seconds is None):
            raise ValueError("budget needs exactly one of 'steps' or 'seconds'")
        if self.steps is not None and self.steps > MAX_BUDGET_STEPS:
            raise ValueError(f"budget.steps is at most {MAX_BUDGET_STEPS:,} actions an "
                             f"episode; got {self.steps:,}")
        if self.seconds is not None and not math.isfinite(self.seconds):
            raise ValueError(f"budget.seconds must be a finite number; got {self.seconds}")
        return self

    def resolve_steps(self, dt: float | None) -> int:
        """The budget as a number of actions."""
        if self.steps is not None:
            return self.steps
        assert self.seconds is not None  # guaranteed by the validator
        if dt is None or dt <= 0:
            raise PanelError(
                "budget.seconds needs an environment with a positive 'dt' attribute; "
                "give budget.steps instead"
            )
        steps = round(self.seconds / dt)
        from evalband._util.limits import MAX_BUDGET_STEPS

        if steps > MAX_BUDGET_STEPS:
            raise PanelError(
                f"budget.seconds={self.seconds:g} is {steps:,} steps of dt={dt:g}, more than "
                f"the {MAX_BUDGET_STEPS:,} an episode may take; give a shorter budget"
            )
        if abs(steps * dt - self.seconds) > 1e-9 * max(1.0, self.seconds):
            raise PanelError(
                f"budget.seconds={self.seconds} is not a whole number of steps of dt={dt}"
            )
        return int(steps)


SuccessKind = Literal["terminal", "any_step", "final_step", "return"]


class SuccessRule(BaseModel):
    """How a panel decides that an episode succeeded (the panel's ``success:``).

    * ``terminal`` (default): the env terminates and its info says success (``key``, or an
      ``outcome`` of ``success``/``failure``); a termination without it is a failure.
    * ``any_step``: success at the first step whose ``info[key]`` holds; the episode ends there.
    * ``final_step``: the episode plays to its end (budget, env truncation or termination)
      and ``info[key]`` of the last step decides.
    * ``return``: the episode plays to its end; success when the summed reward is
      ``>= threshold``.

    With ``threshold`` set, ``info[key]`` "holds" when it is ``>= threshold`` (e.g. Reacher's
    ``reward_dist >= -0.02``), else when it is truthy. An episode that ends without success
    is a ``failure`` if the env terminated, else a ``timeout``.

    >>> SuccessRule(rule="any_step", key="success").rule
    'any_step'
    >>> SuccessRule.model_validate("final_step").key
    'is_success'
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    rule: SuccessKind = "terminal"
    key: str = "is_success"
    threshold: float | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return {"rule": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _return_needs_threshold(self) -> SuccessRule:
        if self.rule == "return" and self.threshold is None:
            raise ValueError("success rule 'return' needs a threshold (return >= threshold)")
        return self


BUILTIN_METRICS = ("return", "reward_max", "reward_final")
"""The metrics every played episode stores (summed, largest and last reward); a panel's other
metric names are the env's numeric info keys at the last step."""


MetricType = Literal["unbounded", "skewed", "bounded", "ordinal", "progress"]
"""What a metric's values are (:attr:`MetricSpec.type`): it sets the estimand (mean or median)."""


class MetricSpec(BaseModel):
    """One declared per-episode metric (an entry of the panel's ``metrics:``).

    A plain name (``coverage``) is an info key kept at the last step, higher is better, not
    primary. The mapping form declares how it is read: ``direction`` (``higher`` or
    ``lower`` is better), a non-inferiority ``margin`` (a positive worsening that is
    tolerated), ``primary`` (its per-slice differences join the verdict's family, decided with
    the success slices under one family-wise error rate), ``bounded`` (its values lie in
    ``[0, 1]``; unset: read from the values) and ``type`` (what the values are, which sets
    the estimand: ``unbounded`` and ``bounded`` are summarised by their mean, ``skewed``,
    ``ordinal`` -- scored levels such as 0-3 -- and ``progress`` -- a 0-100 score -- by their
    median; unset: ``bounded`` when the values lie in ``[0, 1]``, else ``skewed`` when their
    sample skewness exceeds 1 in size, else ``unbounded``; see docs/metrics.md). The
    built-in ``return``, ``reward_max`` and ``reward_final`` may be declared too (to make one
    primary, or lower-is-better).
    Analysis settings: they do not enter the panel's fingerprint.

    >>> MetricSpec.model_validate("coverage").direction
    'higher'
    >>> MetricSpec(name="return", primary=True, margin=0.5).sign
    1
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    direction: Literal["higher", "lower"] = "higher"
    margin: float | None = Field(default=None, gt=0)
    primary: bool = False
    bounded: bool | None = None
    type: MetricType | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return {"name": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _type_agrees(self) -> MetricSpec:
        if self.type is not None and self.bounded is not None and (
                self.bounded != (self.type == "bounded")):
            raise ValueError(f"metric {self.name!r}: bounded: {str(self.bounded).lower()} "
                             f"contradicts type: {self.type}")
        return self

    @property
    def sign(self) -> int:
        """``+1`` when higher is better, ``-1`` when lower is."""
        return 1 if self.direction == "higher" else -1


FactorTarget = Literal["options", "env_kwargs", "task"]


class FactorSpec(BaseModel):
    """A factor with a target: what its values set.

    ``target``: ``options`` (reset options, the default), ``env_kwargs`` (constructor
    arguments: each cell builds its own env; a level's ``instruction`` or ``prompt`` goes to
    the policy instead) or ``task`` (given to the policy, not the env).
    ``values`` (each sets ``{factor: value}``) or ``levels`` (label -> mapping it sets).
    ``dynamics_only: true`` declares that the factor acts on dynamics and leaves the initial
    observation unchanged (otherwise such a factor is refused as ignored by the env).

    >>> FactorSpec(target="env_kwargs", values=[0.1, 1.0]).labels()
    ['0.1', '1.0']
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    target: FactorTarget = "options"
    values: list[Scalar] | None = None
    levels: dict[str, dict[str, Any]] | None = None
    dynamics_only: bool = False

    @model_validator(mode="after")
    def _one_of(self) -> FactorSpec:
        if (self.values is None) == (self.levels is None):
            raise ValueError("a factor needs exactly one of 'values' or 'levels'")
        return self

    def labels(self) -> list[str]:
        """The value labels, in declared order."""
        if self.levels is not None:
            return list(self.levels)
        return [str(v) for v in self.values or []]

    def settings(self, name: str) -> list[tuple[str, dict[str, Any]]]:
        """``(label, mapping this level sets)`` per level."""
        if self.levels is not None:
            return [(label, dict(opts)) for label, opts in self.levels.items()]
        return [(str(v), {name: v}) for v in self.values or []]

    def canonical(self) -> Any:
        """The fingerprinted content (a plain reset-option factor keeps its old form)."""
        body: Any = self.values if self.values is not None else self.levels
        if self.target == "options":
            return body
        return {"target": self.target, "values" if self.values is not None else "levels": body}


FactorValue = list[Scalar] | FactorSpec | dict[str, dict[str, Any]]


def as_factor_spec(levels: FactorValue) -> FactorSpec:
    """Any factor form as a :class:`FactorSpec` (a list or label mapping: reset options).

    >>> as_factor_spec([1, 2]).target
    'options'
    """
    if isinstance(levels, FactorSpec):
        return levels
    if isinstance(levels, dict):
        return FactorSpec(levels=levels)
    return FactorSpec(values=levels)


@dataclass(frozen=True)
class Cell:
    """One cell of the panel: a combination of factor values.

    Attributes:
        key: canonical key such as ``"dynamics=nominal,start=train"`` (``""`` without factors).
        slices: factor -> value label.
        options: the env reset options this cell passes (factor -> option value).
        env_kwargs: constructor arguments this cell adds to the panel's ``env_kwargs``.
        task: what this cell tells the policy (factor -> value) for ``task`` factors.
    """

    key: str
    slices: dict[str, str]
    options: dict[str, Any]
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    task: dict[str, Any] = field(default_factory=dict)


def default_condition_seed(seed: int, cell: str, episode: int) -> int:
    """Derive a 32-bit condition seed from ``(panel seed, cell key, episode)``.

    Uses :class:`numpy.random.SeedSequence` with the panel seed as entropy and a spawn key
    built from a stable hash of the cell key and the episode index, so a cell's seeds do not
    move when other cells are added, and episode ``i`` is the same in a 64- or 256-episode panel.

    >>> default_condition_seed(0, "", 0) == default_condition_seed(0, "", 0)
    True
    >>> default_condition_seed(0, "a=1", 0) != default_condition_seed(0, "a=2", 0)
    True
    """
    import numpy as np

    cell_hash = int.from_bytes(hashlib.sha256(cell.encode()).digest()[:4], "little")
    sequence = np.random.SeedSequence(entropy=int(seed), spawn_key=(cell_hash, int(episode)))
    return int(sequence.generate_state(1, dtype=np.uint32)[0])


_MASK32 = 0xFFFFFFFF


def _hashmix(values: Any, const: list[int]) -> Any:
    """One step of :class:`numpy.random.SeedSequence`'s hash, on a uint32 array."""
    import numpy as np

    values = values ^ np.uint32(const[0])
    const[0] = (const[0] * 0x931E8875) & _MASK32
    values = values * np.uint32(const[0])
    return values ^ (values >> np.uint32(16))


def _mix(x: Any, y: Any) -> Any:
    import numpy as np

    result = np.uint32(0xCA01F9DD) * x - np.uint32(0x4973F715) * y
    return result ^ (result >> np.uint32(16))


def default_condition_seeds(seed: int, cell: str, episodes: Any) -> Any:
    """:func:`default_condition_seed` of many episodes of one cell at once (a uint32 array).

    The same numbers, bit for bit: :class:`numpy.random.SeedSequence`'s entropy mixing
    (numpy's ``bit_generator.pyx``) written on whole uint32 columns, for imports of millions
    of rows. Episode indices of 2**32 or more take the one-at-a-time path.

    >>> import numpy as np
    >>> eps = np.array([0, 1, 7])
    >>> [int(s) for s in default_condition_seeds(3, "a=1", eps)] == [
    ...     default_condition_seed(3, "a=1", int(e)) for e in eps]
    True
    """
    import numpy as np

    episodes = np.asarray(episodes, dtype=np.int64)
    if int(seed) < 0 or (episodes.size and (episodes.min() < 0 or episodes.max() > _MASK32)):
        return np.array(
            [default_condition_seed(seed, cell, int(e)) for e in episodes], dtype=np.uint32
        )
    cell_hash = int.from_bytes(hashlib.sha256(cell.encode()).digest()[:4], "little")
    run: list[int] = []
    rest = int(seed)
    while rest or not run:  # the seed as little-endian 32-bit words ([0] for 0)
        run.append(rest & _MASK32)
        rest >>= 32
    n = episodes.shape[0]
    words: list[Any] = [np.full(n, w, dtype=np.uint32) for w in run]
    while len(words) < 4:  # the run entropy is padded to the pool size before a spawn key
        words.append(np.zeros(n, dtype=np.uint32))
    words.append(np.full(n, cell_hash, dtype=np.uint32))
    words.append(episodes.astype(np.uint32))
    const = [0x43B0D7E5]
    mixer = [_hashmix(words[i], const) for i in range(4)]
    for src in range(4):
        for dst in range(4):
            if src != dst:
                mixer[dst] = _mix(mixer[dst], _hashmix(mixer[src], const))
    for src in range(4, len(words)):
        for dst in range(4):
            mixer[dst] = _mix(mixer[dst], _hashmix(words[src], const))
    value = mixer[0] ^ np.uint32(0x8B51F9DD)
    value = value * np.uint32((0x8B51F9DD * 0x58F38DED) & _MASK32)
    return value ^ (value >> np.uint32(16))


class DesignSpec(BaseModel):
    """A sequential comparison's design, declared with the panel before any episode is played.

    ``compare --sequential`` of runs of this panel (and ``run --until-decided`` on it) use it:
    the drop to catch (``effect``), the target ``power`` per slice, the family-wise ``alpha``,
    the assumed probability that a matched pair disagrees (``discordant``; None: the
    conservative one) and a maximum of pairs per slice (``max_pairs``; None: the planned
    pairs). An analysis setting: it does not enter the fingerprint.

    >>> DesignSpec(effect=0.2).power
    0.8
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    effect: float = Field(default=0.10, gt=0, lt=1)
    power: float = Field(default=0.8, gt=0, lt=1)
    alpha: float = Field(default=0.05, gt=0, lt=1)
    discordant: float | None = Field(default=None, gt=0, le=1)
    max_pairs: int | None = Field(default=None, ge=1)


class Panel(BaseModel):
    """An evaluation panel.

    Fields that change which episodes are played (env, env_kwargs, episodes, seed, budget,
    factors, repeats) enter the :attr:`fingerprint`; cosmetic fields (name, description) and
    analysis settings (slice weights, required slices, latency budgets, margins, the sequential
    ``design``) do not, so
    runs stay comparable when only the reading of them changes.

    >>> p = Panel(name="demo", env="evalband/Coin-v0", episodes=4, seed=1, budget={"steps": 5},
    ...           factors={"p": [0.2, 0.8]})
    >>> [c.key for c in p.cells()]
    ['p=0.2', 'p=0.8']
    >>> len(p.episode_specs())
    8
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str = ""
    env: str
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    imports: list[str] = Field(default_factory=list)
    episodes: int = Field(gt=0)
    seed: int = Field(default=0, ge=0)
    condition_seeds: Literal["derived", "sequential"] = "derived"
    budget: Budget
    time_limit: Literal["budget", "env"] = "budget"
    control_dt: float | None = Field(default=None, gt=0)
    success: SuccessRule = Field(default_factory=SuccessRule)
    metrics: list[str | MetricSpec] = Field(default_factory=list)
    factors: dict[str, FactorValue] = Field(default_factory=dict)
    repeats: int = Field(default=1, gt=0)
    slice_weights: dict[str, float] = Field(default_factory=dict)
    required_slices: list[str] = Field(
        default_factory=list, validation_alias=AliasChoices("required_slices", "primary_slices")
    )
    latency_budget_ms: dict[str, float] = Field(default_factory=dict)
    non_inferiority_margin: float | dict[str, float] | None = None
    design: DesignSpec | None = None
    episode_timeout_s: float | None = Field(default=None, gt=0)

    @field_validator("episodes", "seed", "repeats", mode="before")
    @classmethod
    def _counts_not_flags(cls, value: Any) -> Any:
        return _not_a_flag(value)

    @field_validator("factors")
    @classmethod
    def _factors_nonempty(cls, value: dict[str, FactorValue]) -> dict[str, FactorValue]:
        for name, levels in value.items():
            labels = as_factor_spec(levels).labels()
            if len(labels) == 0:
                raise ValueError(f"factor {name!r} has no values")
            if len(set(labels)) != len(labels):
                raise ValueError(f"factor {name!r} has repeated values {labels}")
        return value

    @model_validator(mode="after")
    def _planned_size(self) -> Panel:
        from evalband._util.limits import MAX_PLANNED_EPISODES, check_size

        cells = math.prod(len(as_factor_spec(levels).labels())
                          for levels in self.factors.values())
        check_size(cells * self.episodes * self.repeats, MAX_PLANNED_EPISODES,
                   f"panel {self.name} plans cells x episodes x repeats episodes",
                   "split it into several panels, or lower episodes")
        return self

    @field_validator("non_inferiority_margin")
    @classmethod
    def _margins_in_rate(cls, value: float | dict[str, float] | None
                         ) -> float | dict[str, float] | None:
        margins = value if isinstance(value, dict) else {"": value}
        for key, margin in margins.items():
            if margin is not None and not 0.0 < margin < 1.0:  # NaN too
                where = f" for {key!r}" if key else ""
                raise ValueError(f"a margin{where} must be between 0 and 1 (exclusive; a "
                                 "drop in success rate, 0.05 = 5 points)")
        return value

    @field_validator("slice_weights")
    @classmethod
    def _weights_positive(cls, value: dict[str, float]) -> dict[str, float]:
        for key, weight in value.items():
            if not weight >= 0:
                raise ValueError(f"slice weight for {key!r} must be >= 0, got {weight}")
        return value

    def with_overrides(self, episodes: int | None = None, seed: int | None = None) -> Panel:
        """This panel with another episode count or seed (``run --episodes N --seed S``).

        A different panel: its :attr:`fingerprint` is not this one's, so its runs never pair
        with this panel's unless forced. Validated as the panel file would be.

        >>> p = Panel(name="p", env="evalband/Coin-v0", episodes=50, budget={"steps": 5})
        >>> q = p.with_overrides(episodes=4, seed=7)
        >>> (q.episodes, q.seed, q.fingerprint != p.fingerprint)
        (4, 7, True)
        """
        from evalband.errors import PanelError

        data = self.model_dump()
        for name, value in (("episodes", episodes), ("seed", seed)):
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise PanelError(f"`{name}` must be a whole number; got {value!r}",
                                 parameters=(name,))
            data[name] = value
        try:
            return Panel.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise PanelError(
                f"`{first['loc'][0]}` {first['msg'].lower()}; got {first.get('input')!r}",
                parameters=tuple(str(part) for part in first["loc"][:1]),
            ) from None

    @field_validator("metrics")
    @classmethod
    def _metrics_once(cls, value: list[str | MetricSpec]) -> list[str | MetricSpec]:
        names = [m if isinstance(m, str) else m.name for m in value]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"metric(s) {', '.join(twice)} declared more than once")
        return value

    @property
    def metric_specs(self) -> list[MetricSpec]:
        """Every declared metric as a :class:`MetricSpec` (a plain name in its default form).

        >>> p = Panel(name="p", env="evalband/Coin-v0", episodes=1, budget={"steps": 1},
        ...           metrics=["coverage", {"name": "return", "primary": True}])
        >>> [(m.name, m.primary) for m in p.metric_specs]
        [('coverage', False), ('return', True)]
        """
        return [MetricSpec(name=m) if isinstance(m, str) else m for m in self.metrics]

    @property
    def info_keys(self) -> list[str]:
        """The declared metrics that are info keys (not the built-in reward metrics)."""
        return [m.name for m in self.metric_specs if m.name not in BUILTIN_METRICS]

    # ------------------------------------------------------------------ identity
    def result_content(self) -> dict[str, Any]:
        """The canonical content that decides which episodes are played and how they count.

        Fields added later (time limit, control period, success rule) enter only when they
        differ from their defaults, so older panels keep their fingerprints.
        """
        content: dict[str, Any] = {
            "env": self.env,
            "env_kwargs": self.env_kwargs,
            "episodes": self.episodes,
            "seed": self.seed,
            "budget": self.budget.model_dump(exclude_none=True),
            "factors": {k: as_factor_spec(v).canonical() for k, v in self.factors.items()},
            "repeats": self.repeats,
        }
        if self.time_limit != "budget":
            content["time_limit"] = self.time_limit
        if self.condition_seeds != "derived":
            content["condition_seeds"] = self.condition_seeds
        if self.control_dt is not None:
            content["control_dt"] = self.control_dt
        if self.success != SuccessRule():
            content["success"] = self.success.model_dump(exclude_none=True)
        return content

    @property
    def fingerprint(self) -> str:
        """sha256 of :meth:`result_content` as canonical JSON."""
        canonical = json.dumps(self.result_content(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    def to_yaml(self) -> str:
        """The panel as YAML (round-trips through :func:`load_panel`)."""
        data = self.model_dump(mode="json", exclude_defaults=True)
        data["budget"] = self.budget.model_dump(exclude_none=True)
        return yaml.safe_dump(data, sort_keys=False)

    # ------------------------------------------------------------------ cells and episodes
    def cells(self) -> list[Cell]:
        """The cells, as the product of the factors in declared order."""
        if not self.factors:
            return [Cell(key="", slices={}, options={})]
        axes: list[list[tuple[str, str, str, dict[str, Any]]]] = []
        for name, levels in self.factors.items():
            spec = as_factor_spec(levels)
            axes.append([(name, label, spec.target, sets) for label, sets in spec.settings(name)])
        cells = []
        for combo in itertools.product(*axes):
            slices = {name: label for name, label, _, _ in combo}
            targets: dict[str, dict[str, Any]] = {"options": {}, "env_kwargs": {}, "task": {}}
            for _, _, target, sets in combo:
                if target == "env_kwargs":  # a level's instruction is the policy's, not the env's
                    told = {k: v for k, v in sets.items() if k in TASK_OPTION_KEYS}
                    targets["task"].update(told)
                    sets = {k: v for k, v in sets.items() if k not in told}
                targets[target].update(sets)
            key = ",".join(f"{name}={label}" for name, label, _, _ in combo)
            cells.append(Cell(key=key, slices=slices, options=targets["options"],
                              env_kwargs=targets["env_kwargs"], task=targets["task"]))
        return cells

    def seed_function(self) -> Any:
        """The panel's condition-seed function ``(seed, cell, episode) -> int``.

        ``condition_seeds: sequential`` gives :func:`sequential_condition_seed` (``seed +
        episode``, lerobot-eval's); otherwise the env's own or the default
        (:func:`condition_seed_function`).

        >>> p = Panel(name="l", env="evalband/Coin-v0", episodes=3, seed=1000,
        ...           condition_seeds="sequential", budget={"steps": 5})
        >>> [s.condition_seed for s in p.episode_specs()]
        [1000, 1001, 1002]
        """
        if self.condition_seeds == "sequential":
            return sequential_condition_seed
        return condition_seed_function(self.env, self.imports)

    def episode_specs(self) -> list[EpisodeSpec]:
        """Every planned episode, in a fixed order decided up front (cell, episode, repeat)."""
        seed_fn = self.seed_function()
        specs = []
        for cell in self.cells():
            if seed_fn is default_condition_seed and self.episodes >= 16:
                # the same seeds, bit for bit, ~50x faster than one SeedSequence each
                seeds = default_condition_seeds(self.seed, cell.key, range(self.episodes))
                cell_seeds = [int(x) for x in seeds]
            else:
                cell_seeds = [seed_fn(self.seed, cell.key, e) for e in range(self.episodes)]
            for episode, seed in enumerate(cell_seeds):
                for repeat in range(self.repeats):
                    specs.append(
                        EpisodeSpec(cell.key, episode, repeat, seed, cell.slices, cell.options,
                                    cell.env_kwargs, cell.task)
                    )
        return specs

    def iter_slices(self) -> Iterator[tuple[str, str]]:
        """Every ``(factor, value label)`` pair."""
        for cell in self.cells():
            yield from cell.slices.items()


def sequential_condition_seed(seed: int, cell: str, episode: int) -> int:
    """``seed + episode`` in every cell: lerobot-eval's seeds (panel ``condition_seeds``).

    lerobot's ``eval_policy`` (``src/lerobot/scripts/lerobot_eval.py``, huggingface/lerobot)
    resets the ``i``-th rollout with ``start_seed + i`` (``start_seed`` is ``--seed``,
    1000 by default), the same seeds for every task.

    >>> sequential_condition_seed(1000, "task=0", 2)
    1002
    """
    return int(seed) + int(episode)


def condition_seed_function(env: str, imports: list[str] | None = None) -> Any:
    """The condition-seed function for an env: its class's ``condition_seed`` or the default.

    An environment whose conditions come from its own stream (the reaching lab's LCG) defines
    a static ``condition_seed(seed, cell, episode) -> int``; every other env gets
    :func:`default_condition_seed`.
    """
    from evalband.envs._resolve import env_class, prepare_imports

    try:
        prepare_imports(imports=imports or [])
    except PanelError:
        return default_condition_seed
    cls = env_class(env)
    fn = getattr(cls, "condition_seed", None) if cls is not None else None
    return fn if callable(fn) else default_condition_seed


def builtin_panels() -> dict[str, Path]:
    """Panels shipped with evalband, by name.

    >>> "reach1d" in builtin_panels()
    True
    """
    return {p.stem: p for p in sorted(_BUILTIN_DIR.glob("*.yaml"))}


def _format_validation_error(error: ValidationError, source: str) -> str:
    parts = []
    for item in error.errors():
        where = ".".join(str(x) for x in item["loc"]) or "(top level)"
        if item["type"] == "extra_forbidden":
            allowed = ", ".join(Panel.model_fields)
            parts.append(f"unknown field '{where}' (allowed: {allowed})")
        elif item["type"] == "missing":
            parts.append(f"missing field '{where}'")
        else:
            got = item.get("input")
            parts.append(f"field '{where}': {item['msg']} (got {got!r})")
    return f"panel {source}: " + "; ".join(parts)


def load_panel(source: str | Path | Mapping[str, Any], *, check_env: bool = True) -> Panel:
    """Load a panel from a YAML path, a built-in panel name, or a mapping.

    Args:
        source: a YAML path, a built-in panel name, or a mapping of fields.
        check_env: require the env to resolve here (off for panels of imported results,
            whose env may not be installed on this machine).

    Raises:
        PanelError: the file is missing, not YAML, or has an unknown or ill-typed field
            (the message names the field).

    >>> load_panel("reach1d").episodes
    64
    """
    if isinstance(source, Mapping):
        data: Any = dict(source)
        label = "(mapping)"
    else:
        path = Path(source)
        if not path.exists() and str(source) in builtin_panels():
            path = builtin_panels()[str(source)]
        if not path.is_file():
            names = ", ".join(builtin_panels())
            raise PanelError(
                f"panel {source!s} not found: expected a YAML file or a built-in panel ({names})"
            )
        label = str(source)
        try:
            data = yaml.safe_load(path.read_bytes().decode("utf-8"))
        except yaml.YAMLError as exc:
            first = str(exc).splitlines()[0] if str(exc) else "invalid YAML"
            raise PanelError(f"panel {label} is not valid YAML: {first}") from None
        except UnicodeDecodeError as exc:
            raise PanelError(f"panel {label} is not UTF-8 text (byte {exc.start + 1}); save "
                             "it as UTF-8") from None
        except RecursionError:
            raise PanelError(f"panel {label} is nested too deeply to read") from None
    if not isinstance(data, dict):
        raise PanelError(f"panel {label}: expected a mapping of fields, got {type(data).__name__}")
    if "name" not in data and not isinstance(source, Mapping):
        data["name"] = Path(source).stem
    if "budget" not in data and check_env and isinstance(data.get("env"), str):
        data["budget"] = _registered_budget(data, label)
    try:
        panel = Panel.model_validate(data)
    except ValidationError as exc:
        raise PanelError(_format_validation_error(exc, label)) from None
    if check_env:
        _check_env(panel, label)
    return panel


@functools.lru_cache(maxsize=64)
def panel_from_yaml(text: str) -> Panel:
    """The panel stored in a run manifest (its env is not required to be importable here).

    Parsed by libyaml when PyYAML has it (the same data, without the pure-Python parser's
    milliseconds), and kept per text: a panel is immutable, and two runs of one panel (a
    comparison, a report) share it.

    >>> panel = load_panel("reach1d")
    >>> panel_from_yaml(panel.to_yaml()).fingerprint == panel.fingerprint
    True
    """
    data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506
    try:
        return Panel.model_validate(data)
    except ValidationError as exc:
        raise PanelError(_format_validation_error(exc, "(stored manifest)")) from None


def _registered_budget(data: dict[str, Any], label: str) -> dict[str, int]:
    """A panel without ``budget``: the env's registered ``TimeLimit`` as ``budget.steps``."""
    from evalband.envs._resolve import prepare_imports, registered_time_limit

    imports = data.get("imports") or []
    prepare_imports(imports=[str(m) for m in imports] if isinstance(imports, list) else [])
    steps = registered_time_limit(str(data["env"]))
    if steps is None:
        raise PanelError(
            f"panel {label}: missing field 'budget' and env {data['env']!r} registers no "
            "time limit; give budget: {steps: N} or {seconds: S}"
        )
    return {"steps": int(steps)}


def _check_env(panel: Panel, label: str) -> None:
    from evalband.envs._resolve import env_entry, prepare_imports

    try:
        prepare_imports(imports=panel.imports)
        env_entry(panel.env)
    except PanelError as exc:
        raise type(exc)(f"panel {label}: field 'env' = {panel.env!r}: {exc}") from None
