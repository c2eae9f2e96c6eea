"""Write ``docs/performance.md`` from ``bench/results.json`` (and the hand-kept history).

Usage: ``python bench/make_performance.py [--check]`` (``bench/run.py`` runs it after writing
the results). The page is the figures of ``bench/results.json`` as a table -- each benchmark's
ratio against its target, whether it was met, when and at what machine load it was measured --
followed by ``bench/performance_history.md``, the dated history of the speed claims kept by
hand. ``--check`` exits 1 when the committed page is not what this script writes (a test
holds the two equal).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results.json"
HISTORY = HERE / "performance_history.md"
PAGE = ROOT / "docs" / "performance.md"

WHAT = {
    "bootstrap_fast_vs_index": "fast binomial bootstrap vs index resampling (n = 200, "
                               "10,000 reps, same interval)",
    "reach_vectorized_vs_loop": "vectorised reach simulator vs the seed's Python loop "
                                "(20,000 paired episodes, identical outcomes)",
    "ray_vs_process": "Ray (local cluster, 2 workers) vs the process backend, 200 PushT "
                      "episodes",
    "process_scaling_pusht": "PushT process backend, 2 workers vs serial (identical records)",
    "batched_vs_single_inference": "batched (50 in lockstep) vs one-at-a-time BC MLP "
                                   "inference on PushT",
    "report_html_100k_episodes": "HTML report of a 100,000-episode run (target over time)",
    "session_scene_level_error_rates": "hardware sessions: error rates and coverage with the "
                                       "scene as the unit (audit)",
    "compare_verdict_error_rates": "compare's verdicts under the null over 38 designs, "
                                   "interval coverage (audit)",
    "sequential": "compare --sequential: printed vs exact power, savings, type-I error under "
                  "monitoring, coverage (audit)",
    "sequential_interval": "compare --sequential: printed interval, verdict and log E agree "
                           "at every stop; the interval's coverage (audit)",
    "stored_results": "a stored comparison read back vs computed again",
    "pusht_runner_overhead": "PushT runner vs a bare env + policy loop (target: <= 3%)",
    "video_record_20pct_pusht": "filming 20% of a PushT panel's episodes vs not filming "
                                "(target: <= 15%)",
    "cli_startup_and_compare_json": "evalband --help, ci and compare --json end to end beside "
                                    "the previous commit (one parser, normal exit)",
    "compare_speed": "compare API and CLI speed beside the previous commit and the machine's "
                     "limit",
    "serve_vs_local_inference": "evalband serve (dynamic batching) feeding 4 PushT workers vs "
                                "local inference",
    "store_scale": "store at 10k / 100k / 1M episodes: import, show, compare, report",
    "envs_runner_overhead": "runner vs a bare gymnasium loop on short third-party episodes "
                            "(target: <= 5%)",
    "runner_overhead_instructions": "the runner's overhead in instructions executed "
                                    "(cachegrind; target: <= 3%)",
    "startup_and_short_runs": "CLI start-up, run's fixed cost, process backend from the "
                              "command line",
    "rank_joint_coverage": "ranking: joint coverage of rank intervals (audit)",
    "agree_spearman_coverage": "agreement with a simulator: Spearman interval coverage (audit)",
    "control_loop_30hz": "a 30 Hz control loop held by the runner",
    "bench_benchmarks": "robosuite panels: check-env, identical records on every backend "
                        "(audit)",
    "bench_lerobot": "lerobot ACT batched vs one-at-a-time, beside lerobot-eval",
    "console_camera_latency": "session console: camera frame-to-pixels latency in Chromium",
    "discrete_multiplicity": "discrete Holm vs Holm over exact tests: power at equal "
                             "family-wise error (audit)",
}
"""What each benchmark measures, in words (the results file names it; its module says more)."""

def _number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "-"
    return f"{value:.3g}"


def _measured(result: dict[str, Any]) -> str:
    """The ratio; an audit (error rates, coverage) has none: its figures are in its entry."""
    if isinstance(result.get("ratio"), (int, float)) and not isinstance(result["ratio"], bool):
        return f"{_number(result['ratio'])}x"
    return "audit: see its entry"


def _load(result: dict[str, Any]) -> str:
    for key in ("load_average_1min", "load_average", "load_avg_before"):
        value = result.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return f"{value:.1f}"
        if isinstance(value, list) and value:
            return f"{float(value[0]):.1f}"
    return "not recorded"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(results: dict[str, Any], history: str) -> str:
    """The page for a parsed ``results.json`` and the history text."""
    machine = results.get("machine", {})
    lines = [
        "# Performance",
        "",
        "<!-- Generated by `python bench/make_performance.py` from bench/results.json and "
        "bench/performance_history.md: edit those, not this page (a test holds it equal). -->",
        "",
        "Every speed and error-rate figure evalband states is measured in `bench/`: `make "
        "bench` (`bench/run.py`, each benchmark in its own interpreter; `--only NAME` for "
        "one) writes `bench/results.json` with medians and ratios of paths measured side by "
        "side in one run, and this page is generated from it. Machines are shared and noisy: "
        "the ratio of two paths measured together is the figure to quote, with the load "
        "beside it. What the statistics figures mean: [statistics.md](statistics.md).",
        "",
        "## The figures in bench/results.json",
        "",
        f"Written {results.get('written_at', 'at an unrecorded time')}"
        f"{' (a --quick run)' if results.get('quick') else ''}; machine: "
        + ", ".join(f"{k} {v}" for k, v in machine.items()) + ". A row measured alone "
        "(`--only`) carries its own time.",
        "",
        "| benchmark | what it measures | measured | target | met | measured at | load (1 min) |",
        "|---|---|---|---|---|---|---|",
    ]
    for result in results.get("results", []):
        name = str(result.get("name", "?"))
        what = WHAT.get(name) or str(result.get("claim") or "-")
        target = result.get("target_ratio")
        target_text = (f">= {_number(target)}x" if isinstance(target, (int, float))
                       and not isinstance(target, bool) and target > 0 else "-")
        met = "met" if result.get("passed") else "**missed**"
        when = str(result.get("measured_at") or "not recorded (an older full run)")
        lines.append("| " + " | ".join(_cell(x) for x in (
            f"`{name}`", what, _measured(result), target_text, met, when, _load(result)))
            + " |")
    return "\n".join(lines) + "\n\n" + history.strip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when docs/performance.md is not what this writes")
    args = parser.parse_args(argv)
    page = render(json.loads(RESULTS.read_text()), HISTORY.read_text())
    if args.check:
        if PAGE.read_text() != page:
            print("docs/performance.md is stale: run python bench/make_performance.py",
                  file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(page)
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
