"""Fixtures for the history store: every test that takes ``db_url`` (or ``store``) runs twice, on
a real SQLite file in the test's temp dir and on a fresh database of a real PostgreSQL server.
A test about the SQLite file itself is marked ``sqlite_only`` and runs once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nini.history.store import HistoryStore

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
