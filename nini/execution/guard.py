"""Kernel-enforced rules for agent processes: no programs but the interpreter, no changes outside
the writable folders, no new user namespaces.

Static policies (``policy.py``, the R policy) refuse ``os.system`` and friends early and clearly,
but Python and R have too many spellings of "run a program" for a list to be complete. The rule
that holds whatever the spelling is enforced by the Linux kernel, installed in the sandboxed
process before agent code runs and inherited by everything it starts:

- Landlock (Linux 5.13+) handles the right to execute files and grants it only on the
  interpreter and its ELF loader: ``subprocess``, ``os.system``, R's ``system``, ``pipe`` or
  ``pdf("|cmd")`` get EACCES, while multiprocessing and joblib (which re-run ``sys.executable``)
  still work. It also handles making, removing and renaming entries (files, folders, links,
  sockets), granted beneath the writable folders only, and in a kernel's ipc folder only the
  making of sockets: once the kernel has bound its sockets there, agent code cannot swap one for
  a link that nini's side would follow when it reconnects. Where the kernel knows them, Landlock
  also denies TCP bind/connect (ABI 4) and scopes abstract Unix sockets and signals (ABI 6).
- A seccomp filter refuses to create user namespaces (``unshare``/``clone`` with
  CLONE_NEWUSER; ``clone3``, whose flags a filter cannot read, answers ENOSYS so libc falls back
  to ``clone``). Without Landlock it also refuses ``execve``/``execveat`` outright: programs and
  the interpreter alike (joblib's process pool then cannot start; ``nini doctor`` says so).

Both need ``no_new_privs``, set here. Hand-written with ctypes rather than the ``landlock`` or
``pyseccomp`` packages: the first is an alpha without ABI 4-6, the second needs libseccomp; the
whole need is three syscalls and a ten-instruction filter.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct
from pathlib import Path

__all__ = ["landlock_abi", "restrict", "elf_interpreter"]

_SYS = {  # name -> (x86_64, aarch64)
    "landlock_create_ruleset": (444, 444),
    "landlock_add_rule": (445, 445),
    "landlock_restrict_self": (446, 446),
    "execve": (59, 221),
    "execveat": (322, 281),
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
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]  # fmt: skip


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
    result = _libc.syscall(_nr(name), *args)
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{name}: {os.strerror(code)}")
    return result


def landlock_abi() -> int:
    """The Landlock ABI version of this kernel; 0 when Landlock is missing or disabled."""
    if _arch() is None:
        return 0
    try:
        return _syscall("landlock_create_ruleset", None, ctypes.c_size_t(0), ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION))
    except OSError:
        return 0


def seccomp_available() -> bool:
    """Whether this kernel takes seccomp filters (its status file has a ``Seccomp_filters`` line)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            return any(line.startswith("Seccomp_filters:") for line in status) or os.path.exists("/proc/sys/kernel/seccomp")
    except OSError:
        return False


def elf_interpreter(executable: str | Path) -> str | None:
    """The ELF loader named in ``executable``'s PT_INTERP header (``/lib64/ld-linux-x86-64.so.2``),
    which the kernel opens for execution too; None for a static binary or a non-ELF file."""
    with open(executable, "rb") as handle:
        header = handle.read(64)
        if header[:4] != b"\x7fELF" or header[4] != 2:  # 64-bit ELF only (the machines nini runs on)
            return None
        endian = "<" if header[5] == 1 else ">"
        phoff, = struct.unpack_from(endian + "Q", header, 32)
        phentsize, phnum = struct.unpack_from(endian + "HH", header, 54)
        for index in range(phnum):
            handle.seek(phoff + index * phentsize)
            kind, _flags, offset, _vaddr, _paddr, size = struct.unpack(endian + "IIQQQQ", handle.read(40))
            if kind == 3:  # PT_INTERP
                handle.seek(offset)
                return handle.read(size).rstrip(b"\x00").decode()
    return None


def executables_of(interpreter: str) -> list[str]:
    """The files execution must stay allowed on so that ``interpreter`` can run again."""
    real = os.path.realpath(interpreter)
    found = [real]
    loader = elf_interpreter(real)
    if loader:
        found.append(os.path.realpath(loader))
    return found


