"""Media beside the run store: videos of episodes, stored once by content.

A store at ``runs/evalband.sqlite`` keeps its media in ``runs/media/<sha256><suffix>``; an
episode record refers to its media in ``extra["media"]``, a list of references::

    {"sha256": "<hex>", "kind": "video", "content_type": "video/mp4", "path": "<as given>"}

``path`` is where the file came from (an imported video path, as the source wrote it). A
reference whose file could not be found when it was imported has no ``sha256`` and
``"missing": true``. Identical clips are stored once.

Durability: a clip is as durable as the record that references it. The store commits records
with ``synchronous=FULL``; a clip written with ``background=True`` (the runner's clips) is
written at once and ``fsync``-ed (file, then its directory after the rename) on a background
thread while episodes go on, and the runner waits for those syncs (:func:`sync_media`) just
before it commits the records that reference them. A sync costs ~4-8 ms of waiting on disk
here and almost no CPU, so filming does not wait for it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import threading
from collections.abc import Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any

__all__ = [
    "CONTENT_TYPES",
    "content_type_of",
    "media_dir",
    "media_file",
    "refuse_reason",
    "store_media_bytes",
    "store_media_file",
    "sync_media",
]

CONTENT_TYPES: dict[str, str] = {
    ".mp4": "video/mp4",
    ".webm": "video/webm",
    ".gif": "image/gif",
    ".png": "image/png",
    ".rrd": "application/octet-stream",
    ".npz": "application/x-npz",
}
"""Content type of a media file by suffix."""


def content_type_of(name: str | Path) -> str:
    """The content type of a media file from its suffix.

    >>> content_type_of("clip.MP4"), content_type_of("x.bin")
    ('video/mp4', 'application/octet-stream')
    """
    return CONTENT_TYPES.get(Path(name).suffix.lower(), "application/octet-stream")


def media_dir(store_path: str | Path) -> Path:
    """The media directory of the store at ``store_path`` (``<store dir>/media``).

    >>> media_dir("/runs/evalband.sqlite").as_posix()
    '/runs/media'
    """
    return Path(store_path).parent / "media"


def _suffix(content_type: str, fallback: str = ".bin") -> str:
    for suffix, kind in CONTENT_TYPES.items():
        if kind == content_type:
            return suffix
    return fallback


_SYNCS: list[Future[None]] = []
_SYNC_LOCK = threading.Lock()
_SYNCER: Any = None


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # a platform without directory handles (Windows)
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _persist(tmp: str, target: Path) -> None:
    """Make a written ``.part`` file durable, then give it its name (durably)."""
    with open(tmp, "rb+") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, target)
    _fsync_dir(target.parent)


def sync_media() -> None:
    """Wait until every clip stored with ``background=True`` is on disk (raises its error).

    >>> sync_media()
    """
    with _SYNC_LOCK:
        pending, _SYNCS[:] = list(_SYNCS), []
    for future in pending:
        future.result()


def store_media_bytes(
    store_path: str | Path, data: bytes, *, content_type: str, kind: str = "video",
    background: bool = False,
) -> dict[str, Any]:
    """Store ``data`` beside the store, named by its sha256; return the reference.

    The file is ``fsync``-ed before it is renamed into place; with ``background=True`` that
    happens on a background thread and :func:`sync_media` waits for it.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> ref = store_media_bytes(f"{d}/s.sqlite", b"frames", content_type="video/mp4")
    >>> ref["kind"], ref["content_type"], media_file(f"{d}/s.sqlite", ref).read_bytes()
    ('video', 'video/mp4', b'frames')
    """
    global _SYNCER
    digest = hashlib.sha256(data).hexdigest()
    target = media_dir(store_path) / f"{digest}{_suffix(content_type)}"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".part")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        if background:
            with _SYNC_LOCK:
                if _SYNCER is None:
                    from concurrent.futures import ThreadPoolExecutor

                    _SYNCER = ThreadPoolExecutor(1, thread_name_prefix="evalband-media-sync")
                _SYNCS.append(_SYNCER.submit(_persist, tmp, target))
        else:
            _persist(tmp, target)
    return {"sha256": digest, "kind": kind, "content_type": content_type, "bytes": len(data)}


_MAGIC: tuple[tuple[int, bytes, str], ...] = (
    (4, b"ftyp", "MP4"), (4, b"moov", "MP4"), (4, b"mdat", "MP4"), (4, b"free", "MP4"),
    (4, b"wide", "MP4"), (4, b"skip", "MP4"), (0, b"\x1a\x45\xdf\xa3", "WebM"),
    (0, b"GIF87a", "GIF"), (0, b"GIF89a", "GIF"), (0, b"\x89PNG\r\n\x1a\n", "PNG"),
)
"""Where a media container's signature lies, and which container it says."""


