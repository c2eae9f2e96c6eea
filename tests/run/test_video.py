"""``run --record``: clips of chosen episodes, encoded with PyAV, stored beside the store."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest

from evalband.errors import InvalidParameterError
from evalband.panel import Panel, load_panel
from evalband.run import run_panel
from evalband.run._video import encode_video, parse_record
from evalband.store import RunStore
from evalband.store._media import media_dir, media_file


def pusht_panel(episodes: int = 4, steps: int = 6) -> Panel:
    return load_panel({"name": "pt-video", "env": "evalband/PushT-v0", "episodes": episodes,
                       "seed": 5, "budget": {"steps": steps},
                       "factors": {"start": ["train", "held_out"]}})


def decoded_frames(path: Path) -> list[np.ndarray]:
    with av.open(str(path)) as container:
        return [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]


def test_failures_are_filmed_and_decode_to_one_frame_per_step(
    store: RunStore, tmp_path: Path
) -> None:
    panel = pusht_panel()
    run_id, _ = run_panel(panel, "pusht:expert", store, run_id="filmed",
                          record_video="failures")
    records = store.episode_records(run_id)
    failures = [r for r in records if not r.success]
    assert failures, "the budget of 6 steps is too short for the expert to succeed"
    assert all(not r.media for r in records if r.success)
    for r in failures:
        (ref,) = r.media
        assert ref["content_type"] == "video/mp4" and ref["frames"] == r.steps + 1
        path = media_file(store.path, ref)
        assert path is not None and path.parent == media_dir(store.path)
        frames = decoded_frames(path)
        assert len(frames) == r.steps + 1 and frames[0].shape == (96, 96, 3)
        # the pusher (red) moves between the first and the last frame
        red = [np.argwhere((f[..., 0] > 150) & (f[..., 1] < 140)).mean(axis=0) for f in frames]
        assert np.abs(red[0] - red[-1]).max() > 1.0
    assert store.require_run(run_id).extra["record"] == "failures"


def test_sample_picks_the_same_episodes_for_every_policy(store: RunStore) -> None:
    panel = pusht_panel(episodes=5, steps=3)
    plan = parse_record("sample:3", panel.episode_specs(), seed=panel.seed)
    a, _ = run_panel(panel, "pusht:expert", store, run_id="a", record_video="sample:3")
    b, _ = run_panel(panel, "evalband.policies.pusht:expert", store, run_id="b",
                     backend="process", workers=2, record_video="sample:3")
    filmed_a = {r.key for r in store.episode_records(a) if r.media}
    filmed_b = {r.key for r in store.episode_records(b) if r.media}
    assert filmed_a == filmed_b == set(plan.keys) and len(plan.keys) == 3
    # same condition, same policy: the same clip, stored once
    digests = {r.key: r.media[0]["sha256"] for r in store.episode_records(a) if r.media}
    assert digests == {r.key: r.media[0]["sha256"] for r in store.episode_records(b) if r.media}
    assert len(list(media_dir(store.path).glob("*.mp4"))) == 3


def test_record_refuses_an_env_without_frames_and_bad_modes(store: RunStore) -> None:
    panel = load_panel("reach1d")
    with pytest.raises(InvalidParameterError, match="render_mode"):
        run_panel(panel, "reach1d:baseline", store, record_video="all")
    assert store.list_runs() == []
    with pytest.raises(InvalidParameterError, match="failures, all or sample:K"):
        parse_record("sample:many", [], seed=0)


def test_webm_clips_decode() -> None:
    frames = [np.full((31, 33, 3), 10 * i, np.uint8) for i in range(6)]
    clip = encode_video(frames, fps=5, codec="vp9")
    assert clip[:4] == b"\x1a\x45\xdf\xa3"  # EBML: a WebM file


def test_a_clip_too_large_to_hold_stops_and_says_so(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    import evalband.run._video as video

    monkeypatch.setattr(video, "MAX_RAW_BYTES", 5 * 96 * 96 * 3)  # five frames
    run_id, _ = run_panel(pusht_panel(episodes=1, steps=8), "pusht:expert", store,
                          run_id="capped", record_video="all")
    for r in store.episode_records(run_id):
        assert r.media[0]["frames"] == 5
        assert "stops after 5 frames" in r.extra["media_note"]


@pytest.mark.parametrize("mode", ["sample:2", "failures"])
def test_a_clip_shows_the_frames_the_env_drew(store: RunStore, mode: str) -> None:
    """Decoded clip frames match the env's own renders of the same episode, frame by frame."""
    from evalband.envs.pusht import PushTEnv
    from evalband.policies.pusht import expert
    from evalband.run._execute import env_options

    panel = pusht_panel(episodes=3, steps=12)
    run_id, _ = run_panel(panel, "pusht:expert", store, run_id="content", record_video=mode)
    specs = {s.key: s for s in panel.episode_specs()}
    filmed = [r for r in store.episode_records(run_id) if r.media]
    assert filmed
    env = PushTEnv(render_mode="rgb_array", render_size=96)
    for r in filmed:
        spec = specs[r.key]
        obs, _ = env.reset(seed=spec.condition_seed, options=env_options(spec))
        drawn = [np.asarray(env.render())]
        for _ in range(r.steps):
            obs, *_ = env.step(expert(obs))
            drawn.append(np.asarray(env.render()))
        path = media_file(store.path, r.media[0])
        assert path is not None
        frames = decoded_frames(path)
        assert len(frames) == len(drawn) == r.steps + 1
        errors = np.array([[np.abs(f.astype(int) - d.astype(int)).mean() for d in drawn]
                           for f in frames])
        # lossy, but close to its own frame (a few grey levels) and closer than to any other
        assert errors.diagonal().max() < 4.0
        nearest = errors.argmin(axis=1)
        assert all(np.array_equal(drawn[j], drawn[i]) for i, j in enumerate(nearest))


