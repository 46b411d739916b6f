"""Opening the history database, and turning its failures into ``NiniError``.

SQLite gets WAL (readers never wait for the writer), ``synchronous=NORMAL`` (a commit survives a
crash of the process; only a power cut may lose the last commits, never corrupt the file),
a busy timeout (another process writing makes us wait, not fail) and foreign keys (off by default
in SQLite). All of it is set on every new connection by a connect listener.
"""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, Engine

from nini.errors import ErrorCode, NiniError
from nini.fsutil import disk_full, no_space, no_space_text
from nini.history.sqlite_files import DatabaseFile, FileProblem, GuardedConnection, is_damage, wal_problem
from nini.redact import redact_paths

SQLITE_HEADER = b"SQLite format 3\x00"
SQLITE_FOLDER = "nini_sqlite_folder"  # the database file's folder, on the engine's dialect (see _mark_full)
PG_CONNECT_TIMEOUT_S = 10
WRITE = "nini_write"
"""Execution option marking a transaction that writes; on SQLite it begins with BEGIN IMMEDIATE."""


def open_engine(url: str, *, busy_timeout_ms: int = 5000, home: Path | None = None) -> Engine:
    """An engine for ``url``; an SQLite file is checked (or created whole), and its folder created, first.

    ``home`` is NINI_HOME: messages name the file relative to it (see ``shown_path``).
    """
    try:
        parsed = sa.make_url(url)
        if parsed.get_backend_name() == "postgresql":
            # lock_timeout: a write waits for another's lock as long as SQLite's busy timeout, then fails
            options = f"{parsed.query.get('options', '')} -c lock_timeout={int(busy_timeout_ms)}".strip()
            # an unreachable host (not a stopped server, which refuses at once) would hold every write
            # until TCP gives up (minutes): DB_ERROR after PG_CONNECT_TIMEOUT_S instead, unless the URL says
            connect_args: dict[str, object] = {"options": options}
            if "connect_timeout" not in parsed.query:
                connect_args["connect_timeout"] = PG_CONNECT_TIMEOUT_S
            return sa.create_engine(parsed, pool_pre_ping=True, connect_args=connect_args)
        if parsed.get_backend_name() != "sqlite":
            return sa.create_engine(parsed, pool_pre_ping=True)
        path = sqlite_path(parsed)
        shown = None
        if path is not None:
            shown = shown_path(path, home)
            _prepare_sqlite_file(path, shown)
        # damage and a vanished WAL become errors of the driver itself (see sqlite_files.py)
        engine = sa.create_engine(parsed, connect_args={"factory": GuardedConnection})
    except (sa_exc.ArgumentError, ImportError) as exc:
        # the URL is configuration, not data: naming the reason (bad syntax, missing driver) is safe
        raise NiniError(ErrorCode.DB_ERROR, f"cannot use the history database URL: {exc}") from None
    _configure_sqlite(engine, busy_timeout_ms, shown)
    return engine


def sqlite_path(url: URL) -> Path | None:
    """The file behind an SQLite URL; None for other backends, in-memory and ``file:`` URI databases."""
    database = url.database or ""
    if (
        url.get_backend_name() != "sqlite"
        or database in ("", ":memory:")
        or url.query.get("uri") == "true"
        or database.startswith("file:")
    ):
        return None
    return Path(database).expanduser()


def shown_path(path: Path, home: Path | None) -> str:
    """The database file as messages name it: ``$NINI_HOME/nini.db``, never a host path (a message
    may reach a browser or the model; see redact.py)."""
    if home is not None:
        try:
            return "$NINI_HOME/" + _resolved(path).relative_to(home.expanduser().resolve()).as_posix()
        except (ValueError, OSError, RuntimeError):  # elsewhere, or a folder on the way loops
            pass
    shown = redact_paths(str(path))
    return f"{path.name} (the file of NINI_DATABASE_URL)" if shown.startswith("/") else shown


def _resolved(path: Path) -> Path:
    """``path`` with its links resolved; a link that loops (``nini.db -> nini.db``) as itself."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path.parent.resolve() / path.name


def database_name(url: URL, home: Path | None) -> str:
    """The database as messages name it: the SQLite file (``shown_path``), or a server's
    ``host:port/dbname`` (never its user or password)."""
    path = sqlite_path(url)
    if path is not None:
        return shown_path(path, home)
    if url.host:
        return f"{url.host}:{url.port or 5432}/{url.database or ''}"
    return "(NINI_DATABASE_URL)"


def database_advice(url: URL) -> str:
    """What to do when the database fails, said after the driver's reason."""
    if url.get_backend_name() == "sqlite":
        return "check that the file and its folder are writable and the disk has space; nini retries"
    return "check that the database server is running, reachable and has disk space; nini retries"


