"""The bubblewrap sandbox of agent processes (Python kernels, R workers): what they see and who they are.

Nothing of the host is visible unless it is bound here, read-only: ``/usr`` (and the ``/bin``,
``/lib*`` links into it), a filtered ``/etc`` (loader cache, fonts, certificates, time zones,
R's configuration; a passwd that names only the sandbox user: no shadow, no host accounts), the
interpreter's prefix and site-packages, nini's own package folders, R's home, and folders the
user lists in ``execution.sandbox_read_only_paths``. No ``/run``, ``/srv``, ``/mnt``, ``/home``,
``/root`` or ``/sys`` and nothing of ``/var`` but a kernel's own ipc folder, so no host Unix
socket and no other user's data. Writable: the session workspace, a size-limited private
``/tmp`` and ``/dev/shm``, and for a kernel its ipc folder (``runtime_base``). The root is
remounted read-only, there is no network (a loopback of its own), its own pid, ipc and uts
namespaces, and it dies with nini.

Who runs inside: a non-root nini enters a user namespace as uid ``SANDBOX_UID`` (no capability,
no further user namespaces: ``--disable-userns``). A root nini cannot give the sandbox a user
namespace of another host uid, and a process of host uid 0 escapes every per-user limit; so
bubblewrap runs privileged with only CAP_SETUID/CAP_SETGID, and ``confine`` drops for good to the
session's own unprivileged uid, which owns the workspace: allocated by the store
(``nini.history.uids``, in ``ROOT_UID_BASE`` + ``[0, ROOT_UID_SPAN)``), never shared by two sessions.

Limits: where a control group can be made (``cgroups``), the agent process starts inside its own
(memory and processes counted for it alone), which the command's first step enters; otherwise
``confine``'s RLIMITs are all there is. ``confine`` then sets the
limits and forbids executing programs (``guard``). bubblewrap 0.8 cannot mount the writable
places noexec (it has no such option); nothing needs that while execve is refused to all.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from nini.errors import ErrorCode, NiniError
from nini.execution import confine
from nini.execution.cgroups import AgentGroup

SandboxMode = Literal["bwrap", "none"]

SANDBOX_UID = 10001  # the agent's uid inside a user namespace
ROOT_UID_BASE, ROOT_UID_SPAN = 1_500_000_000, 100_000_000  # session uids when nini runs as root
PROBE_UID = ROOT_UID_BASE - 1  # nini doctor's trial sandbox: a uid no session is given
SANDBOX_HOME = "/tmp/home"
# What of /etc analysis needs: the loader, fonts, certificates, time zones, MIME types, name
# services for numeric lookups, locales, R's configuration and the alternatives links into /usr.
ETC_ENTRIES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "fonts",
    "ssl/certs",
    "ssl/openssl.cnf",
    "ca-certificates",
    "ca-certificates.conf",
    "alternatives",
    "R",
    "localtime",
    "timezone",
    "mime.types",
    "nsswitch.conf",
    "host.conf",
    "hosts",
    "protocols",
    "services",
    "locale.alias",
    "locale.conf",
    "matplotlibrc",
    "os-release",
)
_TOP_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")  # usually links into /usr (merged /usr)
# Namespaces and hardening shared by the probe and every sandbox.
_ISOLATION = [
    "--unshare-net",  # no network at all; loopback inside is a different loopback
    "--unshare-pid",  # the agent sees only its own processes
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--die-with-parent",  # the sandbox goes when nini goes, even if nini is killed
    "--new-session",  # no TIOCSTI into a terminal nini was started from
]


@dataclass(frozen=True)
class Limits:
    """What one sandboxed process may use (``execution`` and ``r`` settings, in bytes)."""

    memory_bytes: int
    max_processes: int = 64
    file_size_bytes: int = 10 * 1024**3
    tmp_bytes: int = 512 * 1024**2
    read_only_paths: tuple[Path, ...] = field(default=())


def runtime_base() -> Path:
    """Where kernels' runtime folders go: ``TMPDIR`` or ``/var/tmp``, whichever is usable first
    and not below ``/tmp`` or ``/dev/shm``; the temp folder as a last resort.

    Inside the sandbox ``/tmp`` and ``/dev/shm`` are the agent's own writable folders, and
    Landlock grants rights beneath a folder whatever is mounted there: a kernel's ipc folder
    below them could not be kept to "make sockets only" (see ``guard``)."""
    for candidate in (os.environ.get("TMPDIR"), "/var/tmp"):
        if not candidate:
            continue
        path = Path(candidate)
        agents = any(path == Path(p) or path.is_relative_to(p) for p in ("/tmp", "/dev/shm"))
        if not agents and path.is_dir() and os.access(path, os.W_OK | os.X_OK):
            return path
    return Path(tempfile.gettempdir())


def running_as_root() -> bool:
    return os.geteuid() == 0


def runs_as_session_uid(mode: SandboxMode) -> bool:
    """Whether sandboxes of ``mode`` run as a host uid of the session's own (a root nini's bwrap):
    the files nini makes in the workspace then belong to that uid (``Workspace.owner``), so agent
    code can write beside them, and callers pass it to ``agent_command`` and ``prepare``."""
    return mode == "bwrap" and running_as_root()


@functools.cache
def probe_bwrap() -> tuple[bool, str]:
    """Whether bubblewrap can start a sandbox with our flags here, and why not (cached per process).

    bwrap may be missing, or present but unable to create namespaces (some containers); both mean
    "unsandboxed" in ``auto`` mode, so the check runs the real flag set with ``true``.
    """
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return False, "bwrap not found (apt-get install bubblewrap)"
    probe = [
        bwrap,
        *_identity(None),
        *_system_binds(),
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        "--remount-ro",
        "/",
        *_ISOLATION,
        "true",
    ]
    try:
        result = subprocess.run(probe, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"bwrap cannot start: {exc}"
    if result.returncode != 0:
        reason = (result.stderr.strip().splitlines() or ["no message"])[-1]
        return False, f"bwrap fails here ({reason})"
    who = "a uid of its own per session" if running_as_root() else f"uid {SANDBOX_UID} in a user namespace"
    return True, f"bubblewrap at {bwrap}: no network, only what analysis needs is visible, {who}"


def resolve_mode(setting: str) -> SandboxMode:
    """``execution.sandbox`` as it applies here; ``bwrap`` without a working bwrap is an error."""
    if setting == "none":
        return "none"
    ok, detail = probe_bwrap()
    if ok:
        return "bwrap"
    if setting == "bwrap":
        raise NiniError(
            ErrorCode.INTERNAL,
            f"execution.sandbox is 'bwrap' but {detail}; install bubblewrap, or set execution.sandbox "
            "to 'auto' to run unsandboxed where it is missing",
        )
    return "none"


def agent_command(
    cmd: list[str],
    mode: SandboxMode,
    limits: Limits,
    *,
    workspace: Path,
    runtime_dir: Path,
    shared_dir: Path | None = None,
    uid: int | None = None,
    group: AgentGroup | None = None,
) -> list[str]:
    """``cmd`` (``python [flags] -m MODULE args``) as the agent process: confined, and in ``bwrap``
    mode inside the sandbox. ``runtime_dir`` is a private host folder of this process (nini
    writes the sandbox's passwd there); ``shared_dir``, inside it, is bound writable too. ``uid``
    is the session's (``runs_as_session_uid``); ``group`` the process's cgroup, entered before
    anything else runs: a pids controller there replaces RLIMIT_NPROC, which would count every
    task of the uid (all kernels of the session, in every nini process) instead of this one's.

    The interpreter is named without ``..`` (``benchmarks/../.venv/bin/python`` when started so):
    the folders such a name passes through are not in the sandbox."""
    cmd = [os.path.abspath(cmd[0]), *cmd[1:]]
    enter = group.command if group is not None else list
    if mode == "none":
        return enter(confine.command(cmd, memory_bytes=limits.memory_bytes, sandboxed=False))
    if running_as_root() != (uid is not None):
        raise ValueError("a root nini's sandbox runs as the session's uid, and only a root nini's: uid " + repr(uid))
    processes = 0 if group is not None and "pids" in group.holds else limits.max_processes
    inner = confine.command(
        cmd,
        memory_bytes=limits.memory_bytes,
        sandboxed=True,
        max_processes=processes,
        file_size_bytes=limits.file_size_bytes,
        uid=uid,
        writable=[str(workspace), "/tmp", "/dev/shm"],
        sockets_only=[str(shared_dir)] if shared_dir else [],
    )
    return enter(bwrap_command(inner, workspace, runtime_dir, limits, shared_dir=shared_dir, uid=uid))


def bwrap_command(
    cmd: list[str],
    workspace: Path,
    runtime_dir: Path,
    limits: Limits,
    *,
    shared_dir: Path | None = None,
    uid: int | None = None,
) -> list[str]:
    """The bubblewrap command line running ``cmd`` with ``workspace`` writable, cwd the workspace."""
    args = [shutil.which("bwrap") or "bwrap", *_identity(uid), *_ISOLATION, *_system_binds()]
    size = str(limits.tmp_bytes)
    args += [
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--perms",
        "1777",
        "--size",
        size,
        "--tmpfs",
        "/tmp",
        "--perms",
        "1777",
        "--size",
        size,
        "--tmpfs",
        "/dev/shm",
    ]
    args += _etc_binds(runtime_dir, uid)
    made = {Path("/"), Path("/etc"), Path("/tmp"), Path("/dev"), Path("/proc")}
    bound = [Path("/usr"), Path("/dev"), Path("/proc")]
    for path in _read_only_paths(limits.read_only_paths):
        args += _parents(path, made, bound) + ["--ro-bind", str(path), str(path)]
        bound.append(path)
    for target, named in _prefix_aliases(bound):
        args += _parents(named, made, bound) + ["--ro-bind", str(target), str(named)]
        bound.append(named)
    for writable in (workspace, shared_dir):
        if writable is not None:
            args += _parents(writable, made, bound) + ["--bind", str(writable), str(writable)]
            bound.append(writable)
    args += [
        "--remount-ro",
        "/",
        "--chdir",
        str(workspace),
        "--setenv",
        "HOME",
        SANDBOX_HOME,
        "--setenv",
        "TMPDIR",
        "/tmp",
    ]
    # jupyter_client sets JPY_PARENT_PID to nini's pid; inside the pid namespace the kernel's parent
    # is pid 1, so ipykernel would conclude that its parent died and exit at once.
    args += ["--unsetenv", "JPY_PARENT_PID", "--", *cmd]
    return args


def prepare(workspace: Path, runtime_dir: Path, uid: int | None) -> None:
    """Host-side preparation before a sandbox of ``workspace`` starts, when nini runs as root: the
    workspace and the process's runtime folder (its ipc sockets, the log its stdout goes to)
    become the session uid's (``uid``), without following any link."""
    if not running_as_root():
        return
    if uid is None:
        raise ValueError("a root nini's sandbox runs as the session's uid: none was given")
    from nini.rooted import RootedDir

    # The workspace is walked once per uid: its root becomes (uid, root group) only after a whole walk,
    # and later files are the uid's already (the sandbox's own, or nini's, made with Workspace.owner).
    # Walking it at every start made a kernel start on a workspace of 200,000 files take seconds more.
    found = os.stat(workspace)
    if (found.st_uid, found.st_gid) != (uid, 0):
        RootedDir(workspace).chown_tree(uid, uid)
    # bubblewrap enters the workspace as root without capabilities: the root group may pass
    os.chown(workspace, uid, 0)
    os.chmod(workspace, 0o750)
    RootedDir(runtime_dir).chown_tree(uid, uid)


def _identity(uid: int | None) -> list[str]:
    """Who the sandbox runs as: a user namespace (non-root nini), or root with only the
    capabilities ``confine`` needs to drop to ``uid``."""
    if running_as_root():
        return ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    return [
        "--unshare-user",
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_UID),
        "--disable-userns",
        "--cap-drop",
        "ALL",
    ]


