"""The one error type of nini, with stable codes.

Everything a user can cause surfaces as ``NiniError(code, message, details)``.
The code is stable (clients and tests match on it), the message is for people,
``details`` is JSON-serialisable data (never a traceback)::

    NiniError
     ├── INVALID_ARGUMENT, NOT_FOUND, CONFLICT        (the caller asked for something wrong)
     ├── TOO_LARGE                                    (a body, a file or a workspace over its limit)
     ├── POLICY_VIOLATION                             (untrusted code was refused before running)
     ├── TIMEOUT, CANCELED                            (the work did not finish)
     ├── CODE_ERROR                                   (the submitted code itself failed: raised, syntax)
     ├── KERNEL_DIED, WORKER_DIED, R_UNAVAILABLE      (an execution backend failed)
     ├── NO_MODEL_AVAILABLE, UPSTREAM_ERROR           (the LLM side failed)
     ├── SKILL_DEFINITION_UNAVAILABLE                 (a Markdown skill could not be read)
     ├── NO_SPACE                                     (a disk nini or its kernels write to is full)
     └── DB_ERROR, INTERNAL                           (nini itself failed)

``to_dict()`` is the ``error`` member of the response envelope in DESIGN.md section 4;
``error_dict()`` the ``error`` member of a run or tool result (``{code, message, line?, ...}``):
every error dict nini builds comes from one of the two, so no code outside ``ErrorCode`` reaches a
client (tests/test_errors.py scans the code base for a hand-written one). HTTP status and CLI exit
code are derived here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    NOT_FOUND = "NOT_FOUND"
    CONFLICT = "CONFLICT"
    TOO_LARGE = "TOO_LARGE"
    POLICY_VIOLATION = "POLICY_VIOLATION"
    TIMEOUT = "TIMEOUT"
    CANCELED = "CANCELED"
    CODE_ERROR = "CODE_ERROR"
    DB_ERROR = "DB_ERROR"
    NO_SPACE = "NO_SPACE"
    KERNEL_DIED = "KERNEL_DIED"
    WORKER_DIED = "WORKER_DIED"
    R_UNAVAILABLE = "R_UNAVAILABLE"
    NO_MODEL_AVAILABLE = "NO_MODEL_AVAILABLE"
    UPSTREAM_ERROR = "UPSTREAM_ERROR"
    SKILL_DEFINITION_UNAVAILABLE = "SKILL_DEFINITION_UNAVAILABLE"
    INTERNAL = "INTERNAL"


HTTP_STATUS: dict[ErrorCode, int] = {
    ErrorCode.INVALID_ARGUMENT: 400,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.CONFLICT: 409,
    ErrorCode.TOO_LARGE: 413,
    ErrorCode.POLICY_VIOLATION: 403,
    ErrorCode.TIMEOUT: 504,
    ErrorCode.CANCELED: 499,
    # a result's code, not a request's: a run whose code raised is a completed call (200, success
    # false); only something that raises it as a NiniError gets this: the request was read, its code failed
    ErrorCode.CODE_ERROR: 422,
    # the history database is unavailable (down, damaged, read-only): the service, not the request, failed
    ErrorCode.DB_ERROR: 503,
    ErrorCode.NO_SPACE: 507,  # Insufficient Storage
    ErrorCode.KERNEL_DIED: 500,
    ErrorCode.WORKER_DIED: 500,
    ErrorCode.R_UNAVAILABLE: 503,
    ErrorCode.NO_MODEL_AVAILABLE: 503,
    ErrorCode.UPSTREAM_ERROR: 502,
    ErrorCode.SKILL_DEFINITION_UNAVAILABLE: 422,
    ErrorCode.INTERNAL: 500,
}


class NiniError(Exception):
    """An error a user can act on: a stable ``code``, a readable ``message``, optional ``details``."""

    def __init__(self, code: ErrorCode | str, message: str, details: dict[str, Any] | None = None):
        self.code = ErrorCode(code)
        self.message = message
        self.details = details
        super().__init__(f"[{self.code}] {message}")

    @property
    def http_status(self) -> int:
        return HTTP_STATUS[self.code]

    @property
    def exit_code(self) -> int:
        """CLI convention (DESIGN.md section 5): 2 for a policy denial, 1 for everything else."""
        return 2 if self.code is ErrorCode.POLICY_VIOLATION else 1

    def to_dict(self) -> dict[str, Any]:
        return error_dict(self.code, self.message, **({"details": self.details} if self.details else {}))


def error_dict(code: ErrorCode, message: str, **fields: Any) -> dict[str, Any]:
    """The ``error`` member of a run or tool result: ``{"code", "message", **fields}`` (``line``,
    ``ename``, ``limit``... beside them, as DESIGN.md section 4 has them). The code goes through
    ``ErrorCode``, so a code outside the enum fails here, where it is made, not in a client."""
    return {"code": ErrorCode(code).value, "message": message, **fields}


def error_envelope(error: NiniError) -> dict[str, Any]:
    """The failure half of the response envelope: ``{"ok": false, "error": {...}}``."""
    return {"ok": False, "error": error.to_dict()}


def ok_envelope(data: Any) -> dict[str, Any]:
    """The success half of the response envelope: ``{"ok": true, "data": ...}``."""
    return {"ok": True, "data": data}


def validation_message(error: Mapping[str, Any]) -> str:
    """A pydantic error's text as a person reads it: without pydantic's "Value error, " (or
    "Assertion failed, ") prefix, which a validator's own message does not need."""
    message = str(error.get("msg", ""))
    for prefix in ("Value error, ", "Assertion failed, "):
        if message.startswith(prefix):
            return message[len(prefix) :]
    return message
