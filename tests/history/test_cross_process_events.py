"""Events across processes: a subscriber here gets, live and in seq order, the events another
process (a real ``python`` child with its own HistoryStore on the same database) stores, mixed
with those published here, each exactly once; on SQLite (the watcher polls) and on PostgreSQL
(LISTEN/NOTIFY)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from nini.history.events import EventBus
from nini.history.store import HistoryStore
from tests.history.test_events import WAIT_S, take
from tests.timeouts import timeout

ROOT = Path(__file__).parents[2]
# Reads "<url> <session_id> <count>" lines; appends that many events to the database at url with
# its own HistoryStore of it, numbered across that database's requests, and answers with their seqs
# once they are committed. "<url> - 0" closes that store. One child serves the module's tests (a
# start and its imports cost more than most tests here), each test's database through a store of its own.
CHILD = """
import sys
from nini.history.store import HistoryStore

stores, sent = {}, {}
for line in sys.stdin:
    url, session_id, count = line.rsplit(" ", 2)
    if session_id == "-":
        if url in stores:
            stores.pop(url).close()
        print(flush=True)
        continue
    store = stores.get(url) or stores.setdefault(url, HistoryStore(url))
    seqs = []
    for _ in range(int(count)):
        seqs.append(store.append_event(session_id, "remote", {"n": sent.get(url, 0)})["seq"])
        sent[url] = sent.get(url, 0) + 1
    print(*seqs, flush=True)
"""


class OtherProcess:
    """A child process appending events to a database when asked."""

    def __init__(self) -> None:
        self._child = subprocess.Popen(
            [sys.executable, "-c", CHILD], cwd=ROOT, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        self._turn = threading.Lock()  # one request at a time: a line written, its answer read
        self.url = ""  # the database of the test at hand

    def _ask(self, request: str) -> str:
        assert self._child.stdin is not None and self._child.stdout is not None
        with self._turn:
            self._child.stdin.write(f"{self.url} {request}\n")
            self._child.stdin.flush()
            answer = self._child.stdout.readline()
        assert answer, f"the child process ended (exit code {self._child.wait()})"
        return answer

    def append(self, session_id: str, count: int = 1) -> list[int]:
        """Have it append ``count`` events; their seqs, once committed. Callable from any thread."""
        return [int(seq) for seq in self._ask(f"{session_id} {count}").split()]

    async def async_append(self, session_id: str, count: int = 1) -> list[int]:
        return await asyncio.to_thread(self.append, session_id, count)

    def close_store(self) -> None:
        """Close its store of the test's database, as the child process of one test did when it ended."""
        self._ask("- 0")

    def close(self) -> None:
        assert self._child.stdin is not None
        self._child.stdin.close()
        assert self._child.wait(timeout=timeout(60)) == 0


@pytest.fixture(scope="module")
def other_process() -> Iterator[OtherProcess]:
    child = OtherProcess()
    yield child
    child.close()


@pytest.fixture
def other(other_process: OtherProcess, db_url: str, store: HistoryStore) -> Iterator[OtherProcess]:
    """The child, appending to this test's database (``store`` first: the schema exists before it opens it)."""
    other_process.url = db_url
    yield other_process
    other_process.close_store()


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
