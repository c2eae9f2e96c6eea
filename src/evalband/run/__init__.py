"""Run policies on panels: the runner, its backends, and the Recorder for your own loops."""

from evalband.run._backends import BACKENDS, Backend, ProcessBackend, SerialBackend, get_backend
from evalband.run._execute import RunTask, execute_chunk
from evalband.run._recorder import Recorder
from evalband.run._runner import default_run_id, run_panel

__all__ = [
    "BACKENDS",
    "Backend",
    "ProcessBackend",
    "SerialBackend",
    "get_backend",
    "RunTask",
    "execute_chunk",
    "Recorder",
    "default_run_id",
    "run_panel",
]
