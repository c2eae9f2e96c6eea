"""Imports copy only real clips from inside the imported directory (issue 33, items 8, 17)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_import_sources import tiny_mp4  # tests/store is on the path

from evalband.cli import main
from evalband.errors import ImportFormatError
from evalband.store import RunStore, import_results
from evalband.store._media import media_dir, media_file


def lerobot_info(folder: Path, videos: list[str]) -> Path:
    """lerobot-eval's ``eval_info.json`` (0.4: per_episode + top-level video_paths)."""
    folder.mkdir(parents=True, exist_ok=True)
    episodes = [{"episode_ix": i, "sum_reward": 1.0, "max_reward": 1.0, "success": True,
                 "seed": 100 + i} for i in range(len(videos))]
    path = folder / "eval_info.json"
    path.write_text(json.dumps({"per_episode": episodes, "aggregated": {"pc_success": 100.0},
                                "video_paths": videos}))
    return path


def _unchanged(store: RunStore) -> None:
    assert store.list_runs() == []
    assert not media_dir(store.path).exists() or not any(media_dir(store.path).iterdir())


def test_a_file_outside_the_imported_directory_is_refused(store: RunStore,
                                                          tmp_path: Path) -> None:
    path = lerobot_info(tmp_path / "eval", ["/etc/passwd"])
    with pytest.raises(ImportFormatError, match="outside the imported directory"):
        import_results(store, path)
    _unchanged(store)


def test_the_cli_says_so_in_one_line(tmp_path: Path, capsys) -> None:
    path = lerobot_info(tmp_path / "eval", ["../../../../../../../etc/passwd"])
    assert main(["import", str(path), "--store", str(tmp_path / "s.sqlite")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "outside the imported directory" in err


def test_a_symlink_out_of_the_directory_is_refused(store: RunStore, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.mp4"
    tiny_mp4(outside, 50)  # a real clip, but not the import's to copy
    folder = tmp_path / "eval"
    (folder / "videos").mkdir(parents=True)
    os.symlink(outside, folder / "videos" / "eval_episode_0.mp4")
    path = lerobot_info(folder, ["videos/eval_episode_0.mp4"])
    with pytest.raises(ImportFormatError, match="outside the imported directory"):
        import_results(store, path)
    _unchanged(store)


def test_empty_and_undecodable_clips_are_refused_with_a_note(store: RunStore, tmp_path: Path,
                                                            capsys) -> None:
    folder = tmp_path / "eval"
    (folder / "videos").mkdir(parents=True)
    (folder / "videos" / "eval_episode_0.mp4").write_bytes(b"")
    (folder / "videos" / "eval_episode_1.mp4").write_bytes(b"\x00\x00\x00\x18ftypisom" + b"x" * 64)
    tiny_mp4(folder / "videos" / "eval_episode_2.mp4", 70)
    path = lerobot_info(folder, [f"videos/eval_episode_{i}.mp4" for i in range(3)])
    assert main(["import", str(path), "--run-id", "r", "--store", str(store.path)]) == 0
    out = capsys.readouterr().out
    assert "0 bytes" in out and "undecodable" in out
    records = {r.episode: r for r in store.episode_records("r")}
    assert records[0].media[0]["refused"] == "0 bytes"
    assert records[1].media[0]["refused"].startswith("undecodable")
    assert media_file(store.path, records[2].media[0]) is not None
    assert len(list(media_dir(store.path).iterdir())) == 1  # only the good clip was copied
    assert len(store.require_run("r").extra["media_notes"]) == 2
    html = tmp_path / "r.html"
    assert main(["report", "r", "--html", str(html), "--store", str(store.path)]) == 0
    assert html.read_text().count("<video") == 1  # the refused clips are never embedded


def test_clips_written_where_the_evaluation_ran_are_found_inside(store: RunStore,
                                                                 tmp_path: Path) -> None:
    folder = tmp_path / "outputs" / "eval" / "run1"
    tiny_mp4(folder / "videos" / "eval_episode_0.mp4", 30)
    # lerobot-eval writes the path relative to where it ran, not to eval_info.json
    path = lerobot_info(folder, ["outputs/eval/run1/videos/eval_episode_0.mp4"])
    run = import_results(store, path)
    (record,) = store.episode_records(run)
    assert media_file(store.path, record.media[0]) is not None
