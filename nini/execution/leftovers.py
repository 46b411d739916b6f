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

A killed server's leftovers would otherwise stay until each session is used again: a server
starting (the Jupyter extension, ``nini mcp``) sweeps them all once, in the background
(``sweep_after_start``): the runtime folders of kernels, R workers and readers whose process is gone
(``runtime_dirs``), the cgroup trees of dead nini processes (``cgroups.placement``), every session
workspace's leftovers as above, and the temp files of atomic writes in NINI_HOME (``.NAME.XXXX.tmp``,
the database's ``.nini.db.HEX.new``) once older than any such write takes. A live process's files are
never touched: every name that says its owner is checked (pid and start time), the rest by age.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from nini.errors import NiniError
from nini.execution.runtime_dirs import sweep_runtime_dirs, token_alive
from nini.execution.workspace import DATASET_VERSION, Workspace

log = logging.getLogger("nini.execution")

ARTIFACT_TEMP_GRACE_S = 600.0
_OWNER_IN_TEMP = re.compile(r"@(\d+-\d+)-[0-9a-f]{8}\.parquet\.")
_PENDING = re.compile(r"^\.pending-(\d+-\d+)-[0-9a-f]{8}\.txt$")
# the temp files of atomic writes in NINI_HOME: fsutil's ``.NAME.XXXX.tmp``, engine's ``.nini.db.HEX.new``
_HOME_TEMP = re.compile(r"^\..+\.(?:tmp|[0-9a-f]{32}\.new)$")


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
        if (
            name.startswith(".")
            and name.endswith(".tmp")
            and _older(workspace, relative, now)
            and _remove(workspace, relative)
        ):
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


def discard_run(workspace: Workspace, save_file: str | None, pending_file: str | None) -> list[str]:
    """Remove what a run wrote for a record that will never be written (the skill failed after the
    run: the database could not be read, the call was cancelled): its new dataset version, and the
    charts its list names with the list itself. The run's files are its own (new names), so no
    record names them."""
    removed = [save_file] if save_file and _remove(workspace, save_file) else []
    if pending_file and workspace.fs.lstat(pending_file) is not None:
        removed += _unrecorded_charts(workspace, pending_file, set(), _entries(workspace, "artifacts"))
    return removed


def sweep_after_start(
    sessions_dir: Path,
    recorded: Callable[[str], tuple[Iterable[str], Callable[[], set[str]]]],
    *,
    runtime_bases: Iterable[Path] = (),
    temp_folders: Iterable[Path] = (),
    cgroups: Callable[[], object] | None = None,
) -> int:
    """Sweep what dead nini processes left (module docstring); how many entries were removed.

    ``recorded(session_id)`` gives the dataset files its record names and a callable for its
    artifact paths (asked only where a leftover is found: a session without any costs no query);
    a session whose record cannot be read now (the database is down) is left for its next use.
    ``cgroups()`` finds the cgroup placement, which sweeps dead trees the first time.
    """
    removed = len(sweep_runtime_dirs(runtime_bases))
    if cgroups is not None:
        try:
            cgroups()
        except OSError as exc:
            log.info("the cgroups of dead processes were not swept: %s", exc)
    now = time.time()
    for folder in dict.fromkeys(Path(f) for f in temp_folders):
        removed += _old_temps(folder, now)
    try:
        sessions = sorted(entry.name for entry in os.scandir(sessions_dir) if entry.is_dir(follow_symlinks=False))
    except OSError:
        sessions = []
    for session_id in sessions:
        try:
            workspace = Workspace.for_session(sessions_dir, session_id)
        except NiniError:
            continue  # not a session's folder
        if not _has_leftovers(workspace):
            continue
        try:
            datasets, artifacts = recorded(session_id)
            removed += len(sweep_workspace(workspace, list(datasets), artifacts))
        except NiniError as exc:
            log.info("session %s was not swept (%s): its next use sweeps it", session_id, exc.message)
    return removed


def _has_leftovers(workspace: Workspace) -> bool:
    """Whether the workspace holds anything ``sweep_workspace`` may remove (its names alone)."""
    return any("@" in name or name.endswith(".tmp") for name in _entries(workspace, "datasets")) or any(
        name.endswith(".tmp") or _PENDING.match(name) for name in _entries(workspace, "artifacts")
    )


def _old_temps(folder: Path, now: float) -> int:
    """Remove the temp files of atomic writes in ``folder`` older than ``ARTIFACT_TEMP_GRACE_S``
    (their names say no writer: a write under way is younger than that); regular files only."""
    count = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        try:
            if (
                _HOME_TEMP.match(entry.name)
                and entry.is_file(follow_symlinks=False)
                and now - entry.stat(follow_symlinks=False).st_mtime > ARTIFACT_TEMP_GRACE_S
            ):
                os.unlink(entry.path)
                count += 1
        except OSError:
            continue
    return count
