"""A run judged by another scorer: the same episodes, the outcome a named scorer's verdict.

``compare``, ``rank``, ``show`` and the reports judge episodes by their outcome. To compare two
policies by a person's judgement (or a model judge's) instead of the env's success rule,
:func:`rescore_run` stores a new run of the same panel whose episodes are the original ones
with the outcome replaced by the scorer's verdict: success when its value is at least
``success_at`` (1 for success labels; a rubric level for an ordinal score), else failure (a
timeout the scorer also calls a failure stays a timeout). A changed outcome loses its time to
success (the scorer does not say when).
Episodes the scorer did not judge are left out (the new run says how many), so a comparison
of two rescored runs pairs the episodes both scorers judged. The new run is stored as
derived (``status="imported"``, ``source="import"``) with its origin in the manifest's
``extra``: ``rescored_from``, ``scorer``, ``scorer_source``, ``success_at``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from evalband.episode import Outcome
from evalband.errors import InvalidInputError

if TYPE_CHECKING:
    from evalband.store import RunStore

__all__ = ["Rescored", "rescore_run"]


@dataclass(frozen=True)
class Rescored:
    """What :func:`rescore_run` stored.

    Attributes:
        run_id: the new run; ``rescored_from``: the original.
        scorer: the scorer whose verdict is the outcome; ``source``: its source.
        episodes: episodes stored; ``left_out``: the original's episodes it did not judge.
        changed: episodes whose outcome differs from the original's.
    """

    run_id: str
    rescored_from: str
    scorer: str
    source: str
    episodes: int
    left_out: int
    changed: int


def rescore_run(store: RunStore, run_id: str, scorer: str, new_run_id: str, *,
                success_at: float = 1.0) -> Rescored:
    """Store ``new_run_id``: ``run_id``'s episodes with ``scorer``'s verdict as the outcome.

    Raises:
        InvalidInputError: a scorer no episode of the run has (the message lists those it
            has), or ``success`` itself.
        RunNotFoundError: no run ``run_id``; StoreError: ``new_run_id`` is taken.

    >>> import tempfile, evalband
    >>> from evalband.store._scores import add_scores
    >>> st = evalband.open_store(f"{tempfile.mkdtemp()}/s.sqlite")
    >>> _ = evalband.run_panel(evalband.load_panel("reach1d"), "reach1d:damped", st, run_id="d")
    >>> keys = sorted(r.key for r in st.episode_records("d"))[:4]
    >>> add_scores(st, "d", "human", "operator", dict.fromkeys(keys, 0.0))
    4
    >>> r = rescore_run(st, "d", "human", "d-human")
    >>> r.episodes, r.left_out, sum(x.success for x in st.episode_records("d-human"))
    (4, 60, 0)
    """
    from evalband.analysis._scorers import scorer_values, scorers_of

    if scorer == "success":
        raise InvalidInputError("the run's outcome already is the 'success' scorer; name "
                                "another scorer (e.g. human, judge, score)")
    manifest = store.require_run(run_id)
    records = store.episode_records(run_id)
    found = scorers_of(records)
    if scorer not in found:
        raise InvalidInputError(f"no episode of run {run_id} has scorer {scorer!r}; scorers: "
                                f"{', '.join(found) or 'none'}")
    values = scorer_values(records, scorer)
    out = []
    changed = 0
    for record in records:
        value = values.get(record.key)
        if value is None:
            continue
        success = value >= success_at
        if success:
            outcome = Outcome.SUCCESS
        elif record.outcome in (Outcome.FAILURE, Outcome.TIMEOUT):
            outcome = record.outcome  # the scorer agrees: not a success, for the same reason
        else:
            outcome = Outcome.FAILURE
        changed += outcome is not record.outcome
        kept = outcome is record.outcome
        out.append(dataclasses.replace(
            record, run_id=new_run_id, outcome=outcome,
            terminated=record.terminated if kept else True,
            truncated=record.truncated if kept else False,
            time_to_success_s=record.time_to_success_s if kept else None, error=None))
    extra = {**manifest.extra, "rescored_from": run_id, "scorer": scorer,
             "scorer_source": found[scorer]["source"], "success_at": success_at}
    new = manifest.replace(run_id=new_run_id, status="imported", source="import", extra=extra,
                           started_at=datetime.now(UTC).isoformat(timespec="seconds"),
                           n_planned=manifest.n_planned)
    store.create_run(new)
    store.add_episodes(out)
    return Rescored(run_id=new_run_id, rescored_from=run_id, scorer=scorer,
                    source=str(found[scorer]["source"]), episodes=len(out),
                    left_out=len(records) - len(out), changed=changed)
