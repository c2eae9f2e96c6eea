"""Stored comparison results: the recipe's options, and typed comparisons back from the store.

``evalband compare`` records each comparison of stored runs with its result
(:meth:`evalband.store.RunStore.record_comparison`); ``report`` and ``view`` read it back here
instead of computing it again, as long as the runs have the episodes it was computed from.
The options that change what is computed are named in one place, :func:`comparison_options`,
which both the recording and the reading use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evalband.analysis._models import DEFAULT_EFFECT, Comparison

if TYPE_CHECKING:
    from evalband.store import RunStore

__all__ = [
    "comparison_options",
    "comparison_settings",
    "comparisons_from_result",
    "stored_comparisons",
]

_DEFAULT_CONFIDENCE = 0.95


def comparison_options(
    *,
    confidence: float = _DEFAULT_CONFIDENCE,
    allow_panel_mismatch: bool = False,
    sequential: bool = False,
    effect: float = DEFAULT_EFFECT,
    max_pairs: int | None = None,
    discordant: float | None = None,
    scorer: str | None = None,
    success_at: float = 1.0,
) -> dict[str, Any]:
    """The options a comparison is recorded under: each setting that is not the default.

    ``scorer`` (``compare --scorer``: the named scorer that judged the episodes) is kept with
    its ``success_at`` threshold.

    ``discordant`` (a sequential design's declared discordance) is kept with ``sequential``
    only.

    >>> comparison_options()
    {}
    >>> comparison_options(confidence=0.9, sequential=True)
    {'confidence': 0.9, 'sequential': True}
    """
    options: dict[str, Any] = {}
    if confidence != _DEFAULT_CONFIDENCE:
        options["confidence"] = confidence
    if allow_panel_mismatch:
        options["allow_panel_mismatch"] = True
    if sequential:
        options["sequential"] = True
    if effect != DEFAULT_EFFECT:
        options["effect"] = effect
    if max_pairs is not None:
        options["max_pairs"] = max_pairs
    if sequential and discordant is not None:
        options["discordant"] = discordant
    if scorer is not None:
        options["scorer"] = scorer
        options["success_at"] = success_at
    return options


def comparison_settings(options: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Recorded options back as settings (the keywords of :func:`comparison_options`).

    Returns:
        The settings, and the names of recorded options this evalband does not know
        (``episode_counts`` is a record, not a setting).

    >>> comparison_settings({"confidence": 0.9, "episode_counts": {"a": 3}, "tail": "x"})
    ({'confidence': 0.9}, ['tail'])
    """
    known = ("confidence", "allow_panel_mismatch", "sequential", "effect", "max_pairs")
    settings = {k: options[k] for k in known if k in options}
    unknown = sorted(set(options) - set(known) - {"episode_counts"})
    return settings, unknown


def comparisons_from_result(result: Sequence[Mapping[str, Any]]) -> tuple[Comparison, ...]:
    """Typed comparisons back from a stored result (see :meth:`Comparison.from_dict`).

    The store keeps one ``--json`` document per candidate (``evalband.report``'s
    ``comparison_documents``).
    """
    return tuple(Comparison.from_dict(d) for d in result)


def stored_comparisons(
    store: RunStore, run_ids: Sequence[str], options: Mapping[str, Any]
) -> tuple[Comparison, ...] | None:
    """The stored, up-to-date result of comparing these runs under ``options``, typed.

    ``None`` when there is none (never recorded, recorded by an older evalband without its
    result, or a run gained or replayed episodes since).
    """
    found = store.find_comparison_result(list(run_ids), dict(options))
    if found is None or found.result is None or len(found.result) != len(run_ids) - 1:
        return None
    return comparisons_from_result(found.result)
