"""Video of episodes, recorded while they are played (``evalband run --record``).

``--record failures`` keeps a clip of every episode that did not succeed, ``all`` of every
episode, ``sample:K`` of K episodes chosen by the run's seed (the same K on every backend and
worker count, and the same K for two policies on one panel, so their clips show the same
conditions). The env must draw frames: it is made with ``render_mode="rgb_array"`` and
:meth:`render` is called after ``reset`` and after every step of a chosen episode.

Frames are encoded in the worker with PyAV (FFmpeg's libraries, shipped in the ``av`` wheel;
the ``video`` extra) and travel back with the record; the driver stores each clip beside the
store by its sha256 (:mod:`evalband.store._media`) and references it from the record's
``extra["media"]``, so a Ray worker on another machine needs no access to the store.
Rendering time is taken out of the episode's ``env_ms``; what filming cost (drawing and
encoding, milliseconds) is kept in ``extra["media_ms"]`` of each filmed episode.
"""

from __future__ import annotations

import hashlib
import io
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np

from evalband.episode import EpisodeRecord, Outcome
from evalband.errors import InvalidParameterError
from evalband.panel import EpisodeSpec

__all__ = ["RecordPlan", "encode_video", "parse_record", "play_recorded", "store_pending_media"]

PENDING = "_media_pending"
"""The ``extra`` key a worker puts encoded clips under until the driver stores them."""


@dataclass(frozen=True)
class RecordPlan:
    """Which episodes to film, and how (picklable: it travels with the run's task).

    Attributes:
        mode: ``"failures"``, ``"all"`` or ``"sample"``.
        keys: for ``sample``, the ``(cell, episode, repeat)`` keys chosen.
        fps: frames per second of the clip (the env's control rate when known).
        codec: ``"h264"`` (MP4) or ``"vp9"`` (WebM).
    """

    mode: str
    keys: frozenset[tuple[str, int, int]] = frozenset()
    fps: float = 10.0
    codec: str = "h264"

    def films(self, spec: EpisodeSpec) -> bool:
        """Whether frames of this episode are captured while it is played."""
        return self.mode != "sample" or spec.key in self.keys

    def keeps(self, record: EpisodeRecord) -> bool:
        """Whether the clip of a captured episode is kept."""
        return self.mode != "failures" or record.outcome is not Outcome.SUCCESS


def parse_record(
    text: str, specs: Sequence[EpisodeSpec], *, seed: int, fps: float | None = None,
    codec: str = "h264",
) -> RecordPlan:
    """Read ``--record``: ``failures``, ``all`` or ``sample:K`` (K episodes of ``specs``).

    The K sampled episodes are those with the smallest ``sha256(seed, cell, episode, repeat)``:
    a pure function of the panel, so reruns, resumes and other policies pick the same ones.

    >>> from evalband.panel import load_panel
    >>> panel = load_panel({"name": "p", "env": "evalband/Coin-v0", "episodes": 10, "seed": 3,
    ...                     "budget": {"steps": 5}})
    >>> plan = parse_record("sample:2", panel.episode_specs(), seed=panel.seed)
    >>> plan.mode, len(plan.keys)
    ('sample', 2)
    >>> parse_record("failures", [], seed=0).mode
    'failures'
    """
    text = text.strip().lower()
    rate = 10.0 if fps is None or not np.isfinite(fps) or fps <= 0 else float(fps)
    if codec not in ("h264", "vp9"):
        raise InvalidParameterError(f"video codec must be h264 or vp9; got {codec!r}")
    if text in ("failures", "all"):
        return RecordPlan(text, fps=rate, codec=codec)
    if text.startswith("sample:"):
        try:
            count = int(text.split(":", 1)[1])
        except ValueError:
            count = -1
        if count >= 0:
            def rank(spec: EpisodeSpec) -> str:
                key = f"{seed}\x1f{spec.cell}\x1f{spec.episode}\x1f{spec.repeat}"
                return hashlib.sha256(key.encode()).hexdigest()

            chosen = sorted(specs, key=rank)[:count]
            return RecordPlan("sample", frozenset(s.key for s in chosen), rate, codec)
    raise InvalidParameterError(
        f"`record` must be failures, all or sample:K (K a whole number); got {text!r}",
        parameters=("record",),
    )


