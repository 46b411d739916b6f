"""Crash-safe file writes, and the one way a full disk is told.

A reader of ``atomic_write_bytes``' file sees the old content or the new, never half of either.

A full disk (ENOSPC, or EDQUOT: a user's quota) is ``NO_SPACE`` wherever nini or its kernels write
(issue 36: it used to come out as CODE_ERROR, DB_ERROR, TOO_LARGE or INTERNAL with a host path):
``no_space(what)`` is that error, naming the place as a person finds it (``$NINI_HOME/...``, "the
session workspace", a file's name: never an absolute path, ``shown_path``) and what to do;
``out_of_space(exc)`` tells such an OSError. TOO_LARGE stays for nini's own limits (a workspace's
budget, RLIMIT_FSIZE's EFBIG).
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from nini.errors import ErrorCode, NiniError

NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
# What libraries say when they report a full disk without an errno (pyarrow's OSError, R's
# connections, SQLite's SQLITE_FULL): matched in lower case.
NO_SPACE_WORDS = (
    "no space left on device",
    "disk quota exceeded",
    "[errno 28]",
    "database or disk is full",
    "the disk is full",
)  # the last: no_space's own message, passed on as text (a kernel's save)
NO_SPACE_ADVICE = "free some space (old sessions, datasets, reports) or ask an administrator, then try again"


def out_of_space(exc: BaseException) -> bool:
    """Whether ``exc`` says a disk is full: an OSError ENOSPC or EDQUOT, or an OSError whose text
    says so (pyarrow raises ``OSError("... [errno 28] No space left on device")`` with no errno)."""
    if not isinstance(exc, OSError):
        return False
    return exc.errno in NO_SPACE_ERRNOS or no_space_text(str(exc))


def no_space_text(text: str) -> bool:
    """Whether an error's text (a kernel's ``evalue``, R's condition) says a disk is full."""
    lowered = text.lower()
    return any(words in lowered for words in NO_SPACE_WORDS)


def no_space(what: str, **details: object) -> NiniError:
    """NO_SPACE: the disk holding ``what`` (a place as a person finds it, never an absolute path)
    is full, and what to do."""
    return NiniError(
        ErrorCode.NO_SPACE,
        f"the disk is full: nini could not write {what}; {NO_SPACE_ADVICE}",
        {"where": what, **details},
    )


FULL_MARGIN = 1 << 20  # a file system with less free than this is full: no write of nini's fits


def disk_full(folder: Path | str, margin: int = FULL_MARGIN) -> bool:
    """Whether the file system of ``folder`` has (nearly) no room left: free bytes under ``margin``
    (what this user may use: root may use the reserved blocks too), or no free inode. For errors
    that do not say why a write failed (SQLite's "disk I/O error"); False when it cannot be told."""
    try:
        found = os.statvfs(folder)
    except OSError:
        return False
    free = found.f_bfree if os.geteuid() == 0 else found.f_bavail
    return free * found.f_frsize < margin or (found.f_files > 0 and found.f_ffree == 0)


NEARLY_FULL_SHARE = 0.05  # a disk with less than this share free, or NEARLY_FULL_BYTES, is nearly full
NEARLY_FULL_BYTES = 256 << 20


def disk_checks(places: dict[str, Path]) -> list[tuple[str, bool, str, bool]]:
    """``nini doctor``'s look at the disks of ``places`` (name -> folder; a folder on the disk of an
    earlier one is said once): (check name, ok, detail, required) each. A full disk fails (nothing
    nini writes fits), a nearly full one warns."""
    found: list[tuple[str, bool, str, bool]] = []
    seen: dict[int, str] = {}
    for name, folder in places.items():
        folder = next((p for p in (Path(folder), *Path(folder).parents) if p.exists()), Path("/"))
        try:
            device, space = os.stat(folder).st_dev, os.statvfs(folder)
        except OSError as exc:
            found.append((f"disk of {name}", False, f"cannot be read: {exc.strerror or exc}", False))
            continue
        if device in seen:
            continue
        seen[device] = name
        free = (space.f_bfree if os.geteuid() == 0 else space.f_bavail) * space.f_frsize
        total = space.f_blocks * space.f_frsize
        detail = f"{free / 2**20:,.0f} MiB free of {total / 2**20:,.0f} MiB"
        if space.f_files > 0:
            detail += f", {space.f_ffree:,} of {space.f_files:,} inodes free"
        if disk_full(folder):
            found.append(
                (
                    f"disk of {name}",
                    False,
                    f"full ({detail}): every write of nini fails with NO_SPACE; {NO_SPACE_ADVICE}",
                    True,
                )
            )
        elif free < NEARLY_FULL_BYTES or free < total * NEARLY_FULL_SHARE:
            found.append((f"disk of {name}", False, f"nearly full ({detail}); {NO_SPACE_ADVICE}", False))
        else:
            found.append((f"disk of {name}", True, detail, False))
    return found


def shown_path(path: Path | str, home: Path | None = None) -> str:
    """``path`` as a message may show it: ``$NINI_HOME/...`` beneath NINI_HOME (``home``, else the
    one the environment names), else its name alone."""
    from nini.config import resolve_home  # config writes through this module

    path = Path(path)
    for root in (home, resolve_home()):
        if root is not None:
            try:
                relative = path.relative_to(Path(root).expanduser()).as_posix()
            except ValueError:
                continue
            return "$NINI_HOME" if relative == "." else f"$NINI_HOME/{relative}"
    return path.name or "."


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temp file in the same folder and ``os.replace``.

    The temp file is fsynced before the rename, so a killed process or a power cut leaves either
    the previous file or the complete new one. On failure (full disk, permissions) the previous
    file is untouched, the temp file is removed and a ``NiniError`` says so: NO_SPACE for a full disk
    (naming the file as ``shown_path`` does), else INTERNAL naming the path.
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
    if out_of_space(exc):
        return no_space(shown_path(path))
    reason = exc.strerror or exc.__class__.__name__
    return NiniError(
        ErrorCode.INTERNAL,
        f"could not write {path}: {reason}; the previous file, if any, is unchanged",
        {"path": str(path), "errno": exc.errno},
    )
