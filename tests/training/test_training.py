"""The training callback: one stored run per checkpoint with its step, and tracker logging.

TensorBoard's own reader parses the event files (the oracle for the format); the logged band
is checked against statsmodels' Wilson interval; W&B runs offline (nothing is sent) and its
own summary file is read back.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from statsmodels.stats.proportion import proportion_confint

from evalband.errors import InvalidParameterError
from evalband.panel import load_panel
from evalband.store import open_store
from evalband.training import TensorBoardLogger, WandbLogger, evaluate_checkpoint
from evalband.training._checkpoint import lerobot_checkpoints, run_name
from evalband.training._tensorboard import EventWriter, crc32c


def _scalars(logdir: Path) -> dict[tuple[str, int], float]:
    """Every scalar in ``logdir``, read by tensorboard's own EventAccumulator."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    reader = EventAccumulator(str(logdir))
    reader.Reload()
    return {(tag, event.step): event.value for tag in reader.Tags()["scalars"]
            for event in reader.Scalars(tag)}


def test_event_file_parses_with_tensorboards_reader(tmp_path: Path) -> None:
    writer = EventWriter(tmp_path)
    writer.add_scalars({"a/rate": 0.25, "a/low": 0.125}, step=10)
    writer.add_scalars({"a/rate": 0.5}, step=2**40)  # a large step: a multi-byte varint
    writer.close()
    assert _scalars(tmp_path) == {("a/rate", 10): 0.25, ("a/low", 10): 0.125,
                                  ("a/rate", 2**40): 0.5}


def test_crc32c_against_published_check_values() -> None:
    # RFC 3720 B.4: 32 bytes of zeros, of 0xff, and an ascending run
    assert crc32c(bytes(32)) == 0x8A9136AA
    assert crc32c(b"\xff" * 32) == 0x62A8AB43
    assert crc32c(bytes(range(32))) == 0x46DD794E


def _reach(episodes: int = 24) -> Any:
    return load_panel({**load_panel("reach1d").model_dump(), "episodes": episodes})


def test_one_run_per_checkpoint_with_its_step_and_band(tmp_path: Path) -> None:
    panel = _reach()
    logger = TensorBoardLogger(tmp_path / "tb")
    results = []
    with open_store(tmp_path / "s.sqlite") as store:
        for step, policy in ((100, "reach1d:baseline"), (200, "reach1d:damped")):
            results.append(evaluate_checkpoint(policy, panel, step=step, store=store,
                                               prefix="reach", loggers=[logger]))
        runs = {r.run_id: r for r in store.list_runs()}
        assert {r.run_id: r.step for r in runs.values()} == {
            "reach-step00000100": 100, "reach-step00000200": 200}
        assert all(runs[r.run_id].backend == "vector" for r in results)
        counts = [sum(e.success for e in store.episode_records(r.run_id)) for r in results]
    logger.close()
    scalars = _scalars(tmp_path / "tb")
    for result, k in zip(results, counts, strict=True):
        low, high = proportion_confint(k, 24, alpha=0.05, method="wilson")
        assert (result.successes, result.episodes) == (k, 24)
        tag = "evalband/reach1d/success_rate"
        assert scalars[(tag, result.step)] == pytest.approx(k / 24, rel=1e-6)
        assert scalars[(tag + "_low", result.step)] == pytest.approx(low, rel=1e-6)
        assert scalars[(tag + "_high", result.step)] == pytest.approx(high, rel=1e-6)
    assert counts[0] != counts[1]  # the two checkpoints really differ


def test_until_decided_compares_with_the_best_earlier_checkpoint(tmp_path: Path) -> None:
    panel = _reach(40)
    with open_store(tmp_path / "s.sqlite") as store:
        first = evaluate_checkpoint("reach1d:damped", panel, step=1, store=store, prefix="r",
                                    until_decided=True, backend="serial")
        evaluate_checkpoint("reach1d:baseline", panel, step=2, store=store, prefix="r",
                            backend="serial")
        third = evaluate_checkpoint("reach1d:baseline", panel, step=3, store=store,
                                    prefix="r", until_decided=True, backend="serial")
        rates = {r.run_id: r for r in (first, third)}
        assert first.against is None and first.episodes == 40  # nothing to compare with
        best = max((first.rate or 0, "r-step00000001"), (0.0, "r-step00000002"))[1]
        assert third.against == best and third.decision is not None, rates
        assert store.get_run(third.run_id).step == 3


