"""Group commit (nini/history/commit.py): writes handed in while a transaction is under way share
the next commit; a write that fails in a group fails alone; what returned is committed."""

from __future__ import annotations

import threading
import time

import pytest

from nini.errors import ErrorCode, NiniError
from nini.history.store import HistoryStore

WRITERS = 12


def queued_behind_a_transaction(store: HistoryStore, writes: list) -> list:
    """Run ``writes`` (functions of nothing) in threads while another transaction holds the write
    connection, so that all of them queue; then let them go. Each one's result or exception."""
    outcomes: list = [None] * len(writes)

    def write(n: int) -> None:
        try:
            outcomes[n] = writes[n]()
        except NiniError as exc:
            outcomes[n] = exc

    threads = [threading.Thread(target=write, args=(n,)) for n in range(len(writes))]
    with store.writing():
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 30
        while store._commits.queued() < len(writes):
            assert time.monotonic() < deadline, "the writers did not queue"
            time.sleep(0.01)
    for thread in threads:
        thread.join()
    return outcomes


def test_writes_queued_during_a_commit_share_the_next_one(db_url: str, store: HistoryStore, session_id: str) -> None:
    before = store._commits.commits
    outcomes = queued_behind_a_transaction(
        store, [lambda n=n: store.add_message(session_id, "user", f"m{n}") for n in range(WRITERS)]
    )

    assert store._commits.commits - before == 1  # one transaction for all of them
    assert sorted(o["content"] for o in outcomes) == sorted(f"m{n}" for n in range(WRITERS))
    other = HistoryStore(db_url)  # what returned is committed: another connection sees it
    try:
        assert sorted(m["content"] for m in other.list_messages(session_id)) == sorted(f"m{n}" for n in range(WRITERS))
    finally:
        other.close()


def test_a_failing_write_of_a_group_fails_alone(store: HistoryStore, session_id: str) -> None:
    taken = store.start_tool_call(session_id, "run_code", {}, call_id="ctaken")["id"]
    writes = [lambda n=n: store.start_tool_call(session_id, "run_code", {"n": n}) for n in range(WRITERS)]
    writes.insert(WRITERS // 2, lambda: store.start_tool_call(session_id, "run_code", {}, call_id=taken))
    writes.append(lambda: store.append_event("no-such-session", "tick", {}))

    outcomes = queued_behind_a_transaction(store, writes)

    failed = [o for o in outcomes if isinstance(o, NiniError)]
    assert [e.code for e in failed] == [ErrorCode.CONFLICT, ErrorCode.NOT_FOUND]
    started = [o["id"] for o in outcomes if isinstance(o, dict)]
    assert len(started) == WRITERS
    assert {c["id"] for c in store.list_tool_calls(session_id)} == {taken, *started}


def test_events_of_one_session_written_in_one_group_get_consecutive_seqs(store: HistoryStore, session_id: str) -> None:
    outcomes = queued_behind_a_transaction(
        store, [lambda n=n: store.append_event(session_id, "tick", {"n": n}) for n in range(WRITERS)]
    )

    assert sorted(o["seq"] for o in outcomes) == list(range(1, WRITERS + 1))
    stored = store.list_events(session_id)
    assert [(e["seq"], e["data"]) for e in stored] == sorted((o["seq"], o["data"]) for o in outcomes)


@pytest.mark.parametrize("ending", ["succeeded", "failed"])
def test_a_call_ended_twice_in_one_group_ends_once(store: HistoryStore, session_id: str, ending: str) -> None:
    call = store.start_tool_call(session_id, "run_code", {})["id"]
    outcomes = queued_behind_a_transaction(
        store, [lambda: store.finish_tool_call(call, status=ending) for _ in range(3)]
    )

    assert sorted(type(o).__name__ for o in outcomes) == ["NiniError", "NiniError", "dict"]
    assert all(o.code is ErrorCode.CONFLICT for o in outcomes if isinstance(o, NiniError))
    assert store.get_tool_call(call)["status"] == ending
