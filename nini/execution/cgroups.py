"""Control groups of agent processes: memory and process limits that count what they mean.

RLIMITs count the wrong things: RLIMIT_AS misses what a process holds outside its address space
(memfds, files in its tmpfs ``/tmp`` and ``/dev/shm``, shared memory), and RLIMIT_NPROC counts every
thread of a uid, so one session's kernels starved each other. A cgroup counts what its processes
use, all of it, and only theirs. Each agent process (a Python kernel, an R worker) gets one of its
own, in a group per session, in a tree per nini process::

    BASE/nini-PID-START/s-SESSION/AGENT        (on cgroup v1 under each controller's BASE)

The agent's group holds its limits: ``memory`` (``execution.memory_limit_mb`` for a kernel,
``r.memory_limit_mb`` for an R worker; no swap) and ``pids`` (``execution.max_processes``
processes and threads). Limits are per agent, as the settings say, so a session's kernel and R
worker, or the kernels several ``nini run-code`` processes start for one session, never share a
budget; the session's group gathers its agents (what an administrator or ``nini doctor`` sees).

Where (``placement``, once per process): the folders of ``execution.cgroup_folders`` (delegated
to nini's user), else nini's own cgroup of each controller where nini may write there (a root
nini), else ``systemd-run --scope`` (``--user`` for a non-root nini with a user manager). Each is
tried for real once (a group made, a process put in it); if none works, the RLIMITs of ``confine``
are the only limits, and ``nini doctor`` says what they miss.

Entering without a race: the agent's command starts with ``/bin/sh -c`` writing its own pid into
the group's ``cgroup.procs`` of each controller, then exec'ing bubblewrap, so nothing of the agent
ever runs outside it (``systemd-run --scope`` does the same for a scope). A group is removed when
its agent is stopped (``release``); the trees of nini processes that are gone (killed) are removed
by the next nini's ``placement``, never a live one's.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from nini.errors import ErrorCode, error_dict
from nini.execution.runtime_dirs import owner_token, token_alive

log = logging.getLogger("nini.execution")
Mechanism = Literal["cgroup v1", "cgroup v2", "systemd", "none"]
CONTROLLERS = ("memory", "pids")
# Enter the group(s) named before "--", then become the command after it. A failure says no path.
ENTER = (
    'for f; do [ "$f" = -- ] && break; { echo $$ >"$f"; } 2>/dev/null || { echo "nini: the agent process '
    'could not enter its control group" >&2; exit 125; }; shift; done; shift; exec "$@"'
)
TREE = re.compile(r"^nini-(\d+-\d+)$")
RELEASE_WAIT_S = 5.0  # for the killed processes of a released group to be gone
PROBE_MEMORY = 256 * 1024**2


@dataclass(frozen=True)
class Placement:
    """Where this process makes agent groups: ``bases`` pairs a controller with the folder its groups
    go under (cgroup v1: one folder per controller; v2: one folder for both). ``detail`` says what
    holds, or why nothing does."""

    mechanism: Mechanism
    detail: str
    bases: tuple[tuple[str, Path], ...] = ()
    user: bool = False  # systemd: the user's manager (systemd-run --user)

    @property
    def holds(self) -> frozenset[str]:
        """The controllers that limit agents here (the rest falls back to RLIMITs)."""
        if self.mechanism == "systemd":
            return frozenset(CONTROLLERS)
        return frozenset(controller for controller, _ in self.bases)


@dataclass
class AgentGroup:
    """The cgroup (or systemd scope) of one agent process."""

    placement: Placement
    name: str
    paths: tuple[Path, ...] = ()  # the agent's own folders, one per hierarchy
    memory_path: Path | None = None
    memory_bytes: int = 0
    max_processes: int = 0
    _oom_seen: int = field(default=0, repr=False)

    @property
    def holds(self) -> frozenset[str]:
        return self.placement.holds

    def command(self, cmd: list[str]) -> list[str]:
        """``cmd`` started inside this group: nothing of it runs before it is in."""
        if self.placement.mechanism == "systemd":
            return [
                *_systemd_run(self.placement.user),
                f"--unit={self.name}",
                "-p",
                f"MemoryMax={self.memory_bytes}",
                "-p",
                "MemorySwapMax=0",
                "-p",
                f"TasksMax={self.max_processes}",
                "--",
                *cmd,
            ]
        return ["/bin/sh", "-c", ENTER, "nini-cgroup", *(str(p / "cgroup.procs") for p in self.paths), "--", *cmd]

    def oom_kills(self) -> int:
        """Processes of this group the kernel killed for its memory limit since the last look."""
        if self.placement.mechanism == "systemd":
            result = _systemctl(self.placement.user, "show", "-p", "Result", "--value", self.name)
            return int(result.strip() == "oom-kill")
        if self.memory_path is None:
            return 0
        name = "memory.oom_control" if self.placement.mechanism == "cgroup v1" else "memory.events"
        try:
            text = (self.memory_path / name).read_text()
        except OSError:
            return 0
        found = re.search(r"^oom_kill (\d+)$", text, re.MULTILINE)
        total = int(found.group(1)) if found else 0
        new, self._oom_seen = total - self._oom_seen, total
        return new

    def release(self) -> bool:
        """The agent is over: kill what is left of it, remove its folders, and its session's and
        tree's when they are empty too. Blocking (a bounded wait); True when the group is gone."""
        if self.placement.mechanism == "systemd":
            _systemctl(self.placement.user, "reset-failed", self.name)  # a scope that failed stays listed
            return True
        removed = True
        for path in self.paths:
            removed = _remove(path) and removed
            for parent in (path.parent, path.parent.parent):  # the session's group, the tree
                try:
                    os.rmdir(parent)
                except OSError:  # not empty (another agent), or gone already
                    break
        return removed


