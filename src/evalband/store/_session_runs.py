"""Hardware-session trials as episode records: one run per policy, scene = cell, attempt = repeat.

A hardware session (:mod:`evalband.session`) plans ``scenes x attempts`` trials per policy.
Its trials are kept as :class:`~evalband.episode.EpisodeRecord` rows of the store's
``episodes`` table, so ``compare``, ``report``, export and the viewer read a session's
policies like any other runs:

* each policy of the session is a **run** (``source="session"``, ``backend="session"``), its id
  ``<session id>:<label>`` (see :func:`session_run_ids`), its manifest's ``extra`` naming the
  session; the ``sessions`` table lists the run ids (policy -> run id);
* a policy's **label** (:func:`run_label`) is what the runs layer calls it: its name, or in a
  **blinded** session its blind code (``P-7K2``). The run id, the manifest's ``policy`` and
  each episode's ``policy`` carry the label (and a trial command's stored output tail has the
  name replaced by the code, :func:`coded_text`), so ``evalband runs``, ``show``, ``report``,
  ``compare``, export and the viewer's run list never name a blinded session's policies; the
  mapping code -> policy stays in the session's plan (``sessions`` table), which only the
  session views reveal (``session show --unblind``, ``session analyze``, and once no trial is
  pending ``session list`` and the viewer's session pages). The runs keep their coded ids
  after the session ends;
* the session's **panel** (:func:`session_panel`) has one factor, ``scene`` (levels ``"1"`` ..
  ``"S"``), one episode per cell and ``attempts`` repeats: a scene is a cell (``scene=3``), an
  attempt is a repeat (attempt 1 is repeat 0), and trials of two policies pair by
  ``(scene, attempt)`` exactly as the session's own analysis pairs them;
* a **scored** trial is a ``success`` or ``failure`` (the rubric's ``success_at``) with its
  ordinal ``score``, ``assisted`` flag and the trial command's wall time as ``wall_s``; a
  **skipped** trial (the operator recorded that it could not be run) is an ``error`` episode
  (``error="skipped by the operator"``): never a failure and never dropped, as the episode
  convention says; ``compare`` withholds a verdict over it until the user decides;
* what only a session has (trial index, confirmation order ``seq``, the blind code, the
  operator's note, the trial command's exit status and output tail, the confirmation time)
  rides in ``extra["session"]``.

The mapping works on the plan's JSON (``SessionPlan.as_dict()``), so the store's migration
(:mod:`evalband.store._schema`, version 2 -> 3) moves old ``session_trials`` rows with it
without importing :mod:`evalband.session`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evalband._util.ids import safe_name
from evalband.episode import EpisodeRecord, Outcome
from evalband.store._manifest import RunManifest, environment_versions, git_sha

if TYPE_CHECKING:
    from evalband.panel import Panel

__all__ = [
    "SESSION_ENV",
    "SKIPPED_ERROR",
    "TRIAL_FIELDS",
    "session_panel",
    "run_label",
    "session_run_ids",
    "session_manifest",
    "trial_episode",
    "trial_fields",
    "coded_text",
    "scene_cell",
    "create_session_runs",
    "read_trials",
    "migrate_session_trials",
    "mark_finished",
]

SESSION_ENV = "hardware-session"
"""The ``env`` of a session's panel: the trials ran on hardware, outside evalband."""

SKIPPED_ERROR = "skipped by the operator"
"""The ``error`` of a skipped trial's episode (its outcome is ``error``)."""

TRIAL_FIELDS = (
    "session_id",
    "trial_index",
    "seq",
    "status",
    "score",
    "success",
    "assisted",
    "note",
    "exit_code",
    "duration_s",
    "output_tail",
    "scored_at",
)
"""What a confirmed trial holds (the fields of ``session_trials`` in schema 2)."""


def scene_cell(scene: int) -> str:
    """The cell key of a scene.

    >>> scene_cell(3)
    'scene=3'
    """
    return f"scene={int(scene)}"


