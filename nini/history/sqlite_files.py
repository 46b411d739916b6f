"""The SQLite file under the store: damage seen on it, and its identity while connections are open.

SQLite reports some damage in ways the layers above would not take for damage: a bit flip in a
schema name makes its error message invalid UTF-8, and Python's ``sqlite3`` raises a bare
``UnicodeDecodeError`` decoding it (no file named: "INTERNAL: UnicodeDecodeError"). And it does
not notice at all when its write-ahead log is deleted under an open connection: the connection
keeps committing into the deleted file, whose commits are gone with the process.

So nini's SQLite connections are ``GuardedConnection``s (the ``factory`` of ``sqlite3.connect``):

- every failure that means a damaged file (SQLITE_CORRUPT, SQLITE_NOTADB, text that is not
  UTF-8, an error message that is not UTF-8) is raised as ``DamagedFileError``, an
  ``sqlite3.DatabaseError`` named SQLITE_CORRUPT, so that ``engine.db_errors`` words it as a
  damaged database, and the file is remembered as damaged (``DatabaseFile.damaged``);
- each connection records the identity (device, inode) of the database file and of its WAL when
  it opens; after each commit both are compared with the files now at those paths. SQLite itself never removes
  or replaces either while a connection is open, so a difference means someone else did: the commit is not
  acknowledged (``FileProblem``);
- a write into a file this process knows damaged, or whose WAL went missing, is refused before it
  starts, until the file at the path is another one (a backup put back): then the engine's
  connections are dropped (``on_replaced``), and the next write opens the new file.

The checks cost two ``os.stat`` calls per commit (a few µs each: about 5-10% of the CPU a tool call's
bookkeeping takes, measured on a loaded 2-core machine).
"""

from __future__ import annotations

import os
import sqlite3
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nini.errors import ErrorCode, NiniError

DAMAGE_NAMES = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
UNDECODABLE = "Could not decode to UTF-8"  # sqlite3's message for TEXT that is not UTF-8
Identity = tuple[int, int] | None  # (st_dev, st_ino); None: no file at the path


def identity(path: Path | str) -> Identity:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


WAL_MAGIC = (b"\x37\x7f\x06\x82", b"\x37\x7f\x06\x83")
WAL_HEADER, FRAME_HEADER = 32, 24
STABLE_READS = 5  # how often the WAL is looked at again while another process changes it
SHM_HEADER = 48  # the wal-index header, kept twice (offsets 0 and 48), then nBackfill at 96


def wal_problem(path: Path, shown: str) -> NiniError | None:
    """What is wrong with the WAL beside ``path``, seen before SQLite opens it, or None.

    SQLite takes a WAL that is not one (garbage) for an empty one, and the changes it held are gone
    without a word; and when the WAL was deleted while a process had it open, the shared memory
    still counts frames not yet copied into the database, which another process then meets as
    "disk I/O error". Both are told here, naming the file and what to do.
    """
    wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
    for _attempt in range(STABLE_READS):
        # the shared memory is read before and after the WAL: a live process appends frames before
        # it counts them, and checkpoints before it deletes the WAL, so only a state that held
        # still while the WAL was looked at is a fact (a moving one is a process at work)
        before = _frames_not_in_database(shm)
        try:
            with wal.open("rb") as file:
                magic = file.read(4)
            wal_size: int | None = wal.stat().st_size
        except FileNotFoundError:
            magic, wal_size = b"", None
        except OSError:
            return None  # SQLite will say what it cannot open
        if len(magic) == 4 and magic not in WAL_MAGIC and magic != bytes(4):
            return NiniError(
                ErrorCode.DB_ERROR,
                f"the history database's write-ahead log {shown}-wal is damaged (it is "
                "not a write-ahead log), and the changes it held cannot be read: stop every nini process, "
                f"move {shown}-wal aside (those changes are lost) or restore a backup",
                {"path": shown},
            )
        if before is None or wal_size is not None and wal_size >= WAL_HEADER + before[0] * (FRAME_HEADER + before[1]):
            return None
        if _frames_not_in_database(shm) == before:
            break
    else:
        return None  # still moving: a process is at work on it, and SQLite will say what fails
    return NiniError(
        ErrorCode.DB_ERROR,
        f"the history database's write-ahead log {shown}-wal was removed or cut while "
        f"nini was running, with changes not yet in {shown}: stop every nini process (one still running "
        "saves them as it stops), then run nini doctor; restore a backup if it finds damage",
        {"path": shown, "reason": "wal_missing"},
    )


