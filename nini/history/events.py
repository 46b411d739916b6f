"""EventBus: events are stored first, then delivered to live subscribers, in ``seq`` order.

A subscriber that saw up to ``seq = n`` resumes with ``subscribe(session_id, since=n)``: it gets
the stored events after ``n``, then live ones, each exactly once. Live ones are those published
through this bus (handed over directly) and those other processes store in the same database (the
CLI, a second server, a background job): while a session has a subscriber, an ``EventWatcher``
(watch.py) learns of those through PostgreSQL's NOTIFY or a poll of the SQLite table, and the
subscription reads them from the table.

Order and exactly-once do not depend on where an event comes from: a subscription yields only the
seq after the last one it yielded. When the next event it holds is further on (another process
stored the ones between, and the watcher has not said so yet), it reads the missing ones from the
table first; they are there, because an event's seq is taken in the transaction that stores it,
under the session's write lock, so a stored seq means every lower one is committed.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from typing import Any, NamedTuple

from nini.history.store import HistoryStore
from nini.history.watch import EventWatcher, stored_heads

_CLOSED = object()  # queued to wake a waiting subscriber when it is closed


class _Stored(NamedTuple):
    """Queued by the watcher: the table holds the session's events up to ``seq``."""

    seq: int


class EventBus:
    """Publish events of a session and stream them to any number of subscribers."""

    def __init__(self, store: HistoryStore) -> None:
        self.store = store
        self._subscribers: dict[str, set[Subscription]] = {}
        # The last seq known stored, per session with subscribers: the watcher tells subscribers
        # only of seqs beyond it, so events published here are not announced a second time.
        self._heads: dict[str, int] = {}
        self._subscribers_lock = threading.Lock()
        # Held from storing an event until it is queued to every subscriber, so subscribers
        # receive events in seq order even when several threads publish at once. It costs no
        # parallelism on SQLite, which admits one writer at a time anyway.
        self._publish_lock = threading.Lock()
        self._watcher: EventWatcher | None = None
        self._closed = False

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
            self._queue_stored([event])
        return event

    def announce(self, stored: list[dict[str, Any]]) -> None:
        """Queue events already stored (with the write they belong to: a tool call's start or end,
        see ``HistoryStore.finish_tool_call``) to the session's subscribers, as ``publish`` does
        after storing. Queued outside the store's transaction, they may reach a subscriber after a
        later seq: the subscription then reads the ones between from the table (see Subscription),
        so each is still yielded once, in order."""
        with self._publish_lock:
            self._queue_stored(stored)

    def _queue_stored(self, stored: list[dict[str, Any]]) -> None:
        for event in stored:
            session_id = event["session_id"]
            with self._subscribers_lock:
                subscribers = list(self._subscribers.get(session_id, ()))
                if session_id in self._heads:
                    self._heads[session_id] = max(self._heads[session_id], event["seq"])
            for subscriber in subscribers:
                subscriber._deliver(event)

    def subscribe(self, session_id: str, since: int | None = None) -> Subscription:
        """Events of ``session_id`` from now on; with ``since``, the stored ones after it first.

        "Now", without ``since``: every event published through this bus after this call, and
        every event stored after the session's last seq is read, at the loop's next turn (an
        event another process stores in between is left out, as if stored just before).

        Call it from the event loop that will consume the events. Use it as ``async with``
        (or call ``close()``), or the subscription keeps collecting events.
        """
        subscription = Subscription(self, session_id, since)
        with self._subscribers_lock:
            self._subscribers.setdefault(session_id, set()).add(subscription)
            self._heads.setdefault(session_id, 0)
            if self._watcher is None and not self._closed:
                self._watcher = EventWatcher(self.store, self._watched, self._stored)
                self._watcher.start()
        return subscription

    def close(self) -> None:
        """Stop watching for other processes' events, for good; returns once the watcher's thread
        has ended. Subscriptions still get what this bus publishes."""
        with self._subscribers_lock:
            self._closed = True
            watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.stop(wait=True)

    def _unsubscribe(self, subscription: Subscription) -> None:
        watcher = None
        with self._subscribers_lock:
            subscribers = self._subscribers.get(subscription.session_id)
            if subscribers is not None:
                subscribers.discard(subscription)
                if not subscribers:
                    del self._subscribers[subscription.session_id]
                    del self._heads[subscription.session_id]
            if not self._subscribers:  # nobody watches: no polling, no listening connection
                watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.stop()

    def _last_seq(self, session_id: str) -> int:
        """The session's last stored seq, read while no publish is between storing an event and
        queueing it: every event published here up to that seq is queued to its subscribers before
        the read's result reaches them (both go through call_soon_threadsafe, in order)."""
        with self._publish_lock:
            return stored_heads(self.store, [session_id]).get(session_id, 0)

    def _watched(self) -> list[str]:
        """The sessions with subscribers, for the watcher; first drops the subscribers whose event
        loop has ended without closing them (nobody can read their events any more)."""
        with self._subscribers_lock:
            orphans = [s for subscribers in self._subscribers.values() for s in subscribers if s._loop.is_closed()]
        for orphan in orphans:
            self._unsubscribe(orphan)
        with self._subscribers_lock:
            return list(self._heads)

    def _stored(self, session_id: str, seq: int) -> None:
        """From the watcher: the session has events up to ``seq``; tell its subscribers if that is news."""
        with self._subscribers_lock:
            if seq <= self._heads.get(session_id, seq):  # known already, or nobody watches the session
                return
            self._heads[session_id] = seq
            subscribers = list(self._subscribers.get(session_id, ()))
        for subscriber in subscribers:
            subscriber._deliver(_Stored(seq))


