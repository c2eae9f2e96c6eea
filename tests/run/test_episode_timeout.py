"""``--episode-timeout``: a hung episode becomes an error with its cause and the run goes on;
its resume does not hang on it (issue 33, item 21)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from evalband.cli import main
from evalband.panel import load_panel
from evalband.store import open_store


class HangsOnce:
    """Hangs (a sleep: a stuck socket, a lock) in the episode with the chosen seed."""

    def __init__(self) -> None:
        self.seed: int | None = None

    def reset(self, context: Any) -> None:
        self.seed = context.condition_seed

    def act(self, obs: Any) -> np.ndarray:
        if self.seed is not None and self.seed % 3 == 0:
            time.sleep(3600)
        return np.zeros(1)


hangs_once = HangsOnce()


def test_a_hung_episode_is_an_error_and_the_run_goes_on(tmp_path: Path, capsys,
                                                        monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    panel = tmp_path / "p.yaml"
    panel.write_text(yaml.safe_dump({"name": "p", "env": "evalband/Coin-v0", "episodes": 8,
                                     "seed": 1, "budget": {"steps": 4}}))
    store = str(tmp_path / "s.sqlite")
    args = ["run", str(panel), "-p", "test_episode_timeout:hangs_once", "--run-id", "h",
            "--store", store, "--episode-timeout", "0.3"]
    started = time.monotonic()
    assert main(args) == 1  # error episodes withhold the verdict
    with open_store(store) as st:
        records = st.episode_records("h")
    hung = [r for r in records if r.condition_seed % 3 == 0]
    assert hung and len(records) == 8
    assert time.monotonic() - started < 0.3 * len(hung) + 10
    assert all(r.outcome.value == "error" and r.error.startswith("EpisodeTimeout")
               for r in hung)
    assert all(r.outcome.value != "error" for r in records if r.condition_seed % 3)
    assert "--retry-errors" in capsys.readouterr().err


def test_the_default_comes_from_the_budget_and_the_panel_may_set_it() -> None:
    from evalband.run._runner import default_episode_timeout, panel_task

    panel = load_panel({"name": "p", "env": "evalband/Coin-v0", "episodes": 1,
                        "budget": {"steps": 40}})
    assert panel_task(panel, "r", "x").episode_timeout_s == default_episode_timeout(40) == 100.0
    timed = load_panel({**panel.model_dump(), "episode_timeout_s": 5.0})
    assert panel_task(timed, "r", "x").episode_timeout_s == 5.0
    assert timed.fingerprint == panel.fingerprint  # a limit, not what is played
