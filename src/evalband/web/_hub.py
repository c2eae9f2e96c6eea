"""The console's hub: one thread drives the session machine; pages and the terminal watch it.

:class:`Console` owns a :class:`~evalband.session.SessionMachine` and does every call on it
(and so every robot read and store write) in one worker thread, in order. Pages and the
terminal hand it events with :meth:`Console.act`; it answers each with the session's state
*after* the event, so a confirmed score is in the store (the machine's ``confirm`` is durable
before it returns) before any page is told of the next trial. Every change of state is
pushed to every subscriber (the pages' WebSockets, the terminal) as a snapshot with a
revision number.

One source of truth, whoever drives it:

* an event carries the revision its page last saw; an event made on an older revision is
  refused (409) with the present state, so two open pages never score one trial twice, nor
  undo two trials for one tap: the second page sees the trial scored;
* ``next`` (stage, then run: the robot moves) runs in the worker; while it runs the worker
  reads no events but ``capture`` and ``abort``, which go straight to the machine's
  thread-safe queue (the control loop takes them before its next step), and pages stay
  responsive: the loop's ``poll`` hook publishes the state and the camera's latest frame;
* a reload asks for the snapshot again: it is the machine's state (phase, chosen score,
  flags), so the page resumes exactly where the session is.

Camera frames are taken in the worker at no more than ``fps`` while some page watches, and
encoded (JPEG, at most ``max_width`` wide) with their alignment number in a second thread,
so the control loop only hands over a reference. A page acknowledges each frame it drew;
at most two are in flight per page, and a newer frame replaces one not yet sent, so a slow
phone gets fewer frames, never older ones.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from evalband.errors import EvalbandError, InvalidInputError
from evalband.web._frames import alignment, check_region, encode_jpeg, fit_width, frame_message

if TYPE_CHECKING:
    from evalband.session import SessionMachine

__all__ = ["ACTIONS", "Console", "Subscriber"]

ACTIONS = ("next", "score", "confirm", "skip", "undo", "assist", "note", "region", "capture",
           "abort")
"""The events a page or the terminal may send (``capture``/``abort`` while the robot moves)."""

_MOVING = ("staging", "running", "stress", "returning")
_REFRESH_S = 0.1  # the state is re-read at most this often while the robot moves
_IN_FLIGHT = 2


class Subscriber(Protocol):
    """What watches a console: a page's WebSocket, the terminal."""

    wants_frames: bool

    def push_state(self, snapshot: dict[str, Any]) -> None:
        """A new snapshot (called from the console's threads; must not block)."""

    def push_frame(self, data: bytes) -> None:
        """A camera frame message (:func:`~evalband.web._frames.frame_message`)."""

    def close(self) -> None:
        """The console is closing."""


@dataclass
class _Job:
    action: str
    args: dict[str, Any]
    rev: int | None
    future: concurrent.futures.Future[dict[str, Any]] = field(
        default_factory=concurrent.futures.Future)


