"""Events: per-session seq, replay and live streaming through the EventBus, and store.call()."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from nini.errors import ErrorCode, NiniError
from nini.history.events import EventBus, Subscription
from nini.history.store import CALL_THREADS, HistoryStore
from tests.timeouts import timeout

WAIT_S = 60  # a guard against hanging forever, not a speed requirement


async def take(subscription: Subscription, count: int) -> list[dict]:
    """The next ``count`` events."""
    return await asyncio.wait_for(_collect(subscription, count), WAIT_S)


async def drain(subscription: Subscription) -> list[dict]:
    """Every event until the subscription ends."""
    return await asyncio.wait_for(_collect(subscription, None), WAIT_S)


async def _collect(subscription: Subscription, count: int | None) -> list[dict]:
    events: list[dict] = []
    while count is None or len(events) < count:
        try:
            events.append(await anext(subscription))
        except StopAsyncIteration:
            break
    return events


# stored events


def test_seq_counts_per_session_independently(store: HistoryStore) -> None:
    first, second = store.create_session()["id"], store.create_session()["id"]
    order = [first, second, first, first, second]
    seqs = [store.append_event(sid, "tick", {"n": n})["seq"] for n, sid in enumerate(order)]
    assert seqs == [1, 1, 2, 3, 2]
    assert [e["seq"] for e in store.list_events(first)] == [1, 2, 3]
    assert [e["data"]["n"] for e in store.list_events(second)] == [1, 4]


def test_an_event_has_the_contract_shape(store: HistoryStore, session_id: str) -> None:
    event = store.append_event(session_id, "tool_call", {"name": "run_code"}, turn_id="t1", tool_call_id="c1")
    assert list(event) == ["type", "session_id", "seq", "ts", "turn_id", "tool_call_id", "data"]
    assert event == {**store.list_events(session_id)[0]}
    assert (event["type"], event["turn_id"], event["tool_call_id"], event["data"]) == (
        "tool_call",
        "t1",
        "c1",
        {"name": "run_code"},
    )


def test_list_events_since_returns_only_what_came_after(store: HistoryStore, session_id: str) -> None:
    for n in range(5):
        store.append_event(session_id, "tick", {"n": n})
    assert [e["seq"] for e in store.list_events(session_id, since=3)] == [4, 5]
    assert store.list_events(session_id, since=5) == []
    assert store.list_events("other") == []


def test_an_event_for_an_unknown_session_is_not_found(store: HistoryStore) -> None:
    with pytest.raises(NiniError) as caught:
        store.append_event("nope", "tick", {})
    assert caught.value.code is ErrorCode.NOT_FOUND


def test_two_stores_on_one_file_never_share_a_seq(db_url: str, store: HistoryStore, session_id: str) -> None:
    other = HistoryStore(db_url)
    try:
        threads = [
            threading.Thread(target=lambda s=s: [s.append_event(session_id, "t", {}) for _ in range(100)])
            for s in (store, other)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        other.close()
    assert [e["seq"] for e in store.list_events(session_id)] == list(range(1, 201))


# EventBus


def test_a_subscriber_gets_stored_events_then_live_ones_without_gaps_or_duplicates(
    store: HistoryStore, session_id: str
) -> None:
    bus = EventBus(store)
    for n in range(100):
        bus.publish(session_id, "early", {"n": n})

    def publish_many(thread: int) -> None:
        for n in range(225):
            bus.publish(session_id, "live", {"thread": thread, "n": n})

    async def main() -> list[dict]:
        async with bus.subscribe(session_id, since=0) as subscription:
            # the publishers start before the replay is read, so they race with it
            threads = [threading.Thread(target=publish_many, args=(t,)) for t in range(4)]
            for thread in threads:
                thread.start()
            try:
                return await take(subscription, 1000)
            finally:
                for thread in threads:
                    thread.join()

    events = asyncio.run(main())

    assert [e["seq"] for e in events] == list(range(1, 1001))
    for thread in range(4):  # each publisher's events arrive in the order it published them
        assert [e["data"]["n"] for e in events if e["data"].get("thread") == thread] == list(range(225))


def test_subscribing_since_a_seq_resumes_after_it(store: HistoryStore, session_id: str) -> None:
    bus = EventBus(store)
    for n in range(5):
        bus.publish(session_id, "tick", {"n": n})

    async def main() -> list[int]:
        async with bus.subscribe(session_id, since=3) as subscription:
            bus.publish(session_id, "tick", {"n": 5})
            return [e["seq"] for e in await take(subscription, 3)]

    assert asyncio.run(main()) == [4, 5, 6]


def test_without_since_only_new_events_arrive(store: HistoryStore, session_id: str) -> None:
    bus = EventBus(store)
    bus.publish(session_id, "before", {})

    async def main() -> list[str]:
        async with bus.subscribe(session_id) as subscription:
            bus.publish(session_id, "after", {})
            return [e["type"] for e in await take(subscription, 1)]

    assert asyncio.run(main()) == ["after"]


def test_two_subscribers_both_get_everything_and_other_sessions_nothing(store: HistoryStore, session_id: str) -> None:
    bus = EventBus(store)
    elsewhere = store.create_session()["id"]

    async def main() -> tuple[list[dict], list[dict]]:
        async with bus.subscribe(session_id) as first, bus.subscribe(session_id) as second:
            publisher = threading.Thread(
                target=lambda: [
                    bus.publish(sid, "tick", {"n": n}) for n in range(50) for sid in (elsewhere, session_id)
                ]
            )
            publisher.start()
            try:
                return await asyncio.gather(take(first, 50), take(second, 50))
            finally:
                publisher.join()

    first, second = asyncio.run(main())
    assert first == second
    assert [e["data"]["n"] for e in first] == list(range(50))
    assert {e["session_id"] for e in first} == {session_id}


def test_a_closed_subscription_ends_and_receives_nothing_more(store: HistoryStore, session_id: str) -> None:
    bus = EventBus(store)

    async def main() -> tuple[list[dict], list[dict]]:
        leaving, staying = bus.subscribe(session_id), bus.subscribe(session_id)
        async with staying:
            bus.publish(session_id, "tick", {"n": 0})
            received = await take(leaving, 1)
            leaving.close()
            bus.publish(session_id, "tick", {"n": 1})
            return received + await drain(leaving), await take(staying, 2)

    left, stayed = asyncio.run(main())
    assert [e["data"]["n"] for e in left] == [0]
    assert [e["data"]["n"] for e in stayed] == [0, 1]


def test_closing_from_another_thread_wakes_a_waiting_subscriber(store: HistoryStore, session_id: str) -> None:
    bus = EventBus(store)

    async def main() -> list[dict]:
        subscription = bus.subscribe(session_id)
        waiting = asyncio.ensure_future(drain(subscription))
        await asyncio.sleep(0)  # let it start waiting
        await asyncio.to_thread(subscription.close)
        return await waiting

    assert asyncio.run(main()) == []


def test_a_subscriber_whose_loop_is_gone_does_not_break_publish(store: HistoryStore, session_id: str) -> None:
    bus = EventBus(store)

    async def subscribe_and_leave() -> None:
        bus.subscribe(session_id)  # never closed; its loop ends with asyncio.run

    asyncio.run(subscribe_and_leave())
    assert bus.publish(session_id, "tick", {})["seq"] == 1
    assert bus.publish(session_id, "tick", {})["seq"] == 2


def test_publish_for_an_unknown_session_raises_and_delivers_nothing(store: HistoryStore) -> None:
    bus = EventBus(store)
    with pytest.raises(NiniError) as caught:
        bus.publish("nope", "tick", {})
    assert caught.value.code is ErrorCode.NOT_FOUND


# store.call


def test_call_runs_off_the_event_loop_on_the_stores_few_threads(store: HistoryStore) -> None:
    async def main() -> set[int]:
        return set(await asyncio.gather(*(store.call(time_and_thread) for _ in range(40))))

    def time_and_thread() -> int:
        time.sleep(0.01)  # long enough for the calls to overlap
        return threading.get_ident()

    first, second = asyncio.run(main()), asyncio.run(main())  # also across event loops
    assert 1 < len(first) <= CALL_THREADS  # overlapping calls ran on several threads, but few
    assert len(first | second) <= CALL_THREADS and threading.get_ident() not in first | second


def test_calls_awaited_one_after_another_run_in_order(store: HistoryStore, session_id: str) -> None:
    async def main() -> None:
        for n in range(50):
            await store.call(store.append_event, session_id, "tick", {"n": n})

    asyncio.run(main())
    assert [e["data"]["n"] for e in store.list_events(session_id)] == list(range(50))


def test_call_returns_results_and_raises_nini_errors(store: HistoryStore) -> None:
    async def main() -> dict:
        session = await store.call(store.create_session, title="async")
        with pytest.raises(NiniError) as caught:
            await store.call(store.get_session, "nope")
        assert caught.value.code is ErrorCode.NOT_FOUND
        return await store.call(store.get_session, session["id"])

    assert asyncio.run(main())["title"] == "async"


def test_a_queued_write_survives_the_cancellation_of_its_caller(store: HistoryStore) -> None:
    """A turn cancelled while its call's end waits behind another write still records that end."""
    session = store.create_session()
    call = store.start_tool_call(session["id"], "run_code", {})

    release, taken = threading.Event(), threading.Semaphore(0)

    def hold() -> None:
        taken.release()
        release.wait(timeout(60))

    async def main() -> None:
        busy = asyncio.gather(*(store.call(hold) for _ in range(CALL_THREADS)))
        for _ in range(CALL_THREADS):  # every thread taken
            assert await asyncio.to_thread(taken.acquire, timeout=timeout(60))
        finishing = asyncio.ensure_future(
            store.call(store.finish_tool_call, call["id"], status="failed", error_code="CANCELED")
        )
        await asyncio.sleep(0)  # submitted: queued behind the held threads
        finishing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await finishing
        assert store.get_tool_call(call["id"])["status"] == "running"  # still queued
        release.set()
        await busy
        # the queued end runs once a thread is free: wait for its effect (a write may take long on a loaded machine)
        deadline = time.monotonic() + timeout(30)
        while store.get_tool_call(call["id"])["status"] == "running" and time.monotonic() < deadline:
            await asyncio.sleep(0.02)

    asyncio.run(main())
    assert (store.get_tool_call(call["id"])["status"], store.get_tool_call(call["id"])["error_code"]) == (
        "failed",
        "CANCELED",
    )


def test_close_finishes_queued_calls_and_can_be_repeated(db_url: str) -> None:
    store = HistoryStore(db_url)

    async def main() -> list[dict]:
        return await asyncio.gather(*(store.call(store.create_session) for _ in range(10)))

    created = asyncio.run(main())
    store.close()
    store.close()
    reopened = HistoryStore(db_url)
    try:
        assert len(reopened.list_sessions()) == len(created)
    finally:
        reopened.close()
