"""Host uids of session sandboxes, allocated by the store: unique within a database, kept for good.

A root nini runs each session's sandboxed code as a host uid of its own. A hash of the workspace
path gave colliding uids (one session's processes then counted against another's limits, and its
files were the other's); here the uid is a row of ``session_uids``, whose ``uid`` column is unique,
so a uid is never given twice, and a session asks for its uid again after a restart and gets the
same one. The store knows nothing of sandboxes: the caller names the range to allocate from.
"""

from __future__ import annotations

import secrets

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from nini.errors import ErrorCode, NiniError
from nini.history.schema import session_uids
from nini.history.store import HistoryStore, dialect_insert

ATTEMPTS = 4  # each a transaction of its own
UID_LOCK = 0x6E696E75  # the advisory lock key of uid allocation on PostgreSQL


def session_uid(store: HistoryStore, session_id: str, low: int, high: int) -> int:
    """Session ``session_id``'s uid, in ``[low, high)``: the one it was given, else the next free one.

    The first uid of a database is drawn at random in the lower half of the range, so that two
    databases on one host (two NINI_HOMEs) are unlikely to hand out the same numbers; after it,
    each new session gets the highest uid given so far plus one. Writers take turns (SQLite's
    BEGIN IMMEDIATE, a transaction-level advisory lock on PostgreSQL); should a uid be taken all
    the same (a row written by other means), the insert does nothing and the next number is tried.
    """
    for _ in range(ATTEMPTS):
        with store.writing() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(sa.select(sa.func.pg_advisory_xact_lock(UID_LOCK)))
            found = _uid_of(conn, session_id)
            if found is not None:
                return found
            top = conn.execute(
                sa.select(sa.func.max(session_uids.c.uid)).where(session_uids.c.uid >= low, session_uids.c.uid < high)
            ).scalar()
            uid = low + secrets.randbelow(max(1, (high - low) // 2)) if top is None else int(top) + 1
            if uid >= high:
                raise NiniError(ErrorCode.INTERNAL, f"every sandbox uid from {low} to {high - 1} is taken")
            insert = dialect_insert(conn.dialect.name, session_uids).on_conflict_do_nothing()
            conn.execute(insert, {"session_id": session_id, "uid": uid})
            found = _uid_of(conn, session_id)
            if found is not None:
                return found
    raise NiniError(ErrorCode.DB_ERROR, f"no sandbox uid could be allocated for session {session_id}")


def _uid_of(conn: Connection, session_id: str) -> int | None:
    found = conn.execute(sa.select(session_uids.c.uid).where(session_uids.c.session_id == session_id)).scalar()
    return None if found is None else int(found)
