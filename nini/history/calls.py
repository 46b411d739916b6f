"""A tool call's record: its start, its end with what it produced and the events that close it,
the ends kept while the database is away, and the calls a dead process left ``running``.

Part of ``HistoryStore`` (store.py), which mixes it in; split off to keep each file readable.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from nini.errors import ErrorCode, NiniError
from nini.history.code_ref import referenced
from nini.history.driver import Transaction
from nini.history.engine import constraint_kind
from nini.history.pending import PendingEnd, PendingEnds
from nini.history.schema import executions, tool_calls
from nini.history.statements import (
    ADD_ARTIFACTS,
    ADD_EXECUTION,
    CALL_DEFAULTS,
    CALL_STATE,
    DATASET_FIELDS,
    END_CALL,
    MAX_STARTED,
    START_CALL,
    as_stored,
    upsert_dataset,
)
from nini.history.values import check_fields, ms_between, new_id, no_session, pid_alive, refused

if TYPE_CHECKING:
    from nini.history.commit import GroupCommit

T = TypeVar("T")
log = logging.getLogger("nini.history")

FINISHED_STATUSES = ("succeeded", "failed", "interrupted")
# What callers may set on the rows finish_tool_call writes; the store sets session_id and times.
EXECUTION_FIELDS = frozenset(executions.c.keys()) - {"session_id", "created_at"}
ARTIFACT_FIELDS = ("execution_id", "name", "path", "format", "kind", "size_bytes")
ORPHANED = "interrupted: the process running it ended before it could record the call's end"
# The failures of the database itself: a call's end they refuse is kept and written later (pending.py).
UNAVAILABLE = (ErrorCode.DB_ERROR, ErrorCode.NO_SPACE)
Events = Sequence[tuple[str, Any]]


class ToolCallRecords:
    """The tool-call methods of ``HistoryStore``; what they use of the store is declared here."""

    _host: str
    _started: dict[str, tuple[str, str]]  # (started_at, session_id) of the calls started here, not ended
    _pending: PendingEnds
    _commits: GroupCommit

    if TYPE_CHECKING:  # the store's own, defined in store.py

        def _now(self) -> str: ...
        def _run(self, session_id: str | None, work: Callable[[Transaction], T]) -> T: ...
        def _add_events(self, tx: Transaction, call: dict[str, Any], events: Events) -> list[dict[str, Any]]: ...
        def _get(self, table: sa.Table, row_id: str, what: str) -> dict[str, Any]: ...
        def _list(self, query: sa.Select[Any]) -> list[dict[str, Any]]: ...
        def _read(self) -> AbstractContextManager[Connection]: ...

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
        row = {
            "id": call_id or new_id("c"),
            "session_id": session_id,
            "turn_id": turn_id,
            "tool_name": tool_name,
            "arguments": arguments,
            "status": "running",
            "started_at": self._now(),
            "owner": f"{self._host}:{os.getpid()}",
        }

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
            raise NiniError(
                ErrorCode.INVALID_ARGUMENT,
                f"a tool call finishes as one of {', '.join(FINISHED_STATUSES)}, not {status!r}",
            )
        artifact_rows, dataset_rows = list(artifacts), list(datasets)
        check_fields("execution", [execution] if execution else [], EXECUTION_FIELDS)
        check_fields("artifact", artifact_rows, ARTIFACT_FIELDS)
        check_fields("dataset", dataset_rows, DATASET_FIELDS)

        def record(tx: Transaction) -> tuple[dict[str, Any], list[str | None]]:
            call = self._end_call(
                tx, call_id, dict(status=status, error_code=error_code, result=result, result_summary=result_summary)
            )
            session_id, now = call["session_id"], call["ended_at"]
            stored = None
            if execution:
                row = {
                    "tool_name": call["tool_name"],
                    "tool_call_id": call_id,
                    **execution,
                    "id": execution.get("id") or execution_id,
                    "session_id": session_id,
                    "created_at": now,
                }
                # the code once: the call's arguments hold it (code_ref.py)
                stored = {**tx.one(ADD_EXECUTION, referenced(row, call.get("arguments"))), "code": row.get("code")}
            source = stored["id"] if stored else None
            if artifact_rows:
                # every row gets every key: an executemany needs the same keys in each row
                tx.execute(
                    ADD_ARTIFACTS,
                    [
                        {
                            **{f: a.get(f) for f in ARTIFACT_FIELDS},
                            "execution_id": a.get("execution_id", source),
                            "session_id": session_id,
                            "created_at": now,
                        }
                        for a in artifact_rows
                    ],
                )
            superseded = [
                upsert_dataset(tx, session_id, {"source_execution_id": source, **dataset}, now)
                for dataset in dataset_rows
            ]
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
            ended = tx.first(
                END_CALL, {**values, "call_id": call_id, "ended_at": now, "duration_ms": ms_between(started, now)}
            )
            if ended is not None:
                return ended
            found = tx.first(CALL_STATE, {"call_id": call_id})  # another writer ended it meanwhile
        if found is None:
            raise NiniError(ErrorCode.NOT_FOUND, f"no tool call {call_id}", {"tool_call_id": call_id})
        raise NiniError(
            ErrorCode.CONFLICT,
            f"tool call {call_id} is already {found['status']}",
            {"tool_call_id": call_id, "status": found["status"]},
        )

    def _end_later(self, call_id: str, error: NiniError, events: Callable[[dict[str, Any]], Events] | None) -> None:
        """Keep the end of a call whose record the database could not take: ``failed`` with the
        error's code, at the time it ended, with its closing events. Written at once if the
        database takes this smaller write (a few bytes in pages the call's row has), else once it
        is back (pending.py): the call does not stay ``running``."""
        known = self._started.get(call_id)
        ended_at = self._now()
        values = {
            "status": "failed",
            "error_code": error.code.value,
            "result": {"error": error.to_dict()},
            "result_summary": f"not recorded: {error.message}",
            "ended_at": ended_at,
        }
        call: dict[str, Any] = {
            **values,
            "id": call_id,
            "session_id": known[1] if known else None,
            "execution": None,
            "duration_ms": ms_between(known[0], ended_at) if known else None,
            "unrecorded": error.to_dict(),
        }
        self._pending.keep(PendingEnd(call_id, call["session_id"], values, list(events(call)) if events else []))
        try:
            self._pending.write()
        except NiniError as again:
            log.warning(
                "tool call %s could not be ended either; its end is written once the database is back: %s",
                call_id,
                again.message,
            )

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
        dead = [call_id for call_id, owner in running if not pid_alive(owner[len(prefix) :])]
        if not dead:
            return
        with self._commits.exclusive() as conn:
            conn.execute(
                tool_calls.update()
                .where(tool_calls.c.id.in_(dead), tool_calls.c.status == "running")
                .values(status="interrupted", ended_at=self._now(), result_summary=ORPHANED)
            )
