"""Opening the store: migrations, SQLite settings, and databases it must refuse."""

from __future__ import annotations

import hashlib
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
import sqlalchemy as sa

from nini.errors import ErrorCode, NiniError
from nini.history import schema
from nini.history.store import HistoryStore
from tests.history.conftest import run_together

TABLES = {
    "sessions",
    "messages",
    "tool_calls",
    "executions",
    "artifacts",
    "datasets",
    "events",
    "schema_version",
    "user_preferences",
    "skill_run_feedback",
    "session_uids",
    "session_context",
}


def versions(db_url: str) -> list[int]:
    return [row[0] for row in execute(db_url, "SELECT version FROM schema_version")]


def execute(db_url: str, sql: str, **parameters: object) -> list[tuple]:
    """Run ``sql`` in a transaction of its own, beside the store; the rows it returned."""
    engine = sa.create_engine(db_url)
    try:
        with engine.begin() as conn:
            result = conn.execute(sa.text(sql), parameters)
            return [tuple(row) for row in result] if result.returns_rows else []
    finally:
        engine.dispose()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_opening_a_new_database_creates_every_table(db_url: str) -> None:
    store = HistoryStore(db_url)
    store.close()

    assert set(sa.inspect(sa.create_engine(db_url)).get_table_names()) == TABLES
    assert versions(db_url) == [schema.SCHEMA_VERSION]


def test_reopening_keeps_the_data_and_runs_no_migration_again(db_url: str) -> None:
    store = HistoryStore(db_url)
    session = store.create_session(title="kept")
    store.close()

    reopened = HistoryStore(db_url)
    try:
        assert reopened.get_session(session["id"])["title"] == "kept"
    finally:
        reopened.close()
    assert versions(db_url) == [schema.SCHEMA_VERSION]


@pytest.mark.sqlite_only
def test_the_file_is_in_wal_mode_with_the_pragmas_set_on_every_connection(db_path: Path, store: HistoryStore) -> None:
    with closing(sqlite3.connect(db_path)) as raw:  # journal_mode is stored in the file itself
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 5000


def test_a_newer_schema_is_refused_and_the_database_left_untouched(backend: str, db_path: Path, db_url: str) -> None:
    HistoryStore(db_url).close()
    execute(db_url, "UPDATE schema_version SET version = :v", v=schema.SCHEMA_VERSION + 1)
    before = digest(db_path) if backend == "sqlite" else None
    tables = set(sa.inspect(sa.create_engine(db_url)).get_table_names())

    with pytest.raises(NiniError) as caught:
        HistoryStore(db_url)

    assert caught.value.code is ErrorCode.DB_ERROR
    assert f"schema version {schema.SCHEMA_VERSION + 1}" in caught.value.message
    assert "upgrade nini" in caught.value.message
    if before is not None:
        assert digest(db_path) == before
    assert set(sa.inspect(sa.create_engine(db_url)).get_table_names()) == tables
    assert versions(db_url) == [schema.SCHEMA_VERSION + 1]


def test_a_failing_migration_step_is_rolled_back_entirely(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    HistoryStore(db_url).close()

    def broken_step(conn: sa.Connection) -> None:
        conn.exec_driver_sql("CREATE TABLE half_done (x INTEGER)")
        raise RuntimeError("step failed")

    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, broken_step])
    monkeypatch.setattr(schema, "SCHEMA_VERSION", len(schema.MIGRATIONS))
    with pytest.raises(RuntimeError, match="step failed"):
        HistoryStore(db_url)

    assert "half_done" not in sa.inspect(sa.create_engine(db_url)).get_table_names()
    assert versions(db_url) == [len(schema.MIGRATIONS) - 1]


def test_two_stores_opening_a_fresh_database_migrate_it_once(db_url: str) -> None:
    first, second = HistoryStore(db_url), HistoryStore(db_url)
    first.close()
    second.close()
    assert versions(db_url) == [schema.SCHEMA_VERSION]


