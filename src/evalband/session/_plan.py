"""Hardware evaluation sessions: the rubric, the trials and the seeded, blinded schedule.

A session (seed 004's grasp benchmark protocol) runs every policy on every scene, back to
back: one *block* per scene holds each policy x attempt exactly once, in an order shuffled
within the block by a stream derived from ``(seed, scene)``. Scene conditions and rig drift are
then shared by all policies instead of confounded with one of them. With ``blind=True`` the
operator sees a code per policy (``P-7K2``), drawn from the seed, never the name.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from evalband.errors import InvalidInputError

__all__ = [
    "DEFAULT_LEVELS",
    "Rubric",
    "Trial",
    "SessionPlan",
    "plan_session",
    "blind_codes",
    "check_session_id",
    "split_specs",
]

DEFAULT_LEVELS: Mapping[int, str] = {
    0: "never held",
    1: "acquired but lost",
    2: "held through the stress",
}
"""Seed 004's 3-level ordinal grasp score."""

_CODE_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ"  # no 0/O, 1/I: read aloud without doubt
_CODE_STREAM = 0xB1D  # child stream of the seed that draws blind codes (scenes use 1..N)


def _rubric_spec(data: Mapping[str, Any]) -> Any:
    """``data`` validated by :class:`~evalband.session._files.RubricSpec` (one-line errors)."""
    from pydantic import ValidationError

    from evalband.session._files import RubricSpec, one_line

    try:
        return RubricSpec.model_validate(data)
    except ValidationError as exc:
        raise InvalidInputError(one_line(exc, list(RubricSpec.model_fields), "rubric")) from None


