"""What killed writes leave in a session workspace, and its removal when the session is next opened.

A save that was killed leaves a temp file (``.NAME@OWNER-....parquet.XXXX.tmp``) or a complete
dataset version that no record names (killed after the rename, before the commit). Both carry
their writer's ``owner_token`` in their name, so the sweep removes them only when that nini is
gone: a version a live process is about to record is never touched. A run lists each chart
file in ``artifacts/.pending-OWNER-RANDOM.txt`` before putting it in place, and nini removes
that list once the run is recorded; a list left by a dead nini names charts no record may
name, and those are removed. A chart's temp file (``artifacts/.NAME.png.XXXX.tmp``) names no
writer; it is removed once older than any figure takes to write (``ARTIFACT_TEMP_GRACE_S``).
Everything goes through the workspace file system: nothing is followed through a link.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable

from nini.errors import NiniError
from nini.execution.runtime_dirs import token_alive
from nini.execution.workspace import DATASET_VERSION, Workspace

log = logging.getLogger("nini.execution")

ARTIFACT_TEMP_GRACE_S = 600.0
_OWNER_IN_TEMP = re.compile(r"@(\d+-\d+)-[0-9a-f]{8}\.parquet\.")
_PENDING = re.compile(r"^\.pending-(\d+-\d+)-[0-9a-f]{8}\.txt$")


def sweep_workspace(
    workspace: Workspace, recorded: Iterable[str], recorded_artifacts: Callable[[], set[str]] = set
) -> list[str]:
    """Remove the leftovers of dead writers; the workspace-relative paths removed.

    ``recorded`` are the dataset files the record names (``datasets`` rows' paths), and
    ``recorded_artifacts()`` the artifact paths it names (asked only when a dead run's list is
    found): neither is ever removed.
    """
    keep = set(recorded)
    removed = []
    for name in _entries(workspace, "datasets"):
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
    charts = None
    entries = _entries(workspace, "artifacts")
    for name in entries:
        relative = f"artifacts/{name}"
        if name.startswith(".") and name.endswith(".tmp") and _older(workspace, relative, now) and _remove(workspace, relative):
            removed.append(relative)
        elif (pending := _PENDING.match(name)) and not token_alive(pending.group(1)):
            charts = recorded_artifacts() if charts is None else charts
            removed += _unrecorded_charts(workspace, relative, charts, entries)
    if removed:
        log.info("removed %d file(s) left by interrupted writes in a session workspace", len(removed))
    return removed


def _unrecorded_charts(workspace: Workspace, pending: str, charts: set[str], entries: list[str]) -> list[str]:
    """Remove the files a dead run's list names that no record names (and their temp files,
    ``.NAME.XXXX.tmp``: the run may have died writing one), then the list."""
    removed = []
    try:
        listed = workspace.fs.read_bytes(pending).decode("utf-8", "replace").splitlines()
    except NiniError:
        listed = []
    for name in dict.fromkeys(n for n in listed if n and "/" not in n and not n.startswith(".")):
        if f"artifacts/{name}" in charts:
            continue
        temps = [entry for entry in entries if entry.startswith(f".{name}.") and entry.endswith(".tmp")]
        for relative in [f"artifacts/{name}", *(f"artifacts/{temp}" for temp in temps)]:
            if _remove(workspace, relative):
                removed.append(relative)
    if _remove(workspace, pending):
        removed.append(pending)
    return removed


def _entries(workspace: Workspace, folder: str) -> list[str]:
    """The names in ``folder``; none when it is a link or special file (agent code can plant one):
    there is nothing of nini's to sweep there, and nothing is followed."""
    try:
        return workspace.fs.listdir(folder)
    except NiniError:
        return []


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
