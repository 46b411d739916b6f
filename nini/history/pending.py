"""Call ends the database could not take, kept in memory and written once it is back.

When the end of a tool call cannot be written (the server is down, the disk is full), the call
would stay ``running`` for as long as its process lives: no other process ends it, since its owner
is alive. The store keeps such an end here instead (failed, DB_ERROR or NO_SPACE, with the time
the call really ended and its closing events) and writes the kept ends oldest first, each with its
events in one transaction: from a background thread that retries with backoff, and before each new
write of the store, so that a session's later events never come before the end it still owes.

Kept ends live in memory only: if the process dies first, the next store to open the database
marks the calls ``interrupted`` (their owner is dead, see ``HistoryStore._mark_orphans``).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, NamedTuple

from nini.errors import NiniError

log = logging.getLogger("nini.history")

MAX_PENDING = 10_000
"""Kept ends at most; past it the oldest is dropped (its call is marked ``interrupted`` by the next
process to open the database after this one ends)."""
FIRST_RETRY_S = 0.2
LAST_RETRY_S = 5.0
"""The background retry waits FIRST_RETRY_S, doubling up to LAST_RETRY_S between attempts."""


class PendingEnd(NamedTuple):
    call_id: str
    session_id: str | None  # None when the store did not start the call (it does not know it)
    values: dict[str, Any]  # the tool_calls columns to set: status, error_code, result, ended_at, ...
    events: list[tuple[str, Any]]  # (type, data) stored with the end


class PendingEnds:
    """The kept ends of one store, and the thread that retries them."""

    def __init__(self, write: Callable[[PendingEnd], None]) -> None:
        """``write(end)`` records one end and its events in one transaction, or raises the
        database's ``NiniError`` (the end stays kept)."""
        self._write = write
        self._ends: deque[PendingEnd] = deque()
        self._ends_lock = threading.Lock()  # guards _ends and _thread; never held while writing
        self._writing = threading.Lock()  # one writer of kept ends at a time, so they go in order
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def __len__(self) -> int:
        return len(self._ends)

    def keep(self, end: PendingEnd) -> None:
        """Keep ``end`` to write later; the retry thread runs until every kept end is written."""
        with self._ends_lock:
            if len(self._ends) >= MAX_PENDING:
                dropped = self._ends.popleft()
                log.warning(
                    "more than %d call ends wait for the database: the end of %s is dropped "
                    "(the call is marked interrupted after this process ends)",
                    MAX_PENDING,
                    dropped.call_id,
                )
            self._ends.append(end)
            if self._thread is None and not self._stopping.is_set():
                self._thread = threading.Thread(target=self._retry, name="nini-pending-ends", daemon=True)
                self._thread.start()

    def write(self) -> None:
        """Write the kept ends, oldest first; the database's ``NiniError`` at the first that fails
        (it and the ones after it stay kept)."""
        if not self._ends:
            return
        with self._writing:
            while True:
                with self._ends_lock:
                    if not self._ends:
                        return
                    end = self._ends[0]
                self._write(end)
                with self._ends_lock:
                    if self._ends and self._ends[0] is end:  # not dropped past the cap meanwhile
                        self._ends.popleft()

    def before_write(self, session_id: str | None) -> None:
        """Called before each new write: try the kept ends first. When they cannot be written,
        a write of a session that still owes an end fails too (its events would come first);
        others go on."""
        if not self._ends:
            return
        try:
            self.write()
        except NiniError:
            if session_id is not None and self._owes(session_id):
                raise

    def close(self) -> None:
        """Stop the retry thread, then try once more; what is still kept is logged and dropped."""
        self._stopping.set()
        with self._ends_lock:
            thread = self._thread
        if thread is not None:
            thread.join()
        try:
            self.write()
        except NiniError as exc:
            log.warning(
                "%d call ends could not be written (%s); the next process to open the database "
                "marks those calls interrupted",
                len(self._ends),
                exc.message,
            )

    def _owes(self, session_id: str) -> bool:
        with self._ends_lock:
            return any(end.session_id == session_id for end in self._ends)

    def _retry(self) -> None:
        delay = FIRST_RETRY_S
        while not self._stopping.wait(delay):
            try:
                self.write()
            except NiniError as exc:
                delay = min(delay * 2, LAST_RETRY_S)
                log.info(
                    "%d call ends wait for the database (%s); retrying in %s s", len(self._ends), exc.message, delay
                )
                continue
            except Exception:  # noqa: BLE001 - a bug must not end the retries silently
                log.exception("writing the kept call ends failed")
                delay = LAST_RETRY_S
                continue
            with self._ends_lock:
                if not self._ends:
                    self._thread = None
                    return
            delay = FIRST_RETRY_S
