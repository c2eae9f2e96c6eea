"""Lossless PNG for captured reference frames, with the standard library's ``zlib`` only.

A start-state capture keeps the last two camera frames exactly (the ghost overlay aligns
pixels against them), viewable in any browser. :func:`png_bytes` writes 8-bit RGB PNG
(PNG specification, ISO/IEC 15948: signature, ``IHDR``, one ``IDAT`` of zlib-compressed
scanlines with filter type 0, ``IEND``); :func:`png_array` reads such files back (and any
8-bit RGB/RGBA, non-interlaced PNG whose scanlines use filter types 0-4).

>>> import numpy as np
>>> img = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
>>> bool((png_array(png_bytes(img)) == img).all())
True
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

__all__ = ["png_array", "png_bytes"]

_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def png_bytes(image: np.ndarray) -> bytes:
    """An ``(H, W, 3)`` uint8 RGB image as a PNG file's bytes."""
    rgb = np.ascontiguousarray(np.asarray(image, dtype=np.uint8)[..., :3])
    height, width = rgb.shape[:2]
    rows = np.concatenate([np.zeros((height, 1), np.uint8), rgb.reshape(height, width * 3)],
                          axis=1)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (_SIGNATURE + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + _chunk(b"IEND", b""))


def png_array(data: bytes) -> np.ndarray:
    """The RGB image of an 8-bit, non-interlaced RGB or RGBA PNG file.

    Raises:
        ValueError: not such a PNG.
    """
    if not data.startswith(_SIGNATURE):
        raise ValueError("not a PNG file")
    pos, idat, header = len(_SIGNATURE), b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        chunk = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if chunk == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif chunk == b"IDAT":
            idat += body
        elif chunk == b"IEND":
            break
    if header is None or header[2] != 8 or header[3] not in (2, 6) or header[6] != 0:
        raise ValueError("only 8-bit, non-interlaced RGB or RGBA PNG files are read")
    width, height, channels = header[0], header[1], 3 if header[3] == 2 else 4
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(height, 1 + width * channels)
    out = np.zeros((height, width * channels), dtype=np.int32)
    for y in range(height):
        kind = int(raw[y, 0])
        line = raw[y, 1:].astype(np.int32)
        prior = out[y - 1] if y else np.zeros(width * channels, np.int32)
        if kind == 0:
            out[y] = line
        elif kind == 2:
            out[y] = (line + prior) & 0xFF
        else:  # sub, average, paeth: byte by byte
            for x in range(width * channels):
                left = out[y, x - channels] if x >= channels else 0
                up = prior[x]
                corner = prior[x - channels] if x >= channels and y else 0
                if kind == 1:
                    pred = left
                elif kind == 3:
                    pred = (left + up) // 2
                else:
                    p = left + up - corner
                    pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                    pred = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
                out[y, x] = (line[x] + pred) & 0xFF
    return out.astype(np.uint8).reshape(height, width, channels)[..., :3]
