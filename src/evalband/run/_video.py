"""Video of episodes, recorded while they are played (``evalband run --record``).

``--record failures`` keeps a clip of every episode that did not succeed, ``all`` of every
episode, ``sample:K`` of K episodes chosen by the run's seed (the same K on every backend and
worker count, and the same K for two policies on one panel, so their clips show the same
conditions). The env must draw frames: it is made with ``render_mode="rgb_array"`` and
:meth:`render` is called after ``reset`` and after every step of a chosen episode.

Frames are encoded in the worker with PyAV (FFmpeg's libraries, shipped in the ``av`` wheel;
the ``video`` extra), by an encoder process the worker forks for its chunk
(:mod:`evalband.run._encproc`) or, where it cannot fork, on a thread. The clip travels back
with the record; the driver stores each clip beside the store by its sha256
(:mod:`evalband.store._media`) and references it from the record's ``extra["media"]``, so a
Ray worker on another machine needs no access to the store. Rendering time is taken out of
the episode's ``env_ms``; what filming cost (drawing and encoding, milliseconds) is kept in
``extra["media_ms"]`` of each filmed episode.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from evalband.episode import EpisodeRecord, Outcome
from evalband.errors import InvalidParameterError
from evalband.panel import EpisodeSpec
from evalband.run._encode import ClipStream, encode_video, frame_for_encoder

if TYPE_CHECKING:
    from evalband.run._encproc import EncoderProcess, ProcessClip
    from evalband.run._worker import Worker

__all__ = ["RecordPlan", "check_recording", "encode_video", "parse_record", "parse_record_size",
           "play_recorded", "record_kwargs", "resize_frame", "store_pending_media"]

# encode_video lives in evalband.run._encode; re-exported here, where clips are made

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
        resize: ``(width, height)`` each frame is resized to (``--record-size`` for an env
            whose renderer takes no size); ``None`` keeps the env's frames.
    """

    mode: str
    keys: frozenset[tuple[str, int, int]] = frozenset()
    fps: float = 10.0
    codec: str = "h264"
    resize: tuple[int, int] | None = None

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


