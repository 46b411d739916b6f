"""Crashes and failing disks: orphaned calls, killed writers, read-only, full and locked databases."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import time
from contextlib import closing, contextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from nini.errors import ErrorCode, NiniError
from nini.history.store import HistoryStore
from tests.conftest import REPO_ROOT
from tests.timeouts import timeout

pytestmark = pytest.mark.skipif(os.name != "posix", reason="needs POSIX signals and pids")

SECRET = "row-content-that-must-not-leak"

CRASH_AFTER_START = """
import os, signal, sys
from nini.history.store import HistoryStore

store = HistoryStore(sys.argv[1])
call = store.start_tool_call(store.create_session()["id"], "run_code", {"code": "while True: pass"})
print(call["id"], flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""

WRITE_FOREVER = """
import sys
import time
from nini.history.store import HistoryStore

store = HistoryStore(sys.argv[1])
session_id = store.create_session()["id"]
n = 0
while True:
    call = store.start_tool_call(session_id, "run_code", {"n": n})
    execution = {"language": "python", "code": f"step({n})", "status": "succeeded", "stdout": "x" * 20000}
    store.finish_tool_call(
        call["id"], status="succeeded", result={"n": n}, execution=execution,
        artifacts=[{"name": f"chart{n}", "path": f"artifacts/chart{n}.png"}],
        datasets=[{"name": "latest", "path": "datasets/latest.parquet", "rows": n}],
    )
    n += 1
    if n == 30:
        print("writing", flush=True)
"""


def run_python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout(120)
    )


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    return finished.pid


def set_owner(db_url: str, call_id: str, owner: str) -> None:
    engine = sa.create_engine(db_url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE tool_calls SET owner = :owner WHERE id = :id"), {"owner": owner, "id": call_id})
    engine.dispose()


# orphaned tool calls


def test_a_call_left_running_by_a_killed_process_becomes_interrupted(db_url: str) -> None:
    crashed = run_python(CRASH_AFTER_START, db_url)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    call = call_after_reopening(db_url, crashed.stdout.strip())

    assert call["status"] == "interrupted" and "ended before" in call["result_summary"]
    assert call["ended_at"] is not None and call["error_code"] is None


def call_after_reopening(db_url: str, call_id: str) -> dict:
    """Tool call ``call_id`` as a new process opening the database sees it (orphans marked)."""
    store = HistoryStore(db_url)
    try:
        return store.get_tool_call(call_id)
    finally:
        store.close()


def test_a_call_owned_by_a_live_process_is_left_running(db_url: str, store: HistoryStore, session_id: str) -> None:
    mine = store.start_tool_call(session_id, "run_code", {})  # this process is alive and still running it

    other = HistoryStore(db_url)  # e.g. the CLI opening the file of a running Jupyter server
    try:
        assert other.get_tool_call(mine["id"])["status"] == "running"
    finally:
        other.close()
    assert store.finish_tool_call(mine["id"], status="succeeded")["status"] == "succeeded"


def test_only_calls_of_dead_processes_on_this_host_are_marked(
    db_path: Path, db_url: str, store: HistoryStore, session_id: str
) -> None:
    host, gone = socket.gethostname(), dead_pid()
    owners = {"dead_here": f"{host}:{gone}", "other_host": f"not-{host}:{gone}", "garbled": f"{host}:?"}
    calls = {name: store.start_tool_call(session_id, "x", {})["id"] for name in owners}
    for name, owner in owners.items():
        set_owner(db_url, calls[name], owner)

    HistoryStore(db_url).close()

    statuses = {name: store.get_tool_call(call_id)["status"] for name, call_id in calls.items()}
    assert statuses == {"dead_here": "interrupted", "other_host": "running", "garbled": "running"}


def test_a_writer_killed_at_any_moment_leaves_no_half_written_call(backend: str, db_path: Path, db_url: str) -> None:
    for _ in range(3):
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITE_FOREVER, db_url],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert writer.stdout.readline().strip() == "writing", writer.stderr.read()
            # a random moment: most of the writer's time is spent inside a transaction
            time.sleep(random.uniform(0, 0.05))
        finally:
            writer.send_signal(signal.SIGKILL)
            writer.wait()

    if backend == "sqlite":
        with closing(sqlite3.connect(db_path)) as raw:
            assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    store = HistoryStore(db_url)
    try:
        sessions = store.list_sessions()
        assert len(sessions) == 3
        for session in sessions:
            calls = store.list_tool_calls(session["id"])
            executions = store.list_executions(session["id"])
            artifacts = store.list_artifacts(session["id"])
            finished = {c["id"] for c in calls if c["status"] == "succeeded"}
            assert len(finished) >= 30
            assert {c["status"] for c in calls} <= {"succeeded", "interrupted"}
            assert len(calls) - len(finished) <= 1  # at most the call started but not finished
            assert sorted(e["tool_call_id"] for e in executions) == sorted(finished)
            assert sorted(a["execution_id"] for a in artifacts) == sorted(e["id"] for e in executions)
            assert all(e["stdout"] == "x" * 20000 for e in executions)
            latest = store.get_dataset(session["id"], "latest")
            assert latest["rows"] == len(finished) - 1 and latest["source_execution_id"] == executions[-1]["id"]
    finally:
        store.close()


