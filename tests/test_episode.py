"""EpisodeRecord: a plain frozen, slotted dataclass (no generated code), checks included."""

from __future__ import annotations

import dataclasses
import pickle
import random

import pytest

from evalband.episode import EpisodeRecord, Outcome
from evalband.errors import InvalidInputError

# The standard dataclass machinery over the same fields, without the checks: the oracle.
_Reference = dataclasses.make_dataclass(
    "_Reference",
    [(f.name, f.type, dataclasses.field(default=f.default, default_factory=f.default_factory))
     for f in dataclasses.fields(EpisodeRecord)],
    frozen=True,
)

REQUIRED = dict(run_id="r", policy="p", panel_fingerprint="f", cell="c", episode=3, repeat=0,
                condition_seed=11, outcome=Outcome.FAILURE, terminated=True, truncated=False,
                steps=9)
OPTIONAL = dict(sim_time_s=1.5, slices={"a": "b"}, score=2, assisted=True, interventions=1,
                latency_ms_p50=0.1, latency_ms_p95=0.2, latency_ms_max=0.3, env_ms=4.0,
                wall_s=0.01, started_at="2026-12-02T00:00:00.000+00:00", error=None,
                attempts=2, extra={"metrics": {"return": -1.0}})


def test_every_subset_of_the_optional_fields_gives_the_dataclass_inits_values() -> None:
    rng = random.Random(0)
    names = list(OPTIONAL)
    for _ in range(200):
        given = {k: OPTIONAL[k] for k in rng.sample(names, rng.randint(0, len(names)))}
        made = EpisodeRecord(**REQUIRED, **given)
        assert dataclasses.asdict(made) == dataclasses.asdict(_Reference(**REQUIRED, **given))


def test_positional_arguments_in_field_order() -> None:
    values = list(REQUIRED.values())
    assert EpisodeRecord(*values) == EpisodeRecord(**REQUIRED)
    with pytest.raises(TypeError):
        EpisodeRecord(*values[:-1])  # steps missing
    with pytest.raises(TypeError):
        EpisodeRecord(**REQUIRED, colour="red")  # type: ignore[call-arg]


def test_an_explicit_none_and_the_signature_are_the_dataclass_inits() -> None:
    import inspect

    for given in ({"extra": None}, {"slices": None}, {"extra": None, "slices": None}):
        made = EpisodeRecord(**REQUIRED, **given)
        assert dataclasses.asdict(made) == dataclasses.asdict(_Reference(**REQUIRED, **given))
    assert str(inspect.signature(EpisodeRecord)) == str(inspect.signature(_Reference))


def test_default_factories_give_each_record_its_own_dicts() -> None:
    a, b = EpisodeRecord(**REQUIRED), EpisodeRecord(**REQUIRED)
    a.extra["x"] = 1
    a.slices["s"] = "t"
    assert b.extra == {} and b.slices == {}


def test_the_record_is_slotted_and_its_init_is_the_dataclasses_own() -> None:
    record = EpisodeRecord(**REQUIRED)
    assert not hasattr(record, "__dict__")
    assert EpisodeRecord.__slots__ == tuple(f.name for f in dataclasses.fields(EpisodeRecord))
    assert EpisodeRecord.__post_init__.__code__.co_filename.endswith("episode.py")


def test_the_checks_still_run_and_the_record_stays_frozen() -> None:
    with pytest.raises(InvalidInputError, match="episode must be a whole number"):
        EpisodeRecord(**{**REQUIRED, "episode": -1})
    with pytest.raises(InvalidInputError, match="time_to_success_s is only set"):
        EpisodeRecord(**REQUIRED, time_to_success_s=1.0)
    record = EpisodeRecord(**{**REQUIRED, "outcome": "success"})
    assert record.outcome is Outcome.SUCCESS  # a string is parsed, as before
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.steps = 3  # type: ignore[misc]


def test_replace_pickle_and_asdict_keep_working() -> None:
    record = EpisodeRecord(**REQUIRED, **OPTIONAL)
    assert dataclasses.replace(record, steps=4).steps == 4
    assert pickle.loads(pickle.dumps(record)) == record
    assert dataclasses.asdict(record) == dataclasses.asdict(_Reference(**REQUIRED, **OPTIONAL))


@pytest.mark.parametrize(("given", "message"), [
    ({"steps": True}, "steps must be a whole number"),
    ({"attempts": 2**63}, "attempts must be a whole number"),
    ({"interventions": 1.0}, "interventions must be a whole number"),
    ({"wall_s": float("nan")}, "wall_s must be a number >= 0"),
    ({"env_ms": -0.5}, "env_ms must be a number >= 0"),
    ({"sim_time_s": -1}, "sim_time_s must be a number >= 0"),
])
def test_each_bad_count_or_time_is_named(given: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        EpisodeRecord(**{**REQUIRED, **given})


def test_whole_times_and_int_subclasses_pass_as_before() -> None:
    import enum

    class Three(enum.IntEnum):
        THREE = 3

    record = EpisodeRecord(**{**REQUIRED, "steps": Three.THREE}, sim_time_s=2, wall_s=0)
    assert record.steps == 3 and record.sim_time_s == 2 and record.wall_s == 0
