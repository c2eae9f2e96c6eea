"""Encoding RGB frames to MP4 (H.264) or WebM (VP9) with PyAV, from a list or a stream.

PyAV (FFmpeg's libraries, shipped in the ``av`` wheel; the ``video`` extra) converts each
frame to YUV 4:2:0 and encodes it, holding the GIL for part of the work; a run encodes in a
separate process (:mod:`evalband.run._encproc`, which calls :func:`encode_frames` too) and
falls back to a :class:`ClipStream` thread where it cannot fork. The settings are chosen for
small frames (96x96 is what a panel usually films): one codec thread, ``libx264``'s
``ultrafast`` preset with ``zerolatency`` (no lookahead, no B-frames: every frame is written
as soon as it is given), CRF 28; VP9 in its ``realtime`` mode. Frames are wrapped without a
copy and converted with swscale's fast bilinear chroma filter (a third cheaper than its
default, a grey level apart). At 96x96 a frame costs about 0.15 ms of CPU to convert and
encode; opening a clip (``libx264``'s set-up) about 4 ms.
"""

from __future__ import annotations

import io
import queue
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from evalband.errors import InvalidParameterError

__all__ = ["ClipStream", "encode_frames", "encode_video", "frame_for_encoder"]

QUEUE_FRAMES = 64
"""Frames a :class:`ClipStream` holds before the player waits for the encoder."""

HANDOFF_FRAMES = 8
"""Frames handed to the encoder thread at a time (one wake-up per batch, not per frame)."""


def frame_for_encoder(frame: Any) -> np.ndarray:
    """``frame`` as a C-contiguous ``(H, W, 3)`` uint8 array the player no longer writes to.

    An array the env made for this frame (it owns its memory, as ``render()`` of a Gymnasium
    env returns) passes through without a copy; a view (of a buffer the env may draw the
    next frame into), another dtype or an alpha channel is copied once.

    >>> image = np.zeros((4, 6, 3), np.uint8)
    >>> frame_for_encoder(image) is image
    True
    >>> frame_for_encoder(np.zeros((4, 6, 4), np.uint8)).shape
    (4, 6, 3)
    """
    image = np.asarray(frame)
    if (image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
            and image.flags.c_contiguous and image.flags.owndata):
        return image
    if image.ndim != 3 or image.shape[2] < 3:
        raise InvalidParameterError(
            f"a video frame must be an (H, W, 3) RGB array; got shape {image.shape}"
        )
    return np.array(image[..., :3], dtype=np.uint8, order="C")


def encode_frames(frames: Iterable[np.ndarray], fps: float = 10.0,
                  codec: str = "h264") -> tuple[bytes, int, float]:
    """Encode frames as they come; ``(file bytes, frames, seconds spent encoding)``.

    The seconds count converting and encoding only, not waiting for ``frames`` to yield.
    Odd widths and heights are padded by one pixel (4:2:0 sampling needs even sizes).

    >>> data, count, _ = encode_frames(iter([np.zeros((9, 8, 3), np.uint8)] * 3), fps=5)
    >>> data[4:8], count
    (b'ftyp', 3)
    """
    import av
    from av.video.reformatter import VideoReformatter

    container_format, codec_name = ("mp4", "libx264") if codec == "h264" else ("webm", "libvpx-vp9")
    buffer = io.BytesIO()
    container: Any = None
    stream: Any = None
    reformatter = VideoReformatter()
    count = 0
    spent = 0.0
    height = width = 0
    try:
        for frame in frames:
            t0 = time.perf_counter()
            image = frame_for_encoder(frame)
            if container is None:
                height = image.shape[0] + image.shape[0] % 2
                width = image.shape[1] + image.shape[1] % 2
                # WebM: without bitexact, Matroska writes random segment and track UIDs,
                # so one episode's clip would differ from run to run
                container = av.open(buffer, mode="w", format=container_format,
                                    options={"fflags": "+bitexact"} if codec != "h264" else {})
                rate = Fraction(fps).limit_denominator(1000)
                stream = container.add_stream(codec_name, rate=rate)
                stream.width, stream.height = width, height
                stream.pix_fmt = "yuv420p"
                stream.thread_count = 1  # small frames: threads cost more than they save
                if codec == "h264":
                    stream.options = {"preset": "ultrafast", "tune": "zerolatency", "crf": "28"}
                else:
                    stream.options = {"deadline": "realtime", "cpu-used": "8", "crf": "40",
                                      "b": "0"}
            if image.shape[:2] != (height, width):
                padded = np.zeros((height, width, 3), dtype=np.uint8)
                padded[: image.shape[0], : image.shape[1]] = image[:height, :width]
                image = padded
            # wraps the array without a copy (it is not written to again), then RGB -> YUV
            rgb = av.VideoFrame.from_numpy_buffer(image, format="rgb24")
            yuv = reformatter.reformat(rgb, format="yuv420p", interpolation="FAST_BILINEAR")
            for packet in stream.encode(yuv):
                container.mux(packet)
            count += 1
            spent += time.perf_counter() - t0
        if container is None:
            raise InvalidParameterError("a video needs at least one frame")
        t0 = time.perf_counter()
        for packet in stream.encode():
            container.mux(packet)
        container.close()
        container = None
        spent += time.perf_counter() - t0
    finally:
        if container is not None:
            container.close()
    return buffer.getvalue(), count, spent


