"""Tests for artifact bundles: export, verified load, import."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from evalband.episode import EPISODE_FIELDS, EpisodeRecord
from evalband.errors import BundleError, RunNotFoundError
from evalband.panel import panel_from_yaml
from evalband.store import RunStore, open_store
from evalband.store._bundle import export_bundle, import_bundle, load_bundle
from evalband.store._manifest import RunManifest

PANEL_YAML = ("# pinned panel \u2014 do not edit\r\nname: demo\nenv: evalband/Coin-v0\n"
              "episodes: 3\nseed: 7\nbudget: {steps: 5}\nfactors: {mass: [light, heavy]}\n")
FP = panel_from_yaml(PANEL_YAML).fingerprint


def manifest(run_id: str = "r1", **changes: Any) -> RunManifest:
    base = RunManifest(
        run_id=run_id,
        panel_name="demo",
        panel_yaml=PANEL_YAML,
        panel_fingerprint=FP,
        policy="expert",
        policy_hash="sha256:abc",
        backend="process",
        workers=4,
        host="lab",
        git_sha="0" * 40,
        versions={"evalband": "0.1.0", "numpy": "2.4.0"},
        command="evalband run panel.yaml",
        started_at="2025-01-01T00:00:00Z",
        finished_at="2025-01-01T00:10:00Z",
        status="finished",
        errors_as_failures=False,
        n_planned=6,
        extra={"note": "baseline"},
    )
    return base.replace(**changes)


def rec(
    episode: int, *, cell: str = "mass=light", outcome: str = "success", **kw: Any
) -> EpisodeRecord:
    terminated = outcome in ("success", "failure")
    fields: dict[str, Any] = {
        "run_id": "r1",
        "policy": "expert",
        "panel_fingerprint": FP,
        "cell": cell,
        "slices": dict(p.split("=", 1) for p in cell.split(",") if "=" in p),
        "episode": episode,
        "repeat": 0,
        "condition_seed": 1000 + episode,
        "outcome": outcome,
        "terminated": terminated,
        "truncated": not terminated,
        "steps": 10 + episode,
    }
    fields.update(kw)
    return EpisodeRecord(**fields)


RECORDS = [
    rec(
        0,
        sim_time_s=1.5,
        time_to_success_s=1.5,
        score=2,
        latency_ms_p50=0.1,
        latency_ms_p95=1 / 3,
        latency_ms_max=2.0,
        env_ms=40.25,
        wall_s=0.5,
        started_at="2025-01-01T00:00:01Z",
        extra={"video": "e0.mp4", "n": [1, None]},
    ),
    rec(1, outcome="failure", assisted=True, interventions=2, condition_seed=2**64 - 1),
    rec(2, outcome="timeout", attempts=3),
    rec(0, cell="mass=heavy", outcome="error", error="RuntimeError: boom"),
    rec(1, cell="mass=heavy", outcome="success", score=None, extra={"\u00fc": "\u2603"}),
    rec(2, cell="mass=heavy", outcome="failure", slices={"mass": "heavy", "start": "far"}),
]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def source(tmp_path: Path) -> Any:
    with open_store(tmp_path / "source.sqlite") as s:
        s.create_run(manifest())
        for r in RECORDS:
            s.add_episode(r)
        yield s


@pytest.fixture
def bundle(source: RunStore, tmp_path: Path) -> Path:
    return export_bundle(source, "r1", tmp_path / "bundles" / "r1")


def test_bundle_layout_and_manifest_contents(bundle: Path) -> None:
    assert sorted(p.name for p in bundle.iterdir()) == [
        "episodes.parquet",
        "manifest.json",
        "panel.yaml",
    ]
    assert sorted(p.name for p in bundle.parent.iterdir()) == ["r1"]  # no temp dirs left
    doc = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    assert doc["format"] == "evalband-bundle/1"
    assert doc["run_id"] == "r1" and doc["status"] == "finished" and doc["workers"] == 4
    assert "panel_yaml" not in doc
    assert doc["episodes"] == len(RECORDS)
    assert doc["outcome_counts"] == {
        o: Counter(r.outcome.value for r in RECORDS).get(o, 0)
        for o in ("success", "failure", "timeout", "error")
    }
    assert set(doc["files"]) == {"panel.yaml", "episodes.parquet"}
    for name, info in doc["files"].items():
        assert info["sha256"] == sha256(bundle / name)
        assert info["bytes"] == (bundle / name).stat().st_size
    assert (bundle / "panel.yaml").read_bytes() == PANEL_YAML.encode("utf-8")


def test_parquet_is_plain_readable_with_every_field(bundle: Path) -> None:
    df = pd.read_parquet(bundle / "episodes.parquet")
    assert list(df.columns) == list(EPISODE_FIELDS)
    assert len(df) == len(RECORDS)
    expected = sorted(RECORDS, key=lambda r: r.key)
    assert [json.loads(s) for s in df["slices"]] == [r.slices for r in expected]
    assert [json.loads(s) for s in df["extra"]] == [r.extra for r in expected]
    assert list(df["outcome"]) == [r.outcome.value for r in expected]
    assert [int(s) for s in df["condition_seed"]] == [r.condition_seed for r in expected]


def test_round_trip_store_bundle_store(bundle: Path, source: RunStore, tmp_path: Path) -> None:
    loaded_manifest, loaded = load_bundle(bundle)
    assert loaded_manifest == manifest()
    assert loaded == sorted(RECORDS, key=lambda r: r.key)
    with open_store(tmp_path / "target.sqlite") as target:
        assert import_bundle(target, bundle) == "r1"
        assert target.episode_records("r1") == source.episode_records("r1")
        assert target.outcome_counts("r1") == source.outcome_counts("r1")
        imported = target.require_run("r1")
        assert imported.status == "imported" and imported.source == "import"
        assert imported.panel_yaml == PANEL_YAML
        provenance = imported.extra["imported_from"]
        assert provenance["status"] == "finished" and provenance["source"] == "runner"
        assert provenance["manifest_sha256"] == sha256(bundle / "manifest.json")
        original = manifest().as_dict()
        for key in ("status", "source", "extra"):
            original.pop(key)
        got = imported.as_dict()
        assert {k: got[k] for k in original} == original
        assert {k: v for k, v in imported.extra.items() if k != "imported_from"} == {
            "note": "baseline"
        }


def test_import_same_content_is_a_no_op(bundle: Path, source: RunStore, tmp_path: Path) -> None:
    assert import_bundle(source, bundle) == "r1"  # into the store it came from
    assert source.require_run("r1").status == "finished"
    with open_store(tmp_path / "t.sqlite") as target:
        import_bundle(target, bundle)
        before = target.require_run("r1")
        assert import_bundle(target, bundle) == "r1"
        assert target.require_run("r1") == before
        assert target.count_episodes("r1") == len(RECORDS)
        # Re-exporting the imported run and importing it again is still the same content.
        again = export_bundle(target, "r1", tmp_path / "again")
        assert import_bundle(target, again) == "r1"
        assert import_bundle(source, again) == "r1"


def test_import_conflicting_run_id_refused(bundle: Path, tmp_path: Path) -> None:
    with open_store(tmp_path / "t.sqlite") as target:
        target.create_run(manifest(policy="other"))
        with pytest.raises(BundleError, match="policy"):
            import_bundle(target, bundle)
        assert target.require_run("r1").policy == "other"
        assert target.count_episodes("r1") == 0
    with open_store(tmp_path / "u.sqlite") as target:
        target.create_run(manifest())
        target.add_episode(RECORDS[0])
        with pytest.raises(BundleError, match="episodes differ"):
            import_bundle(target, bundle)
        assert target.count_episodes("r1") == 1


def test_empty_run_round_trips(tmp_path: Path) -> None:
    with open_store(tmp_path / "s.sqlite") as s:
        s.create_run(manifest("empty", status="interrupted", finished_at=None))
        out = export_bundle(s, "empty", tmp_path / "b")
    m, records = load_bundle(out)
    assert m == manifest("empty", status="interrupted", finished_at=None) and records == []
    with open_store(tmp_path / "t.sqlite") as t:
        import_bundle(t, out)
        assert t.count_episodes("empty") == 0
        assert t.require_run("empty").extra["imported_from"]["status"] == "interrupted"


def test_export_unknown_run(source: RunStore, tmp_path: Path) -> None:
    with pytest.raises(RunNotFoundError):
        export_bundle(source, "nope", tmp_path / "b")
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("name", ["episodes.parquet", "panel.yaml"])
@pytest.mark.parametrize("where", [0.0, 0.5, 1.0])
def test_tampering_with_any_byte_is_detected(bundle: Path, name: str, where: float) -> None:
    path = bundle / name
    data = bytearray(path.read_bytes())
    expected = sha256(path)
    i = min(int(where * len(data)), len(data) - 1)
    data[i] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(BundleError) as info:
        load_bundle(bundle)
    message = str(info.value)
    assert name in message
    assert expected in message and sha256(path) in message


@pytest.mark.parametrize("name", ["episodes.parquet", "panel.yaml"])
def test_missing_file_is_detected(bundle: Path, name: str) -> None:
    (bundle / name).unlink()
    with pytest.raises(BundleError, match=f"missing {name}"):
        load_bundle(bundle)


def test_missing_or_damaged_manifest_is_detected(bundle: Path, tmp_path: Path) -> None:
    doc = json.loads((bundle / "manifest.json").read_text())
    doc["episodes"] = 5
    (bundle / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(BundleError, match="episodes"):
        load_bundle(bundle)
    doc["episodes"] = len(RECORDS)
    doc["files"].pop("panel.yaml")
    (bundle / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(BundleError, match="panel.yaml"):
        load_bundle(bundle)
    doc["files"]["panel.yaml"] = {"sha256": "0" * 64, "bytes": 1}
    doc["files"]["../escape"] = {"sha256": "0" * 64, "bytes": 1}
    (bundle / "manifest.json").write_text(json.dumps(doc))
    with pytest.raises(BundleError, match="escape"):
        load_bundle(bundle)
    (bundle / "manifest.json").write_text("{not json")
    with pytest.raises(BundleError, match="JSON"):
        load_bundle(bundle)
    (bundle / "manifest.json").unlink()
    with pytest.raises(BundleError, match="manifest.json"):
        load_bundle(bundle)
    with pytest.raises(BundleError, match="not a bundle directory"):
        load_bundle(tmp_path / "nowhere")


def test_export_to_non_empty_dir_refused(source: RunStore, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(BundleError, match="not empty"):
        export_bundle(source, "r1", out)
    # overwrite only replaces a bundle, never an arbitrary directory
    with pytest.raises(BundleError, match="not an evalband bundle"):
        export_bundle(source, "r1", out, overwrite=True)
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]
    assert (out / "keep.txt").read_text() == "mine"
    file_target = tmp_path / "file"
    file_target.write_text("x")
    with pytest.raises(BundleError, match="is a file"):
        export_bundle(source, "r1", file_target)


def test_export_into_empty_dir_and_overwrite_existing_bundle(
    source: RunStore, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    export_bundle(source, "r1", out)
    with pytest.raises(BundleError, match="not empty"):
        export_bundle(source, "r1", out)
    source.update_run("r1", extra={"note": "changed"})
    export_bundle(source, "r1", out, overwrite=True)
    assert load_bundle(out)[0].extra == {"note": "changed"}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []


def test_crash_during_export_leaves_no_bundle(
    source: RunStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import evalband.store._bundle as bundle_module

    def boom(records: Any) -> Any:
        raise RuntimeError("disk full")

    monkeypatch.setattr(bundle_module, "_episodes_table", boom)
    target = tmp_path / "bundles" / "r1"
    with pytest.raises(RuntimeError, match="disk full"):
        export_bundle(source, "r1", target)
    assert not target.exists()
    assert list((tmp_path / "bundles").iterdir()) == []


def _rehash(bundle: Path, name: str) -> None:
    """Forge: recompute a file's hash in the manifest after editing it."""
    doc = json.loads((bundle / "manifest.json").read_text())
    doc["files"][name]["sha256"] = sha256(bundle / name)
    doc["files"][name]["size"] = (bundle / name).stat().st_size
    (bundle / "manifest.json").write_text(json.dumps(doc))