def encode_video(frames: Sequence[np.ndarray], fps: float = 10.0, codec: str = "h264") -> bytes:
    """Encode RGB uint8 frames (all one size) to an MP4 (H.264) or WebM (VP9) file's bytes.

    Odd widths and heights are padded by one pixel (the codecs' 4:2:0 sampling needs even
    sizes).

    >>> clip = encode_video([np.full((32, 32, 3), i * 20, np.uint8) for i in range(8)], fps=5)
    >>> clip[4:8]
    b'ftyp'
    """
    import av

    if not frames:
        raise InvalidParameterError("a video needs at least one frame")
    first = np.asarray(frames[0])
    height, width = first.shape[0] + first.shape[0] % 2, first.shape[1] + first.shape[1] % 2
    container_format, codec_name = ("mp4", "libx264") if codec == "h264" else ("webm", "libvpx-vp9")
    buffer = io.BytesIO()
    rate = Fraction(fps).limit_denominator(1000)
    reformatter = _reformatter(av)
    with av.open(buffer, mode="w", format=container_format) as container:
        stream: Any = container.add_stream(codec_name, rate=rate)  # a video stream
        stream.width, stream.height = width, height
        stream.pix_fmt = "yuv420p"
        stream.thread_count = 1  # small frames: threads cost more than they save
        if codec == "h264":
            stream.options = {"preset": "ultrafast", "tune": "zerolatency", "crf": "28"}
        else:
            stream.options = {"deadline": "realtime", "cpu-used": "8", "crf": "40", "b": "0"}
        for frame in frames:
            image = np.asarray(frame, dtype=np.uint8)[..., :3]
            if image.shape[:2] != (height, width):
                padded = np.zeros((height, width, 3), dtype=np.uint8)
                padded[: image.shape[0], : image.shape[1]] = image
                image = padded
            rgb = av.VideoFrame.from_ndarray(np.ascontiguousarray(image), format="rgb24")
            for packet in stream.encode(reformatter.reformat(rgb, format="yuv420p")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return buffer.getvalue()


_REFORMATTERS: dict[int, Any] = {}


def _reformatter(av: Any) -> Any:
    """One RGB -> YUV converter per thread (it keeps its scaler between frames and clips)."""
    import threading

    from av.video.reformatter import VideoReformatter

    key = threading.get_ident()
    if key not in _REFORMATTERS:
        _REFORMATTERS[key] = VideoReformatter()
    return _REFORMATTERS[key]


MAX_RAW_BYTES = 512 * 1024 * 1024
"""Most bytes of raw frames one episode keeps before encoding; later frames are dropped (and
the record says so in ``extra["media_note"]``)."""


class _Filming:
    """An env seen through a camera: frames after ``reset`` and after every ``step``."""

    def __init__(self, env: Any) -> None:
        self._env = env
        self.frames: list[np.ndarray] = []
        self.render_s = 0.0
        self.raw_bytes = 0
        self.dropped = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)

    def _shoot(self) -> None:
        t0 = time.perf_counter()
        frame = self._env.render()
        if frame is not None:
            image = np.asarray(frame)
            if self.raw_bytes + image.nbytes > MAX_RAW_BYTES:
                self.dropped += 1
            else:
                self.frames.append(image)
                self.raw_bytes += image.nbytes
        self.render_s += time.perf_counter() - t0

    def reset(self, **kwargs: Any) -> Any:
        out = self._env.reset(**kwargs)
        self._shoot()
        return out

    def step(self, action: Any) -> Any:
        out = self._env.step(action)
        self._shoot()
        return out


