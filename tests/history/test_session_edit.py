"""Renaming, searching and deleting sessions in the store, on SQLite and PostgreSQL alike."""

from __future__ import annotations

import pytest

from nini.errors import NiniError
from nini.history.session_edit import delete_session, rename_session, running_steps
from nini.history.store import HistoryStore
from nini.history.uids import session_uid
from nini.limits import Limits
from tests.history.conftest import execution_row

LIMITS = Limits(code=1_000_000, label=200, title=200)


def filled_session(store: HistoryStore, title: str) -> str:
    """A session with a row in every table that names one (a retried execution pointing at the first too)."""
    session_id = store.create_session(title=title)["id"]
    store.add_message(session_id, "user", "How did revenue develop?")
    first = store.start_tool_call(session_id, "run_code", {})
    done = store.finish_tool_call(
        first["id"],
        status="succeeded",
        execution=execution_row(save_as="sales"),
        artifacts=[{"name": "chart.png", "path": "charts/chart.png"}],
        datasets=[{"name": "sales", "path": "datasets/sales.parquet"}],
    )
    retry = store.start_tool_call(session_id, "run_code", {})
    store.finish_tool_call(retry["id"], status="succeeded", execution=execution_row(retry_of=done["execution"]["id"]))
    store.append_event(session_id, "done", {"ended_by": "finished"})
    session_uid(store, session_id, 100_000, 200_000)
    return session_id


def test_rename_trims_to_one_line_and_checks_the_length(store: HistoryStore, session_id: str) -> None:
    assert rename_session(store, session_id, "  Q3\n revenue\treview ", LIMITS)["title"] == "Q3 revenue review"
    assert store.get_session(session_id)["title"] == "Q3 revenue review"
    for title, code in (
        ("", "INVALID_ARGUMENT"),
        (" \n ", "INVALID_ARGUMENT"),
        ("x" * (LIMITS.title + 1), "TOO_LARGE"),
        ("a\ud800", "INVALID_ARGUMENT"),
    ):
        with pytest.raises(NiniError) as refused:
            rename_session(store, session_id, title, LIMITS)
        assert refused.value.code.value == code
    assert store.get_session(session_id)["title"] == "Q3 revenue review"
    with pytest.raises(NiniError) as missing:
        rename_session(store, "s0123456789ab", "x", LIMITS)
    assert missing.value.code.value == "NOT_FOUND"


def test_delete_takes_every_row_of_the_session_and_no_other(store: HistoryStore) -> None:
    gone, kept = filled_session(store, "gone"), filled_session(store, "kept")
    delete_session(store, gone)
    with pytest.raises(NiniError):
        store.get_session(gone)
    for rows in (
        store.list_messages(gone),
        store.list_tool_calls(gone),
        store.list_executions(gone),
        store.list_artifacts(gone),
        store.list_datasets(gone),
        store.list_events(gone),
    ):
        assert rows == []
    assert [row["id"] for row in store.list_sessions()] == [kept]
    assert len(store.list_executions(kept)) == 2 and len(store.list_events(kept)) == 1
    assert store.create_session(session_id=gone)["id"] == gone  # the id is free: nothing left clashes


def test_a_session_with_a_running_step_is_not_deleted(store: HistoryStore, session_id: str) -> None:
    call = store.start_tool_call(session_id, "run_code", {})
    assert running_steps(store, session_id) == 1
    with pytest.raises(NiniError) as refused:
        delete_session(store, session_id)
    assert refused.value.code.value == "CONFLICT" and refused.value.details["running"] == 1
    assert store.get_tool_call(call["id"])["status"] == "running"  # all of it stayed
    store.finish_tool_call(call["id"], status="failed")
    delete_session(store, session_id)
    assert store.list_sessions() == []


def test_search_by_title_and_conversation(store: HistoryStore) -> None:
    sales = store.create_session(title="Sales 100%")["id"]
    churn = store.create_session(title="Churn")["id"]
    store.add_message(churn, "user", "Which customers LEFT?")
    store.add_message(churn, "tool", "a tool's output mentions sales")  # tool output is not what was said
    assert [r["id"] for r in store.list_sessions(text="sales")] == [sales]
    assert [r["id"] for r in store.list_sessions(text="customers left")] == [churn]
    assert [r["id"] for r in store.list_sessions(text="0%")] == [sales]
    assert [r["id"] for r in store.list_sessions(text="_")] == []  # a literal underscore, in no title or message
    assert [r["id"] for r in store.list_sessions(text="churn", owner="someone")] == []
