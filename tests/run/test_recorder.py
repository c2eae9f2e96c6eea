from __future__ import annotations

import pytest

from evalband.errors import InvalidInputError, PanelMismatchError, StoreError
from evalband.run import Recorder
from testkit import coin_panel


def test_each_log_is_durable_and_reopening_continues(store, tmp_path) -> None:
    panel = coin_panel(episodes=3)
    with Recorder(store, panel, "arm-v1", run_id="hw") as rec:
        rec.log(cell="p=0.2", episode=0, outcome="success", steps=12, sim_time_s=2.4)
        # Durable before the next line runs: a second connection already sees it.
        from evalband.store import open_store

        with open_store(store.path) as other:
            assert other.count_episodes("hw") == 1
        rec.log(cell="p=0.2", episode=1, outcome="failure", steps=3)
    assert store.get_run("hw").status == "interrupted"  # 2 of 6 planned episodes
    with Recorder(store, panel, "arm-v1", run_id="hw") as rec:
        with pytest.raises(StoreError):
            rec.log(cell="p=0.2", episode=1, outcome="success")
        for cell in ("p=0.2", "p=0.8"):
            for episode in range(3):
                if (cell, episode) in {("p=0.2", 0), ("p=0.2", 1)}:
                    continue
                rec.log(cell=cell, episode=episode, outcome="timeout", steps=5,
                        assisted=episode == 2, interventions=int(episode == 2))
    assert store.get_run("hw").status == "finished"
    records = store.episode_records("hw")
    assert len(records) == 6
    first = records[0]
    assert first.success and first.terminated and not first.truncated
    assert first.time_to_success_s == pytest.approx(2.4)
    assert first.condition_seed == panel.episode_specs()[0].condition_seed
    assert sum(r.assisted for r in records) == 2
    timeouts = [r for r in records if r.outcome.value == "timeout"]
    assert all(r.truncated and not r.terminated for r in timeouts)


def test_bad_logs_are_refused(store) -> None:
    panel = coin_panel(episodes=2)
    with Recorder(store, panel, "arm", run_id="x") as rec:
        with pytest.raises(InvalidInputError, match="cell"):
            rec.log(cell="p=0.5", episode=0, outcome="success")
        with pytest.raises(InvalidInputError, match="outside the panel"):
            rec.log(cell="p=0.2", episode=9, outcome="success")
        with pytest.raises(InvalidInputError, match="outcome"):
            rec.log(cell="p=0.2", episode=0, outcome="won")
    with pytest.raises(PanelMismatchError):
        Recorder(store, coin_panel(episodes=5), "arm", run_id="x")