def _system_binds() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in _TOP_LINKS:
        top = Path("/") / name
        if top.is_symlink():
            args += ["--symlink", os.readlink(top), str(top)]
        elif top.is_dir():
            args += ["--ro-bind", str(top), str(top)]
    return args


def _etc_binds(runtime_dir: Path, uid: int | None) -> list[str]:
    """The kept entries of /etc, and a passwd/group naming only the sandbox user."""
    args = ["--perms", "0755", "--dir", "/etc"]
    folders: set[Path] = {Path("/etc")}
    for entry in ETC_ENTRIES:
        source = Path("/etc") / entry
        if not source.exists():
            continue
        if source.parent not in folders:
            args += ["--perms", "0755", "--dir", str(source.parent)]
            folders.add(source.parent)
        args += ["--ro-bind", str(source), str(source)]
    who = uid if uid is not None else SANDBOX_UID
    etc = runtime_dir / "etc"
    etc.mkdir(mode=0o755, exist_ok=True)
    etc.chmod(0o755)
    files = {
        "passwd": f"root:x:0:0:root:/root:/usr/sbin/nologin\nnini:x:{who}:{who}:nini sandbox:{SANDBOX_HOME}:"
        "/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
        "group": f"root:x:0:\nnini:x:{who}:\nnogroup:x:65534:\n",
    }
    for name, text in files.items():
        (etc / name).write_text(text)
        (etc / name).chmod(0o644)
        args += ["--ro-bind", str(etc / name), f"/etc/{name}"]
    return args


