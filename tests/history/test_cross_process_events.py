"""Events across processes: a subscriber here gets, live and in seq order, the events another
process (a real ``python`` child with its own HistoryStore on the same database) stores, mixed
with those published here, each exactly once; on SQLite (the watcher polls) and on PostgreSQL
(LISTEN/NOTIFY)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from nini.history.events import EventBus
from nini.history.store import HistoryStore
from tests.history.test_events import WAIT_S, take
from tests.timeouts import timeout

ROOT = Path(__file__).parents[2]
# Reads "<session_id> <count>" lines; appends that many events, numbered across the whole run,
# and answers with their seqs once they are committed.
CHILD = """
import sys
from nini.history.store import HistoryStore

store = HistoryStore(sys.argv[1])
sent = 0
for line in sys.stdin:
    session_id, count = line.split()
    seqs = []
    for _ in range(int(count)):
        seqs.append(store.append_event(session_id, "remote", {"n": sent})["seq"])
        sent += 1
    print(*seqs, flush=True)
store.close()
"""


class OtherProcess:
    """A child process appending events to the database at ``url`` when asked."""

    def __init__(self, url: str) -> None:
        self._child = subprocess.Popen(
            [sys.executable, "-c", CHILD, url], cwd=ROOT, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        self._turn = threading.Lock()  # one request at a time: a line written, its answer read

    def append(self, session_id: str, count: int = 1) -> list[int]:
        """Have it append ``count`` events; their seqs, once committed. Callable from any thread."""
        assert self._child.stdin is not None and self._child.stdout is not None
        with self._turn:
            self._child.stdin.write(f"{session_id} {count}\n")
            self._child.stdin.flush()
            answer = self._child.stdout.readline()
        assert answer, f"the child process ended (exit code {self._child.wait()})"
        return [int(seq) for seq in answer.split()]

    async def async_append(self, session_id: str, count: int = 1) -> list[int]:
        return await asyncio.to_thread(self.append, session_id, count)

    def close(self) -> None:
        assert self._child.stdin is not None
        self._child.stdin.close()
        assert self._child.wait(timeout=timeout(60)) == 0


@pytest.fixture
def other(db_url: str, store: HistoryStore) -> OtherProcess:  # store: the schema exists before the child opens it
    child = OtherProcess(db_url)
    yield child
    child.close()


@pytest.mark.slow
def test_events_another_process_stores_arrive_live(store: HistoryStore, session_id: str, other: OtherProcess) -> None:
    bus = EventBus(store)
    elsewhere = store.create_session()["id"]

    async def main() -> list[dict]:
        received = []
        async with bus.subscribe(session_id) as subscription:
            await subscription.start()  # "from now on" is behind it before the child stores anything
            for _ in range(5):
                # each event arrives before the next is stored: live, with no resubscribing
                await other.async_append(elsewhere)
                (seq,) = await other.async_append(session_id)
                received += await take(subscription, 1)
                assert received[-1]["seq"] == seq
        return received

    received = asyncio.run(main())
    assert [e["seq"] for e in received] == [1, 2, 3, 4, 5]
    assert [(e["type"], e["session_id"]) for e in received] == [("remote", session_id)] * 5


@pytest.mark.slow
def test_local_and_remote_events_interleave_in_exact_order(
    store: HistoryStore, session_id: str, other: OtherProcess
) -> None:
    bus = EventBus(store)
    per_side = 150

    def publish_here() -> None:
        for n in range(per_side):
            bus.publish(session_id, "local", {"n": n})

    async def main() -> tuple[list[dict], list[dict]]:
        async with bus.subscribe(session_id, since=0) as resumed, bus.subscribe(session_id) as fresh:
            # "from now on" is read before either side stores anything: read later (under load, the
            # child can commit first), it would rightly leave out the remote events before it
            await fresh.start()
            publisher = threading.Thread(target=publish_here)
            publisher.start()
            try:
                await asyncio.gather(*(other.async_append(session_id, 10) for _ in range(per_side // 10)))
            finally:
                publisher.join()
            return await asyncio.gather(take(resumed, 2 * per_side), take(fresh, 2 * per_side))

    for events in asyncio.run(main()):
        assert [e["seq"] for e in events] == list(range(1, 2 * per_side + 1))  # no gap, no repeat
        for side in ("local", "remote"):  # each side's events in the order it stored them
            assert [e["data"]["n"] for e in events if e["type"] == side] == list(range(per_side))


@pytest.mark.slow
def test_an_event_published_here_waits_for_the_remote_ones_before_it(
    store: HistoryStore, session_id: str, other: OtherProcess
) -> None:
    """The local event reaches the subscription at once, the remote one before it only when the
    watcher notices: the subscription reads the missing one first."""
    bus = EventBus(store)

    async def main() -> list[str]:
        async with bus.subscribe(session_id) as subscription:
            await subscription.start()  # as above
            for _ in range(10):
                await other.async_append(session_id, 2)
                await store.call(bus.publish, session_id, "local", {})
            return [e["type"] for e in await take(subscription, 30)]

    assert asyncio.run(main()) == ["remote", "remote", "local"] * 10


@pytest.mark.slow
def test_resuming_since_replays_remote_events_then_streams_them(
    store: HistoryStore, session_id: str, other: OtherProcess
) -> None:
    bus = EventBus(store)
    other.append(session_id, 3)

    async def main() -> list[int]:
        async with bus.subscribe(session_id, since=1) as subscription:
            replayed = await take(subscription, 2)
            await other.async_append(session_id, 2)
            return [e["seq"] for e in replayed + await take(subscription, 2)]

    assert asyncio.run(main()) == [2, 3, 4, 5]


def test_the_watcher_runs_only_while_someone_watches(store: HistoryStore, session_id: str) -> None:
    bus = EventBus(store)

    def watchers() -> set[threading.Thread]:
        return {thread for thread in threading.enumerate() if thread.name == "nini-events-watcher"}

    async def main() -> tuple[set[threading.Thread], bool]:
        before = watchers()  # other tests' buses may still be stopping theirs
        first, second = bus.subscribe(session_id), bus.subscribe(store.create_session()["id"])
        started = watchers() - before
        first.close()
        still_running = all(thread.is_alive() for thread in started)
        second.close()
        return started, still_running

    started, still_running = asyncio.run(main())
    assert len(started) == 1 and still_running  # one thread per bus, for all its sessions
    for thread in started:
        thread.join(WAIT_S)
        assert not thread.is_alive()