def session_panel(plan: Mapping[str, Any]) -> Panel:
    """The panel of a session plan (``SessionPlan.as_dict()``): scenes as cells, attempts repeats.

    >>> from evalband.session import plan_session
    >>> panel = session_panel(plan_session(["A", "B"], 3, 2, 7, session_id="s").as_dict())
    >>> panel.env, [c.key for c in panel.cells()], panel.repeats
    ('hardware-session', ['scene=1', 'scene=2', 'scene=3'], 2)
    """
    from evalband.panel import Budget, Panel

    scenes = int(plan["scenes"])
    return Panel(
        name=str(plan["session_id"]),
        description=(
            f"hardware session {plan['session_id']}: {scenes} scenes x {plan['attempts']} "
            f"attempts per policy (scene = cell, attempt = repeat)"
        ),
        env=SESSION_ENV,
        episodes=1,
        seed=int(plan["seed"]),
        budget=Budget(steps=1),
        factors={"scene": [str(s) for s in range(1, scenes + 1)]},
        repeats=int(plan["attempts"]),
    )


def run_label(plan: Mapping[str, Any], policy: str) -> str:
    """What the runs layer calls a policy of the plan: its blind code when blinded, else its name.

    The run id, the manifest's ``policy`` and every episode's ``policy`` carry it, so no
    general command shows a blinded session's policy names (``SessionPlan.label``, as the
    operator's screen; a planned trial's ``code`` is the same label).

    >>> from evalband.session import plan_session
    >>> plan = plan_session(["GN_s1000"], 1, 1, 7, blind=True, session_id="s").as_dict()
    >>> run_label(plan, "GN_s1000") == plan["codes"]["GN_s1000"]
    True
    >>> run_label(plan_session(["A"], 1, 1, 7, session_id="s").as_dict(), "A")
    'A'
    """
    return str(plan["codes"][policy]) if plan.get("blind") else str(policy)


def session_run_ids(
    session_id: str, policies: Sequence[str], taken: Collection[str] = ()
) -> dict[str, str]:
    """Each label's run id, ``<session id>:<label>`` (unsafe characters become ``_``).

    ``policies`` are the labels the runs layer shows (:func:`run_label`: names, or blind
    codes). Two policies whose safe names collide, or an id already ``taken`` by another run, get
    ``.2``, ``.3``, ... appended.

    >>> session_run_ids("grasp-1", ["A", "ckpt/v2", "ckpt_v2"])
    {'A': 'grasp-1:A', 'ckpt/v2': 'grasp-1:ckpt_v2', 'ckpt_v2': 'grasp-1:ckpt_v2.2'}
    """
    out: dict[str, str] = {}
    used = set(taken)
    for policy in policies:
        base = f"{session_id}:{safe_name(policy, 'policy', 60)}"
        run_id, n = base, 1
        while run_id in used:
            n += 1
            run_id = f"{base}.{n}"
        used.add(run_id)
        out[policy] = run_id
    return out


def session_manifest(
    plan: Mapping[str, Any], policy: str, run_id: str, panel: Panel, *, provenance: bool = True
) -> RunManifest:
    """The manifest of one policy's run of a session (``provenance``: this machine's versions).

    Its ``policy`` is the policy's :func:`run_label` (the blind code in a blinded session).

    >>> from evalband.session import plan_session
    >>> plan = plan_session(["A"], 2, 1, 0, session_id="s").as_dict()
    >>> m = session_manifest(plan, "A", "s:A", session_panel(plan), provenance=False)
    >>> m.source, m.n_planned, m.extra["session_id"], m.policy
    ('session', 2, 's', 'A')
    """
    import platform
    import socket

    return RunManifest(
        run_id=run_id,
        panel_name=panel.name,
        panel_yaml=panel.to_yaml(),
        panel_fingerprint=panel.fingerprint,
        policy=run_label(plan, policy),
        policy_hash=None,
        backend="session",
        workers=1,
        host=f"{socket.gethostname()} ({platform.platform()})" if provenance else "",
        git_sha=git_sha() if provenance else None,
        versions=environment_versions() if provenance else {},
        command=None,
        started_at=str(plan["created_at"]),
        finished_at=None,
        status="running",
        n_planned=int(plan["scenes"]) * int(plan["attempts"]),
        source="session",
        extra={"session_id": str(plan["session_id"])},
    )


