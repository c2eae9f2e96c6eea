"""msgpack-numpy frames: the wire format of openpi's websocket policy protocol.

openpi (Physical Intelligence, ``packages/openpi-client/src/openpi_client/msgpack_numpy.py``,
https://github.com/Physical-Intelligence/openpi) sends every message as one binary websocket
frame holding a msgpack map. A numpy array travels as the map
``{b"__ndarray__": True, b"data": <raw bytes>, b"dtype": <dtype.str>, b"shape": <shape>}`` and a
numpy scalar as ``{b"__npgeneric__": True, b"data": <item>, b"dtype": <dtype.str>}``; object,
void and complex dtypes are refused (no pickle on the wire). This module writes and reads that
format (written from the format, not copied), so frames interoperate with ``openpi-client`` in
both directions. msgpack is imported here, so this module is only imported for remote policies
(the optional extra ``evalband[remote]``).

>>> frame = packb({"actions": np.arange(6.0).reshape(3, 2), "n": np.int64(3)})
>>> out = unpackb(frame)
>>> out["actions"].shape, out["actions"].dtype.str, int(out["n"])
((3, 2), '<f8', 3)
"""

from __future__ import annotations

from typing import Any

import msgpack
import numpy as np

__all__ = ["packb", "unpackb"]

_REFUSED_KINDS = ("V", "O", "c")


def _encode(obj: Any) -> Any:
    """The msgpack ``default`` hook: numpy arrays and scalars as openpi's tagged maps."""
    if isinstance(obj, np.ndarray | np.generic) and obj.dtype.kind in _REFUSED_KINDS:
        raise ValueError(f"dtype {obj.dtype} cannot be sent to a policy server (no pickle)")
    if isinstance(obj, np.ndarray):
        return {b"__ndarray__": True, b"data": np.ascontiguousarray(obj).tobytes(),
                b"dtype": obj.dtype.str, b"shape": obj.shape}
    if isinstance(obj, np.generic):
        return {b"__npgeneric__": True, b"data": obj.item(), b"dtype": obj.dtype.str}
    raise TypeError(f"cannot send a {type(obj).__name__} to a policy server")


def _decode(obj: dict[Any, Any]) -> Any:
    """The msgpack ``object_hook``: the tagged maps back to numpy arrays and scalars."""
    if b"__ndarray__" in obj:
        return np.frombuffer(obj[b"data"], dtype=np.dtype(obj[b"dtype"])).reshape(obj[b"shape"])
    if b"__npgeneric__" in obj:
        return np.dtype(obj[b"dtype"]).type(obj[b"data"])
    return obj


def packb(obj: Any) -> bytes:
    """One message as a msgpack-numpy frame.

    >>> unpackb(packb({"x": 1.5}))
    {'x': 1.5}
    """
    data: bytes = msgpack.packb(obj, default=_encode)
    return data


def unpackb(data: bytes) -> Any:
    """A msgpack-numpy frame back to Python (arrays are read-only views of the frame).

    >>> unpackb(packb(np.float32(2.0))).dtype.name
    'float32'
    """
    return msgpack.unpackb(data, object_hook=_decode)