def agent_group(
    setting: str, folders: Sequence[Path], workspace: Path, agent: str, memory_bytes: int, max_processes: int
) -> AgentGroup | None:
    """The group of a new agent process ``agent`` (a unique name: its runtime folder's) of the
    session whose workspace is ``workspace`` (``sessions/ID/workspace``: the session's group is
    named after ID), by the settings ``execution.cgroups`` and ``execution.cgroup_folders``. None
    where RLIMITs are all there is, or where making it fails now (logged: the agent then gets the
    RLIMITs too). Blocking."""
    found = placement(setting, tuple(str(folder) for folder in folders))
    try:
        return new_group(found, workspace.parent.name, agent, memory_bytes=memory_bytes, max_processes=max_processes)
    except OSError as exc:
        log.warning("no cgroup for %s (%s): RLIMITs only", agent, exc)
        return None


def oom_error(agent: Literal["kernel", "r"], limit_mb: int, language: str) -> dict[str, Any]:
    """The error of a run whose agent the kernel killed for its cgroup's memory limit: TOO_LARGE,
    naming the limit (the setting, its value) in ``language`` (``ui.language``)."""
    setting = "execution.memory_limit_mb" if agent == "kernel" else "r.memory_limit_mb"
    if language == "en":
        who = "the Python kernel" if agent == "kernel" else "the R worker"
        lost = (
            "it was restarted: variables and imports were lost"
            if agent == "kernel"
            else "a new one was started: the R session state (variables, loaded packages) was lost"
        )
        message = (
            f"{who} was stopped: its processes used more than its memory limit of {limit_mb} MiB ({setting}; "
            f"files in its /tmp and /dev/shm, memfds and shared memory count too); {lost}, datasets and "
            "artifacts saved in the workspace are kept"
        )
    else:
        who = "Python 内核" if agent == "kernel" else "R 工作进程"
        lost = (
            "内核已重启：变量和导入已丢失"
            if agent == "kernel"
            else "已启动新的 R 工作进程：R 会话状态（变量、已加载的包）已丢失"
        )
        message = (
            f"{who}已被停止：它的进程使用的内存超过了 {limit_mb} MiB 的上限（{setting}；/tmp 和 /dev/shm "
            f"中的文件、memfd 和共享内存也计入）；{lost}，工作区中保存的数据集和图表仍在"
        )
    return error_dict(ErrorCode.TOO_LARGE, message, limit=setting, limit_mb=limit_mb)


