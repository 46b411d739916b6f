"""Fixtures for the history store: a real SQLite file in the test's temp dir."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nini.history.store import HistoryStore


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "db" / "nini.db"


@pytest.fixture
def db_url(db_path: Path) -> str:
    return f"sqlite:///{db_path}"


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
    return {"language": "python", "tool_name": "run_code", "code": "x = 1", "stdout": "", "stderr": "",
            "status": "succeeded", "purpose": "exploration", "duration_ms": 5, **overrides}
