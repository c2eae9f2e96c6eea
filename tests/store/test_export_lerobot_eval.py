"""A run exported as lerobot-eval's ``eval_info.json`` and read back by the lerobot importer.

The layout is the one ``src/lerobot/scripts/lerobot_eval.py`` (``eval_policy_all``) writes:
``per_task`` (``task_group``, ``task_id``, ``metrics`` of per-episode lists), ``per_group`` and
``overall`` (``avg_sum_reward``, ``avg_max_reward``, ``pc_success``, ``n_episodes``, ...).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from evalband import run_panel
from evalband.cli import main
from evalband.errors import InvalidInputError
from evalband.store import RunStore, import_results
from evalband.store._export_lerobot_eval import eval_info, export_eval_info
from testkit import coin_panel


def lerobot_doc(seed: int) -> dict[str, object]:
    """An eval_info.json as lerobot writes it: two LIBERO-like suites, two tasks each."""
    rng = np.random.default_rng(seed)
    per_task = []
    for group in ("libero_goal", "libero_spatial"):
        for task in (0, 1):  # lerobot's task_id: the task's index in its suite
            n = 7
            sums = [float(x) for x in np.round(rng.normal(3, 1, n), 3)]
            per_task.append({"task_group": group, "task_id": task, "metrics": {
                "sum_rewards": sums, "max_rewards": [float(x > 3) for x in sums],
                "successes": [bool(x > 3) for x in sums], "video_paths": []}})

    def agg(tasks: list[dict[str, object]]) -> dict[str, object]:
        ms = [t["metrics"] for t in tasks]  # type: ignore[index]
        sums = [v for m in ms for v in m["sum_rewards"]]  # type: ignore[index]
        maxes = [v for m in ms for v in m["max_rewards"]]  # type: ignore[index]
        succ = [v for m in ms for v in m["successes"]]  # type: ignore[index]
        return {"avg_sum_reward": float(np.nanmean(sums)),
                "avg_max_reward": float(np.nanmean(maxes)),
                "pc_success": float(np.nanmean(np.array(succ, dtype=float)) * 100),
                "n_episodes": len(sums), "video_paths": []}

    return {"per_task": per_task,
            "per_group": {g: agg([t for t in per_task if t["task_group"] == g])
                          for g in ("libero_goal", "libero_spatial")},
            "overall": {**agg(per_task), "eval_s": 12.5, "eval_ep_s": 12.5 / 28}}


def test_a_lerobot_file_round_trips(tmp_path: Path) -> None:
    source = tmp_path / "in" / "eval_info.json"
    source.parent.mkdir()
    doc = lerobot_doc(1)
    source.write_text(json.dumps(doc, indent=2))
    with RunStore(tmp_path / "s.sqlite") as st:
        import_results(st, source, run_id="lr")
        out = export_eval_info(st, "lr", tmp_path / "out")
        again = json.loads(out.read_text())
        assert again["per_task"] == doc["per_task"]  # every episode, every list, identical
        for group, values in doc["per_group"].items():  # type: ignore[attr-defined]
            for key, value in values.items():
                assert again["per_group"][group][key] == pytest.approx(value)
        for key in ("avg_sum_reward", "avg_max_reward", "pc_success", "n_episodes"):
            assert again["overall"][key] == pytest.approx(doc["overall"][key])  # type: ignore[index]
        import_results(st, out, run_id="lr2")  # and the importer reads the export back
        assert [t["task_id"] for t in again["per_task"]] == [0, 1, 0, 1]
        first = {(r.slices["task_group"], r.slices["task"], r.episode):
                 (r.outcome, r.metrics) for r in st.episode_records("lr")}
        second = {(r.slices["task_group"], r.slices["task"], r.episode):
                  (r.outcome, r.metrics) for r in st.episode_records("lr2")}
        assert first == second and len(first) == 28


def test_an_evalband_run_round_trips_through_the_cli(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "s.sqlite"
    with RunStore(store) as st:
        run_panel(coin_panel(), "random", st, run_id="coin")
        original = st.episode_records("coin")
    assert main(["export", "coin", "-o", str(tmp_path / "e"), "--format", "lerobot",
                 "--store", str(store), "--json"]) == 0
    written = Path(json.loads(capsys.readouterr().out)["eval_info"])
    doc = json.loads(written.read_text())
    assert [t["task_id"] for t in doc["per_task"]] == ["p=0.2", "p=0.8"]
    assert main(["import", str(written), "--run-id", "back", "--store", str(store)]) == 0
    with RunStore(store) as st:
        back = st.episode_records("back")
    by_task = {}
    for r in sorted(original, key=lambda r: (r.cell, r.episode, r.repeat)):
        by_task.setdefault(r.cell, []).append(r)
    got = {}
    for r in back:
        got.setdefault(r.slices["task"], {})[r.episode] = r
    assert sorted(got) == sorted(by_task)
    for cell, rows in by_task.items():
        for i, r in enumerate(rows):
            b = got[cell][i]
            assert b.success == r.success
            assert b.metrics["sum_reward"] == r.metrics["return"]
            assert b.metrics["max_reward"] == r.metrics["reward_max"]
    assert doc["overall"]["pc_success"] == pytest.approx(
        100 * sum(r.success for r in original) / len(original))


def test_error_episodes_and_an_existing_file_are_refused(tmp_path: Path) -> None:
    from evalband.episode import EpisodeRecord

    bad = EpisodeRecord("r", "p", "f", "", 0, 0, 1, "error", False, False, 0, error="boom")
    with pytest.raises(InvalidInputError, match="1 error episode"):
        eval_info([bad], "env")
    with RunStore(tmp_path / "s.sqlite") as st:
        run_panel(coin_panel(episodes=2), "random", st, run_id="c")
        export_eval_info(st, "c", tmp_path)
        with pytest.raises(InvalidInputError, match="exists"):
            export_eval_info(st, "c", tmp_path)
        assert not math.isnan(json.loads((tmp_path / "eval_info.json").read_text())
                              ["overall"]["pc_success"])


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, OSError])
def test_an_interrupted_write_leaves_no_partial_file(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     interrupt: type[BaseException]) -> None:
    """Ctrl-C (or a full disk) while eval_info.json is written: no temporary file is left."""
    out = tmp_path / "out"
    with RunStore(tmp_path / "s.sqlite") as st:
        run_panel(coin_panel(episodes=2), "random", st, run_id="c")
        real = Path.write_text

        def cut(self: Path, text: str, *args: object, **kwargs: object) -> int:
            real(self, text[: len(text) // 2], encoding="utf-8")  # half of it, then stopped
            raise interrupt

        monkeypatch.setattr(Path, "write_text", cut)
        with pytest.raises(interrupt):
            export_eval_info(st, "c", out)
        monkeypatch.undo()
        assert [p.name for p in out.iterdir()] == []
        assert export_eval_info(st, "c", out).name == "eval_info.json"  # and again, whole
        assert [p.name for p in out.iterdir()] == ["eval_info.json"]
