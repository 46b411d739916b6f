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
        fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise _write_error(path, exc) from exc
    try:
        with os.fdopen(fd, "wb") as tmp:
            tmp.write(data)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp_name, path)
    except OSError as exc:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise _write_error(path, exc) from exc


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
