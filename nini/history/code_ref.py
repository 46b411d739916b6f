"""A step's code is stored once: in its tool call's ``arguments``, not again in its execution.

``run_code`` and ``run_r_code`` get their code as an argument, so the tool call's row holds it
from the call's start; the execution row that records the run would hold the same text again (a
1 MB code was three copies with the ``tool_call`` event: see ``invoke.event_arguments`` for the
event). So an execution whose code is exactly its call's ``code`` argument stores ``""`` in
``executions.code`` (NOT NULL since v1: an empty string needs no migration, and rows written
before keep their code and read as they did), and every read of executions fills it back from
the call (``executions_query`` + ``resolved``): callers of the store never see the reference.

An execution whose code differs from its call's arguments (none today) keeps its own code; an
empty code that was really empty reads back as its call's ``code``, which is then empty too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa

from nini.history.schema import executions, tool_calls

CALL_ARGUMENTS = "call_arguments"  # the joined column: the call's arguments, only for rows that reference them


def referenced(row: dict[str, Any], arguments: Any) -> dict[str, Any]:
    """The execution ``row`` as it is stored: its ``code`` emptied when it is the call's ``code``
    argument (``arguments`` as the call's row holds them)."""
    code = row.get("code")
    if isinstance(code, str) and code and isinstance(arguments, Mapping) and arguments.get("code") == code:
        return {**row, "code": ""}
    return row


def executions_query(columns: Iterable[str] | None = None) -> sa.Select[Any]:
    """SELECT of executions (only ``columns`` if given) that also fetches the call's arguments for
    the rows whose code is a reference; filter and order it as any select of executions."""
    chosen = [executions.c[name] for name in columns] if columns is not None else list(executions.c)
    if not any(column.name == "code" for column in chosen):
        return sa.select(*chosen)
    join = sa.and_(tool_calls.c.id == executions.c.tool_call_id, executions.c.code == "")
    return sa.select(*chosen, tool_calls.c.arguments.label(CALL_ARGUMENTS)).select_from(
        executions.outerjoin(tool_calls, join)
    )


def resolved(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of ``executions_query`` with their code filled back from their call's arguments."""
    result = []
    for row in rows:
        arguments = row.pop(CALL_ARGUMENTS, None)
        if isinstance(arguments, Mapping) and isinstance(arguments.get("code"), str) and not row.get("code"):
            row["code"] = arguments["code"]
        result.append(row)
    return result
