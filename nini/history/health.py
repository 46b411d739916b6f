"""``database_checks``: whether the history database can be read and written, for ``nini doctor``.

No migration runs and no file is created, so a doctor run changes nothing: the write probe
writes a row in a transaction that is rolled back. A missing SQLite file is a fresh start, not a
problem; an empty, garbage or damaged one is, and so is one that cannot be written (a read-only
file, folder or mount, a full disk, a database server that refuses writes). Every failure is a
failed check, never an exception: doctor is what a person runs when something is wrong.
"""

from __future__ import annotations

import os
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Engine

from nini.errors import NiniError
from nini.fsutil import NO_SPACE_ADVICE, disk_full
from nini.history.engine import WRITE, database_name, db_errors, open_engine, sqlite_path, unusable_file_errors
from nini.history.schema import SCHEMA_VERSION, missing_tables, schema_version, stored_version

READ, WRITES = "history database", "history database writes"
INTEGRITY_LINES = 5  # problems integrity_check reports at most (it stops there: a damaged file can have thousands)


class _Probed(Exception):
    """Raised inside the write probe's transaction so that it rolls back."""


def database_checks(url: str, home: Path | None = None) -> list[tuple[str, bool, str]]:
    """``(name, ok, detail)`` of reading the database (it opens, its schema is this nini's, SQLite's
    ``integrity_check`` finds nothing) and, when it reads, of writing it."""
    try:
        parsed = sa.make_url(url)
    except sa_exc.ArgumentError as exc:
        return [(READ, False, f"cannot use the history database URL: {exc}")]
    path = sqlite_path(parsed)
    shown = database_name(parsed, home)
    if path is not None and not os.path.lexists(path):
        return [(READ, True, f"{shown} does not exist yet: a new history starts at first use")]
    try:
        engine = open_engine(url, busy_timeout_ms=2000, home=home)
    except NiniError as exc:
        return [(READ, False, exc.message)]
    try:
        read = _read_check(engine, shown, path)
        if not read[1]:
            problem = _read_only(path, path.resolve().parent) if path is not None else None
            if problem:  # SQLite cannot even read a WAL database it cannot write its index beside
                return [
                    (
                        READ,
                        False,
                        f"{read[2]} ({shown} {problem}: make it writable, or point NINI_DATABASE_URL "
                        "at a writable place)",
                    )
                ]
            return [read]
        return [read, _write_check(engine, shown, path)]
    finally:
        engine.dispose()


def _read_check(engine: Engine, shown: str, path: Path | None) -> tuple[str, bool, str]:
    try:
        with db_errors(shown), unusable_file_errors(shown), engine.connect() as conn:
            version = stored_version(conn)
            missing = missing_tables(conn) if version == SCHEMA_VERSION else []
            problems = (
                []
                if path is None
                else [
                    row
                    for row in conn.exec_driver_sql(f"PRAGMA integrity_check({INTEGRITY_LINES})").scalars()
                    if row != "ok"
                ]
            )
    except NiniError as exc:
        return READ, False, exc.message
    except Exception as exc:  # noqa: BLE001 - doctor reports, never crashes
        return READ, False, f"{shown} cannot be read ({type(exc).__name__}); restore a backup, or move it aside"
    if problems or missing:
        found = [f"tables missing: {', '.join(missing)}"] if missing else problems[:3]
        return (
            READ,
            False,
            (
                f"{shown} is damaged (integrity_check: {'; '.join(found)}); restore a backup, or move "
                "it aside to start a new history"
            ),
        )
    if version > SCHEMA_VERSION:
        return (
            READ,
            False,
            f"{shown} has schema version {version}, newer than this nini ({SCHEMA_VERSION}); upgrade nini",
        )
    if version < SCHEMA_VERSION:
        return READ, True, f"{shown}: schema version {version}, brought to {SCHEMA_VERSION} at the next open"
    return READ, True, f"{shown}: schema version {version}" + (", integrity_check ok" if path else "")


def _write_check(engine: Engine, shown: str, path: Path | None) -> tuple[str, bool, str]:
    """A row written in a transaction that is rolled back; on SQLite first what the file system
    says (read-only file, folder or mount; a full disk), which a rolled-back write may not meet."""
    if path is not None:
        folder = path.resolve().parent
        problem = _read_only(path, folder)
        if problem:
            return (
                WRITES,
                False,
                f"{shown} {problem}: every write of nini fails; make it writable, or point "
                "NINI_DATABASE_URL at a writable place",
            )
        if disk_full(folder):
            return WRITES, False, f"the disk of {shown} is full: every write of nini fails; {NO_SPACE_ADVICE}"
    try:
        with db_errors(shown), engine.execution_options(**{WRITE: True}).begin() as conn:
            conn.execute(schema_version.insert().values(version=-1))
            raise _Probed
    except _Probed:
        return WRITES, True, f"{shown} takes writes (probed with a write that was rolled back)"
    except NiniError as exc:
        if "database is locked" in exc.message:  # a server writing: it can write, so can we
            return WRITES, True, f"{shown} is being written by another process (the probe waited 2 s and stopped)"
        return WRITES, False, exc.message
    except Exception as exc:  # noqa: BLE001 - doctor reports, never crashes
        return WRITES, False, f"{shown} cannot be written ({type(exc).__name__})"


def _read_only(path: Path, folder: Path) -> str | None:
    """Why SQLite could not write ``path`` (its WAL and shared memory sit beside it), or None."""
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return "is on a read-only file system"
    except OSError:
        return None
    if not os.access(path, os.W_OK):
        return "is read-only"
    if not os.access(folder, os.W_OK):
        return "is in a read-only folder (its write-ahead log cannot be made)"
    return None
