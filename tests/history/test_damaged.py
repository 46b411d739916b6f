"""A damaged history database through the store API (issue 36, item 4): every damage of the corpus
(``tests/history/damages.py``) is DB_ERROR naming ``$NINI_HOME/nini.db`` and what to do; a file
known damaged takes no more writes; a WAL removed under a running store is told before anything
more is acknowledged, and what was acknowledged before survives a SIGKILL."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from nini.errors import ErrorCode, NiniError
from nini.history.health import database_checks
from nini.history.store import HistoryStore
from tests.conftest import REPO_ROOT
from tests.history.damages import DAMAGES, HARMLESS, NEEDS_NO_DAC_OVERRIDE, UNSEEN_BY_LIST, damaged_home, history
from tests.timeouts import timeout

SHOWN = "$NINI_HOME/nini.db"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("template") / "home"
    history(home)
    return home


def open_and_list(home: Path) -> list[dict]:
    store = HistoryStore(f"sqlite:///{home / 'nini.db'}", home=home)
    try:
        sessions = store.list_sessions()
        for session in sessions:
            store.list_messages(session["id"])
            store.list_tool_calls(session["id"])
            store.list_events(session["id"])
        return sessions
    finally:
        store.close()


@pytest.mark.parametrize("damage", sorted(set(DAMAGES) - NEEDS_NO_DAC_OVERRIDE - HARMLESS - UNSEEN_BY_LIST))
def test_each_damage_is_a_db_error_naming_the_file(template: Path, tmp_path: Path, damage: str) -> None:
    home = damaged_home(template, tmp_path / "home", damage)
    with pytest.raises(NiniError) as caught:
        open_and_list(home)
    error = caught.value
    assert error.code is ErrorCode.DB_ERROR, error
    assert SHOWN in error.message and str(tmp_path) not in error.message, error.message
    assert any(words in error.message for words in ("restore a backup", "upgrade nini", "NINI_DATABASE_URL")), (
        error.message
    )


def test_harmless_shared_memory_garbage_leaves_the_history_whole(template: Path, tmp_path: Path) -> None:
    home = damaged_home(template, tmp_path / "home", "SHM garbage")
    assert [s["title"] for s in open_and_list(home)] == ["damage-probe-title"]


def test_a_page_of_zeros_is_a_db_error_where_it_is_read(template: Path, tmp_path: Path) -> None:
    home = damaged_home(template, tmp_path / "home", "a page of zeros")
    with pytest.raises(NiniError) as caught:
        open_and_list(home)
    assert caught.value.code is ErrorCode.DB_ERROR and SHOWN in caught.value.message


def test_text_that_is_not_utf8_names_the_file_not_the_row(template: Path, tmp_path: Path) -> None:
    home = damaged_home(template, tmp_path / "home", "a title not UTF-8")
    with pytest.raises(NiniError) as caught:
        open_and_list(home)
    assert "not UTF-8" in caught.value.message and "probe-title" not in caught.value.message


def test_a_file_seen_damaged_takes_no_more_writes_until_a_backup_replaces_it(template: Path, tmp_path: Path) -> None:
    home = shutil.copytree(template, tmp_path / "home")
    db = home / "nini.db"
    backup = shutil.copy(db, tmp_path / "backup.db")
    store = HistoryStore(f"sqlite:///{db}", home=home)
    try:
        session_id = store.list_sessions()[0]["id"]
        data = db.read_bytes()  # the title's bytes damaged under the running store
        db.write_bytes(data.replace(b"damage-probe-title", b"\xffamage-probe-title", 1))
        store.engine.dispose()  # the damaged page is read from the file, not from a connection's cache
        with pytest.raises(NiniError, match="not UTF-8"):
            store.list_sessions()
        before = db.read_bytes()
        with pytest.raises(NiniError) as refused:
            store.add_message(session_id, "user", "into a damaged file")
        assert refused.value.code is ErrorCode.DB_ERROR and "nini writes nothing more into it" in refused.value.message
        assert SHOWN in refused.value.message
        with pytest.raises(NiniError, match="nini writes nothing more"):
            store.create_session(title="another")
        assert db.read_bytes() == before  # not attempted

        os.replace(backup, db)  # a backup put back, nini still running
        for _attempt in range(2):  # the write that finds the new file reopens it; at most one fails
            try:
                store.add_message(session_id, "user", "after the backup")
                break
            except NiniError as exc:
                assert "replaced while nini was running" in exc.message, exc.message
        else:
            raise AssertionError("writes did not resume on the restored file")
        assert store.list_messages(session_id)[-1]["content"] == "after the backup"
    finally:
        store.close()


WAL_REMOVED = """
import os, signal, sys
from pathlib import Path
from nini.errors import NiniError
from nini.history.store import HistoryStore

home = Path(sys.argv[1])
store = HistoryStore(f"sqlite:///{home / 'nini.db'}", home=home)
session_id = store.create_session(title="wal")["id"]
for n in range(31):
    store.add_message(session_id, "user", f"acknowledged {n}")
os.unlink(home / "nini.db-wal")
try:
    store.add_message(session_id, "user", "after the WAL went")
    print("ACKNOWLEDGED", flush=True)
except NiniError as exc:
    print(exc.code.value, exc.message, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_wal_removed_under_a_running_store_is_told_and_no_acknowledged_write_is_lost(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = subprocess.run(
        [sys.executable, "-c", WAL_REMOVED, str(home)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout(120),
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert done.stdout.startswith("DB_ERROR"), done.stdout + done.stderr
    assert "write-ahead log $NINI_HOME/nini.db-wal was removed or replaced" in done.stdout
    assert str(tmp_path) not in done.stdout

    store = HistoryStore(f"sqlite:///{home / 'nini.db'}", home=home)
    try:
        [session] = store.list_sessions()
        stored = [m["content"] for m in store.list_messages(session["id"])]
        # every acknowledged write is there; the refused one may be too (it was committed before the check)
        assert stored[:31] == [f"acknowledged {n}" for n in range(31)] and stored[31:] in ([], ["after the WAL went"])
    finally:
        store.close()


def test_another_process_meeting_the_removed_wal_gets_the_file_named(template: Path, tmp_path: Path) -> None:
    """The shared memory still counts frames the deleted WAL held: SQLite's "disk I/O error", told."""
    home = shutil.copytree(template, tmp_path / "home")
    holder = HistoryStore(f"sqlite:///{home / 'nini.db'}", home=home)
    try:
        session_id = holder.list_sessions()[0]["id"]
        holder.add_message(session_id, "user", "in the WAL only")
        os.unlink(home / "nini.db-wal")
        with pytest.raises(NiniError) as caught:
            open_and_list(home)
        assert caught.value.code is ErrorCode.DB_ERROR and "nini.db-wal was removed" in caught.value.message
        assert "disk I/O error" not in caught.value.message
        [(name, ok, detail)] = database_checks(f"sqlite:///{home / 'nini.db'}", home)  # nini doctor's
        assert name == "history database" and ok is False and "nini.db-wal was removed" in detail, detail
    finally:
        holder.close()
