"""What the history store makes besides rows: ids, times, the errors it raises, and plain dicts
of results. Separate from store.py so that the store's file is its methods."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from nini.errors import ErrorCode, NiniError
from nini.history.engine import constraint_kind, driver_message


def check_fields(what: str, rows: list[dict[str, Any]], allowed: Iterable[str]) -> None:
    unknown = sorted({key for row in rows for key in row} - set(allowed))
    if unknown:
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT, f"unknown {what} field(s): {', '.join(unknown)}", {"fields": unknown}
        )


def refused(exc: IntegrityError, what: str, missing: NiniError | None = None) -> NiniError:
    """A constraint violation as the error the caller can act on."""
    kind = constraint_kind(exc)
    if kind == "unique":
        return NiniError(ErrorCode.CONFLICT, f"{what} already exists")
    if kind == "foreign_key" and missing is not None:
        return missing
    return NiniError(ErrorCode.INVALID_ARGUMENT, f"{what} was refused by the database: {driver_message(exc)}")


def no_session(session_id: str) -> NiniError:
    return NiniError(ErrorCode.NOT_FOUND, f"no session {session_id}", {"session_id": session_id})


def pid_alive(pid_text: str) -> bool:
    """False only when we know the process is gone; an unknown owner counts as alive."""
    if os.name != "posix":  # on Windows os.kill(pid, 0) would terminate the process
        return True
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return False
    except (ValueError, PermissionError, OverflowError):
        return True
    return True


def ms_between(start: str, end: str) -> int:
    elapsed = datetime.fromisoformat(end) - datetime.fromisoformat(start)
    return max(0, round(elapsed.total_seconds() * 1000))  # another host's clock may be ahead


def iso(moment: datetime) -> str:
    """``2024-05-01T12:00:00.000000Z`` (``moment`` is UTC); isoformat is a C call, strftime is not."""
    return moment.isoformat(timespec="microseconds")[:26] + "Z"


def new_id(prefix: str) -> str:
    return prefix + os.urandom(6).hex()  # 12 random hex digits, as uuid4().hex[:12] without the UUID


def retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


def one_row(result: sa.CursorResult[Any]) -> dict[str, Any]:
    return dict(result.one()._mapping)


def all_rows(result: sa.CursorResult[Any]) -> list[dict[str, Any]]:
    return [dict(row._mapping) for row in result]
