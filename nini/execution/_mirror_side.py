"""Runs inside a gateway kernel: its copy of the session workspace, written and read in chunks.

A kernel on a gateway does not see the server's disk, so nini keeps a folder of the kernel's own
(``make_root``) as the workspace there and carries files across the kernel protocol
(``mirror.py`` on the host). Paths come from nini, relative to that folder.
"""

from __future__ import annotations

import atexit
import base64
import os
import shutil
import tempfile
from pathlib import Path, PurePosixPath

from nini.execution._kernel_side import _Json
from nini.execution.workspace import SUBFOLDERS


def make_root(own: bool) -> _Json:
    """A fresh workspace folder for this kernel, removed when the kernel shuts down cleanly.

    In nini's ``own`` kernel (not a notebook's) it becomes the working directory and matplotlib's
    backend is Agg, as in a local kernel: figures are saved by ``collect`` rather than shown inline
    (and closed) by the gateway's ipykernel."""
    root = tempfile.mkdtemp(prefix="nini-workspace-")
    for folder in SUBFOLDERS:
        os.mkdir(os.path.join(root, folder))
    if own:
        os.chdir(root)
        os.environ["MPLBACKEND"] = "Agg"
    atexit.register(shutil.rmtree, root, True)
    return _Json(root)


def write(root: str, relative: str, data: str, append: bool) -> None:
    """Write (or append) base64 ``data`` to ``relative`` beneath ``root``."""
    path = _beneath(root, relative)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab" if append else "wb") as handle:
        handle.write(base64.b64decode(data))


def touch(root: str, relatives: list[str]) -> None:
    """Empty files standing for names the server's workspace already uses (its charts), so that
    this kernel's next chart does not take one of them."""
    for relative in relatives:
        path = _beneath(root, relative)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()


def read(root: str, relative: str, offset: int, size: int) -> _Json:
    """``{data: base64 of at most size bytes from offset, size: the file's size}``."""
    with open(_beneath(root, relative), "rb") as handle:
        total = os.fstat(handle.fileno()).st_size
        handle.seek(offset)
        return _Json({"data": base64.b64encode(handle.read(size)).decode("ascii"), "size": total})


def _beneath(root: str, relative: str) -> Path:
    parts = PurePosixPath(relative).parts
    if not parts or PurePosixPath(relative).is_absolute() or ".." in parts:
        raise ValueError(f"not a workspace path: {relative!r}")
    return Path(root, *parts)
