"""``evalband run --until-decided``: play a candidate against a stored baseline, stop when decided.

The candidate plays the panel's episodes interleaved across cells (episode 0 of every cell,
then episode 1, ...), the baseline's recorded conditions first, so every slice grows together
and every episode pairs. Looks are taken on the *prefix* of that order: after the first
``chunk``, ``2 chunk``, ... planned episodes are all recorded, whatever order a parallel backend
(process, ray) returns them in. So a look never sees a selection of episodes that finished
early (a fast success before a slow failure), and the looks and the decision are the same on
every backend. At each look
compares the episodes so far against the baseline run with the anytime-valid verdict
(:func:`evalband.analysis._sequential.compare_sequential`) under the run's one declared design
(:func:`evalband.analysis._sequential_plan.comparison_design`, computed at the start, recorded in
``extra["sequential"]["design"]`` and read back on resume), records the look in the run's
manifest (``extra["sequential"]["looks"]``: episode count, the decision, and per slice the
statistic and its boundary), and stops the run as soon as the overall decision is made:

* ``regression`` -- a (primary) slice regressed;
* ``improvement`` / ``non-inferior`` -- every slice improved or was shown non-inferior
  (``--margin``), at least one improved for "improvement";
* ``futility`` -- every slice improved, was non-inferior or stopped for futility, or the
  maximum was reached undecided: "stopped: a drop of X could not be shown within the
  maximum", with the power the design had (not evidence of no change; its own exit code).

The design is declared when the run starts -- the options given, else the panel's ``design``
block, else the defaults -- and a resume given other options is refused.

A killed run resumes with ``--run-id``: its recorded looks are kept, play continues where it
stopped, and the looks go on from there.

With ``--against-policy`` (:func:`run_both_until_decided`) the baseline is played too: each
chunk of the plan by the baseline policy, then by the candidate on the same conditions, then
the look.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from evalband.episode import EpisodeRecord, EpisodeSpec
from evalband.errors import InvalidParameterError, PanelMismatchError

if TYPE_CHECKING:
    from evalband.analysis import Comparison, RunSummary
    from evalband.analysis._compare import RunData
    from evalband.analysis._sequential_plan import ComparisonDesign
    from evalband.panel import Panel
    from evalband.store import RunStore

__all__ = ["interleave", "play_order", "overall_decision", "DeclaredDesign", "SequentialMonitor",
           "run_until_decided", "run_both_until_decided"]



def interleave(specs: Sequence[EpisodeSpec]) -> list[EpisodeSpec]:
    """Episodes ordered by (episode, repeat) first, then cell in panel order.

    >>> from evalband.panel import load_panel
    >>> p = load_panel({"name": "p", "env": "evalband/Coin-v0", "episodes": 2, "seed": 0,
    ...                 "budget": {"steps": 1}, "factors": {"arm": ["a", "b"]}})
    >>> [(s.cell, s.episode) for s in interleave(p.episode_specs())]
    [('arm=a', 0), ('arm=b', 0), ('arm=a', 1), ('arm=b', 1)]
    """
    cells: dict[str, int] = {}
    for s in specs:
        cells.setdefault(s.cell, len(cells))
    return sorted(specs, key=lambda s: (s.episode, s.repeat, cells[s.cell]))


def play_order(panel: Panel, baseline: RunData) -> list[EpisodeSpec]:
    """The candidate's play order: the baseline's recorded conditions first (they pair).

    Each group is interleaved across cells (:func:`interleave`).
    """
    matched = {r.key for r in baseline.records}
    plan = interleave(panel.episode_specs())
    return [s for s in plan if s.key in matched] + [s for s in plan if s.key not in matched]


def overall_decision(c: Comparison, *, at_maximum: bool = False) -> str | None:
    """The sequential decision of a comparison (:func:`evalband.analysis.overall_decision`)."""
    from evalband.analysis._sequential_outcome import overall_decision as decide

    return decide(c, at_maximum=at_maximum)


@dataclass(frozen=True)
class DeclaredDesign:
    """The design options of a sequential run, resolved before anything is played.

    Each is the one given (``run --until-decided --effect ...``), else the panel's ``design``
    block, else the default; ``source`` is ``"panel"`` when the panel's block gave them all,
    ``"run"`` otherwise.
    """

    effect: float
    power: float
    alpha: float
    discordant: float | None
    max_pairs: int | None
    source: str

    @classmethod
    def resolve(cls, panel: Panel, *, effect: float | None = None, power: float | None = None,
                confidence: float | None = None,
                discordant: float | None = None) -> DeclaredDesign:
        """Given options over the panel's block over the defaults.

        >>> from evalband.panel import load_panel
        >>> p = load_panel({"name": "p", "env": "evalband/Coin-v0", "episodes": 2, "seed": 0,
        ...                 "budget": {"steps": 1}, "design": {"effect": 0.3}})
        >>> d = DeclaredDesign.resolve(p)
        >>> d.effect, d.power, d.source, DeclaredDesign.resolve(p, effect=0.2).source
        (0.3, 0.8, 'panel', 'run')
        """
        from evalband.panel import DesignSpec

        spec = panel.design or DesignSpec()
        given = (effect, power, confidence, discordant)
        alpha = spec.alpha if confidence is None else 1.0 - float(confidence)
        return cls(effect=spec.effect if effect is None else float(effect),
                   power=spec.power if power is None else float(power), alpha=alpha,
                   discordant=spec.discordant if discordant is None else float(discordant),
                   max_pairs=spec.max_pairs,
                   source="panel" if panel.design is not None and all(
                       g is None for g in given) else "run")

    def conflicts(self, design: ComparisonDesign, given: dict[str, float | None]) -> list[str]:
        """Options given now (not None) that differ from a recorded design."""
        out = []
        for name, value in given.items():
            if value is None:
                continue
            if name == "discordant":
                recorded: float | None = (design.discordant if design.discordant_source
                                          == "declared" else None)
            else:
                recorded = {"effect": design.effect, "power": design.power,
                            "confidence": 1.0 - design.alpha}[name]
            if recorded is None or abs(float(value) - float(recorded)) > 1e-9:
                out.append(name)
        return out


def _slice_horizons(panel: Panel, plan: Sequence[EpisodeSpec], limit: int) -> dict[str, int]:
    """Pairs each slice can reach within the first ``limit`` planned episodes."""
    from evalband.analysis._compare import slice_definitions

    first = plan[:limit]
    return {name: max(1, sum(all(s.slices.get(f) == v for f, v in sl.items()) for s in first))
            for _, name, sl in slice_definitions(panel)}


@dataclass
class SequentialMonitor:
    """Looks at a candidate run after every ``chunk`` planned episodes; says when to stop.

    ``count`` is the length of the recorded prefix of the play order (:func:`play_order`):
    a look at ``n`` compares the first ``n`` planned episodes only. Call :meth:`start` with the
    already-recorded episodes (a resume), then the monitor with each new record; it returns
    True when the run should stop.
    """

    store: RunStore
    run_id: str
    baseline: RunData
    panel: Panel
    max_episodes: int
    chunk: int
    confidence: float | None = None
    effect: float | None = None
    margin: float | None = None
    on_look: Callable[[dict[str, Any]], None] | None = None
    live_baseline: bool = False
    power: float | None = None
    discordant: float | None = None
    on_design: Callable[[ComparisonDesign], None] | None = None
    count: int = 0
    looks: list[dict[str, Any]] = field(default_factory=list)
    decision: str | None = None
    sentence: str = ""

    def __post_init__(self) -> None:
        plan = play_order(self.panel, self.baseline)
        self.horizons = _slice_horizons(self.panel, plan, self.max_episodes)
        self._keys = [s.key for s in plan[: self.max_episodes]]
        self._done: set[tuple[str, int, int]] = set()
        self.plan: ComparisonDesign | None = None

    def start(self, finished: Sequence[EpisodeRecord]) -> None:
        """Take the design and looks already recorded (resume) and the finished episodes.

        A new run computes its design here, once
        (:func:`~evalband.analysis._sequential_plan.comparison_design`: the declared effect,
        alpha, power and discordance -- given, else the panel's ``design`` block, else the
        defaults; the default discordance is the conservative one, which does not read the
        baseline's outcomes -- each slice's maximum the pairs it can reach within
        ``max_episodes``) and records it before the first look; a resumed run reads it back,
        so every look of a run uses one design.

        Raises:
            InvalidParameterError: a resume given design options that differ from the ones
                the run declared when it started.
        """
        from evalband.analysis._sequential_plan import ComparisonDesign, comparison_design

        state = self.store.require_run(self.run_id).extra.get("sequential") or {}
        declared = DeclaredDesign.resolve(self.panel, effect=self.effect, power=self.power,
                                          confidence=self.confidence,
                                          discordant=self.discordant)
        if state.get("design"):
            self.plan = ComparisonDesign.from_dict(state["design"])
            changed = declared.conflicts(self.plan, {
                "effect": self.effect, "power": self.power, "confidence": self.confidence,
                "discordant": self.discordant})
            if changed:
                names = ", ".join(f"`{c}`" for c in changed)
                raise InvalidParameterError(
                    f"run {self.run_id} declared its sequential design when it started (a "
                    f"{100 * self.plan.effect:g}-point drop, alpha {self.plan.alpha:g}, power "
                    f"target {self.plan.power:.0%}); {names} given now would change it after "
                    f"data: resume without {names}", parameters=tuple(changed))
        else:
            caps = self.horizons if declared.max_pairs is None else {
                k: min(v, declared.max_pairs) for k, v in self.horizons.items()}
            self.plan = comparison_design(caps, effect=declared.effect, alpha=declared.alpha,
                                          power=declared.power, discordant=declared.discordant,
                                          source=declared.source)
            self._record()
        if self.on_design is not None:
            self.on_design(self.plan)
        self.looks = list(state.get("looks", []))
        self.decision = state.get("decision")
        self.sentence = state.get("sentence") or ""
        self.count = self.looks[-1]["episodes"] if self.looks else 0
        self._done = {r.key for r in finished}
        self._advance()  # killed between an episode and its look: take the looks now

    def _advance(self) -> None:
        """Grow the recorded prefix, taking a look at every chunk boundary it passes."""
        while self.decision is None and self.count < len(self._keys) and (
                self._keys[self.count] in self._done):
            self.count += 1
            if self.count % self.chunk == 0 or self.count >= self.max_episodes:
                self.look()

    def design(self) -> dict[str, Any]:
        """The declared design, stored beside the looks."""
        plan = self.plan
        return {"against": self.baseline.run_id, "both_arms": self.live_baseline,
                "max_episodes": self.max_episodes,
                "chunk": self.chunk, "alpha": None if plan is None else plan.alpha,
                "effect": None if plan is None else plan.effect,
                "power": None if plan is None else plan.exact_power,
                "margin": self.margin, "max_pairs": self.horizons,
                "design": None if plan is None else plan.as_dict()}

    def _record(self) -> None:
        extra = dict(self.store.require_run(self.run_id).extra)
        extra["sequential"] = {**self.design(), "looks": self.looks, "decision": self.decision,
                               "sentence": self.sentence}
        self.store.update_run(self.run_id, extra=extra)

    def look(self) -> dict[str, Any]:
        """Compare the episodes so far, record the look, and set the decision if made."""
        from evalband import load_run
        from evalband.analysis import compare_sequential

        if self.live_baseline:  # both arms played together: the baseline grows too
            self.baseline = load_run(self.baseline.run_id, self.store)
        run = load_run(self.run_id, self.store)
        seen = set(self._keys[: self.count])
        cand = replace(run, records=[r for r in run.records if r.key in seen])
        c = compare_sequential(self.baseline, cand, margin=self.margin, design=self.plan)
        decision = overall_decision(c, at_maximum=self.count >= self.max_episodes)
        slices = {}
        for r in c.slice_rows:
            t = r.test
            seq = None if t is None else t.sequential
            slices[r.name] = {
                "pairs": 0 if t is None else sum(t.pairs.values()),
                "statistic": math.log(max(1.0 if seq is None else seq.e_regression, 1e-300)),
                "statistic_improvement": math.log(
                    max(1.0 if seq is None else seq.e_improvement, 1e-300)),
                "boundary": math.log(math.inf if seq is None else seq.threshold),
                "verdict": str(r.verdict),
            }
        look = {"episodes": self.count, "decision": decision, "slices": slices}
        self.looks.append(look)
        regressed = [r.name for r in c.slice_rows if r.verdict == "regressed"]
        if decision is not None:
            from evalband.analysis._sequential_outcome import futility_sentence

            self.decision = decision
            when = f"after {self.count} of {self.max_episodes} episodes"
            self.sentence = (
                f"futility: {futility_sentence(self.plan, when)}"
                if decision == "futility" and self.plan is not None else
                f"decided {when}: {decision}"
                + (f" on {', '.join(regressed)}" if decision == "regression" and regressed
                   else ""))
        self._record()
        if self.on_look is not None:
            self.on_look(look)
        return look

    def __call__(self, record: EpisodeRecord) -> bool:
        """Take a new record; look at chunk boundaries; True when the run should stop."""
        self._done.add(record.key)
        self._advance()
        return self.decision is not None or self.count >= self.max_episodes


def _limits(panel: Panel, max_episodes: int | None, chunk: int | None,
            effect: float | None = None, discordant: float | None = None, *,
            power: float | None = None, confidence: float | None = None) -> tuple[int, int]:
    """(maximum, chunk) of a sequential run: the planned episodes and one per cell by default.

    Checks the design's inputs too (as given, else the panel's ``design`` block), before
    anything is played.

    >>> from evalband.panel import load_panel
    >>> p = load_panel({"name": "p", "env": "evalband/Coin-v0", "episodes": 2, "seed": 0,
    ...                 "budget": {"steps": 1}, "factors": {"arm": ["a", "b"]}})
    >>> _limits(p, None, None), _limits(p, 3, 1)
    ((4, 2), (3, 1))
    """
    d = DeclaredDesign.resolve(panel, effect=effect, power=power, confidence=confidence,
                               discordant=discordant)
    if not 0.0 < d.effect < 1.0:
        raise InvalidParameterError(
            f"`effect` must be in (0, 1) (a drop in rate); got {d.effect}", parameters=("effect",))
    if not 0.0 < d.power < 1.0:
        raise InvalidParameterError(f"`power` must be in (0, 1); got {d.power}",
                                    parameters=("power",))
    if not 0.0 < d.alpha < 1.0:
        raise InvalidParameterError(f"`confidence` must be in (0, 1); got {1.0 - d.alpha}",
                                    parameters=("confidence",))
    if d.discordant is not None and not d.effect <= d.discordant <= 1.0:
        raise InvalidParameterError(
            f"`discordant` (the probability a matched pair disagrees) must be between the "
            f"effect ({d.effect:g}) and 1; got {d.discordant}", parameters=("discordant",))
    planned = len(panel.episode_specs())
    limit = planned if max_episodes is None else int(max_episodes)
    step = len(panel.cells()) if chunk is None else int(chunk)
    if not 1 <= limit <= planned or step < 1:
        raise InvalidParameterError(
            f"`max_episodes` must be 1..{planned} (the panel's planned episodes) and `chunk` at "
            f"least 1; got {max_episodes}, {chunk}", parameters=("max_episodes", "chunk"))
    return limit, step


def run_until_decided(
    panel: Panel,
    policy: str,
    store: RunStore,
    *,
    against: str,
    run_id: str | None = None,
    max_episodes: int | None = None,
    chunk: int | None = None,
    confidence: float | None = None,
    effect: float | None = None,
    margin: float | None = None,
    on_look: Callable[[dict[str, Any]], None] | None = None,
    power: float | None = None,
    discordant: float | None = None,
    on_design: Callable[[ComparisonDesign], None] | None = None,
    **run_options: Any,
) -> tuple[str, RunSummary, SequentialMonitor]:
    """Run ``policy`` on ``panel`` until its comparison with ``against`` is decided.

    Args:
        panel: the panel (the baseline run's).
        policy: the candidate policy.
        store: the open run store holding ``against``.
        against: the baseline run id.
        run_id: name or resume the candidate run.
        max_episodes: the declared maximum (default: every planned episode).
        chunk: episodes between looks (default: one per cell).
        confidence: one minus the family-wise error (None: the panel's ``design`` block's,
            else 0.95).
        effect: the design drop the test is tuned to (None: the panel's block's, else 10
            points); the design's exact power at it is recorded and printed.
        margin: a non-inferiority margin for every slice.
        on_look: called with each look.
        power: the design's target power per slice at ``effect`` (reached when the maximum
            allows; None: the panel's block's, else 80%).
        discordant: the declared probability that a pair disagrees (None: the conservative
            value of :func:`~evalband.analysis._sequential_plan.comparison_design`).
        on_design: called with the design once it is fixed (new or read back).
        **run_options: passed on to :func:`evalband.run.run_panel` (backend, workers, ...).

    Raises:
        PanelMismatchError: the baseline was run on another panel.
        InvalidParameterError: a maximum or chunk out of range, an effect outside (0, 1) or a
            discordance below the effect.
    """
    from evalband import load_run
    from evalband.run._runner import default_run_id, run_panel

    base = load_run(against, store)
    if base.panel_fingerprint != panel.fingerprint:
        raise PanelMismatchError(
            f"baseline {against} was run on another panel ({base.panel_fingerprint[:12]}, not "
            f"{panel.fingerprint[:12]}); a sequential run needs the baseline's panel",
        )
    limit, step = _limits(panel, max_episodes, chunk, effect, discordant, power=power,
                          confidence=confidence)
    rid = run_id or default_run_id(panel, policy)
    outer_start = run_options.pop("on_start", None)
    monitor: SequentialMonitor | None = None

    def on_start(total: int, finished: list[EpisodeRecord]) -> None:
        nonlocal monitor
        monitor = SequentialMonitor(store, rid, base, panel, limit, step, confidence, effect,
                                    margin, on_look, power=power, discordant=discordant,
                                    on_design=on_design)
        monitor.start(finished)
        if outer_start is not None:
            outer_start(limit, finished)

    def stop_when(record: EpisodeRecord) -> bool:
        assert monitor is not None
        return monitor(record)

    def order(todo: list[EpisodeSpec]) -> list[EpisodeSpec]:
        ordered = play_order(panel, base)
        keep = {s.key for s in todo}
        allowed = {s.key for s in ordered[:limit]}
        return [s for s in ordered if s.key in keep and s.key in allowed]

    existing = store.get_run(rid)
    if existing is not None and (existing.extra.get("sequential") or {}).get("decision"):
        run_options["order"] = lambda todo: []  # already decided: nothing more to play
    else:
        run_options["order"] = order
    rid, summary = run_panel(panel, policy, store, run_id=rid, on_start=on_start,
                             stop_when=stop_when, **run_options)
    assert monitor is not None
    if monitor.decision is None and monitor.count >= limit and (
            not monitor.looks or monitor.looks[-1]["episodes"] != monitor.count):
        monitor.look()
    return rid, summary, monitor


def run_both_until_decided(
    panel: Panel,
    policy: str,
    baseline_policy: str,
    store: RunStore,
    *,
    run_id: str | None = None,
    baseline_run_id: str | None = None,
    max_episodes: int | None = None,
    chunk: int | None = None,
    confidence: float | None = None,
    effect: float | None = None,
    margin: float | None = None,
    on_look: Callable[[dict[str, Any]], None] | None = None,
    power: float | None = None,
    discordant: float | None = None,
    on_design: Callable[[ComparisonDesign], None] | None = None,
    **run_options: Any,
) -> tuple[str, str, RunSummary, SequentialMonitor]:
    """Run both arms chunk by chunk in plan order until their comparison is decided.

    Each chunk of the interleaved plan (:func:`interleave`) is played by the baseline policy,
    then by the candidate on the same conditions, then looked at; so every look compares
    matched episodes of both arms. The baseline run is ``baseline_run_id`` or
    ``<run id>-baseline``. Resumable: the same ``run_id`` plays only what is missing, and a
    decided pair of runs plays nothing more.

    Returns:
        ``(candidate run id, baseline run id, candidate summary, monitor)``.

    ``power``, ``discordant`` and ``on_design`` are :func:`run_until_decided`'s.

    Raises:
        InvalidParameterError: a maximum or chunk out of range.
    """
    from evalband import load_run
    from evalband.run._runner import default_run_id, run_panel

    plan = interleave(panel.episode_specs())
    limit, step = _limits(panel, max_episodes, chunk, effect, discordant, power=power,
                          confidence=confidence)
    rid = run_id or default_run_id(panel, policy)
    existing = store.get_run(rid)
    recorded = ((existing.extra.get("sequential") or {}).get("against")
                if existing is not None else None)
    base_rid = baseline_run_id or recorded or f"{rid}-baseline"
    if existing is not None and (existing.extra.get("sequential") or {}).get("decision"):
        _, done = run_panel(panel, policy, store, run_id=rid, order=lambda todo: [],
                            **run_options)
        monitor = SequentialMonitor(store, rid, load_run(base_rid, store), panel, limit, step,
                                    confidence, effect, margin, on_look, live_baseline=True,
                                    power=power, discordant=discordant)
        monitor.start(store.episode_records(rid))
        return rid, base_rid, done, monitor
    holder: list[SequentialMonitor] = []
    summary: RunSummary | None = None
    for start in range(0, limit, step):
        keys = {s.key for s in plan[start : start + step]}

        def only(todo: list[EpisodeSpec], keys: set[tuple[str, int, int]] = keys
                 ) -> list[EpisodeSpec]:
            return interleave([s for s in todo if s.key in keys])

        run_panel(panel, baseline_policy, store, run_id=base_rid, order=only, **run_options)

        def on_start(total: int, finished: list[EpisodeRecord]) -> None:
            if not holder:
                holder.append(SequentialMonitor(
                    store, rid, load_run(base_rid, store), panel, limit, step, confidence,
                    effect, margin, on_look, live_baseline=True, power=power,
                    discordant=discordant, on_design=on_design))
                holder[0].start(finished)

        def stop_when(record: EpisodeRecord) -> bool:
            return holder[0](record)

        _, summary = run_panel(panel, policy, store, run_id=rid, order=only,
                               on_start=on_start, stop_when=stop_when, **run_options)
        if holder and holder[0].decision is not None:
            break
    assert holder and summary is not None
    return rid, base_rid, summary, holder[0]
