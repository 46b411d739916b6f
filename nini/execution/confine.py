"""The first code of every agent process: drop to the sandbox user, set limits, forbid programs, run.

``python .../nini/execution/confine.py [options] -- -m MODULE ARGS...`` (the kernel's ipykernel
launcher, the R worker) is the command bubblewrap starts. It confines itself, then runs MODULE
in the same process (``runpy``), so nothing unconfined ever runs agent code and no second
interpreter start is paid. It is started by file path, not with ``-m``: ``-m`` would put the
working directory (the workspace, which agent code writes) first on ``sys.path`` and let a
planted ``nini/`` package run before the confinement. Steps:

1. ``--uid``: when nini runs as root the sandbox is entered as root (bubblewrap needs it to
   mount), with only CAP_SETUID/CAP_SETGID left; this drops to the session's own unprivileged
   uid, for good (a non-root nini gets its uid from a user namespace instead, and no ``--uid``).
2. Limits (``setrlimit``, hard and soft, so the code cannot raise them back): address space (a
   process's own allocations fail with MemoryError before its cgroup's memory limit, which also
   counts memfds, tmpfs files and shared memory, kills anything), the size of any one file, no core
   dumps, and processes and threads (RLIMIT_NPROC: only where no pids cgroup holds the process,
   since it counts every task of the sandbox's uid, all of a session's kernels, not this one's).
3. ``guard.restrict``: seccomp refuses every execve from here on (no program at all, the
   interpreter included: start-up is done, MODULE runs in this process), ``fallocate`` and new
   user namespaces; Landlock keeps changes to the writable folders. ``guard.fork_defaults`` then
   makes process pools fork, the one start method that needs no program.

Unsandboxed (``--unsandboxed``: execution.sandbox "none") only the address-space limit applies:
the user chose to trust the code, and RLIMIT_NPROC would count all of the user's processes.
"""

from __future__ import annotations

import argparse
import os
import resource
import runpy
import sys

# Environment every agent process gets so that RLIMIT_AS measures memory, not reservations:
# - pyarrow's default pool (mimalloc) reserves about 1 GiB of address space at first use, which
#   alone broke reading a Parquet file under a 512 MiB limit and left ~200 MiB of headroom under
#   the 2 GiB default; the system allocator reserves nothing.
# - glibc gives each thread that allocates its own arena with 64 MiB of reserved address space
#   (up to 8 arenas per core), so a many-core host would spend the limit on kernel threads.
# Measured with pandas + pyarrow + matplotlib (read/write Parquet, plot, save PNG/SVG): peak
# address space 1.8 GiB by default, 0.54 GiB with both settings.
KERNEL_ENV = {"ARROW_DEFAULT_MEMORY_POOL": "system", "MALLOC_ARENA_MAX": "2"}
# Thread pools sized by core count would spend the process limit (threads count) on a big host.
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_MAX_THREADS")


def command(
    cmd: list[str],
    *,
    memory_bytes: int,
    sandboxed: bool,
    max_processes: int = 0,
    file_size_bytes: int = 0,
    uid: int | None = None,
    writable: list[str] = (),  # type: ignore[assignment]
    sockets_only: list[str] = (),  # type: ignore[assignment]
) -> list[str]:
    """``cmd`` (``python [flags] -m MODULE args``) as the same module run through this wrapper;
    ``writable`` and ``sockets_only`` are the folders of ``guard.restrict``."""
    interpreter, rest = cmd[0], cmd[1:]
    if "-m" not in rest:
        raise ValueError(f"confine runs python modules only, not {cmd!r}")
    split = rest.index("-m")
    flags, target = rest[:split], rest[split:]
    options = ["--memory", str(int(memory_bytes))]
    if sandboxed:
        options += ["--processes", str(max_processes), "--file-size", str(int(file_size_bytes))]
        if uid is not None:
            options += ["--uid", str(uid)]
        for path in writable:
            options += ["--writable", str(path)]
        for path in sockets_only:
            options += ["--sockets", str(path)]
    else:
        options.append("--unsandboxed")
    return [interpreter, *flags, os.path.abspath(__file__), *options, "--", *target]


def thread_env(max_processes: int) -> dict[str, str]:
    """Defaults for the thread-pool variables the user left unset: a pool per core must not reach
    the process limit (the kernel's own threads and the R worker's need room too)."""
    threads = str(max(1, min(os.cpu_count() or 1, max_processes // 4 or 1, 8)))
    return {name: os.environ.get(name, threads) for name in THREAD_ENV}


def apply_limits(*, memory_bytes: int, max_processes: int = 0, file_size_bytes: int = 0, no_core: bool = False) -> None:
    """Lower this process's limits, soft and hard (0: leave that one alone)."""
    _lower(resource.RLIMIT_AS, memory_bytes)
    _lower(resource.RLIMIT_NPROC, max_processes)
    _lower(resource.RLIMIT_FSIZE, file_size_bytes)
    if no_core:
        _lower(resource.RLIMIT_CORE, 0, force=True)


def _lower(which: int, value: int, *, force: bool = False) -> None:
    if not value and not force:
        return
    _soft, hard = resource.getrlimit(which)
    limit = value if hard == resource.RLIM_INFINITY else min(value, hard)
    resource.setrlimit(which, (limit, limit))


def drop_to(uid: int) -> None:
    """Become ``uid`` (and gid ``uid``) for good: real, effective and saved ids, no groups."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    if os.getuid() != uid or os.geteuid() != uid:
        raise SystemExit(f"nini confine: could not become uid {uid}")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python nini/execution/confine.py")
    parser.add_argument("--memory", type=int, required=True, help="address-space limit in bytes")
    parser.add_argument(
        "--processes",
        type=int,
        default=0,
        help="RLIMIT_NPROC (tasks of the sandbox user); 0 where a pids cgroup holds the process",
    )
    parser.add_argument("--file-size", type=int, default=0, help="largest file the process may write, bytes")
    parser.add_argument("--uid", type=int, help="drop to this uid (nini running as root)")
    parser.add_argument("--writable", action="append", default=[], help="a folder where entries may change")
    parser.add_argument("--sockets", action="append", default=[], help="a folder where only sockets may be made")
    parser.add_argument("--unsandboxed", action="store_true", help="only the memory limit")
    parser.add_argument("target", nargs=argparse.REMAINDER, help="-- -m MODULE ARGS...")
    args = parser.parse_args(argv)
    target = args.target[1:] if args.target[:1] == ["--"] else args.target
    if len(target) < 2 or target[0] != "-m":
        parser.error("the command must be: -- -m MODULE [ARGS...]")
    if args.uid is not None:
        drop_to(args.uid)
    home = os.environ.get("HOME")
    if home and not os.path.isdir(home):
        os.makedirs(home, mode=0o700, exist_ok=True)  # a folder of the sandbox's own /tmp
    if args.unsandboxed:
        apply_limits(memory_bytes=args.memory)
    else:
        apply_limits(
            memory_bytes=args.memory, max_processes=args.processes, file_size_bytes=args.file_size, no_core=True
        )
        from nini.execution.guard import fork_defaults, restrict

        restrict(writable=args.writable, sockets_only=args.sockets)
        fork_defaults()
    module, module_args = target[1], target[2:]
    sys.argv = [module, *module_args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    # Run as a script, Python put this file's folder first on sys.path; nini's modules must be
    # imported as the package (from site-packages), and the target sees the usual sys.path.
    if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
        del sys.path[0]
    main(sys.argv[1:])
