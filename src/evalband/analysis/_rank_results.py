"""What ``evalband rank`` returns: frozen result types, their JSON and back.

Pure data (:mod:`evalband.analysis._rank` computes them, :mod:`evalband.report._ranking`
renders them). ``as_dict()`` is the ``--json`` output; ``from_dict`` gives the typed result
back (exactly: a test round-trips them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalband._util.typed import typed_from_dict
from evalband.stats import Difference, Interval

__all__ = ["RankedPolicy", "RankPair", "Separation", "SliceRanking", "Ranking"]


@dataclass(frozen=True)
class RankedPolicy:
    """One policy's place in a ranking.

    Attributes:
        policy: its name (a session's blind code while blinded).
        run_id: the run its episodes came from.
        step: the checkpoint's training step, when the run recorded one.
        value: its success rate (or mean metric) with a marginal band (Wilson; over scenes
            for a session; a bootstrap for a metric).
        rank_low: the best rank it may hold (1 = best) ...
        rank_high: ... and the worst, jointly with every other policy's set.
        tier: its tier (1: no policy is established above it).
    """

    policy: str
    run_id: str
    step: int | None
    value: Interval
    rank_low: int
    rank_high: int
    tier: int


@dataclass(frozen=True)
class RankPair:
    """One pair's test within the ranking's family.

    Attributes:
        better: the policy ahead on this pair's data.
        worse: the other one.
        estimate: ``better - worse`` on the data the test used (matched episodes when paired).
        p_value: the test's two-sided p (twice its smaller one-sided tail).
        adjusted_p: its Holm-adjusted one-sided p over both directions of every pair;
            the order is established exactly when it is at most ``1 - confidence``.
        established: whether ``better`` is established above ``worse``.
        test: the test (``mcnemar-exact``, ``fisher-exact``, ``clustered-sign-flip``,
            ``sign-flip``).
        difference: the interval of ``better - worse`` at the level of the Holm step that
            decided the pair (excludes 0 exactly when established); ``None`` for a metric.
        counts: what the test counted.
    """

    better: str
    worse: str
    estimate: float
    p_value: float
    adjusted_p: float
    established: bool
    test: str
    difference: Difference | None
    counts: dict[str, int]


@dataclass(frozen=True)
class Separation:
    """What separating the nearest unresolved pair would cost at the stated power.

    The pair is the two best policies of the highest tier that has more than one (the
    leaders when the top is unresolved). The size is exact for the ranking's own test of
    that pair at Holm's first-step level (``pair_alpha``), a lower bound on the stepdown's
    power; the bench confirms it by simulating the whole ranking.

    Attributes:
        better: the pair's leader.
        worse: the other.
        gap: the gap planned for, in rate units.
        gap_source: ``declared`` (``--effect``) or ``observed`` (this ranking's gap: a
            planning guess; gaps between near-peers read off the data tend to be overstated).
        rate_better: the planned rate of ``better``.
        rate_worse: ``rate_better - gap``.
        discordant: the matched pairs' discordance planned for (``None`` unpaired).
        design: ``paired``, ``unpaired`` or ``clustered`` (one attempt per scene).
        unit: ``episodes`` or ``scenes``.
        per_policy: the size per policy (``None``: beyond 200,000, or no gap to plan for).
        have_per_policy: what this ranking had per policy.
        power: the power target.
        pair_alpha: the pair's two-sided level (``alpha / M``).
        policies: policies in the family.
        sentence: the statement, in words.
    """

    better: str
    worse: str
    gap: float
    gap_source: str
    rate_better: float
    rate_worse: float
    discordant: float | None
    design: str
    unit: str
    per_policy: int | None
    have_per_policy: int
    power: float
    pair_alpha: float
    policies: int
    sentence: str


@dataclass(frozen=True)
class SliceRanking:
    """The ranking within one slice (``all``: every episode).

    Attributes:
        slice: ``all`` or ``factor=value``.
        policies: best estimate first, each with its rank set and tier.
        pairs: every pair's test, most established first.
        tiers: the tiers, each best estimate first (policy names).
        established: how many orders are established.
        resolvable_gap: the smallest gap the per-policy size resolves at 80% power at the
            pair level (``None``: none, or not a success rate).
        separation: the cost to separate the nearest unresolved pair (``None``: every order
            is established, or not a success rate).
        sentence: the ranking in one sentence.
    """

    slice: str
    policies: tuple[RankedPolicy, ...]
    pairs: tuple[RankPair, ...]
    tiers: tuple[tuple[str, ...], ...]
    established: int
    resolvable_gap: float | None
    separation: Separation | None
    sentence: str


@dataclass(frozen=True)
class Ranking:
    """A ranking of policies with simultaneous rank sets (``evalband rank``).

    Attributes:
        metric: ``success``, ``unaided``, ``score`` or ``metrics.NAME``.
        higher_is_better: the metric's direction.
        confidence: the joint level: every rank set of a slice covers at once with at least
            this probability.
        design: ``paired`` (matched episodes), ``unpaired`` or ``clustered`` (matched
            scenes: a scene is the unit).
        procedure: the procedure in words, with its source.
        session_id: the session ranked, if any.
        runs: the runs ranked.
        slices: ``all`` first, then each slice (each at its own joint level).
        notes: what the reader must know (excluded episodes, panels, levels).
    """

    metric: str
    higher_is_better: bool
    confidence: float
    design: str
    procedure: str
    session_id: str | None
    runs: tuple[str, ...]
    slices: tuple[SliceRanking, ...]
    notes: tuple[str, ...]

    @property
    def overall(self) -> SliceRanking:
        """The ranking over every episode."""
        return self.slices[0]

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (``--json``): every field, nested results as dicts."""
        return {"kind": "ranking", **dataclasses.asdict(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Ranking:
        """The typed ranking back from :meth:`as_dict`."""
        return typed_from_dict(cls, data)
