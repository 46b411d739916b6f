"""Kernel-enforced rules for agent processes: no program at all, no changes outside the writable
folders, no new user namespaces.

Static policies (``policy.py``, the R policy) refuse ``os.system`` and friends early and clearly,
but Python and R have too many spellings of "run a program" for a list to be complete, and a list
of files that may run cannot tell "start Python" from "run the ELF loader as a program" (which
then runs anything). So the rule holds by construction instead: once ``confine`` has set the
process up, nothing in the sandbox may execute anything, the interpreter included. Installed
before agent code runs and inherited by everything it starts:

- seccomp (the guard against programs): ``execve`` and ``execveat`` answer EACCES for every file.
  Every route to a new program ends in one of the two (the loader as a program, a shell, a
  binary dropped in /tmp or the workspace, a memfd run by descriptor: ``fexecve`` is ``execveat``
  or ``execve`` of ``/proc/self/fd/N``, R's ``system``, a dropped shared object whose constructor
  calls ``system``), so none is listed. Process pools must then fork: ``fork_defaults``. A memfd
  needs no rule of its own: it can become a program only through those two calls, and mapping it
  executable gives code nothing ``ctypes`` does not (its memory is the cgroup's business).
  ``ptrace`` and ``process_vm_writev`` are refused too, so no process of the sandbox can make a
  process outside this filter (bubblewrap's init) run something for it.
  ``fallocate`` answers EOPNOTSUPP: glibc's ``posix_fallocate`` then writes the blocks, which the
  per-file size limit and the workspace accounting see, instead of reserving gigabytes in one call.
  New user namespaces are refused (``unshare``/``clone`` with CLONE_NEWUSER; ``clone3``, whose
  flags a filter cannot read, answers ENOSYS so libc falls back to ``clone``).
- Landlock (Linux 5.13+, where the kernel has it) handles making, removing and renaming entries
  (files, folders, links, sockets), granted beneath the writable folders only, and in a kernel's
  ipc folder only the making of sockets: once the kernel has bound its sockets there, agent code
  cannot swap one for a link that nini's side would follow when it reconnects. It also handles
  the right to execute and grants it nowhere (a second lock on the door seccomp keeps), denies
  TCP bind/connect (ABI 4) and scopes abstract Unix sockets and signals (ABI 6).

Both need ``no_new_privs``, set here. Hand-written with ctypes rather than the ``landlock`` or
``pyseccomp`` packages: the first is an alpha without ABI 4-6, the second needs libseccomp; the
whole need is three syscalls and a filter of two dozen instructions.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

__all__ = ["fork_defaults", "landlock_abi", "restrict", "seccomp_available"]

_SYS = {  # name -> (x86_64, aarch64)
    "landlock_create_ruleset": (444, 444),
    "landlock_add_rule": (445, 445),
    "landlock_restrict_self": (446, 446),
    "execve": (59, 221),
    "execveat": (322, 281),
    "fallocate": (285, 47),
    "ptrace": (101, 117),
    "process_vm_writev": (311, 271),
    "unshare": (272, 97),
    "clone": (56, 220),
    "clone3": (435, 435),
}
_ARCH = {"x86_64": (0, 0xC000003E), "aarch64": (1, 0xC00000B7)}  # column in _SYS, AUDIT_ARCH_*
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1
_ACCESS_FS_EXECUTE = 1 << 0
_ACCESS_FS_MAKE_SOCK = 1 << 9
# remove dir/file, make char/dir/reg/sock/fifo/block/sym (ABI 1), refer: link or rename across folders (ABI 2)
_ACCESS_FS_CHANGE_V1 = sum(1 << bit for bit in range(4, 13))
_ACCESS_FS_REFER = 1 << 13
_ACCESS_NET_BIND_TCP, _ACCESS_NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_CLONE_NEWUSER = 0x10000000
_X32_SYSCALL_BIT = 0x40000000

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # the kernel's struct is packed: 12 bytes
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def _arch() -> tuple[int, int] | None:
    return _ARCH.get(platform.machine())


def _nr(name: str) -> int:
    column, _audit = _arch() or (0, 0)
    return _SYS[name][column]


def _syscall(name: str, *args: object) -> int:
    ctypes.set_errno(0)
    result: int = _libc.syscall(_nr(name), *args)
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{name}: {os.strerror(code)}")
    return result


def landlock_abi() -> int:
    """The Landlock ABI version of this kernel; 0 when Landlock is missing or disabled."""
    if _arch() is None:
        return 0
    try:
        return _syscall(
            "landlock_create_ruleset", None, ctypes.c_size_t(0), ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION)
        )
    except OSError:
        return 0


def seccomp_available() -> bool:
    """Whether this kernel takes seccomp filters (its status file has a ``Seccomp_filters`` line)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            return any(line.startswith("Seccomp_filters:") for line in status) or os.path.exists(
                "/proc/sys/kernel/seccomp"
            )
    except OSError:
        return False


