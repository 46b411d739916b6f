"""The bubblewrap sandbox for kernels: whether it works here, and the command that wraps a kernel.

Inside the sandbox the root file system is read-only, there is no network (a new network
namespace holds only loopback, so even 127.0.0.1 servers of the host are out of reach), ``/tmp``
is a private tmpfs, and the only writable host folders are the session workspace and the kernel's
runtime folder (connection file, ipc sockets, HOME). Folders that hold other people's data or
secrets (the host user's home, NINI_HOME with ``settings.json`` and every other session) are hidden
behind empty tmpfs mounts; the Python installation is mounted back read-only where it lives
inside one of them.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Literal

from nini.errors import ErrorCode, NiniError

SandboxMode = Literal["bwrap", "none"]

# Namespaces and hardening shared by the probe and the kernel command.
_ISOLATION = [
    "--unshare-net",  # no network at all; loopback inside is a different loopback
    "--unshare-pid",  # the kernel sees only its own processes
    "--unshare-ipc",
    "--unshare-uts",
    "--die-with-parent",  # the kernel goes when nini goes, even if nini is killed
    "--new-session",  # no TIOCSTI into a terminal nini was started from
    "--cap-drop", "ALL",  # when nini runs as root, root inside must not remount the read-only root
]  # fmt: skip


@functools.cache
def probe_bwrap() -> tuple[bool, str]:
    """Whether bubblewrap can start a sandbox with our flags here, and why not (cached per process).

    bwrap may be missing, or present but unable to create namespaces (some containers); both mean
    "unsandboxed" in ``auto`` mode, so the check runs the real flag set with ``true``.
    """
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return False, "bwrap not found (apt-get install bubblewrap)"
    probe = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", *_ISOLATION, "true"]
    try:
        result = subprocess.run(probe, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"bwrap cannot start: {exc}"
    if result.returncode != 0:
        reason = (result.stderr.strip().splitlines() or ["no message"])[-1]
        return False, f"bwrap fails here ({reason})"
    return True, f"bubblewrap at {bwrap} (no network, read-only root, only the workspace writable)"


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


def bwrap_command(cmd: list[str], workspace: Path, runtime_dir: Path) -> list[str]:
    """``cmd`` run inside bubblewrap with ``workspace`` and ``runtime_dir`` writable, cwd the workspace."""
    args = [shutil.which("bwrap") or "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    hidden = _hidden_dirs(workspace)
    # The tmpfs mounts come first: the binds below then create their mount points inside them,
    # so a workspace or runtime folder under /tmp or NINI_HOME (as in tests) still appears.
    for folder in hidden:
        args += ["--tmpfs", str(folder)]
    for path in _python_paths(hidden):
        args += ["--ro-bind", str(path), str(path)]
    args += ["--bind", str(workspace), str(workspace), "--bind", str(runtime_dir), str(runtime_dir)]
    # Hidden folders other than /tmp are read-only too: a write there fails loudly instead of
    # vanishing with the tmpfs. (The binds above are mounts of their own and stay writable.)
    for folder in hidden:
        if folder != Path("/tmp"):
            args += ["--remount-ro", str(folder)]
    args += [*_ISOLATION, "--chdir", str(workspace)]
    # jupyter_client sets JPY_PARENT_PID to nini's pid; inside the pid namespace the kernel's parent
    # is pid 1, so ipykernel would conclude that its parent died and exit at once.
    args += ["--unsetenv", "JPY_PARENT_PID", "--", *cmd]
    return args


def _hidden_dirs(workspace: Path) -> list[Path]:
    """/tmp, the host user's home, and NINI_HOME (``<home>/sessions/<id>/workspace``), outermost first."""
    folders = [Path("/tmp"), Path.home()]
    if len(workspace.parents) >= 3 and workspace.parents[1].name == "sessions":
        folders.append(workspace.parents[2])
    unique: list[Path] = []
    for folder in sorted({f.resolve() for f in folders if f.resolve() != Path("/")}, key=lambda p: len(p.parts)):
        if not any(folder == u or u in folder.parents for u in unique):
            unique.append(folder)
    return unique


def _python_paths(hidden: list[Path]) -> list[Path]:
    """Parts of this Python installation (prefixes, sys.path) that a hidden folder would cover."""
    found: set[Path] = set()
    for entry in {sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path}:
        if not entry:
            continue
        path = Path(entry).resolve()
        # strictly inside: mounting a hidden folder itself back (sys.path[0] may be the cwd, e.g.
        # the home folder) would undo the hiding
        if path.exists() and any(h in path.parents for h in hidden):
            found.add(path)
    # a path inside another kept path is mounted with it
    return sorted(p for p in found if not any(o in p.parents for o in found))
