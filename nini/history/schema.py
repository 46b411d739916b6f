"""The history tables and the migrations that create and evolve them.

Portable SQL only (SQLite by default, PostgreSQL for a hub): ids and text are TEXT, JSON values
are TEXT holding JSON (``JSONText``), timestamps are ISO-8601 UTC text of fixed width
(``2024-05-01T12:00:00.000000Z``), so sorting the text sorts by time on every backend.

The version lives in ``schema_version`` (one row). ``migrate`` runs each missing step of
``MIGRATIONS`` in its own transaction and refuses a database newer than this code.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from nini.errors import ErrorCode, NiniError
from nini.history.engine import WRITE, DamagedValue


class JSONText(sa.TypeDecorator[Any]):
    """A JSON value stored as TEXT, so every backend stores and returns it the same way.

    Values that JSON cannot represent (numpy numbers, datetimes) are stored as their ``str``:
    recording a tool call must never fail because a skill returned an odd type.
    """

    impl = sa.Text
    cache_ok = True

    # the dialect plays no part: None is fine too (statements.as_stored has no engine)
    def process_bind_param(self, value: Any, dialect: sa.Dialect | None) -> str | None:
        return None if value is None else json.dumps(value, ensure_ascii=False, default=str)

    def process_result_value(self, value: str | None, dialect: sa.Dialect | None) -> Any:
        try:
            return None if value is None else json.loads(value)
        except ValueError:  # nini wrote JSON here: what is there now is damage (a bit flipped on disk)
            raise DamagedValue("a stored JSON value is not JSON") from None


metadata = sa.MetaData(
    # Stable constraint names: PostgreSQL migrations have to name what they alter or drop.
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


def _session_fk() -> sa.Column[str]:
    return sa.Column("session_id", sa.Text, sa.ForeignKey("sessions.id"), nullable=False)


def _timestamp(name: str, nullable: bool = False) -> sa.Column[str]:
    return sa.Column(name, sa.Text, nullable=nullable)


sessions = sa.Table(
    "sessions",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("title", sa.Text),
    _timestamp("created_at"),
    _timestamp("updated_at"),
    sa.Column("metadata", JSONText),
    # Who the session belongs to: the Jupyter identity (username) that created it; None for the CLI
    # and sessions recorded before owners existed. A user sees only their own (see ``list_sessions``).
    sa.Column("owner", sa.Text),
    sa.Index(None, "created_at"),
    sa.Index(None, "owner", "created_at"),
)

messages = sa.Table(
    "messages",
    metadata,
    # An integer id: insertion order is the conversation order.
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    _session_fk(),
    sa.Column("turn_id", sa.Text),
    sa.Column("role", sa.Text, nullable=False),
    sa.Column("content", sa.Text),  # an assistant message that only calls tools has none
    sa.Column("tool_call_id", sa.Text),  # the model's id for the call this message answers
    sa.Column("metadata", JSONText),
    _timestamp("created_at"),
    sa.Index(None, "session_id", "id"),
    sa.Index(None, "session_id", "turn_id"),  # one turn's messages, without reading the session's
)

TOOL_CALL_STATUSES = ("running", "succeeded", "failed", "interrupted")

tool_calls = sa.Table(
    "tool_calls",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    _session_fk(),
    sa.Column("turn_id", sa.Text),
    sa.Column("tool_name", sa.Text, nullable=False),
    sa.Column("arguments", JSONText),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("error_code", sa.Text),
    _timestamp("started_at"),
    _timestamp("ended_at", nullable=True),
    sa.Column("duration_ms", sa.Integer),
    sa.Column("result", JSONText),
    sa.Column("result_summary", sa.Text),
    sa.Column("owner", sa.Text),  # "<hostname>:<pid>" of the process running the call
    sa.CheckConstraint(sa.column("status").in_(TOOL_CALL_STATUSES), name="status"),
    sa.Index(None, "session_id", "started_at"),
    sa.Index(None, "status"),
    sa.Index(None, "session_id", "turn_id"),  # one turn's calls (the enhancement trigger's signals)
    sa.Index(None, "session_id", "tool_name"),  # one skill's calls (a session's proposals, its loads)
)

executions = sa.Table(
    "executions",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    _session_fk(),
    sa.Column("tool_call_id", sa.Text, sa.ForeignKey("tool_calls.id")),
    sa.Column("language", sa.Text, nullable=False),
    sa.Column("tool_name", sa.Text),
    sa.Column("code", sa.Text, nullable=False),
    sa.Column("stdout", sa.Text),
    sa.Column("stderr", sa.Text),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("purpose", sa.Text),
    sa.Column("label", sa.Text),
    sa.Column("dataset_name", sa.Text),
    sa.Column("save_as", sa.Text),
    sa.Column("result", JSONText),
    sa.Column("error", JSONText),
    sa.Column("outputs", JSONText),  # nbformat outputs, for notebook export
    sa.Column("artifacts", JSONText),  # [{name, path, format, kind}] as the skill reported them
    sa.Column("datasets_saved", JSONText),  # [name]
    sa.Column("retry_of", sa.Text, sa.ForeignKey("executions.id")),
    sa.Column("duration_ms", sa.Integer),
    _timestamp("created_at"),
    _timestamp("rolled_back_at", nullable=True),  # set by HistoryStore.mark_rolled_back (added in _v2)
    sa.CheckConstraint(sa.column("language").in_(("python", "r")), name="language"),
    sa.CheckConstraint(sa.column("status").in_(("succeeded", "failed")), name="status"),
    sa.Index(None, "session_id", "created_at"),
    # the last step of a label or output dataset (is a run a retry?) and one call's steps, in a long session
    sa.Index(None, "session_id", "label"),
    sa.Index(None, "session_id", "save_as"),
    sa.Index(None, "tool_call_id"),
)

artifacts = sa.Table(
    "artifacts",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    _session_fk(),
    sa.Column("execution_id", sa.Text, sa.ForeignKey("executions.id")),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("path", sa.Text, nullable=False),  # relative to the session workspace
    sa.Column("format", sa.Text),
    sa.Column("kind", sa.Text),
    sa.Column("size_bytes", sa.BigInteger),
    _timestamp("created_at"),
    sa.Index(None, "session_id", "id"),
)

datasets = sa.Table(
    "datasets",
    metadata,
    _session_fk(),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("path", sa.Text, nullable=False),  # relative to the session workspace
    sa.Column("rows", sa.BigInteger),
    sa.Column("columns", JSONText),
    sa.Column("source_execution_id", sa.Text, sa.ForeignKey("executions.id")),
    _timestamp("created_at"),
    _timestamp("updated_at"),
    sa.PrimaryKeyConstraint("session_id", "name"),
)

events = sa.Table(
    "events",
    metadata,
    _session_fk(),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("type", sa.Text, nullable=False),
    _timestamp("ts"),
    sa.Column("turn_id", sa.Text),
    sa.Column("tool_call_id", sa.Text),
    sa.Column("data", JSONText),
    sa.PrimaryKeyConstraint("session_id", "seq"),
    sa.Index("ix_events_turn_id", "turn_id"),  # feedback names a run by its turn id
    sa.Index(None, "session_id", "type"),  # a session's events of one type (its reports) in a long session
)

# What a user prefers (tone, verbosity, report decimals, ...): explicit ones they wrote, implicit ones
# learned from their feedback. project_id NULL means every project; times are epoch milliseconds.
# owner: whose they are (a Jupyter identity, as sessions.owner; None: the unnamed single user); a user
# reads, changes and is given only their own (nini.memory.preferences).
user_preferences = sa.Table(
    "user_preferences",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("project_id", sa.Text),
    sa.Column("key", sa.Text, nullable=False),
    sa.Column("value", JSONText),
    sa.Column("source", sa.Text, nullable=False),  # explicit | implicit
    sa.Column("confidence", sa.Float, nullable=False),
    sa.Column("evidence_count", sa.Integer, nullable=False, default=0),
    sa.Column("updated_at", sa.BigInteger, nullable=False),
    sa.Column("owner", sa.Text),
    sa.Index("ix_user_preferences_owner_selection", "owner", "project_id", "confidence"),
    sa.Index("ix_user_preferences_owner_key", "owner", "project_id", "key"),
)

# The user's accept / reject / partial on one output (an answer's turn, a report, a proposed cell);
# evidence_ref points at what was judged (a section, a diff), never holds its text.
skill_run_feedback = sa.Table(
    "skill_run_feedback",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.Text, nullable=False),
    sa.Column("project_id", sa.Text),
    sa.Column("skill_id", sa.Text, nullable=False),
    sa.Column("action", sa.Text, nullable=False),  # accept | reject | partial
    sa.Column("signals", JSONText),  # the preference keys it spoke for, after extraction
    sa.Column("evidence_ref", JSONText),
    sa.Column("created_at", sa.BigInteger, nullable=False),
    sa.Column("owner", sa.Text),  # whose preferences it taught: the judged run's session owner
    sa.Index("ix_skill_run_feedback_run", "run_id"),
)

# The host uid of each session's sandbox when nini runs as root (``nini.history.uids``): allocated
# here, so no two sessions of a database share one (a hash of the workspace path did collide), and
# kept, so a session's workspace files stay its own across restarts.
session_uids = sa.Table(
    "session_uids",
    metadata,
    sa.Column("session_id", sa.Text, sa.ForeignKey("sessions.id"), primary_key=True),
    sa.Column("uid", sa.BigInteger, nullable=False, unique=True),
)

# The running summary of a session's older turns (``nini.agent.context``): the turns up to message
# ``through_id`` are folded into ``summary`` (JSON: the ledger of what they did and the text the
# model is given ahead of the recent turns), so a turn's context never reads them again.
session_context = sa.Table(
    "session_context",
    metadata,
    sa.Column("session_id", sa.Text, sa.ForeignKey("sessions.id"), primary_key=True),
    sa.Column("through_id", sa.Integer, nullable=False),
    sa.Column("turns", sa.Integer, nullable=False),
    sa.Column("summary", JSONText, nullable=False),
    _timestamp("updated_at"),
)

# Kept out of ``metadata``: it must exist before any migration runs, and no migration drops it.
schema_version = sa.Table("schema_version", sa.MetaData(), sa.Column("version", sa.Integer, nullable=False))


def _v1(conn: Connection) -> None:
    # A fresh database gets the tables as ``metadata`` holds them now, i.e. already in the latest
    # shape. So every later step must be idempotent (look before it alters, as ``_v2`` does): on a
    # fresh database it finds its change made and does nothing; on an older one it makes it.
    metadata.create_all(conn)


def _v2(conn: Connection) -> None:
    """Executions can be rolled back (reports leave them out): ``executions.rolled_back_at``.

    ``_v1`` creates whatever ``metadata`` holds, so a database it created after this column joined
    the table already has it; only databases created before get the column added here.
    """
    if "rolled_back_at" not in {column["name"] for column in sa.inspect(conn).get_columns("executions")}:
        conn.execute(sa.text("ALTER TABLE executions ADD COLUMN rolled_back_at TEXT"))


def _v3(conn: Connection) -> None:
    """Preference learning: ``user_preferences``, ``skill_run_feedback`` and an index of events by turn
    (all created by ``_v1`` on a fresh database)."""
    metadata.create_all(conn, tables=[user_preferences, skill_run_feedback], checkfirst=True)
    if "ix_events_turn_id" not in {index["name"] for index in sa.inspect(conn).get_indexes("events")}:
        conn.execute(sa.text("CREATE INDEX ix_events_turn_id ON events (turn_id)"))


def _v4(conn: Connection) -> None:
    """Sessions carry their owner (a hub's users share one database): ``sessions.owner`` and an
    index to list one owner's sessions (both created by ``_v1`` on a fresh database)."""
    if "owner" not in {column["name"] for column in sa.inspect(conn).get_columns("sessions")}:
        conn.execute(sa.text("ALTER TABLE sessions ADD COLUMN owner TEXT"))
    if "ix_sessions_owner_created_at" not in {index["name"] for index in sa.inspect(conn).get_indexes("sessions")}:
        conn.execute(sa.text("CREATE INDEX ix_sessions_owner_created_at ON sessions (owner, created_at)"))


def _v5(conn: Connection) -> None:
    """Preferences and feedback carry their owner (a hub's users share one database): the
    ``owner`` columns, and the preference indexes led by the owner in place of v3's (all as
    ``_v1`` creates them on a fresh database). Rows from before belong to the unnamed user."""
    for table in (user_preferences, skill_run_feedback):
        if "owner" not in {column["name"] for column in sa.inspect(conn).get_columns(table.name)}:
            conn.execute(sa.text(f"ALTER TABLE {table.name} ADD COLUMN owner TEXT"))
    found = {index["name"] for index in sa.inspect(conn).get_indexes("user_preferences")}
    for old in ("ix_user_preferences_selection", "ix_user_preferences_key"):
        if old in found:
            conn.execute(sa.text(f"DROP INDEX {old}"))
    for index in user_preferences.indexes:
        if index.name not in found:
            index.create(conn)


def _v6(conn: Connection) -> None:
    """Session sandboxes get uids allocated by the store: ``session_uids`` (created by ``_v1`` on a
    fresh database). Sessions of before get theirs when their sandbox next starts."""
    metadata.create_all(conn, tables=[session_uids], checkfirst=True)


def _v7(conn: Connection) -> None:
    """Long sessions stay cheap: ``session_context`` (the running summary of older turns) and the
    indexes that read one turn, one step's label or one kind of event without the whole session
    (all created by ``_v1`` on a fresh database)."""
    metadata.create_all(conn, tables=[session_context], checkfirst=True)
    for table in (messages, tool_calls, executions, events):
        found = {index["name"] for index in sa.inspect(conn).get_indexes(table.name)}
        for index in table.indexes:
            if index.name not in found:
                index.create(conn)


MIGRATIONS: list[Callable[[Connection], None]] = [_v1, _v2, _v3, _v4, _v5, _v6, _v7]
"""Step N (1-based) brings the schema from version N-1 to N. Append only; never edit a shipped step."""

SCHEMA_VERSION = len(MIGRATIONS)


def migrate(engine: Engine, shown: str | None = None) -> None:
    """Bring the database up to ``SCHEMA_VERSION``; each step commits on its own.

    A database written by a newer nini is refused before anything is written to it, and one of
    this version that lacks a table (``DamagedValue``) too. Each step re-reads the version inside
    its write transaction, so two processes opening a fresh file at once run each step exactly
    once. ``shown`` names the database in messages.
    """
    with engine.connect() as conn:
        found = stored_version(conn)
        missing = missing_tables(conn) if found == SCHEMA_VERSION else []
    if found > SCHEMA_VERSION:
        raise NiniError(
            ErrorCode.DB_ERROR,
            f"the history database{f' {shown}' if shown else ''} has schema version {found}, but this nini only "
            f"knows up to {SCHEMA_VERSION}; upgrade nini (the database was left unchanged)",
            {"found": found, "supported": SCHEMA_VERSION},
        )
    if missing:
        raise DamagedValue(f"it lacks the table{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    for target in range(found + 1, SCHEMA_VERSION + 1):
        with engine.execution_options(**{WRITE: True}).begin() as conn:
            _lock_migrations(conn)
            schema_version.create(conn, checkfirst=True)
            current = _read_version(conn)
            if current >= target:
                continue
            MIGRATIONS[target - 1](conn)
            if current == 0:
                conn.execute(schema_version.insert().values(version=target))
            else:
                conn.execute(schema_version.update().values(version=target))


MIGRATION_LOCK = 0x6E696E69  # "nini": the advisory lock key of migrations on PostgreSQL


def _lock_migrations(conn: Connection) -> None:
    """Make other processes migrating the same database wait until this step commits.

    SQLite's BEGIN IMMEDIATE already does (one writer at a time). PostgreSQL lets two transactions
    both find ``schema_version`` missing and both create it; a transaction-level advisory lock,
    released at commit or rollback, makes them take turns.
    """
    if conn.dialect.name == "postgresql":
        conn.execute(sa.select(sa.func.pg_advisory_xact_lock(MIGRATION_LOCK)))


def missing_tables(conn: Connection) -> list[str]:
    """The tables of this schema version that the database does not have (one query)."""
    return sorted(set(metadata.tables) - set(sa.inspect(conn).get_table_names()))


def stored_version(conn: Connection) -> int:
    """The database's schema version; 0 for one no migration has run on yet."""
    return _read_version(conn) if sa.inspect(conn).has_table("schema_version") else 0


def _read_version(conn: Connection) -> int:
    return conn.execute(sa.select(sa.func.max(schema_version.c.version))).scalar() or 0
