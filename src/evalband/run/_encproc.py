"""Encoding clips in a separate process, so the thread that plays episodes keeps its core.

A serial run plays on one core. Encoding on a thread of the same process shares the GIL with
it (PyAV holds the GIL for part of each frame's conversion and encoding), so filming slowed
the playing thread even with a second core free. An :class:`EncoderProcess` is a child
process forked when the first filmed episode of a chunk starts; raw ``uint8`` frames go to it
over a pipe (``multiprocessing.Pipe``: one ``send_bytes`` of a small header and the pixels per
frame, 27 KB at 96x96), and the finished clip's bytes come back. The child runs the same
:func:`~evalband.run._encode.encode_frames` as the thread, so clips are byte-identical
whichever encodes them.

In the parent, one sender thread writes the frames (the playing thread only queues them, and
waits only when :data:`~evalband.run._encode.QUEUE_FRAMES` frames are still unsent) and one
reader thread collects the clips. Clips are encoded in the order they were opened, one at a
time. A child that fails to encode a clip reports the error and goes on with the next; a
child that dies fails its unfinished clips (never the run) and the player never waits on it.

The child ignores ``SIGINT`` (Ctrl-C reaches the whole process group; the parent decides),
exits when told or when the pipe closes (the parent ended), and :meth:`EncoderProcess.close`
joins it, terminating it if it does not end within :data:`STOP_TIMEOUT_S`. A process that
cannot fork (no ``fork`` start method, a daemonic worker, a Ray worker) encodes on a thread
(:func:`encoder_mode`).
"""

from __future__ import annotations

import os
import pickle
import queue
import signal
import struct
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from evalband.run import _encode

__all__ = ["MODE", "EncoderProcess", "ProcessClip", "encoder_mode"]

MODE = os.environ.get("EVALBAND_VIDEO_ENCODER", "process")
"""``process`` (the default: a child process encodes) or ``thread`` (a thread of the player's
process); from the ``EVALBAND_VIDEO_ENCODER`` environment variable."""

STOP_TIMEOUT_S = 5.0
"""Seconds :meth:`EncoderProcess.close` waits for the child before terminating it."""

_OPEN, _FRAME, _CLOSE, _STOP = b"O", b"F", b"C", b"S"
_OPEN_HEAD = struct.Struct("<Id")  # clip id, fps (then the codec's name)
_FRAME_HEAD = struct.Struct("<HH")  # height, width (then height * width * 3 bytes)


def encoder_mode() -> str:
    """``"process"`` when clips can be encoded in a child process here, else ``"thread"``.

    >>> encoder_mode() in ("process", "thread")
    True
    """
    import multiprocessing

    if MODE != "process" or "fork" not in multiprocessing.get_all_start_methods():
        return "thread"
    if multiprocessing.current_process().daemon:  # such processes may not have children
        return "thread"
    ray = sys.modules.get("ray")
    if ray is not None and getattr(ray, "is_initialized", lambda: False)():
        return "thread"  # forking a Ray worker (gRPC threads) is not supported by Ray
    return "thread" if _FORK_BROKEN else "process"


_FORK_BROKEN = False  # set once a fork failed in this process: later chunks use a thread


class _Stopped(Exception):
    """The parent said stop (or went away) in the middle of a clip."""


def _frames(conn: Any) -> Iterator[np.ndarray]:
    while True:
        try:
            msg = conn.recv_bytes()
        except (EOFError, OSError) as exc:
            raise _Stopped from exc
        tag = msg[:1]
        if tag == _CLOSE:
            return
        if tag != _FRAME:
            raise _Stopped
        height, width = _FRAME_HEAD.unpack_from(msg, 1)
        yield np.frombuffer(msg, np.uint8, offset=1 + _FRAME_HEAD.size).reshape(height, width, 3)


