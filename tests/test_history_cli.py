"""The history database through the real ``nini`` CLI: processes racing to create one session, and
database files that must not be taken for a new, empty history."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nini.history.store import HistoryStore
from tests.timeouts import timeout

NINI = Path(sys.executable).with_name("nini")
PROCESSES = 8


def nini(*args: str) -> subprocess.Popen[str]:
    """``nini args...`` started in its own process (NINI_HOME comes from the test's environment)."""
    return subprocess.Popen(
        [str(NINI), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )


def finished(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    stdout, stderr = process.communicate(timeout=timeout(180))
    return process.returncode, stdout, stderr


@pytest.mark.slow
def test_processes_creating_one_new_session_at_once_all_succeed_and_are_all_recorded(
    nini_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The session's kernels share its sandbox user, whose process limit is sized for one kernel.
    monkeypatch.setenv("NINI_EXECUTION__MAX_PROCESSES", str(64 * PROCESSES))
    scripts = [tmp_path / f"step{n}.py" for n in range(PROCESSES)]
    for n, script in enumerate(scripts):
        script.write_text(f"result = {n}\n")
    # no nini.db yet either: the processes also race to create the database itself
    runs = [nini("run-code", str(script), "--session", "Gs", "--new", "--json") for script in scripts]
    outcomes = [finished(run) for run in runs]

    assert [rc for rc, _out, _err in outcomes] == [0] * PROCESSES, [err for _rc, _out, err in outcomes]
    assert sorted(json.loads(out)["result"]["result"] for _rc, out, _err in outcomes) == list(range(PROCESSES))
    store = HistoryStore(f"sqlite:///{nini_home / 'nini.db'}")
    try:
        calls = store.list_tool_calls("Gs")
        assert len(store.list_sessions()) == 1
    finally:
        store.close()
    assert [c["status"] for c in calls] == ["succeeded"] * PROCESSES


BROKEN = {
    "empty": b"",
    "garbage": b"not a database at all\n" * 100,
    "header then garbage": b"SQLite format 3\x00" + b"\xff" * 8000,
}


@pytest.mark.parametrize("content", BROKEN.values(), ids=BROKEN.keys())
def test_a_broken_database_file_is_an_error_naming_it_and_doctor_fails(nini_home: Path, content: bytes) -> None:
    nini_home.mkdir(parents=True)
    (nini_home / "nini.db").write_bytes(content)

    rc, _out, stderr = finished(nini("sessions", "list"))
    assert rc == 1 and "DB_ERROR" in stderr and "$NINI_HOME/nini.db" in stderr, stderr
    assert "move it aside to start a new history, or restore a backup" in stderr and str(nini_home) not in stderr

    rc, out, _err = finished(nini("doctor", "--json"))
    check = {c["name"]: c for c in json.loads(out)}["history database"]
    assert rc == 1 and check["ok"] is False and check["required"] is True
    assert "$NINI_HOME/nini.db" in check["detail"] and str(nini_home) not in check["detail"]
    assert (nini_home / "nini.db").read_bytes() == content  # kept as it was, for the user to decide


def test_doctor_checks_a_good_database_and_a_damaged_one(nini_home: Path) -> None:
    store = HistoryStore(f"sqlite:///{nini_home / 'nini.db'}")
    session_id = store.create_session()["id"]
    for n in range(200):
        store.add_message(session_id, "user", f"message {n} " * 50)
    store.close()

    rc, out, _err = finished(nini("doctor", "--json"))
    check = {c["name"]: c for c in json.loads(out)}["history database"]
    assert check["ok"] is True and "schema version" in check["detail"] and "integrity_check ok" in check["detail"]

    with (nini_home / "nini.db").open("r+b") as file:  # a page in the middle overwritten: a damaged disk
        file.seek(4096 * 5)
        file.write(b"\x0d" + b"\xa5" * 4095)
    rc, out, _err = finished(nini("doctor", "--json"))
    check = {c["name"]: c for c in json.loads(out)}["history database"]
    assert rc == 1 and check["ok"] is False and "$NINI_HOME/nini.db" in check["detail"], check
