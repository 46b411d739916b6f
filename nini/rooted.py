"""Folders nini opens without following links: how nini's own process touches files inside a session workspace.

It sits in the foundation (beside ``fsutil``), not in ``execution/``, because everything that
reads or writes a workspace uses it: kernels and the sandbox, the history's exports, reports,
skills, the Jupyter handlers.

Agent code writes the workspace from inside the sandbox, so anything in it may be a trap: a
symbolic link where nini expects a folder (``executions`` pointing at a host folder), a chart file
swapped for a link to a hidden host file between a check and a read, a FIFO that blocks a reader
forever. nini runs outside the sandbox, as the user, so following such a link would act for the
agent. Every host-side read and write in a workspace therefore goes through ``RootedDir``:

- A path is resolved beneath the root without following a link in *any* component: Linux
  ``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)``,
  else a walk that opens one component at a time with ``O_NOFOLLOW`` relative to the previous
  folder's descriptor.
- A file is opened once and used through that descriptor (its type checked with ``fstat`` on the
  descriptor, never by path first), so swapping a name after the check changes nothing.
- Writes go to a new temp file created with ``O_EXCL`` in the folder's descriptor, then renamed
  over the name in the same folder: a link standing at the name is replaced, never followed.

A link, a special file or a folder where a file is expected is POLICY_VIOLATION; a missing one is
NOT_FOUND. Messages name workspace-relative paths only.
"""

from __future__ import annotations

import ctypes
import errno
import io
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from nini.errors import ErrorCode, NiniError
from nini.fsutil import no_space, out_of_space

__all__ = ["RootedDir", "openat2_available"]

_SYS_OPENAT2 = 437  # the same number on every architecture (a syscall added after the table unification)
_RESOLVE = 0x01 | 0x02 | 0x04 | 0x08  # NO_XDEV | NO_MAGICLINKS | NO_SYMLINKS | BENEATH
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK  # a FIFO must not block the open
_COPY_CHUNK = 1 << 20


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_openat2_state: bool | None = None  # unknown until first used


def openat2_available() -> bool:
    """Whether this kernel resolves paths with openat2 (Linux 5.6+, not blocked by a seccomp filter)."""
    global _openat2_state
    if _openat2_state is None:
        try:
            fd = _openat2(os.open("/", _DIR_FLAGS), ".", _DIR_FLAGS, 0, close_dir=True)
        except OSError:
            _openat2_state = False
        else:
            os.close(fd)
            _openat2_state = True
    return _openat2_state


def _openat2(dir_fd: int, name: str, flags: int, mode: int, *, close_dir: bool = False) -> int:
    how = _OpenHow(flags, mode if flags & os.O_CREAT else 0, _RESOLVE)
    try:
        ctypes.set_errno(0)
        fd = _libc.syscall(_SYS_OPENAT2, dir_fd, os.fsencode(name), ctypes.byref(how), ctypes.sizeof(how))
        if fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), name)
        return fd
    finally:
        if close_dir:
            os.close(dir_fd)


def remove_tree(folder: Path) -> None:
    """Remove ``folder`` and everything beneath it without following any link in it (agent code wrote
    there): shutil.rmtree walks by descriptors where the platform allows it
    (``rmtree.avoids_symlink_attacks``, true on Linux); where it cannot, nothing is removed."""
    if not shutil.rmtree.avoids_symlink_attacks:
        raise NiniError(ErrorCode.POLICY_VIOLATION, "this platform cannot remove a folder without following its links")
    shutil.rmtree(folder, ignore_errors=True)


