"""Finding skill files under the skill roots, and telling cheaply whether anything changed.

A skill folder is one that holds ``SKILL.md`` (or ``skill.md``) or a ``skill.py``; the scan does
not descend into it, so a skill's own resources are never mistaken for skills. The scan keeps a
fingerprint (mtime of every folder it listed, size and mtime of every skill file) so a refresh
with nothing changed is a few thousand ``stat`` calls, not a re-read.

An mtime is only trusted once it has "settled": a file saved twice within the file system's
timestamp granularity (coarse clocks, FAT's 2 s) at the same size keeps the same mtime, so a
second save right after a scan would look unchanged. Anything whose mtime is within
``SETTLE_NS`` of the scan (or in the future) is fingerprinted as ``UNSETTLED``, which never
matches, and is marked ``settled=False`` so its parse is not cached (as git does for "racy" files).
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from nini.config import Settings
from nini.skills.markdown import SKILL_FILENAMES

BUNDLED_DIR = Path(__file__).parent / "bundled"
PYTHON_SKILL_FILE = "skill.py"
MAX_DEPTH = 6
_SKIP_DIRS = frozenset({"__pycache__", "node_modules"})
SETTLE_NS = 2_000_000_000  # FAT's 2 s is the coarsest mtime granularity in common use
UNSETTLED = "unsettled"  # a fingerprint key no stat result equals: always re-checked

RootKind = Literal["project", "agents", "claude", "user", "extra", "bundled"]


@dataclass(frozen=True)
class SkillRoot:
    """A folder of skills. ``trust_code``: whether its ``skill.py`` files are imported.

    Project folders arrive with whatever repository the user cloned, so only roots the user set
    up (the user dir and extra dirs from settings) may run Python on discovery.
    """

    kind: RootKind
    path: Path
    trust_code: bool = False


@dataclass(frozen=True)
class FoundFile:
    root: SkillRoot
    path: Path
    location: str  # relative to the root, POSIX separators
    kind: Literal["markdown", "python"]
    size: int
    mtime_ns: int
    settled: bool = True  # False: the file may still change without its size or mtime changing

    @property
    def cache_key(self) -> tuple[str, int, int]:
        return (str(self.path), self.size, self.mtime_ns)


StatKey = tuple[int, int] | None | str  # (mtime_ns, size), None when missing, or UNSETTLED
Fingerprint = tuple[tuple[str, StatKey], ...]


@dataclass(frozen=True)
class Scan:
    files: tuple[FoundFile, ...]
    fingerprint: Fingerprint


def standard_roots(settings: Settings, project_dir: Path | None) -> list[SkillRoot]:
    """The roots in priority order: the first root holding a name wins."""
    roots: list[SkillRoot] = []
    if project_dir is not None:
        project_dir = Path(project_dir)
        roots += [
            SkillRoot("project", project_dir / ".nini" / "skills"),
            SkillRoot("agents", project_dir / ".agents" / "skills"),
            SkillRoot("claude", project_dir / ".claude" / "skills"),
        ]
    roots.append(SkillRoot("user", settings.user_skills_dir, trust_code=True))
    roots += [SkillRoot("extra", path, trust_code=True) for path in settings.skills.extra_dirs]
    roots.append(SkillRoot("bundled", BUNDLED_DIR))
    return roots


def scan_roots(roots: list[SkillRoot], watch_files: tuple[Path, ...] = ()) -> Scan:
    """Every skill file under ``roots``, in priority order, with the fingerprint to re-check."""
    # the start of the scan: the earliest moment any stat below could have been taken
    settled_before = time.time_ns() - SETTLE_NS
    files: list[FoundFile] = []
    watched: list[tuple[str, StatKey]] = [(str(p), _stat_key(p)) for p in watch_files]
    for root in roots:
        _scan_root(root, files, watched)
    watched = [(path, _settle(key, settled_before)) for path, key in watched]
    files = [f if f.mtime_ns < settled_before else replace(f, settled=False) for f in files]
    return Scan(tuple(files), tuple(watched))


def is_unchanged(scan: Scan) -> bool:
    """True when nothing the scan saw has been added, removed or modified since."""
    # a hot path (every agent turn): plain strings and a local os.stat, no Path objects
    stat_key = _stat_key
    return all(stat_key(path) == key for path, key in scan.fingerprint)


def _scan_root(root: SkillRoot, files: list[FoundFile], watched: list[tuple[str, StatKey]]) -> None:
    seen: set[tuple[int, int]] = set()
    stack: list[tuple[str, int]] = [(str(root.path), 0)]
    root_prefix = len(str(root.path)) + 1
    while stack:
        folder, depth = stack.pop()
        try:
            info = os.stat(folder)
            with os.scandir(folder) as listing:
                entries = {entry.name: entry for entry in listing}
        except OSError:
            watched.append((folder, None))
            continue
        watched.append((folder, (info.st_mtime_ns, 0)))
        if (info.st_dev, info.st_ino) in seen:  # a symlink loop
            continue
        seen.add((info.st_dev, info.st_ino))
        skill_files = [entries[n] for n in (*SKILL_FILENAMES, PYTHON_SKILL_FILE) if n in entries]
        skill_files = [e for e in skill_files if _is_file(e)]
        markdown = [e for e in skill_files if e.name in SKILL_FILENAMES][:1]  # SKILL.md before skill.md
        python = [e for e in skill_files if e.name == PYTHON_SKILL_FILE]
        if markdown or python:
            kinds: list[tuple[os.DirEntry[str], Literal["markdown", "python"]]] = [(e, "markdown") for e in markdown]
            for entry, kind in kinds + [(e, "python") for e in python]:
                info = entry.stat()
                watched.append((entry.path, (info.st_mtime_ns, info.st_size)))
                location = entry.path[root_prefix:].replace(os.sep, "/")
                files.append(FoundFile(root, Path(entry.path), location, kind, info.st_size, info.st_mtime_ns))
            continue
        if depth >= MAX_DEPTH:
            continue
        for name in sorted(entries, reverse=True):  # reversed: the stack pops them in name order
            entry = entries[name]
            if name.startswith(".") or name in _SKIP_DIRS:
                continue
            try:
                if entry.is_dir():
                    stack.append((entry.path, depth + 1))
            except OSError:
                continue


def _settle(key: StatKey, settled_before: int) -> StatKey:
    """``key``, or ``UNSETTLED`` when its mtime is too recent to tell a later save apart."""
    if isinstance(key, tuple) and key[0] >= settled_before:
        return UNSETTLED
    return key


def _is_file(entry: os.DirEntry) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def _stat_key(path: str | Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_mtime_ns, 0 if stat.S_ISDIR(info.st_mode) else info.st_size)