def refuse_reason(source: str | Path) -> str | None:
    """Why ``source`` is not a clip a report can show, or ``None`` when it is one.

    Refused: not a regular file, 0 bytes, over :data:`~evalband._util.limits.MAX_MEDIA_BYTES`,
    no MP4/WebM/GIF/PNG signature, or (with PyAV installed) a video whose first frame does
    not decode. lerobot-eval's writer can leave 0-byte or truncated files; a report would
    embed them as players that never start.

    >>> import tempfile
    >>> empty = Path(tempfile.mkdtemp()) / "e.mp4"
    >>> _ = empty.write_bytes(b"")
    >>> refuse_reason(empty)
    '0 bytes'
    >>> _ = empty.write_bytes(b"root:x:0:0:root:/root:/bin/bash")
    >>> refuse_reason(empty)
    'not a video or image (no MP4, WebM, GIF or PNG signature)'
    """
    from evalband._util.limits import MAX_MEDIA_BYTES

    source = Path(source)
    try:
        info = source.stat()
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    import stat

    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if info.st_size == 0:
        return "0 bytes"
    if info.st_size > MAX_MEDIA_BYTES:
        return f"{info.st_size:,} bytes, over the {MAX_MEDIA_BYTES:,} a clip may have"
    with source.open("rb") as fh:
        head = fh.read(16)
    kinds = [kind for at, magic, kind in _MAGIC if head[at:at + len(magic)] == magic]
    if not kinds:
        return "not a video or image (no MP4, WebM, GIF or PNG signature)"
    if kinds[0] in ("MP4", "WebM"):
        return _undecodable(source)
    return None


def _undecodable(source: Path) -> str | None:
    """Why the first frame of a video does not decode (``None``: it does, or PyAV is absent)."""
    try:
        import av
    except ImportError:
        return None  # the signature is all that can be checked here
    try:
        with av.open(str(source)) as container:
            if not container.streams.video:
                return "no video stream"
            for _ in container.decode(video=0):
                return None
        return "no frame decodes"
    except Exception as exc:  # noqa: BLE001 - any decoder error: the clip is refused
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"undecodable ({first})"


def store_media_file(
    store_path: str | Path, source: str | Path, *, kind: str = "video"
) -> dict[str, Any]:
    """Copy the file ``source`` beside the store, named by its sha256; return the reference."""
    source = Path(source)
    with source.open("rb") as fh:
        digest = hashlib.file_digest(fh, "sha256").hexdigest()
    content_type = content_type_of(source)
    target = media_dir(store_path) / f"{digest}{_suffix(content_type, source.suffix.lower())}"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".part")
        os.close(fd)
        shutil.copyfile(source, tmp)
        os.replace(tmp, target)
    return {
        "sha256": digest,
        "kind": kind,
        "content_type": content_type,
        "bytes": target.stat().st_size,
    }


def media_file(store_path: str | Path, ref: Mapping[str, Any]) -> Path | None:
    """The stored file a reference names, or ``None`` when it is not (or no longer) there."""
    digest = ref.get("sha256")
    if not isinstance(digest, str) or not digest.isalnum():
        return None
    content_type = str(ref.get("content_type", ""))
    directory = media_dir(store_path)
    target = directory / f"{digest}{_suffix(content_type)}"
    if target.is_file():
        return target
    matches = sorted(directory.glob(f"{digest}.*")) if directory.is_dir() else []
    return matches[0] if matches else None
