"""Run policies on panels: the runner, its backends, and the Recorder for your own loops.

Names load on first use, so a worker process that imports ``evalband.run._execute`` to play
episodes does not import the runner's analysis (and ``scipy.stats``) with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalband._util.imports import lazy_attributes

if TYPE_CHECKING:
    from evalband.run._backends import (
        BACKENDS,
        Backend,
        ProcessBackend,
        SerialBackend,
        get_backend,
    )
    from evalband.run._check import check_env
    from evalband.run._encode import ClipStream, encode_frames, frame_for_encoder
    from evalband.run._execute import RunTask, execute_chunk
    from evalband.run._pool import prestart, worker_init
    from evalband.run._ray import RayBackend
    from evalband.run._recorder import Recorder
    from evalband.run._runner import default_run_id, run_panel
    from evalband.run._until import run_both_until_decided, run_until_decided
    from evalband.run._video import parse_record_size

__all__ = [
    "BACKENDS",
    "Backend",
    "ProcessBackend",
    "SerialBackend",
    "RayBackend",
    "get_backend",
    "RunTask",
    "execute_chunk",
    "Recorder",
    "default_run_id",
    "run_panel",
    "check_env",
    "ClipStream",
    "encode_frames",
    "frame_for_encoder",
    "prestart",
    "worker_init",
    "run_both_until_decided",
    "run_until_decided",
    "parse_record_size",
]

_LAZY = {
    "BACKENDS": "evalband.run._backends",
    "Backend": "evalband.run._backends",
    "ProcessBackend": "evalband.run._backends",
    "SerialBackend": "evalband.run._backends",
    "RayBackend": "evalband.run._ray",
    "get_backend": "evalband.run._backends",
    "RunTask": "evalband.run._execute",
    "execute_chunk": "evalband.run._execute",
    "Recorder": "evalband.run._recorder",
    "default_run_id": "evalband.run._runner",
    "run_panel": "evalband.run._runner",
    "check_env": "evalband.run._check",
    "ClipStream": "evalband.run._encode",
    "encode_frames": "evalband.run._encode",
    "frame_for_encoder": "evalband.run._encode",
    "prestart": "evalband.run._pool",
    "worker_init": "evalband.run._pool",
    "run_both_until_decided": "evalband.run._until",
    "run_until_decided": "evalband.run._until",
    "parse_record_size": "evalband.run._video",
}

__getattr__ = lazy_attributes(__name__, _LAZY)
