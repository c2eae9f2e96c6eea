"""``export RUN --format rerun``: the step data as a Rerun recording, read back by rerun-sdk."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from rerun.chunk import RrdReader

from evalband.cli import main
from evalband.errors import InvalidInputError
from evalband.panel import load_panel
from evalband.run import run_panel
from evalband.store import RunStore, open_store, read_steps
from evalband.store._export_rerun import episode_entity, export_rerun


def _read_back(path: Path) -> dict[str, dict[int, list[float]]]:
    """Entity path -> step -> value(s), as rerun-sdk's own reader gives them."""
    series: dict[str, dict[int, list[float]]] = defaultdict(dict)
    for chunk in RrdReader(path).store().stream():
        if chunk.is_static:
            continue
        batch = chunk.to_record_batch()
        for step, value in zip(batch.column("step").to_pylist(),
                               batch.column("Scalars:scalars").to_pylist(), strict=True):
            series[chunk.entity_path][step] = value
    return series


def test_the_recording_has_every_step_of_every_episode(store: RunStore, tmp_path: Path) -> None:
    panel = load_panel({"name": "reacher-rrd", "env": "Reacher-v5", "episodes": 2, "seed": 1,
                        "budget": {"steps": 9}, "metrics": ["reward_dist"],
                        "success": {"rule": "return", "threshold": -1.0}})
    run_panel(panel, "random", store, run_id="r", record_steps="obs")
    written = export_rerun(store, "r", tmp_path / "r.rrd")
    records = store.episode_records("r")
    assert written.episodes == len(records) == 2 and written.skipped == 0
    back = _read_back(written.path)
    for record in records:
        data = read_steps(store.path, record)
        assert data is not None
        entity = episode_entity(record)
        reward = back[f"{entity}/reward"]
        assert sorted(reward) == list(range(record.steps))  # the same number of steps
        np.testing.assert_allclose([reward[t][0] for t in range(record.steps)], data.reward)
        action = back[f"{entity}/action"]
        np.testing.assert_allclose([action[t] for t in range(record.steps)], data.action,
                                   rtol=1e-6)
        info = back[f"{entity}/info/reward_dist"]
        assert len(info) == record.steps
        obs = back[f"{entity}/obs"]  # the observations, recorded with record_steps="obs"
        np.testing.assert_allclose([obs[t] for t in range(record.steps)], data.obs["obs"])
    assert written.steps == sum(r.steps for r in records)


def test_cli_exports_and_refuses_a_run_without_step_data(tmp_path: Path, capsys) -> None:
    store = str(tmp_path / "s.sqlite")
    panel = load_panel("reach1d").with_overrides(episodes=2)
    with open_store(store) as st:
        run_panel(panel, "reach1d:damped", st, run_id="with", record_steps=True)
        run_panel(panel, "reach1d:damped", st, run_id="without")
        records = st.episode_records("with")
    out = tmp_path / "with.rrd"
    assert main(["export", "with", "--format", "rerun", "-o", str(out), "--store", store,
                 "--json"]) == 0
    assert f'"episodes": {len(records)}' in capsys.readouterr().out
    back = _read_back(out)
    for record in records:
        assert len(back[f"{episode_entity(record)}/reward"]) == record.steps
    code = main(["export", "without", "--format", "rerun", "-o", str(tmp_path / "no.rrd"),
                 "--store", store])
    err = capsys.readouterr().err
    assert code == 2 and "--record-steps" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "no.rrd").exists()
    with open_store(store) as st, pytest.raises(InvalidInputError, match="exists"):
        export_rerun(st, "with", out)


def test_cells_of_a_factor_panel_are_entities_of_their_own(
        store: RunStore, tmp_path: Path) -> None:
    panel = load_panel({"name": "pt-rrd", "env": "evalband/PushT-v0", "episodes": 1, "seed": 5,
                        "budget": {"steps": 5}, "factors": {"start": ["train", "held_out"]}})
    run_panel(panel, "pusht:expert", store, run_id="pt", record_steps=True)
    back = _read_back(export_rerun(store, "pt", tmp_path / "pt.rrd").path)
    records = store.episode_records("pt")
    assert {r.cell for r in records} == {"start=train", "start=held_out"}
    for record in records:
        assert len(back[f"{episode_entity(record)}/reward"]) == record.steps == 5


@pytest.mark.parametrize("cell", ["start=held out", "a,b=c/d", "x=ü", "plain"])
def test_entity_paths_are_escaped_as_rerun_escapes_them(cell: str) -> None:
    import rerun as rr

    from evalband.episode import EpisodeRecord

    record = EpisodeRecord("r", "p", "f", cell, 2, 0, 7, "success", True, False, 5)
    assert episode_entity(record) == f"/{rr.escape_entity_path_part(cell)}/episode_2_0"


def test_an_interrupted_export_leaves_no_partial_file(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the episodes are written: neither the recording nor its .part is left."""
    import evalband.store._export_rerun as export_module

    with open_store(tmp_path / "s.sqlite") as st:
        run_panel(load_panel("reach1d").with_overrides(episodes=4), "reach1d:damped", st,
                  run_id="d", record_steps=True)
        calls = []

        def interrupted(record):  # type: ignore[no-untyped-def]
            calls.append(record)
            if len(calls) == 2:
                raise KeyboardInterrupt
            return real(record)

        real = export_module.episode_entity
        monkeypatch.setattr(export_module, "episode_entity", interrupted)
        with pytest.raises(KeyboardInterrupt):
            export_rerun(st, "d", tmp_path / "d.rrd")
        assert sorted(p.name for p in tmp_path.iterdir() if ".rrd" in p.name) == []
        monkeypatch.undo()
        assert export_rerun(st, "d", tmp_path / "d.rrd").episodes == 4  # and again, whole
