"""History store throughput (runnable alone; part of `make bench`): tool calls recorded (start +
finish) per second, on SQLite and on PostgreSQL, each as a ratio to its raw driver doing the same
INSERT + UPDATE in autocommit (one commit per statement, as the store commits each write) on the
same machine in the same run, into the same tables (made by nini's migrations).

Two ways of calling the store:
- one caller, each write awaited before the next (a single turn): a group of one per commit;
- concurrent turns (``TURNS`` asyncio tasks through ``store.call``, as a server with many sessions
  runs them): the writes queued while a commit is under way share the next one (group commit).

Goal (issue 23): at least 0.5x the raw driver, on both backends. On SQLite a commit is cheap
(WAL, no fsync), so concurrent turns gain little from sharing one and pay for the hop to a store
thread on every await (~0.1 ms); on PostgreSQL, where a commit waits for its WAL flush, they gain. PostgreSQL runs
in a throwaway cluster (tests/pg_cluster.py) with fsync on; it is skipped, saying why, where
PostgreSQL is not installed.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from goals import goal

from nini.history.store import HistoryStore  # noqa: E402
from tests import pg_cluster  # noqa: E402

N_SQLITE = 10_000
N_POSTGRES = 2_000
TURNS = 8
GOAL_RATIO = 0.5
ARGUMENTS = {"code": "df.groupby('region')['sales'].sum()", "dataset_name": "sales", "purpose": "exploration"}
RESULT = {"success": True, "stdout": "region\nnorth    120\nsouth     80\n", "result": None, "duration_ms": 12}

# The raw drivers write into tables made by nini's own migrations (same columns, indexes and
# foreign keys), so the ratio is what the store adds, not what its indexes cost.
INSERT = (
    "INSERT INTO tool_calls (id, session_id, turn_id, tool_name, arguments, status, started_at, owner)"
    " VALUES ({p}, 'bench', {p}, 'run_code', {p}, 'running', {p}, {p})"
)
UPDATE = (
    "UPDATE tool_calls SET status = 'succeeded', ended_at = {p}, duration_ms = 0, result = {p},"
    " result_summary = 'ok' WHERE id = {p}"
)


def raw_calls(execute: Callable[[str, tuple], object], placeholder: str, n_calls: int) -> float:
    """Seconds for ``n_calls`` INSERT + UPDATE through a raw driver's autocommit ``execute``."""
    insert, update = INSERT.format(p=placeholder), UPDATE.format(p=placeholder)
    owner = f"bench:{os.getpid()}"
    start = time.perf_counter()
    for n in range(n_calls):
        call_id = "c" + uuid.uuid4().hex[:12]
        execute(insert, (call_id, f"t{n}", json.dumps(ARGUMENTS), _now(), owner))
        execute(update, (_now(), json.dumps(RESULT), call_id))
    return time.perf_counter() - start


def with_nini_tables(url: str) -> None:
    """Create nini's tables in ``url`` and the session ``bench`` the raw writes use."""
    store = HistoryStore(url)
    store.create_session("bench", title="raw driver")
    store.close()


def raw_sqlite(path: Path, n_calls: int) -> float:
    with_nini_tables(f"sqlite:///{path}")
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for pragma in ("journal_mode = WAL", "synchronous = NORMAL", "foreign_keys = ON"):
            conn.execute(f"PRAGMA {pragma}")
        return raw_calls(conn.execute, "?", n_calls)
    finally:
        conn.close()


def raw_postgres(url: str, conninfo: str, n_calls: int) -> float:
    import psycopg

    with_nini_tables(url)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        return raw_calls(conn.execute, "%s", n_calls)


def store_one_caller(url: str, n_calls: int) -> float:
    """Seconds for ``n_calls`` start_tool_call + finish_tool_call, one after the other."""
    store = HistoryStore(url)
    try:
        session_id = store.create_session(title="bench")["id"]
        start = time.perf_counter()
        for n in range(n_calls):
            call = store.start_tool_call(session_id, "run_code", ARGUMENTS, turn_id=f"t{n}")
            store.finish_tool_call(call["id"], status="succeeded", result=RESULT, result_summary="ok")
        elapsed = time.perf_counter() - start
        assert len(store.list_tool_calls(session_id)) == n_calls
    finally:
        store.close()
    return elapsed


def store_concurrent_turns(url: str, n_calls: int) -> float:
    """Seconds for ``n_calls`` calls made by ``TURNS`` concurrent turns through ``store.call``."""
    store = HistoryStore(url)

    async def turn(session_id: str, calls: int) -> None:
        for n in range(calls):
            call = await store.call(store.start_tool_call, session_id, "run_code", ARGUMENTS, turn_id=f"t{n}")
            await store.call(store.finish_tool_call, call["id"], status="succeeded", result=RESULT, result_summary="ok")

    async def main() -> float:
        sessions = [store.create_session(title=f"bench {n}")["id"] for n in range(TURNS)]
        start = time.perf_counter()
        await asyncio.gather(*(turn(session_id, n_calls // TURNS) for session_id in sessions))
        elapsed = time.perf_counter() - start
        assert sum(len(store.list_tool_calls(s)) for s in sessions) == n_calls // TURNS * TURNS
        return elapsed

    try:
        return asyncio.run(main())
    finally:
        store.close()


def report(backend: str, n_calls: int, raw_s: float, one_s: float, turns_s: float, baseline: str) -> None:
    raw, one, turns = n_calls / raw_s, n_calls / one_s, n_calls / turns_s

    def judged(rate: float) -> str:
        return f"{rate / raw:5.2f}x   goal >= {GOAL_RATIO}x: {'met' if rate / raw >= GOAL_RATIO else 'MISSED'}"

    print(f"{backend}: {n_calls:,} tool calls (start + finish)")
    print(f"  baseline: {baseline:<44} {raw:9,.0f} calls/s")
    print(f"  HistoryStore, one caller                           {one:9,.0f} calls/s  {judged(one)}")
    print(f"  HistoryStore, {TURNS} concurrent turns (group commit)  {turns:9,.0f} calls/s  {judged(turns)}")
    for who, rate in (("one caller", one), (f"{TURNS} concurrent turns", turns)):
        what = f"{backend} store, {who} >= {GOAL_RATIO}x the bare baseline"
        goal("store_throughput", what, f"{rate / raw:.2f}x ({rate:,.0f}/s)", rate / raw >= GOAL_RATIO)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        raw = raw_sqlite(folder / "raw.db", N_SQLITE)
        one = store_one_caller(f"sqlite:///{folder / 'one.db'}", N_SQLITE)
        turns = store_concurrent_turns(f"sqlite:///{folder / 'turns.db'}", N_SQLITE)
    report("SQLite (WAL, synchronous=NORMAL)", N_SQLITE, raw, one, turns, "plain sqlite3, autocommit INSERT + UPDATE")

    reason = pg_cluster.unavailable()
    if reason:
        print(f"PostgreSQL: skipped ({reason})")
        return 0
    cluster = pg_cluster.start()
    try:
        raw = raw_postgres(cluster.create_database("raw"), cluster.conninfo("raw"), N_POSTGRES)
        one = store_one_caller(cluster.create_database(), N_POSTGRES)
        turns = store_concurrent_turns(cluster.create_database(), N_POSTGRES)
    finally:
        cluster.stop()
    report("PostgreSQL (fsync on)", N_POSTGRES, raw, one, turns, "psycopg 3, autocommit INSERT + UPDATE")
    return 0


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


if __name__ == "__main__":
    sys.exit(main())