@dataclass(frozen=True)
class Rubric:
    """The ordinal score levels of a trial and the level from which a trial is a success.

    Levels are single digits (the operator presses the key). A score ``>= success_at`` is a
    success. The fields are validated by :class:`~evalband.session._files.RubricSpec`
    (pydantic), also when a rubric is built in code. The default is seed 004's grasp score:
    0 never held, 1 acquired but lost, 2 held through the stress (success).

    Raises:
        InvalidInputError: levels that are not integers 0-9 with a text each, fewer than two
            levels, or ``success_at`` not among the levels or equal to the lowest one.

    >>> r = Rubric()
    >>> r.is_success(2), r.is_success(1)
    (True, False)
    >>> Rubric({0: "miss", 1: "hit"}, success_at=1).describe()
    '0 miss · 1 hit (success >= 1)'
    """

    levels: dict[int, str] = field(default_factory=lambda: dict(DEFAULT_LEVELS))
    success_at: int = 2

    def __post_init__(self) -> None:
        spec = _rubric_spec({"levels": self.levels, "success_at": self.success_at})
        object.__setattr__(self, "levels", dict(spec.levels))
        object.__setattr__(self, "success_at", spec.success_at)

    def check_score(self, score: int) -> int:
        """The score, when it is one of the levels.

        Raises:
            InvalidInputError: when it is not.

        >>> Rubric().check_score(1)
        1
        """
        if isinstance(score, bool) or not isinstance(score, int) or score not in self.levels:
            raise InvalidInputError(
                f"a score must be one of the rubric levels {list(self.levels)}; got {score!r}"
            )
        return score

    def is_success(self, score: int) -> bool:
        """Whether a score counts as a success (``score >= success_at``).

        Raises:
            InvalidInputError: when the score is not one of the levels.

        >>> Rubric().is_success(2)
        True
        """
        return self.check_score(score) >= self.success_at

    def describe(self) -> str:
        """The levels on one line, with the success threshold.

        >>> Rubric().describe()
        '0 never held · 1 acquired but lost · 2 held through the stress (success >= 2)'
        """
        levels = " · ".join(f"{k} {v}" for k, v in self.levels.items())
        return f"{levels} (success >= {self.success_at})"

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (level keys stay ints; :meth:`from_dict` accepts digit strings).

        >>> Rubric().as_dict()["success_at"]
        2
        """
        return {"levels": dict(self.levels), "success_at": self.success_at}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Rubric:
        """A rubric from ``{"levels": {...}, "success_at": k}`` (``success_at`` defaults to 2).

        Raises:
            InvalidInputError: a missing ``levels``, unknown keys or invalid values.

        >>> Rubric.from_dict({"levels": {"0": "miss", "1": "hit"}, "success_at": 1}).levels
        {0: 'miss', 1: 'hit'}
        """
        if not isinstance(data, Mapping):
            raise InvalidInputError(
                "a rubric must be a mapping with 'levels' and 'success_at'; "
                f"got {type(data).__name__}"
            )
        spec = _rubric_spec(data)
        return cls(levels=spec.levels, success_at=spec.success_at)

    @classmethod
    def from_yaml(cls, path: str | Path) -> Rubric:
        r"""Load a rubric YAML file (``levels:`` mapping and ``success_at:``).

        Raises:
            InvalidInputError: an unreadable file, bad YAML or an invalid rubric; the message
                names the file.

        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "rubric.yaml"
        >>> _ = p.write_text("levels: {0: miss, 1: touched, 2: grasped}\nsuccess_at: 1\n")
        >>> Rubric.from_yaml(p).describe()
        '0 miss · 1 touched · 2 grasped (success >= 1)'
        """
        import yaml

        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text())
        except OSError as exc:
            raise InvalidInputError(f"cannot read the rubric file {path}: {exc}") from None
        except yaml.YAMLError as exc:
            first = str(exc).splitlines()[0] if str(exc) else "bad YAML"
            raise InvalidInputError(f"the rubric file {path} is not valid YAML: {first}") from None
        try:
            return cls.from_dict(data)
        except InvalidInputError as exc:
            raise InvalidInputError(f"rubric file {path}: {exc}") from None


@dataclass(frozen=True)
class Trial:
    """One planned trial of a session.

    Attributes:
        index: 0-based position in the whole schedule.
        scene: 1-based block number (a block is one scene).
        attempt: 1-based attempt of this policy on this scene.
        policy: the real policy name.
        code: the blind code shown to the operator (the policy name when not blinded).
        position: 0-based order inside the block.

    >>> Trial(index=0, scene=1, attempt=1, policy="A", code="A", position=0).scene
    1
    """

    index: int
    scene: int
    attempt: int
    policy: str
    code: str
    position: int

    def as_dict(self) -> dict[str, Any]:
        """The fields as a dict.

        >>> Trial(0, 1, 1, "A", "A", 0).as_dict()["policy"]
        'A'
        """
        return {
            "index": self.index,
            "scene": self.scene,
            "attempt": self.attempt,
            "policy": self.policy,
            "code": self.code,
            "position": self.position,
        }


@dataclass(frozen=True)
class SessionPlan:
    """A planned session: who runs, where, in which order, and how trials are scored.

    Build one with :func:`plan_session`; ``as_dict``/``from_dict`` round-trip it through JSON
    (the store keeps it so).

    >>> plan = plan_session(["A", "B"], scenes=2, attempts=1, seed=3, session_id="demo")
    >>> SessionPlan.from_dict(json.loads(json.dumps(plan.as_dict()))) == plan
    True
    """

    session_id: str
    policies: tuple[str, ...]
    scenes: int
    attempts: int
    seed: int
    blind: bool
    codes: dict[str, str]
    positive_control: str | None
    rubric: Rubric
    created_at: str
    trials: tuple[Trial, ...]
    specs: dict[str, str] = field(default_factory=dict)
    instrument: dict[str, Any] | None = None

    def spec(self, policy: str) -> str:
        """The policy spec a robot session loads for ``policy`` (its name when none is given).

        >>> plan_session(["A"], 1, 1, 0, session_id="x", specs={"A": "sim-arm:grasp"}).spec("A")
        'sim-arm:grasp'
        """
        return self.specs.get(policy, policy)

    @property
    def n_trials(self) -> int:
        """How many trials the schedule holds (policies x attempts x scenes).

        >>> plan_session(["A", "B", "C"], scenes=4, attempts=2, seed=0, session_id="x").n_trials
        24
        """
        return len(self.trials)

    def label(self, policy: str) -> str:
        """What the operator sees for a policy: its code when blinded, else its name.

        >>> plan_session(["A"], scenes=1, attempts=2, seed=0, session_id="x").label("A")
        'A'
        """
        return self.codes[policy] if self.blind else policy

    def block(self, scene: int) -> tuple[Trial, ...]:
        """The trials of one scene, in their order.

        >>> [t.position for t in plan_session(["A", "B"], 2, 1, 0, session_id="x").block(2)]
        [0, 1]
        """
        return tuple(t for t in self.trials if t.scene == scene)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form.

        >>> sorted(plan_session(["A"], 1, 2, 0, session_id="x").as_dict())[:4]
        ['attempts', 'blind', 'codes', 'created_at']
        """
        out = {
            "session_id": self.session_id,
            "policies": list(self.policies),
            "scenes": self.scenes,
            "attempts": self.attempts,
            "seed": self.seed,
            "blind": self.blind,
            "codes": dict(self.codes),
            "positive_control": self.positive_control,
            "rubric": self.rubric.as_dict(),
            "created_at": self.created_at,
            "trials": [t.as_dict() for t in self.trials],
        }
        if self.specs:
            out["specs"] = dict(self.specs)
        if self.instrument is not None:
            out["instrument"] = dict(self.instrument)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SessionPlan:
        """The plan from :meth:`as_dict` output.

        Raises:
            InvalidInputError: when a field is missing or ill-typed.

        >>> plan = plan_session(["A"], 1, 1, 0, session_id="x")
        >>> SessionPlan.from_dict(plan.as_dict()).trials == plan.trials
        True
        """
        try:
            return cls(
                session_id=str(data["session_id"]),
                policies=tuple(str(p) for p in data["policies"]),
                scenes=int(data["scenes"]),
                attempts=int(data["attempts"]),
                seed=int(data["seed"]),
                blind=bool(data["blind"]),
                codes={str(k): str(v) for k, v in data["codes"].items()},
                positive_control=(
                    None if data.get("positive_control") is None
                    else str(data["positive_control"])
                ),
                rubric=Rubric.from_dict(data["rubric"]),
                created_at=str(data["created_at"]),
                trials=tuple(
                    Trial(
                        index=int(t["index"]),
                        scene=int(t["scene"]),
                        attempt=int(t["attempt"]),
                        policy=str(t["policy"]),
                        code=str(t["code"]),
                        position=int(t["position"]),
                    )
                    for t in data["trials"]
                ),
                specs={str(k): str(v) for k, v in (data.get("specs") or {}).items()},
                instrument=None if data.get("instrument") is None else dict(data["instrument"]),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            if isinstance(exc, InvalidInputError):
                raise
            raise InvalidInputError(
                f"a stored session plan is incomplete or ill-typed ({type(exc).__name__}: "
                f"{exc}); expected the fields of SessionPlan.as_dict()"
            ) from None


def split_specs(entries: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """``NAME=SPEC`` entries as the names and their specs (a bare entry is both).

    The part before the first ``=`` is a name when it holds no ``:``, ``/``, ``?`` (a spec
    such as ``lerobot:PATH?device=cuda`` keeps its ``=``).

    >>> split_specs(["GN=lerobot:out/gn?device=cuda", "sim-arm:never"])
    (['GN', 'sim-arm:never'], {'GN': 'lerobot:out/gn?device=cuda'})
    """
    names: list[str] = []
    specs: dict[str, str] = {}
    for entry in entries:
        text = str(entry).strip()
        name, sep, spec = text.partition("=")
        if sep and name.strip() and not any(c in name for c in ":/?"):
            names.append(name.strip())
            specs[name.strip()] = spec.strip()
        else:
            names.append(text)
    return names, specs


def _count(value: Any, what: str) -> int:
    """``value`` as a count >= 1; ``what`` is the argument's name (the command line's flag)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise InvalidInputError(f"`{what}` must be a whole number >= 1; got {value!r}",
                                parameters=(what,))
    if int(value) < 1:
        raise InvalidInputError(f"`{what}` must be a whole number >= 1; got {int(value)}",
                                parameters=(what,))
    return int(value)


def check_session_id(session_id: str) -> str:
    """The id, when it is 1-64 characters of letters, digits, ``.``, ``_`` or ``-``.

    Raises:
        InvalidInputError: otherwise.

    >>> check_session_id("grasp-2025.06")
    'grasp-2025.06'
    """
    from evalband._util.ids import check_name

    return check_name(session_id, "session id", 64)


def blind_codes(policies: Sequence[str], seed: int) -> dict[str, str]:
    """Distinct blind codes (``P-`` and three characters) for the policies, drawn from the seed.

    The codes come from their own child stream of the seed, independent of the names and of
    their order in the list except for which policy gets which draw; so a code says nothing
    about the name, and the codes' sort order is unrelated to the policies' order. A code never
    equals a policy name, nor holds one of two or more characters.

    >>> codes = blind_codes(["GN_s1000", "PT_fullLR"], seed=7)
    >>> codes == blind_codes(["GN_s1000", "PT_fullLR"], seed=7), len(set(codes.values()))
    (True, 2)
    >>> all(c.startswith("P-") and len(c) == 5 for c in codes.values())
    True
    """
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), _CODE_STREAM]))
    taken: set[str] = set()
    codes: dict[str, str] = {}
    for policy in policies:
        while True:
            chars = rng.integers(0, len(_CODE_ALPHABET), size=3)
            code = "P-" + "".join(_CODE_ALPHABET[int(i)] for i in chars)
            if code in taken or any(_reveals(p, code) for p in policies):
                continue
            break
        taken.add(code)
        codes[policy] = code
    return codes


def _reveals(policy: str, code: str) -> bool:
    """Whether a code would show a policy's name (names of 2+ characters inside the code)."""
    return policy == code or (len(policy) >= 2 and policy.upper() in code[2:])


def _default_session_id(
    policies: Sequence[str], scenes: int, attempts: int, seed: int, blind: bool
) -> str:
    text = json.dumps([list(policies), scenes, attempts, seed, blind])
    return f"session-s{seed}-{hashlib.sha256(text.encode()).hexdigest()[:6]}"


def _policy_names(policies: Sequence[str]) -> tuple[str, ...]:
    """The session's policy names (a list or ``A,B,C``): non-empty and each listed once."""
    if isinstance(policies, str):
        policies = [p for p in policies.split(",")]
    names = tuple(str(p).strip() for p in policies)
    if not names or any(not n for n in names):
        raise InvalidInputError(
            f"`policies` must be one or more non-empty names, e.g. A,B,C; got "
            f"{','.join(names)!r}", parameters=("policies",))
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise InvalidInputError(
            f"`policies` lists each policy once per session; listed more than once: "
            f"{', '.join(dupes)}; give distinct names, e.g. A,B,C", parameters=("policies",))
    return names


def _spec_map(specs: Mapping[str, str] | None, names: Sequence[str]) -> dict[str, str]:
    """The policy specs (``NAME -> SPEC``), each naming a session policy and non-empty."""
    spec_map = {str(k): str(v).strip() for k, v in (specs or {}).items()}
    unknown = sorted(set(spec_map) - set(names))
    if unknown:
        raise InvalidInputError(
            f"policy specs name policies that are not in the session: {', '.join(unknown)}; "
            f"the policies are {', '.join(names)}", parameters=("specs",))
    if any(not v for v in spec_map.values()):
        raise InvalidInputError("a policy spec is empty; give NAME=SPEC, e.g. "
                                "GN_s1000=lerobot:outputs/gn/pretrained_model")
    return spec_map


def _trials(names: Sequence[str], scenes: int, attempts: int, seed: int,
            codes: Mapping[str, str]) -> list[Trial]:
    """Every trial in play order: each scene block a seeded permutation of policy x attempt."""
    units = [p for p in names for _ in range(attempts)]
    trials: list[Trial] = []
    for scene in range(1, scenes + 1):
        rng = np.random.default_rng(np.random.SeedSequence([seed, scene]))
        seen = dict.fromkeys(names, 0)
        for position, unit in enumerate(rng.permutation(len(units))):
            policy = units[int(unit)]
            seen[policy] += 1
            attempt = seen[policy]  # attempts count up in the order they are played
            trials.append(
                Trial(
                    index=len(trials),
                    scene=scene,
                    attempt=attempt,
                    policy=policy,
                    code=codes[policy],
                    position=position,
                )
            )
    return trials


def plan_session(
    policies: Sequence[str],
    scenes: int,
    attempts: int,
    seed: int,
    *,
    blind: bool = False,
    positive_control: str | None = None,
    rubric: Rubric | None = None,
    session_id: str | None = None,
    specs: Mapping[str, str] | None = None,
    instrument: Mapping[str, Any] | None = None,
) -> SessionPlan:
    """Plan a session: every policy x attempt once per scene block, shuffled within the block.

    The order of block ``s`` is a permutation (of each policy repeated ``attempts`` times)
    drawn by ``np.random.default_rng(np.random.SeedSequence([seed, s]))``: the same seed gives
    the same schedule, each block its own order. A policy's attempts on a scene are numbered
    1, 2, ... in the order they are played; trials are numbered through the whole schedule.

    Args:
        policies: the policy names (distinct, non-empty), e.g. checkpoint names.
        scenes: number of scenes (blocks), >= 1.
        attempts: attempts per policy per scene, >= 1 (2 or more make the same-scene flip
            rate measurable).
        seed: non-negative integer seed of the schedule and the blind codes.
        blind: show blind codes instead of policy names to the operator.
        positive_control: one of ``policies`` whose expected behaviour checks the rig.
        rubric: the score levels; seed 004's 3-level grasp score when ``None``.
        session_id: the session's id; by default derived from the arguments
            (``session-s<seed>-<hash>``).
        specs: policy name -> the policy spec a robot session loads (``lerobot:PATH``,
            ``module:attr``, ``ws://HOST:PORT``, a built-in); a policy without one is loaded
            by its name.
        instrument: the robot session's instrument (``InstrumentSpec.as_dict()``: control
            rate, capture, re-placement, trigger, stress, suggestion); ``None``: no robot
            instrument (scores by keypress or a trial command).

    Returns:
        The :class:`SessionPlan` (not stored; see ``SessionStore.create``).

    Raises:
        InvalidInputError: no or duplicate policies, counts below 1, a negative seed, a
            positive control that is not one of the policies, or a bad session id.

    >>> plan = plan_session(["A", "B", "C"], scenes=2, attempts=2, seed=7, session_id="demo")
    >>> plan.n_trials, len(plan.block(1))
    (12, 6)
    >>> sorted((t.policy, t.attempt) for t in plan.block(2)) == sorted(
    ...     (p, a) for p in "ABC" for a in (1, 2))
    True
    """
    names = _policy_names(policies)
    scenes = _count(scenes, "scenes")
    attempts = _count(attempts, "attempts")
    from evalband._util.limits import MAX_SESSION_TRIALS, check_size

    check_size(len(names) * scenes * attempts, MAX_SESSION_TRIALS,
               "trials in a session (policies x scenes x attempts)",
               "a hardware session is run by hand: plan fewer scenes or attempts")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or int(seed) < 0:
        raise InvalidInputError(f"`seed` must be a non-negative integer; got {seed!r}",
                                parameters=("seed",))
    seed = int(seed)
    if positive_control is not None and positive_control not in names:
        raise InvalidInputError(
            f"`positive_control` must be one of the session's policies ({', '.join(names)}); "
            f"got {positive_control!r}",
            parameters=("positive_control",),
        )
    spec_map = _spec_map(specs, names)
    rubric = Rubric() if rubric is None else rubric
    sid = check_session_id(
        session_id
        if session_id is not None
        else _default_session_id(names, scenes, attempts, seed, blind)
    )
    codes = blind_codes(names, seed) if blind else {p: p for p in names}
    trials = _trials(names, scenes, attempts, seed, codes)
    return SessionPlan(
        session_id=sid,
        policies=names,
        scenes=scenes,
        attempts=attempts,
        seed=seed,
        blind=bool(blind),
        codes=codes,
        positive_control=positive_control,
        rubric=rubric,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        trials=tuple(trials),
        specs={p: spec_map[p] for p in names if p in spec_map and spec_map[p] != p},
        instrument=None if instrument is None else dict(instrument),
    )
