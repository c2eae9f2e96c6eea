from __future__ import annotations

import json

import pytest

from evalband.cli import main


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_ci_wilson_zero_of_ten(capsys) -> None:
    code, out, _ = run_cli(capsys, "ci", "0", "10", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["low"] == 0.0 and abs(data["high"] - 0.2775) < 1e-4
    code, out, _ = run_cli(capsys, "ci", "9", "64")
    assert code == 0 and "7.58%" in out and "24.62%" in out


@pytest.mark.parametrize(
    "args",
    [
        ["ci", "3.5", "10"],
        ["ci", "-1", "10"],
        ["ci", "11", "10"],
        ["ci", "nan", "10"],
        ["ci", "3", "10", "--confidence", "1.5"],
        ["ci", "3", "10", "--method", "magic"],
        ["ci", "0", "0"],
        ["ci", "three", "10"],
        ["diff", "9/64"],
        ["diff", "9/64", "65/64"],
        ["diff", "9:64", "50/64"],
        ["diff", "--paired", "8", "1", "42"],
        ["diff", "--paired", "8", "1", "-42", "13"],
        ["power", "--p-a", "0.5", "--p-b", "0.5"],
        ["power", "--p-a", "1.5", "--p-b", "0.5"],
        ["power", "--p-a", "0.5", "--p-b", "0.4", "--paired"],
        ["coverage", "--method", "wald", "--n", "0"],
        ["coverage", "--method", "nope", "--n", "20"],
    ],
)
def test_bad_input_is_one_line_exit_2(capsys, args: list[str]) -> None:
    code, out, err = run_cli(capsys, *args)
    assert code == 2, (out, err)
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err


def test_diff_unpaired_and_paired_verdicts(capsys) -> None:
    code, out, _ = run_cli(capsys, "diff", "8/20", "5/20")
    assert code == 0 and "contains 0" in out and "not established" in out
    code, out, _ = run_cli(capsys, "diff", "--paired", "8", "1", "42", "13", "--json")
    data = json.loads(out)
    assert data["difference"]["paired"] is True
    assert data["difference"]["high"] < 0  # B (damped) better, interval excludes 0
    assert data["test"]["p_value"] < 1e-9


def test_power_price_list_point(capsys) -> None:
    code, out, _ = run_cli(capsys, "power", "--p-a", "0.6", "--p-b", "0.4", "--json")
    assert code == 0
    assert 90 <= json.loads(out)["n_per_arm"] <= 110  # seed 004: "~100 trials per model"


def test_coverage_shows_wald_collapse(capsys) -> None:
    code, out, _ = run_cli(capsys, "coverage", "--method", "wald", "--n", "20", "--json")
    wald = {round(p["p"], 2): p["coverage"] for p in json.loads(out)["points"]}
    code, out, _ = run_cli(capsys, "coverage", "--method", "wilson", "--n", "20", "--json")
    wilson = {round(p["p"], 2): p["coverage"] for p in json.loads(out)["points"]}
    assert wald[0.05] < 0.75 and wilson[0.05] > 0.9
    code, out, _ = run_cli(capsys, "coverage", "--method", "wald", "--n", "20")
    assert "wald" in out and "under-covers" in out


def _enumerated_power_paired(n: int, p10: float, p01: float, alpha: float) -> float:
    """Power of the exact McNemar test by brute force over every (b, c, rest) outcome."""
    from scipy.stats import binomtest, multinomial

    total = 0.0
    for b in range(n + 1):
        for c in range(n + 1 - b):
            if b + c and binomtest(b, b + c, 0.5).pvalue <= alpha * (1 + 1e-12):
                total += multinomial.pmf([b, c, n - b - c], n, [p10, p01, 1 - p10 - p01])
    return total


def _enumerated_power_unpaired(n: int, p_a: float, p_b: float, alpha: float) -> float:
    """Power of the central (doubled smaller tail) Fisher test by brute force."""
    from scipy.stats import binom, hypergeom

    total = 0.0
    for ka in range(n + 1):
        for kb in range(n + 1):
            t = ka + kb
            p = 2 * min(hypergeom.cdf(ka, 2 * n, t, n), hypergeom.sf(ka - 1, 2 * n, t, n))
            if p <= alpha * (1 + 1e-12):
                total += binom.pmf(ka, n, p_a) * binom.pmf(kb, n, p_b)
    return total


def test_power_exact_figures_agree_with_enumeration_of_the_printed_test(capsys) -> None:
    # paired, three comparisons: the exact McNemar test at alpha / 3
    code, out, _ = run_cli(capsys, "power", "--p-a", "0.55", "--p-b", "0.85", "--paired",
                           "--discordant", "0.4", "--comparisons", "3", "--test", "exact",
                           "--json")
    data = json.loads(out)
    n, level = data["n_per_arm"], data["alpha_per_comparison"]
    assert code == 0 and level == pytest.approx(0.05 / 3) and data["test"] == "exact McNemar"
    # discordance 0.4, gap 0.3: p01 = 0.35 (only B), p10 = 0.05 (only A)
    assert _enumerated_power_paired(n, 0.05, 0.35, level) >= 0.8
    assert _enumerated_power_paired(n - 1, 0.05, 0.35, level) < 0.8
    # unpaired: the central Fisher test
    code, out, _ = run_cli(capsys, "power", "--p-a", "0.5", "--p-b", "0.9", "--json", "--n", "20",
                           "--test", "exact")
    data = json.loads(out)
    assert data["test"] == "Fisher exact (central)"
    n = data["n_per_arm"]
    assert _enumerated_power_unpaired(n, 0.5, 0.9, 0.05) >= 0.8
    assert data["power_at_n"] == pytest.approx(_enumerated_power_unpaired(20, 0.5, 0.9, 0.05),
                                               abs=1e-9)


@pytest.mark.parametrize(
    ("args", "flags"),
    [
        (["power", "--p-a", "0.5", "--p-b", "0.5"], ("--p-a", "--p-b")),
        (["coverage", "--method", "wald", "--n", "0"], ("--n",)),
        (["coverage", "--method", "nope", "--n", "20"], ("--method",)),
        (["ci", "3", "10", "--method", "magic"], ("--method",)),
    ],
)
def test_bad_input_names_the_flag_to_change(capsys, args: list[str],
                                            flags: tuple[str, ...]) -> None:
    code, _, err = run_cli(capsys, *args)
    assert code == 2 and err.count("\n") == 1, err
    assert all(flag in err for flag in flags) and "p_a" not in err and "`" not in err, err