class Console:
    """A robot session's console (see the module docstring).

    Args:
        machine: the session machine (not started: :meth:`start` starts it in the worker).
        fps: the most camera frames per second sent to a page.
        max_width: frames wider than this are scaled down before they are sent.
        jpeg_quality: JPEG quality of the frames (1-95).
        unattended: play and accept every suggestion by itself (``--operator suggested``).
    """

    def __init__(self, machine: SessionMachine, *, fps: float = 15.0, max_width: int = 640,
                 jpeg_quality: int = 80, unattended: bool = False) -> None:
        if not 0 < fps <= 60:
            raise InvalidInputError(f"`fps` must be in (0, 60]; got {fps!r}")
        self.machine = machine
        self.plan = machine.plan
        self.fps = float(fps)
        self.max_width = int(max_width)
        self.jpeg_quality = int(jpeg_quality)
        self.unattended = unattended
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._subs: list[Subscriber] = []
        self._rev = 0
        self._published: dict[str, Any] | None = None
        self._snapshot: dict[str, Any] = {}
        self._busy = False
        self._ack: concurrent.futures.Future[dict[str, Any]] | None = None
        self._stop = threading.Event()
        self._last_refresh = 0.0
        self._last_phase = ""
        self._next_frame = 0.0
        self._seq = 0
        self._session: dict[str, Any] = {}
        self._references: dict[int, Path | None] = {}
        self._regions: dict[int, tuple[float, float, float, float] | None] = {}
        self._ref_arrays: dict[int, np.ndarray | None] = {}
        self._mailbox: tuple[np.ndarray, float, int | None, int] | None = None
        self._frame_ready = threading.Event()
        self._sent: dict[int, float] = {}
        self.latencies_ms: deque[float] = deque(maxlen=512)
        """Frame taken -> drawn in a page (acknowledged), milliseconds, newest last."""
        self.last_frame: dict[str, Any] | None = None
        """The header of the last frame encoded (seq, time, scene, alignment)."""
        self._secrets = self._blind_secrets()
        self._worker = threading.Thread(target=self._run, daemon=True,
                                        name="evalband-console")
        self._encoder = threading.Thread(target=self._encode_loop, daemon=True,
                                         name="evalband-console-frames")
        self._started = False

    # -- life ----------------------------------------------------------------------------

    def start(self) -> dict[str, Any]:
        """Start the machine in the worker (connect, load policies); the first snapshot.

        Raises:
            EvalbandError: the machine could not start (the robot does not connect, a policy
                does not resolve): one line, nothing stored.
        """
        if self._started:
            return self.snapshot
        self._started = True
        self._worker.start()
        self._encoder.start()
        result = self._submit("_start", {}, None).result()
        if not result["ok"]:
            self.close()
            raise result["exception"]
        return self.snapshot

    def close(self) -> None:
        """Abort a moving trial, disconnect the robot, close the policies; stop the threads."""
        if self._stop.is_set():
            return
        if self._busy:
            self.machine.abort()
        self._jobs.put(None)
        self._stop.set()
        self._frame_ready.set()
        if self._worker.is_alive() and threading.current_thread() is not self._worker:
            self._worker.join(timeout=30)
        if self._encoder.is_alive():
            self._encoder.join(timeout=5)
        self.close_subscribers()

    def close_subscribers(self) -> None:
        """Tell every subscriber the console is closing."""
        with self._lock:
            subs, self._subs = list(self._subs), []
        for sub in subs:
            with contextlib.suppress(Exception):
                sub.close()

    @property
    def snapshot(self) -> dict[str, Any]:
        """The last published state (revision, machine state, session, reference, region)."""
        with self._lock:
            return dict(self._snapshot)

    @property
    def busy(self) -> bool:
        """Whether the robot is moving (a ``next`` is in progress)."""
        return self._busy

    # -- subscribers ---------------------------------------------------------------------

    def subscribe(self, sub: Subscriber) -> dict[str, Any]:
        """Add a watcher; the present snapshot (it also gets every later one)."""
        with self._lock:
            self._subs.append(sub)
            return dict(self._snapshot)

    def unsubscribe(self, sub: Subscriber) -> None:
        """Remove a watcher."""
        with self._lock:
            if sub in self._subs:
                self._subs.remove(sub)

    @property
    def frame_seq(self) -> int:
        """The sequence number of the last camera frame taken (0 before the first)."""
        return self._seq

    def frame_drawn(self, seq: int) -> float | None:
        """A page drew frame ``seq``: its latency (ms, taken -> drawn), recorded."""
        with self._lock:
            taken = self._sent.pop(int(seq), None)
        if taken is None:
            return None
        latency = (time.time() - taken) * 1000.0
        self.latencies_ms.append(latency)
        return latency

    def _frames_wanted(self) -> bool:
        with self._lock:
            return any(s.wants_frames for s in self._subs)

    # -- events --------------------------------------------------------------------------

    def act(self, action: str, *, rev: int | None = None, **args: Any,
            ) -> concurrent.futures.Future[dict[str, Any]]:
        """Hand an event to the session; a future of ``{"ok", "status", "error", "state"}``.

        ``rev`` is the revision the sender last saw (``None``: no check, the terminal's own
        keys); ``args`` are the event's (``score``, ``text``, ``scene``, ``region``).
        ``state`` is the snapshot after the event (for ``next``: once the robot started).
        """
        if action not in ACTIONS:
            done: concurrent.futures.Future[dict[str, Any]] = concurrent.futures.Future()
            done.set_result(self._answer(400, f"unknown action {action!r}; one of "
                                         f"{', '.join(ACTIONS)}"))
            return done
        if action in ("capture", "abort"):
            return self._now(action)
        if self._busy:
            done = concurrent.futures.Future()
            done.set_result(self._answer(409, "the robot is moving: wait for the trial to end "
                                         "(or abort it)"))
            return done
        return self._submit(action, args, rev)

    def _now(self, action: str) -> concurrent.futures.Future[dict[str, Any]]:
        """``capture`` / ``abort``: straight to the machine (thread-safe), no revision check."""
        done: concurrent.futures.Future[dict[str, Any]] = concurrent.futures.Future()
        if not self._busy or self.machine.phase.value not in _MOVING:
            done.set_result(self._answer(409, f"{action} is for a trial while the robot moves; "
                                         f"it is {self.machine.phase.value}"))
            return done
        if action == "abort":
            self.machine.abort()
        else:
            self.machine.capture()
        done.set_result(self._answer(200, None))
        return done

    def _submit(self, action: str, args: dict[str, Any], rev: int | None,
                ) -> concurrent.futures.Future[dict[str, Any]]:
        job = _Job(action, args, rev)
        if self._stop.is_set():
            job.future.set_result(self._answer(503, "the console is closing"))
        else:
            self._jobs.put(job)
        return job.future

    def _answer(self, status: int, error: str | None, **extra: Any) -> dict[str, Any]:
        return {"ok": status == 200, "status": status,
                "error": None if error is None else self._scrub(error),
                "state": self.snapshot, **extra}

    # -- the worker ----------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            timeout = 0.5
            if self._frames_wanted():
                timeout = max(0.0, min(timeout, self._next_frame - time.monotonic()))
            try:
                job = self._jobs.get(timeout=timeout)
            except queue.Empty:
                job = None
            if job is None and self._stop.is_set():
                break
            if job is not None:
                self._do(job)
            elif self.unattended and self._started_ok():
                self._auto_step()
            self._grab(time.monotonic())
        with contextlib.suppress(Exception):
            self.machine.close()

    def _started_ok(self) -> bool:
        return bool(self._snapshot)

    def _auto_step(self) -> None:
        """A rehearsal (``operator suggested``): play, accept the suggestion, go on."""
        phase = self.machine.phase.value
        try:
            if phase in ("idle", "ready"):
                self._busy = True
                try:
                    self.machine.next(self._poll)
                finally:
                    self._busy = False
            elif phase == "scoring":
                self.machine.accept_suggestion()
        except EvalbandError:
            self.unattended = False  # stopped: the operator decides (the state says why)
        self._refresh(force=True)

    def _do(self, job: _Job) -> None:
        m = self.machine
        try:
            if job.action == "_start":
                m.start()
                self._session = self._session_info()
                self._refresh(force=True)
                job.future.set_result(self._answer(200, None))
                return
            self._refresh(force=False)
            if job.rev is not None and job.rev != self._rev:
                job.future.set_result(self._answer(
                    409, "the session changed on another screen; look again (nothing was "
                    "done)", stale=True))
                return
            if job.action == "next":
                self._next(job)
                return
            self._event(job.action, job.args)
            self._refresh(force=True)
            job.future.set_result(self._answer(200, None))
        except EvalbandError as exc:
            self._refresh(force=True)
            job.future.set_result(self._answer(409, str(exc), exception=exc))
        except Exception as exc:  # noqa: BLE001 - a bug or a robot fault: one line, keep serving
            self._refresh(force=True)
            job.future.set_result(self._answer(500, f"{type(exc).__name__}: {exc}",
                                               exception=exc))

    def _event(self, action: str, args: dict[str, Any]) -> None:
        m = self.machine
        if action == "score":
            m.score(_int(args.get("score")))
        elif action == "confirm":
            if args.get("score") is not None:
                m.score(_int(args["score"]))
            else:
                state = m.state
                if state.chosen is None and state.suggestion is not None:
                    m.score(state.suggestion)  # the terminal's Enter: the suggestion
            m.confirm()
        elif action == "skip":
            m.skip()
        elif action == "undo":
            m.undo()
        elif action == "assist":
            m.assist()
        elif action == "note":
            m.note(str(args.get("text") or ""))
        elif action == "region":
            self._save_region(args)

    def _next(self, job: _Job) -> None:
        self._ack = job.future
        self._busy = True
        try:
            self.machine.next(self._poll)
        finally:
            self._busy = False
            self._refresh(force=True)
            ack, self._ack = self._ack, None
            if ack is not None and not ack.done():
                ack.set_result(self._answer(200, None))

    def _poll(self) -> None:
        """Called by the control loop before each step (in the worker): publish, grab."""
        now = time.monotonic()
        phase = self.machine.phase.value
        if self._ack is not None or phase != self._last_phase or (
                now - self._last_refresh >= _REFRESH_S):
            self._refresh(force=False)
        ack, self._ack = self._ack, None
        if ack is not None and not ack.done():
            ack.set_result(self._answer(200, None))
        self._grab(now)

    def _save_region(self, args: dict[str, Any]) -> None:
        from evalband.session._attempts import AttemptLog

        state = self.machine.state
        scene = args.get("scene", state.scene)
        if scene is None:
            raise InvalidInputError("no scene: the session is finished")
        region = check_region(args.get("region"))
        AttemptLog(self.machine.store).save_region(
            self.plan.session_id, _int(scene), None if region is None else list(region))
        self._regions[_int(scene)] = region

    # -- state ---------------------------------------------------------------------------

    def _session_info(self) -> dict[str, Any]:
        m = self.machine
        plan = self.plan
        counts = m.store.counts(plan.session_id)
        return {
            "session_id": plan.session_id,
            "robot": m.robot_label,
            "policies": len(plan.policies),
            "scenes": plan.scenes,
            "attempts": plan.attempts,
            "n_trials": plan.n_trials,
            "blind": plan.blind,
            "rubric": {str(k): v for k, v in sorted(plan.rubric.levels.items())},
            "success_at": plan.rubric.success_at,
            "rubric_text": plan.rubric.describe(),
            "instrument": list(m.instrument.describe()),
            "warmup_ms": dict(sorted(m.warmup_ms.items())),
            "resumed": counts["scored"] + counts["skipped"],
            "operator": m.operator,
            "fps": self.fps,
        }

    def _scene_extras(self, scene: int | None) -> dict[str, Any]:
        """The scene's reference frame URL and region (looked up once per scene)."""
        if scene is None:
            return {"reference": None, "region": None}
        if self._references.get(scene) is None:
            path = self.machine.reference_path(scene)
            self._references[scene] = path
            if path is not None:
                capture = self.machine.log.capture(self.plan.session_id, scene) or {}
                region = capture.get("region")
                self._regions[scene] = None if region is None else check_region(region)
        path = self._references.get(scene)
        region = self._regions.get(scene)
        return {"reference": None if path is None else f"/api/reference/{scene}?v={path.name}",
                "region": None if region is None else list(region)}

    def _refresh(self, *, force: bool) -> None:
        """Read the machine's state (in the worker) and publish it if it changed."""
        state = self.machine.state
        self._last_refresh = time.monotonic()
        self._last_phase = state.phase.value
        body = {"state": state.as_dict(), "session": self._session, "busy": self._busy,
                **self._scene_extras(state.scene)}
        body = self._scrub(body)
        with self._lock:
            if self._published == body and not force:
                return
            if self._published != body:
                self._rev += 1
            self._published = body
            self._snapshot = {"type": "state", "rev": self._rev, **body}
            snapshot, subs = dict(self._snapshot), list(self._subs)
        for sub in subs:
            with contextlib.suppress(Exception):
                sub.push_state(snapshot)

    def _blind_secrets(self) -> list[tuple[str, str]]:
        """(name or spec, blind code) of a blinded session, longest first."""
        plan = self.plan
        if not plan.blind:
            return []
        pairs = []
        for policy in plan.policies:
            for secret in {policy, plan.spec(policy)}:
                if len(secret) >= 2:
                    pairs.append((secret, plan.label(policy)))
        return sorted(pairs, key=lambda p: len(p[0]), reverse=True)

    def _scrub(self, value: Any) -> Any:
        """``value`` with each policy name or spec of a blinded session replaced by its code.

        A last guard: the machine's state already names codes only.
        """
        if not self._secrets:
            return value
        if isinstance(value, str):
            for secret, code in self._secrets:
                value = value.replace(secret, code)
            return value
        if isinstance(value, dict):
            return {k: self._scrub(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self._scrub(v) for v in value]
        return value

    def reference_file(self, scene: int) -> Path | None:
        """The stored reference frame (PNG) of ``scene``, once the worker has looked it up."""
        return self._references.get(int(scene))

    # -- frames --------------------------------------------------------------------------

    def _grab(self, now: float) -> None:
        """Take the camera's latest frame (in the worker) if a page watches and one is due."""
        period = 1.0 / self.fps
        # a fifth of a period early is on time: the control loop's steps (30 Hz) fall on the
        # frames' deadlines (15 fps) up to jitter, and waiting a whole step would halve the rate
        if now < self._next_frame - 0.2 * period or not self._frames_wanted():
            return
        self._next_frame += period  # from the deadline, not from now: no drift
        if self._next_frame < now:  # fell behind (a long event): start afresh
            self._next_frame = now + period
        try:
            frame = self.machine.latest_frame()
        except Exception:  # noqa: BLE001 - no frame this time (robot busy, disconnected)
            return
        if frame is None:
            return
        taken = time.time()
        scene = self._snapshot.get("state", {}).get("scene")
        with self._lock:
            self._seq += 1
            self._mailbox = (frame, taken, scene, self._seq)
        self._frame_ready.set()

    def _reference_array(self, scene: int | None) -> np.ndarray | None:
        if scene is None:
            return None
        if scene not in self._ref_arrays or self._ref_arrays[scene] is None:
            path = self._references.get(scene)
            array = None
            if path is not None:
                from PIL import Image

                with Image.open(path) as img:
                    array = np.asarray(img.convert("RGB"))
            self._ref_arrays[scene] = array
        return self._ref_arrays[scene]

    def _encode_loop(self) -> None:
        while not self._stop.is_set():
            self._frame_ready.wait(0.5)
            self._frame_ready.clear()
            with self._lock:
                item, self._mailbox = self._mailbox, None
            if item is None:
                continue
            try:
                self._encode(*item)
            except Exception:  # noqa: BLE001, S112 - one frame lost, the stream goes on
                continue

    def _encode(self, frame: np.ndarray, taken: float, scene: int | None, seq: int) -> None:
        image = np.asarray(frame)
        reference = self._reference_array(scene)
        number = None
        if reference is not None:
            number = alignment(image, reference, self._regions.get(scene) if scene else None)
        small = fit_width(image, self.max_width)
        jpeg = encode_jpeg(small, self.jpeg_quality)
        header = {"seq": seq, "t": taken, "w": int(small.shape[1]), "h": int(small.shape[0]),
                  "scene": scene, "alignment": None if number is None else round(number, 3)}
        data = frame_message(header, jpeg)
        with self._lock:
            self.last_frame = header
            self._sent[seq] = taken
            while len(self._sent) > 256:
                self._sent.pop(next(iter(self._sent)))
            subs = [s for s in self._subs if s.wants_frames]
        for sub in subs:
            with contextlib.suppress(Exception):
                sub.push_frame(data)


def _int(value: Any) -> int:
    if isinstance(value, bool) or value is None:
        raise InvalidInputError(f"expected a whole number; got {value!r}")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise InvalidInputError(f"expected a whole number; got {value!r}") from None
