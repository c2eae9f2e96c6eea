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
from evalband.errors import InvalidInputError, StoreError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from evalband.analysis import Comparison
    from evalband.analysis._compare import RunData
    from evalband.analysis._models import JudgedBy
    from evalband.episode import EpisodeRecord
    from evalband.store import RunStore

__all__ = ["Judged", "Rescored", "judge_records", "judge_runs", "judged_comparisons",
           "judged_note", "rescore_run"]


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
    manifest = store.require_run(run_id)
    if store.get_run(new_run_id) is not None:
        raise StoreError(f"run {new_run_id!r} already exists in {store.path}; give another "
                         "`new_run_id` for the rescored run", parameters=("new_run_id",))
    records = store.episode_records(run_id)
    judged = judge_records(records, scorer, run_id=run_id, success_at=success_at,
                           new_run_id=new_run_id)
    out, changed, source = judged.records, judged.changed, judged.source
    extra = {**manifest.extra, "rescored_from": run_id, "scorer": scorer,
             "scorer_source": source, "success_at": success_at}
    new = manifest.replace(run_id=new_run_id, status="imported", source="import", extra=extra,
                           started_at=datetime.now(UTC).isoformat(timespec="seconds"),
                           n_planned=manifest.n_planned)
    store._create_run_with_episodes(new, out)  # one transaction: the run whole, or nothing
    return Rescored(run_id=new_run_id, rescored_from=run_id, scorer=scorer,
                    source=source, episodes=len(out),
                    left_out=len(records) - len(out), changed=changed)


@dataclass(frozen=True)
class Judged:
    """A run's episodes judged by a named scorer (what :func:`judge_records` returns).

    Attributes:
        records: the episodes the scorer judged, the outcome its verdict.
        changed: how many outcomes differ from the run's own; ``left_out``: episodes it did
            not judge; ``source``: who or what judged.
    """

    records: list[EpisodeRecord]
    changed: int
    left_out: int
    source: str


def judge_records(records: Sequence[EpisodeRecord], scorer: str, *, run_id: str,
                  success_at: float = 1.0, new_run_id: str | None = None) -> Judged:
    """``records`` judged by ``scorer``: its verdict as the outcome; unjudged ones left out.

    A success when the scorer's value is at least ``success_at``, else a failure (a timeout
    the scorer also calls a failure stays a timeout); a changed outcome loses its time to
    success. ``new_run_id`` renames the records' run (default: kept). One mechanism for
    ``rescore`` (stored as a new run) and ``compare --scorer`` (compared in memory).

    Raises:
        InvalidInputError: ``success``, or a scorer no episode of ``run_id`` carries (the
            message lists those it does).

    >>> from evalband.episode import EpisodeRecord
    >>> r = EpisodeRecord("r", "p", "f", "", 0, 0, 7, "success", True, False, 5,
    ...                   extra={"scorers": {"human": {"value": 0, "source": "operator"}}})
    >>> j = judge_records([r, dataclasses.replace(r, episode=1, extra={})], "human", run_id="r")
    >>> j.records[0].outcome, j.changed, j.left_out, j.source
    (<Outcome.FAILURE: 'failure'>, 1, 1, 'operator')
    """
    from evalband.analysis._scorers import scorer_values, scorers_of

    if scorer == "success":
        raise InvalidInputError("the run's outcome already is the 'success' scorer; name "
                                "another scorer (e.g. human, judge, score)")
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
        if value >= success_at:
            outcome = Outcome.SUCCESS
        elif record.outcome in (Outcome.FAILURE, Outcome.TIMEOUT):
            outcome = record.outcome  # the scorer agrees: not a success, for the same reason
        else:
            outcome = Outcome.FAILURE
        changed += outcome is not record.outcome
        kept = outcome is record.outcome
        out.append(dataclasses.replace(
            record, run_id=record.run_id if new_run_id is None else new_run_id,
            outcome=outcome, terminated=record.terminated if kept else True,
            truncated=record.truncated if kept else False,
            time_to_success_s=record.time_to_success_s if kept else None, error=None))
    return Judged(records=out, changed=changed, left_out=len(records) - len(out),
                  source=str(found[scorer]["source"]))


def judge_runs(runs: Sequence[RunData], scorer: str, *,
               success_at: float = 1.0) -> tuple[list[RunData], JudgedBy]:
    """``runs`` with their episodes judged by ``scorer`` (:func:`judge_records`), for compare.

    Each run keeps its id and panel; its records are the episodes the scorer judged, the
    outcome its verdict, so a comparison of them pairs the episodes both runs' scorers judged.
    The :class:`~evalband.analysis.JudgedBy` says which scorer, its source and the counts.

    Raises:
        InvalidInputError: as :func:`judge_records`, for the first run without the scorer.
    """
    from evalband.analysis._models import JudgedBy

    out: list[RunData] = []
    sources: list[str] = []
    judged: dict[str, int] = {}
    left_out: dict[str, int] = {}
    for run in runs:
        j = judge_records(list(run.records), scorer, run_id=run.run_id, success_at=success_at)
        out.append(dataclasses.replace(run, records=j.records))
        if j.source not in sources:
            sources.append(j.source)
        judged[run.run_id] = len(j.records)
        left_out[run.run_id] = j.left_out
    return out, JudgedBy(name=scorer, source=" / ".join(sources), success_at=success_at,
                         judged=judged, left_out=left_out)


def judged_comparisons(comparisons: Sequence[Comparison], by: JudgedBy) -> list[Comparison]:
    """``comparisons`` marked as judged by ``by``: its record, and a note every renderer says."""
    from msgspec.structs import replace

    return [replace(c, scorer=by, notes=[judged_note(by), *c.notes]) for c in comparisons]


def judged_note(by: JudgedBy) -> str:
    """The sentence that says a comparison was judged by a named scorer.

    >>> from evalband.analysis._models import JudgedBy
    >>> note = judged_note(JudgedBy("human", "operator", 1.0, {"a": 4, "b": 5}, {"a": 60}))
    >>> note.split(": a value")[0]
    "outcomes judged by scorer 'human' (operator)"
    >>> note.rsplit("; ", 1)[1]
    'episodes it did not judge are left out (a: 60 of 64)'
    """
    left = [f"{run}: {n} of {n + by.judged[run]}" for run, n in by.left_out.items() if n]
    return (f"outcomes judged by scorer {by.name!r} ({by.source}): a value >= {by.success_at:g} "
            f"is a success; " + (f"episodes it did not judge are left out ({', '.join(left)})"
                                 if left else "it judged every episode"))