class DamagedValue(ValueError):
    """A stored value that cannot be read back (JSON text that is not JSON): the file is damaged."""


def unusable_database(shown: str, problem: str) -> NiniError:
    """A database file that holds no readable history. It is never replaced by a new one: that
    would silently lose the history it had. The user decides."""
    return NiniError(
        ErrorCode.DB_ERROR,
        f"the history database {shown} {problem}; move it aside to start a new history, or restore a backup",
        {"path": shown},
    )


@contextmanager
def unusable_file_errors(shown: str) -> Iterator[None]:
    """SQLite's "not a database" and "malformed" (a file with a valid header and garbage after it)
    as ``unusable_database``; other failures pass through."""
    try:
        yield
    except sa_exc.DBAPIError as exc:
        if exc.orig is not None and is_damage(exc.orig):
            raise unusable_database(shown, f"cannot be read ({driver_message(exc)})") from None
        raise
    except DamagedValue as exc:
        raise unusable_database(shown, f"cannot be read ({exc})") from None


def _prepare_sqlite_file(path: Path, shown: str) -> None:
    """Refuse a directory, an empty or a non-SQLite file with a message that says what to do.

    SQLite itself would take a 0-byte file as a new, empty database (the history is gone without a
    word) and report only "file is not a database" on the first query of a garbage one. A missing
    file is a fresh start: it is created here, whole.
    """
    if path.is_dir():
        raise NiniError(
            ErrorCode.DB_ERROR,
            f"the history database path {shown} is a directory; set NINI_DATABASE_URL to a file path",
            {"path": shown},
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            _create_sqlite_file(path)
        with path.open("rb") as file:
            header = file.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise NiniError(
            ErrorCode.DB_ERROR,
            f"cannot open the history database {shown}: {exc.strerror}; make it a "
            "file nini may read and write, or move it aside to start a new history (NINI_DATABASE_URL "
            "names another)",
            {"path": shown},
        ) from None
    if not header:
        raise unusable_database(shown, "is empty (0 bytes)")
    if header != SQLITE_HEADER:
        raise unusable_database(shown, "is not an SQLite database")
    problem = wal_problem(path, shown)
    if problem is not None:
        raise problem


def _create_sqlite_file(path: Path) -> None:
    """A new database appears whole: made beside ``path`` and hard-linked into place.

    SQLite would create the file empty and write its first page later, so a process opening it in
    between would see a 0-byte file, which ``_prepare_sqlite_file`` refuses as a damaged one.
    Switching to WAL writes the first page. A process that links first wins; the others use its file.
    """
    temp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.new")
    try:
        with closing(sqlite3.connect(temp)) as raw:
            raw.execute("PRAGMA journal_mode = WAL")
        try:
            os.link(temp, path)
        except FileExistsError:
            pass
        except OSError:  # a filesystem without hard links: a rename that could only race another creator
            if not path.exists():
                os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)