def _read_only_paths(extra: Iterable[Path]) -> list[Path]:
    """The interpreter's installation, nini's packages, R's home and ``extra``, outermost only,
    leaving out what ``/usr`` already covers."""
    import nini
    import r_sandbox

    wanted: set[Path] = set()
    for entry in (sys.prefix, sys.base_prefix, sys.exec_prefix, *_site_packages()):
        if entry:
            wanted.add(Path(entry).resolve())
    for package in (nini, r_sandbox):
        wanted.add(Path(str(package.__file__)).resolve().parent)  # a regular package: __file__ is set
    r_home = os.environ.get("R_HOME")
    if r_home:
        wanted.add(Path(r_home).resolve())
    wanted |= {Path(p).resolve() for p in extra}
    usable = {p for p in wanted if p.exists() and p != Path("/") and not p.is_relative_to("/usr")}
    return sorted(p for p in usable if not any(o != p and p.is_relative_to(o) for o in usable))


def interpreter_paths() -> list[Path]:
    """Where this interpreter, its packages and nini live, each under the name it is used by: what a
    sandbox that hides a host folder (a private ``/tmp``) must bind back for ``sys.executable`` to run."""
    found = _read_only_paths(())
    return found + [named for _, named in _prefix_aliases(found)]


def _prefix_aliases(bound: list[Path]) -> list[tuple[Path, Path]]:
    """(real folder, name) for the interpreter's prefix where a link leads to it (a venv reached
    as ``/tmp/env`` -> ``/srv/envs/a``): the kernel is started as ``sys.executable``, under that
    name, which the sandbox would otherwise not have (its ``/tmp`` is a fresh one)."""
    aliases: list[tuple[Path, Path]] = []
    for entry in dict.fromkeys((sys.prefix, sys.exec_prefix)):
        named = Path(os.path.abspath(entry))
        target = named.resolve()
        if named != target and named != Path("/") and not any(named.is_relative_to(b) for b in bound):
            aliases.append((target, named))
    return aliases


def _site_packages() -> list[str]:
    import site

    try:
        return list(site.getsitepackages())
    except AttributeError:  # virtualenv's old site.py
        return []


def _parents(path: Path, made: set[Path], bound: list[Path]) -> list[str]:
    """``--dir`` for the folders above ``path`` that the sandbox does not have yet, world-readable
    (bubblewrap would make them 0700 and root's: closed to the sandbox user). Folders inside a
    bound path exist already."""
    args: list[str] = []
    for parent in reversed(path.parents):
        if parent in made or any(parent.is_relative_to(b) for b in bound):
            continue
        args += ["--perms", "0755", "--dir", str(parent)]
        made.add(parent)
    return args
