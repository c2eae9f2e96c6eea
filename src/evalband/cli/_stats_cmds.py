"""The work of ``evalband ci``, ``diff`` and ``power``, without typer.

:mod:`evalband.cli._stats` declares their options for typer and calls these.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalband.cli._out import console, emit_json, fail, pct, refuse_ignored
from evalband.errors import InvalidCountsError, InvalidParameterError

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from evalband.stats import Difference

__all__ = ["run_ci", "run_diff", "run_power"]


def run_ci(k: float, n: float, method: str, confidence: float, allow_empty: bool,
           as_json: bool) -> None:
    """Confidence interval for a success rate K/N."""
    from evalband.stats import interval

    result = interval(k, n, method=method, confidence=confidence, allow_empty=allow_empty)
    if as_json:
        emit_json(result.as_dict())
        return
    console.print(
        f"{result.k}/{result.n} = {pct(result.estimate, 2)}   "
        f"{100 * result.confidence:g}% {result.method}: "
        f"[{pct(result.low, 2)}, {pct(result.high, 2)}]"
    )
    if result.method == "wald" and result.k in (0, result.n):
        console.print("note: Wald collapses at 0/n and n/n; use Wilson.")


def run_diff(counts: list[str], paired: bool, method: str, confidence: float,
             as_json: bool) -> None:
    """Interval for the difference of two success rates (A - B), with its verdict."""
    from evalband._util.validate import as_count
    from evalband.stats import diff_paired, diff_unpaired, fisher_exact_test, mcnemar

    if paired:
        if len(counts) != 4:
            fail(f"--paired expects 4 counts BOTH A_ONLY B_ONLY NEITHER, got {len(counts)}")
        try:
            values = [float(c) for c in counts]
        except ValueError:
            fail(f"--paired expects 4 whole numbers, got {' '.join(counts)}")
        both, a_only, b_only, neither = (
            as_count(v, name) for v, name in zip(values, ("BOTH", "A_ONLY", "B_ONLY", "NEITHER"),
                                                  strict=True)
        )
        result = diff_paired(both, a_only, b_only, neither, method=method, confidence=confidence)
        test = mcnemar(a_only, b_only, method="exact")
        n = both + a_only + b_only + neither
        header = (
            f"paired, n = {n}: A {pct((both + a_only) / n)} vs B {pct((both + b_only) / n)}; "
            f"both {both}, only A {a_only}, only B {b_only}, neither {neither}"
        )
    else:
        if len(counts) != 2:
            fail(f"expected two rates K_A/N_A K_B/N_B, got {len(counts)} argument(s)")
        k_a, n_a = _parse_fraction(counts[0], "A")
        k_b, n_b = _parse_fraction(counts[1], "B")
        if method != "newcombe":
            fail(f"unpaired --method must be newcombe, got {method!r}")
        result = diff_unpaired(k_a, n_a, k_b, n_b, confidence=confidence)
        test = fisher_exact_test(k_a, n_a, k_b, n_b)
        header = f"unpaired: A {k_a}/{n_a} = {pct(k_a / n_a)} vs B {k_b}/{n_b} = {pct(k_b / n_b)}"
    if as_json:
        emit_json({"difference": result.as_dict(), "test": test.as_dict()})
        return
    console.print(header)
    console.print(
        f"A - B = {100 * result.estimate:+.1f} points, {100 * result.confidence:g}% "
        f"{result.method}: [{100 * result.low:+.1f}, {100 * result.high:+.1f}]"
    )
    console.print(f"{test.method}: p = {test.p_value:.4g}")
    console.print(f"verdict: {_diff_sentence(result)}")


def _diff_sentence(result: Difference) -> str:
    """The interval read alone, in ``diff``'s A/B words (the one verdict vocabulary first)."""
    from evalband.stats._types import SliceVerdict

    if result.verdict is SliceVerdict.IMPROVED:
        return f"{result.verdict.value}: A is better (the interval excludes 0)"
    if result.verdict is SliceVerdict.REGRESSED:
        return f"{result.verdict.value}: B is better (the interval excludes 0)"
    return (f"{result.verdict.value}: the interval contains 0, "
            "so the ranking is not established at this n")