class RootedDir:
    """A folder whose files nini opens without ever following a link beneath it.

    ``root`` itself is trusted (nini made it, or the user named it): it is opened normally. Paths
    given to the methods are relative to it, with ``/`` separators; ``..`` is refused. ``owner``
    (uid, gid) is given to every file and folder nini creates here, when nini runs as root and
    the sandbox writes as another user.
    """

    def __init__(
        self, root: Path, *, owner: tuple[int, int] | None = None, label: str = "the session workspace"
    ) -> None:
        self.root = Path(root)
        self.owner = owner
        self.label = label

    # --- resolving -----------------------------------------------------------------------------
    @staticmethod
    def parts(relative: str | PurePosixPath) -> list[str]:
        """The components of ``relative``: INVALID_ARGUMENT for absolute paths, ``..``, NUL bytes."""
        text = str(relative)
        if "\x00" in text or text.startswith("/"):
            raise NiniError(ErrorCode.INVALID_ARGUMENT, f"invalid workspace path {text!r}: use a relative path")
        parts = [part for part in text.split("/") if part not in ("", ".")]
        if ".." in parts:
            raise NiniError(ErrorCode.INVALID_ARGUMENT, f"invalid workspace path {text!r}: '..' is not allowed")
        return parts

    @contextmanager
    def _root_fd(self) -> Iterator[int]:
        try:
            fd = os.open(self.root, _DIR_FLAGS)
        except OSError as exc:
            raise self._error(exc, "") from None
        try:
            yield fd
        finally:
            os.close(fd)

    def _open_beneath(self, parts: list[str], flags: int, mode: int = 0o644, *, create_dirs: bool = False) -> int:
        """A descriptor of ``parts`` opened with ``flags``, no link followed in any component."""
        with self._root_fd() as root:
            if not parts:
                if flags & os.O_DIRECTORY:
                    return os.dup(root)
                raise self._refused("", "is a folder")
            parent = self._dir_fd(root, parts[:-1], create=create_dirs)
            try:
                return self._open_in(parent, parts[-1], flags, mode, "/".join(parts))
            finally:
                if parent != root:
                    os.close(parent)

    def _dir_fd(self, root: int, parts: list[str], *, create: bool) -> int:
        """The folder ``parts`` beneath ``root`` (``root`` itself when empty), made when ``create``."""
        if not parts:
            return root
        if not create and openat2_available():
            try:
                return _openat2(root, "/".join(parts), _DIR_FLAGS, 0)
            except OSError as exc:
                raise self._error(exc, "/".join(parts)) from None
        current = root
        for depth, part in enumerate(parts):
            shown = "/".join(parts[: depth + 1])
            try:
                if create:
                    self._mkdir_in(current, part)
                following = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=current)
            except OSError as exc:
                error = self._error(exc, shown, _kind(current, part))
                if current != root:
                    os.close(current)
                raise error from None
            if current != root:
                os.close(current)
            current = following
        return current

    def _mkdir_in(self, dir_fd: int, name: str) -> None:
        try:
            os.mkdir(name, 0o755, dir_fd=dir_fd)
        except FileExistsError:
            return
        if self.owner is not None:
            os.chown(name, *self.owner, dir_fd=dir_fd, follow_symlinks=False)

    def _open_in(self, dir_fd: int, name: str, flags: int, mode: int, shown: str) -> int:
        """``name`` in the folder ``dir_fd``, never through a link (the last component included)."""
        try:
            if openat2_available():
                return _openat2(dir_fd, name, flags, mode)
            return os.open(name, flags | os.O_NOFOLLOW, mode, dir_fd=dir_fd)
        except OSError as exc:
            raise self._error(exc, shown, _kind(dir_fd, name)) from None

    # --- reading -------------------------------------------------------------------------------
    def open_file(self, relative: str | PurePosixPath) -> int:
        """A read-only descriptor of the regular file ``relative`` (caller closes it)."""
        parts = self.parts(relative)
        fd = self._open_beneath(parts, _READ_FLAGS)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise self._refused("/".join(parts), "is not a regular file")
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def reader(self, relative: str | PurePosixPath) -> BinaryIO:
        """The regular file ``relative`` as a binary file object (for pandas and friends)."""
        return os.fdopen(self.open_file(relative), "rb")

    def read_bytes(self, relative: str | PurePosixPath, *, limit: int | None = None) -> bytes:
        """The content of ``relative``; TOO_LARGE when it holds more than ``limit`` bytes."""
        with self.reader(relative) as handle:
            data = handle.read() if limit is None else handle.read(limit + 1)
        if limit is not None and len(data) > limit:
            raise NiniError(ErrorCode.TOO_LARGE, f"'{relative}' is larger than {limit:,} bytes")
        return data

    def read_text(self, relative: str | PurePosixPath, *, max_chars: int, encoding: str = "utf-8") -> tuple[str, bool]:
        """At most ``max_chars`` characters of the text file ``relative`` (in ``encoding``), and whether
        there was more."""
        with self.reader(relative) as raw, io.TextIOWrapper(raw, encoding=encoding, errors="replace") as text:
            content = text.read(max_chars + 1)
        return content[:max_chars], len(content) > max_chars

    def lstat(self, relative: str | PurePosixPath) -> os.stat_result | None:
        """The entry ``relative`` itself (a link is not followed); None when it does not exist."""
        parts = self.parts(relative)
        if not parts:
            return os.stat(self.root)
        with self._root_fd() as root:
            try:
                parent = self._dir_fd(root, parts[:-1], create=False)
            except NiniError as exc:
                if exc.code is ErrorCode.NOT_FOUND:
                    return None
                raise
            try:
                return os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                return None
            except OSError as exc:
                raise self._error(exc, "/".join(parts)) from None
            finally:
                if parent != root:
                    os.close(parent)

    def is_file(self, relative: str | PurePosixPath) -> bool:
        """True for a regular file (not a link to one); False for anything else or nothing."""
        try:
            found = self.lstat(relative)
        except NiniError:
            return False
        return found is not None and stat.S_ISREG(found.st_mode)

    def file_size(self, relative: str | PurePosixPath) -> int | None:
        found = self.lstat(relative) if self.is_file(relative) else None
        return found.st_size if found is not None else None

    def listdir(self, relative: str | PurePosixPath = "") -> list[str]:
        """Names in the folder ``relative``; [] when it does not exist."""
        try:
            fd = self._open_beneath(self.parts(relative), _DIR_FLAGS)
        except NiniError as exc:
            if exc.code is ErrorCode.NOT_FOUND:
                return []
            raise
        try:
            return sorted(os.listdir(fd))
        finally:
            os.close(fd)

    def usage(self, *, max_files: int | None = None, max_bytes: int | None = None) -> tuple[int, int, bool, str | None]:
        """What the root holds: (bytes, entries, complete, unreadable), every entry beneath it counted
        (files, folders, links), no link followed. A regular file counts the larger of its size and
        its blocks (a sparse file counts what it claims), anything else its blocks.

        Past ``max_files`` or ``max_bytes`` the count stops (``complete`` False): a workspace flooded
        with files costs a count of the cap, not of the flood. A folder that cannot be opened (agent
        code took its permissions away) ends the count too; ``unreadable`` names it."""
        total = entries = 0
        unreadable: list[str] = []

        def refused(error: OSError) -> None:  # a folder os.fwalk could not open or list: named by its own name
            if not isinstance(error, FileNotFoundError):  # removed while counted: nothing to count
                unreadable.append(str(error.filename or "?"))

        with self._root_fd() as root:
            for _folder, dirs, names, folder_fd in os.fwalk(".", dir_fd=root, follow_symlinks=False, onerror=refused):
                if unreadable:
                    break
                for name in dirs + names:  # a link to a folder is listed in dirs, and not entered
                    try:
                        found = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    entries += 1
                    blocks = found.st_blocks * 512
                    total += max(found.st_size, blocks) if stat.S_ISREG(found.st_mode) else blocks
                    if (max_files is not None and entries > max_files) or (max_bytes is not None and total > max_bytes):
                        return total, entries, False, None
        if unreadable:
            return total, entries, False, unreadable[0]
        return total, entries, True, None

    # --- writing -------------------------------------------------------------------------------
    def makedirs(self, relative: str | PurePosixPath) -> None:
        """The folder ``relative`` and its parents, made where missing; a link in the way is refused."""
        with self._root_fd() as root:
            fd = self._dir_fd(root, self.parts(relative), create=True)
            if fd != root:
                os.close(fd)

    def write_bytes(self, relative: str | PurePosixPath, data: bytes) -> None:
        """Atomically put ``data`` at ``relative`` (a temp file renamed over the name)."""
        self.write_with(relative, lambda handle: handle.write(data))

    def write_with(
        self, relative: str | PurePosixPath, write: Callable[[BinaryIO], object], *, durable: bool = True
    ) -> None:
        """Atomically put at ``relative`` what ``write(file)`` writes: readers see the old file or the
        new one, never half; a crash leaves at most a hidden ``.NAME.*.tmp``. ``durable=False``
        skips the fsync, for a file that is worthless after a crash anyway (a transient copy)."""
        parts = self.parts(relative)
        if not parts:
            raise self._refused("", "is a folder")
        with self._parent(parts) as parent:
            assert parent is not None  # create=True: the folder is made or refused, never None
            temp = self._temp_in(parent, parts[-1], write, durable=durable)
            try:
                os.rename(temp, parts[-1], src_dir_fd=parent, dst_dir_fd=parent)
            except OSError as exc:
                _unlink(parent, temp)
                raise self._error(exc, "/".join(parts)) from None

    def create_new(self, relative: str | PurePosixPath, data: bytes) -> bool:
        """Write ``relative`` whole, only if no entry has that name (False then); never overwrites."""
        parts = self.parts(relative)
        with self._parent(parts) as parent:
            assert parent is not None  # create=True: the folder is made or refused, never None
            temp = self._temp_in(parent, parts[-1], lambda handle: handle.write(data))
            try:
                os.link(temp, parts[-1], src_dir_fd=parent, dst_dir_fd=parent, follow_symlinks=False)
                return True
            except FileExistsError:
                return False
            except OSError as exc:
                raise self._error(exc, "/".join(parts)) from None
            finally:
                _unlink(parent, temp)

    def append_bytes(self, relative: str | PurePosixPath, data: bytes) -> None:
        """Append ``data`` to the regular file ``relative`` (made when missing), never through a link."""
        parts = self.parts(relative)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK
        fd = self._open_beneath(parts, flags, create_dirs=True)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise self._refused("/".join(parts), "is not a regular file")
            if self.owner is not None:
                os.fchown(fd, *self.owner)
            os.set_blocking(fd, True)
            os.write(fd, data)
        except OSError as exc:
            raise self._error(exc, "/".join(parts)) from None
        finally:
            os.close(fd)

    def unlink(self, relative: str | PurePosixPath) -> None:
        """Remove the entry ``relative`` (a link itself, never its target); nothing when absent."""
        parts = self.parts(relative)
        with self._parent(parts, create=False) as parent:
            if parent is not None:
                _unlink(parent, parts[-1])

    def copy_in(self, source: BinaryIO, relative: str | PurePosixPath) -> None:
        """Atomically copy the open file ``source`` to ``relative``."""

        def pump(handle: BinaryIO) -> None:
            while chunk := source.read(_COPY_CHUNK):
                handle.write(chunk)

        self.write_with(relative, pump)

    def chown_tree(self, uid: int, gid: int) -> None:
        """Give the root and everything beneath it to ``uid``/``gid``, links included (as links)."""
        with self._root_fd() as root:
            os.chown(root, uid, gid)
            for _folder, dirs, files, folder_fd in os.fwalk(".", dir_fd=root, follow_symlinks=False):
                for name in dirs + files:
                    try:
                        os.chown(name, uid, gid, dir_fd=folder_fd, follow_symlinks=False)
                    except FileNotFoundError:
                        continue

    @contextmanager
    def _parent(self, parts: list[str], *, create: bool = True) -> Iterator[int | None]:
        """The folder holding ``parts[-1]``; None when it does not exist and ``create`` is false."""
        if not parts:
            raise self._refused("", "is a folder")
        with self._root_fd() as root:
            try:
                parent = self._dir_fd(root, parts[:-1], create=create)
            except NiniError as exc:
                if create or exc.code is not ErrorCode.NOT_FOUND:
                    raise
                yield None
                return
            try:
                yield parent
            finally:
                if parent != root:
                    os.close(parent)

    def _temp_in(self, parent: int, name: str, write: Callable[[BinaryIO], object], *, durable: bool = True) -> str:
        """A new hidden temp file next to ``name``, filled by ``write`` (and fsynced when
        ``durable``); its name."""
        temp = f".{name[:200]}.{secrets.token_hex(4)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(temp, flags, 0o644, dir_fd=parent)
        except OSError as exc:
            raise self._error(exc, name) from None
        try:
            if self.owner is not None:
                os.fchown(fd, *self.owner)
            with os.fdopen(fd, "wb") as handle:
                write(handle)
                handle.flush()
                if durable:
                    os.fsync(handle.fileno())
        except OSError as exc:
            _unlink(parent, temp)
            raise self._error(exc, name) from None
        except BaseException:
            _unlink(parent, temp)
            raise
        return temp

    # --- errors --------------------------------------------------------------------------------
    def _refused(self, shown: str, what: str = "is a symbolic link or a special file") -> NiniError:
        where = f"'{shown}'" if shown else "the folder itself"
        return NiniError(
            ErrorCode.POLICY_VIOLATION,
            f"{where} in {self.label} {what}; nini never follows links or opens special files there",
            {"path": shown},
        )

    def _error(self, exc: OSError, shown: str, kind: int | None = None) -> NiniError:
        """An OSError of a workspace operation as a NiniError naming the relative path only;
        ``kind`` is the file type of the entry that failed, when known (a link is refused)."""
        if exc.errno == errno.ENOENT:
            return NiniError(ErrorCode.NOT_FOUND, f"no file or folder '{shown}' in {self.label}", {"path": shown})
        swapped = exc.errno == errno.ENOTDIR and kind is not None and stat.S_ISDIR(kind)  # a folder again: raced
        if (
            exc.errno in (errno.ELOOP, errno.EXDEV, errno.EMLINK)
            or swapped
            or (kind is not None and stat.S_ISLNK(kind))
        ):
            return self._refused(shown)
        if exc.errno in (errno.ENOTDIR, errno.EISDIR):
            return NiniError(
                ErrorCode.INVALID_ARGUMENT,
                f"'{shown}' in {self.label} is not what nini expected ({os.strerror(exc.errno)})",
                {"path": shown},
            )
        if out_of_space(exc):  # the disk itself is full: NO_SPACE, not the workspace's budget
            return no_space(f"'{shown}' in {self.label}" if shown else self.label, path=shown)
        if exc.errno == errno.EFBIG:  # RLIMIT_FSIZE, nini's own limit of one file
            return NiniError(
                ErrorCode.TOO_LARGE,
                f"could not write '{shown}' in {self.label}: {os.strerror(exc.errno)}",
                {"path": shown},
            )
        return NiniError(
            ErrorCode.INTERNAL,
            f"could not use '{shown}' in {self.label}: {exc.strerror or exc}",
            {"path": shown, "errno": exc.errno},
        )


def _kind(dir_fd: int, name: str) -> int | None:
    """The type bits of ``name`` in ``dir_fd`` (a link is not followed); None when unknown."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except OSError:
        return None


def _unlink(dir_fd: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass
