"""HistoryStore: sessions, messages, tool calls, executions, artifacts, datasets and events.

A sync API that is safe to use from any thread (each call checks a connection out of the engine's
pool for one transaction). Async code goes through ``call``, which runs the method on the store's
one writer thread so the event loop never waits on the database. Every method returns plain,
JSON-ready dicts; every database failure is a ``NiniError``.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import os
import socket
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from nini.errors import ErrorCode, NiniError
from nini.history.code_ref import executions_query, referenced, resolved
from nini.history.engine import (
    constraint_kind,
    database_advice,
    database_name,
    db_errors,
    driver_errors,
    open_engine,
    unusable_file_errors,
)
from nini.history.commit import GroupCommit
from nini.history.driver import Transaction
from nini.history.pending import PendingEnd, PendingEnds
from nini.history.values import (
    all_rows,
    check_fields,
    iso,
    ms_between,
    new_id,
    no_session,
    one_row,
    pid_alive,
    refused,
    retrieve,
)
from nini.history.statements import (
    ADD_ARTIFACTS,
    ADD_EVENT,
    ADD_EXECUTION,
    ADD_MESSAGE,
    CALL_DEFAULTS,
    CALL_STATE,
    DATASET_FIELDS,
    END_CALL,
    EVENT_SHAPE,
    LOCK_SESSION,
    MAX_STARTED,
    NEXT_SEQ,
    NOTIFY_EVENT,
    START_CALL,
    as_stored,
    upsert_dataset,
)
from nini.history.schema import events, executions, messages, migrate, sessions, tool_calls

# finish_tool_call's parameters are named artifacts and datasets, so these tables get other names
from nini.history.schema import artifacts as artifact_table  # isort: skip
from nini.history.schema import datasets as dataset_table  # isort: skip

if TYPE_CHECKING:
    from nini.config import Settings

T = TypeVar("T")
log = logging.getLogger("nini.history")

FINISHED_STATUSES = ("succeeded", "failed", "interrupted")
EVENT_RETRIES = 5
CALL_THREADS = 8
# What callers may set on the rows finish_tool_call writes; the store sets session_id and times.
EXECUTION_FIELDS = frozenset(executions.c.keys()) - {"session_id", "created_at"}
ARTIFACT_FIELDS = ("execution_id", "name", "path", "format", "kind", "size_bytes")
# INSERT ... ON CONFLICT DO NOTHING, by dialect (the two backends nini supports).
INSERT_OR_NOTHING = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}
ORPHANED = "interrupted: the process running it ended before it could record the call's end"
# The failures of the database itself: a call's end they refuse is kept and written later (pending.py).
UNAVAILABLE = (ErrorCode.DB_ERROR, ErrorCode.NO_SPACE)
Events = Sequence[tuple[str, Any]]


class HistoryStore:
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
        self, session_id: str | None = None, title: str | None = None, metadata: dict[str, Any] | None = None,
        *, owner: str | None = None,
    ) -> dict[str, Any]:
        """A new session, owned by ``owner`` (a Jupyter identity; None where there is none: the CLI)."""
        now = self._now()
        row = {"id": session_id or new_id("s"), "title": title, "created_at": now, "updated_at": now,
               "metadata": metadata, "owner": owner}
        try:
            with self.writing() as conn:
                return one_row(conn.execute(sessions.insert().returning(*sessions.c), row))
        except IntegrityError as exc:
            raise refused(exc, f"session {row['id']}") from None

    def ensure_session(
        self, session_id: str, title: str | None = None, metadata: dict[str, Any] | None = None,
        *, owner: str | None = None,
    ) -> dict[str, Any]:
        """Session ``session_id``, created with ``title`` and ``metadata`` if there is none yet.

        Several processes naming one new session at once (``nini run-code --session X`` run in
        parallel) all get the one row: the insert that finds the row there does nothing, and the
        row is read in the same transaction. ``create_session`` is for a session that must be new.
        """
        now = self._now()
        row = {"id": session_id, "title": title, "created_at": now, "updated_at": now, "metadata": metadata,
               "owner": owner}
        insert = INSERT_OR_NOTHING[self.engine.dialect.name](sessions).on_conflict_do_nothing(index_elements=["id"])
        with self.writing() as conn:
            conn.execute(insert, row)
            return dict(conn.execute(sa.select(sessions).where(sessions.c.id == session_id)).one()._mapping)

    def get_session(self, session_id: str) -> dict[str, Any]:
        with self._read() as conn:
            row = conn.execute(sa.select(sessions).where(sessions.c.id == session_id)).first()
        if row is None:
            raise no_session(session_id)
        return dict(row._mapping)

    def list_sessions(self, limit: int = 100, *, owner: str | None = None, unowned: bool = False,
                      text: str | None = None) -> list[dict[str, Any]]:  # fmt: skip
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
            said = sa.select(messages.c.id).where(messages.c.session_id == sessions.c.id,
                                                  messages.c.role.in_(("user", "assistant")),
                                                  messages.c.content.ilike(pattern, escape="\\"))  # fmt: skip
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
        row = {"session_id": session_id, "turn_id": turn_id, "role": role, "content": content,
               "tool_call_id": tool_call_id, "metadata": metadata, "created_at": self._now()}
        try:
            return self._run(session_id, lambda tx: tx.one(ADD_MESSAGE, row))
        except IntegrityError as exc:
            raise refused(exc, "the message", missing=no_session(session_id)) from None

    def list_messages(self, session_id: str) -> list[dict[str, Any]]:
        """In the order they were added."""
        return self._list(sa.select(messages).where(messages.c.session_id == session_id).order_by(messages.c.id))

    # tool calls

    def start_tool_call(
        self,
        session_id: str,
        tool_name: str,
        arguments: Any,
        *,
        turn_id: str | None = None,
        call_id: str | None = None,
        events: Events = (),
    ) -> dict[str, Any]:
        """Record a call as ``running``, owned by this process (see ``_mark_orphans``), with
        ``events`` ((type, data) of this call, e.g. ``tool_call``) in the same transaction: a
        call is never recorded without them. The stored events are the result's ``events``."""
        row = {"id": call_id or new_id("c"), "session_id": session_id, "turn_id": turn_id, "tool_name": tool_name,
               "arguments": arguments, "status": "running", "started_at": self._now(),
               "owner": f"{self._host}:{os.getpid()}"}

        def record(tx: Transaction) -> list[dict[str, Any]]:
            tx.execute(START_CALL, row)
            return self._add_events(tx, row, events)

        try:
            stored = self._run(session_id, record)
        except IntegrityError as exc:
            raise refused(exc, f"tool call {row['id']}", missing=no_session(session_id)) from None
        if len(self._started) > MAX_STARTED:  # calls ended through another store: forget the oldest
            self._started.pop(next(iter(self._started)), None)
        self._started[row["id"]] = (row["started_at"], session_id)
        return {**CALL_DEFAULTS, **row, "arguments": as_stored(arguments), "events": stored}

    def finish_tool_call(
        self,
        call_id: str,
        *,
        status: str,
        error_code: str | None = None,
        result: Any = None,
        result_summary: str | None = None,
        execution: dict[str, Any] | None = None,
        artifacts: Iterable[dict[str, Any]] = (),
        datasets: Iterable[dict[str, Any]] = (),
        events: Callable[[dict[str, Any]], Events] | None = None,
    ) -> dict[str, Any]:
        """End a running call and record what it produced, all in one transaction.

        ``events(call)`` gives the events that close the call ((type, data), e.g. ``tool_result``),
        from the call as recorded (its status, ``duration_ms``, ``execution``); they are stored in
        the same transaction (the result's ``events``), so a call never ends without them. It may
        run more than once (see commit.py). When the database cannot take the end (DB_ERROR,
        NO_SPACE), that error is raised and the end is kept and written later as ``failed`` with
        that code (pending.py), with ``events`` of that record: its ``unrecorded`` is the error
        (None otherwise) and its ``execution`` None.

        ``execution`` is an executions row (``id`` defaults to "x" + 12 hex, ``tool_call_id`` to
        this call); ``artifacts`` and ``datasets`` rows default their execution id to it. A
        dataset saved again under the same name replaces the old row. Returns the call with
        ``execution`` (the stored row, or None) and ``superseded_files``: the files the replaced
        dataset rows named, which no record names any more (the caller may remove them). Either
        everything is recorded or nothing is.
        """
        if status not in FINISHED_STATUSES:
            raise NiniError(ErrorCode.INVALID_ARGUMENT,
                            f"a tool call finishes as one of {', '.join(FINISHED_STATUSES)}, not {status!r}")
        artifact_rows, dataset_rows = list(artifacts), list(datasets)
        check_fields("execution", [execution] if execution else [], EXECUTION_FIELDS)
        check_fields("artifact", artifact_rows, ARTIFACT_FIELDS)
        check_fields("dataset", dataset_rows, DATASET_FIELDS)

        def record(tx: Transaction) -> tuple[dict[str, Any], dict[str, Any] | None, list[str | None]]:
            call = self._end_call(tx, call_id, dict(status=status, error_code=error_code, result=result,
                                                    result_summary=result_summary))
            session_id, now = call["session_id"], call["ended_at"]
            stored = None
            if execution:
                row = {"tool_name": call["tool_name"], "tool_call_id": call_id, **execution,
                       "id": execution.get("id") or execution_id, "session_id": session_id, "created_at": now}
                # the code once: the call's arguments hold it (code_ref.py)
                stored = {**tx.one(ADD_EXECUTION, referenced(row, call.get("arguments"))), "code": row.get("code")}
            source = stored["id"] if stored else None
            if artifact_rows:
                # every row gets every key: an executemany needs the same keys in each row
                tx.execute(ADD_ARTIFACTS, [
                    {**{f: a.get(f) for f in ARTIFACT_FIELDS}, "execution_id": a.get("execution_id", source),
                     "session_id": session_id, "created_at": now}
                    for a in artifact_rows
                ])
            superseded = [upsert_dataset(tx, session_id, {"source_execution_id": source, **dataset}, now)
                          for dataset in dataset_rows]
            closing = events({**call, "execution": stored, "unrecorded": None}) if events else ()
            return {**call, "execution": stored, "events": self._add_events(tx, call, closing)}, superseded

        execution_id = new_id("x")  # chosen once: the write may run twice (see commit.py)
        started = self._started.get(call_id)
        try:
            call, superseded = self._run(started[1] if started else None, record)
            self._started.pop(call_id, None)
        except IntegrityError as exc:
            raise refused(exc, f"a record of tool call {call_id}") from None
        except NiniError as exc:
            if exc.code in UNAVAILABLE:
                self._end_later(call_id, exc, events)
            raise
        kept = {dataset.get("path") for dataset in dataset_rows}
        return {**call, "superseded_files": [p for p in superseded if p and p not in kept]}

    def get_tool_call(self, call_id: str) -> dict[str, Any]:
        return self._get(tool_calls, call_id, "tool call")

    def list_tool_calls(self, session_id: str, turn_id: str | None = None) -> list[dict[str, Any]]:
        """In the order they started; only those of turn ``turn_id`` if given."""
        query = sa.select(tool_calls).where(tool_calls.c.session_id == session_id)
        if turn_id is not None:
            query = query.where(tool_calls.c.turn_id == turn_id)
        return self._list(query.order_by(tool_calls.c.started_at, tool_calls.c.id))

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
        query = sa.select(dataset_table).where(dataset_table.c.session_id == session_id,
                                                dataset_table.c.name == name)
        with self._read() as conn:
            row = conn.execute(query).first()
        if row is None:
            raise NiniError(ErrorCode.NOT_FOUND, f"session {session_id} has no dataset {name!r}",
                            {"session_id": session_id, "name": name})
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
                return self._run(session_id,
                                 lambda tx: self._add_event(tx, session_id, type, data, turn_id, tool_call_id))
            except IntegrityError as exc:
                if constraint_kind(exc) != "unique" or attempt == EVENT_RETRIES - 1:
                    raise refused(exc, "the event", missing=no_session(session_id)) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def list_events(self, session_id: str, since: int = 0, types: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """Events with ``seq > since`` (of ``types`` only, when given), oldest first: what a client that saw ``since`` missed."""
        query = sa.select(*EVENT_SHAPE).where(events.c.session_id == session_id, events.c.seq > since)
        if types is not None:
            query = query.where(events.c.type.in_(list(types)))
        return self._list(query.order_by(events.c.seq))

    # internals

    def _add_event(self, tx: Transaction, session_id: str, type: str, data: Any,  # noqa: A002 - as above
                   turn_id: str | None, tool_call_id: str | None) -> dict[str, Any]:
        if self._row_locks and tx.first(LOCK_SESSION, {"session_id": session_id}) is None:
            raise no_session(session_id)
        seq = tx.scalar(NEXT_SEQ, {"session_id": session_id})
        row = {"session_id": session_id, "seq": seq, "type": type, "ts": self._now(), "turn_id": turn_id,
               "tool_call_id": tool_call_id, "data": data}
        event = tx.one(ADD_EVENT, row)
        if self._row_locks:  # i.e. PostgreSQL; SQLite's watchers poll
            tx.execute(NOTIFY_EVENT, {"payload": f"{session_id}:{seq}"})
        return event

    def _add_events(self, tx: Transaction, call: dict[str, Any], events: Events) -> list[dict[str, Any]]:
        """Store ``events`` of tool call ``call`` (with its session and turn ids), in order."""
        return [self._add_event(tx, call["session_id"], type_, data, call["turn_id"], call["id"])
                for type_, data in events]  # fmt: skip

    def _end_call(self, tx: Transaction, call_id: str, values: dict[str, Any]) -> dict[str, Any]:
        """End a running call with ``values`` (at ``values["ended_at"]`` if given, else now): one
        UPDATE when this store started it (it knows the start time), else a read of the start
        time first. NOT_FOUND or CONFLICT when it is not running."""
        found = None
        started = (self._started.get(call_id) or (None,))[0]
        if started is None:
            found = tx.first(CALL_STATE, {"call_id": call_id})
            started = found["started_at"] if found is not None and found["status"] == "running" else None
        if started is not None:
            now = values.get("ended_at") or self._now()
            ended = tx.first(END_CALL, {**values, "call_id": call_id, "ended_at": now,
                                        "duration_ms": ms_between(started, now)})  # fmt: skip
            if ended is not None:
                return ended
            found = tx.first(CALL_STATE, {"call_id": call_id})  # another writer ended it meanwhile
        if found is None:
            raise NiniError(ErrorCode.NOT_FOUND, f"no tool call {call_id}", {"tool_call_id": call_id})
        raise NiniError(ErrorCode.CONFLICT, f"tool call {call_id} is already {found['status']}",
                        {"tool_call_id": call_id, "status": found["status"]})

    def _end_later(self, call_id: str, error: NiniError, events: Callable[[dict[str, Any]], Events] | None) -> None:
        """Keep the end of a call whose record the database could not take: ``failed`` with the
        error's code, at the time it ended, with its closing events. Written at once if the
        database takes this smaller write (a few bytes in pages the call's row has), else once it
        is back (pending.py): the call does not stay ``running``."""
        known = self._started.get(call_id)
        ended_at = self._now()
        values = {"status": "failed", "error_code": error.code.value, "result": {"error": error.to_dict()},
                  "result_summary": f"not recorded: {error.message}", "ended_at": ended_at}
        call = {**values, "id": call_id, "session_id": known[1] if known else None, "execution": None,
                "duration_ms": ms_between(known[0], ended_at) if known else None, "unrecorded": error.to_dict()}
        self._pending.keep(PendingEnd(call_id, call["session_id"], values, list(events(call)) if events else []))
        try:
            self._pending.write()
        except NiniError as again:
            log.warning("tool call %s could not be ended either; its end is written once the database is back: %s",
                        call_id, again.message)

    def _write_pending(self, end: PendingEnd) -> None:
        """Write a kept end and its events in one transaction; an end that is no longer needed (the
        call was ended meanwhile, or is gone) is dropped. Database failures are raised."""
        def record(tx: Transaction) -> None:
            self._add_events(tx, self._end_call(tx, end.call_id, end.values), end.events)

        try:
            self._commits.run(record)
        except NiniError as exc:
            if exc.code in UNAVAILABLE:
                raise
            log.info("the kept end of tool call %s is not written: %s", end.call_id, exc.message)
        except IntegrityError as exc:
            log.warning("the kept end of tool call %s cannot be written (%s)", end.call_id, constraint_kind(exc))
        self._started.pop(end.call_id, None)

    def _mark_orphans(self) -> None:
        """Calls left ``running`` by a dead process on this host become ``interrupted``.

        ``result_summary`` says why (``ORPHANED``). A call whose owner is alive (a Jupyter server
        while the CLI opens the same file) or on another host (a shared PostgreSQL) is left alone:
        we cannot tell it has died.
        """
        prefix = f"{self._host}:"
        query = sa.select(tool_calls.c.id, tool_calls.c.owner).where(
            tool_calls.c.status == "running", tool_calls.c.owner.startswith(prefix, autoescape=True)
        )
        with self._read() as conn:
            running = conn.execute(query).all()
        dead = [call_id for call_id, owner in running if not pid_alive(owner[len(prefix):])]
        if not dead:
            return
        with self._commits.exclusive() as conn:
            conn.execute(
                tool_calls.update()
                .where(tool_calls.c.id.in_(dead), tool_calls.c.status == "running")
                .values(status="interrupted", ended_at=self._now(), result_summary=ORPHANED)
            )

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
