"""A comparison as its ``--json`` document (``evalband-comparison/2``), and as JSON text.

The document is the typed :class:`~evalband.analysis.Comparison` written by its generated
codec (:func:`evalband.analysis.to_wire`: slices, aggregate) with what a reader derives from it
put in words: the ``procedure`` block, the one-sentence verdict
(:func:`~evalband.report._words.comparison_sentence`), the exit status, and the peeking notices
said first among the notes. ``evalband compare --json`` prints it, the run store keeps it, and
:meth:`Comparison.from_dict <evalband.analysis.Comparison.from_dict>` reads it back. Its JSON
Schema is generated too (:mod:`evalband.report._schemas`, ``docs/schemas/``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from evalband.report._words import comparison_sentence

if TYPE_CHECKING:
    from evalband.analysis import Comparison

__all__ = ["SCHEMA_ID", "comparison_document", "comparison_documents", "comparison_json",
           "procedure_block"]

SCHEMA_ID = "evalband-comparison/2"
"""The ``schema`` of a comparison's document."""

_FIXED = {
    "slice_test": "exact (McNemar when paired, Fisher otherwise), two-sided",
    "interval": "conditional exact (matched pairs) or score interval at the Holm level of "
                "each slice, compatible",
}
_SEQUENTIAL = {
    "slice_test": "anytime-valid sequential likelihood ratio on discordant pairs "
                  "(unpaired slices paired in order), two one-sided",
    "interval": "betting confidence sequence at 1 - alpha/(2m) on the side the test decided "
                "(valid at 1 - alpha/m with it; 0 excluded exactly when it decided)",
}


def procedure_block(c: Comparison) -> dict[str, Any]:
    """The ``procedure`` block: the test, multiplicity, family, alpha, interval, effect."""
    from evalband.analysis._sequential import SEQUENTIAL_MULTIPLICITY

    sequential = c.multiplicity == SEQUENTIAL_MULTIPLICITY
    words = _SEQUENTIAL if sequential else _FIXED
    block: dict[str, Any] = {
        "slice_test": words["slice_test"],
        "multiplicity": c.multiplicity,
        "family_size": c.family_size,
        # the declared level, not 1 - 0.95 in binary floating point (0.0500...044)
        "alpha": float(f"{1.0 - c.confidence:.12g}"),
        "interval": words["interval"],
        "aggregate": c.aggregate.method,
        "effect": c.effect,
    }
    if sequential:  # the decision, the exit status it gives (6: futility), the fixed design
        from evalband.analysis._sequential_outcome import overall_decision, sequential_exit_code

        decision = overall_decision(c)
        block["decision"] = decision
        block["exit_code"] = sequential_exit_code([decision])
        if c.design is not None:
            block["design"] = c.design
    return block


def comparison_document(c: Comparison) -> dict[str, Any]:
    """The comparison as ``--json`` writes it (see ``docs/schemas/comparison.schema.json``).

    >>> from evalband.analysis import Comparison
    >>> from evalband.analysis._compare import _example_comparison
    >>> c = _example_comparison()
    >>> doc = comparison_document(c)
    >>> str(doc["verdict"]), Comparison.from_dict(json.loads(json.dumps(doc))) == c
    ('no regression', True)
    """
    return {
        "schema": SCHEMA_ID,
        "baseline": c.baseline,
        "candidate": c.candidate,
        "baseline_policy": c.baseline_policy,
        "candidate_policy": c.candidate_policy,
        "panel_name": c.panel_name,
        "panel_fingerprint": c.panel_fingerprint,
        "panel_mismatch": c.panel_mismatch,
        "confidence": c.confidence,
        "procedure": procedure_block(c),
        "slices": [row.as_dict() for row in c.slice_rows],
        "aggregate": c.aggregate.as_dict(),
        "hidden_regressions": c.hidden_regressions,
        "possible_regressions": c.possible_regressions,
        "verdict": c.verdict,
        "sentence": comparison_sentence(c),
        "exit_code": c.exit_code,
        "notes": [*c.peeking, *c.notes],
        "peeking": list(c.peeking),
        "metrics": [_wire(m) for m in c.metrics],
        "scorer": None if c.scorer is None else _wire(c.scorer),
    }


def comparison_documents(comparisons: Sequence[Comparison]) -> list[dict[str, Any]]:
    """One document per candidate: what the run store keeps of computed comparisons."""
    return [comparison_document(c) for c in comparisons]


def comparison_json(c: Comparison) -> str:
    """The comparison's document as JSON text (NaN written as null)."""
    return json.dumps(_finite(comparison_document(c)), indent=2)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def _wire(value: Any) -> Any:
    """``value`` as ``to_wire`` writes it (imported here: the report layer reads, never builds)."""
    from evalband.analysis._models import to_wire

    return to_wire(value)
