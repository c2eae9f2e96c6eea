"""Camera frames for the console: bounded JPEGs on the wire, and the ghost overlay's number.

Seed 004's operator re-places the block under a 50/50 blend of the live wrist camera and
the scene's captured reference, with a difference view that goes dark when the block is
back. The page draws both views from the two images; the server computes the one number the
operator aligns by, :func:`alignment`: the mean absolute difference between the live frame
and the reference inside the region the operator drew for the scene (the whole frame before
one is drawn), on the raw frames, before any compression.

A frame goes to the page as one binary WebSocket message (:func:`frame_message`): four
bytes giving the length of a JSON header (sequence number, the time the frame was taken,
size, scene, alignment), the header, then the JPEG. Frames wider than ``max_width`` are
scaled down first, so a message stays small whatever the camera.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from evalband.errors import InvalidInputError

__all__ = ["alignment", "check_region", "encode_jpeg", "fit_width", "frame_message",
           "read_frame_message"]


def check_region(region: Sequence[float] | None) -> tuple[float, float, float, float] | None:
    """A region as ``(x0, y0, x1, y1)`` fractions of the frame (0..1, x0 < x1, y0 < y1).

    Raises:
        InvalidInputError: four numbers in 0..1 with x0 < x1 and y0 < y1 were not given.

    >>> check_region([0.5, 0.1, 0.2, 0.6])  # corners in any order
    (0.2, 0.1, 0.5, 0.6)
    >>> check_region(None) is None
    True
    """
    if region is None:
        return None
    try:
        values = [float(v) for v in region]
    except (TypeError, ValueError):
        values = []
    if len(values) != 4 or not all(0.0 <= v <= 1.0 for v in values):
        raise InvalidInputError(f"a region is four fractions of the frame (x0, y0, x1, y1 in "
                                f"0..1); got {region!r}")
    x0, x1 = sorted(values[0::2])
    y0, y1 = sorted(values[1::2])
    if x1 - x0 <= 0.0 or y1 - y0 <= 0.0:
        raise InvalidInputError(f"a region needs a width and a height; got {region!r}")
    return (x0, y0, x1, y1)


def _pixels(region: tuple[float, float, float, float] | None, height: int,
            width: int) -> tuple[slice, slice]:
    if region is None:
        return slice(0, height), slice(0, width)
    x0, y0, x1, y1 = region
    c0, c1 = int(np.floor(x0 * width)), int(np.ceil(x1 * width))
    r0, r1 = int(np.floor(y0 * height)), int(np.ceil(y1 * height))
    return slice(r0, max(r1, r0 + 1)), slice(c0, max(c1, c0 + 1))


def alignment(live: np.ndarray, reference: np.ndarray,
              region: Sequence[float] | None = None) -> float | None:
    """Mean absolute difference (0-255 per channel) of two frames inside ``region``.

    ``region`` is ``(x0, y0, x1, y1)`` in fractions of the frame (``None``: all of it); it
    covers every pixel it touches. Frames of different sizes have no alignment (``None``):
    the camera changed.

    >>> ref = np.zeros((4, 4, 3), np.uint8); live = ref.copy(); live[0, 0] = 255
    >>> alignment(live, ref), alignment(live, ref, (0.5, 0.5, 1.0, 1.0))
    (15.9375, 0.0)
    """
    a = np.asarray(live)
    b = np.asarray(reference)
    if a.shape != b.shape or a.ndim < 2:
        return None
    rows, cols = _pixels(check_region(region), a.shape[0], a.shape[1])
    diff = np.abs(a[rows, cols].astype(np.int16) - b[rows, cols].astype(np.int16))
    return float(diff.mean())


def fit_width(image: np.ndarray, max_width: int) -> np.ndarray:
    """``image`` scaled down (area average over whole pixels) to at most ``max_width`` wide.

    >>> fit_width(np.zeros((480, 640, 3), np.uint8), 320).shape
    (240, 320, 3)
    """
    height, width = image.shape[:2]
    if width <= max_width:
        return image
    factor = -(-width // max_width)  # whole-pixel blocks: cheap and exact
    h, w = height // factor * factor, width // factor * factor
    blocks = image[:h, :w].reshape(h // factor, factor, w // factor, factor, -1)
    small: np.ndarray = blocks.mean(axis=(1, 3)).astype(np.uint8)
    return small if image.ndim == 3 else small[..., 0]


def encode_jpeg(image: np.ndarray, quality: int = 80) -> bytes:
    """An RGB (or gray) frame as JPEG bytes (Pillow).

    >>> encode_jpeg(np.zeros((8, 8, 3), np.uint8))[:2].hex()
    'ffd8'
    """
    from PIL import Image

    array = np.ascontiguousarray(np.asarray(image, dtype=np.uint8))
    if array.ndim == 3 and array.shape[2] == 1:
        array = array[..., 0]
    out = io.BytesIO()
    Image.fromarray(array).save(out, format="JPEG", quality=int(quality))
    return out.getvalue()


def frame_message(header: Mapping[str, Any], jpeg: bytes) -> bytes:
    """One binary WebSocket message: header length (4 bytes, big-endian), JSON header, JPEG.

    >>> read_frame_message(frame_message({"seq": 3}, b"JPEG"))
    ({'seq': 3}, b'JPEG')
    """
    head = json.dumps(dict(header), separators=(",", ":")).encode("utf-8")
    return struct.pack(">I", len(head)) + head + jpeg


def read_frame_message(data: bytes) -> tuple[dict[str, Any], bytes]:
    """The header and the JPEG of a :func:`frame_message` (what the page's script does)."""
    (size,) = struct.unpack(">I", data[:4])
    header: dict[str, Any] = json.loads(data[4:4 + size].decode("utf-8"))
    return header, data[4 + size:]
