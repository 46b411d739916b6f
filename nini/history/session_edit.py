"""Renaming and deleting a recorded session: its title, or every row that names it.

Separate from store.py, which records what runs; these are a person's edits of the record. The
store knows no callers: who may rename or delete, and whether a turn is going in this process, is
the runtime's to decide (``Runtime.rename_session`` / ``delete_session``).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from nini.errors import ErrorCode, NiniError
from nini.history.schema import (
    artifacts,
    datasets,
    events,
    executions,
    messages,
    session_context,
    session_uids,
    sessions,
    tool_calls,
)
from nini.history.store import HistoryStore
from nini.history.values import no_session
from nini.limits import Limits, check_text

# The tables that name a session, in the order their rows go: a row goes before the rows it points at.
OWNED_ROWS = (events, artifacts, datasets, executions, tool_calls, messages, session_context, session_uids)


def rename_session(store: HistoryStore, session_id: str, title: str, limits: Limits) -> dict[str, Any]:
    """Set the session's title (spaces at either end dropped); its row as it is now. An empty title
    is INVALID_ARGUMENT, one over ``limits.title`` characters TOO_LARGE (``nini.limits``); NOT_FOUND
    when there is no session."""
    title = " ".join(title.split())  # one line: a newline in a title would break the list
    if not title:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, "a title has at least one character")
    check_text("title", title, limits)
    with store.writing() as conn:
        row = conn.execute(
            sessions.update().where(sessions.c.id == session_id).values(title=title).returning(*sessions.c)
        ).first()
    if row is None:
        raise no_session(session_id)
    return dict(row._mapping)


def running_steps(store: HistoryStore, session_id: str) -> int:
    """How many of the session's tool calls are running now (in any process)."""
    with store.reading() as conn:
        return _running(conn, session_id)


def _running(conn: Connection, session_id: str) -> int:
    query = sa.select(sa.func.count()).where(tool_calls.c.session_id == session_id, tool_calls.c.status == "running")
    return int(conn.execute(query).scalar() or 0)


def delete_session(store: HistoryStore, session_id: str) -> None:
    """Delete the session and every row that names it, in one transaction: all of it or nothing.

    CONFLICT when one of its tool calls is still running (in any process: a REST run-code, another
    server of the hub); a turn between model calls in this process is the runtime's to check. The
    session's sandbox uid row goes too: the uid is free again once the session's processes ended.
    """
    with store.writing() as conn:
        found = conn.execute(sa.select(sessions.c.id).where(sessions.c.id == session_id).with_for_update()).first()
        if found is None:
            raise no_session(session_id)
        running = _running(conn, session_id)
        if running:
            raise NiniError(
                ErrorCode.CONFLICT,
                f"session {session_id} has {running} step(s) running; stop them first",
                {"session_id": session_id, "running": running},
            )
        for table in OWNED_ROWS:
            conn.execute(table.delete().where(table.c.session_id == session_id))
        conn.execute(sessions.delete().where(sessions.c.id == session_id))