def _configure_sqlite(engine: Engine, busy_timeout_ms: int, shown: str | None = None) -> None:
    path = sqlite_path(engine.url)
    folder = path.parent if path is not None else None
    setattr(engine.dialect, SQLITE_FOLDER, folder)  # the engine's own dialect: for driver_errors
    file = DatabaseFile(path, shown or path.name) if path is not None else None
    if file is not None:
        file.on_replaced = engine.dispose  # connections to a file no longer at the path are dropped

    @event.listens_for(engine, "handle_error")
    def _on_error(context: sa.engine.ExceptionContext) -> None:
        _mark_full(context.original_exception, folder)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:  # DBAPI objects: untyped
        # Take transaction control away from the sqlite3 module (it starts transactions only at
        # the first write, too late to lock); the "begin" listener emits BEGIN itself.
        dbapi_connection.isolation_level = None
        dbapi_connection.file = file
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")  # first: the others may wait
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()
        if file is not None:
            file.connected(dbapi_connection)

    @event.listens_for(engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        sql = begin_sql("sqlite", write=bool(conn.get_execution_options().get(WRITE)))
        try:
            # On the driver itself: through exec_driver_sql this costs about as much as the
            # INSERT that follows (10-20% of a tool call's bookkeeping).
            driver: Any = conn.connection.driver_connection  # the sqlite3 connection, open here
            driver.execute(sql)
        except sqlite3.Error as exc:
            _mark_full(exc, folder)
            # SQLAlchemy does not wrap errors raised in this hook; wrap them as it does its own.
            raise sa_exc.DBAPIError.instance(sql, None, exc, sqlite3.Error) from exc


def _mark_full(exc: BaseException, folder: Path | None) -> None:
    """Mark an SQLite I/O error met on a full disk (``database_full`` reads the mark): writing its WAL
    or shared memory there, SQLite says only "disk I/O error" (SQLITE_IOERR_WRITE, _SHMSIZE, ...),
    so the free space of the database's folder tells."""
    if (
        folder is not None
        and str(getattr(exc, "sqlite_errorname", "")).startswith("SQLITE_IOERR")
        and disk_full(folder)
    ):
        exc.nini_disk_full = True  # type: ignore[attr-defined]


def begin_sql(backend: str, *, write: bool) -> str | None:
    """The statement that begins a transaction on the driver's connection; None where the driver
    begins one itself (psycopg, at the first statement).

    On SQLite a write transaction takes the write lock at BEGIN. A deferred one that reads first
    and then writes gets SQLITE_BUSY at once (no waiting) if another process wrote meanwhile.
    """
    if backend != "sqlite":
        return None
    return "BEGIN IMMEDIATE" if write else "BEGIN"


@contextmanager
def driver_errors(dialect: sa.Dialect) -> Iterator[None]:
    """The driver's own errors, met on its connection outside SQLAlchemy (connecting through the
    pool's ``raw_connection`` included), raised as SQLAlchemy's, so that ``db_errors`` maps them."""
    dbapi = dialect.loaded_dbapi
    try:
        yield
    except dbapi.Error as exc:
        _mark_full(exc, getattr(dialect, SQLITE_FOLDER, None))  # no handle_error event out here
        raise sa_exc.DBAPIError.instance(None, None, exc, dbapi.Error, dialect=dialect) from exc


@contextmanager
def db_errors(database: str | None = None, advice: str | None = None) -> Iterator[None]:
    """Turn database failures into ``NiniError(DB_ERROR)``; ``IntegrityError`` passes through.

    ``database`` names it in the message (``database_name``), ``advice`` says what to do
    (``database_advice``). Only the driver's first message line is kept, host paths redacted:
    SQLAlchemy's own text carries the SQL and its parameters (row contents), and PostgreSQL's
    DETAIL line quotes key values.
    """
    try:
        yield
    except sa_exc.IntegrityError:
        raise
    except DamagedValue as exc:
        raise unusable_database(database or "file", f"cannot be read ({exc})") from None
    except sa_exc.SQLAlchemyError as exc:
        orig = getattr(exc, "orig", None)
        if isinstance(orig, FileProblem):  # the file or its WAL replaced, or known damaged: said in full
            raise orig.error from None
        if orig is not None and is_damage(orig):
            raise unusable_database(database or "file", f"cannot be read ({driver_message(exc)})") from None
        named = f" {database}" if database else ""
        if database_full(exc):  # one code for a full disk, wherever it is (issue 36)
            raise no_space(f"the history database{named}", driver_error=type(orig).__name__) from None
        raise NiniError(
            ErrorCode.DB_ERROR,
            f"the history database{named} failed: {redact_paths(driver_message(exc))}"
            + (f"; {advice}" if advice else ""),
            {
                "driver_error": type(getattr(exc, "orig", None) or exc).__name__,
                **({"database": database} if database else {}),
            },
        ) from None


def database_full(exc: sa_exc.SQLAlchemyError) -> bool:
    """Whether the driver says the disk under the database is full: SQLite's SQLITE_FULL ("database
    or disk is full") or an I/O error on a full disk (``_mark_full``), PostgreSQL's SQLSTATE 53100
    (disk_full), or a driver's text saying so (PostgreSQL's "could not extend file ...: No space
    left on device" comes without 53100)."""
    orig = getattr(exc, "orig", None)
    if orig is None:
        return False
    state = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    return (
        getattr(orig, "nini_disk_full", False)
        or state == "53100"
        or str(getattr(orig, "sqlite_errorname", "")).startswith("SQLITE_FULL")
        or no_space_text(str(orig))
    )


def driver_message(exc: sa_exc.SQLAlchemyError) -> str:
    """The first line of the driver's message, without SQL or parameters."""
    orig = getattr(exc, "orig", None)
    lines = str(orig).splitlines() if orig is not None else []
    return lines[0] if lines and lines[0] else type(orig or exc).__name__


def constraint_kind(exc: sa_exc.IntegrityError) -> str:
    """``"unique"``, ``"foreign_key"`` or ``"other"``, from SQLite's error name or PostgreSQL's SQLSTATE."""
    name = getattr(exc.orig, "sqlite_errorname", "")
    state = getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None)
    if name in ("SQLITE_CONSTRAINT_PRIMARYKEY", "SQLITE_CONSTRAINT_UNIQUE") or state == "23505":
        return "unique"
    if name == "SQLITE_CONSTRAINT_FOREIGNKEY" or state == "23503":
        return "foreign_key"
    return "other"
