"""A corpus of damaged history databases (issue 36): each ``DAMAGES`` entry damages a copy of a real
history in a fresh NINI_HOME, the way disks, people and crashes do.

``history(home)`` writes the history that gets damaged: sessions with tool calls, executions,
messages and events, with non-ASCII text (so flipped bits can make text that is not UTF-8).
"""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

from nini.history.store import HistoryStore

PAGE = 4096
TITLE = "damage-probe-title"
METADATA = '{"damage-probe": 1}'
SEED = 2000


def history(home: Path, steps: int = 120) -> Path:
    """A real history in ``home``: the database file, all of it in the file (no WAL left)."""
    home.mkdir(parents=True, exist_ok=True)
    store = HistoryStore(f"sqlite:///{home / 'nini.db'}", home=home)
    try:
        session_id = store.create_session(title=TITLE, metadata={"damage-probe": 1})["id"]
        for n in range(steps):
            store.add_message(session_id, "user", f"第 {n} 步: é ü " * 20)
            call = store.start_tool_call(session_id, "run_code", {"code": f"x = {n}"})
            store.finish_tool_call(
                call["id"],
                status="succeeded",
                result={"n": n, "text": "ünïcode"},
                execution={"language": "python", "code": f"x = {n}", "status": "succeeded", "stdout": "o" * 300},
            )
            store.append_event(session_id, "tool_result", {"n": n, "text": "é" * 40})
    finally:
        store.close()  # the last connection: SQLite moves the WAL into the file and removes it
    return home / "nini.db"


def _cut_to_half(db: Path) -> None:
    os.truncate(db, db.stat().st_size // PAGE // 2 * PAGE)


def _cut_mid_page(db: Path) -> None:
    os.truncate(db, db.stat().st_size // 2 + 1234)


def _header_garbage(db: Path) -> None:
    with db.open("r+b") as file:
        file.write(random.Random(SEED).randbytes(100))


def _bit_flips(db: Path) -> None:
    """2,000 random bits flipped past the first page (a fixed seed: the same file every run)."""
    rng, data = random.Random(SEED), bytearray(db.read_bytes())
    for _ in range(2000):
        data[rng.randrange(PAGE, len(data))] ^= 1 << rng.randrange(8)
    db.write_bytes(bytes(data))


def _page_of_zeros(db: Path) -> None:
    """The first page of the messages table zeroed: a page a session's listing reads, but ``sessions
    list`` does not (the middle of the file was, until new indexes moved what lies there)."""
    with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        (root,) = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = 'messages'"
        ).fetchone()
    with db.open("r+b") as file:
        file.seek((root - 1) * PAGE)
        file.write(bytes(PAGE))


def _wrong_page_size(db: Path) -> None:
    with db.open("r+b") as file:
        file.seek(16)
        file.write(b"\x03\x00")  # 768: not a power of two


def _directory(db: Path) -> None:
    db.unlink()
    db.mkdir()


def _symlink_loop(db: Path) -> None:
    db.unlink()
    db.symlink_to(db.name)


def _unreadable(db: Path) -> None:
    db.chmod(0)


def _wal_garbage(db: Path) -> None:
    Path(f"{db}-wal").write_bytes(random.Random(SEED).randbytes(3 * PAGE))


def _shm_garbage(db: Path) -> None:
    Path(f"{db}-shm").write_bytes(random.Random(SEED).randbytes(8 * PAGE))


def _newer_schema(db: Path) -> None:
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE schema_version SET version = version + 100")


def _missing_table(db: Path) -> None:
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("DROP TABLE events")


def _replace(db: Path, old: bytes, new: bytes) -> None:
    data = db.read_bytes()
    assert data.count(old) >= 1, old
    db.write_bytes(data.replace(old, new, 1))


def _schema_not_utf8(db: Path) -> None:
    """A name in the schema's SQL that is not UTF-8: SQLite's error message quotes it, and Python's
    sqlite3 could not decode that message (the "INTERNAL: UnicodeDecodeError" of 2,000 bit flips)."""
    _replace(db, b"CREATE INDEX ix_sessions_created_at", b"CREATE INDEX \xffx_sessions_created_at")


def _title_not_utf8(db: Path) -> None:
    _replace(db, TITLE.encode(), b"\xff" + TITLE.encode()[1:])


def _json_not_json(db: Path) -> None:
    _replace(db, METADATA.encode(), b"{" + METADATA.encode()[1:-1] + b"!")


def _garbage(db: Path) -> None:
    db.write_bytes(random.Random(SEED).randbytes(50_000))


DAMAGES: dict[str, Callable[[Path], None]] = {
    "empty": lambda db: db.write_bytes(b""),
    "cut to half": _cut_to_half,
    "cut mid-page": _cut_mid_page,
    "header garbage": _header_garbage,
    "2000 bit flips": _bit_flips,
    "a page of zeros": _page_of_zeros,
    "wrong page size": _wrong_page_size,
    "a directory": _directory,
    "a symlink loop": _symlink_loop,
    "unreadable": _unreadable,
    "WAL garbage": _wal_garbage,
    "SHM garbage": _shm_garbage,
    "newer schema": _newer_schema,
    "a table missing": _missing_table,
    "schema names not UTF-8": _schema_not_utf8,
    "a title not UTF-8": _title_not_utf8,
    "JSON that is not JSON": _json_not_json,
    "garbage": _garbage,
}
HARMLESS = {"SHM garbage"}
"""SQLite checks its shared-memory index and rebuilds it: the history is whole, nothing to tell."""
UNSEEN_BY_LIST = {"a page of zeros"}
"""Damage in pages ``sessions list`` does not read: it lists (correctly), doctor's integrity_check finds it."""
UNSEEN_BY_INTEGRITY_CHECK = {"a title not UTF-8", "JSON that is not JSON"}
"""Values SQLite stores well-formed that nini cannot read: integrity_check passes; the reads that meet them say so."""
NEEDS_NO_DAC_OVERRIDE = {"unreadable"}
"""root reads a file without read permission: shown only by a process without CAP_DAC_OVERRIDE."""


def damaged_home(template: Path, home: Path, damage: str) -> Path:
    """A copy of the NINI_HOME ``template`` (made by ``history``) in ``home``, its database damaged."""
    shutil.copytree(template, home)
    DAMAGES[damage](home / "nini.db")
    return home