def test_an_edited_panel_is_caught_even_with_its_hash_recomputed(bundle: Path) -> None:
    text = (bundle / "panel.yaml").read_text()
    (bundle / "panel.yaml").write_text(text.replace("seed: 7", "seed: 8"))
    with pytest.raises(BundleError, match="does not match its manifest"):
        load_bundle(bundle)
    _rehash(bundle, "panel.yaml")  # a forgery that keeps the hashes consistent
    with pytest.raises(BundleError, match="panel.yaml was edited"):
        load_bundle(bundle)


def test_a_cosmetic_panel_edit_with_its_hash_recomputed_still_loads(bundle: Path) -> None:
    # the fingerprint covers what changes results; a comment does not (and the hash shows it)
    (bundle / "panel.yaml").write_text((bundle / "panel.yaml").read_text() + "# note\n")
    _rehash(bundle, "panel.yaml")
    assert load_bundle(bundle)[0].panel_fingerprint == FP


def test_symlinks_and_files_outside_the_bundle_are_refused(bundle: Path,
                                                            tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.parquet"
    (bundle / "episodes.parquet").rename(outside)
    (bundle / "episodes.parquet").symlink_to(outside)  # same bytes, same hash
    with pytest.raises(BundleError, match="symbolic link or leaves the bundle"):
        load_bundle(bundle)


def test_cli_says_consistent_not_verified(bundle: Path, tmp_path: Path, capsys) -> None:
    from evalband.cli import main

    assert main(["import", str(bundle), "--store", str(tmp_path / "t.sqlite")]) == 0
    out = capsys.readouterr().out
    assert "consistent" in out and "verified" not in out