def test_an_encoder_that_fails_never_stalls_or_fails_the_run(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    import evalband.run._encode as encode

    def broken(frames: object, fps: float = 10.0, codec: str = "h264") -> object:
        raise RuntimeError("no encoder here")

    monkeypatch.setattr(encode, "encode_frames", broken)
    monkeypatch.setattr(encode, "QUEUE_FRAMES", 4)
    monkeypatch.setattr(encode, "HANDOFF_FRAMES", 2)
    # more frames per episode than the encoder queue holds: the player must not wait forever
    run_id, _ = run_panel(pusht_panel(episodes=3, steps=30), "pusht:expert", store,
                          run_id="broken", record_video="all")
    records = store.episode_records(run_id)
    assert len(records) == 6 and all(not r.media for r in records)
    assert all("no encoder here" in r.extra["media_error"] for r in records)
    assert min(r.steps for r in records) > 4


def test_filming_changes_no_record_and_a_clip_is_on_disk_when_its_record_commits(
    store: RunStore,
) -> None:
    """Records with and without filming are equal but for timing and the media fields; every
    committed record's clip is already in place (renamed from its ``.part``) when reported."""
    from testkit import comparable

    panel = pusht_panel(episodes=4, steps=20)
    run_panel(panel, "pusht:expert", store, run_id="plain")
    seen: list[bool] = []

    def committed(record: object) -> None:
        for ref in getattr(record, "media", []):
            path = media_file(store.path, ref)
            seen.append(path is not None and path.suffix == ".mp4")

    run_panel(panel, "pusht:expert", store, run_id="filmed", record_video="sample:5",
              on_episode=committed)
    media_keys = ("media", "media_ms", "media_note", "media_error")

    def strip(run_id: str) -> list[dict[str, object]]:
        rows = []
        for r in store.episode_records(run_id):
            row = comparable(r)
            row["extra"] = {k: v for k, v in (row.get("extra") or {}).items()
                            if k not in media_keys}
            rows.append({k: v for k, v in row.items() if k != "run_id"})
        return rows

    assert strip("filmed") == strip("plain")
    assert seen == [True] * 5
    assert not list(media_dir(store.path).glob("*.part"))