def trial_episode(
    trial: Mapping[str, Any], fields: Mapping[str, Any], *, run_id: str, panel: Panel,
    seeds: Mapping[tuple[str, int, int], int] | None = None,
) -> EpisodeRecord:
    """The episode record of one confirmed trial.

    Args:
        trial: the planned trial (``Trial.as_dict()``: index, scene, attempt, policy, code,
            position); the episode's ``policy`` is its ``code``, the policy's
            :func:`run_label` (the name unless the session is blinded).
        fields: what was confirmed (:data:`TRIAL_FIELDS`; ``success`` is ignored: the outcome
            follows from ``status`` and the score's ``success``). In a blinded session the
            trial command's ``output_tail`` (the command gets the real name) is kept with the
            policy's name replaced by its code (:func:`coded_text`).
        run_id: the policy's run.
        panel: the session's panel (its fingerprint and condition seeds).
        seeds: the panel's condition seeds by key, when computed once for many trials.

    >>> from evalband.session import plan_session
    >>> plan = plan_session(["A"], 1, 2, 0, session_id="s")
    >>> rec = trial_episode(plan.trials[1].as_dict(), {"session_id": "s", "status": "scored",
    ...     "score": 2,
    ...     "success": True, "assisted": False, "seq": 1, "scored_at": "t"},
    ...     run_id="s:A", panel=session_panel(plan.as_dict()))
    >>> rec.key, rec.outcome.value, rec.score, trial_fields(rec)["trial_index"]
    (('scene=1', 0, 1), 'success', 2, 1)
    """
    cell = scene_cell(int(trial["scene"]))
    key = (cell, 0, int(trial["attempt"]) - 1)
    if seeds is None:
        seeds = {spec.key: spec.condition_seed for spec in panel.episode_specs()}
    skipped = fields["status"] == "skipped"
    if skipped:
        outcome = Outcome.ERROR
    else:
        outcome = Outcome.SUCCESS if fields.get("success") else Outcome.FAILURE
    duration = fields.get("duration_s")
    session = {
        "session_id": str(fields["session_id"]),
        "trial_index": int(trial["index"]),
        "seq": int(fields["seq"]),
        "status": str(fields["status"]),
        "code": str(trial["code"]),
        "position": int(trial["position"]),
        "note": fields.get("note"),
        "exit_code": fields.get("exit_code"),
        "output_tail": coded_text(fields.get("output_tail"), trial),
        "scored_at": str(fields["scored_at"]),
    }
    return EpisodeRecord(
        run_id=run_id,
        policy=str(trial["code"]),
        panel_fingerprint=panel.fingerprint,
        cell=cell,
        slices={"scene": str(int(trial["scene"]))},
        episode=0,
        repeat=key[2],
        condition_seed=seeds[key],
        outcome=outcome,
        terminated=not skipped,
        truncated=False,
        steps=0,
        score=None if skipped else fields.get("score"),
        assisted=bool(fields.get("assisted")),
        wall_s=None if duration is None else float(duration),
        error=SKIPPED_ERROR if skipped else None,
        extra={"session": session},
    )


def coded_text(text: str | None, trial: Mapping[str, Any]) -> str | None:
    """``text`` as a blinded trial's run keeps it: its policy's name replaced by its code.

    Unchanged when the session is not blinded (the trial's ``code`` is the name) or the name
    is one character (it reveals nothing, and replacing it would garble the text).

    >>> coded_text("loaded ckpt GN_s1000.pt", {"policy": "GN_s1000", "code": "P-7K2"})
    'loaded ckpt P-7K2.pt'
    >>> coded_text("loaded A", {"policy": "A", "code": "A"})
    'loaded A'
    """
    policy, code = str(trial["policy"]), str(trial["code"])
    if text is None or policy == code or len(policy) < 2:
        return text
    return str(text).replace(policy, code)


