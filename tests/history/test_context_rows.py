"""The store's bounded reads of a long session and its context summary (issue 38), on SQLite and
PostgreSQL: each read returns what it names and no more, and a summary is replaced only by a fold
that started from it (two processes folding at once: the second is refused, nothing is lost)."""

from __future__ import annotations

from typing import Any

import pytest

from nini.history.schema import messages
from nini.history.store import HistoryStore
from tests.history.conftest import execution_row


def conversation(store: HistoryStore, session_id: str, turns: int) -> list[int]:
    """``turns`` turns (a question, a tool-calling step, its output, an answer); their message ids."""
    ids = []
    for n in range(turns):
        turn = f"t{n}"
        ids.append(store.add_message(session_id, "user", f"question {n}", turn_id=turn)["id"])
        ids.append(store.add_message(session_id, "assistant", None, turn_id=turn, metadata={"tool_calls": []})["id"])
        ids.append(store.add_message(session_id, "tool", '{"success": true}', turn_id=turn, tool_call_id=f"c{n}")["id"])
        ids.append(store.add_message(session_id, "assistant", f"answer {n}", turn_id=turn)["id"])
    return ids


def test_reads_backwards_and_forwards_within_bounds(store: HistoryStore, session_id: str) -> None:
    ids = conversation(store, session_id, 10)
    other = store.create_session()["id"]
    conversation(store, other, 3)  # another session's rows are never read
    newest = store.messages_newest_first(session_id, limit=5)
    assert [row["id"] for row in newest] == ids[::-1][:5]
    page = store.messages_newest_first(session_id, limit=5, before_id=newest[-1]["id"], after_id=ids[20])
    assert [row["id"] for row in page] == ids[::-1][5:10]
    assert store.messages_newest_first(session_id, limit=100, after_id=ids[-2]) == newest[:1]
    forwards = store.messages_oldest_first(session_id, after_id=ids[3], before_id=ids[9], limit=3)
    assert [row["id"] for row in forwards] == ids[4:7]
    assert [row["content"] for row in store.turn_messages(session_id, "t7")] == [
        "question 7",
        None,
        '{"success": true}',
        "answer 7",
    ]
    assert [row["content"] for row in store.last_messages(session_id, "user", 2)] == ["question 8", "question 9"]
    before = store.last_messages(session_id, "assistant", 2, before_id=ids[8])
    assert [row["id"] for row in before] == [ids[5], ids[7]]


def test_the_changes_since_a_read(store: HistoryStore, session_id: str) -> None:
    """What a turn that kept its rows reads: the new messages, the summary's mark, and the count."""
    ids = conversation(store, session_id, 3)
    changes = store.context_changes(session_id, after_id=ids[7], counted_from=ids[3], limit=3)
    assert ([row["id"] for row in changes.rows], changes.count, changes.through_id) == (ids[8:11], 7, 0)
    store.save_context_summary(session_id, {"notes": []}, through_id=ids[3], turns=1, replaces=0)
    changes = store.context_changes(session_id, after_id=ids[-1], counted_from=ids[3], limit=3)
    assert (changes.rows, changes.count, changes.through_id) == ([], 8, ids[3])


def test_a_message_committed_after_a_newer_one_shows_in_the_count(
    store: HistoryStore, session_id: str, backend: str
) -> None:
    """PostgreSQL hands out ids before commit: a turn can read id n+1 while n is not committed yet.
    The next read's count is one more than the rows kept, so the turn reads its window again."""
    if backend == "sqlite":
        pytest.skip("SQLite commits one writer at a time, in id order")
    first = store.add_message(session_id, "user", "first")["id"]
    late = store.engine.connect()
    transaction = late.begin()
    late.execute(messages.insert().values(session_id=session_id, role="user", content="late", created_at="2026-01-01"))
    newer = store.add_message(session_id, "user", "newer")["id"]
    seen = store.context_changes(session_id, after_id=first, counted_from=0, limit=10)
    assert ([row["id"] for row in seen.rows], seen.count) == ([newer], 2)
    transaction.commit()
    late.close()
    again = store.context_changes(session_id, after_id=newer, counted_from=0, limit=10)
    assert (again.rows, again.count) == ([], 3)  # one more than the two rows the turn kept


@pytest.mark.sqlite_only
def test_reads_of_one_kind_of_event_and_of_the_heads_seek_their_index(store: HistoryStore, session_id: str) -> None:
    """What runs each turn or each poll: a turn's read of its session's reports goes through the
    (session_id, type) index, and the watcher's last seqs seek the primary key once per session;
    neither walks the session's events (they did, each turn costing more than the one before)."""
    import sqlalchemy as sa

    from nini.history.watch import stored_heads

    for n in range(30):
        store.append_event(session_id, "report_ready" if n % 10 == 0 else "tool_call", {"n": n})
    statements: list[tuple[str, Any]] = []

    def seen(conn: Any, cursor: Any, statement: str, parameters: Any, *args: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "FROM events" in statement:
            statements.append((statement, parameters))

    sa.event.listen(store.engine, "before_cursor_execute", seen)
    try:
        reports = store.list_events(session_id, types=["report_ready"])
        heads = stored_heads(store, [session_id, "no-such-session"])
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", seen)
    assert [event["data"]["n"] for event in reports] == [0, 10, 20] and heads == {session_id: 30}
    with store.reading() as conn:
        plans = [
            " ".join(row[3] for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters))
            for statement, parameters in statements
        ]
    assert len(plans) == 2
    assert "USING INDEX ix_events_session_id_type (session_id=? AND type=?)" in plans[0]
    assert "SCAN" not in plans[1] and "(session_id=?)" in plans[1]


def test_a_summary_is_replaced_only_by_the_fold_that_read_it(store: HistoryStore, session_id: str) -> None:
    assert store.context_summary(session_id) is None
    assert store.save_context_summary(session_id, {"notes": ["a"]}, through_id=8, turns=2, replaces=0)
    assert not store.save_context_summary(session_id, {"notes": ["b"]}, through_id=9, turns=2, replaces=0)
    assert store.save_context_summary(session_id, {"notes": ["c"]}, through_id=20, turns=5, replaces=8)
    assert not store.save_context_summary(session_id, {"notes": ["d"]}, through_id=24, turns=6, replaces=8)
    found = store.context_summary(session_id)
    assert (found["through_id"], found["turns"], found["summary"]) == (20, 5, {"notes": ["c"]})


def test_the_last_step_of_a_label_or_dataset(store: HistoryStore, session_id: str) -> None:
    def step(label: str | None, save_as: str | None, status: str) -> str:
        call = store.start_tool_call(session_id, "run_code", {"code": "x"})
        execution = execution_row(label=label, save_as=save_as, status=status)
        store.finish_tool_call(call["id"], status="succeeded", result={}, execution=execution)
        return store.list_executions(session_id)[-1]["id"]

    assert store.last_step(session_id, "clean", None) is None
    failed = step("clean", None, "failed")
    assert store.last_step(session_id, "clean", None)["id"] == failed
    fixed = step(None, "sales_clean", "succeeded")
    assert store.last_step(session_id, "clean", "sales_clean")["id"] == fixed  # the newest of either
    assert store.last_step(session_id, "clean", None)["id"] == failed