class Subscription:
    """An async iterator of one session's events; ends when closed."""

    def __init__(self, bus: EventBus, session_id: str, since: int | None) -> None:
        self.session_id = session_id
        self._bus = bus
        self._started = False
        self._last_seq = since or 0  # the last seq yielded (or the start)
        self._read_to = self._last_seq  # the table was read up to here: all before is replayed or yielded
        self._wanted = self._last_seq  # the table holds events up to here (a gap or the watcher says so)
        self._replay: deque[Any] = deque()  # events read from the table, or taken off the queue, first
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._closed = False
        self._head: asyncio.Future[int] | None = None
        if since is None:
            # Where "from now on" starts: read at the loop's next turn (after subscribe() has
            # registered this), not at the first __anext__, which may come much later.
            self._head = asyncio.ensure_future(bus.store.call(bus._last_seq, session_id))
            self._head.add_done_callback(_retrieve)

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> dict[str, Any]:
        await self.start()
        while True:
            event = self.next_ready()
            if event is not None:
                return event
            if self._closed:
                raise StopAsyncIteration
            if self._wanted > max(self._last_seq, self._read_to):
                await self._read_table()
            else:
                self._replay.append(await self._queue.get())

    def next_ready(self) -> dict[str, Any] | None:
        """The next event if it is already here (replayed or queued), else None; never waits.
        Only after the first ``__anext__`` (which reads the replay)."""
        while not self._closed and (self._replay or not self._queue.empty()):
            item = self._replay.popleft() if self._replay else self._queue.get_nowait()
            if item is _CLOSED:
                continue
            if isinstance(item, _Stored):
                # read the table once nothing else is here: the event may be on its way from publish
                self._wanted = max(self._wanted, item.seq)
                continue
            seq = item["seq"]
            if seq <= self._last_seq:
                continue  # had it (from the table, or from publish)
            if seq > self._last_seq + 1 and seq > self._read_to:
                # Another process stored the seqs between; they are committed (see the module
                # docstring), so __anext__ reads them, this one with them, before going on.
                self._wanted = max(self._wanted, seq)
                return None
            self._last_seq = seq
            event: dict[str, Any] = item  # neither _CLOSED nor _Stored: a published event
            return event
        return None

    @property
    def ready(self) -> bool:
        """Whether something is already here (replayed or queued): a consumer that writes events
        to a socket can then write on and flush once, at the end of the burst."""
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

    async def start(self) -> None:
        """Fix where the stream starts; the first ``__anext__`` does it otherwise. A caller that
        must know "from now on" is behind it before it makes events (and not at the first read,
        which may come after other processes stored some) awaits this first. Idempotent.

        Read only after registering (in subscribe): what is stored before this read comes from
        the table, what is stored after it is queued (published here) or announced (by the
        watcher); seq filtering drops the overlap."""
        if self._started:
            return
        self._started = True
        if self._head is None:
            await self._read_table()
            return
        head = await self._head
        # Start after the session's last event, or before the first one published here since
        # subscribe() if that is lower (it was stored before the read, but after subscribing).
        while not self._queue.empty():
            self._replay.append(self._queue.get_nowait())
        published = [item["seq"] for item in self._replay if isinstance(item, dict)]
        self._last_seq = self._read_to = min([head, *(seq - 1 for seq in published)])
        self._wanted = head

    async def _read_table(self) -> None:
        """Put the stored events after the last one yielded first in line."""
        store = self._bus.store
        stored = await store.call(store.list_events, self.session_id, self._last_seq)
        self._read_to = max(self._read_to, self._wanted, stored[-1]["seq"] if stored else 0)
        self._replay.extendleft(reversed(stored))

    def _deliver(self, item: Any) -> None:
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)
        except RuntimeError:  # the consumer's loop is closed: nobody will read this any more
            self._bus._unsubscribe(self)


def _retrieve(future: asyncio.Future[Any]) -> None:
    """Take the outcome of a read nobody may await (a subscription closed before its first event)."""
    if not future.cancelled():
        future.exception()