def restrict(*, writable: Sequence[str] = (), sockets_only: Sequence[str] = ()) -> str:
    """Confine this process and all it starts from now on: no program (seccomp), and where the
    kernel has Landlock, changes only beneath ``writable`` and only sockets beneath
    ``sockets_only``. Returns what was applied ("seccomp" or "seccomp, Landlock ABI 6").
    Raises OSError when seccomp cannot be applied: a process that could run programs never runs
    agent code."""
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    abi = landlock_abi()
    if abi > 0:
        _landlock(abi, list(writable), list(sockets_only))
    _seccomp()
    return f"seccomp, Landlock ABI {abi}" if abi else "seccomp"


def _landlock(abi: int, writable: list[str], sockets_only: list[str]) -> None:
    change = _ACCESS_FS_CHANGE_V1 | (_ACCESS_FS_REFER if abi >= 2 else 0)
    attr = _RulesetAttr(
        handled_access_fs=_ACCESS_FS_EXECUTE | change,  # execution handled and granted nowhere
        handled_access_net=(_ACCESS_NET_BIND_TCP | _ACCESS_NET_CONNECT_TCP) if abi >= 4 else 0,
        scoped=(_SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL) if abi >= 6 else 0,
    )
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = _syscall("landlock_create_ruleset", ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    rules = [(path, change) for path in writable] + [(path, _ACCESS_FS_MAKE_SOCK) for path in sockets_only]
    try:
        for path, access in rules:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = _PathBeneathAttr(access, fd)
                _syscall(
                    "landlock_add_rule", ruleset, _LANDLOCK_RULE_PATH_BENEATH, ctypes.byref(rule), ctypes.c_uint32(0)
                )
            finally:
                os.close(fd)
        _syscall("landlock_restrict_self", ruleset, ctypes.c_uint32(0))
    finally:
        os.close(ruleset)


def _seccomp() -> None:
    """Install the filter (see the module's docstring for each rule)."""
    arch = _arch()
    if arch is None:
        raise OSError(errno.EOPNOTSUPP, f"no seccomp filter for {platform.machine()}")
    ld_w_abs, jeq_k, jset_k, ret_k = 0x20, 0x15, 0x45, 0x06
    allow = 0x7FFF0000

    def refuse(code: int) -> tuple[int, int, int, int]:
        return ret_k, 0, 0, 0x00050000 | code  # SECCOMP_RET_ERRNO

    program: list[tuple[int, int, int, int]] = [
        (ld_w_abs, 0, 0, 4),  # seccomp_data.arch
        (jeq_k, 1, 0, arch[1]),
        refuse(errno.EPERM),  # a foreign syscall ABI (i386 through int 0x80): nothing
        (ld_w_abs, 0, 0, 0),  # seccomp_data.nr
    ]
    if platform.machine() == "x86_64":
        program += [(jset_k, 0, 1, _X32_SYSCALL_BIT), refuse(errno.EPERM)]  # the x32 ABI: nothing
    for name, code in (
        ("execve", errno.EACCES),
        ("execveat", errno.EACCES),
        ("fallocate", errno.EOPNOTSUPP),
        ("ptrace", errno.EPERM),
        ("process_vm_writev", errno.EPERM),
        ("clone3", errno.ENOSYS),
    ):
        program += [(jeq_k, 0, 1, _nr(name)), refuse(code)]
    program += [
        (jeq_k, 1, 0, _nr("unshare")),
        (jeq_k, 0, 3, _nr("clone")),
        (ld_w_abs, 0, 0, 16),  # low half of args[0]: the flags of unshare and clone
        (jset_k, 0, 1, _CLONE_NEWUSER),
        refuse(errno.EPERM),
        (ret_k, 0, 0, allow),
    ]
    filters = (_SockFilter * len(program))(*(_SockFilter(*instruction) for instruction in program))
    fprog = _SockFprog(len(program), filters)
    if _libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")


def fork_defaults() -> None:
    """Make process pools start by fork, the one start method that runs no program.

    spawn, forkserver and joblib's default loky executor each start a new interpreter (loky forks
    and then execs), which ``restrict`` refuses. Python 3.14 makes forkserver multiprocessing's
    default on Linux, so fork is set explicitly. joblib's default backend becomes its
    ``multiprocessing`` backend, whose memmapping pool (which needs loky's resource tracker, a
    program of its own) becomes a fork ``Pool`` sending tasks as loky does, by cloudpickle; arrays
    are then pickled to the workers, not memory-mapped. Done when ``joblib.parallel`` is first imported:
    importing joblib here would cost every kernel start ~0.2 s for code that mostly never uses it."""
    import multiprocessing

    multiprocessing.set_start_method("fork", force=True)
    if not any(isinstance(finder, _JoblibForks) for finder in sys.meta_path):
        sys.meta_path.insert(0, _JoblibForks())


def _fork_pool(
    processes: int | None = None,
    *,
    initializer: Any = None,
    initargs: tuple[Any, ...] = (),
    maxtasksperchild: int | None = None,
    **_memmapping: Any,
) -> Any:
    """joblib's ``MemmappingPool(n_jobs, **kwargs)`` as a fork pool whose tasks go to the workers
    pickled by cloudpickle, as loky's do: lambdas and functions defined in the notebook work."""
    import multiprocessing.pool

    class ForkPool(multiprocessing.pool.Pool):
        def apply_async(
            self,
            func: Any,
            args: Any = (),
            kwds: Any = {},  # noqa: B006 - Pool.apply_async's own signature, never mutated here
            callback: Any = None,
            error_callback: Any = None,
        ) -> Any:
            return super().apply_async(_Cloudpickled(func), args, kwds, callback, error_callback)

    return ForkPool(processes, initializer, initargs, maxtasksperchild, context=multiprocessing.get_context("fork"))


class _Cloudpickled:
    """A callable that crosses to a pool worker pickled by cloudpickle."""

    def __init__(self, func: Any) -> None:
        self.func = func

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    def __reduce__(self) -> tuple[Any, tuple[bytes]]:
        import pickle

        import cloudpickle  # joblib's own dependency

        return pickle.loads, (cloudpickle.dumps(self.func),)


class _JoblibForks:  # a meta path finder (importlib.abc would cost ~0.1 s to import)
    """Finds ``joblib.parallel`` through the other finders and, right after it has run, makes
    fork pools joblib's default (see ``fork_defaults``)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        if fullname != "joblib.parallel":
            return None
        for finder in sys.meta_path:
            if finder is not self and hasattr(finder, "find_spec"):
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
        else:
            return None
        run = getattr(spec.loader, "exec_module", None)
        if run is None:
            return spec

        def exec_module(module: ModuleType) -> None:
            run(module)
            backends = sys.modules.get("joblib._parallel_backends")
            if "multiprocessing" in getattr(module, "BACKENDS", {}) and hasattr(backends, "MemmappingPool"):
                backends.MemmappingPool = _fork_pool  # type: ignore[union-attr]
                # joblib.parallel's own globals, which the module just defined
                module.DEFAULT_BACKEND = module.DEFAULT_PROCESS_BACKEND = "multiprocessing"  # type: ignore[attr-defined]

        # the loader found above has exec_module (checked): replaced on this one spec only
        spec.loader.exec_module = exec_module  # type: ignore[union-attr,method-assign]
        return spec
