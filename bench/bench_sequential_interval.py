"""Audit: ``compare --sequential``'s printed interval, verdict and log E agree, and it covers.

An error-rate claim (issue 31: a "regressed" slice printed an upper bound of ``-0.0``, cut at 0
by hand, while the confidence sequence still held 0 in 53-96% of such verdicts). For the
default designs of 1 slice x 150 pairs, 3 x 150 and 10 x 50 (``comparison_design``: a 10-point
drop, family-wise alpha 0.05) and six true pair distributions -- no difference at discordance
0.3 and 0.6, one-directional discordance (only candidate-only pairs, +4 points; only
baseline-only pairs, -6 points), a real regression 70% -> 55% and a real improvement 55% ->
70% on pairs with correlation 0.5 -- each slice's pairs go through the runs' own decision
(``decide_path``) and, at its stop, through what ``compare --sequential`` prints: the interval
of ``_SequentialSlice.interval_at`` at the slice's level ``1 - alpha / m`` (rendered by
``report._format.points``) and the log E / boundary columns (``report._table._log_parts``).

Checked per stop: "regressed" exactly when the printed upper bound is below 0 (``<0`` or a
negative number), "improved" exactly when the printed lower bound is above 0, and each exactly
when the printed log E reaches the printed boundary. Per design and distribution: the coverage
of the true difference at the stop, with its 99.9% Clopper-Pearson interval, whose upper limit
must reach the level. Reported beside them: among "regressed" stops, the share whose betting
sequence at the slice's level still held 0 (where the old cut printed ``-0.0``), and the share
whose printed upper bound is the test's open 0 (``<0``).
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import numpy as np

ALPHA = 0.05
SHAPES = ((1, 150), (3, 150), (10, 50))


def _interval(count: int, reps: int, level: float = 0.999) -> list[float]:
    from scipy.stats import beta

    tail = (1.0 - level) / 2.0
    low = 0.0 if count == 0 else float(beta.ppf(tail, count, reps - count + 1))
    high = 1.0 if count == reps else float(beta.ppf(1.0 - tail, count + 1, reps - count))
    return [low, high]


def _scenarios() -> list[tuple[str, tuple[float, float, float, float]]]:
    """(label, (both, baseline only, candidate only, neither)) probabilities of a pair."""
    from evalband.analysis._calibrate import _joint

    def joint(p_b: float, p_c: float, phi: float) -> tuple[float, float, float, float]:
        both, b_only, c_only, neither = (float(x) for x in _joint(p_b, p_c, phi))
        return both, b_only, c_only, neither

    return [
        ("no difference, discordance 0.3", (0.5, 0.15, 0.15, 0.2)),
        ("no difference, discordance 0.6", (0.2, 0.3, 0.3, 0.2)),
        ("one-directional: candidate-only pairs, +4 points", (0.6, 0.0, 0.04, 0.36)),
        ("one-directional: baseline-only pairs, -6 points", (0.6, 0.06, 0.0, 0.34)),
        ("regression 70% -> 55%, phi 0.5", joint(0.7, 0.55, 0.5)),
        ("improvement 55% -> 70%, phi 0.5", joint(0.55, 0.7, 0.5)),
    ]


def _printed(band: Any) -> tuple[str, str]:
    from evalband.report import _format as fmt

    text = fmt.points(band)
    low, high = text[text.index("[") + 1:-1].split(", ")
    return low, high


def _below(text: str) -> bool:
    return text == "<0" or (text != ">0" and float(text) < 0)


def _above(text: str) -> bool:
    return text == ">0" or (text != "<0" and float(text) > 0)


def design_check(slices: int, pairs: int, label: str, probs: tuple[float, float, float, float],
                 reps: int, seed: int) -> dict[str, Any]:
    """One design under one pair distribution: agreement at every stop, coverage at the stop."""
    from evalband.analysis._sequential import _SequentialSlice
    from evalband.analysis._sequential_plan import comparison_design, decide_path
    from evalband.report._table import _log_parts
    from evalband.stats import confidence_sequence, sequential_paired_test

    design = comparison_design({f"s{i}": pairs for i in range(slices)}, alpha=ALPHA)
    sd = design.slices["s0"]
    level = 1.0 - 2.0 * design.alpha_side
    delta = probs[2] - probs[1]
    rng = np.random.default_rng(seed)
    paths = rng.choice(4, p=np.asarray(probs) / sum(probs), size=(reps, sd.max_pairs))
    cache: dict[tuple[str, tuple[int, ...]], tuple[bool, bool, bool, bool]] = {}
    covered = disagree = regressed = held_zero = open_zero = 0
    decisions: dict[str, int] = {}
    row = SimpleNamespace(reasons=[], margin=None)
    for path in paths.astype(np.int8):
        decision, counts = decide_path(path, sd)
        decisions[decision] = decisions.get(decision, 0) + 1
        key = (decision, tuple(counts.values()))
        if key not in cache:
            test = sequential_paired_test(
                counts["baseline_only"], counts["candidate_only"], alpha_side=design.alpha_side,
                theta=sd.theta, horizon=sd.max_discordant, futility=sd.futility)
            test = replace(test, threshold=sd.threshold, decision=decision)
            band = _SequentialSlice(row, test, counts).interval_at(level)  # type: ignore[arg-type]
            low, high = _printed(band)
            reg, imp, boundary = _log_parts(SimpleNamespace(test=test))  # type: ignore[arg-type]
            agree = (_below(high) == (decision == "regressed")
                     and _above(low) == (decision == "improved")
                     and (float(reg) >= float(boundary)) == (decision == "regressed")
                     and (float(imp) >= float(boundary)) == (decision == "improved"))
            inside = band.low <= delta <= band.high
            held = (decision == "regressed" and confidence_sequence(
                counts["both"], counts["baseline_only"], counts["candidate_only"],
                counts["neither"], level=level).high >= 0)
            cache[key] = (agree, inside, held, high == "<0")
        agree, inside, held, open_bound = cache[key]
        disagree += not agree
        covered += inside
        if decision == "regressed":
            regressed += 1
            held_zero += held
            open_zero += open_bound
    ci = _interval(covered, reps)
    return {"slices": slices, "pairs": pairs, "scenario": label, "delta": delta,
            "reps": reps, "level": level, "decisions": decisions,
            "disagreements": disagree, "coverage": covered / reps, "coverage_ci999": ci,
            "regressed": regressed,
            "regressed_sequence_held_zero": held_zero / regressed if regressed else None,
            "regressed_open_bound": open_zero / regressed if regressed else None,
            "passed": bool(disagree == 0 and ci[1] >= level)}


def run(quick: bool = False) -> dict[str, Any]:
    t0 = time.perf_counter()
    load = os.getloadavg()[0]
    reps = 1000 if quick else 4000
    checks = [design_check(m, n, label, probs, reps, seed=31 + 7 * i + 101 * j)
              for i, (m, n) in enumerate(SHAPES)
              for j, (label, probs) in enumerate(_scenarios())]
    return {
        "name": "sequential_interval",
        "kind": "audit",
        "reps": reps,
        "load_average_1min": load,
        "checks": checks,
        "stops": sum(c["reps"] for c in checks),
        "disagreements": sum(c["disagreements"] for c in checks),
        "min_coverage": min(c["coverage"] for c in checks),
        "seconds": time.perf_counter() - t0,
        "ratio": None,
        "target_ratio": 0.0,
        "passed": all(c["passed"] for c in checks),
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick=True), indent=2))