# failing databases


def assert_db_error_without_content(error: NiniError, code: ErrorCode = ErrorCode.DB_ERROR) -> None:
    assert error.code is code
    assert SECRET not in str(error) and SECRET not in json.dumps(error.to_dict())
    assert "INSERT INTO" not in error.message and "UPDATE tool_calls" not in error.message  # no SQL
    assert "[SQL" not in error.message and "parameters" not in error.message


@pytest.mark.sqlite_only
def test_a_read_only_file_fails_writes_with_db_error(db_path: Path, store: HistoryStore, tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes to read-only files, so chmod cannot make one here")
    session_id = store.create_session()["id"]
    store.close()
    copy = tmp_path / "copy.db"
    shutil.copyfile(db_path, copy)
    copy.chmod(stat.S_IRUSR)

    refused_write(f"sqlite:///{copy}", session_id)


def limit_growth(store: HistoryStore) -> None:
    """From now on the database file cannot grow: SQLite answers SQLITE_FULL, as on a full disk."""

    @event.listens_for(store.engine, "connect")
    def _no_room_to_grow(dbapi_connection, _record) -> None:  # noqa: ANN001 - DBAPI objects
        pages = dbapi_connection.execute("PRAGMA page_count").fetchone()[0]
        dbapi_connection.execute(f"PRAGMA max_page_count = {pages}")

    store.engine.dispose()  # new connections get the limit


def refused_write(url: str, session_id: str) -> NiniError:
    """Open ``url``, check reads work and a write fails with a DB_ERROR that holds no content."""
    readonly = HistoryStore(url)
    try:
        assert readonly.get_session(session_id)["id"] == session_id
        with pytest.raises(NiniError) as caught:
            readonly.add_message(session_id, "user", SECRET)
    finally:
        readonly.close()
    assert_db_error_without_content(caught.value)
    return caught.value


def read_only(backend: str, db_path: Path, db_url: str) -> str:
    """``db_url`` opened so that every write is refused: a read-only SQLite URI, or a PostgreSQL
    session whose transactions are read-only (as on a hot standby)."""
    if backend == "sqlite":
        return f"sqlite:///file:{db_path}?mode=ro&uri=true"
    return f"{db_url}?options=-c%20default_transaction_read_only%3Don"


def test_a_database_opened_read_only_fails_writes_with_db_error(
    backend: str, db_path: Path, db_url: str, store: HistoryStore
) -> None:
    session_id = store.create_session()["id"]

    error = refused_write(read_only(backend, db_path, db_url), session_id)
    assert "readonly" in error.message or "read-only" in error.message


@pytest.mark.sqlite_only  # SQLite's max_page_count stands in for a full disk; PostgreSQL has no such cap
def test_a_full_disk_fails_the_write_with_db_error_and_keeps_the_rest(store: HistoryStore, session_id: str) -> None:
    limit_growth(store)

    with pytest.raises(NiniError) as caught:
        store.add_message(session_id, "user", SECRET * 10000)

    assert_db_error_without_content(
        caught.value, ErrorCode.NO_SPACE
    )  # SQLITE_FULL: one code for a full disk (issue 36)
    assert "full" in caught.value.message and not re.search(r"(^|\s)/\w", caught.value.message)  # no host path
    assert store.list_messages(session_id) == []
    assert store.get_session(session_id)["id"] == session_id


def hold_the_write_lock(backend: str, db_path: Path, db_url: str):  # noqa: ANN201 - a context manager
    """Another process's long write: SQLite's write lock, or a PostgreSQL lock on the messages table."""
    if backend == "sqlite":
        other_writer = sqlite3.connect(db_path, isolation_level=None)
        other_writer.execute("BEGIN IMMEDIATE")
    else:
        import psycopg

        other_writer = psycopg.connect(sa.make_url(db_url).set(drivername="postgresql").render_as_string(False))
        other_writer.execute("LOCK TABLE messages IN EXCLUSIVE MODE")
    try:
        yield
    finally:
        other_writer.rollback() if backend != "sqlite" else other_writer.execute("ROLLBACK")
        other_writer.close()


def test_a_database_locked_too_long_is_a_db_error(backend: str, db_path: Path, db_url: str, session_id: str) -> None:
    impatient = HistoryStore(db_url, busy_timeout_ms=50)
    with contextmanager(hold_the_write_lock)(backend, db_path, db_url):
        with pytest.raises(NiniError) as caught:
            impatient.add_message(session_id, "user", SECRET)
        assert impatient.list_messages(session_id) == []  # readers are not blocked
    try:
        assert_db_error_without_content(caught.value)
        assert "lock" in caught.value.message
        assert impatient.add_message(session_id, "user", "now it works")["content"] == "now it works"
    finally:
        impatient.close()


@pytest.mark.sqlite_only
def test_a_call_whose_record_does_not_fit_ends_failed_with_db_error(store: HistoryStore, session_id: str) -> None:
    call = store.start_tool_call(session_id, "run_code", {"code": "big()"})
    limit_growth(store)

    with pytest.raises(NiniError) as caught:
        store.finish_tool_call(
            call["id"],
            status="succeeded",
            result={"stdout": SECRET * 10000},
            execution={"language": "python", "code": "big()", "status": "succeeded"},
        )

    assert_db_error_without_content(caught.value, ErrorCode.NO_SPACE)  # SQLITE_FULL (issue 36)
    ended = store.get_tool_call(call["id"])
    assert ended["status"] == "failed" and ended["error_code"] == "NO_SPACE" and ended["ended_at"]
    assert ended["result"]["error"]["code"] == "NO_SPACE" and "full" in ended["result"]["error"]["message"]
    assert SECRET not in json.dumps(ended) and store.list_executions(session_id) == []


@pytest.mark.sqlite_only
def test_a_call_whose_end_cannot_be_written_at_all_is_interrupted_at_the_next_open(db_url: str) -> None:
    crashed = run_python(FULL_AT_THE_END, db_url)
    assert crashed.returncode == 1 and "DB_ERROR" in crashed.stderr, crashed.stderr
    call = call_after_reopening(db_url, crashed.stdout.strip())
    assert call["status"] == "interrupted" and "ended before" in call["result_summary"]


FULL_AT_THE_END = """
import sys
from sqlalchemy import event
from nini.history.store import HistoryStore

store = HistoryStore(sys.argv[1])
call = store.start_tool_call(store.create_session()["id"], "run_code", {"code": "x"})
print(call["id"], flush=True)

@event.listens_for(store.engine, "connect")
def _refuse_writes(dbapi_connection, _record):  # every write fails from here on, the minimal end too
    dbapi_connection.execute("PRAGMA query_only = ON")

store.engine.dispose()
try:
    store.finish_tool_call(call["id"], status="succeeded", result={"n": 1})
except Exception as exc:
    sys.exit(f"{type(exc).__name__}: {exc}")
"""