def restrict(
    *, allow_exec: list[str], writable: list[str] = (), sockets_only: list[str] = (), mode: str = "auto"  # type: ignore[assignment]
) -> str:
    """Confine this process (and all it starts from now on); what was applied, e.g. "landlock".

    ``allow_exec``: the only files that may be executed. ``writable``: folders beneath which
    entries may be made, removed and renamed (everywhere else the tree stays as it is);
    ``sockets_only``: folders beneath which only sockets may be made. ``mode``: auto (Landlock
    where the kernel has it, else seccomp), landlock, seccomp, or off (user namespaces are still
    refused). Raises OSError when the asked mode cannot be applied.
    """
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    abi = landlock_abi()
    use_landlock = mode == "landlock" or (mode == "auto" and abi > 0)
    if use_landlock:
        _landlock(abi, allow_exec, list(writable), list(sockets_only))
    no_exec_by_seccomp = mode == "seccomp" or (mode == "auto" and abi == 0)
    _seccomp(deny_exec=no_exec_by_seccomp)
    return "landlock" if use_landlock else ("seccomp" if no_exec_by_seccomp else "off")


def _landlock(abi: int, allow_exec: list[str], writable: list[str], sockets_only: list[str]) -> None:
    if abi < 1:
        raise OSError(errno.EOPNOTSUPP, "Landlock is not available in this kernel")
    change = _ACCESS_FS_CHANGE_V1 | (_ACCESS_FS_REFER if abi >= 2 else 0)
    attr = _RulesetAttr(
        handled_access_fs=_ACCESS_FS_EXECUTE | change,
        handled_access_net=(_ACCESS_NET_BIND_TCP | _ACCESS_NET_CONNECT_TCP) if abi >= 4 else 0,
        scoped=(_SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL) if abi >= 6 else 0,
    )
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = _syscall("landlock_create_ruleset", ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    rules = ([(path, _ACCESS_FS_EXECUTE) for path in allow_exec] + [(path, change) for path in writable]
             + [(path, _ACCESS_FS_MAKE_SOCK) for path in sockets_only])  # fmt: skip
    try:
        for path, access in rules:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = _PathBeneathAttr(access, fd)
                _syscall("landlock_add_rule", ruleset, _LANDLOCK_RULE_PATH_BENEATH, ctypes.byref(rule), ctypes.c_uint32(0))
            finally:
                os.close(fd)
        _syscall("landlock_restrict_self", ruleset, ctypes.c_uint32(0))
    finally:
        os.close(ruleset)


def _seccomp(*, deny_exec: bool) -> None:
    """Install the filter: new user namespaces refused, and with ``deny_exec`` every execve."""
    arch = _arch()
    if arch is None:
        raise OSError(errno.EOPNOTSUPP, f"no seccomp filter for {platform.machine()}")
    ld_w_abs, jeq_k, jset_k, ret_k = 0x20, 0x15, 0x45, 0x06
    allow, eperm, enosys = 0x7FFF0000, 0x00050000 | errno.EPERM, 0x00050000 | errno.ENOSYS
    eacces = 0x00050000 | errno.EACCES

    program: list[tuple[int, int, int, int]] = [
        (ld_w_abs, 0, 0, 4),  # seccomp_data.arch
        (jeq_k, 1, 0, arch[1]),
        (ret_k, 0, 0, eperm),  # a foreign syscall ABI (i386 through int 0x80): nothing
        (ld_w_abs, 0, 0, 0),  # seccomp_data.nr
    ]
    if platform.machine() == "x86_64":
        program += [(jset_k, 0, 1, _X32_SYSCALL_BIT), (ret_k, 0, 0, eperm)]  # the x32 ABI: nothing
    program += [(jeq_k, 0, 1, _nr("clone3")), (ret_k, 0, 0, enosys)]
    if deny_exec:
        program += [(jeq_k, 0, 1, _nr("execve")), (ret_k, 0, 0, eacces),
                    (jeq_k, 0, 1, _nr("execveat")), (ret_k, 0, 0, eacces)]  # fmt: skip
    program += [
        (jeq_k, 1, 0, _nr("unshare")),
        (jeq_k, 0, 3, _nr("clone")),
        (ld_w_abs, 0, 0, 16),  # low half of args[0]: the flags of unshare and clone
        (jset_k, 0, 1, _CLONE_NEWUSER),
        (ret_k, 0, 0, eperm),
        (ret_k, 0, 0, allow),
    ]
    filters = (_SockFilter * len(program))(*(_SockFilter(*instruction) for instruction in program))
    fprog = _SockFprog(len(program), filters)
    if _libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")
