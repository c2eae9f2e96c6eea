"""TensorBoard event files written directly: scalars only, no TensorFlow, torch or tensorboard.

An event file is a sequence of TFRecords, each ``uint64 length``, ``uint32 masked CRC-32C of
the length``, the payload, ``uint32 masked CRC-32C of the payload`` (little-endian); each
payload is a serialized ``tensorflow.Event`` protocol buffer. The first event carries
``file_version = "brain.Event:2"``; each scalar is an event with ``wall_time``, ``step`` and a
``Summary`` holding one ``Value(tag, simple_value)``. The protobuf fields used (numbers from
``tensorboard/compat/proto/event.proto`` and ``summary.proto``): Event.wall_time = 1
(double), step = 2 (int64), file_version = 3 (string), summary = 5 (message);
Summary.value = 1 (repeated message); Value.tag = 1 (string), simple_value = 2 (float).
Sources: TensorFlow's ``tensorflow/core/lib/io/record_writer.cc`` (framing and mask) and
RFC 3720 appendix B.4 (CRC-32C, the Castagnoli polynomial). ``tensorboard``'s own reader
parses what this writes (tests/training/test_tensorboard.py).
"""

from __future__ import annotations

import socket
import struct
import time
from pathlib import Path

__all__ = ["EventWriter", "crc32c", "masked_crc32c"]


def _table() -> list[int]:
    poly = 0x82F63B78  # CRC-32C (Castagnoli), reflected
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _table()


def crc32c(data: bytes) -> int:
    """CRC-32C of ``data``.

    >>> hex(crc32c(b"123456789"))  # the check value of RFC 3720 / iSCSI
    '0xe3069283'
    """
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """TFRecord's masked CRC: rotate right by 15 bits, add ``0xa282ead8`` (mod 2^32).

    >>> masked_crc32c(b"") == (((0 >> 15) | (0 << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    True
    """
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # int64 as protobuf encodes it (two's complement)
    out = bytearray()
    while True:
        bits = value & 0x7F
        value >>= 7
        if value:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _bytes(field: int, payload: bytes) -> bytes:
    return _key(field, 2) + _varint(len(payload)) + payload


def _event(wall_time: float, step: int | None = None, *, file_version: str | None = None,
           scalars: dict[str, float] | None = None) -> bytes:
    out = _key(1, 1) + struct.pack("<d", wall_time)
    if step is not None:
        out += _key(2, 0) + _varint(int(step))
    if file_version is not None:
        out += _bytes(3, file_version.encode())
    if scalars:
        summary = b"".join(
            _bytes(1, _bytes(1, tag.encode()) + _key(2, 5) + struct.pack("<f", float(value)))
            for tag, value in scalars.items())
        out += _bytes(5, summary)
    return out


class EventWriter:
    """Append scalar events to a new TensorBoard event file in ``logdir``.

    >>> import tempfile
    >>> writer = EventWriter(tempfile.mkdtemp())
    >>> writer.add_scalars({"success_rate": 0.5}, step=100)
    >>> writer.close()
    >>> writer.path.name.startswith("events.out.tfevents.")
    True
    """

    def __init__(self, logdir: str | Path) -> None:
        folder = Path(logdir)
        folder.mkdir(parents=True, exist_ok=True)
        now = time.time()
        self.path = folder / f"events.out.tfevents.{int(now)}.{socket.gethostname()}.evalband"
        self._file = self.path.open("ab")
        self._write(_event(now, file_version="brain.Event:2"))

    def _write(self, payload: bytes) -> None:
        header = struct.pack("<Q", len(payload))
        self._file.write(header + struct.pack("<I", masked_crc32c(header)) + payload
                         + struct.pack("<I", masked_crc32c(payload)))
        self._file.flush()

    def add_scalars(self, scalars: dict[str, float], step: int) -> None:
        """One event holding every scalar of ``scalars`` at ``step``."""
        self._write(_event(time.time(), step, scalars=scalars))

    def close(self) -> None:
        """Close the file (every event was flushed as written)."""
        self._file.close()