def _wandb_records(path: Path) -> Any:
    """The records of an offline W&B run file (``run-*.wandb``), as W&B writes them.

    W&B's own framing (a ``:W&B`` header, then LevelDB log records in 32 KiB blocks: crc,
    length, type FULL/FIRST/MIDDLE/LAST) around its ``Record`` protocol buffers, parsed with
    W&B's own ``wandb_internal_pb2``.
    """
    import struct

    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    ident, magic, _ = struct.unpack("<4sHB", data[:7])
    assert ident == b":W&B" and magic == 0xBEE1
    pos, block, buf = 7, 32768, b""
    while pos + 7 <= len(data):
        left = block - pos % block
        if left < 7:
            pos += left
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        if length == 0 and kind == 0:
            pos += left
            continue
        if pos + 7 + length > len(data):
            return  # the writer is still on this record
        buf += data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # FULL or LAST: a whole record
            record = wandb_internal_pb2.Record()
            record.ParseFromString(buf)
            buf = b""
            yield record


def _finished_records(path: Path, wait_s: float = 120.0) -> list[Any]:
    """The run's records once W&B's own service has written its ``exit`` record.

    ``run.finish()`` returns when the service has handled the exit, not when its writer has
    flushed the transaction log to disk; on a loaded machine the file can still lack the tail
    (the history row among it) for a moment, so wait for the record that ends every run.
    """
    deadline = time.monotonic() + wait_s
    while True:
        records = list(_wandb_records(path))
        if any(r.WhichOneof("record_type") == "exit" for r in records):
            return records
        assert time.monotonic() < deadline, f"no exit record in {path} after {wait_s:.0f} s"
        time.sleep(0.2)


def test_wandb_offline_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("wandb", reason="the tracking extra is optional")
    monkeypatch.setenv("WANDB_SILENT", "true")
    logger = WandbLogger(project="evalband-test", mode="offline", dir=tmp_path)
    with open_store(tmp_path / "s.sqlite") as store:
        result = evaluate_checkpoint("reach1d:damped", _reach(8), step=7, store=store,
                                     prefix="w", loggers=[logger], backend="serial")
    logger.close()
    files = list(tmp_path.glob("wandb/offline-run-*/run-*.wandb"))
    assert len(files) == 1  # offline: written here, nothing sent
    records = _finished_records(files[0])
    history = [r.history for r in records if r.WhichOneof("record_type") == "history"]
    assert len(history) == 1 and history[0].step.num == 7
    logged = {item.key or "/".join(item.nested_key): json.loads(item.value_json)
              for item in history[0].item}
    assert logged["evalband/reach1d/success_rate"] == pytest.approx(result.rate)
    assert logged["evalband/reach1d/success_rate_low"] == pytest.approx(result.low)


def test_lerobot_checkpoint_folders(tmp_path: Path) -> None:
    for step in ("000010", "000020"):
        (tmp_path / "checkpoints" / step / "pretrained_model").mkdir(parents=True)
    (tmp_path / "checkpoints" / "last").symlink_to(tmp_path / "checkpoints" / "000020")
    assert lerobot_checkpoints(tmp_path) == [
        (10, tmp_path / "checkpoints/000010/pretrained_model"),
        (20, tmp_path / "checkpoints/000020/pretrained_model")]
    with pytest.raises(InvalidParameterError, match="no checkpoints"):
        lerobot_checkpoints(tmp_path / "checkpoints")


def test_step_must_be_a_whole_number(tmp_path: Path) -> None:
    with pytest.raises(InvalidParameterError, match="`step`"):
        evaluate_checkpoint("reach1d:damped", _reach(4), step=-1, store=tmp_path / "s.sqlite")
    assert run_name("x", 3) == "x-step00000003"
