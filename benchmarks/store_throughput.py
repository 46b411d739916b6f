"""History store speed (part of bench_run_code.py; runnable alone): 10,000 tool calls recorded (start + finish), in a fresh SQLite file in WAL mode.

Goal: at least 2,000 calls/s, so the bookkeeping of a tool call never shows next to a
kernel round trip. Baseline measured in the same run: the same rows written with plain sqlite3
(autocommit, WAL, synchronous=NORMAL, one INSERT and one UPDATE per call), the floor any store
on this disk can reach.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from nini.history.store import HistoryStore

N_CALLS = 10_000
GOAL_PER_S = 2_000
ARGUMENTS = {"code": "df.groupby('region')['sales'].sum()", "dataset_name": "sales", "purpose": "exploration"}
RESULT = {"success": True, "stdout": "region\nnorth    120\nsouth     80\n", "result": None, "duration_ms": 12}

RAW_SCHEMA = """
CREATE TABLE sessions (id TEXT PRIMARY KEY);
CREATE TABLE tool_calls (
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES sessions(id), turn_id TEXT, tool_name TEXT NOT NULL,
    arguments TEXT, status TEXT NOT NULL, error_code TEXT, started_at TEXT NOT NULL, ended_at TEXT,
    duration_ms INTEGER, result TEXT, result_summary TEXT, owner TEXT
);
"""


def store_calls(path: Path) -> float:
    """Seconds for N_CALLS start_tool_call + finish_tool_call through HistoryStore."""
    store = HistoryStore(f"sqlite:///{path}")
    try:
        session_id = store.create_session(title="bench")["id"]
        start = time.perf_counter()
        for n in range(N_CALLS):
            call = store.start_tool_call(session_id, "run_code", ARGUMENTS, turn_id=f"t{n}")
            store.finish_tool_call(call["id"], status="succeeded", result=RESULT, result_summary="ok")
        elapsed = time.perf_counter() - start
        assert len(store.list_tool_calls(session_id)) == N_CALLS
    finally:
        store.close()
    return elapsed


def raw_calls(path: Path) -> float:
    """Seconds for the same rows with plain sqlite3 in autocommit mode: the floor."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.executescript(RAW_SCHEMA)
        conn.execute("INSERT INTO sessions VALUES ('bench')")
        owner = f"bench:{os.getpid()}"
        start = time.perf_counter()
        for n in range(N_CALLS):
            call_id, started = "c" + uuid.uuid4().hex[:12], _now()
            conn.execute(
                "INSERT INTO tool_calls (id, session_id, turn_id, tool_name, arguments, status, started_at, owner)"
                " VALUES (?, 'bench', ?, 'run_code', ?, 'running', ?, ?)",
                (call_id, f"t{n}", json.dumps(ARGUMENTS), started, owner),
            )
            conn.execute(
                "UPDATE tool_calls SET status = 'succeeded', ended_at = ?, duration_ms = 0, result = ?,"
                " result_summary = 'ok' WHERE id = ?",
                (_now(), json.dumps(RESULT), call_id),
            )
        return time.perf_counter() - start
    finally:
        conn.close()


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        raw = N_CALLS / raw_calls(Path(tmp) / "raw.db")
        store = N_CALLS / store_calls(Path(tmp) / "nini.db")

    print(f"store: {N_CALLS:,} tool calls (start + finish), fresh SQLite file, WAL, synchronous=NORMAL")
    print(f"  baseline: plain sqlite3, autocommit INSERT + UPDATE   {raw:10,.0f} calls/s")
    print(f"  HistoryStore start_tool_call + finish_tool_call        {store:10,.0f} calls/s  "
          f"{store / raw:5.2f}x baseline   goal >= {GOAL_PER_S:,}/s: {'met' if store >= GOAL_PER_S else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