def _frames_not_in_database(shm: Path) -> tuple[int, int] | None:
    """``(frames, page size)`` the shared memory says the WAL holds, when some are not yet copied
    into the database; None when all are, or it cannot be told (no file, a header being written)."""
    try:
        with shm.open("rb") as file:
            head = file.read(2 * SHM_HEADER + 4)
    except OSError:
        return None
    if len(head) < 2 * SHM_HEADER + 4 or head[:SHM_HEADER] != head[SHM_HEADER : 2 * SHM_HEADER] or head[12] != 1:
        return None
    order = sys.byteorder  # shared memory: in this machine's byte order (isInit at 12)
    page = int.from_bytes(head[14:16], order)
    frames = int.from_bytes(head[16:20], order)
    backfilled = int.from_bytes(head[2 * SHM_HEADER : 2 * SHM_HEADER + 4], order)
    if frames <= backfilled:
        return None
    return frames, 65536 if page == 1 else page


class DamagedFileError(sqlite3.DatabaseError):
    """The file holds something SQLite or the driver cannot read; named SQLITE_CORRUPT for the layers above."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.sqlite_errorname = "SQLITE_CORRUPT"


class FileProblem(sqlite3.OperationalError):
    """The database file or its WAL is not the one the connection opened (or this process knows
    the file damaged); ``error`` is the DB_ERROR to give the caller as it is."""

    def __init__(self, error: NiniError) -> None:
        super().__init__(error.message)
        self.error = error


def is_damage(exc: BaseException) -> bool:
    """Whether a driver error says the file is damaged (not busy, not full, not missing)."""
    name = str(getattr(exc, "sqlite_errorname", "") or "")
    return name.startswith(DAMAGE_NAMES) or UNDECODABLE in str(exc)


class DatabaseFile:
    """One SQLite database file of one engine: what its connections share."""

    def __init__(self, path: Path, shown: str) -> None:
        self.path = path
        self.wal = Path(f"{path}-wal")
        self._paths = (os.fspath(path), os.fspath(self.wal))  # as str: stat'ed after every commit
        self.shown = shown
        self.on_replaced: Callable[[], None] = lambda: None  # drops the engine's connections (set by open_engine)
        self._lock = threading.Lock()
        self._problem: NiniError | None = None
        self._problem_file: Identity = None  # the file the problem was seen on

    def damaged(self, reason: str) -> None:
        """Remember that the file is damaged: writes are refused until another file is at the path."""
        self._remember(
            NiniError(
                ErrorCode.DB_ERROR,
                f"the history database {self.shown} is damaged ({reason}); nini writes nothing more into it: "
                "restore a backup, or move it aside to start a new history",
                {"path": self.shown, "reason": "damaged"},
            )
        )

    def _remember(self, problem: NiniError) -> None:
        with self._lock:
            if self._problem is None:
                self._problem, self._problem_file = problem, identity(self.path)

    def connected(self, connection: GuardedConnection) -> None:
        """Record the files a new connection opened (after it switched to WAL: the WAL exists then)."""
        connection.opened_files = (identity(self._paths[0]), identity(self._paths[1]))

    @property
    def known_bad(self) -> bool:
        """Whether this process knows the file damaged or its WAL gone (no stat: before every write)."""
        return self._problem is not None

    def check(self, connection: GuardedConnection, *, committed: bool) -> None:
        """Raise ``FileProblem`` when the connection's files are not the ones at the paths now, or
        when this process knows the file damaged or its WAL gone (and it is still that file)."""
        now = identity(self._paths[0])
        if self._problem is not None:
            with self._lock:
                if self._problem is not None and now is not None and now != self._problem_file:
                    self._problem = None  # another file is there now: a backup put back, or a new history
        opened_file, opened_wal = connection.opened_files
        if opened_file is not None and now != opened_file:
            self.on_replaced()
            raise FileProblem(
                NiniError(
                    ErrorCode.DB_ERROR,
                    f"the history database {self.shown} was {'removed' if now is None else 'replaced'} while nini was "
                    f"running; {'what was just written is not in the file at that path; ' if committed else ''}"
                    "nini opens the file there at the next write",
                    {"path": self.shown, "reason": "replaced"},
                )
            )
        if opened_wal is not None and identity(self._paths[1]) != opened_wal:
            _save_into_database(connection)
            self._remember(
                NiniError(
                    ErrorCode.DB_ERROR,
                    f"the history database's write-ahead log {self.shown}-wal was removed or replaced while nini was "
                    "running, so what nini records now would be lost; nini writes nothing more: stop nini (its "
                    "processes save what they hold as they stop), then check the history with nini doctor, and "
                    "restore a backup if it finds damage",
                    {"path": self.shown, "reason": "wal_missing"},
                )
            )
        if self._problem is not None:
            raise FileProblem(self._problem)


def _save_into_database(connection: sqlite3.Connection) -> None:
    """Copy what the connection's (deleted) WAL holds into the database file, so that the changes
    already acknowledged survive this process being killed; best effort."""
    try:
        sqlite3.Connection.execute(connection, "PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    except sqlite3.Error:
        pass


def _guarded(name: str) -> Any:
    """``sqlite3.Cursor``'s method ``name``, raising ``GuardedConnection.damage`` of its errors."""
    base = getattr(sqlite3.Cursor, name)

    def method(self: GuardedCursor, *args: Any) -> Any:
        try:
            return base(self, *args)
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            found = self.connection.damage(exc)
            if found is exc:
                raise
            raise found from None

    method.__name__ = method.__qualname__ = name
    return method


