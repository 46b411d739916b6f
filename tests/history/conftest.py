"""Fixtures for the history store: every test that takes ``db_url`` (or ``store``) runs twice, on
a real SQLite file in the test's temp dir and on a fresh database of a real PostgreSQL server.
A test about the SQLite file itself is marked ``sqlite_only`` and runs once."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from nini.history.store import HistoryStore
from tests.conftest import REPO_ROOT
from tests.timeouts import timeout

BACKENDS = ("sqlite", "postgresql")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sqlite_only: a test of the SQLite file itself; runs on SQLite only")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        only_sqlite = metafunc.definition.get_closest_marker("sqlite_only") is not None
        metafunc.parametrize("backend", BACKENDS[:1] if only_sqlite else BACKENDS)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "db" / "nini.db"


@pytest.fixture
def db_url(backend: str, db_path: Path, request: pytest.FixtureRequest) -> str:
    if backend == "sqlite":
        return f"sqlite:///{db_path}"
    return request.getfixturevalue("pg_cluster").create_database()


@pytest.fixture
def store(db_url: str) -> Iterator[HistoryStore]:
    opened = HistoryStore(db_url)
    yield opened
    opened.close()


@pytest.fixture
def session_id(store: HistoryStore) -> str:
    return store.create_session(title="test")["id"]


def execution_row(**overrides: object) -> dict:
    """An executions row as run_code hands it to finish_tool_call."""
    return {
        "language": "python",
        "tool_name": "run_code",
        "code": "x = 1",
        "stdout": "",
        "stderr": "",
        "status": "succeeded",
        "purpose": "exploration",
        "duration_ms": 5,
        **overrides,
    }


def run_together(code: str, argvs: list[list[str]], limit_s: float) -> list[tuple[int, str, str]]:
    """``python -c code`` once per argv, all let go at the same moment: each prints ``ready`` once it
    has started (and made what it needs first), then waits for a line on stdin, which comes when all
    are ready. Their (exit code, the stdout after ``ready``, stderr)."""
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", code, *argv],
            cwd=REPO_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for argv in argvs
    ]
    for process in processes:
        assert process.stdout is not None
        assert process.stdout.readline() == "ready\n", process.communicate(timeout=timeout(120))
    for process in processes:
        assert process.stdin is not None
        process.stdin.write("go\n")
        process.stdin.flush()
    outcomes = [process.communicate(timeout=timeout(limit_s)) for process in processes]
    return [(process.returncode, out, err) for process, (out, err) in zip(processes, outcomes, strict=True)]
