"""The PushT harness end to end at its --quick size: four movements, runs in the store, compare."""

from __future__ import annotations

import json
from pathlib import Path

from evalband.cli import main
from evalband.stats import diff_paired, interval


def test_quick_harness_prints_four_movements_and_compares(capsys, tmp_path: Path) -> None:
    db = str(tmp_path / "s.sqlite")
    args = ["harness", "pusht", "--quick", "--workers", "1", "--store", db,
            "--out", str(tmp_path / "ckpt")]
    assert main([*args, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result) >= {"swing", "two_roads", "single_vs_pooled", "held_out", "runs", "traces"}
    traces = json.loads(Path(result["traces"]).read_text())
    assert len(traces) == 12 and {"pusher_x", "tee_yaw"} <= set(traces[0])
    swing = result["swing"]
    assert len(swing["suites"]) == 2 and swing["min"] <= swing["max"]
    pooled = swing["pooled"]
    oracle = interval(pooled["k"], pooled["n"])
    assert (pooled["low"], pooled["high"]) == (oracle.low, oracle.high)
    block = result["single_vs_pooled"]["pooled"]
    p = block["pairs"]
    assert p["n"] == 10  # 2 suites x 5 episodes on train starts, paired by episode
    assert block["difference"]["low"] == diff_paired(p["both"], p["a_only"], p["b_only"],
                                                     p["neither"]).low
    # Checkpoints are reused on a second run; the runs resume (nothing replayed).
    assert main(args) == 0
    shown = capsys.readouterr().out
    for heading in ("[1] The swing", "[2] Two roads", "[3] Single numbers lie", "[4] Held-out"):
        assert heading in shown
    runs = result["runs"]
    code = main(["compare", runs["weak"], runs["strong"], "--store", db, "--json"])
    comparison = json.loads(capsys.readouterr().out)
    assert code in (0, 3, 4, 5) and {s["name"] for s in comparison["slices"]} >= {
        "start=train", "start=held_out"}
    # The manifest records each checkpoint's content hash.
    code = main(["show", runs["strong"], "--store", db, "--json"])
    manifest = json.loads(capsys.readouterr().out)["manifest"]
    assert len(manifest["policy_hash"]) == 64


def test_too_few_shrinks_suites_to_five(capsys, tmp_path: Path) -> None:
    from evalband.labs.pusht_harness import HarnessConfig, harness_panel

    panel = harness_panel(HarnessConfig(too_few=True))
    assert panel.episodes == 5 and len(panel.cells()) == 20