class GuardedCursor(sqlite3.Cursor):
    """A cursor whose damage errors are ``DamagedFileError`` (and remembered by its file)."""

    connection: GuardedConnection
    execute = _guarded("execute")
    executemany = _guarded("executemany")
    fetchone = _guarded("fetchone")
    fetchmany = _guarded("fetchmany")
    fetchall = _guarded("fetchall")


class GuardedConnection(sqlite3.Connection):
    """The ``sqlite3`` connection of nini's SQLite engines; ``file`` set by the engine's connect listener."""

    file: DatabaseFile | None = None
    opened_files: tuple[Identity, Identity] = (None, None)  # see DatabaseFile.connected

    def cursor(self, factory: Any = GuardedCursor) -> Any:  # noqa: ANN401 - sqlite3's signature
        return super().cursor(factory)

    def execute(self, sql: str, *args: Any) -> GuardedCursor:
        # sqlite3's own execute makes a plain cursor, not ``cursor()``'s. A write begins (engine.begin_sql):
        # refused at once into a file known bad; the files are compared after each commit (two stats)
        if self.file is not None and self.file.known_bad and sql.startswith("BEGIN IMMEDIATE"):
            self.file.check(self, committed=False)
        executed: GuardedCursor = self.cursor().execute(sql, *args)  # _guarded's wrappers are untyped
        return executed

    def commit(self) -> None:
        try:
            super().commit()
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            found = self.damage(exc)
            if found is exc:
                raise
            raise found from None
        if self.file is not None:
            self.file.check(self, committed=True)

    def damage(self, exc: BaseException) -> BaseException:
        """The error to raise for ``exc``: a ``DamagedFileError`` when it means damage, else ``exc``."""
        if isinstance(exc, UnicodeDecodeError):  # the message of an error about a damaged schema
            found = DamagedFileError("malformed database schema: names that are not UTF-8")
        elif isinstance(exc, DamagedFileError):
            found = exc
        elif isinstance(exc, FileProblem):
            return exc
        elif not is_damage(exc):
            io_error = str(getattr(exc, "sqlite_errorname", "")).startswith("SQLITE_IOERR")
            problem = wal_problem(self.file.path, self.file.shown) if io_error and self.file is not None else None
            return exc if problem is None else FileProblem(problem)
        elif UNDECODABLE in str(exc):  # its text quotes the row: not for a message
            found = DamagedFileError("stored text that is not UTF-8")
        else:
            found = DamagedFileError(str(exc).splitlines()[0][:200] or "database disk image is malformed")
        if self.file is not None:
            self.file.damaged(str(found))
        return found
