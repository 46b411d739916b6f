"""Opening the history database, and turning its failures into ``NiniError``.

SQLite gets WAL (readers never wait for the writer), ``synchronous=NORMAL`` (a commit survives a
crash of the process; only a power cut may lose the last commits, never corrupt the file),
a busy timeout (another process writing makes us wait, not fail) and foreign keys (off by default
in SQLite). All of it is set on every new connection by a connect listener.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import URL, Engine

from nini.errors import ErrorCode, NiniError

SQLITE_HEADER = b"SQLite format 3\x00"
WRITE = "nini_write"
"""Execution option marking a transaction that writes; on SQLite it begins with BEGIN IMMEDIATE."""


def open_engine(url: str, *, busy_timeout_ms: int = 5000) -> Engine:
    """An engine for ``url``; an SQLite file is checked, and its folder created, first."""
    try:
        parsed = sa.make_url(url)
        if parsed.get_backend_name() != "sqlite":
            return sa.create_engine(parsed, pool_pre_ping=True)
        path = _sqlite_path(parsed)
        if path is not None:
            _check_sqlite_file(path)
        engine = sa.create_engine(parsed)
    except (sa_exc.ArgumentError, ImportError) as exc:
        # the URL is configuration, not data: naming the reason (bad syntax, missing driver) is safe
        raise NiniError(ErrorCode.DB_ERROR, f"cannot use the history database URL: {exc}") from None
    _configure_sqlite(engine, busy_timeout_ms)
    return engine


def _sqlite_path(url: URL) -> Path | None:
    """The file behind an SQLite URL; None for in-memory and ``file:`` URI databases."""
    database = url.database or ""
    if database in ("", ":memory:") or url.query.get("uri") == "true" or database.startswith("file:"):
        return None
    return Path(database).expanduser()


def _check_sqlite_file(path: Path) -> None:
    """Refuse a directory or a non-SQLite file with a message that says what to fix.

    SQLite itself would only report "unable to open database file" or "file is not a database"
    on the first query; this names the path and the problem.
    """
    if path.is_dir():
        raise NiniError(
            ErrorCode.DB_ERROR,
            f"the history database path {path} is a directory; set NINI_DATABASE_URL to a file path",
            {"path": str(path)},
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        header = b""
        if path.is_file():
            with path.open("rb") as file:
                header = file.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise NiniError(
            ErrorCode.DB_ERROR, f"cannot open the history database {path}: {exc.strerror}", {"path": str(path)}
        ) from None
    if header and header != SQLITE_HEADER[: len(header)]:
        raise NiniError(
            ErrorCode.DB_ERROR,
            f"{path} exists but is not an SQLite database; move it away or set NINI_DATABASE_URL to another file",
            {"path": str(path)},
        )


def _configure_sqlite(engine: Engine, busy_timeout_ms: int) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record) -> None:  # noqa: ANN001 - DBAPI objects
        # Take transaction control away from the sqlite3 module (it starts transactions only at
        # the first write, too late to lock); the "begin" listener emits BEGIN itself.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")  # first: the others may wait
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: sa.Connection) -> None:
        # A write transaction takes the write lock at BEGIN. A deferred one that reads first and
        # then writes gets SQLITE_BUSY at once (no waiting) if another process wrote meanwhile.
        sql = "BEGIN IMMEDIATE" if conn.get_execution_options().get(WRITE) else "BEGIN"
        try:
            # On the driver itself: through exec_driver_sql this costs about as much as the
            # INSERT that follows (10-20% of a tool call's bookkeeping).
            conn.connection.driver_connection.execute(sql)
        except sqlite3.Error as exc:
            # SQLAlchemy does not wrap errors raised in this hook; wrap them as it does its own.
            raise sa_exc.DBAPIError.instance(sql, None, exc, sqlite3.Error) from exc


@contextmanager
def db_errors() -> Iterator[None]:
    """Turn database failures into ``NiniError(DB_ERROR)``; ``IntegrityError`` passes through.

    Only the driver's first message line is kept: SQLAlchemy's own text carries the SQL and its
    parameters (row contents), and PostgreSQL's DETAIL line quotes key values.
    """
    try:
        yield
    except sa_exc.IntegrityError:
        raise
    except sa_exc.SQLAlchemyError as exc:
        raise NiniError(
            ErrorCode.DB_ERROR,
            f"the history database failed: {driver_message(exc)}",
            {"driver_error": type(getattr(exc, "orig", None) or exc).__name__},
        ) from None


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
