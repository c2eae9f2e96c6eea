"""``run_panel``'s options as one object (:class:`RunOptions`), the keyword form kept."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from evalband.run import run_panel
from evalband.run._options import OPTION_NAMES, RunOptions
from testkit import coin_panel, comparable

ZERO = "evalband.policies._builtin:zero_action"


def test_an_options_object_and_the_keywords_record_the_same_run(store) -> None:
    panel = coin_panel()
    seen: list[str] = []
    options = RunOptions(run_id="by-object", errors_as_failures=True, step=3,
                         on_episode=lambda r: seen.append(r.run_id))
    by_object, summary_o = run_panel(panel, ZERO, store, options)
    by_keywords, summary_k = run_panel(panel, ZERO, store, run_id="by-keywords",
                                       errors_as_failures=True, step=3)
    assert (by_object, by_keywords) == ("by-object", "by-keywords")
    def same(run_id: str) -> list[dict[str, object]]:
        return [{**comparable(r), "run_id": None} for r in store.episode_records(run_id)]

    assert same(by_object) == same(by_keywords)
    assert seen == ["by-object"] * len(panel.episode_specs())
    for run_id in (by_object, by_keywords):
        manifest = store.require_run(run_id)
        assert manifest.errors_as_failures and manifest.step == 3
    assert summary_o.counts == summary_k.counts


def test_keywords_apply_over_the_options_which_stay_unchanged(store) -> None:
    options = RunOptions(run_id="first", step=1)
    run_id, _ = run_panel(coin_panel(), ZERO, store, options, run_id="second")
    assert run_id == "second" and store.require_run("second").step == 1
    assert store.get_run("first") is None and options.run_id == "first"


def test_an_unknown_keyword_is_a_type_error_before_anything_runs(store) -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'run_idd'"):
        run_panel(coin_panel(), ZERO, store, run_idd="typo")
    assert store.list_runs() == []


def test_every_option_is_documented_and_every_old_keyword_is_an_option() -> None:
    old_keywords = {  # run_panel's keyword parameters before RunOptions (issue 32 item 5)
        "run_id", "backend", "workers", "address", "errors_as_failures", "command",
        "on_episode", "on_start", "batch", "batch_size", "retry_errors", "record_video",
        "record_size", "record_steps", "order", "stop_when", "step", "on_note", "override",
        "episode_timeout"}
    assert set(OPTION_NAMES) == old_keywords
    doc = inspect.getdoc(RunOptions) or ""
    assert all(f"    {name}: " in doc for name in OPTION_NAMES)
    with pytest.raises(dataclasses.FrozenInstanceError):
        RunOptions().run_id = "x"  # type: ignore[misc]
