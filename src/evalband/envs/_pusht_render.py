"""A top-down picture of the PushT table, drawn with numpy (no OpenGL needed).

PushT is planar: the camera MuJoCo would give looks straight down on a table, a T-shaped block,
its target outline and a round pusher. Drawing those shapes directly costs ~0.1 ms at 96x96
(an offscreen MuJoCo renderer without a GPU costs ~20 ms a frame), so recording videos of a
share of episodes stays cheap.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from evalband.envs.pusht_model import (
    BAR_CENTER_Y,
    BAR_HALF,
    PUSHER_RADIUS,
    STEM_CENTER_Y,
    STEM_HALF,
    TABLE_HALF,
    TARGET,
)

__all__ = ["render_pusht"]

_TABLE = np.array([232, 232, 232], dtype=np.uint8)
_TARGET = np.array([150, 210, 150], dtype=np.uint8)
_TEE = np.array([70, 110, 200], dtype=np.uint8)
_PUSHER = np.array([225, 80, 50], dtype=np.uint8)


@lru_cache(maxsize=8)
def _grid(size: int) -> tuple[np.ndarray, np.ndarray]:
    """World ``(x, y)`` of every pixel centre; image row 0 is the far (+y) edge of the table."""
    centres = (np.arange(size) + 0.5) / size * 2.0 * TABLE_HALF - TABLE_HALF
    xs, ys = np.meshgrid(centres, centres[::-1])
    return xs, ys


def _tee_mask(xs: np.ndarray, ys: np.ndarray, x: float, y: float, yaw: float) -> np.ndarray:
    c, s = math.cos(yaw), math.sin(yaw)
    dx, dy = xs - x, ys - y
    u = c * dx + s * dy  # pixel in the block's own frame
    v = -s * dx + c * dy
    bar = (np.abs(u) <= BAR_HALF[0]) & (np.abs(v - BAR_CENTER_Y) <= BAR_HALF[1])
    stem = (np.abs(u) <= STEM_HALF[0]) & (np.abs(v - STEM_CENTER_Y) <= STEM_HALF[1])
    return bar | stem


@lru_cache(maxsize=8)
def _background(size: int) -> np.ndarray:
    xs, ys = _grid(size)
    image = np.empty((size, size, 3), dtype=np.uint8)
    image[:] = _TABLE
    image[_tee_mask(xs, ys, *TARGET)] = _TARGET
    image.setflags(write=False)
    return image


def _window(cx: float, cy: float, radius: float, size: int) -> tuple[slice, slice]:
    """Rows and columns of the pixels within ``radius`` (a square) of world ``(cx, cy)``."""
    scale = size / (2.0 * TABLE_HALF)
    col0 = max(0, int((cx - radius + TABLE_HALF) * scale))
    col1 = min(size, int((cx + radius + TABLE_HALF) * scale) + 2)
    row0 = max(0, int((TABLE_HALF - cy - radius) * scale))
    row1 = min(size, int((TABLE_HALF - cy + radius) * scale) + 2)
    return slice(row0, max(row0, row1)), slice(col0, max(col0, col1))


_TEE_REACH = math.hypot(BAR_HALF[0], abs(BAR_CENTER_Y) + BAR_HALF[1]) + math.hypot(
    STEM_HALF[0], abs(STEM_CENTER_Y) + STEM_HALF[1]
)


def render_pusht(
    tee: tuple[float, float, float], pusher: tuple[float, float], size: int = 96
) -> np.ndarray:
    """An ``(size, size, 3)`` uint8 RGB image of the table seen from above.

    Only the pixels near the block and the pusher are computed, so a frame costs about as
    much as drawing two small sprites.

    >>> img = render_pusht((0.0, 0.0, 0.0), (0.3, 0.3), size=96)
    >>> img.shape, img.dtype.name, bool((img == [70, 110, 200]).all(axis=2).any())
    ((96, 96, 3), 'uint8', True)
    """
    xs, ys = _grid(size)
    image = _background(size).copy()
    rows, cols = _window(tee[0], tee[1], _TEE_REACH, size)
    patch = image[rows, cols]
    patch[_tee_mask(xs[rows, cols], ys[rows, cols], *tee)] = _TEE
    px, py = pusher
    rows, cols = _window(px, py, 2.0 * PUSHER_RADIUS, size)
    dx, dy = xs[rows, cols] - px, ys[rows, cols] - py
    image[rows, cols][dx * dx + dy * dy <= PUSHER_RADIUS**2 * 1.5] = _PUSHER
    return image