def trial_fields(record: EpisodeRecord) -> dict[str, Any]:
    """The confirmed trial (:data:`TRIAL_FIELDS`) an episode of a session holds.

    See :func:`trial_episode` for an example.
    """
    return _fields(record.outcome.value, record.score, record.assisted, record.wall_s,
                   record.extra["session"])


def _fields(
    outcome: str, score: Any, assisted: Any, wall_s: Any, session: Mapping[str, Any]
) -> dict[str, Any]:
    """A trial's fields from its episode's outcome, score, assisted, wall_s and session extra."""
    skipped = session["status"] == "skipped"
    return {
        "session_id": str(session["session_id"]),
        "trial_index": int(session["trial_index"]),
        "seq": int(session["seq"]),
        "status": str(session["status"]),
        "score": None if skipped or score is None else int(score),
        "success": None if skipped else outcome == Outcome.SUCCESS.value,
        "assisted": bool(assisted),
        "note": session.get("note"),
        "exit_code": None if session.get("exit_code") is None else int(session["exit_code"]),
        "duration_s": None if wall_s is None else float(wall_s),
        "output_tail": session.get("output_tail"),
        "scored_at": str(session["scored_at"]),
    }


def read_trials(conn: sqlite3.Connection, run_ids: Sequence[str]) -> list[dict[str, Any]]:
    """The confirmed trials (:data:`TRIAL_FIELDS`) stored as episodes of ``run_ids``.

    One query reading only what :func:`trial_fields` reads (no record is built): what a
    session's terminal asks several times per keypress.

    >>> import tempfile
    >>> from evalband.session import SessionStore, plan_session
    >>> with tempfile.TemporaryDirectory() as d, SessionStore(f"{d}/s.sqlite") as ss:
    ...     ss.create(plan_session(["A"], scenes=1, attempts=2, seed=0, session_id="s"))
    ...     _ = ss.record("s", 1, score=2, note="ok")
    ...     rows = read_trials(ss.runs.conn, ["s:A"])
    >>> [(r["trial_index"], r["score"], r["success"], r["note"], r["seq"]) for r in rows]
    [(1, 2, True, 'ok', 1)]
    """
    if not run_ids:
        return []
    rows = conn.execute(
        'SELECT "outcome", "score", "assisted", "wall_s", "extra" FROM episodes '
        f'WHERE "run_id" IN ({", ".join("?" for _ in run_ids)})', list(run_ids),
    ).fetchall()
    return [
        _fields(outcome, score, assisted, wall_s, json.loads(extra)["session"])
        for outcome, score, assisted, wall_s, extra in rows
    ]


def create_session_runs(
    conn: sqlite3.Connection, plan: Mapping[str, Any], *, provenance: bool = True
) -> dict[str, str]:
    """Insert one run per policy of the plan (inside the caller's transaction); the run ids.

    Each run is named by the policy's :func:`run_label` (a blinded session's runs by their
    blind codes); the result maps each policy to its run id. Run ids already stored are
    avoided (:func:`session_run_ids`).

    >>> import tempfile
    >>> from evalband.session import plan_session
    >>> from evalband.store import RunStore
    >>> plan = plan_session(["A", "B"], scenes=1, attempts=1, seed=0, session_id="s")
    >>> with tempfile.TemporaryDirectory() as d, RunStore(f"{d}/s.sqlite") as st:
    ...     with st.transaction() as conn:
    ...         ids = create_session_runs(conn, plan.as_dict(), provenance=False)
    ...     print(ids, st.require_run("s:B").source)
    {'A': 's:A', 'B': 's:B'} session
    """
    from evalband.store._sqlite import insert_run

    taken = {str(r[0]) for r in conn.execute('SELECT "run_id" FROM runs')}
    labels = {str(p): run_label(plan, str(p)) for p in plan["policies"]}
    by_label = session_run_ids(str(plan["session_id"]), list(labels.values()), taken)
    ids = {policy: by_label[label] for policy, label in labels.items()}
    panel = session_panel(plan)
    for policy, run_id in ids.items():
        manifest = session_manifest(plan, policy, run_id, panel, provenance=provenance)
        insert_run(conn, manifest)
    return ids


