"""The one error type of r_sandbox: ``RSandboxError(code, message, details)``.

Codes are ``r_sandbox.protocol.ErrorCode``, each one of nini's ``ErrorCode`` values (nini turns this
into its NiniError with ``ErrorCode(exc.code)``); r_sandbox itself does not import nini::

    RSandboxError
     ├── R_UNAVAILABLE      R or rpy2 cannot be loaded at all (nothing to retry)
     ├── WORKER_DIED        the worker did not start, or did not say it was ready
     └── INVALID_ARGUMENT   a request the client cannot send (unknown keys, bad values)

Failures of a run itself (timeout, crash, R errors) are not raised: they come back as a result
dict with ``success: False``, like Python's run_code.
"""

from __future__ import annotations

from typing import Any

from r_sandbox.protocol import ErrorCode

__all__ = ["RSandboxError"]


class RSandboxError(Exception):
    def __init__(self, code: ErrorCode, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = ErrorCode(code)
        self.message = message
        self.details = details

    def __repr__(self) -> str:
        return f"RSandboxError({self.code.value!r}, {self.message!r})"