def _attach_clip(record: EpisodeRecord, frames: list[np.ndarray], plan: RecordPlan,
                 render_s: float) -> EpisodeRecord:
    """Encode a filmed episode's frames and attach the clip (runs on the encoder thread)."""
    encode_s = 0.0
    if plan.keeps(record) and frames:
        t0 = time.perf_counter()
        try:
            data = encode_video(frames, plan.fps, plan.codec)
        except Exception as exc:  # noqa: BLE001 - a clip that fails never fails the run
            record.extra["media_error"] = f"{type(exc).__name__}: {exc}"
        else:
            encode_s = time.perf_counter() - t0
            content_type = "video/mp4" if plan.codec == "h264" else "video/webm"
            record.extra[PENDING] = [
                {"data": data, "content_type": content_type, "frames": len(frames)}
            ]
    # what filming cost this episode: drawing the frames and encoding the clip
    record.extra["media_ms"] = round(1000.0 * (render_s + encode_s), 3)
    return record


def play_recorded(
    task: Any,
    specs: Sequence[EpisodeSpec],
    env: Any,
    policy: Any,
    play: Callable[[Any, Any, EpisodeSpec, Any], EpisodeRecord],
) -> Iterator[EpisodeRecord]:
    """Play ``specs`` one at a time with ``play``, filming the episodes ``task.record`` picks.

    Clips are encoded on one background thread (PyAV releases the GIL while it converts and
    encodes), so the next episode plays meanwhile; records are still yielded in spec order,
    a filmed one once its clip is ready.
    """
    from collections import deque
    from concurrent.futures import Future, ThreadPoolExecutor

    plan: RecordPlan = task.record
    waiting: deque[Future[EpisodeRecord]] = deque()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="evalband-encode") as encoder:
        for spec in specs:
            if not plan.films(spec):
                record = play(env, policy, spec, task)
                done: Future[EpisodeRecord] = Future()
                done.set_result(record)
                waiting.append(done)
            else:
                camera = _Filming(env)
                record = play(camera, policy, spec, task)
                if record.env_ms is not None:
                    record = replace(
                        record, env_ms=max(0.0, record.env_ms - camera.render_s * 1000.0)
                    )
                if camera.dropped:
                    record.extra["media_note"] = (
                        f"the clip stops after {len(camera.frames)} frames: the last "
                        f"{camera.dropped} were over the {MAX_RAW_BYTES >> 20} MiB of raw "
                        "frames one episode may hold"
                    )
                waiting.append(encoder.submit(_attach_clip, record, camera.frames, plan,
                                              camera.render_s))
            while waiting and waiting[0].done():
                yield waiting.popleft().result()
        while waiting:
            yield waiting.popleft().result()


def store_pending_media(store_path: Any, record: EpisodeRecord) -> EpisodeRecord:
    """Store the clips a worker attached to ``record`` and reference them from ``extra``.

    >>> import tempfile
    >>> from evalband.episode import EpisodeRecord
    >>> r = EpisodeRecord(run_id="r", policy="p", panel_fingerprint="f", cell="", episode=0,
    ...                   repeat=0, condition_seed=1, outcome="failure", terminated=True,
    ...                   truncated=False, steps=3,
    ...                   extra={PENDING: [{"data": b"x", "content_type": "video/mp4",
    ...                                     "frames": 4}]})
    >>> stored = store_pending_media(f"{tempfile.mkdtemp()}/s.sqlite", r)
    >>> [(m["kind"], m["content_type"], m["frames"]) for m in stored.media]
    [('video', 'video/mp4', 4)]
    """
    pending = record.extra.get(PENDING)
    if not pending:
        return record
    from evalband.store._media import store_media_bytes

    extra = {k: v for k, v in record.extra.items() if k != PENDING}
    refs = list(extra.get("media", []))
    for clip in pending:
        ref = store_media_bytes(store_path, clip["data"], content_type=clip["content_type"])
        refs.append({**ref, "frames": clip.get("frames")})
    extra["media"] = refs
    return replace(record, extra=extra)
