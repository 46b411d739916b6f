"""The damaged, read-only and full history database through the real ``nini`` CLI (issue 36, item 4):
``nini sessions list`` is DB_ERROR naming ``$NINI_HOME/nini.db`` (never INTERNAL, never a
traceback), and ``nini doctor`` fails its history database check (integrity_check, a write probe,
read-only file, folder or mount, a full disk) and never crashes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nini.history.health import database_checks as database_checks_of
from tests.history.damages import (
    DAMAGES,
    HARMLESS,
    NEEDS_NO_DAC_OVERRIDE,
    UNSEEN_BY_INTEGRITY_CHECK,
    UNSEEN_BY_LIST,
    damaged_home,
    history,
)
from tests.timeouts import timeout

NINI = str(Path(sys.executable).with_name("nini"))
SHOWN = "$NINI_HOME/nini.db"
BWRAP = shutil.which("bwrap")
# root reads and writes whatever the permissions say; without these capabilities it obeys them
NO_DAC = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"] if os.geteuid() == 0 else []


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("template") / "home"
    history(home)
    return home


def nini(*args: str, prefix: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(prefix or []), NINI, *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=timeout(300),
    )


def database_checks(done: subprocess.CompletedProcess[str]) -> dict[str, dict]:
    assert "Traceback" not in done.stderr and "INTERNAL" not in done.stdout + done.stderr, done.stderr
    return {c["name"]: c for c in json.loads(done.stdout) if c["name"].startswith("history database")}


def assert_named_db_error(done: subprocess.CompletedProcess[str], home: Path) -> None:
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stderr.startswith("error [DB_ERROR]: ") and SHOWN in done.stderr, done.stderr
    assert "INTERNAL" not in done.stderr and "Traceback" not in done.stderr and str(home) not in done.stderr


@pytest.mark.parametrize("damage", sorted(set(DAMAGES) - HARMLESS))
def test_each_damage_is_a_db_error_in_the_cli_and_a_failure_of_the_doctor_check(
    template: Path, nini_home: Path, damage: str
) -> None:
    damaged_home(template, nini_home, damage)
    prefix = NO_DAC if damage in NEEDS_NO_DAC_OVERRIDE else None
    listed = nini("sessions", "list", prefix=prefix)
    if damage in UNSEEN_BY_LIST:  # its pages are not read by the list: a list, or a DB_ERROR naming the file
        assert listed.returncode == 0 or SHOWN in listed.stderr, listed.stderr
    else:
        assert_named_db_error(listed, nini_home)
    if damage in UNSEEN_BY_INTEGRITY_CHECK or damage in NEEDS_NO_DAC_OVERRIDE:
        return  # the first: SQLite finds nothing wrong; the second: nini doctor below
    # doctor's own check, in process (a whole `nini doctor` takes seconds: the tests below run it)
    [(name, ok, detail), *_] = database_checks_of(f"sqlite:///{nini_home / 'nini.db'}", nini_home)
    assert name == "history database" and ok is False and SHOWN in detail and str(nini_home) not in detail, detail


@pytest.mark.parametrize("damage", ["2000 bit flips", "unreadable"])
def test_nini_doctor_fails_a_damaged_database_and_does_not_crash(template: Path, nini_home: Path, damage: str) -> None:
    damaged_home(template, nini_home, damage)
    doctor = nini("doctor", "--json", prefix=NO_DAC if damage in NEEDS_NO_DAC_OVERRIDE else None)
    check = database_checks(doctor)["history database"]
    assert doctor.returncode == 1 and check["ok"] is False and check["required"] is True, check
    assert SHOWN in check["detail"] and str(nini_home) not in check["detail"], check


def test_doctor_reads_a_good_database_whole_and_its_write_probe_changes_nothing(
    template: Path, nini_home: Path
) -> None:
    shutil.copytree(template, nini_home)
    before = (nini_home / "nini.db").read_bytes()
    checks = database_checks(nini("doctor", "--json"))
    assert checks["history database"]["ok"] and "integrity_check ok" in checks["history database"]["detail"]
    assert checks["history database writes"]["ok"], checks
    assert (nini_home / "nini.db").read_bytes() == before
    assert not Path(f"{nini_home / 'nini.db'}-wal").exists() or Path(f"{nini_home / 'nini.db'}-wal").stat().st_size == 0


@pytest.mark.skipif(not NO_DAC or not shutil.which("setpriv"), reason="needs root's capabilities to drop (setpriv)")
def test_doctor_fails_a_read_only_database_file(template: Path, nini_home: Path) -> None:
    shutil.copytree(template, nini_home)
    (nini_home / "nini.db").chmod(0o444)
    checks = database_checks(nini("doctor", "--json", prefix=NO_DAC))
    writes = checks["history database writes"]
    assert writes["ok"] is False and writes["required"] is True and "is read-only" in writes["detail"], checks


def in_sandbox(nini_home: Path, script: str, *mounts: str) -> subprocess.CompletedProcess[str]:
    """``script`` (sh) in bubblewrap with the host's root and ``mounts`` (bwrap options)."""
    command = [BWRAP, "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *mounts, "sh", "-c", script]
    return subprocess.run(command, capture_output=True, text=True, env=dict(os.environ), timeout=timeout(300))


@pytest.mark.skipif(BWRAP is None, reason="needs bubblewrap for a read-only mount")
def test_doctor_fails_a_database_on_a_read_only_mount_and_writes_say_so(template: Path, nini_home: Path) -> None:
    shutil.copytree(template, nini_home)
    done = in_sandbox(nini_home, f"{NINI} doctor --json", "--ro-bind", str(nini_home), str(nini_home))
    checks = database_checks(done)  # SQLite may not even read a WAL database whose index it cannot make
    failed = [c for c in checks.values() if not c["ok"]]
    assert done.returncode == 1 and failed and "read-only file system" in failed[0]["detail"], checks

    done = in_sandbox(
        nini_home,
        f"{NINI} sessions new --title x || {NINI} run-code - --new --session ro < /dev/null",
        "--ro-bind",
        str(nini_home),
        str(nini_home),
    )
    assert "INTERNAL" not in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.skipif(BWRAP is None, reason="needs bubblewrap for a small tmpfs")
def test_doctor_fails_a_database_on_a_full_disk(template: Path, nini_home: Path, tmp_path: Path) -> None:
    shutil.copytree(template, nini_home)
    full = tmp_path / "full"
    full.mkdir()
    script = (
        f"cp {nini_home / 'nini.db'} {full}/nini.db && (dd if=/dev/zero of={full}/fill bs=64k 2>/dev/null; true) "
        f"&& NINI_HOME={full} {NINI} doctor --json"
    )
    done = in_sandbox(nini_home, script, "--size", str(8 << 20), "--tmpfs", str(full))
    checks = database_checks(done)  # SQLite may not even make its WAL to read: then reading fails too
    failed = [c for c in checks.values() if not c["ok"]]
    assert done.returncode == 1 and failed and failed[0]["required"], checks
    assert "full" in failed[0]["detail"] and SHOWN in failed[0]["detail"], checks


def migrated(url: str) -> str:
    from nini.history.store import HistoryStore

    HistoryStore(url).close()
    return url


def test_doctor_on_postgresql_connects_and_probes_a_write_that_changes_nothing(pg_cluster: Any) -> None:
    import sqlalchemy as sa

    url = migrated(pg_cluster.create_database())
    [read, writes] = database_checks_of(url)
    assert read[1] is True and "127.0.0.1" in read[2] and "schema version" in read[2], read
    assert writes[1] is True and "rolled back" in writes[2], writes
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM schema_version WHERE version = -1").scalar() == 0
    engine.dispose()


def test_doctor_on_postgresql_fails_a_database_that_refuses_writes(pg_cluster: Any) -> None:
    import psycopg

    url = migrated(pg_cluster.create_database())
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(pg_cluster.conninfo(), autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
    [read, writes] = database_checks_of(url)
    assert read[1] is True, read
    assert (
        writes[1] is False
        and "read-only transaction" in writes[2]
        and f"127.0.0.1:{pg_cluster.port}/{name}" in writes[2]
    )


def test_doctor_on_postgresql_names_a_server_it_cannot_reach() -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    [(name, ok, detail)] = database_checks_of(f"postgresql+psycopg://nini:secret@127.0.0.1:{port}/history")
    assert name == "history database" and ok is False and f"127.0.0.1:{port}/history" in detail, detail
    assert "secret" not in detail
