"""What killed writes leave in a session workspace, and its removal when the session is next opened.

A save that was killed leaves a temp file (``.NAME@OWNER-....parquet.XXXX.tmp``) or a complete
dataset version that no record names (killed after the rename, before the commit). Both carry
their writer's ``owner_token`` in their name, so the sweep removes them only when that nini is
gone: a version a live process is about to record is never touched. A chart's temp file
(``artifacts/.NAME.png.XXXX.tmp``) names no writer; it is removed once it is older than any
figure takes to write (``ARTIFACT_TEMP_GRACE_S``). Everything goes through the workspace file
system: nothing is followed through a link.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterable

from nini.errors import NiniError
from nini.execution.runtime_dirs import token_alive
from nini.execution.workspace import DATASET_VERSION, Workspace

log = logging.getLogger("nini.execution")

ARTIFACT_TEMP_GRACE_S = 600.0
_OWNER_IN_TEMP = re.compile(r"@(\d+-\d+)-[0-9a-f]{8}\.parquet\.")


def sweep_workspace(workspace: Workspace, recorded: Iterable[str]) -> list[str]:
    """Remove the leftovers of dead writers; the workspace-relative paths removed.

    ``recorded`` are the dataset files the record names (``datasets`` rows' paths): never removed.
    """
    fs, keep = workspace.fs, set(recorded)
    removed = []
    for name in fs.listdir("datasets"):
        relative = f"datasets/{name}"
        if relative in keep:
            continue
        if name.startswith(".") and name.endswith(".tmp"):
            owner = _OWNER_IN_TEMP.search(name)
            dead = owner is None or not token_alive(owner.group(1))  # no owner: an older nini's write
        else:
            version = DATASET_VERSION.match(name)
            dead = version is not None and not token_alive(version.group("owner"))
        if dead and _remove(workspace, relative):
            removed.append(relative)
    now = time.time()
    for name in fs.listdir("artifacts"):
        relative = f"artifacts/{name}"
        if name.startswith(".") and name.endswith(".tmp") and _older(workspace, relative, now) and _remove(workspace, relative):
            removed.append(relative)
    if removed:
        log.info("removed %d file(s) left by interrupted writes in a session workspace", len(removed))
    return removed


def _older(workspace: Workspace, relative: str, now: float) -> bool:
    try:
        found = workspace.fs.lstat(relative)
    except NiniError:
        return False
    return found is not None and now - found.st_mtime > ARTIFACT_TEMP_GRACE_S


def _remove(workspace: Workspace, relative: str) -> bool:
    try:
        workspace.fs.unlink(relative)
    except (NiniError, OSError):
        return False  # gone meanwhile, or not ours to remove: the next sweep tries again
    return True