def migrate_session_trials(conn: sqlite3.Connection) -> None:
    """Schema 2 -> 3: every session gets its runs; its ``session_trials`` rows become episodes.

    The runs are named as a new session's (:func:`create_session_runs`: a blinded session's by
    its blind codes, in its runs and episodes alike). Runs inside the migration's transaction.
    A run whose every planned trial is confirmed is marked ``finished`` (at its last
    confirmation). The ``session_trials`` table is dropped.
    ``tests/store/test_migrate_sessions.py`` migrates a store the release with schema 2 wrote.
    """
    from evalband.store._sqlite import _INSERT_EPISODE, _episode_row

    sessions = conn.execute('SELECT "session_id", "plan" FROM sessions').fetchall()
    has_trials = bool(conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'session_trials'"
    ).fetchone())
    for session_id, plan_text in sessions:
        plan = json.loads(plan_text)
        ids = create_session_runs(conn, plan, provenance=False)
        conn.execute('UPDATE sessions SET "run_ids" = ? WHERE "session_id" = ?',
                     (json.dumps(ids), session_id))
        if not has_trials:
            continue
        panel = session_panel(plan)
        seeds = {spec.key: spec.condition_seed for spec in panel.episode_specs()}
        trials = {int(t["index"]): t for t in plan["trials"]}
        rows = conn.execute(
            "SELECT " + ", ".join(f'"{n}"' for n in TRIAL_FIELDS) + " FROM session_trials "
            'WHERE "session_id" = ? ORDER BY "seq"', (session_id,)
        ).fetchall()
        for row in rows:
            fields = dict(zip(TRIAL_FIELDS, row, strict=True))
            trial = trials[int(fields["trial_index"])]
            record = trial_episode(trial, fields, run_id=ids[str(trial["policy"])],
                                   panel=panel, seeds=seeds)
            conn.execute(_INSERT_EPISODE, _episode_row(record))
        mark_finished(conn, list(ids.values()))
    conn.execute("DROP TABLE IF EXISTS session_trials")


def mark_finished(conn: sqlite3.Connection, run_ids: Sequence[str]) -> None:
    """Set each session run's status from its episodes: ``finished`` when all are there.

    A run with every planned trial confirmed is ``finished`` at its latest confirmation;
    otherwise ``running`` (an undo re-opens it).

    >>> import tempfile
    >>> from evalband.session import SessionStore, plan_session
    >>> with tempfile.TemporaryDirectory() as d, SessionStore(f"{d}/s.sqlite") as ss:
    ...     ss.create(plan_session(["A"], scenes=1, attempts=1, seed=0, session_id="s"))
    ...     _ = ss.record("s", 0, score=1, scored_at="2026-01-01T00:00:00Z")  # marks it
    ...     print(ss.runs.require_run("s:A").status, ss.runs.require_run("s:A").finished_at)
    finished 2026-01-01T00:00:00Z
    """
    for run_id in run_ids:
        planned, done, last = conn.execute(
            'SELECT r."n_planned", COUNT(e."run_id"), '
            "MAX(json_extract(e.\"extra\", '$.session.scored_at')) "
            'FROM runs r LEFT JOIN episodes e ON e."run_id" = r."run_id" '
            'WHERE r."run_id" = ? GROUP BY r."run_id"', (run_id,)
        ).fetchone()
        finished = int(done) >= int(planned)
        conn.execute(
            'UPDATE runs SET "status" = ?, "finished_at" = ? WHERE "run_id" = ?',
            ("finished" if finished else "running", last if finished else None, run_id),
        )