OPEN_AT_ONCE = """
import sys
from nini.history.store import HistoryStore

print("ready", flush=True)
sys.stdin.readline()  # the go (run_together): all open at the same moment
store = HistoryStore(sys.argv[1])
print(store.create_session()["id"])
store.close()
"""


@pytest.mark.slow
def test_processes_opening_a_fresh_database_at_once_migrate_it_once(db_url: str) -> None:
    outcomes = run_together(OPEN_AT_ONCE, [[db_url]] * 4, 120)

    assert [code for code, _, _ in outcomes] == [0] * 4, [err for _, _, err in outcomes]
    assert versions(db_url) == [schema.SCHEMA_VERSION]
    assert len({out.strip() for _, out, _ in outcomes}) == 4


def test_a_database_of_the_previous_version_gets_session_owners(db_url: str) -> None:
    store = HistoryStore(db_url)
    kept = store.create_session(title="from before owners")["id"]
    store.close()
    execute(db_url, "DROP INDEX ix_sessions_owner_created_at")
    execute(db_url, "ALTER TABLE sessions DROP COLUMN owner")
    execute(db_url, "UPDATE schema_version SET version = 3")

    store = HistoryStore(db_url)
    try:
        mine = store.create_session(title="mine", owner="alice")["id"]
        assert store.get_session(kept)["owner"] is None
        assert [s["id"] for s in store.list_sessions(owner="alice")] == [mine]
        assert {s["id"] for s in store.list_sessions()} == {kept, mine}
    finally:
        store.close()
    assert versions(db_url) == [schema.SCHEMA_VERSION]


def test_a_directory_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    with pytest.raises(NiniError) as caught:
        HistoryStore(f"sqlite:///{tmp_path}")
    assert caught.value.code is ErrorCode.DB_ERROR
    assert "is a directory" in caught.value.message


NOT_A_HISTORY = {
    "notes": b"these are my notes, not a database\n" * 50,
    "empty": b"",  # a disk that filled up, or a copy that failed: never silently a new history
    "truncated header": b"SQLite format",
    "header then garbage": b"SQLite format 3\x00" + b"\xff" * 8000,
}


@pytest.mark.sqlite_only
@pytest.mark.parametrize("content", NOT_A_HISTORY.values(), ids=NOT_A_HISTORY.keys())
def test_a_file_that_is_not_a_readable_database_is_refused_and_kept(db_path: Path, db_url: str, content: bytes) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(content)

    with pytest.raises(NiniError) as caught:
        HistoryStore(db_url)

    assert caught.value.code is ErrorCode.DB_ERROR
    assert "move it aside to start a new history, or restore a backup" in caught.value.message
    assert str(db_path.parent) not in caught.value.message and str(db_path.parent) not in str(caught.value.details)
    assert db_path.read_bytes() == content


def test_the_refused_file_is_named_relative_to_nini_home(settings) -> None:  # noqa: ANN001 - Settings fixture
    settings.home.mkdir(parents=True, exist_ok=True)
    (settings.home / "nini.db").write_bytes(b"")
    with pytest.raises(NiniError) as caught:
        HistoryStore.from_settings(settings)
    assert "$NINI_HOME/nini.db is empty" in caught.value.message
    assert caught.value.details == {"path": "$NINI_HOME/nini.db"}


@pytest.mark.sqlite_only
def test_a_missing_file_is_created_whole(db_path: Path, db_url: str) -> None:
    HistoryStore(db_url).close()
    assert db_path.read_bytes().startswith(b"SQLite format 3\x00")
    assert [p.name for p in db_path.parent.iterdir() if p.name.endswith(".new")] == []


def test_from_settings_uses_the_file_in_nini_home(settings) -> None:  # noqa: ANN001 - Settings fixture
    store = HistoryStore.from_settings(settings)
    try:
        store.create_session()
    finally:
        store.close()
    assert (settings.home / "nini.db").is_file()


def test_an_unusable_url_is_a_db_error() -> None:
    with pytest.raises(NiniError) as caught:
        HistoryStore("nosuchdialect://nowhere/db")
    assert caught.value.code is ErrorCode.DB_ERROR