def new_group(
    where: Placement, session: str, agent: str, *, memory_bytes: int, max_processes: int
) -> AgentGroup | None:
    """A group for agent ``agent`` (a unique name: its runtime folder's) of ``session``, at ``where``;
    None where no cgroup can be made (RLIMITs only). Raises OSError when the placement stops working
    (what was made of the group is removed again)."""
    if where.mechanism == "none":
        return None
    session_part = "s-" + re.sub(r"[^A-Za-z0-9_.-]", "_", session)[:64]
    agent_part = re.sub(r"[^A-Za-z0-9_.-]", "_", agent)[:64]
    if where.mechanism == "systemd":
        unit = f"nini-{owner_token()}-{session_part}-{agent_part}.scope"
        return AgentGroup(where, unit, memory_bytes=memory_bytes, max_processes=max_processes)
    parts = (f"nini-{owner_token()}", session_part, agent_part)
    v2 = where.mechanism == "cgroup v2"
    group = AgentGroup(where, "/".join(parts), memory_bytes=memory_bytes, max_processes=max_processes)
    leaves: dict[Path, Path] = {}
    try:
        for controller, base in where.bases:
            if base not in leaves:
                leaves[base] = _descend(base, parts, enable=v2)
                group.paths = tuple(leaves.values())
            if controller == "memory":
                group.memory_path = leaves[base]
                _limit_memory(leaves[base], memory_bytes, v2=v2)
            else:
                _write(leaves[base] / "pids.max", max_processes)
    except OSError:
        group.release()
        raise
    return group


@functools.cache
def placement(setting: str = "auto", folders: tuple[str, ...] = ()) -> Placement:
    """Where agent groups go in this process, tried for real once (``execution.cgroups``,
    ``execution.cgroup_folders``); the trees of nini processes that are gone are removed then."""
    if setting == "off":
        return Placement("none", "execution.cgroups is 'off'")
    mounts = _mounts()
    reasons: list[str] = []
    direct = _named(folders, mounts, reasons) if folders else _own(mounts, reasons)
    if direct is not None:
        found = _tried(direct, reasons)
        if found is not None:
            _sweep(found)
            return found
    systemd = _systemd(reasons)
    if systemd is not None:
        return systemd
    return Placement("none", "; ".join(reasons) or "no memory or pids cgroup controller is mounted here")


def _descend(base: Path, parts: tuple[str, ...], *, enable: bool) -> Path:
    """``base/parts...``, made as needed; on cgroup v2 with the controllers enabled for the children
    of each level. A level another thread removes meanwhile (its last agent released) is made again."""
    for _attempt in range(3):
        path = base
        try:
            for part in parts:
                if enable:
                    _enable(path)
                path = path / part
                try:
                    os.mkdir(path, 0o755)
                except FileExistsError:
                    pass
            return path
        except FileNotFoundError:
            continue
    raise FileNotFoundError(f"cgroup folder {base} keeps vanishing")


def _enable(folder: Path) -> None:
    """Let ``folder``'s children have the memory and pids controllers (cgroup v2)."""
    enabled = (folder / "cgroup.subtree_control").read_text().split()
    missing = [c for c in CONTROLLERS if c not in enabled]
    if missing:
        _write(folder / "cgroup.subtree_control", " ".join(f"+{c}" for c in missing))


