"""Step data of an episode: per-step actions, rewards and info values, stored beside the store.

``evalband run --record-steps`` keeps, for every played episode, what happened at each step:

* ``action``: the actions taken, shape ``(T, *action_shape)``, in the policy's dtype;
* ``reward``: the rewards, ``(T,)`` float64 (``NaN`` where the env gave no number);
* ``info/<key>``: each of the panel's declared ``metrics`` info keys, ``(T,)`` float64
  (``NaN`` where the key was missing or not a number);
* ``obs`` or ``obs/<key>`` (only with ``--record-obs``): the observation each action was
  chosen from, ``(T, *shape)`` in its dtype (a dict observation: one column per key); only
  low-dimensional entries are kept (:data:`evalband.run._steps.MAX_OBS_VALUES` values a step).

The columns are one compressed NumPy ``.npz`` file (:func:`numpy.savez_compressed`: zip +
deflate, readable with ``numpy.load`` alone), stored like a clip: by its sha256 in
``<store dir>/media/<sha256>.npz`` (:mod:`evalband.store._media`), so identical step data is
stored once. The episode record refers to it from ``extra["step_data"]``::

    {"sha256": "<hex>", "kind": "steps", "content_type": "application/x-npz",
     "bytes": 1234, "steps": 300}

A record whose steps were cut by the size cap (:data:`MAX_STEP_BYTES` of raw columns an
episode) keeps the first steps and says so in ``extra["step_data_note"]``.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from evalband.episode import EpisodeRecord

__all__ = [
    "MAX_STEP_BYTES",
    "STEPS_CONTENT_TYPE",
    "STEPS_KEY",
    "StepData",
    "decode_steps",
    "encode_steps",
    "read_steps",
    "refuse_steps",
    "steps_ref",
]

MAX_STEP_BYTES = 64 * 1024 * 1024
"""Most bytes of raw (uncompressed) step columns one episode keeps (64 MiB); later steps are
dropped and the record says so in ``extra["step_data_note"]``."""

STEPS_CONTENT_TYPE = "application/x-npz"
"""The content type of a step-data file (a NumPy ``.npz``)."""

STEPS_KEY = "step_data"
"""The record's ``extra`` key that holds the reference to its step data."""


@dataclass(frozen=True)
class StepData:
    """One episode's step columns.

    Attributes:
        action: ``(T, *action_shape)`` actions.
        reward: ``(T,)`` rewards.
        info: declared info key -> ``(T,)`` values.
        obs: observation column (``obs``, ``obs/<key>``) -> ``(T, *shape)`` values; empty
            unless observations were recorded.
    """

    action: np.ndarray
    reward: np.ndarray
    info: dict[str, np.ndarray]
    obs: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def steps(self) -> int:
        """The number of steps kept."""
        return int(self.reward.shape[0])


def encode_steps(data: StepData) -> bytes:
    """The compressed ``.npz`` bytes of ``data`` (deterministic: same columns, same bytes).

    >>> d = StepData(np.zeros((3, 2), np.float32), np.array([0.0, 1.0, 0.5]),
    ...              {"coverage": np.array([0.1, 0.2, 0.3])})
    >>> back = decode_steps(encode_steps(d))
    >>> back.steps, back.action.shape, back.action.dtype.name, sorted(back.info)
    (3, (3, 2), 'float32', ['coverage'])
    >>> encode_steps(d) == encode_steps(d)
    True
    """
    import zipfile

    columns = {"action": data.action, "reward": data.reward,
               **{f"info/{key}": value for key, value in data.info.items()}, **data.obs}
    buffer = io.BytesIO()
    # a fixed timestamp on every member: identical columns give identical bytes (one file)
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, value in columns.items():
            member = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            member.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(member, "w") as fh:
                np.lib.format.write_array(fh, np.ascontiguousarray(value), allow_pickle=False)
    return buffer.getvalue()


def decode_steps(data: bytes | Path) -> StepData:
    """Read step data written by :func:`encode_steps` (bytes, or a file's path)."""
    source: Any = io.BytesIO(data) if isinstance(data, bytes) else data
    with np.load(source, allow_pickle=False) as archive:
        columns = {name: archive[name] for name in archive.files}
    info = {name[len("info/"):]: value for name, value in columns.items()
            if name.startswith("info/")}
    obs = {name: value for name, value in columns.items()
           if name == "obs" or name.startswith("obs/")}
    return StepData(columns["action"], columns["reward"], info, obs)


def steps_ref(record: EpisodeRecord) -> dict[str, Any] | None:
    """The reference to ``record``'s step data (``extra["step_data"]``), or ``None``."""
    ref = record.extra.get(STEPS_KEY) if isinstance(record.extra, dict) else None
    return dict(ref) if isinstance(ref, Mapping) else None


def read_steps(store_path: str | Path, record: EpisodeRecord) -> StepData | None:
    """The step data of ``record`` in the store at ``store_path``; ``None`` when it has none.

    >>> import tempfile
    >>> from evalband.episode import EpisodeRecord
    >>> read_steps(f"{tempfile.mkdtemp()}/s.sqlite",
    ...            EpisodeRecord("r", "p", "f", "", 0, 0, 7, "success", True, False, 5)) is None
    True
    """
    from evalband.store._media import media_file

    ref = steps_ref(record)
    if ref is None:
        return None
    path = media_file(store_path, ref)
    return None if path is None else decode_steps(path)


def _first_line(exc: BaseException) -> str:
    """The first line of an error, for a one-line refusal."""
    first = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def refuse_steps(source: Path) -> str | None:
    """Why ``source`` is not step data an import may store, or ``None`` when it is.

    >>> import tempfile
    >>> bad = Path(tempfile.mkdtemp()) / "x.npz"
    >>> _ = bad.write_bytes(b"not a zip")
    >>> refuse_steps(bad).startswith("not step data")
    True
    """
    from evalband._util.limits import MAX_MEDIA_BYTES

    try:
        size = source.stat().st_size
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    if size > MAX_MEDIA_BYTES:
        return f"{size:,} bytes, over the {MAX_MEDIA_BYTES:,} a media file may have"
    try:
        data = decode_steps(source)
    except Exception as exc:  # noqa: BLE001 - any reader error: the file is refused
        return f"not step data ({_first_line(exc)})"
    if data.action.shape[:1] != data.reward.shape or any(
            v.shape != data.reward.shape for v in data.info.values()) or any(
            v.shape[:1] != data.reward.shape for v in data.obs.values()):
        return "not step data (its columns have different lengths)"
    return None
