"""The reads a model call makes of a long session, each bounded by what it needs, never by the
session's length, and the running summary of the turns that no longer fit its context.

A turn's context is the rows its process kept from the last turn and the messages written since
(``context_changes``), or, cold, the newest messages read backwards (``messages_newest_first``, an
indexed range with a limit) down to the last message the summary covers; the turns that fall out
are read forwards in bounded pages (``messages_oldest_first``) only once, to be folded into the
summary (``save_context_summary``). One turn's messages and the last user messages are indexed
reads too. Part of ``HistoryStore`` (store.py), which mixes it in.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from nini.errors import ErrorCode
from nini.history.code_ref import executions_query, resolved
from nini.history.schema import executions, messages, session_context, tool_calls
from nini.history.values import all_rows, no_session, refused


@dataclass
class ContextChanges:
    """What changed in a session's context since a turn last read it (``context_changes``)."""

    through_id: int  # the last message the stored summary covers (0: no summary yet)
    rows: list[dict[str, Any]]  # the messages after the ones read, oldest first
    count: int  # the session's messages after the read's summary, through the newest of ``rows``


class ContextRecords:
    """The bounded message reads and the context summary of ``HistoryStore``."""

    _list: Callable[[sa.Select[Any]], list[dict[str, Any]]]
    _read: Callable[[], AbstractContextManager[Connection]]
    writing: Callable[[], AbstractContextManager[Connection]]
    _now: Callable[[], str]

    def context_changes(self, session_id: str, *, after_id: int, counted_from: int, limit: int) -> ContextChanges:
        """The stored summary's ``through_id``, at most ``limit`` messages with ``id > after_id``, and how
        many messages the session has with ``counted_from < id <=`` the newest of them: a turn that
        kept the messages it read checks with it that none it missed committed meanwhile. One
        connection, three indexed reads."""
        since = messages.c.session_id == session_id
        with self._read() as conn:
            through = conn.execute(
                sa.select(session_context.c.through_id).where(session_context.c.session_id == session_id)
            ).scalar()
            query = sa.select(messages).where(since, messages.c.id > after_id).order_by(messages.c.id).limit(limit)
            rows = all_rows(conn.execute(query))
            newest = rows[-1]["id"] if rows else after_id
            counted = sa.select(sa.func.count()).where(since, messages.c.id > counted_from, messages.c.id <= newest)
            count = conn.execute(counted).scalar()
        return ContextChanges(int(through or 0), rows, int(count or 0))

    def messages_newest_first(
        self, session_id: str, *, limit: int, before_id: int | None = None, after_id: int = 0
    ) -> list[dict[str, Any]]:
        """At most ``limit`` messages with ``after_id < id < before_id``, the newest first."""
        query = sa.select(messages).where(messages.c.session_id == session_id, messages.c.id > after_id)
        if before_id is not None:
            query = query.where(messages.c.id < before_id)
        return self._list(query.order_by(messages.c.id.desc()).limit(limit))

    def messages_oldest_first(
        self, session_id: str, *, after_id: int, before_id: int, limit: int
    ) -> list[dict[str, Any]]:
        """At most ``limit`` messages with ``after_id < id < before_id``, the oldest first."""
        query = sa.select(messages).where(
            messages.c.session_id == session_id, messages.c.id > after_id, messages.c.id < before_id
        )
        return self._list(query.order_by(messages.c.id).limit(limit))

    def turn_messages(self, session_id: str, turn_id: str) -> list[dict[str, Any]]:
        """The messages of one turn, in order."""
        query = sa.select(messages).where(messages.c.session_id == session_id, messages.c.turn_id == turn_id)
        return self._list(query.order_by(messages.c.id))

    def last_messages(
        self, session_id: str, role: str, limit: int, *, before_id: int | None = None
    ) -> list[dict[str, Any]]:
        """The last ``limit`` messages of ``role`` (before message ``before_id`` if given), in order."""
        query = sa.select(messages).where(messages.c.session_id == session_id, messages.c.role == role)
        if before_id is not None:
            query = query.where(messages.c.id < before_id)
        return self._list(query.order_by(messages.c.id.desc()).limit(limit))[::-1]

    def last_step(self, session_id: str, label: str | None, save_as: str | None) -> dict[str, Any] | None:
        """The newest execution (``id``, ``status``) with this ``label`` or output dataset ``save_as``."""
        found = []
        for column, value in ((executions.c.label, label), (executions.c.save_as, save_as)):
            if value:
                query = sa.select(executions.c.id, executions.c.status, executions.c.created_at).where(
                    executions.c.session_id == session_id, column == value
                )
                found += self._list(query.order_by(executions.c.created_at.desc(), executions.c.id.desc()).limit(1))
        return max(found, key=lambda row: (row["created_at"], row["id"]), default=None)

    def executions_of_calls(self, call_ids: list[str]) -> list[dict[str, Any]]:
        """The executions of these tool calls (one turn's), their code resolved, in the order recorded."""
        if not call_ids:
            return []
        query = executions_query().where(executions.c.tool_call_id.in_(call_ids))
        return resolved(self._list(query.order_by(executions.c.created_at, executions.c.id)))

    def tool_calls_named(self, session_id: str, tool_name: str, *, newest_first: bool = False) -> list[dict[str, Any]]:
        """The session's calls of one skill, in the order they started (or the newest first)."""
        query = sa.select(tool_calls).where(tool_calls.c.session_id == session_id, tool_calls.c.tool_name == tool_name)
        order = (tool_calls.c.started_at, tool_calls.c.id)
        return self._list(query.order_by(*(column.desc() for column in order) if newest_first else order))

    def context_summary(self, session_id: str) -> dict[str, Any] | None:
        """The session's running summary: ``through_id``, ``turns`` and ``summary``; None before the first fold."""
        rows = self._list(sa.select(session_context).where(session_context.c.session_id == session_id))
        return rows[0] if rows else None

    def save_context_summary(
        self, session_id: str, summary: dict[str, Any], *, through_id: int, turns: int, replaces: int
    ) -> bool:
        """Store the summary of the turns up to message ``through_id``, in place of the one that covered
        up to ``replaces`` (0: none yet). False, and nothing written, when another process folded first."""
        values = {"summary": summary, "through_id": through_id, "turns": turns, "updated_at": self._now()}
        table = session_context
        try:
            with self.writing() as conn:
                if replaces == 0:
                    found = conn.execute(sa.select(table.c.through_id).where(table.c.session_id == session_id))
                    if found.first() is not None:
                        return False
                    conn.execute(table.insert().values(session_id=session_id, **values))
                    return True
                updated = conn.execute(
                    table.update()
                    .where(table.c.session_id == session_id, table.c.through_id == replaces)
                    .values(**values)
                )
                return bool(updated.rowcount)
        except IntegrityError as exc:
            error = refused(exc, "the context summary", missing=no_session(session_id))
            if error.code == ErrorCode.CONFLICT:  # another process inserted the first one meanwhile
                return False
            raise error from None