def run_power(p_a: float, p_b: float, power: float, alpha: float, paired: bool,
              discordant: float | None, n: int | None, direction: str | None, comparisons: int,
              test: str, sequential: bool, as_json: bool) -> None:
    """Episodes per arm needed to resolve p_a vs p_b (and power at a given n).

    At alpha / --comparisons; --test exact for the exact test compare prints.
    """
    from evalband.stats import minimum_detectable_difference, sample_size
    from evalband.stats import power as power_fn

    refuse_ignored(["--direction"] if direction is not None and n is None else [], "--n N",
                   "the side of the smallest resolvable gap at n")
    if paired and discordant is None:
        fail("--paired needs --discordant (expected share of discordant pairs, e.g. 0.3)")
    if test not in ("exact", "normal"):
        fail(f"--test must be exact or normal; got {test!r}")
    if comparisons < 1 or comparisons > 100_000:
        fail(f"--comparisons must be between 1 and 100000; got {comparisons}")
    from evalband._util.validate import check_probability

    check_probability(alpha, "alpha", open_interval=True)  # as given, before the division
    level = alpha / comparisons
    normal: int = sample_size(p_a, p_b, power=power, alpha=level, paired=paired,
                              discordant=discordant)
    needed: int | None = normal
    if test == "exact":
        with _busy("exact test: searching the episodes needed", as_json):
            needed = _exact_needed(p_a, p_b, power, level, paired, discordant)
    data: dict[str, object] = {
        "p_a": p_a, "p_b": p_b, "power": power, "alpha": alpha, "paired": paired,
        "discordant": discordant, "n_per_arm": needed, "comparisons": comparisons,
        "alpha_per_comparison": level, "test": _test_name(test, paired),
        "n_per_arm_normal_approximation": normal,
    }
    if n is not None:
        data["n"] = n
        if test == "exact":
            from evalband.stats._procedure import exact_power

            with _busy(f"exact test: power at n = {n}", as_json):
                data["power_at_n"] = exact_power(n, max(p_a, p_b), abs(p_a - p_b), level,
                                                 paired=paired, discordant=discordant or 0.0)
        else:
            data["power_at_n"] = power_fn(p_a, p_b, n, alpha=level, paired=paired,
                                          discordant=discordant)
        way = _mdd_direction(direction or "auto", p_a, p_b)
        data["direction"] = way
        try:
            data["minimum_detectable_difference"] = minimum_detectable_difference(
                n, p_b, power=power, alpha=level, paired=paired, discordant=discordant,
                direction=way,
            )
        except InvalidParameterError as exc:
            if "no gap" not in str(exc):
                raise
            # an answer, not bad input: no gap on that side is resolvable at this n
            data["minimum_detectable_difference"] = None
            data["mdd_note"] = str(exc).split("; choose", 1)[0]
    if sequential:
        from evalband.stats import sequential_design

        if not paired or discordant is None or p_a >= p_b:
            fail("--sequential needs --paired, --discordant and a drop (p_a below p_b, the "
                 "baseline)")
        with _busy("sequential design: simulating its stopping times", as_json):
            design = sequential_design(p_b, p_b - p_a, discordant=float(discordant or 0.0),
                                       alpha=alpha, power=power)
        data["sequential"] = design.as_dict()
    if as_json:
        emit_json(data)
        return
    unit = "matched pairs" if paired else "episodes per policy"
    family = f" / {comparisons} comparisons" if comparisons > 1 else ""
    count = f"{needed} {unit}" if needed is not None else f"more than 20,000 {unit}"
    console.print(
        f"{pct(p_a)} vs {pct(p_b)} at {power:.0%} power, alpha {alpha:g}{family}, "
        f"{data['test']}: {count}"
        + (f" (normal approximation: {normal})" if test == "exact" else "")
    )
    if test == "normal":
        console.print("note: compare decides with exact tests; --test exact gives their figure")
    if n is not None:
        mdd = data["minimum_detectable_difference"]
        side = {"up": "above", "down": "below", "either": "around"}[str(data["direction"])]
        gap = (f"{100 * float(mdd):.1f} points" if isinstance(mdd, float)
               else f"none ({data['mdd_note']})")
        console.print(
            f"at n = {n}: power {float(data['power_at_n']):.1%}; smallest resolvable gap "  # type: ignore[arg-type]
            f"{side} {pct(p_b)}: {gap}"
        )
    if sequential:
        console.print(
            f"sequential (anytime-valid, max {design.max_pairs} pairs or "
            f"{design.max_discordant} discordant, theta {design.theta:.3f}, futility "
            f"1/{design.futility:g}), exact under the declared discordance "
            f"{design.discordant:g}: power {design.power:.0%}, expected "
            f"{design.expected_pairs:.0f} pairs to a decision "
            f"(90th percentile {design.p90_pairs:.0f}); under no difference "
            f"{design.null_expected_pairs:.0f} (90th percentile {design.null_p90_pairs:.0f}); "
            f"fixed-n exact McNemar: {design.n_fixed} pairs ({design.savings:.0%} saved)"
        )


def _busy(label: str, as_json: bool) -> AbstractContextManager[None]:
    """A spinner on stderr for a long search (a terminal only, never with ``--json``)."""
    from evalband.cli._progress import busy  # loaded only when a long search runs

    return busy(label, enabled=not as_json)


def _parse_fraction(text: str, name: str) -> tuple[int, int]:
    """Parse ``K/N`` into two counts (validated later by the stats functions)."""
    from evalband._util.validate import as_count

    k_text, sep, n_text = text.partition("/")
    if not sep:
        raise InvalidCountsError(f"{name} must look like K/N (e.g. 9/64), got {text!r}")
    try:
        k, n = float(k_text), float(n_text)
    except ValueError:
        raise InvalidCountsError(f"{name} must look like K/N with numbers, got {text!r}") from None
    return as_count(k, f"{name} successes"), as_count(n, f"{name} trials")


def _test_name(test: str, paired: bool) -> str:
    if test == "normal":
        return "McNemar z test (normal approximation)" if paired else "two-proportion z test"
    return "exact McNemar" if paired else "Fisher exact (central)"


def _exact_needed(p_a: float, p_b: float, power: float, level: float, paired: bool,
                  discordant: float | None) -> int | None:
    """Episodes per arm for the exact test compare prints (None beyond 20,000)."""
    from evalband.stats._procedure import episodes_for_drop

    high, gap = max(p_a, p_b), abs(p_a - p_b)
    if gap == 0:
        fail("--p-a and --p-b are equal: no sample size detects a difference of 0")
    return episodes_for_drop(high, gap, level, paired=paired, discordant=discordant or 0.0,
                             power=power)


def _mdd_direction(direction: str, p_a: float, p_b: float) -> str:
    """The MDD's direction: as given, or (auto) the side of ``p_b`` that ``p_a`` is on.

    >>> _mdd_direction("auto", 0.9, 0.8), _mdd_direction("auto", 0.5, 0.5)
    ('up', 'either')
    """
    choices = ("auto", "up", "down", "either")
    if direction not in choices:
        raise InvalidParameterError(
            f"--direction must be one of {', '.join(choices)}; got {direction!r}"
        )
    if direction != "auto":
        return direction
    return "up" if p_a > p_b else "down" if p_a < p_b else "either"
