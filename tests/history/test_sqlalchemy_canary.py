"""Canary for the SQLAlchemy internals ``nini/history/driver.py`` leans on.

The driver compiles the store's Core statements once and runs them on the DBAPI cursor itself, so
it reads parts of SQLAlchemy that are not public API: ``Compiled.positiontup`` (the order of the
parameters of a positional paramstyle), ``Compiled.binds`` (each bind's type and the value a
statement binds itself), the DML statement's ``_returning``, ``Dialect.loaded_dbapi`` and
``DBAPIError.instance``. pyproject pins SQLAlchemy to the minor versions the driver is tested on;
when a new version changes one of these, this file fails first and names the internal, rather than
the store writing parameters in the wrong order.

Each test checks one internal directly, on the SQLite dialect (positional, ``?``) and on
PostgreSQL's psycopg dialect (named, ``%(name)s``), the two the store runs on; the last one runs a
compiled statement through the driver on a real SQLite connection.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects import postgresql

from nini.history.driver import Statements, Transaction
from nini.history.schema import JSONText

METADATA = sa.MetaData()
CALLS = sa.Table(
    "calls",
    METADATA,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String, nullable=False),
    sa.Column("status", sa.String),
    sa.Column("result", JSONText),
)
INSERT = sa.insert(CALLS).returning(CALLS.c.id)
# a value the statement binds itself ("running"), beside one the caller gives (result)
FINISH = sa.update(CALLS).where(CALLS.c.status == "running").values(result=sa.bindparam("result"))


def changed(internal: str) -> str:
    return f"SQLAlchemy {sa.__version__} changed {internal}: update nini/history/driver.py and the pin"


@pytest.fixture(scope="module")
def sqlite_dialect() -> sa.Dialect:
    """An engine's dialect, as the store has it (its DBAPI loaded)."""
    engine = sa.create_engine("sqlite://")
    yield engine.dialect
    engine.dispose()


def test_positiontup_lists_the_parameters_in_placeholder_order(sqlite_dialect: sa.Dialect) -> None:
    compiled = INSERT.compile(dialect=sqlite_dialect, column_keys=["name", "status"])
    assert compiled.positional is True, changed("Compiled.positional (SQLite's qmark)")
    assert compiled.string.count("?") == 2, changed("the SQLite placeholders")
    assert list(compiled.positiontup) == ["name", "status"], changed("Compiled.positiontup")
    compiled = FINISH.compile(dialect=sqlite_dialect, column_keys=["result"])
    order = list(compiled.positiontup)
    assert len(order) == compiled.string.count("?") == 2 and order[0] == "result", changed("Compiled.positiontup")


def test_named_paramstyle_has_no_positional_order() -> None:
    compiled = FINISH.compile(dialect=postgresql.psycopg.dialect(), column_keys=["result"])
    assert compiled.positional is False, changed("Compiled.positional (psycopg's pyformat)")
    assert "%(result)s" in compiled.string, changed("psycopg's named placeholders")
    assert not getattr(compiled, "positiontup", None), changed("Compiled.positiontup (None where named)")


def test_binds_carry_their_type_and_the_statements_own_values(sqlite_dialect: sa.Dialect) -> None:
    compiled = FINISH.compile(dialect=sqlite_dialect, column_keys=["result"])
    binds = compiled.binds
    assert isinstance(binds, dict) and "result" in binds, changed("Compiled.binds (a dict by name)")
    assert isinstance(binds["result"].type, JSONText), changed("BindParameter.type in Compiled.binds")
    processor = binds["result"].type.bind_processor(sqlite_dialect)
    assert processor is not None and processor({"a": 1}) == '{"a": 1}', changed("TypeDecorator.bind_processor")
    own = {name: bind.value for name, bind in binds.items() if name != "result" and bind.value is not None}
    assert set(own.values()) == {"running"}, changed("BindParameter.value of a statement's literal")
    assert set(compiled.positiontup) <= set(binds), changed("Compiled.binds names vs positiontup")


def test_returning_marks_dml_that_returns_rows(sqlite_dialect: sa.Dialect) -> None:
    assert tuple(INSERT._returning) == (CALLS.c.id,), changed("UpdateBase._returning")
    assert not sa.insert(CALLS)._returning, changed("UpdateBase._returning (empty without RETURNING)")
    assert [c.key for c in INSERT.exported_columns] == ["id"], changed("UpdateBase.exported_columns")
    processor = CALLS.c.result.type.result_processor(sqlite_dialect, None)
    assert processor is not None and processor('{"a": 1}') == {"a": 1}, changed("TypeDecorator.result_processor")


def test_loaded_dbapi_and_dbapierror_instance(sqlite_dialect: sa.Dialect) -> None:
    assert sqlite_dialect.loaded_dbapi.Error is sqlite3.Error, changed("Dialect.loaded_dbapi (the driver's module)")
    error = sa_exc.DBAPIError.instance(
        "INSERT ...", [1], sqlite3.IntegrityError("UNIQUE constraint failed"), sqlite3.Error, dialect=sqlite_dialect
    )
    assert isinstance(error, sa_exc.IntegrityError), changed("DBAPIError.instance")
    assert isinstance(error.orig, sqlite3.IntegrityError), changed("DBAPIError.orig")


def test_the_driver_runs_compiled_statements_on_a_real_connection(sqlite_dialect: sa.Dialect) -> None:
    connection = sqlite3.connect(":memory:")
    try:
        connection.execute("CREATE TABLE calls (id INTEGER PRIMARY KEY, name TEXT NOT NULL, status TEXT, result TEXT)")
        transaction = Transaction(Statements(sqlite_dialect), connection)
        rows: list[dict[str, Any]] = transaction.rows(INSERT, {"name": "run_code", "status": "running"})
        assert rows == [{"id": 1}], changed("the plan of an INSERT ... RETURNING")
        assert transaction.execute(FINISH, {"result": {"rows": 3}}) == 1, changed("the plan of an UPDATE")
        stored = connection.execute("SELECT name, status, result FROM calls").fetchall()
        assert stored == [("run_code", "running", '{"rows": 3}')], changed("the bind order of a compiled plan")
        with pytest.raises(sa_exc.IntegrityError):
            transaction.rows(INSERT, {"name": None, "status": "x"})
    finally:
        connection.close()
