"""The session's YAML files, validated by pydantic: the rubric and the pre-registration.

Like :class:`~evalband.panel.Panel`, each file is a pydantic model (unknown fields refused,
frozen) whose fields carry their types and constraints; a few validators normalise the shapes
people write (``"A vs B"`` for a pair, a digit string for a level, a comma list for a group)
and check what spans fields (``success_at`` among the levels, a policy in both groups).
:func:`one_line` turns a :class:`pydantic.ValidationError` into the library's one-line
message: what was expected, what came.

Imported on first use (pydantic is not needed to score trials in the terminal).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from evalband.panel import DesignSpec

__all__ = ["RubricSpec", "PreregSpec", "one_line", "PRIMARY_METRICS"]

#: Primary metrics a pre-registration may name (success at the rubric's threshold).
PRIMARY_METRICS: tuple[str, ...] = ("success",)


def _digit(what: str) -> Any:
    """A level 0-9 from an int or a digit string (JSON turns keys into strings)."""

    def check(value: Any) -> int:
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value.strip())
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 9:
            raise ValueError(
                f"rubric {what} must be an integer from 0 to 9 (one key on the keyboard); "
                f"got {value!r}"
            )
        return value

    return BeforeValidator(check)


def _meaning(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"needs a non-empty text saying what it means; got {value!r}")
    return value.strip()


Level = Annotated[int, _digit("level")]
SuccessAt = Annotated[int, _digit("success_at")]


class RubricSpec(BaseModel):
    """A rubric's fields: single-digit levels with their meaning, and the success threshold.

    >>> RubricSpec.model_validate({"levels": {"0": "miss", "1": "hit"}, "success_at": 1}).levels
    {0: 'miss', 1: 'hit'}
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    levels: dict[Level, str]
    success_at: SuccessAt = 2

    @field_validator("levels", mode="before")
    @classmethod
    def _levels(cls, value: Any) -> dict[int, str]:
        if not isinstance(value, Mapping):
            raise ValueError(
                "rubric levels must be a mapping of integer level to its meaning, e.g. "
                f"{{0: 'never held', 1: 'held'}}; got {type(value).__name__}"
            )
        out: dict[int, str] = {}
        check = _digit("level").func
        for key, text in value.items():
            level = check(key)
            try:
                out[level] = _meaning(text)
            except ValueError as exc:
                raise ValueError(f"rubric level {level} {exc}") from None
            if sum(check(k) == level for k in value) > 1:
                raise ValueError(f"rubric level {level} is given twice")
        return dict(sorted(out.items()))

    @model_validator(mode="after")
    def _threshold(self) -> RubricSpec:
        levels = sorted(self.levels)
        if len(levels) < 2:
            raise ValueError(
                f"a rubric needs at least two levels (a failure and a success); got {len(levels)}"
            )
        if self.success_at not in self.levels:
            raise ValueError(
                f"rubric success_at must be one of the levels {levels}; got {self.success_at}"
            )
        if self.success_at == levels[0]:
            raise ValueError(
                f"rubric success_at {self.success_at} is the lowest level, so no trial could "
                f"fail; choose one of {levels[1:]}"
            )
        return self


def _pair(item: Any, index: int) -> tuple[str, str]:
    if isinstance(item, str):
        parts: list[Any] = [p.strip() for p in re.split(r"\s+vs\.?\s+", item.strip())]
    elif isinstance(item, Sequence) and not isinstance(item, bytes):
        parts = [p.strip() if isinstance(p, str) else p for p in item]
    else:
        parts = []
    if len(parts) != 2 or not all(isinstance(p, str) and p for p in parts):
        raise ValueError(
            f"comparisons[{index}] must be a pair of policies, [A, B] or 'A vs B'; got {item!r}"
        )
    if parts[0] == parts[1]:
        raise ValueError(f"comparisons[{index}] compares {parts[0]!r} with itself")
    return str(parts[0]), str(parts[1])


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what} must be a non-empty text; got {value!r}")
    return value.strip()


def _members(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, Sequence) or isinstance(value, bytes) or not value:
        raise ValueError(f"{where} must be a non-empty list of policies; got {value!r}")
    names = [_text(v, f"each policy of {where}") for v in value]
    if len(set(names)) != len(names):
        raise ValueError(f"{where} lists a policy twice: {names}")
    return names


def _optional_text(value: Any) -> Any:
    return None if value is None else str(value)


Floor = Annotated[float, Field(strict=True, gt=0.0, le=1.0, allow_inf_nan=False)]