def resize_frame(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``image`` resized to ``size = (width, height)`` (nearest pixel: no filtering library).

    >>> resize_frame(np.arange(16, dtype=np.uint8).reshape(2, 2, 4)[..., :3], (4, 2)).shape
    (2, 4, 3)
    """
    width, height = size
    rows = (np.arange(height) * image.shape[0]) // height
    cols = (np.arange(width) * image.shape[1]) // width
    return np.ascontiguousarray(image[rows][:, cols])


def parse_record_size(text: str) -> tuple[int, int]:
    """Read ``--record-size``: ``WxH`` or ``N`` (``N x N``), each 16..4096 pixels.

    >>> parse_record_size("320x240"), parse_record_size("128")
    ((320, 240), (128, 128))
    """
    parts = text.strip().lower().split("x")
    try:
        values = [int(part) for part in parts]
    except ValueError:
        values = []
    if len(values) == 1:
        values = values * 2
    if len(values) != 2 or not all(16 <= v <= 4096 for v in values):
        raise InvalidParameterError(
            f"`record_size` must be WxH or N, in pixels from 16 to 4096; got {text!r}",
            parameters=("record_size",))
    return values[0], values[1]


_SIZE_KWARGS = (("width", "height"), ("visualization_width", "visualization_height"))
"""Constructor arguments that size an env's rendered frames: gymnasium's MuJoCo and Fetch envs
(``width``, ``height``), gym-pusht and gym-aloha (``visualization_*``)."""


def record_kwargs(env: str, size: tuple[int, int] | None) -> tuple[dict[str, Any], bool]:
    """What the env is built with to film it, and whether its frames must be resized.

    ``render_mode="rgb_array"``, and with ``size`` the renderer's own size arguments where
    its constructor takes them (directly, or through ``**kwargs`` to a base class, as
    gymnasium's MuJoCo envs do), else ``resize`` (frames are resized as they are drawn).

    Raises:
        InvalidParameterError: the env class neither takes ``render_mode`` nor lists
            ``rgb_array`` in ``metadata["render_modes"]``.
    """
    from evalband.envs._resolve import env_class, passes_kwarg

    cls = env_class(env)
    kwargs: dict[str, Any] = {"render_mode": "rgb_array"}
    if cls is not None:
        modes = (getattr(cls, "metadata", None) or {}).get("render_modes") or ()
        if not passes_kwarg(cls, "render_mode") and "rgb_array" not in modes:
            raise InvalidParameterError(
                f"`record` needs frames, but env {env} takes no render_mode and lists no "
                "rgb_array render mode; record an env that draws rgb_array frames "
                "(evalband/PushT-v0 does), or drop `record`", parameters=("record",))
    if size is None:
        return kwargs, False
    for names in _SIZE_KWARGS:
        if cls is not None and all(passes_kwarg(cls, name) for name in names):
            kwargs.update(zip(names, size, strict=True))
            return kwargs, False
    if cls is not None and size[0] == size[1] and passes_kwarg(cls, "render_size"):
        kwargs["render_size"] = size[0]  # evalband's PushT: square frames
        return kwargs, False
    return kwargs, True


def check_recording(env: str, kwargs: dict[str, Any], task_kwargs: dict[str, Any]) -> None:
    """Film one frame before the run starts: PyAV is there, and the env draws frames.

    A missing ``av`` (the ``video`` extra), an env whose ``render()`` gives no RGB frame and
    one that cannot render here (no display: ``MUJOCO_GL``) are each one line, before the
    first episode is played or anything is stored.
    """
    try:
        import av  # noqa: F401
    except ModuleNotFoundError:
        raise InvalidParameterError(
            "`record` encodes clips with PyAV, which is not installed in this environment; "
            "install the extra: pip install 'evalband[video]'", parameters=("record",)
        ) from None
    from evalband.envs import make_env
    from evalband.envs._resolve import close_env, render_hint

    built: Any = None
    try:
        built = make_env(env, {**task_kwargs, **kwargs})
        built.reset(seed=0)
        frame = built.render()
        shape = getattr(frame, "shape", None)
        if shape is None or len(shape) != 3 or shape[2] < 3:
            raise InvalidParameterError(
                f"`record` needs frames, but env {env} with render_mode='rgb_array' draws "
                f"{'none' if frame is None else type(frame).__name__ + ' ' + str(shape)} "
                "(an (H, W, 3) array is needed); drop `record`", parameters=("record",))
    except InvalidParameterError:
        raise
    except Exception as exc:  # noqa: BLE001 - an env that cannot draw here: one line
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise InvalidParameterError(
            f"`record` needs frames, but env {env} cannot draw one here: "
            f"{type(exc).__name__}: {first}{render_hint(str(exc))}", parameters=("record",)
        ) from None
    finally:
        if built is not None:
            close_env(built)


MAX_RAW_BYTES = 512 * 1024 * 1024
"""Most bytes of raw frames one clip takes; later frames are dropped (and the record says so
in ``extra["media_note"]``). With ``failures`` they are held until the episode ends."""

MAX_OPEN_CLIPS = 2
"""Clips still encoding before the player waits for the oldest (bounds memory and threads)."""


class _Clips:
    """Where a chunk's clips are encoded.

    One encoder process, forked when the first filmed episode starts
    (:mod:`evalband.run._encproc`), or a thread per clip where a process cannot fork (or
    with ``EVALBAND_VIDEO_ENCODER=thread``). Either way the clip's bytes are the same.
    """

    def __init__(self) -> None:
        self.encoder: EncoderProcess | None = None
        self._mode: str | None = None

    def new(self, plan: RecordPlan,
            frames: Sequence[np.ndarray] | None = None) -> ClipStream | ProcessClip:
        from evalband.run import _encproc

        if self._mode is None:
            self._mode = _encproc.encoder_mode()
            if self._mode == "process":
                try:
                    self.encoder = _encproc.EncoderProcess()
                except (OSError, ValueError, AssertionError):  # cannot fork here: a thread
                    _encproc._FORK_BROKEN = True
                    self._mode = "thread"
        if self.encoder is not None:
            return _encproc.ProcessClip(self.encoder, plan.fps, plan.codec, frames)
        return ClipStream(plan.fps, plan.codec, frames)

    def close(self) -> None:
        """Stop the encoder process, if one was started (idempotent)."""
        if self.encoder is not None:
            self.encoder.close()


class _Camera:
    """An env seen through a camera: frames after ``reset`` and after every ``step``.

    One camera per env, reused across episodes; it films only between :meth:`start` and
    :meth:`stop`. Frames go to a :class:`ClipStream` as they are drawn (``sample``, ``all``:
    the clip is kept whatever happens) or into a list (``failures``: kept only if the episode
    fails, so it is encoded once the outcome is known).
    """

    def __init__(self, env: Any, clips: _Clips,
                 resize: tuple[int, int] | None = None) -> None:
        self._env = env
        self._clips = clips
        self.resize = resize
        self.stream: ClipStream | ProcessClip | None = None
        self.held: list[np.ndarray] | None = None
        self.render_s = 0.0
        self.raw_bytes = 0
        self.frames = 0
        self.dropped = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)

    def start(self, plan: RecordPlan) -> None:
        self.render_s, self.raw_bytes, self.frames, self.dropped = 0.0, 0, 0, 0
        if plan.mode == "failures":
            self.held = []
        else:
            self.stream = self._clips.new(plan)

    def stop(self) -> tuple[ClipStream | ProcessClip | None, list[np.ndarray] | None]:
        stream, held = self.stream, self.held
        self.stream = self.held = None
        if stream is not None:
            stream.close()
        return stream, held

    def _shoot(self) -> None:
        t0 = time.perf_counter()
        frame = self._env.render()
        if frame is not None:
            image = frame_for_encoder(frame)
            if self.resize is not None and image.shape[:2] != self.resize[::-1]:
                image = resize_frame(image, self.resize)
            if self.raw_bytes + image.nbytes > MAX_RAW_BYTES:
                self.dropped += 1
            else:
                self.raw_bytes += image.nbytes
                self.frames += 1
                if self.stream is not None:
                    self.stream.add(image)
                elif self.held is not None:
                    self.held.append(image)
        self.render_s += time.perf_counter() - t0

    def reset(self, **kwargs: Any) -> Any:
        out = self._env.reset(**kwargs)
        self._shoot()
        return out

    def step(self, action: Any) -> Any:
        out = self._env.step(action)
        self._shoot()
        return out


class _Filmed:
    """A filmed episode's record waiting for its clip."""

    def __init__(self, record: EpisodeRecord, plan: RecordPlan,
                 clip: ClipStream | ProcessClip | None, render_s: float | None) -> None:
        self.record, self.plan, self.clip, self.render_s = record, plan, clip, render_s

    @property
    def done(self) -> bool:
        return self.clip is None or self.clip.done

    def result(self) -> EpisodeRecord:
        """The record with its encoded clip attached (``extra[PENDING]``) and its cost."""
        record, encode_s = self.record, 0.0
        if self.render_s is None:  # not filmed
            return record
        if self.clip is not None:
            try:
                data, frames, encode_s = self.clip.finish()
            except Exception as exc:  # noqa: BLE001 - a clip that fails never fails the run
                record.extra["media_error"] = f"{type(exc).__name__}: {exc}"
            else:
                content_type = "video/mp4" if self.plan.codec == "h264" else "video/webm"
                record.extra[PENDING] = [
                    *record.extra.get(PENDING, ()),  # the episode's step data, if kept
                    {"data": data, "content_type": content_type, "frames": frames},
                ]
        # what filming cost this episode: drawing the frames and encoding the clip
        record.extra["media_ms"] = round(1000.0 * (self.render_s + encode_s), 3)
        return record


def play_recorded(
    task: Any,
    specs: Sequence[EpisodeSpec],
    env: Any,
    policy: Any,
    worker: Worker,
    play: Callable[[Any, Any, EpisodeSpec, Any, Worker], EpisodeRecord],
) -> Iterator[EpisodeRecord]:
    """Play ``specs`` one at a time with ``play``, filming the episodes ``task.record`` picks.

    Only those episodes call ``render()``: ``sample:K`` and ``all`` know before an episode
    starts that its clip is kept, and stream its frames to the encoder while it is played;
    ``failures`` cannot know, so it draws every episode and hands the failed ones' frames
    to the encoder once the outcome is known. The encoder (:class:`_Clips`) is a child
    process forked when the first filmed episode starts and stopped when the chunk ends,
    also on an error or ``KeyboardInterrupt``. Records are yielded in spec
    order, a filmed one once its clip is ready.
    """
    from collections import deque

    plan: RecordPlan = task.record
    waiting: deque[_Filmed] = deque()
    cameras: dict[int, _Camera] = {}
    clips = _Clips()
    try:
        for spec in specs:
            played = worker.task_env(task, env, spec)
            if not plan.films(spec):
                waiting.append(_Filmed(play(played, policy, spec, task, worker), plan, None, None))
            else:
                camera = cameras.get(id(played))
                if camera is None or camera._env is not played:
                    camera = cameras[id(played)] = _Camera(played, clips, plan.resize)
                camera.start(plan)
                try:
                    record = play(camera, policy, spec, task, worker)
                finally:
                    stream, held = camera.stop()
                if record.env_ms is not None:
                    record = replace(
                        record, env_ms=max(0.0, record.env_ms - camera.render_s * 1000.0)
                    )
                if camera.dropped:
                    record.extra["media_note"] = (
                        f"the clip stops after {camera.frames} frames: the last "
                        f"{camera.dropped} were over the {MAX_RAW_BYTES >> 20} MiB of raw "
                        "frames one episode may hold"
                    )
                if held is not None and held and plan.keeps(record):
                    stream = clips.new(plan, held)
                waiting.append(_Filmed(record, plan, stream, camera.render_s))
                if sum(1 for w in waiting if not w.done) > MAX_OPEN_CLIPS:
                    oldest = next(w.clip for w in waiting if not w.done)
                    if oldest is not None:
                        oldest.wait()
            while waiting and waiting[0].done:
                yield waiting.popleft().result()
        while waiting:
            yield waiting.popleft().result()
    finally:
        for filmed in waiting:  # an interrupted run: let the encoder threads or process end
            if filmed.clip is not None:
                filmed.clip.close()
        clips.close()


def store_pending_media(store_path: Any, record: EpisodeRecord) -> EpisodeRecord:
    """Store the clips and step data a worker attached to ``record``; reference them.

    Clips go to ``extra["media"]``, step data (:mod:`evalband.run._steps`) to
    ``extra["step_data"]``.

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
    from evalband.store._steps import STEPS_KEY

    extra = {k: v for k, v in record.extra.items() if k != PENDING}
    refs = list(extra.get("media", []))
    for item in pending:
        kind = item.get("kind", "video")
        # durable before the record's commit: the runner calls sync_media() first
        ref = store_media_bytes(store_path, item["data"], content_type=item["content_type"],
                                kind=kind, background=True)
        if kind == "steps":  # step data (evalband.run._steps): its own reference
            extra[STEPS_KEY] = {**ref, "steps": item.get("steps")}
        else:
            refs.append({**ref, "frames": item.get("frames")})
    if refs:
        extra["media"] = refs
    return replace(record, extra=extra)