def _limit_memory(leaf: Path, limit: int, *, v2: bool) -> None:
    """The memory limit, swap included (no swap), and on v2 the whole group killed together."""
    if v2:
        _write(leaf / "memory.max", limit)
        for name, value in (("memory.swap.max", 0), ("memory.oom.group", 1)):
            if (leaf / name).exists():
                _write(leaf / name, value)
        return
    _write(leaf / "memory.limit_in_bytes", limit)
    if (leaf / "memory.memsw.limit_in_bytes").exists():  # memory + swap: with it, no swap at all
        _write(leaf / "memory.memsw.limit_in_bytes", limit)


def _write(path: Path, value: object) -> None:
    with open(path, "w") as file:
        file.write(str(value))


def _remove(path: Path) -> bool:
    """Kill the processes left in the group at ``path``, wait for them to go, remove it."""
    kill = path / "cgroup.kill"
    deadline = time.monotonic() + RELEASE_WAIT_S
    while True:
        try:
            pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
        except FileNotFoundError:
            return True
        except OSError:
            return False
        if not pids:
            try:
                os.rmdir(path)
                return True
            except FileNotFoundError:
                return True
            except OSError:
                pass  # still busy for a moment after the last task left
        elif kill.exists():
            _write(kill, 1)
        else:
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:  # gone already, or not ours to kill
                    pass
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)


