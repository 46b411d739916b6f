"""Group commit: the writes that threads hand in while a commit is under way go into the next
transaction together, so many writers pay for one commit (and on PostgreSQL one WAL flush).

A write is a function of a ``driver.Transaction`` (its statements, all in the one transaction).
The first thread to find no commit running becomes the leader: it takes every queued write, runs
them in one transaction on the store's own write connection (the driver's, see driver.py),
commits, and hands each writer its result. The
writers that queued meanwhile wait on the leader lock; when it is theirs, their write is usually
done already, else one of them leads the next group. A single writer never waits on anyone: its
write is a group of one, run by its own thread, with no hand-over.

Durability is unchanged: ``run`` returns only after the transaction holding the write committed.
Isolation is unchanged too: when a write of a group fails, the group is rolled back and each of its
writes is run again in a transaction of its own, so a failing write (a unique key taken, a full
disk) fails alone and the others succeed as if they had never shared a commit. A write must
therefore only touch the database: it may run twice, and only the last run counts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar, cast

from sqlalchemy import event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection, Engine

from nini.history.driver import Statements, Transaction
from nini.history.engine import WRITE, begin_sql, db_errors, driver_errors

T = TypeVar("T")
MAX_GROUP = 256
"""Writes in one transaction at most: a bound on how long the first of them waits for its commit."""


class _Write(Generic[T]):
    __slots__ = ("work", "done", "result", "error")

    def __init__(self, work: Callable[[Transaction], T]) -> None:
        self.work = work
        self.done = False
        self.result: T | None = None
        self.error: BaseException | None = None

    def outcome(self) -> T:
        if self.error is not None:
            raise self.error
        return cast(T, self.result)  # set by the leader's run of work (None only if T allows it)


class GroupCommit:
    """The store's writes: ``run`` (grouped, on the driver's connection) and ``exclusive`` (a
    transaction of its own, through SQLAlchemy). Each keeps its connection open for writing, so a
    write does not check one out of the pool and reset it afterwards; both take the leader lock,
    so this process never waits on its own database lock."""

    def __init__(self, engine: Engine, *, database: str | None = None, advice: str | None = None) -> None:
        """``database`` and ``advice`` name the database and say what to do in DB_ERROR messages
        (see ``engine.db_errors``)."""
        self._engine = engine
        self._naming = (database, advice)
        self._writes = engine.execution_options(**{WRITE: True})  # BEGIN IMMEDIATE on SQLite
        self._statements = Statements(engine.dialect)
        self._begin = begin_sql(engine.dialect.name, write=True)
        self._raw: Any = None  # the pool's DBAPI connection that ``run`` writes on
        self._queue: list[_Write[Any]] = []
        self._queue_lock = threading.Lock()
        self._leader = threading.Lock()
        self._conn: Connection | None = None
        self._stale = self._stale_raw = False
        self.commits = 0  # transactions of grouped writes committed, and the writes they held
        self.writes = 0
        # engine.dispose() (closing, or a test giving new connections new settings) retires ours too
        event.listen(engine, "engine_disposed", self._retire)

    def run(self, work: Callable[[Transaction], T]) -> T:
        """``work(tx)`` in a transaction, possibly shared with other threads' writes; its result
        once that transaction committed, or its own exception (``NiniError`` for database failures)."""
        write: _Write[T] = _Write(work)
        with self._queue_lock:
            self._queue.append(write)
        with self._leader:
            while not write.done:
                with self._queue_lock:
                    group, self._queue = self._queue[:MAX_GROUP], self._queue[MAX_GROUP:]
                self._commit(group)
        return write.outcome()

    @contextmanager
    def exclusive(self) -> Iterator[Connection]:
        """A transaction of its own on the write connection, for writes that read what they wrote
        or are not safe to run twice (migrations of other tables, preferences)."""
        with self._leader, db_errors(*self._naming):
            with self._connection().begin() as transaction:
                yield transaction.connection

    def queued(self) -> int:
        """Writes handed in and not yet taken into a transaction."""
        with self._queue_lock:
            return len(self._queue)

    def close(self) -> None:
        with self._leader:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            self._drop_raw()

    def _commit(self, group: list[_Write[Any]]) -> None:
        try:
            with db_errors(*self._naming):
                results = self._transaction(group)
        except Exception as exc:  # noqa: BLE001 - handed to the writer it belongs to
            if len(group) == 1:
                group[0].error, group[0].done = exc, True
                return
            for write in group:  # each alone: only the failing one fails
                self._commit([write])
            return
        except BaseException as exc:  # an interrupt: nothing of the group is known to be written
            for write in group:
                write.error, write.done = exc, True
            raise
        self.commits, self.writes = self.commits + 1, self.writes + len(group)
        for write, result in zip(group, results, strict=True):
            write.result, write.done = result, True

    def _transaction(self, group: list[_Write[Any]]) -> list[Any]:
        """Run ``group`` in one transaction on the driver's connection and commit; roll back on failure.

        Every failure of the driver (connecting included: the pool's checkout is not wrapped by
        SQLAlchemy) is raised as SQLAlchemy's, for ``db_errors``. A broken connection is dropped;
        when it was one kept from before (the server restarted while it was idle) and broke before
        COMMIT, nothing of the group was committed and the group runs once more on a new one.
        """
        while True:
            reused, committing = self._raw is not None and not self._stale_raw, False
            try:
                with driver_errors(self._engine.dialect):
                    raw = self._raw_connection()
                    if self._begin is not None:
                        raw.driver_connection.execute(self._begin)
                    results = [write.work(Transaction(self._statements, raw.driver_connection)) for write in group]
                    committing = True
                    raw.commit()
                    return results
            except BaseException as exc:
                broken = self._roll_back(exc)
                if not (broken and reused and not committing and isinstance(exc, sa_exc.DBAPIError)):
                    raise

    def _roll_back(self, error: BaseException) -> bool:
        """Roll back the failed transaction; drop the connection (and say so) when it is broken."""
        if self._raw is None:
            return False
        orig = getattr(error, "orig", None)
        try:
            if orig is None or not self._engine.dialect.is_disconnect(orig, self._raw.driver_connection, None):
                self._raw.rollback()
                return False
        except Exception:  # noqa: BLE001 - the connection is broken
            pass
        self._drop_raw(invalidate=True)  # the next write gets a new one
        self._stale = True  # and so does the next exclusive one: the server went away for both
        return True

    def _raw_connection(self) -> Any:
        if self._raw is not None and self._stale_raw:
            self._drop_raw()
        if self._raw is None:
            self._stale_raw = False
            self._raw = self._engine.raw_connection()
        return self._raw

    def _drop_raw(self, invalidate: bool = False) -> None:
        if self._raw is not None:
            if invalidate:
                self._raw.invalidate()
            else:
                self._raw.close()
            self._raw = None

    def _connection(self) -> Connection:
        """The write connection; a new one after a dispose or a failure that broke it (the server went away)."""
        if self._conn is not None and (self._stale or self._conn.invalidated or self._conn.closed):
            self._conn.close()
            self._conn = None
        if self._conn is None:
            self._stale = False
            self._conn = self._writes.connect()
        return self._conn

    def _retire(self, _engine: Engine) -> None:
        self._stale = self._stale_raw = True
