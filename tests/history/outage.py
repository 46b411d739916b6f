"""Shared by the database outage tests (tests/history/test_db_outage.py and the REST ones in
tests/jupyter_ext/test_db_outage_api.py): a PostgreSQL server of the test's own, deadlines, and the
invariants of a whole record."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
import sqlalchemy as sa

from tests import pg_cluster

T = TypeVar("T")
GENEROUS_S = 120.0
"""How long a condition may take to become true on a loaded machine (a deadline, never a sleep)."""
PASSWORD = "pw-that-must-not-show"


@pytest.fixture
def cluster() -> Iterator[pg_cluster.Cluster]:
    """A PostgreSQL server of this test's own, to stop and start."""
    reason = pg_cluster.unavailable()
    if reason:
        pytest.skip(reason)
    with pg_cluster.running() as started:
        yield started


def with_password(url: str) -> str:
    """``url`` with a password (trust authentication ignores it): no message may show it."""
    return url.replace(f"{pg_cluster.USER}@", f"{pg_cluster.USER}:{PASSWORD}@")


def wait_for(condition: Callable[[], T], what: str, timeout: float = GENEROUS_S) -> T:
    """``condition()``'s first true value, polled until a deadline; a failing poll counts as false
    (the database may still be coming back)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except Exception:  # noqa: BLE001 - not yet
            value = None
        if value:
            return value
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.05)


def record_of(url: str, session_id: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The session's tool calls and events, read through a connection of its own (not the store's)."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            calls = (
                conn.execute(
                    sa.text("SELECT id, status, error_code, ended_at FROM tool_calls WHERE session_id = :s"),
                    {"s": session_id},
                )
                .mappings()
                .all()
            )
            events = (
                conn.execute(
                    sa.text("SELECT seq, type, tool_call_id, data FROM events WHERE session_id = :s ORDER BY seq"),
                    {"s": session_id},
                )
                .mappings()
                .all()
            )
    finally:
        engine.dispose()
    return [dict(c) for c in calls], [dict(e) for e in events]


def whole(url: str, session_id: str, calls: int) -> list[dict[str, Any]] | None:
    """The session's calls when its record is whole again: ``calls`` calls, none running, each
    finished one with one ``tool_result``, seqs 1..N; else None."""
    found, events = record_of(url, session_id)
    results = [e["tool_call_id"] for e in events if e["type"] == "tool_result"]
    if len(found) != calls or any(c["status"] == "running" for c in found):
        return None
    assert sorted(results) == sorted(c["id"] for c in found), "a finished call without its one tool_result"
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    return found