def _serve(conn: Any, parent_end: Any) -> None:  # pragma: no cover - runs in the child
    """The child: encode clips as their frames come, send back each one's result."""
    parent_end.close()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        while True:
            msg = conn.recv_bytes()
            if msg[:1] != _OPEN:
                return
            clip, fps = _OPEN_HEAD.unpack_from(msg, 1)
            codec = msg[1 + _OPEN_HEAD.size:].decode()
            frames = _frames(conn)
            reply: tuple[Any, ...]
            try:
                reply = ("done", clip, _encode.encode_frames(frames, fps, codec))
            except _Stopped:
                return
            except Exception as exc:  # noqa: BLE001 - reported to the parent, clip by clip
                try:
                    for _ in frames:  # the rest of this clip's frames
                        pass
                except _Stopped:
                    return
                try:
                    pickle.dumps(exc)
                except Exception:  # noqa: BLE001 - an exception that does not pickle
                    exc = RuntimeError(f"{type(exc).__name__}: {exc}")
                reply = ("error", clip, exc)
            conn.send(reply)
    except (EOFError, OSError):
        return
    finally:
        conn.close()


class EncoderProcess:
    """A child process that encodes clips (see the module's description).

    >>> encoder = EncoderProcess()
    >>> clip = ProcessClip(encoder, fps=5.0, codec="h264")
    >>> for i in range(3):
    ...     clip.add(np.full((16, 16, 3), 60 * i, np.uint8))
    >>> data, frames, _ = clip.finish()
    >>> encoder.close()
    >>> data[4:8], frames, encoder.alive
    (b'ftyp', 3, False)
    """

    def __init__(self) -> None:
        import multiprocessing

        import av  # noqa: F401 - imported once here, so the forked child need not

        context = multiprocessing.get_context("fork")
        self._conn, child_end = context.Pipe(duplex=True)
        self._process = context.Process(target=_serve, args=(child_end, self._conn),
                                        name="evalband-encoder", daemon=True)
        try:
            self._process.start()
        except BaseException:
            self._conn.close()
            raise
        finally:
            child_end.close()
        self.pid = self._process.pid
        self._outbox: queue.Queue[list[bytes | np.ndarray] | None] = queue.Queue(
            maxsize=max(1, _encode.QUEUE_FRAMES // _encode.HANDOFF_FRAMES))
        self._results: dict[int, tuple[str, Any]] = {}
        self._ready = threading.Condition()
        self._ended: str | None = None
        self._next = 0
        self._closed = False
        self._sender = threading.Thread(target=self._send, name="evalband-encoder-send",
                                        daemon=True)
        self._reader = threading.Thread(target=self._read, name="evalband-encoder-read",
                                        daemon=True)
        self._sender.start()
        self._reader.start()

    @property
    def alive(self) -> bool:
        """Whether the child process is running."""
        return self._process.is_alive()

    def _send(self) -> None:
        broken = False
        while (batch := self._outbox.get()) is not None:
            if broken:
                continue  # keep draining: the player never waits on a dead encoder
            try:
                for msg in batch:
                    self._conn.send_bytes(
                        _frame_message(msg) if isinstance(msg, np.ndarray) else msg)
            except (OSError, ValueError):
                broken = True
        if not broken:
            try:
                self._conn.send_bytes(_STOP)
            except (OSError, ValueError):
                pass

    def _read(self) -> None:
        try:
            while True:
                kind, clip, value = self._conn.recv()
                with self._ready:
                    self._results[clip] = (kind, value)
                    self._ready.notify_all()
        except (EOFError, OSError, ValueError):
            pass
        with self._ready:
            self._ended = "the encoder process ended before the clip was encoded"
            self._ready.notify_all()

    def post(self, messages: list[bytes | np.ndarray]) -> None:
        """Queue messages (bytes, or frames to send as such) for the child.

        Waits while :data:`~evalband.run._encode.QUEUE_FRAMES` frames' worth of batches are
        still unsent.
        """
        self._outbox.put(messages)

    def open(self, fps: float, codec: str) -> int:
        """Start a clip; returns its id (clips are encoded in the order they are opened)."""
        clip = self._next
        self._next += 1
        self.post([_OPEN + _OPEN_HEAD.pack(clip, fps) + codec.encode()])
        return clip

    def ready(self, clip: int) -> bool:
        """Whether the clip's result (or the child's end) is in."""
        with self._ready:
            return clip in self._results or self._ended is not None

    def wait(self, clip: int) -> None:
        """Wait until the clip's result (or the child's end) is in."""
        with self._ready:
            while clip not in self._results and self._ended is None:
                self._ready.wait()

    def result(self, clip: int) -> tuple[str, Any]:
        """Wait for a clip: ``("done", (bytes, frames, seconds))`` or ``("error", exception)``."""
        self.wait(clip)
        with self._ready:
            if clip in self._results:
                return self._results.pop(clip)
            return "error", RuntimeError(self._ended)

    def close(self) -> None:
        """Stop the child (after the clips already sent) and wait for it; idempotent."""
        if self._closed:
            return
        self._closed = True
        self._outbox.put(None)
        self._sender.join(STOP_TIMEOUT_S)
        self._process.join(STOP_TIMEOUT_S)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(STOP_TIMEOUT_S)
            if self._process.is_alive():  # pragma: no cover - SIGTERM ignored
                self._process.kill()
                self._process.join()
        self._conn.close()
        self._reader.join(STOP_TIMEOUT_S)


def _frame_message(frame: np.ndarray) -> bytes:
    height, width = frame.shape[:2]
    return b"".join((_FRAME, _FRAME_HEAD.pack(height, width), frame.data))


class ProcessClip:
    """One clip encoded by an :class:`EncoderProcess`, used as a :class:`ClipStream` is.

    The same methods (``add``, ``close``, ``wait``, ``finish``, ``done``). With ``frames``
    given, they are queued as one batch (a clip decided once the episode ended: the player
    does not wait for them to be sent); otherwise :meth:`add` queues each frame,
    :data:`~evalband.run._encode.HANDOFF_FRAMES` at a time. The sender thread turns each frame
    into a message (a header and the pixels).
    """

    def __init__(self, encoder: EncoderProcess, fps: float, codec: str,
                 frames: Sequence[np.ndarray] | None = None) -> None:
        self._encoder = encoder
        self._clip = encoder.open(fps, codec)
        self._batch: list[bytes | np.ndarray] = []
        self._closed = False
        self._taken: tuple[str, Any] | None = None
        if frames is not None:  # held frames: one batch, so the player does not wait
            self._batch = list(frames)
            self.close()

    @property
    def done(self) -> bool:
        """Whether the clip is closed and encoded (so :meth:`finish` returns at once)."""
        return self._closed and (self._taken is not None or self._encoder.ready(self._clip))

    def add(self, frame: np.ndarray) -> None:
        """Queue one frame (already :func:`~evalband.run._encode.frame_for_encoder`-safe)."""
        self._batch.append(frame)
        if len(self._batch) >= _encode.HANDOFF_FRAMES:
            self._encoder.post(self._batch)
            self._batch = []

    def close(self) -> None:
        """End the clip without waiting for it (idempotent)."""
        if not self._closed:
            self._closed = True
            self._batch.append(_CLOSE)
            self._encoder.post(self._batch)
            self._batch = []

    def wait(self) -> None:
        """End the clip and wait until it is encoded (or failed); never raises."""
        self.close()
        if self._taken is None:
            self._encoder.wait(self._clip)

    def finish(self) -> tuple[bytes, int, float]:
        """End the clip and wait for its bytes: ``(file bytes, frames, encoding seconds)``."""
        self.close()
        if self._taken is None:
            self._taken = self._encoder.result(self._clip)
        kind, value = self._taken
        if kind == "error":
            raise value
        data, frames, spent = value
        return bytes(data), int(frames), float(spent)