class PreregSpec(BaseModel):
    """A pre-registration file's fields (see :mod:`evalband.session._prereg` for the format).

    ``groupings`` keep their order: name -> ((label, members), (label, members)).

    >>> spec = PreregSpec.model_validate({"comparisons": ["A vs B"], "notes": 3})
    >>> spec.comparisons, spec.primary_metric, spec.notes
    ([('A', 'B')], 'success', '3')
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Annotated[str | None, BeforeValidator(_optional_text)] = None
    session: Annotated[str | None, BeforeValidator(_optional_text)] = None
    primary_metric: Literal["success"] = "success"
    comparisons: list[tuple[str, str]] = Field(default_factory=list)
    groupings: dict[str, tuple[tuple[str, list[str]], tuple[str, list[str]]]] = Field(
        default_factory=dict
    )
    positive_control_floor: Floor | None = None
    notes: Annotated[str | None, BeforeValidator(_optional_text)] = None
    design: DesignSpec | None = None

    @field_validator("design", mode="after")
    @classmethod
    def _stop_rule_design(cls, value: DesignSpec | None) -> DesignSpec | None:
        unused = sorted((value.model_fields_set if value is not None else set())
                        & {"power", "max_pairs"})
        if unused:
            raise ValueError(
                "a session's design block sets the stop rule of `session run --until-decided`: "
                f"effect, alpha and discordant; {' and '.join(unused)} belong to a panel's "
                "design block (`compare --sequential`)")
        return value

    @field_validator("primary_metric", mode="before")
    @classmethod
    def _metric(cls, value: Any) -> Any:
        return str(value).strip() if value is not None else value

    @field_validator("session", mode="after")
    @classmethod
    def _session(cls, value: str | None) -> str | None:
        return None if value is None else _text(value, "session")

    @field_validator("comparisons", mode="before")
    @classmethod
    def _comparisons(cls, value: Any) -> list[tuple[str, str]]:
        value = value or []
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise ValueError(
                "comparisons must be a list of policy pairs, e.g. [[A, B], 'C vs D']; got "
                f"{value!r}"
            )
        pairs = [_pair(item, i) for i, item in enumerate(value)]
        seen: set[frozenset[str]] = set()
        for a, b in pairs:
            if frozenset((a, b)) in seen:
                raise ValueError(f"the comparison {a} vs {b} is listed twice")
            seen.add(frozenset((a, b)))
        return pairs

    @field_validator("groupings", mode="before")
    @classmethod
    def _groupings(cls, value: Any) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise ValueError(
                "groupings must map a name to two groups, e.g. groupings: {norm: {BN: [a, b], "
                f"GN: [c, d]}}; got {value!r}"
            )
        out = {}
        for name, groups in value.items():
            gname = _text(name, "a grouping's name")
            if not isinstance(groups, Mapping) or len(groups) != 2:
                raise ValueError(
                    f"grouping {gname!r} must have exactly two groups (label: [policies]); "
                    f"got {groups!r}"
                )
            sides = [
                (_text(str(label), "a group label"),
                 _members(members, f"group {label!r} of grouping {gname!r}"))
                for label, members in groups.items()
            ]
            overlap = sorted(set(sides[0][1]) & set(sides[1][1]))
            if overlap:
                raise ValueError(
                    f"grouping {gname!r}: a policy cannot be in both groups ({', '.join(overlap)})"
                )
            out[gname] = (sides[0], sides[1])
        return out

    @model_validator(mode="after")
    def _plans_something(self) -> PreregSpec:
        if not self.comparisons and not self.groupings:
            raise ValueError(
                "a pre-registration must plan at least one comparison (comparisons: [[A, B]]) "
                "or grouping (groupings: {name: {g1: [A], g2: [B]}})"
            )
        return self


_HINTS = {
    "levels": ", e.g. levels: {0: never held, 1: acquired but lost, 2: held through the stress}",
}
_EXPECTED = {
    "primary_metric": lambda got: (
        f"primary_metric must be one of {', '.join(PRIMARY_METRICS)} (success at the rubric's "
        f"threshold); got {got!r}"
    ),
    "positive_control_floor": lambda got: (
        f"positive_control_floor must be a success rate in (0, 1]; got {got!r}"
    ),
}


def one_line(error: ValidationError, fields: Sequence[str], what: str) -> str:
    """A validation error as the library's one line: what was expected, what came.

    ``fields``: the model's fields (named when one is unknown); ``what``: the file's kind,
    e.g. ``"pre-registration"``.

    >>> try:
    ...     PreregSpec.model_validate({"comparisons": [["A", "B"]], "who": 1})
    ... except ValidationError as exc:
    ...     print(one_line(exc, list(PreregSpec.model_fields), "pre-registration"))
    unknown pre-registration field(s) who; expected some of name, session, primary_metric, \
comparisons, groupings, positive_control_floor, notes, design
    """
    unknown = [str(e["loc"][0]) for e in error.errors() if e["type"] == "extra_forbidden"]
    if unknown:
        expected = (" and ".join(f"'{f}'" for f in fields) if len(fields) == 2
                    else f"some of {', '.join(fields)}")
        return f"unknown {what} field(s) {', '.join(unknown)}; expected {expected}"
    parts = []
    for item in error.errors():
        field = str(item["loc"][0]) if item["loc"] else ""
        if item["type"] == "value_error":
            parts.append(str(item["msg"]).removeprefix("Value error, "))
        elif item["type"] == "missing":
            parts.append(f"a {what} needs '{field}'{_HINTS.get(field, '')}")
        elif field in _EXPECTED:
            parts.append(_EXPECTED[field](item.get("input")))
        else:
            where = ".".join(str(x) for x in item["loc"]) or "(top level)"
            parts.append(f"{what} field '{where}': {item['msg']} (got {item.get('input')!r})")
    return "; ".join(dict.fromkeys(parts))
