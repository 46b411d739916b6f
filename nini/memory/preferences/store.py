"""The preference tables through the history store (its engine, its write lock, its DB_ERROR).

``user_preferences`` and ``skill_run_feedback`` live in the history database, so a hub's
PostgreSQL holds them like the rest of the record. One preference per (project, key): a project's
row and the global row (project NULL) of the same key are two preferences, the project's winning
at selection. Times are epoch milliseconds.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from nini.errors import ErrorCode, NiniError
from nini.history.schema import skill_run_feedback as feedback_table
from nini.history.schema import user_preferences as table

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from nini.history.store import HistoryStore

SOURCES = ("explicit", "implicit")
ACTIONS = ("accept", "reject", "partial")


def now_ms() -> int:
    return int(time.time() * 1000)


def scope_filter(project_id: str | None) -> Any:
    return table.c.project_id.is_(None) if project_id is None else table.c.project_id == project_id


class PreferenceStore:
    def __init__(self, store: HistoryStore) -> None:
        self.store = store

    # -- preferences ----------------------------------------------------------------------------------

    def list(self, project_id: str | None = None, *, include_global: bool = True) -> list[dict[str, Any]]:
        """The preferences of a project (and the global ones), by key then id."""
        where = scope_filter(project_id)
        if project_id is not None and include_global:
            where = where | table.c.project_id.is_(None)
        with self.store.reading() as conn:
            return [dict(row._mapping) for row in conn.execute(sa.select(table).where(where).order_by(table.c.key, table.c.id))]

    def get(self, preference_id: int) -> dict[str, Any]:
        with self.store.reading() as conn:
            row = conn.execute(sa.select(table).where(table.c.id == preference_id)).first()
        if row is None:
            raise NiniError(ErrorCode.NOT_FOUND, f"no preference {preference_id}")
        return dict(row._mapping)

    def put_explicit(self, project_id: str | None, key: str, value: Any) -> dict[str, Any]:
        """The user's own preference (confidence 1.0), replacing a learned one of the same key."""
        _check_value(key, value)
        with self.store.writing() as conn:
            found = find(conn, project_id, key)
            values = {"value": value, "source": "explicit", "confidence": 1.0, "updated_at": now_ms()}
            if found is None:
                return _one(conn.execute(table.insert().returning(*table.c), {"project_id": project_id, "key": key, "evidence_count": 0, **values}))
            return _one(conn.execute(table.update().where(table.c.id == found["id"]).returning(*table.c), values))

    def edit(self, preference_id: int, *, value: Any = None, confidence: float | None = None) -> dict[str, Any]:
        """Change a preference's value or confidence; the user's edit makes it explicit."""
        current = self.get(preference_id)
        values: dict[str, Any] = {"source": "explicit", "updated_at": now_ms()}
        if value is not None:
            _check_value(current["key"], value)
            values["value"] = value
        values["confidence"] = 1.0 if confidence is None else _confidence(confidence)
        with self.store.writing() as conn:
            return _one(conn.execute(table.update().where(table.c.id == preference_id).returning(*table.c), values))

    def delete(self, preference_id: int) -> dict[str, Any]:
        with self.store.writing() as conn:
            row = conn.execute(table.delete().where(table.c.id == preference_id).returning(*table.c)).first()
        if row is None:
            raise NiniError(ErrorCode.NOT_FOUND, f"no preference {preference_id}")
        return dict(row._mapping)

    def candidates(self, project_id: str | None, floor: float) -> list[dict[str, Any]]:
        """The rows selection ranks: at or above the floor, this project's and the global ones (indexed)."""
        where = (table.c.confidence >= floor) & (scope_filter(None) | (table.c.project_id == project_id) if project_id else scope_filter(None))
        query = sa.select(table.c.id, table.c.project_id, table.c.key, table.c.value, table.c.source, table.c.confidence).where(where)
        with self.store.reading() as conn:
            return [dict(row._mapping) for row in conn.execute(query)]

    # -- feedback ----------------------------------------------------------------------------------------

    def feedback_for(self, run_id: str) -> list[dict[str, Any]]:
        with self.store.reading() as conn:
            query = sa.select(feedback_table).where(feedback_table.c.run_id == run_id).order_by(feedback_table.c.id)
            return [dict(row._mapping) for row in conn.execute(query)]


def find(conn: Connection, project_id: str | None, key: str) -> dict[str, Any] | None:
    row = conn.execute(sa.select(table).where(scope_filter(project_id) & (table.c.key == key))).first()
    return dict(row._mapping) if row is not None else None


def _one(result: Any) -> dict[str, Any]:
    return dict(result.one()._mapping)


def _confidence(value: float) -> float:
    if not isinstance(value, int | float) or not 0 <= value <= 1:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"confidence must be between 0 and 1, not {value!r}")
    return float(value)


def _check_value(key: str, value: Any) -> None:
    if not isinstance(key, str) or not key.strip() or len(key) > 200:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, "a preference key is a non-empty string of at most 200 characters")
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"the value of {key} is not JSON: {exc}") from None
