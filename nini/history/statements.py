"""The history store's hot statements (every tool call, every event), built once as Core
constructs and run through ``driver.Transaction``; and the few steps made of them."""

from __future__ import annotations

from typing import Any, cast

import sqlalchemy as sa

from nini.history.driver import Transaction
from nini.history.schema import JSONText, events, executions, messages, sessions, tool_calls

from nini.history.schema import artifacts as artifact_table  # isort: skip
from nini.history.schema import datasets as dataset_table  # isort: skip

DATASET_FIELDS = ("name", "path", "rows", "columns", "source_execution_id")
# The event contract of DESIGN.md section 4, in its order.
EVENT_SHAPE = [events.c[name] for name in ("type", "session_id", "seq", "ts", "turn_id", "tool_call_id", "data")]

# The statements of the hot path (every tool call, every event), built once: the values come as
# parameters, so each is compiled once (driver.py).
START_CALL = tool_calls.insert()
CALL_DEFAULTS = dict.fromkeys(tool_calls.c.keys())  # the columns start_tool_call leaves empty
MAX_STARTED = 10_000
ADD_MESSAGE = messages.insert().returning(*messages.c)
CALL_STATE = sa.select(tool_calls.c.status, tool_calls.c.started_at).where(tool_calls.c.id == sa.bindparam("call_id"))
# Only a running call ends: on PostgreSQL a second writer ending it waits for the first, then matches nothing.
END_CALL = (
    tool_calls.update()
    .where(tool_calls.c.id == sa.bindparam("call_id"), tool_calls.c.status == "running")
    .returning(*tool_calls.c)
)
ADD_EXECUTION = executions.insert().returning(*executions.c)
ADD_ARTIFACTS = artifact_table.insert()
DATASET_KEY = (dataset_table.c.session_id == sa.bindparam("key_session")) & (
    dataset_table.c.name == sa.bindparam("key_name")
)
DATASET_PATH = sa.select(dataset_table.c.path).where(DATASET_KEY)
UPDATE_DATASET = dataset_table.update().where(DATASET_KEY)
ADD_DATASET = dataset_table.insert()
NEXT_SEQ = sa.select(sa.func.coalesce(sa.func.max(events.c.seq), 0) + 1).where(
    events.c.session_id == sa.bindparam("session_id")
)
ADD_EVENT = events.insert().returning(*EVENT_SHAPE)
# PostgreSQL: tells LISTENers in any process (history/watch.py) of an event when it commits.
EVENTS_CHANNEL = "nini_events"
NOTIFY_EVENT = sa.select(sa.func.pg_notify(EVENTS_CHANNEL, sa.bindparam("payload")))
# FOR NO KEY UPDATE: writers of one session's events queue on it, while inserts of rows that only
# reference the session (tool calls, messages: FOR KEY SHARE) go on.
LOCK_SESSION = (
    sa.select(sessions.c.id).where(sessions.c.id == sa.bindparam("session_id")).with_for_update(key_share=True)
)


def upsert_dataset(tx: Transaction, session_id: str, dataset: dict[str, Any], now: str) -> str | None:
    """Record ``dataset`` as its name's current version; the file the record named before, if any."""
    values = {field: dataset.get(field) for field in DATASET_FIELDS}
    key = {"key_session": session_id, "key_name": values["name"]}
    previous: str | None = tx.scalar(DATASET_PATH, key)
    # UPDATE then INSERT instead of a dialect's ON CONFLICT: portable, and safe under the write lock.
    if tx.execute(UPDATE_DATASET, {**values, **key, "updated_at": now}) == 0:
        tx.execute(ADD_DATASET, {**values, "session_id": session_id, "created_at": now, "updated_at": now})
    return previous


def as_stored(value: Any) -> Any:
    """``value`` as the database gives it back (JSON types; others as their ``str``)."""
    column = cast(JSONText, tool_calls.c.arguments.type)
    return column.process_result_value(column.process_bind_param(value, None), None)
