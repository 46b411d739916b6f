"""The store's hot statements run on the database driver's own connection.

A tool call's start and end and an event are a handful of small statements each, made for every
step of every turn. Through SQLAlchemy's ``Connection.execute`` each one costs more Python than
the database spends on it (issue 23 measured the store at 0.11x plain sqlite3). Here each Core
statement of ``store.py`` is compiled by SQLAlchemy once per dialect and set of parameter names,
and then run on the DBAPI cursor: parameters and results still go through the column types'
own bind and result processors (``JSONText``), and driver errors are raised as SQLAlchemy's
(``IntegrityError``, ...), so the store's error handling sees what it always saw.

Only statements whose parameters are all bound (``sa.bindparam`` or the column keys of an
INSERT/UPDATE) belong here; everything else goes through ``Connection.execute``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Dialect

Params = dict[str, Any]


@dataclass(frozen=True)
class _Plan:
    sql: str
    order: tuple[str, ...] | None  # parameter names in order for positional paramstyles; None: by name
    defaults: dict[str, Any]  # values the statement itself binds (``status == "running"``)
    binds: tuple[tuple[str, Any], ...]  # (name, bind processor) where the type has one
    columns: tuple[tuple[str, Any], ...]  # (name, result processor or None) of the rows it returns


class Statements:
    """Compiled plans of Core statements for one dialect, made on first use."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self._plans: dict[tuple[int, frozenset[str]], _Plan] = {}
        self._keep: dict[int, sa.Executable] = {}  # the statements planned, so their ids stay theirs

    def plan(self, statement: sa.Executable, names: frozenset[str]) -> _Plan:
        key = (id(statement), names)
        found = self._plans.get(key)
        if found is None:
            found = self._plans[key] = self._compile(statement, names)
            self._keep[id(statement)] = statement
        return found

    def _compile(self, statement: Any, names: frozenset[str]) -> _Plan:
        compiled = statement.compile(dialect=self.dialect, column_keys=sorted(names))
        order = tuple(compiled.positiontup) if compiled.positional else None
        binds = tuple(
            (name, processor)
            for name, bind in compiled.binds.items()
            if (processor := bind.type.bind_processor(self.dialect)) is not None
        )
        returned = (
            statement.exported_columns
            if getattr(statement, "_returning", ()) or isinstance(statement, sa.Select)
            else ()
        )
        columns = tuple((column.key, column.type.result_processor(self.dialect, None)) for column in returned)
        defaults = {
            name: bind.value for name, bind in compiled.binds.items() if name not in names and bind.value is not None
        }
        return _Plan(compiled.string, order, defaults, binds, columns)


class Transaction:
    """Statements of one transaction on a DBAPI connection (see ``GroupCommit``)."""

    def __init__(self, statements: Statements, dbapi_connection: Any) -> None:
        self._statements = statements
        self._cursor = dbapi_connection.cursor()
        self._dbapi = statements.dialect.loaded_dbapi

    def rows(self, statement: sa.Executable, params: Params | None = None) -> list[Params]:
        """The rows ``statement`` returns (a SELECT, or DML with RETURNING), as dicts."""
        plan = self._run(statement, params or {})
        return [
            {
                name: (convert(value) if convert else value)
                for (name, convert), value in zip(plan.columns, row, strict=True)
            }
            for row in self._cursor.fetchall()
        ]

    def first(self, statement: sa.Executable, params: Params | None = None) -> Params | None:
        found = self.rows(statement, params)
        return found[0] if found else None

    def one(self, statement: sa.Executable, params: Params | None = None) -> Params:
        found = self.rows(statement, params)
        if len(found) != 1:
            raise sa_exc.NoResultFound(f"expected one row, got {len(found)}")
        return found[0]

    def scalar(self, statement: sa.Executable, params: Params | None = None) -> Any:
        found = self.first(statement, params)
        return None if found is None else next(iter(found.values()))

    def execute(self, statement: sa.Executable, params: Params | Sequence[Params] | None = None) -> int:
        """Run ``statement`` (once per dict when ``params`` is a list); the rows it changed."""
        if isinstance(params, Sequence):
            if not params:
                return 0
            plan = self._statements.plan(statement, frozenset(params[0]))
            return self._call(plan, [self._values(plan, p) for p in params], many=True)
        self._run(statement, params or {})
        changed: int = self._cursor.rowcount  # a DBAPI cursor (Any): its rowcount is an int
        return changed

    def _run(self, statement: sa.Executable, params: Params) -> _Plan:
        plan = self._statements.plan(statement, frozenset(params))
        self._call(plan, self._values(plan, params), many=False)
        return plan

    def _values(self, plan: _Plan, params: Params) -> Any:
        values = {**plan.defaults, **params}
        for name, convert in plan.binds:
            values[name] = convert(values.get(name))
        return [values.get(name) for name in plan.order] if plan.order is not None else values

    def _call(self, plan: _Plan, values: Any, *, many: bool) -> int:
        try:
            if many:
                self._cursor.executemany(plan.sql, values)
            else:
                self._cursor.execute(plan.sql, values)
        except self._dbapi.Error as exc:
            raise sa_exc.DBAPIError.instance(
                plan.sql, values, exc, self._dbapi.Error, dialect=self._statements.dialect
            ) from exc
        changed: int = self._cursor.rowcount
        return changed
