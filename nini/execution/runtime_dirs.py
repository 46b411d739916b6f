"""Private runtime folders of kernels and R workers, and the sweep of those a dead process left.

A kernel's folder (its log, ipc sockets, the sandbox's passwd) and an R worker's (its HOME and
TMPDIR) are removed when they stop; a nini killed with SIGKILL cannot do that. Each folder
therefore names its owner: ``.nini-owner`` holds the creating process's pid and start time (from
``/proc/PID/stat``), so a pid reused by another process is not mistaken for the owner. The next
nini to start kernels or workers removes the folders whose owner is gone, never a live one's,
and only folders it owns itself (``/tmp`` is shared: another user's lookalike is left alone).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

log = logging.getLogger("nini.execution")

OWNER_FILE = ".nini-owner"
PREFIXES = ("nini-kernel-", "nini-r-", "nini-parse-")


def process_start(pid: int) -> str | None:
    """The start time of process ``pid`` in clock ticks since boot; None when it does not exist."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: count from the last ")"
    return stat.rsplit(")", 1)[1].split()[19]


def owner_token() -> str:
    """This process as ``PID-START``: written into the names of files it is still to record (dataset
    versions, temp files), so a sweep can tell a dead writer's leftovers from a live one's work."""
    return _token_of(os.getpid())


@functools.cache
def _token_of(pid: int) -> str:
    """``owner_token`` of the process ``pid`` (a process's start time never changes: read once per
    pid, not at every call; a forked child has a pid of its own)."""
    return f"{pid}-{process_start(pid)}"


def token_alive(token: str) -> bool:
    """Whether the process ``owner_token`` named is still running (the same pid and start time)."""
    pid, _, start = token.partition("-")
    return pid.isdigit() and int(pid) > 0 and process_start(int(pid)) == start


def make_runtime_dir(prefix: str, base: Path | None = None) -> Path:
    """A new private (0700) folder ``base/prefixXXXXXXXX`` stamped with this process as its owner."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    owner = {"pid": os.getpid(), "start": process_start(os.getpid())}  # JSON: a stamp, not a name
    (folder / OWNER_FILE).write_text(json.dumps(owner), encoding="utf-8")
    return folder


def sweep_runtime_dirs(bases: Iterable[Path]) -> list[Path]:
    """Remove the runtime folders under ``bases`` whose owning process is gone; the ones removed."""
    removed = []
    for base in dict.fromkeys(Path(b) for b in bases):
        try:
            entries = list(os.scandir(base))
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith(PREFIXES) and _abandoned(entry):
                shutil.rmtree(entry.path, ignore_errors=True)  # never follows a link (fd-based walk)
                removed.append(Path(entry.path))
    if removed:
        log.info("removed %d runtime folder(s) left by processes that are gone", len(removed))
    return removed


def _abandoned(entry: os.DirEntry[str]) -> bool:
    """Whether ``entry`` is a folder of this user whose recorded owner no longer runs."""
    try:
        if not entry.is_dir(follow_symlinks=False):
            return False
        if os.geteuid() != 0 and entry.stat(follow_symlinks=False).st_uid != os.geteuid():
            return False  # another user's (root's folders may be handed to a sandbox uid: root checks the stamp)
        fd = os.open(os.path.join(entry.path, OWNER_FILE), os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, encoding="utf-8") as file:
            owner = json.loads(file.read(4096))
        pid, start = int(owner["pid"]), owner.get("start")
    except (OSError, ValueError, KeyError, TypeError):
        return False  # not stamped (an older nini's, or not ours): left alone
    return pid <= 0 or process_start(pid) != start
