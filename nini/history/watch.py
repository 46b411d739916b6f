"""EventWatcher: tells an EventBus when another process has stored events of a session it streams.

One thread per bus, running only while the bus has subscribers. On PostgreSQL it holds a
``LISTEN nini_events`` connection: ``append_event`` notifies ``<session_id>:<seq>`` in the event's
transaction, so the notice arrives once the event is committed and readable. On SQLite, which has
no notifications, it polls the watched sessions' last seq every ``POLL_S`` seconds (one indexed
query for all of them).

Either way it reports only "session S has events up to seq": each subscription reads the events
it lacks from the table itself, which keeps ordering and exactly-once in one place (events.py) and
makes a missed or repeated notice harmless.
"""

from __future__ import annotations

import logging
import select
import socket
import threading
from collections.abc import Callable, Iterable
from typing import Any

import sqlalchemy as sa

from nini.history.schema import events, sessions
from nini.history.statements import EVENTS_CHANNEL
from nini.history.store import HistoryStore

log = logging.getLogger("nini.history")

POLL_S = 0.2
"""SQLite: seconds between two reads of the watched sessions' last seq; an event another process
stores reaches a subscriber this late at most (plus the read). Only while someone watches."""
RETRY_S = 1.0
"""Seconds before watching again after the database failed (a restart, a dropped connection)."""
IDLE_S = 5.0
"""PostgreSQL: how long the listener waits for a notice before checking for subscribers whose
event loop has ended (they would otherwise keep it running)."""

# One seek of the primary key per session: a GROUP BY over the sessions' events read every event of
# them, each poll (30 ms for 20 sessions of 6,000 events, growing with them; this is 0.5 ms).
_LAST_SEQ = sa.select(sa.func.max(events.c.seq)).where(events.c.session_id == sessions.c.id).scalar_subquery()
HEADS = sa.select(sessions.c.id, _LAST_SEQ).where(sessions.c.id.in_(sa.bindparam("session_ids", expanding=True)))


def stored_heads(store: HistoryStore, session_ids: Iterable[str]) -> dict[str, int]:
    """The last stored seq of each of ``session_ids`` that has events."""
    session_ids = list(session_ids)
    if not session_ids:
        return {}
    with store.reading() as conn:
        found = conn.execute(HEADS, {"session_ids": session_ids})
        return {session_id: seq for session_id, seq in found if seq is not None}


class EventWatcher:
    """Calls ``stored(session_id, seq)`` when session ``session_id`` has events up to ``seq``,
    for the sessions ``watched()`` names, until ``stop``.

    ``stored`` may be called for events this process stored, or more than once for one seq.
    """

    def __init__(
        self, store: HistoryStore, watched: Callable[[], list[str]], stored: Callable[[str, int], None]
    ) -> None:
        self._store = store
        self._watched = watched
        self._stored = stored
        self._stopping = threading.Event()
        # wakes a listener blocked in select() at once when stopped
        self._wake_in, self._wake_out = socket.socketpair()
        self._thread = threading.Thread(target=self._run, name="nini-events-watcher", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, *, wait: bool = False) -> None:
        """Stop watching; with ``wait``, return once the thread (and its connection) is gone."""
        self._stopping.set()
        try:
            self._wake_out.send(b"\0")
        except OSError:  # the thread has ended and closed it
            pass
        if wait and self._thread.ident is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        tail = self._listen if self._store.engine.dialect.name == "postgresql" else self._poll
        try:
            while not self._stopping.is_set():
                try:
                    with self._store.failures():  # DB_ERROR naming the database, as everywhere
                        tail()
                except Exception as exc:  # noqa: BLE001 - the database went away: watch again later
                    log.warning(
                        "watching for other processes' events failed, retrying in %s s: %s",
                        RETRY_S,
                        getattr(exc, "message", exc),
                    )
                    self._stopping.wait(RETRY_S)
        finally:
            self._wake_in.close()
            self._wake_out.close()

    def _poll(self) -> None:
        while not self._stopping.is_set():
            self._catch_up()
            self._stopping.wait(POLL_S)

    def _listen(self) -> None:
        conn = _listening_connection(self._store)
        try:
            # what was stored before LISTEN took effect (or while the connection was down)
            self._catch_up()
            while not self._stopping.is_set():
                readable, _, _ = select.select([conn.fileno(), self._wake_in], [], [], IDLE_S)
                if not readable:
                    self._watched()  # drops subscribers whose loop has ended; may stop us
                    continue
                if self._wake_in in readable:
                    continue  # stopping
                for notice in conn.notifies(timeout=0):
                    session_id, _, seq = notice.payload.rpartition(":")
                    if seq.isdigit():
                        self._stored(session_id, int(seq))
        finally:
            conn.close()

    def _catch_up(self) -> None:
        for session_id, seq in stored_heads(self._store, self._watched()).items():
            self._stored(session_id, seq)


def _listening_connection(store: HistoryStore) -> Any:
    """A psycopg connection of the store's engine (its URL and options), taken out of the pool for
    good, in autocommit (a LISTEN takes effect at commit) and listening on ``EVENTS_CHANNEL``."""
    pooled = store.engine.raw_connection()
    conn: Any = pooled.driver_connection  # the psycopg connection (the pool's is typed loosely)
    pooled.detach()
    try:
        conn.rollback()  # the pool's ping may have opened a transaction
        conn.autocommit = True
        conn.execute(f"LISTEN {EVENTS_CHANNEL}")
    except BaseException:
        conn.close()
        raise
    return conn
