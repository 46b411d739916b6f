"""HistoryStore: sessions, messages, tool calls, executions, artifacts, datasets and events.

A sync API that is safe to use from any thread (each call checks a connection out of the engine's
pool for one transaction). Async code goes through ``call``, which runs the method on one of the
store's ``CALL_THREADS`` (8) threads, so the event loop never waits on the database and the writes
of concurrent turns share a group commit (commit.py). Every method returns plain, JSON-ready dicts;
every database failure is a ``NiniError``.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import socket
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from nini.errors import ErrorCode, NiniError
from nini.history.calls import Events, ToolCallRecords
from nini.history.code_ref import executions_query, resolved
from nini.history.commit import GroupCommit
from nini.history.context_rows import ContextRecords
from nini.history.driver import Transaction
from nini.history.engine import (
    constraint_kind,
    database_advice,
    database_name,
    db_errors,
    driver_errors,
    open_engine,
    unusable_file_errors,
)
from nini.history.pending import PendingEnds
from nini.history.schema import events, executions, messages, migrate, sessions, tool_calls
from nini.history.statements import (
    ADD_EVENT,
    ADD_MESSAGE,
    EVENT_SHAPE,
    LOCK_SESSION,
    NEXT_SEQ,
    NOTIFY_EVENT,
)
from nini.history.values import (
    all_rows,
    iso,
    new_id,
    no_session,
    one_row,
    refused,
    retrieve,
)

# finish_tool_call's parameters are named artifacts and datasets, so these tables get other names
from nini.history.schema import artifacts as artifact_table  # isort: skip
from nini.history.schema import datasets as dataset_table  # isort: skip

if TYPE_CHECKING:
    from sqlalchemy.dialects import postgresql, sqlite

    from nini.config import Settings

T = TypeVar("T")
log = logging.getLogger("nini.history")

EVENT_RETRIES = 5
CALL_THREADS = 8


def dialect_insert(dialect: str, table: sa.Table) -> sqlite.Insert | postgresql.Insert:
    """The INSERT of ``dialect`` (the two backends nini supports), for its ON CONFLICT DO NOTHING. Its
    module is imported here, when first needed: the PostgreSQL one (a tenth of a second of CPU) was
    imported at the start of every CLI command, where a SQLite history never needs it."""
    if dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        return sqlite_insert(table)
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as postgresql_insert

        return postgresql_insert(table)
    raise KeyError(dialect)


class HistoryStore(ToolCallRecords, ContextRecords):
    """The durable record of nini. Open with a SQLAlchemy URL; ``close()`` when done."""

    def __init__(self, url: str, *, busy_timeout_ms: int = 5000, home: Path | None = None) -> None:
        """Open (creating an SQLite file and its folder), migrate, and mark orphaned tool calls.

        ``busy_timeout_ms`` is how long an SQLite write waits for another process's write before
        failing with DB_ERROR. ``home`` (NINI_HOME) is what messages name the file relative to.
        An existing file that is not a readable database is a DB_ERROR, never replaced.
        """
        self.engine = open_engine(url, busy_timeout_ms=busy_timeout_ms, home=home)
        shown = database_name(self.engine.url, home)
        self._naming = (shown, database_advice(self.engine.url))  # for DB_ERROR messages
        # SQLite has one writer at a time; other backends lock the rows they read to write
        self._row_locks = self.engine.dialect.name != "sqlite"
        self._host = socket.gethostname()
        self._clock_lock = threading.Lock()
        self._last_time = datetime.min.replace(tzinfo=UTC)
        self._writer: ThreadPoolExecutor | None = None
        self._writer_lock = threading.Lock()
        self._commits = GroupCommit(self.engine, database=shown, advice=self._naming[1])
        # (started_at, session_id) of the calls this store started and has not ended
        self._started: dict[str, tuple[str, str]] = {}
        self._pending = PendingEnds(self._write_pending)
        try:
            with db_errors(*self._naming), unusable_file_errors(shown):
                migrate(self.engine, shown)
            self._mark_orphans()
        except BaseException:
            self.engine.dispose()
            raise

    @classmethod
    def from_settings(cls, settings: Settings) -> HistoryStore:
        return cls(settings.database, home=settings.home)

    def close(self) -> None:
        """Finish queued ``call``s, stop the store's threads, close connections; safe to call twice."""
        with self._writer_lock:
            writer, self._writer = self._writer, None
        if writer is not None:
            writer.shutdown(wait=True)
        self._pending.close()
        self._commits.close()
        self.engine.dispose()

    async def call(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run ``fn(*args, **kwargs)`` (a store method, or a function using the store) on one of the
        store's threads and await its result.

        A few threads (``CALL_THREADS``), so that the writes of concurrent turns reach the group
        commit together and share a commit (see commit.py), and reads need not wait behind them.
        Calls that are awaited one after the other run in that order; concurrent ones in any.
        Cancelling the awaiting task does not stop the call, even one still queued: a turn
        cancelled while the end of its tool call waits for a thread still records that end. The
        call completes or fails as a whole.
        """
        loop = asyncio.get_running_loop()
        # the caller's context goes with the call, as with asyncio.to_thread (e.g. the language of
        # the client a turn is for, which the words of a preferences block follow)
        call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
        future = loop.run_in_executor(self._writer_thread(), call)
        future.add_done_callback(retrieve)  # an outcome nobody awaits any more is not an error to report
        return await asyncio.shield(future)

    # sessions

    def create_session(
        self,
        session_id: str | None = None,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        *,
        owner: str | None = None,
    ) -> dict[str, Any]:
        """A new session, owned by ``owner`` (a Jupyter identity; None where there is none: the CLI)."""
        now = self._now()
        row = {
            "id": session_id or new_id("s"),
            "title": title,
            "created_at": now,
            "updated_at": now,
            "metadata": metadata,
            "owner": owner,
        }
        try:
            with self.writing() as conn:
                return one_row(conn.execute(sessions.insert().returning(*sessions.c), row))
        except IntegrityError as exc:
            raise refused(exc, f"session {row['id']}") from None

    def ensure_session(
        self,
        session_id: str,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        *,
        owner: str | None = None,
    ) -> dict[str, Any]:
        """Session ``session_id``, created with ``title`` and ``metadata`` if there is none yet.

        Several processes naming one new session at once (``nini run-code --session X`` run in
        parallel) all get the one row: the insert that finds the row there does nothing, and the
        row is read in the same transaction. ``create_session`` is for a session that must be new.
        """
        now = self._now()
        row = {
            "id": session_id,
            "title": title,
            "created_at": now,
            "updated_at": now,
            "metadata": metadata,
            "owner": owner,
        }
        insert = dialect_insert(self.engine.dialect.name, sessions).on_conflict_do_nothing(index_elements=["id"])
        with self.writing() as conn:
            conn.execute(insert, row)
            return dict(conn.execute(sa.select(sessions).where(sessions.c.id == session_id)).one()._mapping)

    def get_session(self, session_id: str) -> dict[str, Any]:
        with self._read() as conn:
            row = conn.execute(sa.select(sessions).where(sessions.c.id == session_id)).first()
        if row is None:
            raise no_session(session_id)
        return dict(row._mapping)

    def list_sessions(
        self, limit: int = 100, *, owner: str | None = None, unowned: bool = False, text: str | None = None
    ) -> list[dict[str, Any]]:
        """Newest first, each with ``tool_call_count`` and ``execution_count``; only those of
        ``owner`` when given, only those without an owner with ``unowned``; with ``text``, only
        those whose title or a message (the user's or the model's) contains it, in any case."""
        counts = [
            sa.select(sa.func.count()).where(table.c.session_id == sessions.c.id).scalar_subquery().label(label)
            for table, label in ((tool_calls, "tool_call_count"), (executions, "execution_count"))
        ]
        query = sa.select(sessions, *counts).order_by(sessions.c.created_at.desc(), sessions.c.id.desc()).limit(limit)
        if owner is not None:
            query = query.where(sessions.c.owner == owner)
        if unowned:
            query = query.where(sessions.c.owner.is_(None))
        if text:
            pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            said = sa.select(messages.c.id).where(
                messages.c.session_id == sessions.c.id,
                messages.c.role.in_(("user", "assistant")),
                messages.c.content.ilike(pattern, escape="\\"),
            )
            query = query.where(sa.or_(sessions.c.title.ilike(pattern, escape="\\"), sa.exists(said)))
        with self._read() as conn:
            return all_rows(conn.execute(query))

    def touch_session(self, session_id: str) -> dict[str, Any]:
        """Set ``updated_at`` to now."""
        query = sessions.update().where(sessions.c.id == session_id).values(updated_at=self._now())
        with self.writing() as conn:
            row = conn.execute(query.returning(*sessions.c)).first()
        if row is None:
            raise no_session(session_id)
        return dict(row._mapping)

    # messages

    def add_message(
        self,
        session_id: str,
        role: str,
        content: str | None,
        *,
        turn_id: str | None = None,
        tool_call_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        row = {
            "session_id": session_id,
            "turn_id": turn_id,
            "role": role,
            "content": content,
            "tool_call_id": tool_call_id,
            "metadata": metadata,
            "created_at": self._now(),
        }
        try:
            return self._run(session_id, lambda tx: tx.one(ADD_MESSAGE, row))
        except IntegrityError as exc:
            raise refused(exc, "the message", missing=no_session(session_id)) from None

    def list_messages(self, session_id: str) -> list[dict[str, Any]]:
        """In the order they were added."""
        return self._list(sa.select(messages).where(messages.c.session_id == session_id).order_by(messages.c.id))

    # executions, artifacts, datasets

    def list_executions(
        self, session_id: str, language: str | None = None, *, fields: Iterable[str] | None = None
    ) -> list[dict[str, Any]]:
        """In the order they were recorded; only ``language`` ("python" or "r") if given; only the
        columns ``fields`` if given (a scan for labels need not load every output)."""
        query = executions_query(fields).where(executions.c.session_id == session_id)
        if language is not None:
            query = query.where(executions.c.language == language)
        return resolved(self._list(query.order_by(executions.c.created_at, executions.c.id)))

    def get_execution(self, execution_id: str) -> dict[str, Any]:
        """The execution's row, its code read from its call when stored there (code_ref.py)."""
        rows = resolved(self._list(executions_query().where(executions.c.id == execution_id)))
        if not rows:
            raise NiniError(ErrorCode.NOT_FOUND, f"no execution {execution_id}", {"id": execution_id})
        return rows[0]

    def mark_rolled_back(self, execution_id: str) -> dict[str, Any]:
        """Mark an execution as undone: reports leave it and its charts out. Returns the row.

        The record itself stays (history is never rewritten); marking it again keeps the first time.
        """
        query = (
            executions.update()
            .where(executions.c.id == execution_id, executions.c.rolled_back_at.is_(None))
            .values(rolled_back_at=self._now())
        )
        with self.writing() as conn:
            conn.execute(query)
        return self.get_execution(execution_id)

    def list_artifacts(self, session_id: str) -> list[dict[str, Any]]:
        query = sa.select(artifact_table).where(artifact_table.c.session_id == session_id)
        return self._list(query.order_by(artifact_table.c.id))

    def list_datasets(self, session_id: str) -> list[dict[str, Any]]:
        query = sa.select(dataset_table).where(dataset_table.c.session_id == session_id)
        return self._list(query.order_by(dataset_table.c.name))

    def get_dataset(self, session_id: str, name: str) -> dict[str, Any]:
        query = sa.select(dataset_table).where(dataset_table.c.session_id == session_id, dataset_table.c.name == name)
        with self._read() as conn:
            row = conn.execute(query).first()
        if row is None:
            raise NiniError(
                ErrorCode.NOT_FOUND,
                f"session {session_id} has no dataset {name!r}",
                {"session_id": session_id, "name": name},
            )
        return dict(row._mapping)

    # events

    def append_event(
        self,
        session_id: str,
        type: str,  # noqa: A002 - the event contract's field name
        data: Any,
        *,
        turn_id: str | None = None,
        tool_call_id: str | None = None,
    ) -> dict[str, Any]:
        """Store an event with the session's next ``seq`` and return it in the event shape.

        The seq is read and used in one transaction. On SQLite the write lock makes that enough;
        on PostgreSQL the session's row is locked first (``LOCK_SESSION``), so writers of one
        session, in any process, take their turns. Should two still pick one seq, the second
        insert fails on the primary key and is retried with a fresh one.
        """
        for attempt in range(EVENT_RETRIES):
            try:
                return self._run(
                    session_id, lambda tx: self._add_event(tx, session_id, type, data, turn_id, tool_call_id)
                )
            except IntegrityError as exc:
                if constraint_kind(exc) != "unique" or attempt == EVENT_RETRIES - 1:
                    raise refused(exc, "the event", missing=no_session(session_id)) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def list_events(self, session_id: str, since: int = 0, types: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """Events with ``seq > since`` (of ``types`` only, when given), oldest first: what a client that saw
        ``since`` missed."""
        query = sa.select(*EVENT_SHAPE).where(events.c.session_id == session_id)
        if types is None:
            return self._list(query.where(events.c.seq > since).order_by(events.c.seq))
        # Of some types: through the (session_id, type) index. On ``seq`` itself SQLite walks the
        # primary key over every event of the session to filter them (a turn reading its reports
        # cost more each turn); ``seq + 0`` is no key range, so it takes the type's index and sorts.
        ordered = events.c.seq + 0
        return self._list(query.where(events.c.type.in_(list(types)), ordered > since).order_by(ordered))

    # internals

    def _add_event(
        self,
        tx: Transaction,
        session_id: str,
        type: str,
        data: Any,  # noqa: A002 - as above
        turn_id: str | None,
        tool_call_id: str | None,
    ) -> dict[str, Any]:
        if self._row_locks and tx.first(LOCK_SESSION, {"session_id": session_id}) is None:
            raise no_session(session_id)
        seq = tx.scalar(NEXT_SEQ, {"session_id": session_id})
        row = {
            "session_id": session_id,
            "seq": seq,
            "type": type,
            "ts": self._now(),
            "turn_id": turn_id,
            "tool_call_id": tool_call_id,
            "data": data,
        }
        event = tx.one(ADD_EVENT, row)
        if self._row_locks:  # i.e. PostgreSQL; SQLite's watchers poll
            tx.execute(NOTIFY_EVENT, {"payload": f"{session_id}:{seq}"})
        return event

    def _add_events(self, tx: Transaction, call: dict[str, Any], events: Events) -> list[dict[str, Any]]:
        """Store ``events`` of tool call ``call`` (with its session and turn ids), in order."""
        return [
            self._add_event(tx, call["session_id"], type_, data, call["turn_id"], call["id"]) for type_, data in events
        ]

    def _get(self, table: sa.Table, row_id: str, what: str) -> dict[str, Any]:
        with self._read() as conn:
            row = conn.execute(sa.select(table).where(table.c.id == row_id)).first()
        if row is None:
            raise NiniError(ErrorCode.NOT_FOUND, f"no {what} {row_id}", {"id": row_id})
        return dict(row._mapping)

    def _list(self, query: sa.Select[Any]) -> list[dict[str, Any]]:
        with self._read() as conn:
            return all_rows(conn.execute(query))

    @contextmanager
    def _read(self) -> Iterator[Connection]:
        with db_errors(*self._naming), self.engine.connect() as conn:
            yield conn

    # For the tables other parts own (preferences): a read connection and a write transaction, with
    # the same error mapping (DB_ERROR) and write connection as the store's own statements.
    reading = _read

    @contextmanager
    def failures(self) -> Iterator[None]:
        """Database failures as ``NiniError`` naming this database, for code on a driver connection
        of its own (the events watcher's LISTEN, watch.py)."""
        with db_errors(*self._naming), driver_errors(self.engine.dialect):
            yield

    def writing(self) -> AbstractContextManager[Connection]:
        """A write transaction of its own (``GroupCommit.exclusive``), after the kept call ends."""
        self._pending.before_write(None)
        return self._commits.exclusive()

    def _run(self, session_id: str | None, work: Callable[[Transaction], T]) -> T:
        """A grouped write (``GroupCommit.run``) of session ``session_id``, after the call ends
        kept for the database: a session's events never come before the end it still owes."""
        self._pending.before_write(session_id)
        return self._commits.run(work)

    def _now(self) -> str:
        """ISO-8601 UTC, strictly increasing within this store.

        Tool calls and executions are listed by time and their ids are random, so two rows with
        the same microsecond (a coarse clock) could otherwise come back in either order.
        """
        with self._clock_lock:
            now = max(datetime.now(UTC), self._last_time + timedelta(microseconds=1))
            self._last_time = now
        return iso(now)

    def _writer_thread(self) -> ThreadPoolExecutor:
        with self._writer_lock:
            if self._writer is None:
                self._writer = ThreadPoolExecutor(max_workers=CALL_THREADS, thread_name_prefix="nini-history")
            return self._writer
