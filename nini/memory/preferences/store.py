"""The preference tables through the history store (its engine, its write lock, its DB_ERROR).

``user_preferences`` and ``skill_run_feedback`` live in the history database, so a hub's
PostgreSQL holds them like the rest of the record. One preference per (owner, project, key): a
project's row and the global row (project NULL) of the same key are two preferences, the project's
winning at selection. Times are epoch milliseconds.

Every row has an owner (a Jupyter user's name; None: the unnamed single user, as ``sessions.owner``)
and every method works on one owner's rows only (``owner=``): a preference of someone else's is
NOT_FOUND word for word as one that does not exist.
"""

from __future__ import annotations

import builtins
import json
import time
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from nini.errors import ErrorCode, NiniError
from nini.history.schema import artifacts, events, tool_calls
from nini.history.schema import skill_run_feedback as feedback_table
from nini.history.schema import user_preferences as table

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from nini.history.store import HistoryStore

ACTIONS = ("accept", "reject", "partial")


def now_ms() -> int:
    return int(time.time() * 1000)


def scope_filter(project_id: str | None) -> Any:
    return table.c.project_id.is_(None) if project_id is None else table.c.project_id == project_id


def owner_filter(owner: str | None, column: Any = table.c.owner) -> Any:
    """The rows of ``owner`` (None: the unowned ones, the unnamed user's)."""
    return column.is_(None) if owner is None else column == owner


class PreferenceStore:
    def __init__(self, store: HistoryStore) -> None:
        self.store = store

    # -- preferences ----------------------------------------------------------------------------------

    def list(
        self, project_id: str | None = None, *, include_global: bool = True, owner: str | None = None
    ) -> list[dict[str, Any]]:
        """``owner``'s preferences of a project (and their global ones), by key then id."""
        where = scope_filter(project_id)
        if project_id is not None and include_global:
            where = where | table.c.project_id.is_(None)
        where = owner_filter(owner) & where
        with self.store.reading() as conn:
            return [
                dict(row._mapping)
                for row in conn.execute(sa.select(table).where(where).order_by(table.c.key, table.c.id))
            ]

    def get(self, preference_id: int, *, owner: str | None = None) -> dict[str, Any]:
        with self.store.reading() as conn:
            row = conn.execute(sa.select(table).where(_mine(preference_id, owner))).first()
        if row is None:
            raise _missing(preference_id)
        return dict(row._mapping)

    def put_explicit(self, project_id: str | None, key: str, value: Any, *, owner: str | None = None) -> dict[str, Any]:
        """``owner``'s own preference (confidence 1.0), replacing a learned one of the same key."""
        _check_value(key, value)
        with self.store.writing() as conn:
            found = find(conn, project_id, key, owner)
            values = {"value": value, "source": "explicit", "confidence": 1.0, "updated_at": now_ms()}
            if found is None:
                row = {"project_id": project_id, "key": key, "evidence_count": 0, "owner": owner, **values}
                return _one(conn.execute(table.insert().returning(*table.c), row))
            return _one(conn.execute(table.update().where(table.c.id == found["id"]).returning(*table.c), values))

    def edit(
        self, preference_id: int, *, value: Any = None, confidence: float | None = None, owner: str | None = None
    ) -> dict[str, Any]:
        """Change one of ``owner``'s preferences, its value or confidence; the edit makes it explicit."""
        current = self.get(preference_id, owner=owner)
        values: dict[str, Any] = {"source": "explicit", "updated_at": now_ms()}
        if value is not None:
            _check_value(current["key"], value)
            values["value"] = value
        values["confidence"] = 1.0 if confidence is None else _confidence(confidence)
        with self.store.writing() as conn:
            row = conn.execute(table.update().where(_mine(preference_id, owner)).returning(*table.c), values).first()
        if row is None:  # deleted since it was read
            raise _missing(preference_id)
        return dict(row._mapping)

    def delete(self, preference_id: int, *, owner: str | None = None) -> dict[str, Any]:
        with self.store.writing() as conn:
            row = conn.execute(table.delete().where(_mine(preference_id, owner)).returning(*table.c)).first()
        if row is None:
            raise _missing(preference_id)
        return dict(row._mapping)

    # -- feedback ----------------------------------------------------------------------------------------

    def feedback_for(self, run_id: str, *, owner: str | None = None) -> builtins.list[dict[str, Any]]:
        with self.store.reading() as conn:
            where = (feedback_table.c.run_id == run_id) & owner_filter(owner, feedback_table.c.owner)
            query = sa.select(feedback_table).where(where).order_by(feedback_table.c.id)
            return [dict(row._mapping) for row in conn.execute(query)]

    def feedback_of_session(self, session_id: str) -> dict[str, str]:
        """The latest action on each judged output of a session, by run id (its turns, its tool calls,
        its reports as ``report:<artifact id>``): what the session's feedback controls show pressed
        when it is opened again. Its feedback is its owner's, so no owner filter: the caller checks
        that the viewer may see the session."""
        runs = sa.union(
            sa.select(events.c.turn_id).where((events.c.session_id == session_id) & events.c.turn_id.is_not(None)),
            sa.select(tool_calls.c.id).where(tool_calls.c.session_id == session_id),
            sa.select(sa.literal("report:") + sa.cast(artifacts.c.id, sa.Text)).where(
                (artifacts.c.session_id == session_id) & (artifacts.c.kind == "report")
            ),
        )
        query = sa.select(feedback_table.c.run_id, feedback_table.c.action).where(feedback_table.c.run_id.in_(runs))
        with self.store.reading() as conn:
            return {row.run_id: row.action for row in conn.execute(query.order_by(feedback_table.c.id))}


def find(conn: Connection, project_id: str | None, key: str, owner: str | None) -> dict[str, Any] | None:
    row = conn.execute(
        sa.select(table).where(owner_filter(owner) & scope_filter(project_id) & (table.c.key == key))
    ).first()
    return dict(row._mapping) if row is not None else None


def _mine(preference_id: int, owner: str | None) -> Any:
    """Preference ``preference_id`` if it is ``owner``'s: another user's is not there for them."""
    return (table.c.id == preference_id) & owner_filter(owner)


def _missing(preference_id: int) -> NiniError:
    """The one refusal for a preference that is not there and one that is someone else's."""
    return NiniError(ErrorCode.NOT_FOUND, f"no preference {preference_id}", {"preference_id": preference_id})


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
