"""EventBus: events are stored first, then delivered to live subscribers, in ``seq`` order.

A subscriber that saw up to ``seq = n`` resumes with ``subscribe(session_id, since=n)``: it gets
the stored events after ``n``, then live ones, each exactly once. Live delivery covers events
published through this bus (this process); events another process writes to the same database
reach a subscriber only through that replay, i.e. when it resubscribes.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from typing import Any

from nini.history.store import HistoryStore

_CLOSED = object()  # queued to wake a waiting subscriber when it is closed


class EventBus:
    """Publish events of a session and stream them to any number of subscribers."""

    def __init__(self, store: HistoryStore) -> None:
        self.store = store
        self._subscribers: dict[str, set[Subscription]] = {}
        self._subscribers_lock = threading.Lock()
        # Held from storing an event until it is queued to every subscriber, so subscribers
        # receive events in seq order even when several threads publish at once. It costs no
        # parallelism on SQLite, which admits one writer at a time anyway.
        self._publish_lock = threading.Lock()

    def publish(
        self,
        session_id: str,
        type: str,  # noqa: A002 - the event contract's field name
        data: Any,
        *,
        turn_id: str | None = None,
        tool_call_id: str | None = None,
    ) -> dict[str, Any]:
        """Store the event, then queue it to each subscriber of the session; returns the event.

        Callable from any thread. It blocks on the database (use ``store.call`` from async code),
        never on subscribers: each one's queue is unbounded, so a slow reader costs memory,
        not publishing speed.
        """
        with self._publish_lock:
            event = self.store.append_event(session_id, type, data, turn_id=turn_id, tool_call_id=tool_call_id)
            with self._subscribers_lock:
                subscribers = list(self._subscribers.get(session_id, ()))
            for subscriber in subscribers:
                subscriber._deliver(event)
        return event

    def subscribe(self, session_id: str, since: int | None = None) -> Subscription:
        """Events of ``session_id`` from now on; with ``since``, the stored ones after it first.

        Call it from the event loop that will consume the events. Use it as ``async with``
        (or call ``close()``), or the subscription keeps collecting events.
        """
        subscription = Subscription(self, session_id, since)
        with self._subscribers_lock:
            self._subscribers.setdefault(session_id, set()).add(subscription)
        return subscription

    def _unsubscribe(self, subscription: Subscription) -> None:
        with self._subscribers_lock:
            subscribers = self._subscribers.get(subscription.session_id)
            if subscribers is not None:
                subscribers.discard(subscription)
                if not subscribers:
                    del self._subscribers[subscription.session_id]


class Subscription:
    """An async iterator of one session's events; ends when closed."""

    def __init__(self, bus: EventBus, session_id: str, since: int | None) -> None:
        self.session_id = session_id
        self._bus = bus
        self._last_seq = since or 0
        self._replay: deque[dict[str, Any]] | None = None if since is not None else deque()
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._closed = False

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> dict[str, Any]:
        if self._replay is None:
            # Read only after registering (in subscribe): an event stored before this read is in
            # the replay, one stored after it is in the queue; seq filtering drops the overlap.
            store = self._bus.store
            self._replay = deque(await store.call(store.list_events, self.session_id, self._last_seq))
        while not self._closed:
            event = self._replay.popleft() if self._replay else await self._queue.get()
            if event is not _CLOSED and event["seq"] > self._last_seq:
                self._last_seq = event["seq"]
                return event
        raise StopAsyncIteration

    def next_ready(self) -> dict[str, Any] | None:
        """The next event if it is already here (replayed or queued), else None; never waits.
        Only after the first ``__anext__`` (which reads the replay)."""
        while not self._closed and (self._replay or not self._queue.empty()):
            event = self._replay.popleft() if self._replay else self._queue.get_nowait()
            if event is not _CLOSED and event["seq"] > self._last_seq:
                self._last_seq = event["seq"]
                return event
        return None

    @property
    def ready(self) -> bool:
        """Whether the next event is already here (replayed or queued): a consumer that writes
        events to a socket can then write on and flush once, at the end of the burst."""
        return bool(self._replay) or not self._queue.empty()

    def close(self) -> None:
        """Stop receiving: the iteration ends, even if events are still queued.

        Safe from any thread and more than once.
        """
        if self._closed:
            return
        self._closed = True
        self._bus._unsubscribe(self)
        self._deliver(_CLOSED)

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()

    def _deliver(self, event: Any) -> None:
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, event)
        except RuntimeError:  # the consumer's loop is closed: nobody will read this any more
            self._bus._unsubscribe(self)
