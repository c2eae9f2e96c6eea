"""Pairwise preference sessions (RoboArena's protocol): two blinded policies per block.

Each block plays two policies back to back from the same start state (a scene); the operator
sees only "A" and "B" (which policy plays first is drawn per block) and gives a preference
(A, B or tie), a progress score from 0 to 100 for each, and a note. The plan cycles through
every pair of policies, reshuffled each cycle, so comparisons stay balanced.

Storage follows the sessions' foundation (:mod:`evalband.store._session_runs`): each policy is
a run (``source="session"``, id ``<session>:<policy>``), each block two episodes, one in
each policy's run, with the same pairing key (cell ``scene=S``, episode = the block), so
``rank``, ``compare``, ``report`` and the viewer read them as any runs. The progress is the
episode's ``score``; a progress of 100 is a success (the task done), anything else a
failure; the block's preference, the position and the note live in
``extra["preference"]``. The plan travels in every run's manifest (``extra``), so no table
is added. Both episodes of a block are written in one transaction: a block is recorded
whole or not at all.

:class:`PreferenceSession` is the state of a session free of terminal I/O (what the
terminal loop and a browser console drive): ``pending()`` gives the next block,
``record(...)`` confirms it, ``undo_last()`` takes the last one back.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from evalband.errors import InvalidInputError, SessionNotFoundError, StoreError

if TYPE_CHECKING:
    from evalband.episode import EpisodeRecord
    from evalband.panel import Panel
    from evalband.store import RunStore

__all__ = ["PreferenceBlock", "PreferencePlan", "PreferenceResult", "PreferenceSession",
           "plan_preference", "PREFERENCES", "preference_session_ids"]

PREFERENCES = ("A", "B", "tie")
"""What the operator may answer for a block."""

_KIND = "preference"


@dataclass(frozen=True)
class PreferenceBlock:
    """One planned block: ``first`` plays as "A", then ``second`` as "B", same start state."""

    index: int
    scene: int
    task: str | None
    first: str
    second: str


@dataclass(frozen=True)
class PreferencePlan:
    """A preference session's plan.

    Attributes:
        session_id: the session.
        policies: the policies compared.
        blocks: every block, in the order to play them.
        seed: the seed of the schedule.
        created_at: when it was planned (ISO-8601 UTC).
    """

    session_id: str
    policies: tuple[str, ...]
    blocks: tuple[PreferenceBlock, ...]
    seed: int
    created_at: str

    @property
    def scenes(self) -> tuple[int, ...]:
        """The distinct start states, in order."""
        return tuple(sorted({b.scene for b in self.blocks}))

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (kept in each run's manifest)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PreferencePlan:
        """The plan back from :meth:`as_dict`."""
        return cls(str(data["session_id"]), tuple(str(p) for p in data["policies"]),
                   tuple(PreferenceBlock(int(b["index"]), int(b["scene"]),
                                         None if b.get("task") is None else str(b["task"]),
                                         str(b["first"]), str(b["second"]))
                         for b in data["blocks"]),
                   int(data["seed"]), str(data["created_at"]))


@dataclass(frozen=True)
class PreferenceResult:
    """One recorded block: who played first, what the operator preferred, the progress."""

    block: int
    scene: int
    task: str | None
    first: str
    second: str
    preferred: str
    progress_first: int
    progress_second: int
    note: str | None
    scored_at: str

    @property
    def outcome(self) -> float:
        """1 when ``first`` is preferred, 0 when ``second``, 0.5 for a tie."""
        return {"A": 1.0, "B": 0.0, "tie": 0.5}[self.preferred]


def plan_preference(
    policies: Sequence[str],
    blocks: int,
    seed: int,
    *,
    scenes: int | None = None,
    tasks: Sequence[str] = (),
    session_id: str | None = None,
) -> PreferencePlan:
    """Plan ``blocks`` blocks over every pair of ``policies``, balanced and shuffled.

    Pairs are taken from the list of all pairs, reshuffled every cycle
    (``np.random.default_rng(SeedSequence([seed, cycle]))``); which of the two plays first
    (and is shown as "A") is drawn per block. Block ``b`` (numbered from 0) starts from scene
    ``b + 1`` (its own start state), or scene ``b % scenes + 1`` with ``scenes``; with
    ``tasks``, block ``b`` is of task ``tasks[b % len(tasks)]``.

    Raises:
        InvalidInputError: fewer than two distinct policies, no block, a bad id.

    >>> plan = plan_preference(["a", "b", "c"], 6, seed=1, session_id="p1")
    >>> sorted(tuple(sorted((b.first, b.second))) for b in plan.blocks)
    [('a', 'b'), ('a', 'b'), ('a', 'c'), ('a', 'c'), ('b', 'c'), ('b', 'c')]
    """
    from evalband.session._plan import check_session_id

    names = [str(p) for p in policies]
    if len(names) < 2 or len(set(names)) != len(names) or any(not n for n in names):
        raise InvalidInputError(f"`policies` must name two or more distinct policies, e.g. "
                                f"A,B (a preference session compares them in pairs); got "
                                f"{','.join(names)!r}", parameters=("policies",))
    if isinstance(blocks, bool) or not isinstance(blocks, int) or blocks < 1:
        raise InvalidInputError(f"blocks must be a whole number >= 1; got {blocks!r}",
                                parameters=("blocks",))
    if scenes is not None and (isinstance(scenes, bool) or scenes < 1):
        raise InvalidInputError(f"scenes must be >= 1; got {scenes!r}", parameters=("scenes",))
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    chosen: list[tuple[str, str]] = []
    cycle = 0
    while len(chosen) < blocks:
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), cycle]))
        for i in rng.permutation(len(pairs)):
            a, b = pairs[int(i)]
            chosen.append((a, b) if rng.random() < 0.5 else (b, a))
        cycle += 1
    plan_blocks = tuple(
        PreferenceBlock(i, (i % scenes if scenes else i) + 1,
                        tasks[i % len(tasks)] if tasks else None, first, second)
        for i, (first, second) in enumerate(chosen[:blocks]))
    sid = check_session_id(session_id or f"prefer-s{int(seed)}-{len(names)}x{blocks}")
    return PreferencePlan(sid, tuple(names), plan_blocks, int(seed),
                          datetime.now(UTC).isoformat(timespec="seconds"))


def _run_id(session_id: str, policy: str) -> str:
    return f"{session_id}:{re.sub(r'[^A-Za-z0-9._-]+', '_', policy)}"[:128]


def _panel(plan: PreferencePlan) -> Panel:
    from evalband.panel import Budget, Panel

    return Panel(
        name=plan.session_id,
        description=(f"preference session {plan.session_id}: {len(plan.blocks)} blocks of two "
                     "blinded policies from one start state (scene = cell, block = episode)"),
        env="hardware-session",
        episodes=len(plan.blocks),
        seed=plan.seed,
        budget=Budget(steps=1),
        factors={"scene": [str(s) for s in plan.scenes]},
    )


class PreferenceSession:
    """A preference session in a run store: its plan, its recorded blocks, the next one.

    >>> import tempfile
    >>> from evalband.store import RunStore
    >>> with tempfile.TemporaryDirectory() as d, RunStore(f"{d}/s.sqlite") as st:
    ...     s = PreferenceSession.create(st, plan_preference(["a", "b"], 2, 0, session_id="p"))
    ...     block = s.pending()
    ...     _ = s.record(block.index, "A", 80, 20, note="A smoother")
    ...     print(s.pending().index, [r.preferred for r in s.results()])
    1 ['A']
    """

    def __init__(self, store: RunStore, session_id: str) -> None:
        self.store = store
        self.session_id = session_id
        self.plan = self._find_plan()
        self.run_ids = {p: _run_id(session_id, p) for p in self.plan.policies}
        self._panel = _panel(self.plan)

    @classmethod
    def create(cls, store: RunStore, plan: PreferencePlan) -> PreferenceSession:
        """Store a new session: one run per policy, the plan in each manifest.

        Raises:
            StoreError: a session or run of that id exists already.
        """
        if preference_session_ids(store).count(plan.session_id):
            raise StoreError(f"preference session {plan.session_id!r} exists already in "
                             f"{store.path}; choose another session id", parameters=("session_id",))
        from evalband.store._manifest import new_manifest

        panel = _panel(plan)
        per_policy = {p: sum(p in (b.first, b.second) for b in plan.blocks) for p in plan.policies}
        for policy in plan.policies:
            manifest = new_manifest(panel, policy, _run_id(plan.session_id, policy),
                                    backend="session", workers=1, policy_hash=None,
                                    n_planned=per_policy[policy], source="session")
            store.create_run(manifest.replace(
                started_at=plan.created_at,
                extra={_KIND: {"session_id": plan.session_id, "plan": plan.as_dict()}}))
        return cls(store, plan.session_id)

    def _find_plan(self) -> PreferencePlan:
        for m in self.store.list_runs():
            info = m.extra.get(_KIND) if isinstance(m.extra, dict) else None
            if isinstance(info, dict) and info.get("session_id") == self.session_id:
                return PreferencePlan.from_dict(info["plan"])
        known = preference_session_ids(self.store)
        raise SessionNotFoundError(
            f"preference session {self.session_id!r} is not in the store {self.store.path}; "
            + (f"known: {', '.join(known)}" if known else "plan one with evalband prefer plan"))

    def results(self) -> list[PreferenceResult]:
        """The recorded blocks, by block index."""
        seen: dict[int, PreferenceResult] = {}
        for policy, run_id in self.run_ids.items():
            for r in self.store.episode_records(run_id):
                info = r.extra.get(_KIND)
                if not isinstance(info, dict) or int(r.episode) in seen:
                    continue
                block = self.plan.blocks[int(r.episode)]
                mine = int(r.score or 0)
                other = int(info["other_progress"])
                first = policy == block.first
                seen[int(r.episode)] = PreferenceResult(
                    block.index, block.scene, block.task, block.first, block.second,
                    str(info["preferred"]), mine if first else other, other if first else mine,
                    info.get("note"), str(info["scored_at"]))
        return [seen[i] for i in sorted(seen)]

    def pending(self) -> PreferenceBlock | None:
        """The first block not yet recorded (``None``: the session is done)."""
        done = {r.block for r in self.results()}
        return next((b for b in self.plan.blocks if b.index not in done), None)

    def _records(self, block: PreferenceBlock, preferred: str, progress: tuple[int, int],
                 note: str | None, scored_at: str) -> list[EpisodeRecord]:
        from evalband.episode import EpisodeRecord, Outcome

        cell = f"scene={block.scene}"
        seed = int(self._panel.seed_function()(self._panel.seed, cell, block.index))
        out = []
        for policy, position, mine, other in ((block.first, "A", progress[0], progress[1]),
                                              (block.second, "B", progress[1], progress[0])):
            result = ("tie" if preferred == "tie" else
                      "win" if preferred == position else "loss")
            slices = {"scene": str(block.scene)}
            if block.task is not None:
                slices["task"] = block.task
            out.append(EpisodeRecord(
                run_id=self.run_ids[policy], policy=policy,
                panel_fingerprint=self._panel.fingerprint, cell=cell, slices=slices,
                episode=block.index, repeat=0, condition_seed=seed,
                outcome=Outcome.SUCCESS if mine >= 100 else Outcome.FAILURE,
                terminated=True, truncated=False, steps=0, score=int(mine),
                started_at=scored_at,
                extra={_KIND: {"session_id": self.session_id, "block": block.index,
                               "position": position, "opponent": block.second if position == "A"
                               else block.first, "preferred": preferred, "result": result,
                               "other_progress": int(other), "note": note,
                               "scored_at": scored_at}}))
        return out

    def record(self, block: int, preferred: str, progress_a: int, progress_b: int, *,
               note: str | None = None, scored_at: str | None = None) -> PreferenceResult:
        """Confirm a block: the preference, both progress scores, a note (durable on return).

        Raises:
            InvalidInputError: an unknown block, a preference that is not A/B/tie, a progress
                outside 0-100.
            StoreError: the block is recorded already (undo it first).
        """
        if not isinstance(block, int) or not 0 <= block < len(self.plan.blocks):
            raise InvalidInputError(f"block must be 0 to {len(self.plan.blocks) - 1}; got "
                                    f"{block!r}", parameters=("block",))
        pref = {"a": "A", "b": "B", "t": "tie", "tie": "tie"}.get(str(preferred).lower())
        if pref is None:
            raise InvalidInputError(f"the preference is A, B or tie; got {preferred!r}",
                                    parameters=("preferred",))
        for name, value in (("progress A", progress_a), ("progress B", progress_b)):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 100:
                raise InvalidInputError(f"{name} must be a whole number from 0 to 100; got "
                                        f"{value!r}")
        if any(r.block == block for r in self.results()):
            raise StoreError(f"block {block} of {self.session_id} is recorded already; undo it "
                             "first")
        when = scored_at or datetime.now(UTC).isoformat(timespec="seconds")
        plan_block = self.plan.blocks[block]
        self.store.add_episodes(self._records(plan_block, pref, (progress_a, progress_b),
                                              note or None, when))
        return next(r for r in self.results() if r.block == block)

    def undo_last(self) -> PreferenceResult | None:
        """Take back the block recorded last (``None`` when none is)."""
        results = self.results()
        if not results:
            return None
        last = max(results, key=lambda r: (r.scored_at, r.block))
        with self.store.transaction() as conn:
            for run_id in self.run_ids.values():
                conn.execute('DELETE FROM episodes WHERE run_id = ? AND "episode" = ?',
                             (run_id, last.block))
        return last


def preference_session_ids(store: RunStore) -> list[str]:
    """The preference sessions in the store, oldest first."""
    out: list[str] = []
    for m in reversed(store.list_runs()):
        info = m.extra.get(_KIND) if isinstance(m.extra, dict) else None
        if isinstance(info, dict) and info.get("session_id") not in out:
            out.append(str(info["session_id"]))
    return out
