"""Crash-safe file writes: a reader sees the old content or the new, never half of either."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from nini.errors import ErrorCode, NiniError


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temp file in the same folder and ``os.replace``.

    The temp file is fsynced before the rename, so a killed process or a power cut leaves either
    the previous file or the complete new one. On failure (full disk, permissions) the previous
    file is untouched, the temp file is removed and a ``NiniError(INTERNAL)`` names the path.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = write_temp(path.parent, data, prefix=f".{path.name}.")
    except OSError as exc:
        raise _write_error(path, exc) from exc
    try:
        os.replace(temp, path)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise _write_error(path, exc) from exc


def write_temp(folder: Path, data: bytes, *, prefix: str, suffix: str = ".tmp") -> Path:
    """``data`` in a new file of ``folder`` (named ``prefix...suffix``), fsynced: the first half of
    an atomic write, for callers that put it in place themselves. Raises OSError, leaving nothing."""
    fd, name = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as temp:
            temp.write(data)
            temp.flush()
            os.fsync(temp.fileno())
    except OSError:
        Path(name).unlink(missing_ok=True)
        raise
    return Path(name)


def atomic_write_text(path: Path, text: str) -> None:
    """``atomic_write_bytes`` for UTF-8 text."""
    atomic_write_bytes(path, text.encode("utf-8"))


def _write_error(path: Path, exc: OSError) -> NiniError:
    reason = exc.strerror or exc.__class__.__name__
    return NiniError(
        ErrorCode.INTERNAL,
        f"could not write {path}: {reason}; the previous file, if any, is unchanged",
        {"path": str(path), "errno": exc.errno},
    )