def encode_video(frames: Sequence[np.ndarray], fps: float = 10.0, codec: str = "h264") -> bytes:
    """Encode RGB uint8 frames (all one size) to an MP4 (H.264) or WebM (VP9) file's bytes.

    >>> clip = encode_video([np.full((32, 32, 3), i * 20, np.uint8) for i in range(8)], fps=5)
    >>> clip[4:8]
    b'ftyp'
    """
    if not frames:
        raise InvalidParameterError("a video needs at least one frame")
    return encode_frames(frames, fps, codec)[0]


class ClipStream:
    """One clip encoded on a background thread while the episode is played.

    With ``frames`` given, the thread encodes those (a clip decided once the episode ended);
    otherwise :meth:`add` hands each frame over (waiting only when :data:`QUEUE_FRAMES`
    frames are still unencoded); :meth:`finish` closes the clip and returns what
    :func:`encode_frames` does, or raises what encoding raised. An encoder that fails keeps
    taking frames (and drops them), so the player never waits on a dead encoder.

    >>> clip = ClipStream(fps=5.0, codec="h264")
    >>> for i in range(4):
    ...     clip.add(np.full((16, 16, 3), 40 * i, np.uint8))
    >>> data, frames, _ = clip.finish()
    >>> data[4:8], frames
    (b'ftyp', 4)
    """

    def __init__(self, fps: float, codec: str, frames: Sequence[np.ndarray] | None = None) -> None:
        self._given = frames
        self._frames: queue.Queue[list[np.ndarray] | None] = queue.Queue(
            maxsize=max(1, QUEUE_FRAMES // HANDOFF_FRAMES))
        self._batch: list[np.ndarray] = []
        self._result: tuple[bytes, int, float] | None = None
        self._error: BaseException | None = None
        self._closed = frames is not None
        self._thread = threading.Thread(target=self._encode, args=(fps, codec), daemon=True,
                                        name="evalband-encode")
        self._thread.start()

    def _incoming(self) -> Iterator[np.ndarray]:
        if self._given is not None:
            yield from self._given
            return
        while (batch := self._frames.get()) is not None:
            yield from batch

    def _encode(self, fps: float, codec: str) -> None:
        frames = self._incoming()
        try:
            self._result = encode_frames(frames, fps, codec)
        except BaseException as exc:  # noqa: BLE001 - handed to finish(); never lost
            self._error = exc
            for _ in frames:  # keep draining until the player says the clip is over
                pass

    @property
    def done(self) -> bool:
        """Whether the clip is closed and encoded (so :meth:`finish` returns at once)."""
        return self._closed and not self._thread.is_alive()

    def add(self, frame: np.ndarray) -> None:
        """Queue one frame (already :func:`frame_for_encoder`-safe) for encoding."""
        self._batch.append(frame)
        if len(self._batch) >= HANDOFF_FRAMES:
            self._frames.put(self._batch)
            self._batch = []

    def close(self) -> None:
        """End the clip without waiting for it (idempotent)."""
        if not self._closed:
            self._closed = True
            if self._batch:
                self._frames.put(self._batch)
                self._batch = []
            self._frames.put(None)

    def wait(self) -> None:
        """End the clip and wait until it is encoded (or failed); never raises."""
        self.close()
        self._thread.join()

    def finish(self) -> tuple[bytes, int, float]:
        """End the clip and wait for its bytes: ``(file bytes, frames, encoding seconds)``."""
        self.wait()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result
