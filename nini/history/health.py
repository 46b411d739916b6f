"""``check_database``: whether the history database can be used, for ``nini doctor``.

It only reads: no migration runs and no file is created, so a doctor run changes nothing. A missing
SQLite file is a fresh start, not a problem; an empty, garbage or damaged one is.
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from nini.errors import NiniError
from nini.history.engine import db_errors, open_engine, shown_path, sqlite_path, unusable_file_errors
from nini.history.schema import SCHEMA_VERSION, stored_version


def check_database(url: str, home: Path | None = None) -> tuple[bool, str]:
    """``(usable, detail)``: the file opens, its schema version is one this nini knows, and
    SQLite's ``PRAGMA quick_check`` finds nothing wrong."""
    try:
        path = sqlite_path(sa.make_url(url))
    except sa_exc.ArgumentError as exc:
        return False, f"cannot use the history database URL: {exc}"
    shown = shown_path(path, home) if path is not None else f"NINI_DATABASE_URL ({sa.make_url(url).get_backend_name()})"
    if path is not None and not path.exists():
        return True, f"{shown} does not exist yet: a new history starts at first use"
    try:
        engine = open_engine(url, busy_timeout_ms=2000, home=home)
    except NiniError as exc:
        return False, exc.message
    try:
        with db_errors(), unusable_file_errors(shown), engine.connect() as conn:
            version = stored_version(conn)
            problems = [] if path is None else [row for row in conn.exec_driver_sql("PRAGMA quick_check").scalars()
                                                if row != "ok"]  # fmt: skip
    except NiniError as exc:
        return False, exc.message
    finally:
        engine.dispose()
    if problems:
        return False, (f"{shown} is damaged (quick_check: {'; '.join(problems[:3])}); restore a backup, or move it "
                       "aside to start a new history")  # fmt: skip
    if version > SCHEMA_VERSION:
        return False, f"{shown} has schema version {version}, newer than this nini ({SCHEMA_VERSION}); upgrade nini"
    if version < SCHEMA_VERSION:
        return True, f"{shown}: schema version {version}, brought to {SCHEMA_VERSION} at the next open"
    return True, f"{shown}: schema version {version}, quick_check ok" if path else f"{shown}: schema version {version}"