def _sweep(found: Placement) -> None:
    """Remove the trees of nini processes that are gone: folders only, bottom up; a group that still
    has processes (or is another user's) stays."""
    for base in dict.fromkeys(base for _controller, base in found.bases):
        try:
            entries = [e for e in os.scandir(base) if e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        for entry in entries:
            match = TREE.match(entry.name)
            if match is None or token_alive(match.group(1)):
                continue
            for folder, _dirs, _files in os.walk(entry.path, topdown=False):
                try:
                    os.rmdir(folder)
                except OSError:
                    pass


# --- where groups can go ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Mount:
    point: Path
    root: str  # the hierarchy's folder mounted there
    version: int  # 1 or 2
    controllers: frozenset[str]


def _mounts() -> list[_Mount]:
    """The cgroup file systems mounted here (``/proc/self/mountinfo``)."""
    found = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        head, _, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if len(fields) < 5 or len(rest) < 3 or rest[0] not in ("cgroup", "cgroup2"):
            continue
        point = Path(fields[4].replace("\\040", " "))
        if rest[0] == "cgroup2":
            try:
                controllers = frozenset((point / "cgroup.controllers").read_text().split())
            except OSError:
                controllers = frozenset()
            found.append(_Mount(point, fields[3], 2, controllers))
        else:
            found.append(_Mount(point, fields[3], 1, frozenset(rest[2].split(","))))
    return found


def _own(mounts: list[_Mount], reasons: list[str]) -> Placement | None:
    """nini's own cgroup of each controller, where nini may make groups in it."""
    own: dict[str, str] = {}
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _id, names, path = line.split(":", 2)
            for name in names.split(",") if names else [""]:
                own[name] = path
    except (OSError, ValueError):
        return None
    bases: list[tuple[str, Path]] = []
    v1 = [m for m in mounts if m.version == 1 and m.controllers & set(CONTROLLERS)]
    for mount in v1 if v1 else [m for m in mounts if m.version == 2]:
        for controller in sorted(mount.controllers & set(CONTROLLERS)):
            folder = _inside(mount, own.get(controller if mount.version == 1 else ""))
            if folder is None:
                continue
            if os.access(folder, os.W_OK):
                bases.append((controller, folder))
            else:
                reasons.append(f"nini's own {controller} cgroup ({folder}) is not writable by its user")
    if not bases:
        if not v1 and not any(m.version == 2 and m.controllers & set(CONTROLLERS) for m in mounts):
            reasons.append("no memory or pids cgroup controller is mounted here")
        return None
    return Placement("cgroup v1" if v1 else "cgroup v2", "", tuple(dict.fromkeys(bases)))


def _named(folders: tuple[str, ...], mounts: list[_Mount], reasons: list[str]) -> Placement | None:
    """The cgroup folders ``execution.cgroup_folders`` names: the controllers each one has."""
    bases: list[tuple[str, Path]] = []
    versions = set()
    for name in folders:
        folder = Path(name)
        mount = max(
            (m for m in mounts if folder.is_relative_to(m.point)), key=lambda m: len(m.point.parts), default=None
        )
        if mount is None or not folder.is_dir():
            reasons.append(f"execution.cgroup_folders: {folder} is not a cgroup folder")
            continue
        if not os.access(folder, os.W_OK):
            reasons.append(f"execution.cgroup_folders: {folder} is not writable by nini's user")
            continue
        versions.add(mount.version)
        bases += [(c, folder) for c in sorted(mount.controllers & set(CONTROLLERS))]
    if not bases or len(versions) != 1:
        if len(versions) > 1:
            reasons.append("execution.cgroup_folders mixes cgroup v1 and v2 folders")
        return None
    return Placement("cgroup v1" if versions == {1} else "cgroup v2", "", tuple(dict.fromkeys(bases)))


def _inside(mount: _Mount, path: str | None) -> Path | None:
    """Where the cgroup ``path`` of the mount's hierarchy is in the file system, if it is visible."""
    if path is None:
        return None
    own, root = Path(path), Path(mount.root)
    if not own.is_relative_to(root):
        return None
    folder = mount.point / own.relative_to(root)
    return folder if folder.is_dir() else None


def _tried(candidate: Placement, reasons: list[str]) -> Placement | None:
    """``candidate`` if a group can really be made there and a process put in it."""
    group = None
    try:
        group = new_group(
            candidate, "probe", f"probe-{secrets.token_hex(4)}", memory_bytes=PROBE_MEMORY, max_processes=16
        )
        assert group is not None
        done = subprocess.run(group.command(["/bin/true"]), capture_output=True, timeout=30)
        if done.returncode != 0:
            raise OSError(f"a process could not enter it (exit status {done.returncode})")
    except (OSError, subprocess.SubprocessError) as exc:
        where = ", ".join(str(base) for base in dict.fromkeys(b for _c, b in candidate.bases))
        reasons.append(
            f"{candidate.mechanism} at {where}: {exc.strerror if isinstance(exc, OSError) and exc.strerror else exc}"
        )
        return None
    finally:
        if group is not None:
            group.release()
    held = " and ".join(sorted(candidate.holds))
    where = ", ".join(str(base) for base in dict.fromkeys(b for _c, b in candidate.bases))
    return Placement(candidate.mechanism, f"{candidate.mechanism}: {held} under {where}", candidate.bases)


def _systemd(reasons: list[str]) -> Placement | None:
    """``systemd-run --scope`` (``--user`` for a non-root nini) where a manager answers and limits."""
    user = os.geteuid() != 0
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    present = (Path(runtime) / "bus").exists() if user and runtime else Path("/run/systemd/system").is_dir()
    if shutil.which("systemd-run") is None or not present:
        return None
    probe = [*_systemd_run(user), "-p", f"MemoryMax={PROBE_MEMORY}", "-p", "TasksMax=16", "--", "/bin/true"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        reasons.append(f"systemd-run cannot start: {exc}")
        return None
    if done.returncode != 0:
        reasons.append(f"systemd-run --scope fails here ({(done.stderr.strip().splitlines() or ['no message'])[-1]})")
        return None
    manager = "the user's systemd" if user else "systemd"
    return Placement("systemd", f"systemd scope: memory and pids, a scope per agent process from {manager}", user=user)


def _systemd_run(user: bool) -> list[str]:
    # no --collect: a scope the OOM killer failed stays loaded, its Result readable, until release
    return ["systemd-run", *(["--user"] if user else []), "--scope", "--quiet"]


def _systemctl(user: bool, *args: str) -> str:
    try:
        return subprocess.run(
            ["systemctl", *(["--user"] if user else []), *args], capture_output=True, text=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
