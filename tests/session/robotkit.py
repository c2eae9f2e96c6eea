"""Helpers for robot-session tests: sim-arm rehearsals on a virtual clock, media read back."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np

from evalband.session import SessionMachine, SessionStore, plan_session, resolve_robot
from evalband.session._clock import VirtualClock
from evalband.session._instrument_spec import load_instrument
from evalband.store._media import media_file

CONTROLS = ("sim-arm:grasp", "sim-arm:weak", "sim-arm:never")


def plan(store: Path, session_id: str, policies: tuple[str, ...] = CONTROLS, scenes: int = 1,
         attempts: int = 2, *, seed: int = 7, blind: bool = True,
         specs: dict[str, str] | None = None, instrument: Any = "sim-arm",
         **changes: Any) -> None:
    """Store a session planned with the sim-arm instrument (``changes`` override its fields)."""
    inst = load_instrument(instrument).as_dict() if instrument is not None else None
    if inst is not None:
        inst.update(changes)
    with SessionStore(store) as ss:
        ss.create(plan_session(list(policies), scenes, attempts, seed, blind=blind,
                               session_id=session_id, specs=specs, instrument=inst))


def machine(ss: SessionStore, session_id: str, operator: str = "suggested", *,
            robot: Any = None, policies: Any = None, seed: int = 0) -> SessionMachine:
    """A session machine on sim-arm under a virtual clock."""
    clock = VirtualClock()
    if robot is None:
        robot = resolve_robot("sim-arm", clock=clock.now, seed=seed)
    else:
        robot.clock = clock.now
    return SessionMachine(ss, session_id, robot, robot_spec="sim-arm", clock=clock,
                          operator=operator, policies=policies)


def media(store: Path, refs: list[dict[str, Any]], kind: str) -> bytes:
    """The bytes of the media reference of ``kind`` (``video``, ``steps``)."""
    (ref,) = [r for r in refs if r["kind"] == kind]
    path = media_file(store, ref)
    assert path is not None, ref
    return path.read_bytes()


def clip_frames(data: bytes) -> list[np.ndarray]:
    """Decode a clip with PyAV directly (not through evalband's export)."""
    import av

    with av.open(io.BytesIO(data)) as container:
        return [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]


def steps(data: bytes) -> dict[str, np.ndarray]:
    """A trial's step data with pyarrow directly."""
    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(data))
    return {n: table.column(n).to_numpy(zero_copy_only=False) for n in table.column_names}
